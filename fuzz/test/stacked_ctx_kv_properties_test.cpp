// stacked_ctx_kv_properties_test.cpp: RapidCheck properties of the stacked context-KV oracle
// (docs/contract.md §4.5) over generated eligible models.
//
// - stacked-equals-per-layer: for any eligible model (1-4 layers, 0-8 tokens, hidden 1-40, head_dim
//   2-16 (powers of two and not), 0-2 Q heads, 1-3 KV heads, fp16 or bf16, with or without bias,
//   -1 entries up to every token, commit lengths (prefix-valid writes) in about half the cases,
//   gaps between pool slots, NaN / Inf / -0 / subnormal / largest-finite values in x, a weight or
//   a bias), the stacked path and, where the model is eligible for it, the fused path write the
//   per-layer path's pools and store its projection.
// - permuting-layers-permutes-outputs: the model with its layers permuted writes, for every layer,
//   the pools the original wrote for that layer.
// - single-layer-stacked-is-per-layer: L = 1, where the stacked weight is the layer's KV rows.
// A run passes only when RapidCheck finds no counterexample and every edge class it requires was
// generated. The planted-defect tests run the first two with a stacked-parameter cache that never
// re-checks (ParamCacheCheck::kTrustCache) and is shared across cases: both must fail.
// KVC_FUZZ_SEED and KVC_FUZZ_CASES override the seed and the case count.
#include <gtest/gtest.h>

#include <rapidcheck.h>

#include <cstdlib>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>
#include <set>

#include "kvc/oracle/stacked_ctx_kv.h"
#include "testkit/cases/case_builder.h"
#include "testkit/cases/stacked_ctx_kv_builder.h"
#include "testkit/compare/stacked_ctx_kv_diff.h"

