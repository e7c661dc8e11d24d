// outcome.cpp: a kernel-ABI call's answer (see outcome.h).
#include "kvc/abi/outcome.h"

#include <cstdio>
#include <utility>

#include "kvc/abi/enum_mapping.h"

namespace kvc::abi {

Outcome bad_argument(std::string message) { return Outcome{KVC_STATUS_BAD_ARGUMENT, std::move(message)}; }

Outcome rejected(const Status& s) { return Outcome{status_of(s.code), s.ToString()}; }

void copy_message(const std::string& message, char* error, std::size_t capacity) {
  std::snprintf(error, capacity, "%s", message.c_str());
}

}  // namespace kvc::abi
