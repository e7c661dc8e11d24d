// stacked_ctx_kv_device.cpp: stacked context-KV cases through the kernel ABI (see stacked_ctx_kv_device.h).
#include "testkit/device/stacked_ctx_kv_device.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <utility>

#include "kvc/abi/enum_mapping.h"
#include "kvc/stacked_ctx_kv_eligibility.h"
#include "kvc/stacked_ctx_kv_validate.h"
#include "testkit/device/abi_args.h"
#include "testkit/device/device_backend.h"
#include "testkit/device/guarded_tensors.h"

namespace kvc::testkit {
namespace {

template <typename T>
std::vector<std::uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<std::uint8_t> b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// The guarded tensors of one call, with this runner's rule for metadata a DLTensor cannot hold:
// with the host validation off such a case reaches here, and is a KernelCallError.
class Call {
 public:
  Call() : tensors_(TransferPath::kLegacyStream) {}

  // `bytes` must outlive the call (they are what the buffer is checked against afterwards).
  GuardedTensors::BufferId add(std::string name, const std::vector<std::uint8_t>& bytes, BufferRole role) {
    return tensors_.upload(std::move(name), bytes, role);
  }
  const DLTensor* view(GuardedTensors::BufferId buffer, const TensorMeta& meta) {
    if (!meta_inexpressible("", meta).empty())
      throw KernelCallError(
          "a DLTensor cannot express this metadata (sizes and strides of different lengths, a "
          "negative offset or an unknown dtype): such a case is rejected by the host validation");
    return tensors_.view(buffer, meta);
  }
  const DLTensor* input(std::string name, const HostTensor& t) {
    if (!t.present) return nullptr;
    return view(add(std::move(name), t.bytes, BufferRole::kInput), t.meta);
  }
  std::vector<std::uint8_t> payload(GuardedTensors::BufferId buffer) const {
    return tensors_.buffer(buffer).read_all();
  }
  void check(CallOutcome outcome, std::vector<BufferDamage>* damage) const { tensors_.check(outcome, damage); }

