// status.cpp: the error-code table (see status.h).
#include "kvc/status.h"

namespace kvc {

std::string_view error_name(ErrorCode code) {
  switch (code) {
#define KVC_X(name, number, message) \
  case ErrorCode::name: return #name;
    KVC_ERROR_CODES(KVC_X)
#undef KVC_X
  }
  return "kUnknown";
}

std::string_view error_message(ErrorCode code) {
  switch (code) {
#define KVC_X(name, number, message) \
  case ErrorCode::name: return message;
    KVC_ERROR_CODES(KVC_X)
#undef KVC_X
  }
  return "unknown error code";
}

bool error_code_from_number(int number, ErrorCode* out) {
  for (ErrorCode c : kAllErrorCodes) {
    if (static_cast<int>(c) == number) {
      *out = c;
      return true;
    }
  }
  return false;
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string s = "E" + std::to_string(static_cast<int>(code)) + " " + std::string(error_name(code)) + ": " +
                  std::string(error_message(code));
  if (!detail.empty()) s += " (" + detail + ")";
  return s;
}

}  // namespace kvc
