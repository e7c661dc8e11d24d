// stacked_ctx_kv_params.h: the stacked path's parameters, and the cache that keeps them current.
//
// The stacked path multiplies x by one weight: every layer's K and V rows, concatenated (layer 0
// K, layer 0 V, layer 1 K, ...), with the biases concatenated the same way, the K-norm weights
// stacked and widened to fp32 (exactly), the common eps and layer 0's rotary table. Building
// them copies every layer's KV rows, so a model keeps them (docs/contract.md §4.5; the original
// keeps them "assuming the draft weights are frozen after load", and later needs an explicit
// refresh after a weight update). StackedParamCache keeps them and rebuilds them whenever any
// layer's KV rows, bias, K-norm weight, eps or table differ from the ones they were built from:
// the cached weight is itself a copy of those rows, so the check is a byte comparison, exact
// and with no extra memory.
#pragma once

#include <cstdint>
#include <vector>

#include "kvc/stacked_ctx_kv_case.h"
#include "kvc/status.h"

namespace kvc::oracle {

struct StackedParams {
  DType dtype = DType::kBF16;  // the layers' weight dtype
  std::int64_t hidden = 0;
  std::int64_t layers = 0;
  std::int64_t head_dim = 0;
  std::int64_t num_kv_heads = 0;
  std::vector<std::uint16_t> weight;  // [layers * 2 * kv_size, hidden]
  std::vector<std::uint16_t> bias;    // [layers * 2 * kv_size]; empty when no layer has a bias
  std::vector<float> k_norm_weight;   // [layers, head_dim]
  float eps = 0.0f;
  HostTensor cos_sin;  // layer 0's table

  std::int64_t kv_size() const { return num_kv_heads * head_dim; }
  std::int64_t rows() const { return layers * 2 * kv_size(); }
  bool has_bias() const { return !bias.empty(); }
};

// The parameters of a validated, eligible case.
StackedParams build_stacked_params(const StackedCtxKvCase& c);

// Whether `p` has the shape, dtype and bias presence of c's stacked parameters (E158 otherwise);
// the bytes are not compared.
Status check_stacked_params_shape(const StackedParams& p, const StackedCtxKvCase& c);

// Whether `p` holds exactly the parameters build_stacked_params(c) would build (every byte).
bool stacked_params_match(const StackedParams& p, const StackedCtxKvCase& c);

// How a cache decides that its parameters are current (parameters of another shape never are).
// kCompareContents is the cache; kTrustCache is a deliberate defect, a cache that like the
// original assumes frozen weights and never looks at them again once built, for the tests that
// show a stale cache is caught.
enum class ParamCacheCheck : std::uint8_t { kCompareContents = 0, kTrustCache = 1 };

class StackedParamCache {
 public:
  explicit StackedParamCache(ParamCacheCheck check = ParamCacheCheck::kCompareContents) : check_(check) {}

  // The stacked parameters of a validated, eligible case: the cached ones when they are current,
  // else rebuilt.
  const StackedParams& get(const StackedCtxKvCase& c);
  // Drops the cached parameters (the next get() rebuilds).
  void invalidate() { valid_ = false; }
  // How many times get() built the parameters.
  std::int64_t builds() const { return builds_; }

 private:
  ParamCacheCheck check_;
  StackedParams params_;
  bool valid_ = false;
  std::int64_t builds_ = 0;
};

}  // namespace kvc::oracle
