// device_case_buffers.cpp: device-resident insert and kv_norm calls (see device_case_buffers.h).
#include "testkit/device/device_case_buffers.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "testkit/backends/backing.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/compare/out_of_range_rows.h"
#include "testkit/device/abi_args.h"

namespace kvc::testkit {
namespace {

constexpr std::size_t kTensorCount = static_cast<std::size_t>(CaseTensor::kQOut) + 1;

const char* tensor_name(CaseTensor t) {
  switch (t) {
    case CaseTensor::kKv: return "kv";
    case CaseTensor::kSlots: return "slot_mapping";
    case CaseTensor::kPositions: return "position_ids";
    case CaseTensor::kCosSin: return "cos_sin_cache";
    case CaseTensor::kFp8Scale: return "fp8_scale";
    case CaseTensor::kQ: return "q";
    case CaseTensor::kQScaleInv: return "q_scale_inv";
    case CaseTensor::kKvNormWeight: return "kv_norm_weight";
    case CaseTensor::kCache: return kCacheBackingBuffer;
    case CaseTensor::kQOut: return "q_out";
  }
  return "tensor";
}

bool same_meta(const TensorMeta& a, const TensorMeta& b) {
  return a.dtype == b.dtype && a.sizes == b.sizes && a.strides == b.strides && a.offset_bytes == b.offset_bytes &&
         a.device == b.device;
}

bool same_geometry(const CacheGeometry& a, const CacheGeometry& b) {
  return a.dtype == b.dtype && a.rank == b.rank && a.num_blocks == b.num_blocks && a.block_size == b.block_size &&
         a.width == b.width && a.stride0 == b.stride0 && a.stride1 == b.stride1 && a.stride2 == b.stride2 &&
         a.offset_bytes == b.offset_bytes && a.device == b.device;
}

int call_status(int rc, const char* error, std::string* message) {
  if (message != nullptr) *message = error;
  return rc;
}

}  // namespace

// ---- DeviceCaseBuffers ----

DeviceCaseBuffers::DeviceCaseBuffers(const InsertCase& c, const InsertOutputs& initial)
    : case_(c), index_(kTensorCount, -1) {
  if (const std::string why = abi_inexpressible(c); !why.empty())
    throw std::invalid_argument("the case cannot be passed through the kernel ABI: " + why);
  const bool legacy = c.op == InsertOp::kLegacy;
  const bool in_place_q = legacy && format_of(c) == RecordFormat::kBf16_512;
  const std::int64_t backing_bytes =
      initial.cache.empty() ? c.cache.backing_bytes() + kGuardBytes : static_cast<std::int64_t>(initial.cache.size());
  const std::int64_t q_out_bytes =
      legacy ? (initial.q_out.empty() ? c.q_out.span_bytes() : static_cast<std::int64_t>(initial.q_out.size())) : 0;
  auto host_bytes = [](const HostTensor& t) {
    return t.bytes.empty() ? t.meta.span_bytes() : static_cast<std::int64_t>(t.bytes.size());
  };

  struct Input {
    CaseTensor id;
    const HostTensor* tensor;
  };
  std::vector<Input> inputs = {{CaseTensor::kKv, &c.kv},
                               {CaseTensor::kSlots, &c.slots},
                               {CaseTensor::kPositions, &c.positions},
                               {CaseTensor::kCosSin, &c.cos_sin},
                               {CaseTensor::kFp8Scale, &c.fp8_scale}};
  if (legacy) {
    if (!in_place_q) inputs.push_back({CaseTensor::kQ, &c.q});
    inputs.push_back({CaseTensor::kQScaleInv, &c.q_scale_inv});
  } else {
    inputs.push_back({CaseTensor::kKvNormWeight, &c.kv_norm_weight});
  }
  std::int64_t largest = std::max(backing_bytes, q_out_bytes);
  for (const Input& in : inputs)
    if (in.tensor->present) largest = std::max(largest, host_bytes(*in.tensor));
  tensors_ = std::make_unique<GuardedTensors>(TransferPath::kStaged, largest);

  auto add = [&](CaseTensor id, std::int64_t bytes, std::int64_t guard, BufferRole role) -> GuardedDeviceBuffer& {
    const GuardedTensors::BufferId b = tensors_->add(tensor_name(id), bytes, role, guard);
    index_[static_cast<std::size_t>(id)] = static_cast<int>(b);
    return tensors_->buffer(b);
  };
  for (const Input& in : inputs) {
    if (!in.tensor->present) continue;
    GuardedDeviceBuffer& b = add(in.id, host_bytes(*in.tensor), kDeviceGuardBytes, BufferRole::kInput);
    if (in.tensor->bytes.empty())
      b.fill(0);
    else
      b.write(0, in.tensor->bytes.data(), b.payload_bytes());
  }
  GuardedDeviceBuffer& cache = add(CaseTensor::kCache, backing_bytes, cache_guard_bytes(c.cache), BufferRole::kOutput);
  slots_ = case_slots(c);
  tensors_->explain_damage(static_cast<GuardedTensors::BufferId>(index_[static_cast<std::size_t>(CaseTensor::kCache)]),
                           [this](const std::vector<ByteRange>& changed) {
                             return attribute_out_of_bounds_writes(view_of(case_), slots_, changed).lines();
                           });
  if (initial.cache.empty())
    cache.fill(kCanary);
  else
    cache.write(0, initial.cache.data(), backing_bytes);

  if (legacy) {
    if (in_place_q) {
      // bf16_512: Q is rotated in place. The buffer starts as q's bytes (extended by the q output
      // buffer's tail should q_out claim more), and q and q_out both describe it.
      std::vector<std::uint8_t> bytes = c.q.bytes;
      if (initial.q_out.size() > bytes.size())
        bytes.insert(bytes.end(), initial.q_out.begin() + static_cast<std::ptrdiff_t>(bytes.size()),
                     initial.q_out.end());
      add(CaseTensor::kQOut, static_cast<std::int64_t>(bytes.size()), kDeviceGuardBytes, BufferRole::kOutput)
          .write_all(std::move(bytes));
      index_[static_cast<std::size_t>(CaseTensor::kQ)] = index_[static_cast<std::size_t>(CaseTensor::kQOut)];
    } else {
      GuardedDeviceBuffer& q_out = add(CaseTensor::kQOut, q_out_bytes, kDeviceGuardBytes, BufferRole::kOutput);
      if (initial.q_out.empty())
        q_out.fill(kCanary);
      else
        q_out.write(0, initial.q_out.data(), q_out_bytes);
    }
  }

  auto opt = [&](CaseTensor id, const HostTensor& t) { return t.present ? view(id, t.meta) : nullptr; };
  InsertCallTensors t;
  t.kv = opt(CaseTensor::kKv, c.kv);
  t.kv_cache = view(CaseTensor::kCache, cache_meta(c.cache));
  t.slot_mapping = opt(CaseTensor::kSlots, c.slots);
  t.position_ids = opt(CaseTensor::kPositions, c.positions);
  t.cos_sin_cache = opt(CaseTensor::kCosSin, c.cos_sin);
  t.fp8_scale = opt(CaseTensor::kFp8Scale, c.fp8_scale);
  if (legacy) {
    t.q = opt(CaseTensor::kQ, c.q);
    t.q_out = view(CaseTensor::kQOut, c.q_out);
    t.q_scale_inv = opt(CaseTensor::kQScaleInv, c.q_scale_inv);
    legacy_args_ = legacy_insert_args(c, t);  // force_grid is set per enqueue()
  } else {
    t.kv_norm_weight = opt(CaseTensor::kKvNormWeight, c.kv_norm_weight);
    kv_only_args_ = kv_only_insert_args(c, t);
  }
  // Only the metadata is kept: the bytes may be large, and the device holds them now.
  for (HostTensor* h : {&case_.kv, &case_.slots, &case_.positions, &case_.cos_sin, &case_.fp8_scale, &case_.q,
                        &case_.q_scale_inv, &case_.kv_norm_weight})
    std::vector<std::uint8_t>().swap(h->bytes);
}

DeviceCaseBuffers::~DeviceCaseBuffers() = default;

const GuardedDeviceBuffer& DeviceCaseBuffers::buffer(CaseTensor t) const {
  const int i = index_[static_cast<std::size_t>(t)];
  if (i < 0) throw std::invalid_argument(std::string("the case has no ") + tensor_name(t) + " buffer");
  return tensors_->buffer(static_cast<GuardedTensors::BufferId>(i));
}

GuardedDeviceBuffer& DeviceCaseBuffers::buffer(CaseTensor t) {
  return const_cast<GuardedDeviceBuffer&>(static_cast<const DeviceCaseBuffers*>(this)->buffer(t));
}

const DLTensor* DeviceCaseBuffers::view(CaseTensor t, const TensorMeta& meta) {
  buffer(t);  // throws for a tensor the case has no buffer for
  return tensors_->view(static_cast<GuardedTensors::BufferId>(index_[static_cast<std::size_t>(t)]), meta);
}

std::int64_t DeviceCaseBuffers::payload_bytes(CaseTensor t) const { return buffer(t).payload_bytes(); }

int DeviceCaseBuffers::enqueue(const KernelAbi& abi, void* stream, std::string* message, std::int32_t force_grid) {
  char error[kAbiErrorCapacity] = {0};
  int rc = 0;
  if (case_.op == InsertOp::kLegacy) {
    legacy_args_.force_grid = force_grid;
    rc = abi.kvc_legacy_insert(&legacy_args_, stream, error, sizeof error);
  } else {
    rc = abi.kvc_kv_only_insert(&kv_only_args_, stream, error, sizeof error);
  }
  error[sizeof error - 1] = '\0';
  return call_status(rc, error, message);
}

void DeviceCaseBuffers::write_inputs(const InsertCase& next) {
  if (next.op != case_.op) throw std::invalid_argument("write_inputs: another op than the resident case's");
  if (!same_geometry(next.cache, case_.cache) || next.block_size != case_.block_size || next.kv_mxfp8 != case_.kv_mxfp8)
    throw std::invalid_argument("write_inputs: another cache geometry than the resident case's");
  const std::pair<CaseTensor, std::pair<const HostTensor*, const HostTensor*>> tensors[] = {
      {CaseTensor::kKv, {&next.kv, &case_.kv}},
      {CaseTensor::kSlots, {&next.slots, &case_.slots}},
      {CaseTensor::kPositions, {&next.positions, &case_.positions}},
      {CaseTensor::kCosSin, {&next.cos_sin, &case_.cos_sin}},
      {CaseTensor::kFp8Scale, {&next.fp8_scale, &case_.fp8_scale}},
      {CaseTensor::kQ, {&next.q, &case_.q}},
      {CaseTensor::kQScaleInv, {&next.q_scale_inv, &case_.q_scale_inv}},
      {CaseTensor::kKvNormWeight, {&next.kv_norm_weight, &case_.kv_norm_weight}}};
  for (const auto& [id, pair] : tensors) {
    const auto& [now, was] = pair;
    if (now->present != was->present || (now->present && !same_meta(now->meta, was->meta)))
      throw std::invalid_argument(std::string("write_inputs: ") + tensor_name(id) +
                                  " has other metadata than the resident case's");
  }
  if (next.op == InsertOp::kLegacy && !same_meta(next.q_out, case_.q_out))
    throw std::invalid_argument("write_inputs: q_out has other metadata than the resident case's");
  if (!next.slots.bytes.empty()) slots_ = case_slots(next);
  for (const auto& [id, pair] : tensors) {
    const HostTensor& t = *pair.first;
    if (!t.present || index_[static_cast<std::size_t>(id)] < 0) continue;
    GuardedDeviceBuffer& b = buffer(id);
    b.write(0, t.bytes.data(), std::min<std::int64_t>(b.payload_bytes(), static_cast<std::int64_t>(t.bytes.size())));
  }
}

void DeviceCaseBuffers::write_outputs(const InsertOutputs& out) {
  GuardedDeviceBuffer& cache = buffer(CaseTensor::kCache);
  if (static_cast<std::int64_t>(out.cache.size()) != cache.payload_bytes())
    throw std::invalid_argument("write_outputs: a backing of another size");
  cache.write(0, out.cache.data(), cache.payload_bytes());
  if (case_.op != InsertOp::kLegacy) return;
  GuardedDeviceBuffer& q_out = buffer(CaseTensor::kQOut);
  q_out.write(0, out.q_out.data(), std::min<std::int64_t>(q_out.payload_bytes(), out.q_out.size()));
}

void DeviceCaseBuffers::write(CaseTensor t, std::int64_t offset, const std::vector<std::uint8_t>& bytes) {
  buffer(t).write(offset, bytes.data(), static_cast<std::int64_t>(bytes.size()));
}

std::vector<std::uint8_t> DeviceCaseBuffers::read(CaseTensor t, std::int64_t offset, std::int64_t count) const {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(count));
  buffer(t).read(offset, count, out.data());
  return out;
}

