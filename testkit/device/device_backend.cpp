// device_backend.cpp: running cases through the C kernel ABI on the GPU (see device_backend.h).
#include "testkit/device/device_backend.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>

#include "testkit/backends/abi_profile.h"
#include "testkit/backends/backing.h"
#include "kvc/validate.h"
#include "kvc/validate_store.h"

namespace kvc::testkit {
namespace {

// A cache guard of one page catches a write to page -1 or page num_blocks (a skipped slot taken
// as an index, an off-by-one page); the cap keeps absurd strides of invalid cases allocatable.
constexpr std::int64_t kMaxCacheGuardBytes = std::int64_t{1} << 20;
constexpr std::size_t kErrorCapacity = 1024;

std::string dtype_name(DType t) {
  switch (t) {
    case DType::kBF16:
      return "bf16";
    case DType::kF16:
      return "f16";
    case DType::kF32:
      return "f32";
    case DType::kI64:
      return "i64";
    case DType::kU8:
      return "u8";
    case DType::kE4M3:
      return "e4m3";
    case DType::kI32:
      return "i32";
  }
  return "dtype " + std::to_string(static_cast<int>(t));
}

bool has_dl_dtype(DType t) { return dtype_size(t) != 0; }

}  // namespace

// The cache view as a tensor: [num_blocks, block_size, width] with its strides, cut to its rank
// (a rank-2 cache is what the "cache rank" rule is tested with).
TensorMeta cache_meta(const CacheGeometry& g) {
  TensorMeta m;
  m.dtype = g.dtype;
  const std::int64_t sizes[] = {g.num_blocks, g.block_size, g.width};
  const std::int64_t strides[] = {g.stride0, g.stride1, g.stride2};
  for (int d = 0; d < std::min(g.rank, 3); ++d) {
    m.sizes.push_back(sizes[d]);
    m.strides.push_back(strides[d]);
  }
  m.offset_bytes = g.offset_bytes;
  m.device = g.device;
  return m;
}

namespace {

std::string meta_inexpressible(const std::string& name, const TensorMeta& m) {
  if (m.sizes.size() != m.strides.size())
    return name + ": " + std::to_string(m.sizes.size()) + " sizes but " + std::to_string(m.strides.size()) +
           " strides (a DLTensor has one ndim)";
  if (m.offset_bytes < 0)
    return name + ": negative byte offset " + std::to_string(m.offset_bytes) + " (DLTensor.byte_offset is unsigned)";
  if (!has_dl_dtype(m.dtype)) return name + ": " + dtype_name(m.dtype) + " has no DLPack type";
  return {};
}

bool in_place_q(const InsertCase& c) { return c.op == InsertOp::kLegacy && format_of(c) == RecordFormat::kBf16_512; }

// The device buffers and DLTensors of one call. Buffers are kept with the bytes they were
// uploaded with, so that inputs (and, after a rejection, everything) can be checked afterwards.
class DeviceCall {
 public:
  explicit DeviceCall(int device) : device_(device) {}

  // A buffer holding `bytes`, which must outlive the call (the case's own tensors, the caller's
  // outputs): they are what the buffer is checked against afterwards, without a copy of
  // possibly hundreds of MiB. `is_input`: the call must not modify it.
  std::size_t add_buffer(std::string name, const std::vector<std::uint8_t>& bytes, bool is_input,
                         std::int64_t guard = kDeviceGuardBytes) {
    buffers_.push_back(Buffer{GuardedDeviceBuffer(std::move(name), bytes, guard), {}, &bytes, is_input});
    return buffers_.size() - 1;
  }
  // The same for bytes made for the call, kept here.
  std::size_t add_owned_buffer(std::string name, std::vector<std::uint8_t> bytes, bool is_input) {
    Buffer& b = buffers_.emplace_back(
        Buffer{GuardedDeviceBuffer(std::move(name), bytes, kDeviceGuardBytes), std::move(bytes), nullptr, is_input});
    b.uploaded = &b.owned;
    return buffers_.size() - 1;
  }

