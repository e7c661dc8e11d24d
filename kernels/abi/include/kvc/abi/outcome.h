// outcome.h: what one kernel-ABI call answers (a kvc/kernel_abi.h status and its message), and
// the one way an entry point hands it back to C. Our ABI wrapper, the shims and the example
// plugin answer through it, so that they answer alike: every exception caught, the message
// copied into the caller's buffer truncated and NUL-terminated.
#pragma once

#include <cstddef>
#include <exception>
#include <string>

#include "kvc/kernel_abi.h"
#include "kvc/status.h"

namespace kvc::abi {

// A status of kvc/kernel_abi.h (0, a validation code, or 40x) and its message.
struct Outcome {
  int status = KVC_STATUS_OK;
  std::string message;

  bool ok() const { return status == KVC_STATUS_OK; }
};

// A malformed call (NULL, struct_size too small, a tensor no library can read): 403.
Outcome bad_argument(std::string message);
// A broken validation rule: its stable code, and the Status's text.
Outcome rejected(const Status& s);

// Copies message into error[capacity] (capacity > 0), truncated and NUL-terminated.
void copy_message(const std::string& message, char* error, std::size_t capacity);

// Runs `body` (returning an Outcome) with every exception caught (403, "internal error: ..."),
// copies the message into error[capacity] when there is a buffer, and returns the status: no
// exception crosses the C boundary.
template <typename Body>
int answer(char* error, std::size_t capacity, Body&& body) {
  Outcome o;
  try {
    o = body();
  } catch (const std::exception& e) {
    o = bad_argument(std::string("internal error: ") + e.what());
  } catch (...) {
    o = bad_argument("internal error");
  }
  if (error != nullptr && capacity > 0) copy_message(o.message, error, capacity);
  return o.status;
}

}  // namespace kvc::abi
