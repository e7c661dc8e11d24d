// op_launchers.cpp: ABI argument structs and launches (see op_launchers.h).
#include "op_launchers.h"

#include <cuda_runtime_api.h>

#include <memory>
#include <stdexcept>

#include "testkit/device/device_buffers.h"
#include "kvc/abi/dl_dtype.h"

namespace kvc::bench {
namespace {

constexpr std::size_t kErrorCapacity = 1024;

void check_status(int rc, const char* entry_point, const char* error) {
  if (rc == KVC_STATUS_OK) return;
  throw std::runtime_error(std::string(entry_point) + " returned " + std::to_string(rc) +
                           (error[0] != '\0' ? ": " : "") + error);
}

// The KV-only call's tensors; the struct stays where it was allocated (DLTensor pointers).
struct KvOnlyCall {
  DeviceTensor kv, cache, slots, positions, cos_sin, fp8_scale, weight;
  kvc_kv_only_insert_args args{};

  KvOnlyCall(DeviceWorkspace& ws, const InsertCase& c, void* kv_rows) {
    kv = DeviceTensor(c.kv.meta, kv_rows);
    cache = DeviceTensor::cache(c.cache, ws.cache(*format_of(c)));
    slots = DeviceTensor(c.slots.meta, ws.slots());
    positions = DeviceTensor(c.positions.meta, ws.positions());
    cos_sin = DeviceTensor(c.cos_sin.meta, ws.cos_sin());
    args.struct_size = sizeof args;
    args.kv = kv.dl();
    args.kv_cache = cache.dl();
    args.slot_mapping = slots.dl();
    args.position_ids = positions.dl();
    args.cos_sin_cache = cos_sin.dl();
    if (c.fp8_scale.present) {
      fp8_scale = DeviceTensor(c.fp8_scale.meta, ws.fp8_scale());
      args.fp8_scale = fp8_scale.dl();
    }
    if (c.kv_norm_weight.present) {
      weight = DeviceTensor(c.kv_norm_weight.meta, ws.kv_norm_weight());
      args.kv_norm_weight = weight.dl();
      args.kv_norm_eps = c.kv_norm_eps;
    }
    args.block_size = c.block_size;
    args.kv_mxfp8 = c.kv_mxfp8 ? 1 : 0;
  }
  void launch(const testkit::KernelAbi& abi, void* stream) const {
    char error[kErrorCapacity] = {0};
    check_status(abi.kvc_kv_only_insert(&args, stream, error, sizeof error), "kvc_kv_only_insert", error);
  }
};

struct LegacyCall {
  DeviceTensor q, q_out, q_scale_inv, kv, cache, slots, positions, cos_sin, fp8_scale;
  kvc_legacy_insert_args args{};

  LegacyCall(DeviceWorkspace& ws, const InsertCase& c) {
    const DeviceWorkspace::Query buffers = ws.query(*format_of(c), c.q.meta.size(1));
    q = DeviceTensor(c.q.meta, buffers.q);
    q_out = DeviceTensor(c.q_out, buffers.q_out);
    kv = DeviceTensor(c.kv.meta, ws.kv());
    cache = DeviceTensor::cache(c.cache, ws.cache(*format_of(c)));
    slots = DeviceTensor(c.slots.meta, ws.slots());
    positions = DeviceTensor(c.positions.meta, ws.positions());
    cos_sin = DeviceTensor(c.cos_sin.meta, ws.cos_sin());
    args.struct_size = sizeof args;
    args.q = q.dl();
    args.q_out = q_out.dl();
    if (c.q_scale_inv.present) {
      q_scale_inv = DeviceTensor(c.q_scale_inv.meta, ws.q_scale_inv());
      args.q_scale_inv = q_scale_inv.dl();
    }
    args.kv = kv.dl();
    args.kv_cache = cache.dl();
    args.slot_mapping = slots.dl();
    args.position_ids = positions.dl();
    args.cos_sin_cache = cos_sin.dl();
    if (c.fp8_scale.present) {
      fp8_scale = DeviceTensor(c.fp8_scale.meta, ws.fp8_scale());
      args.fp8_scale = fp8_scale.dl();
    }
    args.block_size = c.block_size;
    args.kv_mxfp8 = c.kv_mxfp8 ? 1 : 0;
    args.eps = c.eps;
    args.apply_q_norm = c.apply_q_norm ? 1 : 0;
    args.apply_q_rope = c.apply_q_rope ? 1 : 0;
    args.q_interleaved = c.q_interleaved ? 1 : 0;
    args.force_grid = 0;  // the library's own grid choice: what production runs
  }
  void launch(const testkit::KernelAbi& abi, void* stream) const {
    char error[kErrorCapacity] = {0};
    check_status(abi.kvc_legacy_insert(&args, stream, error, sizeof error), "kvc_legacy_insert", error);
  }
};

struct KvNormCall {
  DeviceTensor kv, weight, out;
  kvc_kv_norm_args args{};