namespace kvc {
namespace {

// Edge values injected into one element (16-bit codes of the case's dtype).
enum class Special : std::uint8_t { kNone, kNan, kPlusInf, kMinusInf, kMinusZero, kSubnormal, kLargest };
constexpr int kSpecials = 7;

std::uint16_t special_code(Special s, DType d) {
  const bool h = d == DType::kF16;
  switch (s) {
    case Special::kNan: return h ? 0x7E00 : 0x7FC0;
    case Special::kPlusInf: return h ? 0x7C00 : 0x7F80;
    case Special::kMinusInf: return h ? 0xFC00 : 0xFF80;
    case Special::kMinusZero: return 0x8000;
    case Special::kSubnormal: return 0x0001;
    case Special::kLargest: return h ? 0x7BFF : 0x7F7F;
    case Special::kNone: break;
  }
  return 0;
}

struct Recipe {
  testkit::StackedCtxKvShape shape;
  Special special = Special::kNone;
  int special_target = 0;  // 0: x, 1: a KV weight, 2: a bias
  std::uint64_t aux = 0;   // element choice, permutation
};

std::ostream& operator<<(std::ostream& os, const Recipe& r) {
  const testkit::StackedCtxKvShape& s = r.shape;
  return os << "L=" << s.layers << " T=" << s.tokens << " hidden=" << s.hidden << " q_heads=" << s.q_heads
            << " kv_heads=" << s.kv_heads << " head_dim=" << s.head_dim << (s.dtype == DType::kF16 ? " fp16" : " bf16")
            << (s.bias ? " bias" : "") << " skip_every=" << s.skip_every << " slot_padding=" << s.slot_padding
            << " commit_lens=" << s.commit_lens.size() << " special=" << static_cast<int>(r.special) << "@"
            << r.special_target << " seed=" << s.seed << " aux=" << r.aux;
}

rc::Gen<Recipe> gen_recipe(bool single_layer) {
  return rc::gen::exec([single_layer] {
    Recipe r;
    testkit::StackedCtxKvShape& s = r.shape;
    s.layers = single_layer ? 1 : *rc::gen::inRange(1, 5);
    s.tokens = *rc::gen::inRange<std::int64_t>(0, 9);
    s.hidden = *rc::gen::inRange<std::int64_t>(1, 41);
    s.q_heads = *rc::gen::inRange<std::int64_t>(0, 3);
    s.kv_heads = *rc::gen::inRange<std::int64_t>(1, 4);
    s.head_dim = 2 * *rc::gen::inRange<std::int64_t>(1, 9);
    s.dtype = *rc::gen::element(DType::kBF16, DType::kF16);
    s.bias = *rc::gen::arbitrary<bool>();
    s.skip_every = *rc::gen::inRange<std::int64_t>(0, 4);
    s.slot_padding = *rc::gen::inRange<std::int64_t>(0, 3);
    s.position_base = *rc::gen::inRange<std::int64_t>(0, 20);
    s.max_pos = s.position_base + s.tokens + 1;
    s.eps = *rc::gen::element(1e-6f, 0.0f, 1e-2f);
    s.extra_slots = *rc::gen::inRange<std::int64_t>(0, 4);
    s.seed = *rc::gen::arbitrary<std::uint32_t>();
    // Prefix-valid writes in some of the cases (RapidCheck favours 0 at small sizes: about half):
    // one row of all tokens, or one row per token.
    if (*rc::gen::inRange(0, 3) == 0) {
      const std::int64_t rows = s.tokens > 0 && *rc::gen::arbitrary<bool>() ? s.tokens : 1;
      const std::int64_t length = s.tokens / rows;
      for (std::int64_t b = 0; b < rows; ++b) s.commit_lens.push_back(*rc::gen::inRange<std::int64_t>(0, length + 1));
    }
    r.special = static_cast<Special>(*rc::gen::inRange(0, kSpecials));
    r.special_target = *rc::gen::inRange(0, 3);
    r.aux = *rc::gen::arbitrary<std::uint32_t>();
    return r;
  });
}

// The recipe's case, with its special value planted (when it has a target).
StackedCtxKvCase build(const Recipe& r) {
  StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(r.shape);
  if (r.special == Special::kNone) return c;
  const std::uint16_t code = special_code(r.special, r.shape.dtype);
  testkit::Rng rng(r.aux);
  StackedCtxKvLayer& l = c.layers[static_cast<std::size_t>(rng.uniform(0, c.num_layers() - 1))];
  if (r.special_target == 0 && c.num_tokens() > 0) {
    c.x.store<std::uint16_t>(rng.uniform(0, c.num_tokens() * c.hidden() - 1), code);
  } else if (r.special_target == 1 || !l.has_bias()) {
    l.qkv_weight.store<std::uint16_t>(l.q_size * c.hidden() + rng.uniform(0, l.kv_rows() * c.hidden() - 1), code);
  } else {
    l.qkv_bias.store<std::uint16_t>(l.q_size + rng.uniform(0, l.kv_rows() - 1), code);
  }
  return c;
}

using Coverage = std::map<std::string, std::int64_t>;

void classify(const Recipe& r, const StackedCtxKvCase& c, Coverage& cov) {
  const testkit::StackedCtxKvShape& s = r.shape;
  std::int64_t written = 0;
  for (std::int64_t t = 0; t < c.num_tokens(); ++t) written += c.committed(t) && c.cache_loc.load<std::int64_t>(t) >= 0;
  const std::string classes[] = {
      s.layers == 1 ? "layers:1" : "layers:>1",
      s.tokens == 0 ? "tokens:0" : "tokens:>0",
      s.dtype == DType::kF16 ? "dtype:fp16" : "dtype:bf16",
      s.bias ? "bias" : "no-bias",
      s.hidden == 1 ? "hidden:1" : "hidden:>1",
      s.q_heads == 0 ? "q_size:0" : "q_size:>0",
      s.head_dim == 2 ? "head_dim:2" : "head_dim:>2",
      (s.head_dim & (s.head_dim - 1)) != 0 ? "head_dim:non-power-of-two" : "head_dim:power-of-two",
      stacked_fused_eligibility(c).eligible() ? "fused-eligible" : "fused-ineligible",
      c.has_commit_lens() ? "commit-lens" : "no-commit-lens",
      s.slot_padding > 0 ? "slot-gap" : "dense-slots",
      c.num_tokens() > 0 && written == 0 ? "cache_loc:all-skipped"
      : written < c.num_tokens()         ? "cache_loc:some-skipped"
                                         : "cache_loc:none-skipped",
      r.special == Special::kNone ? "special:none" : "special:" + std::to_string(static_cast<int>(r.special)),
  };
  for (const std::string& cls : classes) ++cov[cls];
}

const std::vector<std::string> kCommonClasses = {"tokens:0",
                                                 "tokens:>0",
                                                 "dtype:fp16",
                                                 "dtype:bf16",
                                                 "bias",
                                                 "no-bias",
                                                 "hidden:1",
                                                 "q_size:0",
                                                 "head_dim:2",
                                                 "head_dim:non-power-of-two",
                                                 "fused-eligible",
                                                 "fused-ineligible",
                                                 "commit-lens",
                                                 "slot-gap",
                                                 "cache_loc:all-skipped",
                                                 "cache_loc:some-skipped",
                                                 "cache_loc:none-skipped",
                                                 "special:1",
                                                 "special:2",
                                                 "special:3",
                                                 "special:4",
                                                 "special:5",
                                                 "special:6"};

struct Runner {
  oracle::StackedParamCache* cache = nullptr;  // stacked path's parameters (null: built per call)
  // Before a case, the cache is given the same model with other weights (a weight update
  // between two calls), so that a cache that does not re-check serves stale parameters.
  bool prime_with_other_weights = false;
};

void prime(const Recipe& recipe, const Runner& runner) {
  if (runner.cache == nullptr || !runner.prime_with_other_weights) return;
  Recipe other = recipe;
  other.shape.seed ^= 0x5A5A5A5Au;
  runner.cache->get(build(other));
}

struct Ran {
  StackedCtxKvOutputs out;
  std::vector<std::uint16_t> projection;
};

Ran run(const StackedCtxKvCase& c, StackedPathRequest path, const Runner& runner) {
  Ran r;
  r.out = testkit::make_stacked_outputs(c);
  oracle::StackedCtxKvOptions o;
  o.path = path;
  o.cache = runner.cache;
  oracle::StackedCtxKvRun info;
  const Status s = oracle::stacked_ctx_kv(c, r.out, o, &info);
  if (!s.ok()) RC_FAIL("the oracle rejected a generated case: " + s.ToString());
  r.projection = std::move(info.projection);
  return r;
}

// Properties: each checks one recipe and fails through RapidCheck with a located report.
using Property = std::function<void(const Recipe&, const Runner&, Coverage&)>;

void stacked_equals_per_layer(const Recipe& recipe, const Runner& runner, Coverage& cov) {
  const StackedCtxKvCase c = build(recipe);
  classify(recipe, c, cov);
  RC_ASSERT(stacked_ctx_kv_eligibility(c).eligible());
  prime(recipe, runner);
  const Ran per_layer = run(c, StackedPathRequest::kPerLayer, runner);
  const Ran stacked = run(c, StackedPathRequest::kStacked, runner);
  const testkit::StackedDiffReport r = testkit::diff_stacked_pools(c, per_layer.out, stacked.out);
  if (!r.equal()) RC_FAIL(testkit::format_stacked_report(c, r, "per-layer", "stacked", ""));
  RC_ASSERT(per_layer.projection == stacked.projection);
  // The fused path, wherever the model is eligible for it (bf16, no bias), writes the same bytes.
  if (stacked_fused_eligibility(c).eligible()) {
    const Ran fused = run(c, StackedPathRequest::kFused, runner);
    const testkit::StackedDiffReport f = testkit::diff_stacked_pools(c, per_layer.out, fused.out);
    if (!f.equal()) RC_FAIL(testkit::format_stacked_report(c, f, "per-layer", "fused", ""));
    RC_ASSERT(per_layer.projection == fused.projection);
  }
}

void permuting_layers_permutes_outputs(const Recipe& recipe, const Runner& runner, Coverage& cov) {
  const StackedCtxKvCase c = build(recipe);
  classify(recipe, c, cov);
  std::vector<int> perm(static_cast<std::size_t>(c.num_layers()));
  std::iota(perm.begin(), perm.end(), 0);
  testkit::Rng rng(recipe.aux ^ 0xBEEF);
  for (std::size_t i = perm.size(); i > 1; --i)
    std::swap(perm[i - 1], perm[static_cast<std::size_t>(rng.uniform(0, static_cast<std::int64_t>(i) - 1))]);
  bool identity = true;
  for (std::size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int>(i);
  ++cov[identity ? "permutation:identity" : "permutation:non-identity"];
  StackedCtxKvCase permuted = c;
  for (std::size_t i = 0; i < perm.size(); ++i) permuted.layers[i] = c.layers[static_cast<std::size_t>(perm[i])];
  prime(recipe, runner);
  const Ran original = run(c, StackedPathRequest::kAuto, runner);
  const Ran moved = run(permuted, StackedPathRequest::kAuto, runner);
  StackedCtxKvOutputs expected;
  for (int p : perm) {
    expected.k_pools.push_back(original.out.k_pools[static_cast<std::size_t>(p)]);
    expected.v_pools.push_back(original.out.v_pools[static_cast<std::size_t>(p)]);
  }
  const testkit::StackedDiffReport r = testkit::diff_stacked_pools(permuted, expected, moved.out);
  if (!r.equal())
    RC_FAIL(testkit::format_stacked_report(permuted, r, "original layers, permuted", "permuted model", ""));
}

struct Outcome {
  bool passed = false;
  std::string message;
  Coverage coverage;
  int cases = 0;
};

class QuietListener final : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : fallback;
}

Outcome check(const std::string& name, const Property& property, bool single_layer, const Runner& runner,
              int cases = 0) {
  setenv("RC_PARAMS", "seed=0", 0);  // no random global seed line: every run passes its own
  Outcome o;
  rc::detail::TestParams params;
  params.seed = env_or("KVC_FUZZ_SEED", 20261130);
  params.maxSuccess = cases > 0 ? cases : static_cast<int>(env_or("KVC_FUZZ_CASES", 300));
  params.maxSize = 100;
  QuietListener listener;
  rc::detail::TestMetadata metadata;
  metadata.id = name;
  const auto gen = gen_recipe(single_layer);
  std::optional<Recipe> last_failing;  // after shrinking: the minimal counterexample
  const auto result = rc::detail::checkProperty(rc::detail::toProperty([&] {
                                                  const Recipe r = *gen;
                                                  try {
                                                    property(r, runner, o.coverage);
                                                  } catch (...) {
                                                    last_failing = r;
                                                    throw;
                                                  }
                                                }),
                                                metadata, params, listener);
  if (result.template is<rc::detail::SuccessResult>()) {
    o.passed = true;
    o.cases = result.template get<rc::detail::SuccessResult>().numSuccess;
  } else if (result.template is<rc::detail::FailureResult>()) {
    const auto& f = result.template get<rc::detail::FailureResult>();
    std::ostringstream os;
    os << f.description << "\nshrunk input: ";
    if (last_failing) os << *last_failing;
    os << "\nreproduce: KVC_FUZZ_SEED=" << params.seed << " (ctest -R StackedProperties)";
    o.message = os.str();
    o.cases = f.numSuccess;
  } else {
    std::ostringstream os;
    rc::detail::printResultMessage(result, os);
    o.message = os.str();
  }
  return o;
}

void expect_passes_and_covers(const std::string& name, const Outcome& o, std::vector<std::string> required) {
  std::printf("%s: %d cases\n", name.c_str(), o.cases);
  for (const auto& [cls, n] : o.coverage) std::printf("  %-28s %lld\n", cls.c_str(), static_cast<long long>(n));
  ASSERT_TRUE(o.passed) << o.message;
  for (const std::string& cls : required)
    EXPECT_GT(o.coverage.count(cls) ? o.coverage.at(cls) : 0, 0) << name << ": class " << cls << " never generated";
}

TEST(StackedProperties, StackedEqualsPerLayerForAnyEligibleModel) {
  std::vector<std::string> required = kCommonClasses;
  required.insert(required.end(), {"layers:1", "layers:>1"});
  expect_passes_and_covers("stacked-equals-per-layer",
                           check("stacked-equals-per-layer", stacked_equals_per_layer, false, Runner{}), required);
}

TEST(StackedProperties, PermutingLayersPermutesOutputs) {
  std::vector<std::string> required = kCommonClasses;
  required.insert(required.end(), {"layers:>1", "permutation:non-identity"});
  expect_passes_and_covers(
      "permuting-layers-permutes-outputs",
      check("permuting-layers-permutes-outputs", permuting_layers_permutes_outputs, false, Runner{}), required);
}

TEST(StackedProperties, SingleLayerStackedIsPerLayerExactly) {
  expect_passes_and_covers("single-layer-stacked-is-per-layer",
                           check("single-layer-stacked-is-per-layer", stacked_equals_per_layer, true, Runner{}),
                           kCommonClasses);
}

// Anti-vacuity: the properties fail on the defect they exist to catch. A stacked-parameter cache
// that never re-checks, given the model with other weights before each case (a weight update),
// serves the old stacked weight; the permuted model, of the same shape, is served the original
// order's parameters.
TEST(StackedPropertiesPlanted, AStaleParameterCacheIsCaught) {
  for (const auto& [name, property] :
       {std::pair<const char*, Property>{"stacked-equals-per-layer", stacked_equals_per_layer},
        {"permuting-layers-permutes-outputs", permuting_layers_permutes_outputs}}) {
    oracle::StackedParamCache stale(oracle::ParamCacheCheck::kTrustCache);
    const Outcome o = check(name, property, false, Runner{&stale, true}, 200);
    EXPECT_FALSE(o.passed) << name << " did not notice a stale stacked-parameter cache in " << o.cases << " cases";
    std::printf("%s caught it:\n%s\n", name, o.message.substr(0, 900).c_str());
  }
}

}  // namespace
}  // namespace kvc
