// probe_class.h: what a kernel library did with one rule-breaking call, as `kvconform probe`
// reports it.
//
// The invalid-input suites judge our front-end: a rule breaker must come back with its code. The
// probe asks the library itself and names what happened, one class per call, worst first: the
// process died, hung, wrote outside what it was given, faulted, read outside a table, wrote into
// the records it was pointed at, or rejected the call (with the rule's code or another). The
// names are the report texts and the JSON keys.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace kvc::testkit {

enum class ProbeClass : std::uint8_t {
  kCrashed = 0,             // the child process died (a signal, or an exit without a result)
  kHung = 1,                // killed at the time limit
  kWroteOutOfBounds = 2,    // bytes changed outside the addressed records: a guard zone, page padding,
                            // a foreign slot, past the view, or an input
  kCudaFault = 3,           // a sticky CUDA error after the call, or the call returned 401
  kReadOutOfBounds = 4,     // a record written from a row whose position lies outside the cos/sin table
  kWroteInsideRecords = 5,  // bytes changed only inside the records the call addresses
  kRejectedOtherCode = 6,   // nothing written, a status other than the ones the rule calls for
  kRejectedRightCode = 7,   // nothing written, the rule's code (or 402 for a call outside declared support)
  kOkNothingWritten = 8,    // returned 0 and changed no byte
  kNotSent = 9,             // never reached the library: a harness rule, or metadata a DLTensor cannot carry
};
inline constexpr std::array<ProbeClass, 10> kAllProbeClasses = {
    ProbeClass::kCrashed,           ProbeClass::kHung,
    ProbeClass::kWroteOutOfBounds,  ProbeClass::kCudaFault,
    ProbeClass::kReadOutOfBounds,   ProbeClass::kWroteInsideRecords,
    ProbeClass::kRejectedOtherCode, ProbeClass::kRejectedRightCode,
    ProbeClass::kOkNothingWritten,  ProbeClass::kNotSent};

// "wrote out of bounds": the table's class column.
std::string_view probe_class_text(ProbeClass c);
// "wrote_out_of_bounds": the JSON value and summary key.
std::string_view probe_class_key(ProbeClass c);
std::optional<ProbeClass> probe_class_from_key(std::string_view key);

}  // namespace kvc::testkit
