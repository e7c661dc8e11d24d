// device_case_buffers.cpp: device-resident insert and kv_norm calls (see device_case_buffers.h).
#include "testkit/device/device_case_buffers.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "testkit/backends/backing.h"
#include "testkit/device/device_backend.h"

namespace kvc::testkit {
namespace {

// Host staging: large enough that a multi-GiB scan is a few dozen copies, small enough to pin
// cheaply once per object.
constexpr std::int64_t kMaxStagingBytes = std::int64_t{64} << 20;
// The cache guard is a page long (a write to page -1 or page num_blocks lands in it), capped so
// that a page stride near 2^31 bytes does not double the allocation.
constexpr std::int64_t kMaxCacheGuardBytes = std::int64_t{1} << 20;
// Bytes compared with memcmp before a byte-by-byte look: scans run at memory speed when clean.
constexpr std::int64_t kCompareBlockBytes = 4096;
constexpr std::size_t kTensorCount = static_cast<std::size_t>(CaseTensor::kQOut) + 1;

const char* tensor_name(CaseTensor t) {
  switch (t) {
    case CaseTensor::kKv:
      return "kv";
    case CaseTensor::kSlots:
      return "slot_mapping";
    case CaseTensor::kPositions:
      return "position_ids";
    case CaseTensor::kCosSin:
      return "cos_sin_cache";
    case CaseTensor::kFp8Scale:
      return "fp8_scale";
    case CaseTensor::kQ:
      return "q";
    case CaseTensor::kQScaleInv:
      return "q_scale_inv";
    case CaseTensor::kKvNormWeight:
      return "kv_norm_weight";
    case CaseTensor::kCache:
      return "kv_cache (backing)";
    case CaseTensor::kQOut:
      return "q_out";
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

int current_device() {
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

void fill_view(DLTensor* t, std::vector<std::int64_t>* shape, std::vector<std::int64_t>* strides, void* data,
               const TensorMeta& meta, int device) {
  *shape = meta.sizes;
  *strides = meta.strides;
  if (shape->empty()) shape->push_back(1), strides->push_back(1);  // 0-d: valid pointers, ndim 0
  t->data = data;
  t->device = DLDevice{kDLCUDA, device + meta.device};
  t->ndim = static_cast<std::int32_t>(meta.sizes.size());
  t->dtype = dl_dtype(meta.dtype);
  t->shape = shape->data();
  t->strides = strides->data();
  t->byte_offset = static_cast<std::uint64_t>(meta.offset_bytes);
}

int call_status(int rc, const char* error, std::string* message) {
  if (message != nullptr) *message = error;
  return rc;
}

}  // namespace

// Pinned staging and a non-blocking stream: every transfer of one object goes through them.
class StagedTransfers {
 public:
  explicit StagedTransfers(std::int64_t largest_payload) {
    staging_bytes_ = std::clamp<std::int64_t>(largest_payload, kDeviceGuardBytes, kMaxStagingBytes);
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating the transfer stream");
    void* p = nullptr;
    check_cuda(cudaHostAlloc(&p, static_cast<std::size_t>(staging_bytes_), cudaHostAllocDefault),
               "cudaHostAlloc of " + std::to_string(staging_bytes_) + " staging bytes");
    staging_ = static_cast<std::uint8_t*>(p);
  }
  ~StagedTransfers() {
    if (staging_ != nullptr) cudaFreeHost(staging_);  // nothing to do about a failure here
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  StagedTransfers(const StagedTransfers&) = delete;
  StagedTransfers& operator=(const StagedTransfers&) = delete;

  void upload(std::uint8_t* device, const std::uint8_t* host, std::int64_t n, const std::string& what) {
    for (std::int64_t done = 0; done < n; done += staging_bytes_) {
      const std::int64_t chunk = std::min(staging_bytes_, n - done);
      std::memcpy(staging_, host + done, static_cast<std::size_t>(chunk));
      check_cuda(
          cudaMemcpyAsync(device + done, staging_, static_cast<std::size_t>(chunk), cudaMemcpyHostToDevice, stream_),
          "upload of " + what);
      check_cuda(cudaStreamSynchronize(stream_), "upload of " + what);
    }
  }
  // Calls visit(offset, bytes, count) for consecutive chunks of [device, device + n).
  template <typename Visit>
  void download(const std::uint8_t* device, std::int64_t n, const std::string& what, Visit&& visit) const {
    for (std::int64_t done = 0; done < n; done += staging_bytes_) {
      const std::int64_t chunk = std::min(staging_bytes_, n - done);
      check_cuda(
          cudaMemcpyAsync(staging_, device + done, static_cast<std::size_t>(chunk), cudaMemcpyDeviceToHost, stream_),
          "download of " + what);
      check_cuda(cudaStreamSynchronize(stream_), "download of " + what);
      visit(done, staging_, chunk);
    }
  }
  void fill(std::uint8_t* device, std::uint8_t value, std::int64_t n, const std::string& what) {
    if (n == 0) return;
    check_cuda(cudaMemsetAsync(device, value, static_cast<std::size_t>(n), stream_), "fill of " + what);
    check_cuda(cudaStreamSynchronize(stream_), "fill of " + what);
  }
  std::int64_t chunk_bytes() const { return staging_bytes_; }

 private:
  cudaStream_t stream_ = nullptr;
  std::uint8_t* staging_ = nullptr;
  std::int64_t staging_bytes_ = 0;
};

// One guarded allocation and what its payload is expected to hold: a fill byte overlaid with the
// writes made since (for inputs, checked after every call).
class ResidentBuffer {
 public:
  ResidentBuffer(std::string name, std::int64_t payload_bytes, std::int64_t guard_bytes, StagedTransfers* io,
                 bool is_input)
      : name_(std::move(name)), payload_bytes_(payload_bytes), io_(io), is_input_(is_input) {
    guard_bytes_ = device_guard_bytes(guard_bytes);
    const std::int64_t total = payload_bytes_ + 2 * guard_bytes_;
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, static_cast<std::size_t>(std::max<std::int64_t>(total, 1))),
               "cudaMalloc of " + std::to_string(total) + " bytes for " + name_);
    allocation_ = static_cast<std::uint8_t*>(p);
    const std::vector<std::uint8_t> guard = guard_pattern();
    io_->upload(allocation_, guard.data(), guard_bytes_, "the guard before " + name_);
    io_->upload(allocation_ + guard_bytes_ + payload_bytes_, guard.data(), guard_bytes_, "the guard after " + name_);
  }
  ~ResidentBuffer() {
    if (allocation_ != nullptr) cudaFree(allocation_);  // nothing to do about a failure here
  }
  ResidentBuffer(const ResidentBuffer&) = delete;
  ResidentBuffer& operator=(const ResidentBuffer&) = delete;

  std::uint8_t* payload() const { return allocation_ + guard_bytes_; }
  std::int64_t payload_bytes() const { return payload_bytes_; }
  const std::string& name() const { return name_; }

  void fill(std::uint8_t value) {
    io_->fill(payload(), value, payload_bytes_, name_);
    fill_ = value;
    patches_.clear();
  }
  void write(std::int64_t offset, const std::uint8_t* bytes, std::int64_t n) {
    if (offset < 0 || n < 0 || offset + n > payload_bytes_)
      throw std::out_of_range(name_ + ": write of " + std::to_string(n) + " bytes at " + std::to_string(offset) +
                              " outside its " + std::to_string(payload_bytes_) + " bytes");
    if (n == 0) return;
    io_->upload(payload() + offset, bytes, n, name_);
    if (offset == 0 && n == payload_bytes_) patches_.clear();
    patches_.emplace_back(offset, std::vector<std::uint8_t>(bytes, bytes + n));
  }
  void read(std::int64_t offset, std::int64_t n, std::uint8_t* out) const {
    if (offset < 0 || n < 0 || offset + n > payload_bytes_)
      throw std::out_of_range(name_ + ": read of " + std::to_string(n) + " bytes at " + std::to_string(offset) +
                              " outside its " + std::to_string(payload_bytes_) + " bytes");
    io_->download(payload() + offset, n, name_, [&](std::int64_t done, const std::uint8_t* chunk, std::int64_t len) {
      std::memcpy(out + done, chunk, static_cast<std::size_t>(len));
    });
  }

  ScanResult scan(std::uint8_t fill, std::vector<ByteRange> excluded, std::size_t max_reported) const {
    std::sort(excluded.begin(), excluded.end(),
              [](const ByteRange& a, const ByteRange& b) { return a.begin < b.begin; });
    ScanResult r;
    const std::vector<std::uint8_t> fill_block(static_cast<std::size_t>(kCompareBlockBytes), fill);
    std::size_t next = 0;  // first excluded range that may still overlap the current chunk
    io_->download(payload(), payload_bytes_, name_, [&](std::int64_t base, const std::uint8_t* chunk, std::int64_t n) {
      std::int64_t pos = base;
      const std::int64_t end = base + n;
      while (pos < end) {
        while (next < excluded.size() && excluded[next].end <= pos) ++next;
        std::int64_t stop = end;
        if (next < excluded.size() && excluded[next].begin <= pos) {
          pos = std::min(end, excluded[next].end);  // skip the excluded part
          continue;
        }
        if (next < excluded.size()) stop = std::min(stop, excluded[next].begin);
        const std::uint8_t* p = chunk + (pos - base);
        const std::int64_t len = stop - pos;
        r.scanned_bytes += len;
        for (std::int64_t block = 0; block < len; block += kCompareBlockBytes) {
          const std::int64_t block_len = std::min(kCompareBlockBytes, len - block);
          if (std::memcmp(p + block, fill_block.data(), static_cast<std::size_t>(block_len)) == 0) continue;
          for (std::int64_t i = block; i < block + block_len; ++i) {
            if (p[i] == fill) continue;
            ++r.differing_bytes;
            if (r.first.size() < max_reported) r.first.push_back({pos + i, p[i]});
          }
        }
        pos = stop;
      }
    });
    return r;
  }

  // Guard zones always; the payload against its expected bytes for an input.
  void check(std::vector<BufferDamage>* damage) const {
    const std::vector<std::uint8_t> guard = guard_pattern();
    std::vector<std::uint8_t> actual(static_cast<std::size_t>(guard_bytes_));
    auto check_guard = [&](const std::uint8_t* zone, const char* region, std::int64_t first_offset) {
      io_->download(zone, guard_bytes_, name_, [&](std::int64_t done, const std::uint8_t* chunk, std::int64_t len) {
        std::memcpy(actual.data() + done, chunk, static_cast<std::size_t>(len));
      });
      BufferDamage d{name_, region, 0, 0, 0, 0};
      for (std::int64_t i = 0; i < guard_bytes_; ++i) {
        const auto k = static_cast<std::size_t>(i);
        if (actual[k] == guard[k]) continue;
        if (d.bytes++ == 0) d.offset = first_offset + i, d.expected = guard[k], d.actual = actual[k];
      }
      if (d.bytes > 0) damage->push_back(d);
    };
    check_guard(allocation_, "guard before", -guard_bytes_);
    check_guard(payload() + payload_bytes_, "guard after", payload_bytes_);
    if (!is_input_) return;
    BufferDamage d{name_, "input changed", 0, 0, 0, 0};
    std::vector<std::uint8_t> expected;
    io_->download(payload(), payload_bytes_, name_, [&](std::int64_t base, const std::uint8_t* chunk, std::int64_t n) {
      expected_bytes(base, n, &expected);
      if (std::memcmp(chunk, expected.data(), static_cast<std::size_t>(n)) == 0) return;
      for (std::int64_t i = 0; i < n; ++i) {
        const auto k = static_cast<std::size_t>(i);
        if (chunk[k] == expected[k]) continue;
        if (d.bytes++ == 0) d.offset = base + i, d.expected = expected[k], d.actual = chunk[k];
      }
    });
    if (d.bytes > 0) damage->push_back(d);
  }

 private:
  std::vector<std::uint8_t> guard_pattern() const {
    std::vector<std::uint8_t> g(static_cast<std::size_t>(guard_bytes_));
    for (std::int64_t i = 0; i < guard_bytes_; ++i) g[static_cast<std::size_t>(i)] = guard_byte(i);
    return g;
  }
  // The expected payload bytes [base, base + n): the fill, then every write in order.
  void expected_bytes(std::int64_t base, std::int64_t n, std::vector<std::uint8_t>* out) const {
    out->assign(static_cast<std::size_t>(n), fill_);
    for (const auto& [offset, bytes] : patches_) {
      const std::int64_t lo = std::max(base, offset);
      const std::int64_t hi = std::min(base + n, offset + static_cast<std::int64_t>(bytes.size()));
      if (lo < hi)
        std::memcpy(out->data() + (lo - base), bytes.data() + (lo - offset), static_cast<std::size_t>(hi - lo));
    }
  }

  std::string name_;
  std::uint8_t* allocation_ = nullptr;
  std::int64_t guard_bytes_ = 0;
  std::int64_t payload_bytes_ = 0;
  StagedTransfers* io_;
  bool is_input_;
  std::uint8_t fill_ = 0;
  std::vector<std::pair<std::int64_t, std::vector<std::uint8_t>>> patches_;
};

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
  io_ = std::make_unique<StagedTransfers>(largest);

  auto add = [&](CaseTensor id, std::int64_t bytes, std::int64_t guard, bool is_input) -> ResidentBuffer& {
    index_[static_cast<std::size_t>(id)] = static_cast<int>(buffers_.size());
    buffers_.push_back(std::make_unique<ResidentBuffer>(tensor_name(id), bytes, guard, io_.get(), is_input));
    return *buffers_.back();
  };
  for (const Input& in : inputs) {
    if (!in.tensor->present) continue;
    ResidentBuffer& b = add(in.id, host_bytes(*in.tensor), kDeviceGuardBytes, true);
    if (in.tensor->bytes.empty())
      b.fill(0);
    else
      b.write(0, in.tensor->bytes.data(), b.payload_bytes());
  }
  const std::int64_t cache_guard = std::clamp(c.cache.checked_page_stride_bytes().value_or(kMaxCacheGuardBytes),
                                              kDeviceGuardBytes, kMaxCacheGuardBytes);
  ResidentBuffer& cache = add(CaseTensor::kCache, backing_bytes, cache_guard, false);
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
      ResidentBuffer& q = add(CaseTensor::kQOut, static_cast<std::int64_t>(bytes.size()), kDeviceGuardBytes, false);
      q.write(0, bytes.data(), q.payload_bytes());
      index_[static_cast<std::size_t>(CaseTensor::kQ)] = index_[static_cast<std::size_t>(CaseTensor::kQOut)];
    } else {
      ResidentBuffer& q_out = add(CaseTensor::kQOut, q_out_bytes, kDeviceGuardBytes, false);
      if (initial.q_out.empty())
        q_out.fill(kCanary);
      else
        q_out.write(0, initial.q_out.data(), q_out_bytes);
    }
  }

