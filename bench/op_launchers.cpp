// op_launchers.cpp: ABI argument structs over the workspace, and launches (see op_launchers.h).
#include "op_launchers.h"

#include <cuda_runtime_api.h>

#include <deque>
#include <memory>
#include <stdexcept>

#include "testkit/device/abi_args.h"
#include "testkit/device/device_buffers.h"
#include "testkit/device/device_tensor.h"
#include "kvc/abi/dl_dtype.h"

namespace kvc::bench {
namespace {

void check_status(int rc, const char* entry_point, const char* error) {
  if (rc == KVC_STATUS_OK) return;
  throw std::runtime_error(std::string(entry_point) + " returned " + std::to_string(rc) +
                           (error[0] != '\0' ? ": " : "") + error);
}

// The DLTensors of one call, kept where the argument struct points.
class CallTensors {
 public:
  CallTensors() : device_(testkit::current_device()) {}
  CallTensors(const CallTensors&) = delete;
  CallTensors& operator=(const CallTensors&) = delete;

  const DLTensor* over(void* data, const TensorMeta& meta) { return tensors_.emplace_back(data, meta, device_).dl(); }
  // nullptr for an absent optional.
  const DLTensor* over(void* data, const HostTensor& t) { return t.present ? over(data, t.meta) : nullptr; }

 private:
  int device_;
  std::deque<testkit::DeviceTensor> tensors_;
};

// The workspace tensors both insert ops read: the rows at `kv_rows`, the cache of the case's
// format, slots, positions, the cos/sin table and the fp8 scale.
testkit::InsertCallTensors kv_side(CallTensors& tensors, DeviceWorkspace& ws, const InsertCase& c, void* kv_rows) {
  testkit::InsertCallTensors t;
  t.kv = tensors.over(kv_rows, c.kv.meta);
  t.kv_cache = tensors.over(ws.cache(*format_of(c)), testkit::cache_meta(c.cache));
  t.slot_mapping = tensors.over(ws.slots(), c.slots.meta);
  t.position_ids = tensors.over(ws.positions(), c.positions.meta);
  t.cos_sin_cache = tensors.over(ws.cos_sin(), c.cos_sin.meta);
  t.fp8_scale = tensors.over(ws.fp8_scale(), c.fp8_scale);
  return t;
}

// One ABI op call over workspace tensors: the argument struct, the DLTensors it points to, and
// the library's entry point that takes it.
template <typename Args>
struct AbiCall {
  using EntryPoint = int (*)(const Args*, void*, char*, std::size_t);

  AbiCall(EntryPoint entry, const char* name) : entry_point(entry), entry_point_name(name) {}
  void launch(void* stream) const {
    char error[testkit::kAbiErrorCapacity] = {0};
    check_status(entry_point(&args, stream, error, sizeof error), entry_point_name, error);
  }

  CallTensors tensors;
  Args args{};
  EntryPoint entry_point;
  const char* entry_point_name;
};

std::shared_ptr<AbiCall<kvc_kv_only_insert_args>> kv_only_call(const testkit::KernelAbi& abi, DeviceWorkspace& ws,
                                                               const InsertCase& c, void* kv_rows) {
  auto call = std::make_shared<AbiCall<kvc_kv_only_insert_args>>(abi.kvc_kv_only_insert, "kvc_kv_only_insert");
  testkit::InsertCallTensors t = kv_side(call->tensors, ws, c, kv_rows);
  t.kv_norm_weight = call->tensors.over(ws.kv_norm_weight(), c.kv_norm_weight);
  call->args = testkit::kv_only_insert_args(c, t);
  return call;
}

std::shared_ptr<AbiCall<kvc_legacy_insert_args>> legacy_call(const testkit::KernelAbi& abi, DeviceWorkspace& ws,
                                                             const InsertCase& c) {
  auto call = std::make_shared<AbiCall<kvc_legacy_insert_args>>(abi.kvc_legacy_insert, "kvc_legacy_insert");
  const DeviceWorkspace::Query buffers = ws.query(*format_of(c), c.q.meta.size(1));
  testkit::InsertCallTensors t = kv_side(call->tensors, ws, c, ws.kv());
  t.q = call->tensors.over(buffers.q, c.q.meta);
  t.q_out = call->tensors.over(buffers.q_out, c.q_out);
  t.q_scale_inv = call->tensors.over(ws.q_scale_inv(), c.q_scale_inv);
  call->args = testkit::legacy_insert_args(c, t);  // the library's own grid choice: what production runs
  return call;
}

std::shared_ptr<AbiCall<kvc_kv_norm_args>> kv_norm_call(const testkit::KernelAbi& abi, DeviceWorkspace& ws,
                                                        const InsertCase& fused) {
  auto call = std::make_shared<AbiCall<kvc_kv_norm_args>>(abi.kvc_kv_norm, "kvc_kv_norm");
  const DLTensor* kv = call->tensors.over(ws.kv(), fused.kv.meta);
  const DLTensor* weight = call->tensors.over(ws.kv_norm_weight(), fused.kv_norm_weight.meta);
  const DLTensor* out = call->tensors.over(ws.normed_kv(), fused.kv.meta);
  call->args = testkit::kv_norm_args(kv, weight, out, fused.kv_norm_eps);
  return call;
}

}  // namespace

std::string unsupported_reason(const testkit::DeclaredSupport& declared, kvc_op op, RecordFormat f) {
  const int32_t format = op == KVC_OP_KV_NORM ? KVC_FORMAT_NONE : static_cast<int32_t>(f);
  const testkit::Declaration& d = declared.of(op, format, DType::kBF16);
  if (d.supported) return "";
  return "the library does not implement this op: " + d.reason;
}

Launch kv_only_launch(const testkit::KernelAbi& abi, DeviceWorkspace& ws, RecordFormat f, bool fused_kv_norm) {
  auto call = kv_only_call(abi, ws, ws.kv_only_case(f, fused_kv_norm), ws.kv());
  return [call](void* stream) { call->launch(stream); };
}

Launch legacy_launch(const testkit::KernelAbi& abi, DeviceWorkspace& ws, RecordFormat f, std::int64_t heads) {
  auto call = legacy_call(abi, ws, ws.legacy_case(f, heads));
  return [call](void* stream) { call->launch(stream); };
}

Launch unfused_kv_norm_insert_launch(const testkit::KernelAbi& abi, DeviceWorkspace& ws, RecordFormat f) {
  auto norm = kv_norm_call(abi, ws, ws.kv_only_case(f, true));
  auto insert = kv_only_call(abi, ws, ws.kv_only_case(f, false), ws.normed_kv());
  return [norm, insert](void* stream) {
    norm->launch(stream);
    insert->launch(stream);
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
