// tensor_rules.cpp: the per-tensor rule pieces the validators share (see tensor_rules.h).
#include "tensor_rules.h"

namespace kvc::detail {

std::string shape_text(const TensorMeta& m) {
  std::string s = "[";
  for (int d = 0; d < m.rank(); ++d) s += (d ? ", " : "") + std::to_string(m.size(d));
  return s + "]";
}

Status check_bytes_cover(const std::string& name, const HostTensor& t) {
  if (!t.present || static_cast<std::int64_t>(t.bytes.size()) >= t.meta.span_bytes()) return Status::Ok();
  return Error(ErrorCode::kInputTooSmall, name + " " + shape_text(t.meta) + " needs " +
                                              std::to_string(t.meta.span_bytes()) + " bytes, has " +
                                              std::to_string(t.bytes.size()));
}

}  // namespace kvc::detail
