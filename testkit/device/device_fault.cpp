// device_fault.cpp: CUDA faults of library calls (see device_fault.h).
#include "testkit/device/device_fault.h"

#include <cuda_runtime_api.h>

#include <cstdio>

#include "testkit/compare/out_of_range_rows.h"

namespace kvc::testkit {
namespace {

// Slots listed in the case line; the out-of-range rows are listed in full below it.
constexpr std::size_t kListedSlots = 16;

std::string op_name(const InsertCase& c) { return c.op == InsertOp::kLegacy ? "legacy_insert" : "kv_only_insert"; }

}  // namespace

DeviceFaultError device_fault(int cuda_error, const std::string& library, const std::string& entry_point,
                              const std::vector<std::string>& call) {
  const auto e = static_cast<cudaError_t>(cuda_error);
  std::string message = library + ": CUDA fault in " + entry_point + ": " + cudaGetErrorName(e) + ": " +
                        cudaGetErrorString(e) + " (the CUDA context is unusable from here on)";
  for (const std::string& line : call) message += "\n  " + line;
  std::fprintf(stderr, "%s\n", message.c_str());
  std::fflush(stderr);
  return DeviceFaultError(cuda_error, message);
}

std::vector<std::string> describe_insert_call(const InsertCase& c) {
  const auto format = format_of(c);
  const std::vector<std::int64_t> slots = case_slots(c);
  std::string line = "case: " + op_name(c) + " " + (format ? std::string(layout_of(*format).name) : "(no format)") +
                     ", " + std::to_string(c.cache.num_blocks) + " pages x " + std::to_string(c.block_size) +
                     " tokens, page stride " + std::to_string(c.cache.page_stride_bytes()) + " B, " +
                     std::to_string(c.num_rows()) + " rows, slots [";
  for (std::size_t t = 0; t < slots.size() && t < kListedSlots; ++t)
    line += (t == 0 ? "" : ", ") + std::to_string(slots[t]);
  if (slots.size() > kListedSlots) line += ", ... (" + std::to_string(slots.size()) + " in all)";
  line += "]";
  std::vector<std::string> out = {line};
  const std::vector<std::string> rows = out_of_range_row_lines(c);
  if (rows.empty()) {
    out.push_back("no row addresses outside the cache");
    return out;
  }
  out.push_back("rows addressing outside the cache (likely culprits):");
  for (const std::string& r : rows) out.push_back("  " + r);
  return out;
}

}  // namespace kvc::testkit