  auto opt = [&](CaseTensor id, const HostTensor& t) { return t.present ? view(id, t.meta) : nullptr; };
  if (legacy) {
    legacy_args_.struct_size = sizeof legacy_args_;
    legacy_args_.q = opt(CaseTensor::kQ, c.q);
    legacy_args_.q_out = view(CaseTensor::kQOut, c.q_out);
    legacy_args_.q_scale_inv = opt(CaseTensor::kQScaleInv, c.q_scale_inv);
    legacy_args_.kv = opt(CaseTensor::kKv, c.kv);
    legacy_args_.kv_cache = view(CaseTensor::kCache, cache_meta(c.cache));
    legacy_args_.slot_mapping = opt(CaseTensor::kSlots, c.slots);
    legacy_args_.position_ids = opt(CaseTensor::kPositions, c.positions);
    legacy_args_.cos_sin_cache = opt(CaseTensor::kCosSin, c.cos_sin);
    legacy_args_.fp8_scale = opt(CaseTensor::kFp8Scale, c.fp8_scale);
    legacy_args_.block_size = c.block_size;
    legacy_args_.kv_mxfp8 = c.kv_mxfp8 ? 1 : 0;
    legacy_args_.eps = c.eps;
    legacy_args_.apply_q_norm = c.apply_q_norm ? 1 : 0;
    legacy_args_.apply_q_rope = c.apply_q_rope ? 1 : 0;
    legacy_args_.q_interleaved = c.q_interleaved ? 1 : 0;
  } else {
    kv_only_args_.struct_size = sizeof kv_only_args_;
    kv_only_args_.kv = opt(CaseTensor::kKv, c.kv);
    kv_only_args_.kv_cache = view(CaseTensor::kCache, cache_meta(c.cache));
    kv_only_args_.slot_mapping = opt(CaseTensor::kSlots, c.slots);
    kv_only_args_.position_ids = opt(CaseTensor::kPositions, c.positions);
    kv_only_args_.cos_sin_cache = opt(CaseTensor::kCosSin, c.cos_sin);
    kv_only_args_.fp8_scale = opt(CaseTensor::kFp8Scale, c.fp8_scale);
    kv_only_args_.kv_norm_weight = opt(CaseTensor::kKvNormWeight, c.kv_norm_weight);
    kv_only_args_.kv_norm_eps = c.kv_norm_eps;
    kv_only_args_.block_size = c.block_size;
    kv_only_args_.kv_mxfp8 = c.kv_mxfp8 ? 1 : 0;
  }
  // Only the metadata is kept: the bytes may be large, and the device holds them now.
  for (HostTensor* t : {&case_.kv, &case_.slots, &case_.positions, &case_.cos_sin, &case_.fp8_scale, &case_.q,
                        &case_.q_scale_inv, &case_.kv_norm_weight})
    std::vector<std::uint8_t>().swap(t->bytes);
}

