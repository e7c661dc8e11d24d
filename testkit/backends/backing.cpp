// backing.cpp: canary-filled buffers (see backing.h).
#include "testkit/backends/backing.h"

namespace kvc::testkit {

std::vector<std::uint8_t> make_backing(const CacheGeometry& g, std::uint8_t canary) {
  return std::vector<std::uint8_t>(static_cast<std::size_t>(g.backing_bytes() + kGuardBytes), canary);
}

InsertOutputs make_outputs(const InsertCase& c, std::uint8_t canary) {
  InsertOutputs out;
  out.cache = make_backing(c.cache, canary);
  if (c.op == InsertOp::kLegacy && c.q_out.sizes.size() == c.q_out.strides.size())
    out.q_out.assign(static_cast<std::size_t>(c.q_out.span_bytes()), canary);
  return out;
}

}  // namespace kvc::testkit
