// stacked_ctx_kv_registry.h: the stacked context-KV scenarios, one table shared by the suites.
//
//  - stacked_upstream_matrix(): the upstream parity test's shape (head_dim 64, 2 KV heads, 4 Q
//    heads, hidden 128, 4 layers, 5 tokens, positions 0..4, eps 1e-6, base 10000, max_pos 4096) in
//    fp16, bf16 and fp16 with bias as upstream, plus bf16 with bias, and each with a cache_loc
//    that skips every other token: small enough for the oracle on every token, CPU and GPU.
//  - stacked_production_matrix(): production-like shapes (head_dim 128, 8 KV heads, 32 Q heads,
//    hidden 4096, 1 to 8 layers, 1 to 8192 tokens), fp16 and bf16, with and without bias, with -1
//    entries. The GPU suite runs them; the oracle checks sample_tokens() of the large ones.
//  - stacked_policy_matrix(): shapes where every stacked policy alternative (docs/contract.md
//    §6.2.1) changes bytes, judged on every token: the two rope contractions disagree on about 1
//    fp16 pair in 22000 (issue 25) and a moved K-norm r flips about 1 fp16 element in 8000, so a
//    small case cannot tell a library's declared profile from the contract's; 2048 tokens of 4
//    layers of 2 heads (16384 K heads, about 20 such bytes each) can. Skipped tokens as -1.
//  - stacked_eligibility_matrix(): the upstream fallback cases (a quantized layer 1 of 3, eps
//    1e-6 vs 1e-5 over 2 layers, a bias on layer 0 only of 2) and the conditions the original
//    did not check (head_dim, kv heads, dtype, rotary table differing at one layer).
//  - The families of contract version 3 (issue 25), each named for what it checks and run on
//    every path (the fused path where the model is eligible for it):
//    stacked_fused_matrix()            fused-eligible models (bf16, no bias): the fused path, the
//                                      other two and the oracle byte for byte;
//    stacked_non_pow2_head_dim_matrix()  head_dim 6, 24, 40, 72: fl(1/hd) inexact, so the mean
//                                      fma(S, fl(1/hd), eps) differs from fl(fl(S/hd) + eps) on
//                                      some heads; head_dim not a multiple of the 32 lanes;
//    stacked_fallback_head_size_matrix() head_dim 80, 96, 160, 192, 320: outside 64/128/256/512,
//                                      the sizes a rope kernel serves from its generic fallback;
//    stacked_split_reduction_matrix()  hidden 4096 with 8 and 12 layers and few tokens, where a
//                                      cuBLAS GEMM may split the reduction (split-K): the any-order
//                                      check's budget D must still hold. The oracle checks
//                                      sample_tokens() (at most 8): about 10^8 fma per token at 12
//                                      layers, some 3 s per judgment on one core;
//    stacked_commit_lens_matrix()      prefix-valid writes: cache_loc [B, S] with commit lengths
//                                      (full, empty and partial rows), the uncommitted tokens'
//                                      entries valid distinct slots a kernel must not write.
// Adding a scenario is one line in stacked_ctx_kv_registry.cpp.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "kvc/stacked_ctx_kv_eligibility.h"
#include "testkit/cases/stacked_ctx_kv_builder.h"

namespace kvc::cases {

struct StackedSpec {
  std::string name;  // "Upstream_Fp16_Bias", "Prod_L8_T8192_Bf16_Bias_Skip7"
  testkit::StackedCtxKvShape shape;
  bool every_token = false;  // judged on every token whatever its size (stacked_policy_matrix())
  // Tokens above which the oracle checks sample_tokens() only (its projection is a sequential fma
  // chain per element: about 3 * 10^8 a second).
  bool sampled() const;
};
inline std::ostream& operator<<(std::ostream& os, const StackedSpec& s) { return os << s.name; }

inline constexpr std::int64_t kStackedOracleFullTokens = 64;
inline constexpr int kStackedSampledRandomTokens = 3;

// The upstream parity test's shape in `dtype` (fp16 or bf16).
testkit::StackedCtxKvShape upstream_stacked_shape(DType dtype, bool bias);

const std::vector<StackedSpec>& stacked_upstream_matrix();
const std::vector<StackedSpec>& stacked_production_matrix();
const std::vector<StackedSpec>& stacked_policy_matrix();
const std::vector<StackedSpec>& stacked_fused_matrix();
const std::vector<StackedSpec>& stacked_non_pow2_head_dim_matrix();
const std::vector<StackedSpec>& stacked_fallback_head_size_matrix();
const std::vector<StackedSpec>& stacked_split_reduction_matrix();
const std::vector<StackedSpec>& stacked_commit_lens_matrix();

// The version 3 families above, in that order (what the suites iterate).
std::vector<const std::vector<StackedSpec>*> stacked_v3_families();

struct EligibilityScenario {
  std::string name;  // "QuantizedLayer1Of3"
  testkit::StackedCtxKvShape shape;
  StackedIneligibility reason;
  int layer;
  bool upstream;  // one of the original test's three
};
inline std::ostream& operator<<(std::ostream& os, const EligibilityScenario& s) { return os << s.name; }

const std::vector<EligibilityScenario>& stacked_eligibility_matrix();
// The scenario's case: shape, then make_ineligible(reason, layer).
StackedCtxKvCase build_eligibility_case(const EligibilityScenario& s);

}  // namespace kvc::cases