DeviceCaseBuffers::~DeviceCaseBuffers() = default;

const ResidentBuffer& DeviceCaseBuffers::buffer(CaseTensor t) const {
  const int i = index_[static_cast<std::size_t>(t)];
  if (i < 0) throw std::invalid_argument(std::string("the case has no ") + tensor_name(t) + " buffer");
  return *buffers_[static_cast<std::size_t>(i)];
}

ResidentBuffer& DeviceCaseBuffers::buffer(CaseTensor t) {
  return const_cast<ResidentBuffer&>(static_cast<const DeviceCaseBuffers*>(this)->buffer(t));
}

const DLTensor* DeviceCaseBuffers::view(CaseTensor t, const TensorMeta& meta) {
  View& v = views_.emplace_back();
  fill_view(&v.tensor, &v.shape, &v.strides, buffer(t).payload(), meta, current_device());
  return &v.tensor;
}

std::int64_t DeviceCaseBuffers::payload_bytes(CaseTensor t) const { return buffer(t).payload_bytes(); }

int DeviceCaseBuffers::enqueue(const KernelAbi& abi, void* stream, std::string* message, std::int32_t force_grid) {
  char error[1024] = {0};
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
  for (const auto& [id, pair] : tensors) {
    const HostTensor& t = *pair.first;
    if (!t.present || index_[static_cast<std::size_t>(id)] < 0) continue;
    ResidentBuffer& b = buffer(id);
    b.write(0, t.bytes.data(), std::min<std::int64_t>(b.payload_bytes(), static_cast<std::int64_t>(t.bytes.size())));
  }
}