 private:
  GuardedTensors tensors_;
};

bool same_bytes(const HostTensor& a, const HostTensor& b) {
  return a.meta.dtype == b.meta.dtype && a.meta.sizes == b.meta.sizes && a.meta.strides == b.meta.strides &&
         a.meta.offset_bytes == b.meta.offset_bytes && a.bytes == b.bytes;
}

// Whether the run hands over stacked parameters: never for a case that is not even valid at the
// contract level (build_stacked_params needs one), else by the policy.
bool wants_stacked_params(const StackedCtxKvCase& c, StackedParamsPolicy policy) {
  if (policy == StackedParamsPolicy::kNever || !validate_stacked_ctx_kv(c, ValidationLevel::kContract).ok())
    return false;
  if (policy == StackedParamsPolicy::kWhenEligible) return stacked_ctx_kv_eligibility(c).eligible();
  const StackedCtxKvLayer& first = c.layers.front();
  for (const StackedCtxKvLayer& l : c.layers)
    if (l.head_dim != first.head_dim || l.num_kv_heads != first.num_kv_heads || l.dtype() != first.dtype() ||
        l.has_bias() != first.has_bias())
      return false;
  return true;
}

}  // namespace

StackedCtxKvDevice::StackedCtxKvDevice(KernelLibrary library) : library_(std::move(library)), declared_(library_) {}

void* StackedCtxKvDevice::stream() {
  if (!stream_) stream_.emplace();
  return stream_->get();
}

Support StackedCtxKvDevice::supports(const StackedCtxKvCase& c) const {
  if (library_.abi().kvc_stacked_ctx_kv == nullptr)
    return {false, library_.describe() + " does not export kvc_stacked_ctx_kv"};
  const DType d = c.storage_dtype();
  if (d != DType::kBF16 && d != DType::kF16) return {};  // a rejected case: its code is what is tested
  const Declaration& declared = declared_.of(KVC_OP_STACKED_CTX_KV, KVC_FORMAT_NONE, d);
  if (declared.supported) return {};
  return {false, library_.describe() + " does not implement the stacked context-KV op for " +
                     (d == DType::kF16 ? "fp16" : "bf16") + ": " + declared.reason};
}

JudgedStackedProfile StackedCtxKvDevice::judged_profile(DType d, std::int32_t abi_path) const {
  if (override_) return {*override_, "--stacked-profile"};
  const std::int32_t op = abi::stacked_declaration_op(abi_path);
  const bool fused = op == KVC_OP_STACKED_CTX_KV_FUSED;
  const Declaration& declared = declared_.of(op, KVC_FORMAT_NONE, d);
  if (!declared.supported)
    return {contract_stacked_profile(), std::string("its ") + (fused ? "fused" : "per-layer and stacked") +
                                            " path declared unsupported (" + declared.reason + "): the contract's"};
  return {declared.stacked_profile,
          std::string("declared for its ") + (fused ? "fused path" : "per-layer and stacked paths")};
}

StackedProfile StackedCtxKvDevice::case_profile(DType d) const {
  if (d != DType::kBF16 && d != DType::kF16) return override_.value_or(contract_stacked_profile());
  return judged_profile(d, KVC_STACKED_PATH_PER_LAYER).profile;
}

Status StackedCtxKvDevice::run(const StackedCtxKvCase& c, StackedCtxKvOutputs& out, const StackedDeviceOptions& o,
                               StackedDeviceRun* run) {
  StackedDeviceRun local;
  StackedDeviceRun& r = run != nullptr ? *run : local;
  r = StackedDeviceRun{};
  if (library_.abi().kvc_stacked_ctx_kv == nullptr)
    throw KernelCallError(library_.describe() + " does not export kvc_stacked_ctx_kv");
  if (o.host_validation) {
    if (Status s = validate_stacked_ctx_kv(c, ValidationLevel::kStrict, ValueAccess::kMetadataAndValues, o.cache_loc);
        !s.ok())
      return s;
  }
  // The harness rule applies at every level: the pools handed over must hold the views.
  if (Status s = validate_stacked_ctx_kv_outputs(c, out); !s.ok()) return s;
  Call call;

  const DLTensor* x = call.input("x", c.x);
  const DLTensor* positions = call.input("positions", c.positions);
  const DLTensor* cache_loc = call.input("cache_loc", c.cache_loc);
  const DLTensor* commit_lens = call.input("commit_lens", c.commit_lens);
  std::vector<kvc_stacked_ctx_kv_layer> layers(c.layers.size());
  std::vector<GuardedTensors::BufferId> k_pool_buffers, v_pool_buffers;
  for (std::size_t i = 0; i < c.layers.size(); ++i) {
    const StackedCtxKvLayer& l = c.layers[i];
    const std::string p = "layer " + std::to_string(i) + " ";
    kvc_stacked_ctx_kv_layer& a = layers[i];
    a.qkv_weight = call.input(p + "qkv_weight", l.qkv_weight);
    a.qkv_bias = call.input(p + "qkv_bias", l.qkv_bias);
    a.k_norm_weight = call.input(p + "k_norm_weight", l.k_norm_weight);
    // A table byte-identical to an earlier layer's is that layer's tensor.
    a.cos_sin_cache = nullptr;
    for (std::size_t j = 0; j < i && a.cos_sin_cache == nullptr; ++j)
      if (same_bytes(c.layers[j].cos_sin, l.cos_sin)) a.cos_sin_cache = layers[j].cos_sin_cache;
    if (a.cos_sin_cache == nullptr) a.cos_sin_cache = call.input(p + "cos_sin", l.cos_sin);
    k_pool_buffers.push_back(call.add(p + "K pool", out.k_pools[i], BufferRole::kOutput));
    v_pool_buffers.push_back(call.add(p + "V pool", out.v_pools[i], BufferRole::kOutput));
    a.k_pool = call.view(k_pool_buffers.back(), l.k_pool);
    a.v_pool = call.view(v_pool_buffers.back(), l.v_pool);
    a.q_size = l.q_size;
    a.num_kv_heads = l.num_kv_heads;
    a.head_dim = l.head_dim;
    a.eps = l.eps;
    a.quantized = l.quantized ? 1 : 0;
  }

  kvc_stacked_ctx_kv_args args{};
  args.struct_size = sizeof args;
  args.layer_struct_size = sizeof(kvc_stacked_ctx_kv_layer);
  args.x = x;
  args.positions = positions;
  args.cache_loc = cache_loc;
  args.layers = layers.data();
  args.num_layers = static_cast<std::int32_t>(layers.size());
  args.path = o.path == StackedPathRequest::kStacked    ? KVC_STACKED_PATH_STACKED
              : o.path == StackedPathRequest::kPerLayer ? KVC_STACKED_PATH_PER_LAYER
              : o.path == StackedPathRequest::kFused    ? KVC_STACKED_PATH_FUSED
                                                        : KVC_STACKED_PATH_AUTO;
  args.commit_lens = commit_lens;
  args.gemm = o.gemm == StackedGemm::kAnyOrder ? KVC_GEMM_ANY_ORDER : KVC_GEMM_EXACT_ORDER;

  // The stacked parameters, as the policy says (the stacked path needs them).
  std::vector<std::uint8_t> stacked_weight, stacked_bias;
  if (wants_stacked_params(c, o.stacked_params)) {
    const oracle::StackedParams& p = cache_.get(c);
    std::int64_t rows = p.rows();
    stacked_weight = bytes_of(p.weight);
    if (o.params_defect == StackedParamsDefect::kOneRowShort) {
      rows -= 1;
      stacked_weight.resize(static_cast<std::size_t>(rows * p.hidden * 2));
    }
    args.stacked_weight = call.view(call.add("stacked_weight", stacked_weight, BufferRole::kInput),
                                    contiguous_meta(p.dtype, {rows, p.hidden}));
    if (p.has_bias() && o.params_defect != StackedParamsDefect::kBiasMissing) {
      stacked_bias = bytes_of(p.bias);
      args.stacked_bias =
          call.view(call.add("stacked_bias", stacked_bias, BufferRole::kInput), contiguous_meta(p.dtype, {p.rows()}));
    }
  }
  std::vector<std::uint8_t> projection;
  GuardedTensors::BufferId projection_buffer = 0;
  if (o.read_projection) {
    projection.assign(static_cast<std::size_t>(c.num_tokens() * c.projection_width() * 2), 0xA5);
    projection_buffer = call.add("projection", projection, BufferRole::kOutput);
    args.projection =
        call.view(projection_buffer, contiguous_meta(c.storage_dtype(), {c.num_tokens(), c.projection_width()}));
  }
  std::int32_t path_taken = -1;
  args.path_taken = &path_taken;
  r.abi_path_requested = args.path;

  char error[kAbiErrorCapacity] = {0};
  r.abi_called = true;
  const int rc = library_.abi().kvc_stacked_ctx_kv(&args, stream(), error, sizeof error);
  error[kAbiErrorCapacity - 1] = '\0';
  // Recorded before synchronising, whose sticky CUDA error throws (the probe reports both).
  r.checks.abi_status = rc;
  r.checks.abi_message = error;
  check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream())),
             "cudaStreamSynchronize after kvc_stacked_ctx_kv");
  call.check(rc == KVC_STATUS_OK ? CallOutcome::kAccepted : CallOutcome::kRejected, &r.checks.damage);
  if (!r.checks.clean())
    throw BufferDamageError(library_.describe() + ": kvc_stacked_ctx_kv damaged device memory:\n" +
                            r.checks.to_string());
  if (rc != KVC_STATUS_OK) {
    ErrorCode code{};
    if (rc != KVC_STATUS_CUDA_ERROR && rc != KVC_STATUS_UNSUPPORTED && rc != KVC_STATUS_BAD_ARGUMENT &&
        error_code_from_number(rc, &code))
      return Error(code, std::string("kvc_stacked_ctx_kv: ") + error);
    throw KernelCallError(library_.describe() + ": kvc_stacked_ctx_kv returned " + std::to_string(rc) + ": " + error);
  }
  for (std::size_t i = 0; i < c.layers.size(); ++i) {
    out.k_pools[i] = call.payload(k_pool_buffers[i]);
    out.v_pools[i] = call.payload(v_pool_buffers[i]);
  }
  if (o.read_projection) {
    const std::vector<std::uint8_t> bytes = call.payload(projection_buffer);
    r.projection.resize(bytes.size() / 2);
    if (!bytes.empty()) std::memcpy(r.projection.data(), bytes.data(), bytes.size());
  }
  r.abi_path_taken = path_taken;
  r.path = abi::stacked_path_of(path_taken).value_or(StackedPath::kPerLayer);
  return Status::Ok();
}

}  // namespace kvc::testkit
