// library_mentions.h: a report names the kernel library once.
//
// The header of the text summary, the JSON's "library" and the JUnit properties say which library
// ran. The device backend's messages name it again in every skip reason and failure
// ("device:<name> (<path>, ABI 1.1): status differs", "<name> does not implement ..."), which in
// a run of a thousand checks repeats a long path a thousand times. The kernel suites pass every
// check's message through library_named_once(), which says "the library" instead.
#pragma once

#include <string>

namespace kvc::runner {

struct LibraryMentions {
  std::string backend_name;  // "device:" + description: DeviceBackend::name()
  std::string description;   // "<name> (<origin>, ABI x.y)": KernelLibrary::describe()
  std::string name;          // "<name>": KernelLibrary::name()
};

// `text` with every backend name and description replaced by "the library", and the bare name
// where it starts "<name> does not " (only there: a short name such as "vllm" also appears in
// profile names).
std::string library_named_once(std::string text, const LibraryMentions& mentions);

}  // namespace kvc::runner