void DeviceCaseBuffers::write_outputs(const InsertOutputs& out) {
  ResidentBuffer& cache = buffer(CaseTensor::kCache);
  if (static_cast<std::int64_t>(out.cache.size()) != cache.payload_bytes())
    throw std::invalid_argument("write_outputs: a backing of another size");
  cache.write(0, out.cache.data(), cache.payload_bytes());
  if (case_.op != InsertOp::kLegacy) return;
  ResidentBuffer& q_out = buffer(CaseTensor::kQOut);
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
  for (const auto& b : buffers_) b->check(&d);
  return d;
}

// ---- DeviceKvNormBuffers ----

DeviceKvNormBuffers::DeviceKvNormBuffers(const HostTensor& kv, const HostTensor& weight, float eps, bool in_place)
    : in_place_(in_place) {
  rows_ = kv.meta.rank() >= 1 ? kv.meta.size(0) : 0;
  TensorMeta out_meta;
  out_meta.dtype = DType::kBF16;
  out_meta.sizes = {rows_, kHeadDim};
  out_meta.strides = contiguous_strides(out_meta.sizes);
  const std::int64_t kv_bytes = static_cast<std::int64_t>(kv.bytes.size());
  io_ = std::make_unique<StagedTransfers>(std::max(kv_bytes, out_meta.span_bytes()));
  const int device = current_device();
  auto add = [&](const char* name, std::int64_t bytes, bool is_input) -> ResidentBuffer& {
    buffers_.push_back(std::make_unique<ResidentBuffer>(name, bytes, kDeviceGuardBytes, io_.get(), is_input));
    return *buffers_.back();
  };
  ResidentBuffer& kv_buffer = add(in_place ? "kv (in place, also out)" : "kv", kv_bytes, !in_place);
  kv_buffer.write(0, kv.bytes.data(), kv_bytes);
  ResidentBuffer& w_buffer = add("weight", static_cast<std::int64_t>(weight.bytes.size()), true);
  w_buffer.write(0, weight.bytes.data(), w_buffer.payload_bytes());
  ResidentBuffer* out_buffer = &kv_buffer;
  if (in_place) {
    out_meta.offset_bytes = kv.meta.offset_bytes;
  } else {
    out_buffer = &add("out", out_meta.span_bytes(), false);
    out_buffer->fill(kCanary);
  }
  out_offset_bytes_ = out_meta.offset_bytes;
  DLTensor& kv_t = tensors_.emplace_back();
  fill_view(&kv_t, &kv_shape_, &kv_strides_, kv_buffer.payload(), kv.meta, device);
  DLTensor& w_t = tensors_.emplace_back();
  fill_view(&w_t, &w_shape_, &w_strides_, w_buffer.payload(), weight.meta, device);
  DLTensor& out_t = tensors_.emplace_back();
  fill_view(&out_t, &out_shape_, &out_strides_, out_buffer->payload(), out_meta, device);
  args_.struct_size = sizeof args_;
  args_.kv = &kv_t;
  args_.weight = &w_t;
  args_.out = &out_t;
  args_.eps = eps;
}

