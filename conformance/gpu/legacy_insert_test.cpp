// legacy_insert_test.cpp (GPU): the legacy Q+KV insert of the kernel library against the oracle.
//
// KernelMatrixLegacy: every scenario of cases::kernel_matrix(kLegacy), with a random query: the
// judge's verdict (testkit/compare/judge.h): cache backing and q output equal the oracle's under
// the declared profile byte for byte (or within the declared approximate-rsqrt window), guard
// zones intact, inputs unchanged, a second run identical. For bf16_512 Q is
// updated in place (q and q_out are one buffer).
// LegacyGrids: the per-token grid and the large-batch grid (force_grid 1 and 2) write identical
// bytes at 1023, 1024 and 1025 tokens, in every format. Catches a grid-dependent defect at the
// cut-off that the library's own choice would hide.
// LegacyFlags: the flag combinations the matrix does not vary (interleaved Q, no Q-norm, no Q
// RoPE, fp16 q/kv, wide head padding), at 1025 tokens.
#include <gtest/gtest.h>

#include <functional>
#include <utility>
#include <ostream>

#include "testkit/device/gpu_test_support.h"
#include "testkit/cases/registry.h"
#include "kvc/oracle/bf16.h"
#include "kvc/oracle/fp16.h"
#include "kvc/resolved_case.h"
#include "testkit/backends/backing.h"
#include "testkit/cases/test_name.h"

