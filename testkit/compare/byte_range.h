// byte_range.h: [begin, end) in bytes of one buffer: what a scan leaves out, what a call changed.
//
// Shared by the device side (the ranges a guard-zone check found changed, the ranges a scan
// excludes) and the CPU attribution of out-of-bounds writes (out_of_range_rows.h), which must not
// depend on the device side.
#pragma once

#include <cstdint>

namespace kvc::testkit {

struct ByteRange {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::int64_t size() const { return end > begin ? end - begin : 0; }
};

}  // namespace kvc::testkit