DeviceKvNormBuffers::~DeviceKvNormBuffers() = default;

int DeviceKvNormBuffers::enqueue(const KernelAbi& abi, void* stream, std::string* message) {
  char error[1024] = {0};
  const int rc = abi.kvc_kv_norm(&args_, stream, error, sizeof error);
  error[sizeof error - 1] = '\0';
  return call_status(rc, error, message);
}

void DeviceKvNormBuffers::write_inputs(const HostTensor& kv, const HostTensor& weight) {
  ResidentBuffer& kv_buffer = *buffers_[0];
  ResidentBuffer& w_buffer = *buffers_[1];
  if (static_cast<std::int64_t>(kv.bytes.size()) != kv_buffer.payload_bytes() ||
      static_cast<std::int64_t>(weight.bytes.size()) != w_buffer.payload_bytes())
    throw std::invalid_argument("write_inputs: kv or weight of another size than the resident call's");
  kv_buffer.write(0, kv.bytes.data(), kv_buffer.payload_bytes());
  w_buffer.write(0, weight.bytes.data(), w_buffer.payload_bytes());
}

std::vector<std::uint16_t> DeviceKvNormBuffers::read_out() const {
  const ResidentBuffer& out = in_place_ ? *buffers_[0] : *buffers_[2];
  std::vector<std::uint16_t> rows(static_cast<std::size_t>(rows_ * kHeadDim));
  std::vector<std::uint8_t> bytes(rows.size() * sizeof(std::uint16_t));
  out.read(out_offset_bytes_, static_cast<std::int64_t>(bytes.size()), bytes.data());
  if (!bytes.empty()) std::memcpy(rows.data(), bytes.data(), bytes.size());
  return rows;
}

std::vector<BufferDamage> DeviceKvNormBuffers::damage() const {
  std::vector<BufferDamage> d;
  for (const auto& b : buffers_) b->check(&d);
  return d;
}

}  // namespace kvc::testkit
