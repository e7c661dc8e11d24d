// test_ops.cpp: a torch extension that registers kvconform's own kernels as torch ops with
// vLLM's schemas (namespace kvc_test instead of _C), so that the libtorch shim can be tested
// end to end on the GPU: suite -> kernel ABI (the shim) -> torch dispatcher -> these ops -> our
// kernels (through their own kernel ABI, linked in statically), on the stream the shim made
// current.
//
// Each op turns its tensors back into DLPack descriptors of the same memory (data_ptr, sizes and
// strides: a strided view of a padded cache stays one) and calls the ABI entry point; a status
// other than 0 becomes a c10::Error naming it.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <torch/library.h>
#include <torch/version.h>

#include <optional>
#include <string>
#include <vector>

#include "kvc/kernel_abi.h"

namespace {

// The optional argument type torch infers schemas from: std::optional since torch 2.4, its own
// c10::optional before.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
template <typename T>
using Optional = std::optional<T>;
#else
template <typename T>
using Optional = c10::optional<T>;
#endif

// A DLTensor describing a tensor's memory, with the storage for its shape and strides.
class Dl {
 public:
  explicit Dl(const at::Tensor& t) : sizes_(t.sizes().vec()), strides_(t.strides().vec()) {
    d_.data = t.numel() > 0 ? t.data_ptr() : nullptr;
    d_.device = {kDLCUDA, static_cast<std::int32_t>(t.get_device())};
    d_.ndim = static_cast<std::int32_t>(t.dim());
    d_.dtype = dtype(t.scalar_type());
    d_.shape = sizes_.data();
    d_.strides = strides_.data();
    d_.byte_offset = 0;  // data_ptr() already includes the storage offset
  }
  const DLTensor* get() const { return &d_; }

 private:
  static DLDataType dtype(c10::ScalarType s) {
    switch (s) {
      case at::kBFloat16: return {kDLBfloat, 16, 1};
      case at::kHalf: return {kDLFloat, 16, 1};
      case at::kFloat: return {kDLFloat, 32, 1};
      case at::kLong: return {kDLInt, 64, 1};
      case at::kInt: return {kDLInt, 32, 1};
#if TORCH_VERSION_MAJOR >= 2 && (TORCH_VERSION_MAJOR > 2 || TORCH_VERSION_MINOR >= 1)
      case at::kFloat8_e4m3fn: return {KVC_DL_FLOAT8_E4M3FN, 8, 1};
#endif
      default: return {kDLUInt, 8, 1};
    }
  }