  // A DLTensor over buffer `index` described by `meta` (element 0 at meta.offset_bytes).
  const DLTensor* view(std::size_t index, const TensorMeta& meta) {
    View& v = views_.emplace_back();
    v.shape = meta.sizes;
    v.strides = meta.strides;
    if (v.shape.empty()) v.shape.push_back(1), v.strides.push_back(1);  // 0-d: valid pointers, ndim 0
    v.tensor.data = buffers_[index].device.payload();
    v.tensor.device = DLDevice{kDLCUDA, device_ + meta.device};
    v.tensor.ndim = static_cast<std::int32_t>(meta.sizes.size());
    v.tensor.dtype = dl_dtype(meta.dtype);
    v.tensor.shape = v.shape.data();
    v.tensor.strides = v.strides.data();
    v.tensor.byte_offset = static_cast<std::uint64_t>(meta.offset_bytes);
    return &v.tensor;
  }

  // Uploads a present input tensor and returns its view; nullptr for an absent optional.
  const DLTensor* input(const std::string& name, const HostTensor& t) {
    if (!t.present) return nullptr;
    return view(add_buffer(name, t.bytes, true), t.meta);
  }

  // The bytes of an output buffer as downloaded by download_and_check (moved out: read once).
  std::vector<std::uint8_t> take_payload(std::size_t index) { return std::move(contents_[index].payload); }

  // Downloads every buffer and appends damage: guard zones always; payloads of inputs always,
  // and of every buffer when the call was rejected (a rejected call writes nothing).
  void download_and_check(bool rejected, std::vector<BufferDamage>* damage) {
    contents_.clear();
    for (const Buffer& b : buffers_) {
      contents_.push_back(b.device.download());
      b.device.check_guards(contents_.back(), damage);
      if (b.is_input)
        b.device.check_payload(contents_.back(), *b.uploaded, "input changed", damage);
      else if (rejected)
        b.device.check_payload(contents_.back(), *b.uploaded, "written by a rejected call", damage);
      if (b.is_input) contents_.back() = {};  // checked; only outputs are read back later
    }
  }

