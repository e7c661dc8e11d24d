// guarded_tensors.cpp: a call's guarded device tensors (see guarded_tensors.h).
#include "testkit/device/guarded_tensors.h"

#include <algorithm>
#include <utility>

namespace kvc::testkit {

std::int64_t cache_guard_bytes(const CacheGeometry& g, std::int64_t if_unknown) {
  return std::clamp(g.checked_page_stride_bytes().value_or(if_unknown), kDeviceGuardBytes, kMaxCacheGuardBytes);
}

GuardedTensors::GuardedTensors(TransferPath path, std::int64_t largest_transfer)
    : device_(current_device()), io_(path, largest_transfer) {}

GuardedTensors::BufferId GuardedTensors::add(std::string name, std::int64_t payload_bytes, BufferRole role,
                                             std::int64_t guard_bytes, PayloadPlacement placement) {
  buffers_.push_back(
      Buffer{GuardedDeviceBuffer(std::move(name), payload_bytes, guard_bytes, &io_, placement), role, {}});
  return buffers_.size() - 1;
}

GuardedTensors::BufferId GuardedTensors::upload(std::string name, const std::vector<std::uint8_t>& bytes,
                                                BufferRole role, std::int64_t guard_bytes, PayloadPlacement placement) {
  const BufferId id = add(std::move(name), static_cast<std::int64_t>(bytes.size()), role, guard_bytes, placement);
  buffer(id).write_all_borrowed(bytes);
  return id;
}

GuardedTensors::BufferId GuardedTensors::upload_owned(std::string name, std::vector<std::uint8_t> bytes,
                                                      BufferRole role, std::int64_t guard_bytes) {
  const BufferId id = add(std::move(name), static_cast<std::int64_t>(bytes.size()), role, guard_bytes);
  buffer(id).write_all(std::move(bytes));
  return id;
}

const DLTensor* GuardedTensors::view(BufferId id, const TensorMeta& meta) {
  return views_.emplace_back(buffer(id).payload(), meta, device_).dl();
}

const DLTensor* GuardedTensors::input(std::string name, const HostTensor& t) {
  if (!t.present) return nullptr;
  return view(upload(std::move(name), t.bytes, BufferRole::kInput), t.meta);
}

void GuardedTensors::check(CallOutcome outcome, std::vector<BufferDamage>* damage) const {
  for (const Buffer& b : buffers_) {
    const std::size_t first = damage->size();
    b.device.check_guards(damage);
    if (b.explain)
      for (std::size_t i = first; i < damage->size(); ++i) (*damage)[i].explanation = b.explain((*damage)[i].changed);
    if (b.role == BufferRole::kInput)
      b.device.check_payload(kInputChangedRegion, damage);
    else if (outcome == CallOutcome::kRejected)
      b.device.check_payload(kWrittenByRejectedCallRegion, damage);
  }
}

}  // namespace kvc::testkit
