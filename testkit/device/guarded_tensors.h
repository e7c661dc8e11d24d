// guarded_tensors.h: the named, guarded device tensors of one call, and the DLTensors over them.
//
// Every device call the suite makes (DeviceBackend's one-shot calls, the stacked runner, the
// resident case buffers of the graph and stream tests) goes through one of these: a buffer per
// tensor, each between two guard zones and named for damage reports (guarded_buffer.h), DLTensor
// views over them (device_tensor.h), and one DeviceTransfers path for every copy. After a call,
// check() reports damage: guard zones always, inputs against their bytes always, and every
// buffer against what it held before when the call was rejected (a rejected call writes nothing).
// A buffer whose owner can say what wrote into its guard zones (the cache: the rows whose slot
// addresses outside it) gets an explainer, whose lines go under its damage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "kvc/insert_case.h"
#include "testkit/device/device_tensor.h"
#include "testkit/device/device_transfers.h"
#include "testkit/device/guarded_buffer.h"

namespace kvc::testkit {

// Whether the call may modify a buffer: an input must come back unchanged.
enum class BufferRole : std::uint8_t { kInput, kOutput };
// How the ABI answered: a rejected call must leave every buffer as it was.
enum class CallOutcome : std::uint8_t { kAccepted, kRejected };

// A cache's guard zones are a page long (a write to page -1 or to page num_blocks lands in one),
// capped so that the absurd strides of invalid cases stay allocatable.
inline constexpr std::int64_t kMaxCacheGuardBytes = std::int64_t{1} << 20;
// That guard for `g`; `if_unknown` stands for a page stride that overflows.
std::int64_t cache_guard_bytes(const CacheGeometry& g, std::int64_t if_unknown = kMaxCacheGuardBytes);

class GuardedTensors {
 public:
  using BufferId = std::size_t;

  // Tensors on the current CUDA device; copies take `path` (kStaged: staging for transfers of up
  // to `largest_transfer` bytes at once). Throws DeviceError.
  explicit GuardedTensors(TransferPath path, std::int64_t largest_transfer = 0);
  GuardedTensors(const GuardedTensors&) = delete;
  GuardedTensors& operator=(const GuardedTensors&) = delete;

  // A buffer of `payload_bytes`, its payload not yet set (fill() or write() it).
  BufferId add(std::string name, std::int64_t payload_bytes, BufferRole role,
               std::int64_t guard_bytes = kDeviceGuardBytes,
               PayloadPlacement placement = PayloadPlacement::kBetweenGuards);
  // A buffer holding `bytes`, which are what it is checked against afterwards, without a copy:
  // they must outlive the checks (the case's own tensors, the caller's outputs).
  BufferId upload(std::string name, const std::vector<std::uint8_t>& bytes, BufferRole role,
                  std::int64_t guard_bytes = kDeviceGuardBytes,
                  PayloadPlacement placement = PayloadPlacement::kBetweenGuards);
  // The same for bytes made for the call, kept here.
  BufferId upload_owned(std::string name, std::vector<std::uint8_t> bytes, BufferRole role,
                        std::int64_t guard_bytes = kDeviceGuardBytes);

  // A DLTensor over a buffer's payload described by `meta` (element 0 at meta.offset_bytes),
  // valid as long as this object. The metadata must be expressible (abi_args.h).
  const DLTensor* view(BufferId id, const TensorMeta& meta);
  // Uploads a present input tensor and returns its view; nullptr for an absent optional.
  const DLTensor* input(std::string name, const HostTensor& t);

  // Lines saying what wrote a buffer's changed guard bytes, given them as payload offsets
  // (BufferDamage::changed); they become the damage's explanation.
  using DamageExplainer = std::function<std::vector<std::string>(const std::vector<ByteRange>& changed)>;
  void explain_damage(BufferId id, DamageExplainer explain) { buffers_[id].explain = std::move(explain); }

  GuardedDeviceBuffer& buffer(BufferId id) { return buffers_[id].device; }
  const GuardedDeviceBuffer& buffer(BufferId id) const { return buffers_[id].device; }

  // Appends damage: both guard zones of every buffer; the payload of every input ("input
  // changed"); after a rejected call, the payload of every other buffer too ("written by a
  // rejected call"). Reads the device synchronously through the transfer path: synchronise the
  // call's stream first.
  void check(CallOutcome outcome, std::vector<BufferDamage>* damage) const;

 private:
  struct Buffer {
    GuardedDeviceBuffer device;
    BufferRole role;
    DamageExplainer explain;  // empty: the damage is reported as found
  };

  int device_;
  DeviceTransfers io_;
  std::deque<Buffer> buffers_;      // stable addresses: a borrowed expectation may point into one
  std::deque<DeviceTensor> views_;  // stable addresses: the ABI args point into it
};

}  // namespace kvc::testkit