  KvNormCall(DeviceWorkspace& ws, const InsertCase& fused) {
    kv = DeviceTensor(fused.kv.meta, ws.kv());
    weight = DeviceTensor(fused.kv_norm_weight.meta, ws.kv_norm_weight());
    out = DeviceTensor(fused.kv.meta, ws.normed_kv());
    args.struct_size = sizeof args;
    args.kv = kv.dl();
    args.weight = weight.dl();
    args.out = out.dl();
    args.eps = fused.kv_norm_eps;
  }
  void launch(const testkit::KernelAbi& abi, void* stream) const {
    char error[kErrorCapacity] = {0};
    check_status(abi.kvc_kv_norm(&args, stream, error, sizeof error), "kvc_kv_norm", error);
  }
};

}  // namespace

std::string unsupported_reason(const testkit::KernelAbi& abi, kvc_op op, RecordFormat f) {
  kvc_op_support support{};
  support.struct_size = sizeof support;
  const int32_t format = op == KVC_OP_KV_NORM ? KVC_FORMAT_NONE : static_cast<int32_t>(f);
  const int rc = abi.kvc_op_support_get(op, format, kvc::abi::dl_dtype(DType::kBF16), &support);
  if (rc != KVC_STATUS_OK) return "kvc_op_support_get returned " + std::to_string(rc);
  if (support.supported != 0) return "";
  return std::string("the library does not implement this op: ") +
         (support.reason != nullptr ? support.reason : "(no reason given)");
}

Launch kv_only_launch(const testkit::KernelAbi& abi, DeviceWorkspace& ws, RecordFormat f, bool fused_kv_norm) {
  auto call = std::make_shared<KvOnlyCall>(ws, ws.kv_only_case(f, fused_kv_norm), ws.kv());
  return [call, abi](void* stream) { call->launch(abi, stream); };
}

Launch legacy_launch(const testkit::KernelAbi& abi, DeviceWorkspace& ws, RecordFormat f, std::int64_t heads) {
  auto call = std::make_shared<LegacyCall>(ws, ws.legacy_case(f, heads));
  return [call, abi](void* stream) { call->launch(abi, stream); };
}

Launch unfused_kv_norm_insert_launch(const testkit::KernelAbi& abi, DeviceWorkspace& ws, RecordFormat f) {
  auto norm = std::make_shared<KvNormCall>(ws, ws.kv_only_case(f, true));
  auto insert = std::make_shared<KvOnlyCall>(ws, ws.kv_only_case(f, false), ws.normed_kv());
  return [norm, insert, abi](void* stream) {
    norm->launch(abi, stream);
    insert->launch(abi, stream);
  };
}

Launch copy_launch(void* dst, const void* src, std::int64_t bytes) {
  return [dst, src, bytes](void* stream) {
    testkit::check_cuda(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(bytes), cudaMemcpyDeviceToDevice,
                                        static_cast<cudaStream_t>(stream)),
                        "cudaMemcpyAsync (copy roofline)");
  };
}

}  // namespace kvc::bench
