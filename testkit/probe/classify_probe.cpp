// classify_probe.cpp: the probe's classifier (see classify_probe.h).
#include "testkit/probe/classify_probe.h"

#include <algorithm>
#include <csignal>
#include <cstring>

#include "kvc/kernel_abi.h"
#include "kvc/status.h"

namespace kvc::testkit {
namespace {

// Messages can be long (a library's whole diagnosis); the where column stays one short line.
constexpr std::size_t kMessageChars = 100;

std::string clipped(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  if (s.size() > kMessageChars) s = s.substr(0, kMessageChars - 3) + "...";
  return s;
}

std::string signal_text(int signal) {
  const char* name = "";
  switch (signal) {
    case SIGSEGV: name = " (SIGSEGV)"; break;
    case SIGABRT: name = " (SIGABRT)"; break;
    case SIGBUS: name = " (SIGBUS)"; break;
    case SIGFPE: name = " (SIGFPE)"; break;
    case SIGILL: name = " (SIGILL)"; break;
    case SIGKILL: name = " (SIGKILL)"; break;
    default: break;
  }
  return "signal " + std::to_string(signal) + name;
}

std::string with_last_line(std::string s, const ChildOutcome& c) {
  if (!c.last_line.empty()) s += ": " + clipped(c.last_line);
  return s;
}

// "kv_cache (backing) guard after +9728, 328 bytes (row 0, slot 32)"
std::string write_text(const ProbeWrite& w) {
  std::string s = w.buffer + " " + w.what + " +" + std::to_string(w.offset) + ", " + std::to_string(w.bytes) + " bytes";
  if (w.row >= 0) s += " (row " + std::to_string(w.row) + ", slot " + std::to_string(w.slot) + ")";
  return s;
}

std::string bad_row_text(const BadRow& b) {
  if (b.kind == BadRowKind::kSlotPastCache)
    return "row " + std::to_string(b.row) + " slot " + std::to_string(b.slot) + " past " + b.table + "'s " +
           std::to_string(b.limit) + " slots";
  return "row " + std::to_string(b.row) + " position " + std::to_string(b.position) + " outside " + b.table + "'s " +
         std::to_string(b.limit) + " rows";
}

// What the call did to the rows that break a value rule, when they are not the story already.
std::string skipped_rows_text(const ProbeObservation& o) {
  std::string s;
  for (const BadRow& b : o.bad_rows)
    if (!b.record_written) s += "; " + bad_row_text(b) + ": skipped";
  return s;
}

std::string status_suffix(const ProbeObservation& o) {
  return o.status == KVC_STATUS_OK ? "" : " (after returning " + probe_status_text(o.status) + ")";
}

ProbeVerdict classify_observation(const ProbeInput& in) {
  const ProbeObservation& o = in.observed;
  // Out of bounds: the first run outside the addressed records, then how many more there are.
  std::vector<const ProbeWrite*> stray;
  std::int64_t inside_bytes = 0;
  for (const ProbeWrite& w : o.writes) {
    if (w.site == WriteSite::kAddressedRecord)
      inside_bytes += w.bytes;
    else
      stray.push_back(&w);
  }
  if (!stray.empty()) {
    std::string where = write_text(*stray.front());
    if (stray.size() > 1) where += " and " + std::to_string(stray.size() - 1) + " more regions";
    return {ProbeClass::kWroteOutOfBounds, where + status_suffix(o)};
  }
  if (!o.cuda_fault.empty())
    return {ProbeClass::kCudaFault, clipped(o.cuda_fault) + " (the call returned " + probe_status_text(o.status) + ")"};
  if (o.status == KVC_STATUS_CUDA_ERROR) return {ProbeClass::kCudaFault, "returned 401: " + clipped(o.message)};
  for (const BadRow& b : o.bad_rows)
    if (b.kind == BadRowKind::kPositionOutsideTable && b.record_written)
      return {ProbeClass::kReadOutOfBounds, bad_row_text(b) + ", yet slot " + std::to_string(b.slot) +
                                                " was written: its rotation came from outside the table" +
                                                status_suffix(o)};
  if (inside_bytes > 0)
    return {ProbeClass::kWroteInsideRecords,
            std::to_string(inside_bytes) + " bytes" + status_suffix(o) + skipped_rows_text(o)};
  if (o.status == KVC_STATUS_OK) return {ProbeClass::kOkNothingWritten, "returned 0" + skipped_rows_text(o)};
  const std::vector<int>& right = in.expected.right_codes;
  if (std::find(right.begin(), right.end(), o.status) != right.end())
    return {ProbeClass::kRejectedRightCode, probe_status_text(o.status)};
  std::string expected;
  for (int code : right) expected += (expected.empty() ? "" : " or ") + probe_status_text(code);
  return {ProbeClass::kRejectedOtherCode,
          probe_status_text(o.status) + ", expected " + expected + ": " + clipped(o.message)};
}

}  // namespace

std::string probe_status_text(int status) {
  switch (status) {
    case KVC_STATUS_OK: return "0 ok";
    case KVC_STATUS_CUDA_ERROR: return "401 CUDA error";
    case KVC_STATUS_UNSUPPORTED: return "402 unsupported";
    case KVC_STATUS_BAD_ARGUMENT: return "403 bad argument";
    default: break;
  }
  ErrorCode code{};
  if (error_code_from_number(status, &code)) return std::to_string(status) + " " + std::string(error_name(code));
  return std::to_string(status) + " (not a kvconform status)";
}

ProbeVerdict classify_probe(const ProbeInput& in) {
  if (!in.not_sent.empty()) return {ProbeClass::kNotSent, in.not_sent};
  const ChildOutcome& c = in.child;
  if (!c.reported) {
    switch (c.end) {
      case ChildEnd::kSignaled: return {ProbeClass::kCrashed, with_last_line(signal_text(c.signal), c)};
      case ChildEnd::kTimedOut:
        return {ProbeClass::kHung,
                with_last_line(
                    "killed after " + std::to_string(static_cast<int>(c.limit_seconds)) + " s without a result", c)};
      case ChildEnd::kExited:
        return {ProbeClass::kCrashed,
                with_last_line("exited with status " + std::to_string(c.exit_code) + " without a result", c)};
    }
  }
  ProbeVerdict v = classify_observation(in);
  // The call was observed whole; a process that died afterwards (tearing down a faulted context,
  // a library's destructor) is said beside it.
  if (c.end == ChildEnd::kSignaled) v.where += "; then the process died of " + signal_text(c.signal);
  if (c.end == ChildEnd::kTimedOut) v.where += "; then the process hung at exit";
  return v;
}

}  // namespace kvc::testkit
