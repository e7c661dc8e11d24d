// library_mentions.cpp: see library_mentions.h.
#include "library_mentions.h"

#include <utility>

namespace kvc::runner {

std::string library_named_once(std::string text, const LibraryMentions& mentions) {
  const std::pair<std::string, std::string> replacements[] = {
      {mentions.backend_name, "the library"},
      {mentions.description, "the library"},
      {mentions.name.empty() ? std::string() : mentions.name + " does not ", "the library does not "}};
  for (const auto& [from, to] : replacements) {
    if (from.empty()) continue;
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
  }
  return text;
}

}  // namespace kvc::runner
