// stacked_ctx_kv_registry.cpp: the stacked context-KV scenarios (see stacked_ctx_kv_registry.h).
#include "testkit/cases/stacked_ctx_kv_registry.h"

#include <algorithm>

namespace kvc::cases {
namespace {

const char* dtype_word(DType d) { return d == DType::kF16 ? "Fp16" : "Bf16"; }

// Head_dim 128, 8 KV heads, 32 Q heads, hidden 4096: a Llama-class draft layer.
testkit::StackedCtxKvShape production_shape(int layers, std::int64_t tokens, DType dtype, bool bias,
                                            std::int64_t skip_every) {
  testkit::StackedCtxKvShape s;
  s.layers = layers;
  s.tokens = tokens;
  s.hidden = 4096;
  s.q_heads = 32;
  s.kv_heads = 8;
  s.head_dim = 128;
  s.dtype = dtype;
  s.bias = bias;
  s.max_pos = std::max<std::int64_t>(4096, tokens + 1000);
  s.position_base = 1000;
  s.skip_every = skip_every;
  s.values = testkit::StackedValues::kUniform;
  s.seed = static_cast<std::uint64_t>(layers) * 1000003u + static_cast<std::uint64_t>(tokens);
  return s;
}

}  // namespace

bool StackedSpec::sampled() const {
  return !every_token && (shape.tokens > kStackedOracleFullTokens || shape.hidden > 1024);
}

testkit::StackedCtxKvShape upstream_stacked_shape(DType dtype, bool bias) {
  testkit::StackedCtxKvShape s;  // the defaults are the upstream test's constants
  s.dtype = dtype;
  s.bias = bias;
  return s;
}

const std::vector<StackedSpec>& stacked_upstream_matrix() {
  static const std::vector<StackedSpec> matrix = [] {
    std::vector<StackedSpec> m;
    for (const auto& [dtype, bias] :
         {std::pair{DType::kF16, false}, {DType::kBF16, false}, {DType::kF16, true}, {DType::kBF16, true}}) {
      for (std::int64_t skip : {0, 2}) {
        testkit::StackedCtxKvShape s = upstream_stacked_shape(dtype, bias);
        s.skip_every = skip;
        s.seed = static_cast<std::uint64_t>(skip) * 2 + (bias ? 1 : 0);
        m.push_back({std::string("Upstream_") + dtype_word(dtype) + (bias ? "_Bias" : "") +
                         (skip ? "_Skip" + std::to_string(skip) : ""),
                     s});
      }
    }
    return m;
  }();
  return matrix;
}

const std::vector<StackedSpec>& stacked_production_matrix() {
  static const std::vector<StackedSpec> matrix = [] {
    std::vector<StackedSpec> m;
    struct Row {
      int layers;
      std::int64_t tokens;
      DType dtype;
      bool bias;
      std::int64_t skip_every;
    };
    for (const Row& r :
         {Row{1, 1, DType::kBF16, false, 0}, Row{2, 17, DType::kF16, true, 4}, Row{4, 1024, DType::kBF16, false, 5},
          Row{8, 8192, DType::kBF16, true, 7}, Row{8, 4096, DType::kF16, false, 3}}) {
      std::string name = "Prod_L" + std::to_string(r.layers) + "_T" + std::to_string(r.tokens) + "_" +
                         dtype_word(r.dtype) + (r.bias ? "_Bias" : "") +
                         (r.skip_every ? "_Skip" + std::to_string(r.skip_every) : "");
      m.push_back({name, production_shape(r.layers, r.tokens, r.dtype, r.bias, r.skip_every)});
    }
    return m;
  }();
  return matrix;
}

const std::vector<StackedSpec>& stacked_policy_matrix() {
  static const std::vector<StackedSpec> matrix = [] {
    // The upstream layer (hidden 128, head_dim 64, 2 kv heads): the oracle runs 2048 tokens in
    // about a second.
    testkit::StackedCtxKvShape s = upstream_stacked_shape(DType::kF16, false);
    s.tokens = 2048;
    s.max_pos = 4096;
    s.skip_every = 7;
    s.extra_slots = 8;
    s.seed = 25;
    StackedSpec spec{"PolicySensitive_L4_T2048_Fp16_Skip7", s};
    spec.every_token = true;
    return std::vector<StackedSpec>{spec};
  }();
  return matrix;
}

const std::vector<EligibilityScenario>& stacked_eligibility_matrix() {
  static const std::vector<EligibilityScenario> matrix = [] {
    auto shape = [](int layers, DType dtype, bool bias) {
      testkit::StackedCtxKvShape s = upstream_stacked_shape(dtype, bias);
      s.layers = layers;
      s.skip_every = 3;
      s.seed = 17;
      return s;
    };
    using R = StackedIneligibility;
    return std::vector<EligibilityScenario>{
        {"QuantizedLayer1Of3", shape(3, DType::kF16, false), R::kQuantizedLayer, 1, true},
        {"EpsDiffersAtLayer1Of2", shape(2, DType::kF16, false), R::kEpsDiffers, 1, true},
        {"BiasOnLayer0Only", shape(2, DType::kF16, true), R::kBiasOnSomeLayers, 1, true},
        {"HeadDimDiffersAtLayer2", shape(4, DType::kBF16, false), R::kHeadDimDiffers, 2, false},
        {"KvHeadsDifferAtLayer3", shape(4, DType::kBF16, true), R::kKvHeadsDiffers, 3, false},
        {"DtypeDiffersAtLayer1", shape(3, DType::kBF16, false), R::kDtypeDiffers, 1, false},
        {"RotaryTableDiffersAtLayer2", shape(4, DType::kF16, false), R::kRotaryTableDiffers, 2, false},
        {"QuantizedLayer0", shape(2, DType::kBF16, false), R::kQuantizedLayer, 0, false},
    };
  }();
  return matrix;
}

StackedCtxKvCase build_eligibility_case(const EligibilityScenario& s) {
  StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(s.shape);
  testkit::make_ineligible(c, s.shape, s.reason, s.layer);
  return c;
}

}  // namespace kvc::cases
