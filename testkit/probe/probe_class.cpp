// probe_class.cpp: the probe classes' names (see probe_class.h).
#include "testkit/probe/probe_class.h"

namespace kvc::testkit {

std::string_view probe_class_text(ProbeClass c) {
  switch (c) {
    case ProbeClass::kCrashed: return "CRASHED";
    case ProbeClass::kHung: return "HUNG";
    case ProbeClass::kWroteOutOfBounds: return "WROTE OUT OF BOUNDS";
    case ProbeClass::kCudaFault: return "CUDA FAULT";
    case ProbeClass::kReadOutOfBounds: return "READ OUT OF BOUNDS";
    case ProbeClass::kWroteInsideRecords: return "wrote inside the addressed records";
    case ProbeClass::kRejectedOtherCode: return "rejected with another code";
    case ProbeClass::kRejectedRightCode: return "rejected with the right code";
    case ProbeClass::kOkNothingWritten: return "returned ok, wrote nothing";
    case ProbeClass::kNotSent: return "not sent";
  }
  return "?";
}

std::string_view probe_class_key(ProbeClass c) {
  switch (c) {
    case ProbeClass::kCrashed: return "crashed";
    case ProbeClass::kHung: return "hung";
    case ProbeClass::kWroteOutOfBounds: return "wrote_out_of_bounds";
    case ProbeClass::kCudaFault: return "cuda_fault";
    case ProbeClass::kReadOutOfBounds: return "read_out_of_bounds";
    case ProbeClass::kWroteInsideRecords: return "wrote_inside_records";
    case ProbeClass::kRejectedOtherCode: return "rejected_other_code";
    case ProbeClass::kRejectedRightCode: return "rejected_right_code";
    case ProbeClass::kOkNothingWritten: return "ok_nothing_written";
    case ProbeClass::kNotSent: return "not_sent";
  }
  return "?";
}

std::optional<ProbeClass> probe_class_from_key(std::string_view key) {
  for (ProbeClass c : kAllProbeClasses)
    if (probe_class_key(c) == key) return c;
  return std::nullopt;
}

}  // namespace kvc::testkit