InsertOutputs DeviceCaseBuffers::read_outputs() const {
  InsertOutputs out;
  out.cache = read(CaseTensor::kCache, 0, payload_bytes(CaseTensor::kCache));
  if (case_.op == InsertOp::kLegacy) {
    // In place (bf16_512), the shared buffer may be longer than q_out's extent: q_out is its
    // first span_bytes().
    const std::int64_t n = std::min(payload_bytes(CaseTensor::kQOut), case_.q_out.span_bytes());
    out.q_out = read(CaseTensor::kQOut, 0, n);
  }
  return out;
}

ScanResult DeviceCaseBuffers::scan(CaseTensor t, std::uint8_t fill, std::vector<ByteRange> excluded,
                                   std::size_t max_reported) const {
  return buffer(t).scan(fill, std::move(excluded), max_reported);
}

std::vector<BufferDamage> DeviceCaseBuffers::damage() const {
  std::vector<BufferDamage> d;
  tensors_->check(CallOutcome::kAccepted, &d);
  return d;
}

// ---- DeviceKvNormBuffers ----

DeviceKvNormBuffers::DeviceKvNormBuffers(const HostTensor& kv, const HostTensor& weight, float eps, bool in_place)
    : in_place_(in_place) {
  rows_ = kv.meta.rank() >= 1 ? kv.meta.size(0) : 0;
  TensorMeta out_meta = contiguous_meta(DType::kBF16, {rows_, kHeadDim});
  const std::int64_t kv_bytes = static_cast<std::int64_t>(kv.bytes.size());
  tensors_ = std::make_unique<GuardedTensors>(TransferPath::kStaged, std::max(kv_bytes, out_meta.span_bytes()));
  kv_buffer_ = tensors_->add(in_place ? "kv (in place, also out)" : "kv", kv_bytes,
                             in_place ? BufferRole::kOutput : BufferRole::kInput);
  tensors_->buffer(kv_buffer_).write(0, kv.bytes.data(), kv_bytes);
  weight_buffer_ = tensors_->add("weight", static_cast<std::int64_t>(weight.bytes.size()), BufferRole::kInput);
  GuardedDeviceBuffer& w = tensors_->buffer(weight_buffer_);
  w.write(0, weight.bytes.data(), w.payload_bytes());
  out_buffer_ = kv_buffer_;
  if (in_place) {
    out_meta.offset_bytes = kv.meta.offset_bytes;
  } else {
    out_buffer_ = tensors_->add("out", out_meta.span_bytes(), BufferRole::kOutput);
    tensors_->buffer(out_buffer_).fill(kCanary);
  }
  out_offset_bytes_ = out_meta.offset_bytes;
  const DLTensor* kv_t = tensors_->view(kv_buffer_, kv.meta);
  const DLTensor* w_t = tensors_->view(weight_buffer_, weight.meta);
  args_ = kv_norm_args(kv_t, w_t, tensors_->view(out_buffer_, out_meta), eps);
}

