// stacked_ctx_kv_registry.cpp: the stacked context-KV scenarios (see stacked_ctx_kv_registry.h).
#include "testkit/cases/stacked_ctx_kv_registry.h"

#include <algorithm>
#include <tuple>

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

namespace {

// A small model of `head_dim` (hidden 64, 2 layers, 2 kv heads, 1 Q head, 7 tokens, one skipped).
testkit::StackedCtxKvShape small_shape(std::int64_t head_dim, DType dtype, bool bias, std::uint64_t seed) {
  testkit::StackedCtxKvShape s;
  s.layers = 2;
  s.tokens = 7;
  s.hidden = 64;
  s.q_heads = 1;
  s.kv_heads = 2;
  s.head_dim = head_dim;
  s.dtype = dtype;
  s.bias = bias;
  s.max_pos = 64;
  s.position_base = 3;
  s.skip_every = 4;
  s.seed = seed;
  return s;
}

std::string shape_suffix(const testkit::StackedCtxKvShape& s) {
  return std::string("_") + dtype_word(s.dtype) + (s.bias ? "_Bias" : "");
}

}  // namespace

const std::vector<StackedSpec>& stacked_fused_matrix() {
  static const std::vector<StackedSpec> matrix = [] {
    std::vector<StackedSpec> m;
    m.push_back({"Fused_Upstream_Bf16", upstream_stacked_shape(DType::kBF16, false)});
    testkit::StackedCtxKvShape one = upstream_stacked_shape(DType::kBF16, false);
    one.layers = 1;
    one.skip_every = 2;
    one.seed = 31;
    m.push_back({"Fused_L1_Bf16_Skip2", one});
    testkit::StackedCtxKvShape wide = small_shape(128, DType::kBF16, false, 32);
    wide.kv_heads = 8;
    wide.layers = 3;
    wide.hidden = 256;
    wide.tokens = 9;
    wide.slot_padding = 8;  // gaps between slots: the fused kernel's slot stride
    m.push_back({"Fused_L3_Hd128_Kv8_Bf16_SlotGap", wide});
    testkit::StackedCtxKvShape hd512 = small_shape(512, DType::kBF16, false, 33);
    hd512.kv_heads = 1;
    m.push_back({"Fused_Hd512_Bf16", hd512});
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

const std::vector<StackedSpec>& stacked_non_pow2_head_dim_matrix() {
  static const std::vector<StackedSpec> matrix = [] {
    std::vector<StackedSpec> m;
    std::uint64_t seed = 40;
    for (const auto& [hd, dtype, bias] :
         {std::tuple{6, DType::kBF16, false}, std::tuple{24, DType::kBF16, false}, std::tuple{40, DType::kF16, false},
          std::tuple{72, DType::kBF16, false}, std::tuple{72, DType::kF16, true}}) {
      const testkit::StackedCtxKvShape s = small_shape(hd, dtype, bias, seed++);
      m.push_back({"NonPow2HeadDim" + std::to_string(hd) + shape_suffix(s), s});
    }
    return m;
  }();
  return matrix;
}

const std::vector<StackedSpec>& stacked_fallback_head_size_matrix() {
  static const std::vector<StackedSpec> matrix = [] {
    std::vector<StackedSpec> m;
    std::uint64_t seed = 50;
    for (std::int64_t hd : {80, 96, 160, 192, 320}) {
      testkit::StackedCtxKvShape s = small_shape(hd, DType::kBF16, false, seed++);
      s.hidden = 128;
      m.push_back({"FallbackHeadSize" + std::to_string(hd) + shape_suffix(s), s});
    }
    testkit::StackedCtxKvShape f = small_shape(192, DType::kF16, true, seed++);
    m.push_back({"FallbackHeadSize192" + shape_suffix(f), f});
    return m;
  }();
  return matrix;
}

const std::vector<StackedSpec>& stacked_split_reduction_matrix() {
  static const std::vector<StackedSpec> matrix = [] {
    std::vector<StackedSpec> m;
    struct Row {
      int layers;
      std::int64_t tokens;
      DType dtype;
      bool bias;
    };
    for (const Row& r :
         {Row{8, 16, DType::kBF16, false}, Row{12, 16, DType::kF16, true}, Row{12, 64, DType::kBF16, false}}) {
      testkit::StackedCtxKvShape s = production_shape(r.layers, r.tokens, r.dtype, r.bias, 5);
      m.push_back(
          {"SplitReduction_Hidden4096_L" + std::to_string(r.layers) + "_T" + std::to_string(r.tokens) + shape_suffix(s),
           s});
    }
    return m;
  }();
  return matrix;
}

const std::vector<StackedSpec>& stacked_commit_lens_matrix() {
  static const std::vector<StackedSpec> matrix = [] {
    std::vector<StackedSpec> m;
    struct Row {
      std::vector<std::int64_t> lens;
      std::int64_t row_length;
      DType dtype;
      bool bias;
      std::int64_t skip_every;
    };
    std::uint64_t seed = 60;
    for (const Row& r : {Row{{4, 0, 2}, 4, DType::kBF16, false, 0}, Row{{1, 3, 0, 2}, 3, DType::kF16, true, 0},
                         Row{{5, 5}, 5, DType::kBF16, false, 3}, Row{{0}, 6, DType::kBF16, false, 0}}) {
      testkit::StackedCtxKvShape s = small_shape(64, r.dtype, r.bias, seed++);
      s.tokens = static_cast<std::int64_t>(r.lens.size()) * r.row_length;
      s.skip_every = r.skip_every;
      s.commit_lens = r.lens;
      std::string name = "CommitLens";
      for (std::int64_t n : r.lens) name += "_" + std::to_string(n);
      name += "_Of" + std::to_string(r.row_length) + shape_suffix(s) + (r.skip_every ? "_Skip" : "");
      m.push_back({name, s});
    }
    return m;
  }();
  return matrix;
}

std::vector<const std::vector<StackedSpec>*> stacked_v3_families() {
  return {&stacked_fused_matrix(), &stacked_non_pow2_head_dim_matrix(), &stacked_fallback_head_size_matrix(),
          &stacked_split_reduction_matrix(), &stacked_commit_lens_matrix()};
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