 private:
  struct Buffer {
    GuardedDeviceBuffer device;
    std::vector<std::uint8_t> owned;
    const std::vector<std::uint8_t>* uploaded;
    bool is_input;
  };
  struct View {
    DLTensor tensor{};
    std::vector<std::int64_t> shape, strides;
  };
  int device_;
  std::deque<Buffer> buffers_;  // stable addresses: `uploaded` may point into an element
  std::deque<View> views_;      // stable addresses: the ABI args point into it
  std::vector<GuardedDeviceBuffer::Contents> contents_;
};

int current_device() {
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

const char* op_name(std::int32_t op) {
  switch (op) {
    case KVC_OP_KV_ONLY_INSERT:
      return "kv_only_insert";
    case KVC_OP_LEGACY_INSERT:
      return "legacy_insert";
    case KVC_OP_KV_NORM:
      return "kv_norm";
  }
  return "unknown op";
}

RsqrtMode rsqrt_mode_of(std::int32_t declared) {
  return declared == KVC_RSQRT_APPROXIMATE ? RsqrtMode::kApproximate : RsqrtMode::kCorrectlyRounded;
}

}  // namespace

std::string abi_inexpressible(const InsertCase& c) {
  if (c.op != InsertOp::kKvOnly && c.op != InsertOp::kLegacy)
    return "op code " + std::to_string(static_cast<int>(c.op)) + " has no ABI entry point";
  if (c.op == InsertOp::kLegacy && c.kv_norm_weight.present) return "the legacy op's ABI has no kv_norm weight";
  const std::pair<const char*, const HostTensor*> tensors[] = {{"kv", &c.kv},
                                                               {"slot_mapping", &c.slots},
                                                               {"position_ids", &c.positions},
                                                               {"cos_sin_cache", &c.cos_sin},
                                                               {"fp8_scale", &c.fp8_scale},
                                                               {"q", &c.q},
                                                               {"q_scale_inv", &c.q_scale_inv},
                                                               {"kv_norm_weight", &c.kv_norm_weight}};
  for (const auto& [name, t] : tensors) {
    if (!t->present) continue;
    if (std::string why = meta_inexpressible(name, t->meta); !why.empty()) return why;
  }
  if (c.op == InsertOp::kLegacy)
    if (std::string why = meta_inexpressible("q_out", c.q_out); !why.empty()) return why;
  if (c.cache.rank < 0 || c.cache.rank > 3)
    return "k_cache: rank " + std::to_string(c.cache.rank) + " (the case describes 3 dims)";
  return meta_inexpressible("k_cache", cache_meta(c.cache));
}

std::string DeviceRunChecks::to_string() const {
  std::string s;
  for (const BufferDamage& d : damage) s += d.to_string() + "\n";
  return s;
}

DeviceBackend::DeviceBackend(KernelLibrary library, DeviceBackendOptions options)
    : library_(std::move(library)), options_(options) {}

DeviceBackend::~DeviceBackend() {
  if (stream_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

std::string DeviceBackend::name() const { return "device:" + library_.describe(); }

void* DeviceBackend::stream() {
  if (stream_ == nullptr) {
    cudaStream_t s = nullptr;
    check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    stream_ = s;
  }
  return stream_;
}

kvc_op_support DeviceBackend::query_support(std::int32_t op, std::int32_t format, DLDataType kv_dtype) const {
  const auto key = std::make_tuple(op, format, kv_dtype.code, kv_dtype.bits);
  if (auto it = support_cache_.find(key); it != support_cache_.end()) return it->second;
  kvc_op_support s{};
  s.struct_size = sizeof s;
  const int rc = library_.abi().kvc_op_support_get(op, format, kv_dtype, &s);
  if (rc != KVC_STATUS_OK) {
    s.supported = 0;
    s.reason = "kvc_op_support_get failed";
  }
  support_cache_.emplace(key, s);
  return s;
}

Support DeviceBackend::supports(const InsertCase& c) const {
  // An invalid case is always "supported": run() rejects it on the host with its code and never
  // calls the library, so what the library implements does not matter (a kv of float32 is not
  // an unsupported dtype, it is a rejected call).
  if (!validate_insert(c, ValidationLevel::kStrict).ok()) return {};
  const auto format = format_of(c);
  if ((c.op != InsertOp::kKvOnly && c.op != InsertOp::kLegacy) || !format || !has_dl_dtype(c.kv.meta.dtype)) return {};
  const std::int32_t op = c.op == InsertOp::kLegacy ? KVC_OP_LEGACY_INSERT : KVC_OP_KV_ONLY_INSERT;
  const kvc_op_support s = query_support(op, static_cast<std::int32_t>(*format), dl_dtype(c.kv.meta.dtype));
  if (s.supported) return {};
  return {false, library_.name() + " does not implement " + op_name(op) + " for " +
                     std::string(layout_of(*format).name) + " with " + dtype_name(c.kv.meta.dtype) +
                     " kv: " + (s.reason ? s.reason : "(no reason given)")};
}

Support DeviceBackend::supports_kv_norm() const {
  const kvc_op_support s = query_support(KVC_OP_KV_NORM, KVC_FORMAT_NONE, dl_dtype(DType::kBF16));
  if (s.supported) return {};
  return {false, library_.name() + " does not implement kv_norm: " + (s.reason ? s.reason : "(no reason given)")};
}

RsqrtMode DeviceBackend::kv_norm_rsqrt_mode() const {
  return rsqrt_mode_of(query_support(KVC_OP_KV_NORM, KVC_FORMAT_NONE, dl_dtype(DType::kBF16)).kv_norm_rsqrt);
}

RsqrtModes DeviceBackend::rsqrt_modes(const InsertCase& c) const {
  const auto format = format_of(c);
  const std::int32_t op = c.op == InsertOp::kLegacy ? KVC_OP_LEGACY_INSERT : KVC_OP_KV_ONLY_INSERT;
  if (!format || !has_dl_dtype(c.kv.meta.dtype)) return {};
  const kvc_op_support s = query_support(op, static_cast<std::int32_t>(*format), dl_dtype(c.kv.meta.dtype));
  return {rsqrt_mode_of(s.q_norm_rsqrt), rsqrt_mode_of(s.kv_norm_rsqrt)};
}

RsqrtMode DeviceBackend::rsqrt_mode(InsertOp op, bool q_norm) const {
  // The Backend interface asks per op; a library declares per (op, format, dtype). Report the
  // approximation when any bf16 format of the op declares it: the checker then accepts rows
  // within its window, which is exact-or-better for formats that round correctly.
  const std::int32_t abi_op = op == InsertOp::kLegacy ? KVC_OP_LEGACY_INSERT : KVC_OP_KV_ONLY_INSERT;
  for (RecordFormat f : kAllFormats) {
    const kvc_op_support s = query_support(abi_op, static_cast<std::int32_t>(f), dl_dtype(DType::kBF16));
    if (!s.supported) continue;
    if (rsqrt_mode_of(q_norm ? s.q_norm_rsqrt : s.kv_norm_rsqrt) == RsqrtMode::kApproximate)
      return RsqrtMode::kApproximate;
  }
  return RsqrtMode::kCorrectlyRounded;
}

Status DeviceBackend::status_of(int rc, const char* entry_point, const char* message) {
  checks_.abi_status = rc;
  checks_.abi_message = message;
  if (rc == KVC_STATUS_OK) return Status::Ok();
  ErrorCode code{};
  if (rc != KVC_STATUS_CUDA_ERROR && rc != KVC_STATUS_UNSUPPORTED && rc != KVC_STATUS_BAD_ARGUMENT &&
      error_code_from_number(rc, &code))
    return Error(code, std::string(entry_point) + ": " + message);
  const char* what = rc == KVC_STATUS_CUDA_ERROR     ? "CUDA error"
                     : rc == KVC_STATUS_UNSUPPORTED  ? "unsupported"
                     : rc == KVC_STATUS_BAD_ARGUMENT ? "bad argument"
                                                     : "not a kvconform status code";
  throw KernelCallError(library_.describe() + ": " + entry_point + " returned " + std::to_string(rc) + " (" + what +
                        "): " + message);
}

void DeviceBackend::finish_damage_checks() {
  if (!checks_.damage.empty() && options_.throw_on_damage)
    throw BufferDamageError(name() + " damaged device memory:\n" + checks_.to_string());
}

Status DeviceBackend::run(const InsertCase& c, InsertOutputs& out) {
  checks_ = DeviceRunChecks{};
  if (options_.host_validation) {
    if (Status s = validate_insert(c, ValidationLevel::kStrict, ValueAccess::kMetadataAndValues); !s.ok()) return s;
    if (Status s = validate_outputs(c, out); !s.ok()) return s;
  }
  if (const std::string why = abi_inexpressible(c); !why.empty())
    throw std::invalid_argument("the case cannot be passed through the kernel ABI: " + why);

  DeviceCall call(current_device());
  const DLTensor* kv = call.input("kv", c.kv);
  const DLTensor* slots = call.input("slot_mapping", c.slots);
  const DLTensor* positions = call.input("position_ids", c.positions);
  const DLTensor* cos_sin = call.input("cos_sin_cache", c.cos_sin);
  const DLTensor* fp8_scale = call.input("fp8_scale", c.fp8_scale);
  const std::int64_t cache_guard = std::clamp(c.cache.checked_page_stride_bytes().value_or(kMaxCacheGuardBytes),
                                              kDeviceGuardBytes, kMaxCacheGuardBytes);
  const std::size_t cache_buffer = call.add_buffer("kv_cache (backing)", out.cache, false, cache_guard);
  const DLTensor* cache = call.view(cache_buffer, cache_meta(c.cache));

  char error[kErrorCapacity] = {0};
  int rc = KVC_STATUS_OK;
  const char* entry_point = nullptr;
  std::size_t q_out_buffer = 0;
  if (c.op == InsertOp::kKvOnly) {
    kvc_kv_only_insert_args a{};
    a.struct_size = sizeof a;
    a.kv = kv;
    a.kv_cache = cache;
    a.slot_mapping = slots;
    a.position_ids = positions;
    a.cos_sin_cache = cos_sin;
    a.fp8_scale = fp8_scale;
    a.kv_norm_weight = call.input("kv_norm_weight", c.kv_norm_weight);
    a.kv_norm_eps = c.kv_norm_eps;
    a.block_size = c.block_size;
    a.kv_mxfp8 = c.kv_mxfp8 ? 1 : 0;
    entry_point = "kvc_kv_only_insert";
    ++abi_calls_;
    rc = library_.abi().kvc_kv_only_insert(&a, stream(), error, sizeof error);
  } else {
    kvc_legacy_insert_args a{};
    a.struct_size = sizeof a;
    if (in_place_q(c)) {
      // bf16_512: Q is rotated in place. The buffer starts as q's bytes (extended by the q output
      // buffer's tail should q_out claim more), and q and q_out both describe it.
      std::vector<std::uint8_t> bytes = c.q.bytes;
      if (out.q_out.size() > bytes.size())
        bytes.insert(bytes.end(), out.q_out.begin() + static_cast<std::ptrdiff_t>(bytes.size()), out.q_out.end());
      q_out_buffer = call.add_owned_buffer("q (in place, also q_out)", std::move(bytes), false);
      a.q = c.q.present ? call.view(q_out_buffer, c.q.meta) : nullptr;
    } else {
      a.q = call.input("q", c.q);
      q_out_buffer = call.add_buffer("q_out", out.q_out, false);
    }
    a.q_out = call.view(q_out_buffer, c.q_out);
    a.q_scale_inv = call.input("q_scale_inv", c.q_scale_inv);
    a.kv = kv;
    a.kv_cache = cache;
    a.slot_mapping = slots;
    a.position_ids = positions;
    a.cos_sin_cache = cos_sin;
    a.fp8_scale = fp8_scale;
    a.block_size = c.block_size;
    a.kv_mxfp8 = c.kv_mxfp8 ? 1 : 0;
    a.eps = c.eps;
    a.apply_q_norm = c.apply_q_norm ? 1 : 0;
    a.apply_q_rope = c.apply_q_rope ? 1 : 0;
    a.q_interleaved = c.q_interleaved ? 1 : 0;
    a.force_grid = options_.force_grid;
    entry_point = "kvc_legacy_insert";
    ++abi_calls_;
    rc = library_.abi().kvc_legacy_insert(&a, stream(), error, sizeof error);
  }
  checks_.abi_called = true;
  error[kErrorCapacity - 1] = '\0';
  check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream())),
             std::string("synchronising after ") + entry_point);