DeviceKvNormBuffers::~DeviceKvNormBuffers() = default;

int DeviceKvNormBuffers::enqueue(const KernelAbi& abi, void* stream, std::string* message) {
  char error[kAbiErrorCapacity] = {0};
  const int rc = abi.kvc_kv_norm(&args_, stream, error, sizeof error);
  error[sizeof error - 1] = '\0';
  return call_status(rc, error, message);
}

void DeviceKvNormBuffers::write_inputs(const HostTensor& kv, const HostTensor& weight) {
  GuardedDeviceBuffer& kv_buffer = tensors_->buffer(kv_buffer_);
  GuardedDeviceBuffer& w_buffer = tensors_->buffer(weight_buffer_);
  if (static_cast<std::int64_t>(kv.bytes.size()) != kv_buffer.payload_bytes() ||
      static_cast<std::int64_t>(weight.bytes.size()) != w_buffer.payload_bytes())
    throw std::invalid_argument("write_inputs: kv or weight of another size than the resident call's");
  kv_buffer.write(0, kv.bytes.data(), kv_buffer.payload_bytes());
  w_buffer.write(0, weight.bytes.data(), w_buffer.payload_bytes());
}

std::vector<std::uint16_t> DeviceKvNormBuffers::read_out() const {
  std::vector<std::uint16_t> rows(static_cast<std::size_t>(rows_ * kHeadDim));
  tensors_->buffer(out_buffer_)
      .read(out_offset_bytes_, static_cast<std::int64_t>(rows.size() * sizeof(std::uint16_t)),
            reinterpret_cast<std::uint8_t*>(rows.data()));
  return rows;
}

std::vector<BufferDamage> DeviceKvNormBuffers::damage() const {
  std::vector<BufferDamage> d;
  tensors_->check(CallOutcome::kAccepted, &d);
  return d;
}

}  // namespace kvc::testkit