  std::vector<std::int64_t> sizes_, strides_;
  DLTensor d_{};
};

void check(int status, const char* error, const char* op) {
  TORCH_CHECK(status == KVC_STATUS_OK, "kvc_test::", op, ": kernel ABI status ", status, ": ", error);
}

void* current_stream() { return at::cuda::getCurrentCUDAStream().stream(); }

void kv_rope_insert(const at::Tensor& kv, at::Tensor& k_cache, const at::Tensor& slot_mapping,
                    const at::Tensor& position_ids, const at::Tensor& cos_sin_cache, int64_t cache_block_size,
                    const Optional<at::Tensor>& fp8_scale, bool kv_mxfp8) {
  const Dl d_kv(kv), d_cache(k_cache), d_slots(slot_mapping), d_pos(position_ids), d_cs(cos_sin_cache);
  std::optional<Dl> d_scale;
  if (fp8_scale) d_scale.emplace(*fp8_scale);
  kvc_kv_only_insert_args a{};
  a.struct_size = sizeof a;
  a.kv = d_kv.get();
  a.kv_cache = d_cache.get();
  a.slot_mapping = d_slots.get();
  a.position_ids = d_pos.get();
  a.cos_sin_cache = d_cs.get();
  a.fp8_scale = d_scale ? d_scale->get() : nullptr;
  a.block_size = cache_block_size;
  a.kv_mxfp8 = kv_mxfp8 ? 1 : 0;
  char error[512] = {};
  check(kvc_kv_only_insert(&a, current_stream(), error, sizeof error), error, "fused_deepseek_v4_kv_rope_insert");
}

// vLLM's signature (kv, norm_weight, k_cache, slot_mapping, position_ids, cos_sin_cache, eps,
// cache_block_size), with kv_mxfp8 and fp8_scale appended so that every format can be tested.
void kv_norm_rope_insert(const at::Tensor& kv, const at::Tensor& norm_weight, at::Tensor& k_cache,
                         const at::Tensor& slot_mapping, const at::Tensor& position_ids,
                         const at::Tensor& cos_sin_cache, double eps, int64_t cache_block_size, bool kv_mxfp8,
                         const Optional<at::Tensor>& fp8_scale) {
  const Dl d_kv(kv), d_w(norm_weight), d_cache(k_cache), d_slots(slot_mapping), d_pos(position_ids),
      d_cs(cos_sin_cache);
  std::optional<Dl> d_scale;
  if (fp8_scale) d_scale.emplace(*fp8_scale);
  kvc_kv_only_insert_args a{};
  a.struct_size = sizeof a;
  a.kv = d_kv.get();
  a.kv_cache = d_cache.get();
  a.slot_mapping = d_slots.get();
  a.position_ids = d_pos.get();
  a.cos_sin_cache = d_cs.get();
  a.fp8_scale = d_scale ? d_scale->get() : nullptr;
  a.kv_norm_weight = d_w.get();
  a.kv_norm_eps = static_cast<float>(eps);
  a.block_size = cache_block_size;
  a.kv_mxfp8 = kv_mxfp8 ? 1 : 0;
  char error[512] = {};
  check(kvc_kv_only_insert(&a, current_stream(), error, sizeof error), error,
        "fused_deepseek_v4_kv_norm_rope_quant_insert");
}

// The legacy op for every format, from its three upstream forms: q_out is q_out (packed), q
// itself (bf16 full cache, in place) or q_fp8 (fp8 full cache).
void legacy(const at::Tensor& q, const at::Tensor& kv, const at::Tensor& q_out, at::Tensor& k_cache,
            const at::Tensor& slot_mapping, const at::Tensor& position_ids, const at::Tensor& cos_sin_cache,
            const Optional<at::Tensor>& fp8_scale, const Optional<at::Tensor>& q_scale_inv, double eps,
            int64_t cache_block_size, bool apply_q_norm, bool kv_mxfp8, bool apply_q_rope, bool is_q_interleaved,
            const char* op) {
  const Dl d_q(q), d_kv(kv), d_qo(q_out), d_cache(k_cache), d_slots(slot_mapping), d_pos(position_ids),
      d_cs(cos_sin_cache);
  std::optional<Dl> d_scale, d_qs;
  if (fp8_scale) d_scale.emplace(*fp8_scale);
  if (q_scale_inv) d_qs.emplace(*q_scale_inv);
  kvc_legacy_insert_args a{};
  a.struct_size = sizeof a;
  a.q = d_q.get();
  a.q_out = d_qo.get();
  a.q_scale_inv = d_qs ? d_qs->get() : nullptr;
  a.kv = d_kv.get();
  a.kv_cache = d_cache.get();
  a.slot_mapping = d_slots.get();
  a.position_ids = d_pos.get();
  a.cos_sin_cache = d_cs.get();
  a.fp8_scale = d_scale ? d_scale->get() : nullptr;
  a.block_size = cache_block_size;
  a.kv_mxfp8 = kv_mxfp8 ? 1 : 0;
  a.eps = static_cast<float>(eps);
  a.apply_q_norm = apply_q_norm ? 1 : 0;
  a.apply_q_rope = apply_q_rope ? 1 : 0;
  a.q_interleaved = is_q_interleaved ? 1 : 0;
  char error[512] = {};
  check(kvc_legacy_insert(&a, current_stream(), error, sizeof error), error, op);
}

void quant_insert_out(const at::Tensor& q_in, const at::Tensor& kv, at::Tensor& q_out, at::Tensor& k_cache,
                      const at::Tensor& slot_mapping, const at::Tensor& position_ids, const at::Tensor& cos_sin_cache,
                      double eps, int64_t cache_block_size, bool apply_q_norm, bool kv_mxfp8, bool apply_q_rope,
                      bool is_q_interleaved) {
  legacy(q_in, kv, q_out, k_cache, slot_mapping, position_ids, cos_sin_cache, Optional<at::Tensor>(),
         Optional<at::Tensor>(), eps, cache_block_size, apply_q_norm, kv_mxfp8, apply_q_rope, is_q_interleaved,
         "fused_deepseek_v4_qnorm_rope_kv_rope_quant_insert.out");
}

void full_cache_bf16_insert(at::Tensor& q, const at::Tensor& kv, at::Tensor& k_cache, const at::Tensor& slot_mapping,
                            const at::Tensor& position_ids, const at::Tensor& cos_sin_cache, double eps,
                            int64_t cache_block_size, bool apply_q_norm) {
  legacy(q, kv, q, k_cache, slot_mapping, position_ids, cos_sin_cache, Optional<at::Tensor>(), Optional<at::Tensor>(),
         eps, cache_block_size, apply_q_norm, false, true, false,
         "fused_deepseek_v4_qnorm_rope_kv_rope_full_cache_bf16_insert");
}

void full_cache_fp8_insert(const at::Tensor& q, const at::Tensor& kv, at::Tensor& q_fp8, at::Tensor& k_cache,
                           const at::Tensor& slot_mapping, const at::Tensor& position_ids,
                           const at::Tensor& cos_sin_cache, const at::Tensor& fp8_scale,
                           const at::Tensor& q_fp8_scale_inv, double eps, int64_t cache_block_size, bool apply_q_norm) {
  legacy(q, kv, q_fp8, k_cache, slot_mapping, position_ids, cos_sin_cache, fp8_scale, q_fp8_scale_inv, eps,
         cache_block_size, apply_q_norm, false, true, false,
         "fused_deepseek_v4_qnorm_rope_kv_rope_full_cache_fp8_insert");
}

void kv_norm(const at::Tensor& kv, const at::Tensor& weight, at::Tensor& out, double eps) {
  const Dl d_kv(kv), d_w(weight), d_out(out);
  kvc_kv_norm_args a{};
  a.struct_size = sizeof a;
  a.kv = d_kv.get();
  a.weight = d_w.get();
  a.out = d_out.get();
  a.eps = static_cast<float>(eps);
  char error[512] = {};
  check(kvc_kv_norm(&a, current_stream(), error, sizeof error), error, "kv_norm");
}

}  // namespace