namespace kvc {
namespace {

class KernelMatrixLegacy : public ::testing::TestWithParam<cases::ConformanceSpec> {};

TEST_P(KernelMatrixLegacy, BackingAndQOutEqualOracleGuardsIntactInputsUnchangedDeterministic) {
  KVC_REQUIRE_CUDA_DEVICE();
  gpu::expect_conformant(cases::build_legacy(GetParam(), 0), GetParam().name());
}

INSTANTIATE_TEST_SUITE_P(Registry, KernelMatrixLegacy, ::testing::ValuesIn(cases::kernel_matrix(InsertOp::kLegacy)),
                         [](const ::testing::TestParamInfo<cases::ConformanceSpec>& p) { return p.param.name(); });

// A legacy scenario with a random query of 2 heads padded to 8, wide-range values, padded pages.
cases::ConformanceSpec legacy_spec(RecordFormat f, std::int64_t tokens, std::int64_t heads = 2, std::int64_t hp = 8) {
  cases::ConformanceSpec s{f, tokens, 64};
  s.values = cases::KvValues::kWideRange;
  s.random_query = true;
  s.query_heads = heads;
  s.padded_heads = hp;
  s.seed = 0x6772u + static_cast<std::uint64_t>(tokens);
  return s;
}

struct GridCase {
  RecordFormat format;
  std::int64_t tokens;
  bool interleaved;
  std::string name() const {
    return testkit::format_test_name(format) + "_Tokens" + std::to_string(tokens) + (interleaved ? "_Interleaved" : "");
  }
};

void PrintTo(const GridCase& g, std::ostream* os) { *os << g.name(); }

std::vector<GridCase> grid_cases() {
  std::vector<GridCase> v;
  for (RecordFormat f : kAllFormats)
    for (std::int64_t n : {kTokenCutoff - 1, kTokenCutoff, kTokenCutoff + 1}) {
      v.push_back({f, n, false});
      if (is_packed(f)) v.push_back({f, n, true});
    }
  return v;
}

class LegacyGrids : public ::testing::TestWithParam<GridCase> {};

TEST_P(LegacyGrids, PerTokenAndLargeBatchGridsWriteIdenticalBytes) {
  KVC_REQUIRE_CUDA_DEVICE();
  InsertCase c = cases::build_legacy(legacy_spec(GetParam().format, GetParam().tokens), 0);
  c.q_interleaved = GetParam().interleaved;
  testkit::DeviceBackendOptions per_token, large_batch;
  per_token.force_grid = 1;
  large_batch.force_grid = 2;
  testkit::DeviceBackend a = gpu::make_backend(per_token), b = gpu::make_backend(large_batch);
  KVC_REQUIRE_SUPPORT(a, c);
  InsertOutputs by_token = testkit::make_outputs(c), by_batch = testkit::make_outputs(c);
  const Status s = a.run(c, by_token);
  ASSERT_TRUE(gpu::clean(a));
  ASSERT_TRUE(b.run(c, by_batch).ok());
  ASSERT_TRUE(gpu::clean(b));
  EXPECT_TRUE(
      gpu::identical_runs(c, by_token, by_batch, "per-token grid (force_grid 1)", "large-batch grid (force_grid 2)"));
  EXPECT_TRUE(gpu::passes(gpu::judge(a, c, s, std::move(by_token)), GetParam().name()));
}

INSTANTIATE_TEST_SUITE_P(CutOff, LegacyGrids, ::testing::ValuesIn(grid_cases()),
                         [](const ::testing::TestParamInfo<GridCase>& p) { return p.param.name(); });

// The case with kv and q converted to binary16 (values through fp32, so they stay finite).
InsertCase to_fp16(const InsertCase& c) {
  InsertCase out = c;
  for (HostTensor* t : {&out.kv, &out.q}) {
    t->meta.dtype = DType::kF16;
    for (std::int64_t i = 0; i < t->meta.numel(); ++i)
      t->store<std::uint16_t>(i, oracle::float_to_fp16(oracle::bf16_to_float(t->load<std::uint16_t>(i))));
  }
  if (resolve_or_throw(out).packed()) out.q_out.dtype = DType::kF16;
  return out;
}

struct FlagCase {
  std::string name;
  RecordFormat format;
  std::function<InsertCase()> build;
};

void PrintTo(const FlagCase& f, std::ostream* os) { *os << f.name; }

std::vector<FlagCase> flag_cases() {
  constexpr std::int64_t kTokens = kTokenCutoff + 1;
  std::vector<FlagCase> v;
  for (RecordFormat f : kAllFormats) {
    const std::string fn = testkit::format_test_name(f);
    auto base = [f] { return cases::build_legacy(legacy_spec(f, kTokens), 0); };
    v.push_back({fn + "_NoQNorm", f, [base] {
                   InsertCase c = base();
                   c.apply_q_norm = false;
                   return c;
                 }});
    if (!is_packed(f)) continue;  // the flags below exist for packed caches only
    v.push_back({fn + "_NoQRope", f, [base] {
                   InsertCase c = base();
                   c.apply_q_rope = false;
                   return c;
                 }});
    v.push_back({fn + "_Interleaved", f, [base] {
                   InsertCase c = base();
                   c.q_interleaved = true;
                   return c;
                 }});
    v.push_back({fn + "_Fp16", f, [base] { return to_fp16(base()); }});
    v.push_back({fn + "_Fp16Interleaved", f, [base] {
                   InsertCase c = to_fp16(base());
                   c.q_interleaved = true;
                   return c;
                 }});
    v.push_back({fn + "_Heads3Padded16", f, [f] { return cases::build_legacy(legacy_spec(f, kTokens, 3, 16), 0); }});
    v.push_back({fn + "_Heads128Padded128", f, [f] { return cases::build_legacy(legacy_spec(f, 64, 128, 128), 0); }});
    v.push_back({fn + "_Heads1NoQOutput", f, [f] { return cases::build_legacy(legacy_spec(f, kTokens, 1, 0), 0); }});
  }
  return v;
}

class LegacyFlags : public ::testing::TestWithParam<FlagCase> {};

TEST_P(LegacyFlags, EqualOracle) {
  KVC_REQUIRE_CUDA_DEVICE();
  gpu::expect_conformant(GetParam().build(), GetParam().name);
}

INSTANTIATE_TEST_SUITE_P(Variants, LegacyFlags, ::testing::ValuesIn(flag_cases()),
                         [](const ::testing::TestParamInfo<FlagCase>& p) { return p.param.name; });

}  // namespace
}  // namespace kvc
