// device_backend.cpp: running cases through the C kernel ABI on the GPU (see device_backend.h).
#include "testkit/device/device_backend.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <utility>

#include "kvc/abi/enum_mapping.h"
#include "testkit/backends/backing.h"
#include "testkit/compare/out_of_range_rows.h"
#include "testkit/device/device_fault.h"
#include "testkit/device/guarded_tensors.h"
#include "kvc/validate.h"
#include "kvc/validate_store.h"

namespace kvc::testkit {
namespace {

bool in_place_q(const InsertCase& c) { return c.op == InsertOp::kLegacy && format_of(c) == RecordFormat::kBf16_512; }

}  // namespace

std::string DeviceRunChecks::to_string() const {
  std::string s;
  for (const BufferDamage& d : damage) s += d.to_string() + "\n";
  return s;
}

DeviceBackend::DeviceBackend(KernelLibrary library, DeviceBackendOptions options)
    : library_(std::move(library)), options_(options), declared_(library_) {}

std::string DeviceBackend::name() const { return "device:" + library_.describe(); }

void* DeviceBackend::stream() {
  if (!stream_) stream_.emplace();
  return stream_->get();
}

Support DeviceBackend::supports(const InsertCase& c) const {
  // An invalid case is always "supported": run() rejects it on the host with its code and never
  // calls the library, so what the library implements does not matter (a kv of float32 is not
  // an unsupported dtype, it is a rejected call).
  if (!validate_insert(c, ValidationLevel::kStrict).ok()) return {};
  return declared_.insert_support(c);
}

Support DeviceBackend::supports_kv_norm() const {
  const Declaration& d = declared_.of(KVC_OP_KV_NORM, KVC_FORMAT_NONE, DType::kBF16);
  if (d.supported) return {};
  return {false, library_.name() + " does not implement kv_norm: " + d.reason};
}

RsqrtMode DeviceBackend::kv_norm_rsqrt_mode() const {
  return declared_.of(KVC_OP_KV_NORM, KVC_FORMAT_NONE, DType::kBF16).rsqrt.kv_norm;
}

RsqrtModes DeviceBackend::rsqrt_modes(const InsertCase& c) const {
  const Declaration* d = declared_.declaration_of(c);
  return d != nullptr ? d->rsqrt : RsqrtModes{};
}

RsqrtMode DeviceBackend::rsqrt_mode(InsertOp op, bool q_norm) const {
  // The Backend interface asks per op; a library declares per (op, format, dtype). Report the
  // approximation when any bf16 format of the op declares it: the checker then accepts rows
  // within its window, which is exact-or-better for formats that round correctly. The KV-only
  // op's norm is the fused kv_norm, declared by its own query.
  const std::int32_t abi_op = op == InsertOp::kLegacy ? KVC_OP_LEGACY_INSERT : KVC_OP_KV_ONLY_INSERT_KV_NORM;
  for (RecordFormat f : kAllFormats) {
    const Declaration& d = declared_.of(abi_op, abi::abi_format(f), DType::kBF16);
    if (d.supported && (q_norm ? d.rsqrt.q_norm : d.rsqrt.kv_norm) == RsqrtMode::kApproximate)
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

Status DeviceBackend::call_library(const char* entry_point, const GuardedTensors& call, const AbiOpCall& op) {
  char error[kAbiErrorCapacity] = {0};
  ++abi_calls_;
  const int rc = op(stream(), error, sizeof error);
  checks_.abi_called = true;
  error[kAbiErrorCapacity - 1] = '\0';
  // Recorded before synchronising: a sticky CUDA error there throws, and what the library
  // answered must survive it (the probe reports both).
  checks_.abi_status = rc;
  checks_.abi_message = error;
  if (const cudaError_t synced = cudaStreamSynchronize(static_cast<cudaStream_t>(stream())); synced != cudaSuccess)
    throw device_fault(synced, library_.describe(), entry_point, call_description_);
  call.check(rc == KVC_STATUS_OK ? CallOutcome::kAccepted : CallOutcome::kRejected, &checks_.damage);
  const Status status = status_of(rc, entry_point, error);
  finish_damage_checks();
  return status;
}

Status DeviceBackend::run(const InsertCase& c, InsertOutputs& out) {
  checks_ = DeviceRunChecks{};
  if (options_.host_validation) {
    if (Status s = validate_insert(c, ValidationLevel::kStrict, ValueAccess::kMetadataAndValues); !s.ok()) return s;
    if (Status s = validate_outputs(c, out); !s.ok()) return s;
  }
  if (const std::string why = abi_inexpressible(c); !why.empty())
    throw std::invalid_argument("the case cannot be passed through the kernel ABI: " + why);

  call_description_ = describe_insert_call(c);
  GuardedTensors call(TransferPath::kLegacyStream);
  InsertCallTensors t;
  t.kv = call.input("kv", c.kv);
  t.slot_mapping = call.input("slot_mapping", c.slots);
  t.position_ids = call.input("position_ids", c.positions);
  t.cos_sin_cache = call.input("cos_sin_cache", c.cos_sin);
  t.fp8_scale = call.input("fp8_scale", c.fp8_scale);
  const GuardedTensors::BufferId cache_buffer = call.upload(kCacheBackingBuffer, out.cache, BufferRole::kOutput,
                                                            cache_guard_bytes(c.cache), options_.cache_placement);
  call.explain_damage(cache_buffer, [&c](const std::vector<ByteRange>& changed) {
    return attribute_out_of_bounds_writes(c, changed).lines();
  });
  t.kv_cache = call.view(cache_buffer, cache_meta(c.cache));

  const KernelAbi& abi = library_.abi();
  if (c.op == InsertOp::kKvOnly) {
    t.kv_norm_weight = call.input("kv_norm_weight", c.kv_norm_weight);
    const kvc_kv_only_insert_args a = kv_only_insert_args(c, t);
    const Status status = call_library("kvc_kv_only_insert", call, [&](void* stream, char* error, std::size_t n) {
      return abi.kvc_kv_only_insert(&a, stream, error, n);
    });
    if (!status.ok()) return status;  // outputs untouched, as for every rejected case
    out.cache = call.buffer(cache_buffer).read_all();
    return status;
  }

  GuardedTensors::BufferId q_out_buffer = 0;
  if (in_place_q(c)) {
    // bf16_512: Q is rotated in place. The buffer starts as q's bytes (extended by the q output
    // buffer's tail should q_out claim more), and q and q_out both describe it.
    std::vector<std::uint8_t> bytes = c.q.bytes;
    if (out.q_out.size() > bytes.size())
      bytes.insert(bytes.end(), out.q_out.begin() + static_cast<std::ptrdiff_t>(bytes.size()), out.q_out.end());
    q_out_buffer = call.upload_owned("q (in place, also q_out)", std::move(bytes), BufferRole::kOutput);
    t.q = c.q.present ? call.view(q_out_buffer, c.q.meta) : nullptr;
  } else {
    t.q = call.input("q", c.q);
    q_out_buffer = call.upload("q_out", out.q_out, BufferRole::kOutput);
  }
  t.q_out = call.view(q_out_buffer, c.q_out);
  t.q_scale_inv = call.input("q_scale_inv", c.q_scale_inv);
  const kvc_legacy_insert_args a = legacy_insert_args(c, t, options_.force_grid);
  const Status status = call_library("kvc_legacy_insert", call, [&](void* stream, char* error, std::size_t n) {
    return abi.kvc_legacy_insert(&a, stream, error, n);
  });
  if (!status.ok()) return status;  // outputs untouched, as for every rejected case
  out.cache = call.buffer(cache_buffer).read_all();
  const std::vector<std::uint8_t> q_out = call.buffer(q_out_buffer).read_all();
  std::copy_n(q_out.begin(), std::min(q_out.size(), out.q_out.size()), out.q_out.begin());
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
  call_description_ = {"kv_norm of " + std::to_string(rows) + " rows" + (in_place ? ", in place" : "")};
  TensorMeta out_meta = contiguous_meta(DType::kBF16, {rows, kHeadDim});
  GuardedTensors call(TransferPath::kLegacyStream);
  const DLTensor* kv_tensor = nullptr;
  GuardedTensors::BufferId out_buffer = 0;
  if (in_place) {
    out_buffer = call.upload("kv (in place, also out)", kv.bytes, BufferRole::kOutput);
    kv_tensor = call.view(out_buffer, kv.meta);
    out_meta.offset_bytes = kv.meta.offset_bytes;
  } else {
    kv_tensor = call.input("kv", kv);
    out_buffer = call.add("out", out_meta.span_bytes(), BufferRole::kOutput);
    call.buffer(out_buffer).fill(kCanary);
  }
  const DLTensor* out_tensor = call.view(out_buffer, out_meta);
  const kvc_kv_norm_args a = kv_norm_args(kv_tensor, call.input("weight", weight), out_tensor, eps);
  const KernelAbi& abi = library_.abi();
  const Status status = call_library("kvc_kv_norm", call, [&](void* stream, char* error, std::size_t n) {
    return abi.kvc_kv_norm(&a, stream, error, n);
  });
  if (!status.ok()) return status;
  out->assign(static_cast<std::size_t>(rows * kHeadDim), 0);
  call.buffer(out_buffer)
      .read(out_meta.offset_bytes, static_cast<std::int64_t>(out->size() * sizeof(std::uint16_t)),
            reinterpret_cast<std::uint8_t*>(out->data()));
  return status;
}

kvc::Profile DeviceBackend::declared_profile(const InsertCase& c) const {
  const Declaration* d = declared_.declaration_of(c);
  return d != nullptr ? d->profile : Backend::declared_profile(c);
}

Support DeviceBackend::supports_store(const StoreCase& c) const {
  if (library_.abi().kvc_store_rotated == nullptr) return declared_.store_support(c);  // names the missing export
  if (!validate_store_rotated(c, ValidationLevel::kStrict).ok()) return {};            // rejected on the host
  return declared_.store_support(c);
}

kvc::Profile DeviceBackend::declared_store_profile(const StoreCase& c) const {
  return declared_.declaration_of(c)->profile;
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

  call_description_ = {"store_rotated into " + std::string(layout_of(store_format(c)).name) + ", " +
                       std::to_string(c.rows.meta.rank() >= 1 ? c.rows.meta.size(0) : 0) + " rows"};
  GuardedTensors call(TransferPath::kLegacyStream);
  const DLTensor* rows = call.input("rows", c.rows);
  const DLTensor* indices = call.input("indices", c.indices);
  // A store case without a usable page stride still gets the smallest guard.
  const GuardedTensors::BufferId cache_buffer =
      call.upload(kCacheBackingBuffer, backing, BufferRole::kOutput, cache_guard_bytes(store_cache_geometry(c), 0));
  const kvc_store_rotated_args a = store_rotated_args(c, rows, indices, call.view(cache_buffer, c.cache));
  const KernelAbi& abi = library_.abi();
  const Status status = call_library("kvc_store_rotated", call, [&](void* stream, char* error, std::size_t n) {
    return abi.kvc_store_rotated(&a, stream, error, n);
  });
  if (!status.ok()) return status;
  backing = call.buffer(cache_buffer).read_all();
  return status;
}

}  // namespace kvc::testkit