  call.download_and_check(rc != KVC_STATUS_OK, &checks_.damage);
  const Status status = status_of(rc, entry_point, error);
  finish_damage_checks();
  if (!status.ok()) return status;  // outputs untouched, as for every rejected case
  out.cache = call.take_payload(cache_buffer);
  if (c.op == InsertOp::kLegacy) {
    const std::vector<std::uint8_t> q_out = call.take_payload(q_out_buffer);
    std::copy_n(q_out.begin(), std::min(q_out.size(), out.q_out.size()), out.q_out.begin());
  }
  return status;
}

Status DeviceBackend::kv_norm(const HostTensor& kv, const HostTensor& weight, float eps,
                              std::vector<std::uint16_t>* out, bool in_place) {
  checks_ = DeviceRunChecks{};
  if (options_.host_validation) {
    if (Status s = validate_kv_norm(kv, weight, ValueAccess::kMetadataAndValues); !s.ok()) return s;
  }
  for (const auto& [name, t] : {std::make_pair("kv", &kv), std::make_pair("weight", &weight)})
    if (std::string why = meta_inexpressible(name, t->meta); !why.empty())
      throw std::invalid_argument("the call cannot be passed through the kernel ABI: " + why);

  const std::int64_t rows = kv.meta.rank() >= 1 ? kv.meta.size(0) : 0;
  TensorMeta out_meta;
  out_meta.dtype = DType::kBF16;
  out_meta.sizes = {rows, kHeadDim};
  out_meta.strides = contiguous_strides(out_meta.sizes);
  DeviceCall call(current_device());
  kvc_kv_norm_args a{};
  a.struct_size = sizeof a;
  std::size_t out_buffer = 0;
  if (in_place) {
    out_buffer = call.add_buffer("kv (in place, also out)", kv.bytes, false);
    a.kv = call.view(out_buffer, kv.meta);
    out_meta.offset_bytes = kv.meta.offset_bytes;
  } else {
    a.kv = call.input("kv", kv);
    out_buffer = call.add_owned_buffer(
        "out", std::vector<std::uint8_t>(static_cast<std::size_t>(out_meta.span_bytes()), kCanary), false);
  }
  a.out = call.view(out_buffer, out_meta);
  a.weight = call.input("weight", weight);
  a.eps = eps;

  char error[kErrorCapacity] = {0};
  ++abi_calls_;
  const int rc = library_.abi().kvc_kv_norm(&a, stream(), error, sizeof error);
  checks_.abi_called = true;
  error[kErrorCapacity - 1] = '\0';
  check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream())), "synchronising after kvc_kv_norm");
  call.download_and_check(rc != KVC_STATUS_OK, &checks_.damage);
  const Status status = status_of(rc, "kvc_kv_norm", error);
  finish_damage_checks();
  if (!status.ok()) return status;
  const std::vector<std::uint8_t> bytes = call.take_payload(out_buffer);
  out->assign(static_cast<std::size_t>(rows * kHeadDim), 0);
  std::memcpy(out->data(), bytes.data() + out_meta.offset_bytes, out->size() * sizeof(std::uint16_t));
  return status;
}