TORCH_LIBRARY(kvc_test, m) {
  m.def(
      "fused_deepseek_v4_kv_rope_insert(Tensor kv, Tensor(a!) k_cache, Tensor slot_mapping, Tensor position_ids, "
      "Tensor cos_sin_cache, int cache_block_size, Tensor? fp8_scale=None, bool kv_mxfp8=False) -> ()");
  m.def(
      "fused_deepseek_v4_kv_norm_rope_quant_insert(Tensor kv, Tensor norm_weight, Tensor(a!) k_cache, "
      "Tensor slot_mapping, Tensor position_ids, Tensor cos_sin_cache, float eps, int cache_block_size, "
      "bool kv_mxfp8=False, Tensor? fp8_scale=None) -> ()");
  m.def(
      "fused_deepseek_v4_qnorm_rope_kv_rope_quant_insert.out(Tensor q_in, Tensor kv, Tensor(a!) q_out, "
      "Tensor(b!) k_cache, Tensor slot_mapping, Tensor position_ids, Tensor cos_sin_cache, float eps, "
      "int cache_block_size, bool apply_q_norm=True, bool kv_mxfp8=False, bool apply_q_rope=True, "
      "bool is_q_interleaved=False) -> ()");
  m.def(
      "fused_deepseek_v4_qnorm_rope_kv_rope_full_cache_bf16_insert(Tensor(a!) q, Tensor kv, Tensor(b!) k_cache, "
      "Tensor slot_mapping, Tensor position_ids, Tensor cos_sin_cache, float eps, int cache_block_size, "
      "bool apply_q_norm=True) -> ()");
  m.def(
      "fused_deepseek_v4_qnorm_rope_kv_rope_full_cache_fp8_insert(Tensor q, Tensor kv, Tensor(a!) q_fp8, "
      "Tensor(b!) k_cache, Tensor slot_mapping, Tensor position_ids, Tensor cos_sin_cache, Tensor fp8_scale, "
      "Tensor q_fp8_scale_inv, float eps, int cache_block_size, bool apply_q_norm=True) -> ()");
  m.def("kv_norm(Tensor kv, Tensor weight, Tensor(a!) out, float eps) -> ()");
}

TORCH_LIBRARY_IMPL(kvc_test, CUDA, m) {
  m.impl("fused_deepseek_v4_kv_rope_insert", &kv_rope_insert);
  m.impl("fused_deepseek_v4_kv_norm_rope_quant_insert", &kv_norm_rope_insert);
  m.impl("fused_deepseek_v4_qnorm_rope_kv_rope_quant_insert.out", &quant_insert_out);
  m.impl("fused_deepseek_v4_qnorm_rope_kv_rope_full_cache_bf16_insert", &full_cache_bf16_insert);
  m.impl("fused_deepseek_v4_qnorm_rope_kv_rope_full_cache_fp8_insert", &full_cache_fp8_insert);
  m.impl("kv_norm", &kv_norm);
}