kvc::Profile DeviceBackend::declared_profile(const InsertCase& c) const {
  const auto format = format_of(c);
  if ((c.op != InsertOp::kKvOnly && c.op != InsertOp::kLegacy) || !format || !has_dl_dtype(c.kv.meta.dtype))
    return Backend::declared_profile(c);
  const std::int32_t op = c.op == InsertOp::kLegacy ? KVC_OP_LEGACY_INSERT : KVC_OP_KV_ONLY_INSERT;
  const kvc_op_support s = query_support(op, static_cast<std::int32_t>(*format), dl_dtype(c.kv.meta.dtype));
  return profile_from_op_support(s, library_.abi_version(), op);
}

Support DeviceBackend::supports_store(const StoreCase& c) const {
  if (library_.abi().kvc_store_rotated == nullptr)
    return {false, library_.name() + " does not export kvc_store_rotated (the store op is optional since ABI 1.1)"};
  if (!validate_store_rotated(c, ValidationLevel::kStrict).ok()) return {};  // rejected on the host
  const RecordFormat f = store_format(c);
  const kvc_op_support s = query_support(KVC_OP_STORE_ROTATED, static_cast<std::int32_t>(f), dl_dtype(DType::kBF16));
  if (s.supported) return {};
  return {false, library_.name() + " does not implement store_rotated for " + std::string(layout_of(f).name) + ": " +
                     (s.reason ? s.reason : "(no reason given)")};
}

kvc::Profile DeviceBackend::declared_store_profile(const StoreCase& c) const {
  const kvc_op_support s =
      query_support(KVC_OP_STORE_ROTATED, static_cast<std::int32_t>(store_format(c)), dl_dtype(DType::kBF16));
  return profile_from_op_support(s, library_.abi_version(), KVC_OP_STORE_ROTATED);
}

Status DeviceBackend::run_store(const StoreCase& c, std::vector<std::uint8_t>& backing) {
  checks_ = DeviceRunChecks{};
  if (options_.host_validation) {
    if (Status s = validate_store_rotated(c, ValidationLevel::kStrict, ValueAccess::kMetadataAndValues); !s.ok())
      return s;
    if (Status s = validate_store_backing(c, backing); !s.ok()) return s;
  }
  if (library_.abi().kvc_store_rotated == nullptr)
    throw KernelCallError(library_.describe() + " does not export kvc_store_rotated: check supports_store() first");
  for (const auto& [name, m] : {std::make_pair("rows", &c.rows.meta), std::make_pair("indices", &c.indices.meta),
                                std::make_pair("kv_cache", &c.cache)})
    if (std::string why = meta_inexpressible(name, *m); !why.empty())
      throw std::invalid_argument("the store case cannot be passed through the kernel ABI: " + why);

  DeviceCall call(current_device());
  kvc_store_rotated_args a{};
  a.struct_size = sizeof a;
  a.rows = call.input("rows", c.rows);
  a.indices = call.input("indices", c.indices);
  const std::int64_t cache_guard = std::clamp(store_cache_geometry(c).checked_page_stride_bytes().value_or(0),
                                              kDeviceGuardBytes, kMaxCacheGuardBytes);
  const std::size_t cache_buffer = call.add_buffer("kv_cache (backing)", backing, false, cache_guard);
  a.kv_cache = call.view(cache_buffer, c.cache);
  a.block_size = c.block_size;
  a.kv_mxfp8 = c.kv_mxfp8 ? 1 : 0;

  char error[kErrorCapacity] = {0};
  ++abi_calls_;
  const int rc = library_.abi().kvc_store_rotated(&a, stream(), error, sizeof error);
  checks_.abi_called = true;
  error[kErrorCapacity - 1] = '\0';
  check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream())), "synchronising after kvc_store_rotated");
  call.download_and_check(rc != KVC_STATUS_OK, &checks_.damage);
  const Status status = status_of(rc, "kvc_store_rotated", error);
  finish_damage_checks();
  if (!status.ok()) return status;
  backing = call.take_payload(cache_buffer);
  return status;
}

}  // namespace kvc::testkit
