// store_rotated_test.cpp: the store op of the oracle (docs/contract.md §6.4).
//
// StoreRotatedRules: one negative test per validation rule (store_rule_breakers), for both formats
// and both cache conventions: the op rejects with the rule's code at the rule's level and above,
// and writes nothing. KvOnlyIsRopeThenStore: the KV-only insert equals RoPE followed by the store
// op, byte for byte over the whole backing, under several profiles; a store case built under the
// wrong rope policy differs (the comparison can fail). Conventions: SGLang's 2-D cache and our 3-D
// view with the same page stride, int32 and int64 indices, give the same bytes; a negative index
// writes nothing; at the contract level a repeated index keeps the last row.
//
// Catches: a rule not enforced or enforced with another code, a rejected call that writes, a
// store op that encodes differently from the insert's KV side (rounding, scale, pad, RoPE dims),
// a 2-D cache or int32 indices addressed differently, a skipped row that writes, a `index == -1`
// test where the contract skips every negative index (EveryNegativeIndexWritesNothing).
#include <gtest/gtest.h>

#include <set>

#include "kvc/oracle/kv_insert.h"
#include "kvc/oracle/store_rotated.h"
#include "testkit/backends/backing.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/cases/case_builder.h"
#include "testkit/compare/policy_report.h"
#include "testkit/cases/small_cases.h"
#include "testkit/cases/store_cases.h"
#include "testkit/cases/test_name.h"
#include "kvc/validate_store.h"

namespace kvc {
namespace {

using testkit::StorePages;

using testkit::StoreRuleCell;

class StoreRotatedRules : public ::testing::TestWithParam<StoreRuleCell> {};

TEST_P(StoreRotatedRules, RejectedWithItsCodeAtItsLevelAndNothingWritten) {
  const StoreRuleCell& cell = GetParam();
  StoreCase c = testkit::small_valid_store_case(cell.format, cell.pages);
  std::vector<std::uint8_t> backing = testkit::make_store_backing(c);
  ASSERT_TRUE(oracle::store_rotated(c, backing).ok()) << "the base case must be valid";
  backing = testkit::make_store_backing(c);
  cell.breaker->apply(c, backing);
  for (ValidationLevel level : {ValidationLevel::kContract, ValidationLevel::kStrict}) {
    SCOPED_TRACE(level == ValidationLevel::kStrict ? "strict" : "contract");
    std::vector<std::uint8_t> out = backing;
    oracle::OracleOptions o;
    o.level = level;
    const Status s = oracle::store_rotated(c, out, o);
    if (level < cell.breaker->level) {
      EXPECT_TRUE(s.ok()) << cell.breaker->name
                          << " is a strict rule, accepted at the contract level: " << s.ToString();
      continue;
    }
    EXPECT_EQ(s.code, cell.breaker->code) << s.ToString();
    EXPECT_FALSE(s.detail.empty()) << "the rejection names the offending value";
    EXPECT_EQ(out, backing) << "a rejected call wrote into the cache";
  }
}

INSTANTIATE_TEST_SUITE_P(Breakers, StoreRotatedRules, ::testing::ValuesIn(testkit::store_rule_matrix()),
                         testkit::ParamNamedBy<testkit::store_rule_cell_name>());

TEST(StoreRotatedRulesTable, EveryStoreCodeHasABreaker) {
  std::set<ErrorCode> covered;
  for (const testkit::StoreRuleBreaker& b : testkit::store_rule_breakers()) covered.insert(b.code);
  for (ErrorCode code :
       {ErrorCode::kStoreIndicesInvalid, ErrorCode::kStoreIndicesRowMismatch, ErrorCode::kStoreCacheNotPacked,
        ErrorCode::kStoreCacheRank, ErrorCode::kStorePageBytesTooSmall})
    EXPECT_TRUE(covered.count(code)) << "no negative test for E" << static_cast<int>(code);
}

// ---- kv_only_insert == RoPE, then store_rotated ------------------------------------------------

std::vector<InsertCase> identity_cases(RecordFormat f) {
  std::vector<InsertCase> cases;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    InsertCase c = testkit::small_valid_case(InsertOp::kKvOnly, f, seed);
    // Every policy's edge values in the kv rows (NaN payloads in a RoPE dim, Inf blocks, ...).
    const std::vector<std::uint16_t> rows = testkit::policy_edge_rows(c.num_rows(), seed);
    c.kv = make_tensor_from(DType::kBF16, rows, {c.num_rows(), kHeadDim});
    if (seed % 3 == 0) {  // kv_norm fused in front
      testkit::Rng rng(seed);
      c.kv_norm_weight = make_tensor_from(DType::kBF16, testkit::random_bf16_rows(rng, 1), {kHeadDim});
    }
    cases.push_back(c);
  }
  return cases;
}

TEST(KvOnlyIsRopeThenStore, WholeBackingsEqualUnderEveryProfile) {
  for (RecordFormat f : {RecordFormat::kPacked584, RecordFormat::kPacked528}) {
    for (const char* name : {"vllm", "sglang-store", "rope=none", "clamp=sglang,inf=sglang,floor=after"}) {
      oracle::OracleOptions o;
      o.profile = *kvc::parse_profile(name);
      int live_rows = 0;
      for (const InsertCase& c : identity_cases(f)) {
        SCOPED_TRACE(std::string(layout_of(f).name) + " profile " + name);
        InsertOutputs insert = testkit::make_outputs(c);
        ASSERT_TRUE(oracle::kv_only_insert(c, insert, o).ok());
        const StoreCase s = oracle::store_case_of(c, o.profile);
        std::vector<std::uint8_t> store = testkit::make_outputs(c).cache;
        ASSERT_TRUE(oracle::store_rotated(s, store, o).ok());
        EXPECT_TRUE(insert.cache == store) << testkit::format_case_report(
            c, testkit::diff_case_backings(c, insert.cache, store), insert.cache, store,
            testkit::ReportContext{"kv_only_insert", "RoPE then store_rotated", name, "", 1.0f});
        live_rows += static_cast<int>(testkit::addressed_slots(c).size());
      }
      EXPECT_GT(live_rows, 0) << "no row was stored";
    }
  }
}

TEST(KvOnlyIsRopeThenStore, AStoreCaseUnderTheWrongRopePolicyDiffers) {
  // The comparison above can fail: rows left unrotated are other records.
  const InsertCase c = identity_cases(RecordFormat::kPacked584).front();
  InsertOutputs insert = testkit::make_outputs(c);
  ASSERT_TRUE(oracle::kv_only_insert(c, insert).ok());
  const StoreCase s = oracle::store_case_of(c, *kvc::parse_profile("rope=none"));
  std::vector<std::uint8_t> store = testkit::make_outputs(c).cache;
  ASSERT_TRUE(oracle::store_rotated(s, store).ok());
  const testkit::DiffReport d = testkit::diff_case_backings(c, insert.cache, store);
  EXPECT_GT(
      d.count_by_class.count(testkit::ByteClass::kValue16) ? d.count_by_class.at(testkit::ByteClass::kValue16) : 0, 0)
      << "the RoPE dims must differ";
}

TEST(KvOnlyIsRopeThenStore, OnlyKvOnlyBf16PackedCasesAreStoreCases) {
  EXPECT_THROW(oracle::store_case_of(testkit::small_valid_case(InsertOp::kLegacy, RecordFormat::kPacked584)),
               std::invalid_argument);
  EXPECT_THROW(oracle::store_case_of(testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kFp8_512)),
               std::invalid_argument);
}

// ---- conventions -------------------------------------------------------------------------------

// The same store case with its cache given as our 3-D view of the same page stride.
StoreCase as_paged_view(StoreCase c) {
  const std::int64_t stride = c.cache.stride(0), width = layout_of(store_format(c)).record_width;
  c.cache.sizes = {c.cache.size(0), c.block_size, width};
  c.cache.strides = {stride, width, 1};
  return c;
}

TEST(StoreConventions, SglangFlatCacheIsThePagedViewOfItsStride) {
  for (RecordFormat f : {RecordFormat::kPacked584, RecordFormat::kPacked528}) {
    const StoreCase flat = testkit::small_valid_store_case(f, StorePages::kSglangFlat, 3);
    EXPECT_EQ(flat.cache.stride(0), f == RecordFormat::kPacked584 ? 17 * 576 : 15 * 576)
        << "ceil(record * 16 / 576) * 576";
    const StoreCase view = as_paged_view(flat);
    std::vector<std::uint8_t> a = testkit::make_store_backing(flat), b = testkit::make_store_backing(view);
    ASSERT_EQ(a.size(), b.size());
    ASSERT_TRUE(oracle::store_rotated(flat, a).ok());
    ASSERT_TRUE(oracle::store_rotated(view, b).ok());
    EXPECT_EQ(a, b);
    EXPECT_NE(a, testkit::make_store_backing(flat)) << "nothing was written";
  }
}

TEST(StoreConventions, Int32AndInt64IndicesWriteTheSameBytes) {
  for (RecordFormat f : {RecordFormat::kPacked584, RecordFormat::kPacked528}) {
    const StoreCase wide = testkit::small_valid_store_case(f, StorePages::kPagedView, 4, DType::kI64);
    const StoreCase narrow = testkit::small_valid_store_case(f, StorePages::kPagedView, 4, DType::kI32);
    std::vector<std::uint8_t> a = testkit::make_store_backing(wide), b = testkit::make_store_backing(narrow);
    ASSERT_TRUE(oracle::store_rotated(wide, a).ok());
    ASSERT_TRUE(oracle::store_rotated(narrow, b).ok());
    EXPECT_EQ(a, b);
  }
}

TEST(StoreConventions, NegativeIndexWritesNothingAndOnlyAddressedRecordsChange) {
  const StoreCase c = testkit::small_valid_store_case(RecordFormat::kPacked584, StorePages::kSglangFlat, 5);
  const std::vector<std::uint8_t> canary = testkit::make_store_backing(c);
  std::vector<std::uint8_t> out = canary;
  ASSERT_TRUE(oracle::store_rotated(c, out).ok());
  std::set<std::int64_t> addressed;
  for (std::int64_t t = 0; t < c.num_rows(); ++t)
    if (c.index(t) >= 0) addressed.insert(c.index(t));
  ASSERT_EQ(addressed.size(), static_cast<std::size_t>(c.num_rows() - 1)) << "one row has index -1";
  const testkit::DiffReport d = testkit::diff_backings(canary, out, oracle::store_view(c), addressed);
  for (const auto& [cls, n] : d.count_by_class)
    EXPECT_TRUE(testkit::is_record_byte(cls))
        << n << " bytes changed outside the addressed records: " << testkit::name(cls);
  EXPECT_GT(d.mismatch_count, 0);
}

// docs/contract.md §3.1, §6.4: every negative index skips its row, not only -1. Indices -2..-7 in
// a cache 4096 bytes into its backing: taken as indices (page 0, token -2..-7) they would land
// inside the backing, before the cache or in page 0, where a changed canary shows them.
TEST(StoreConventions, EveryNegativeIndexWritesNothing) {
  for (RecordFormat f : {RecordFormat::kPacked584, RecordFormat::kPacked528}) {
    SCOPED_TRACE(std::string(layout_of(f).name));
    StoreCase c = testkit::small_valid_store_case(f, StorePages::kPagedView, 7, DType::kI64, 4096);
    for (std::int64_t t = 0; t < c.num_rows(); ++t) c.indices.store<std::int64_t>(t, -2 - t);
    const std::vector<std::uint8_t> canary = testkit::make_store_backing(c);
    std::vector<std::uint8_t> out = canary;
    ASSERT_TRUE(oracle::store_rotated(c, out).ok());
    EXPECT_EQ(out, canary) << "a row with a negative index wrote";
  }
}

TEST(StoreConventions, RepeatedIndexAtTheContractLevelKeepsTheLastRow) {
  StoreCase c = testkit::small_valid_store_case(RecordFormat::kPacked528, StorePages::kPagedView, 6);
  c.indices.store<std::int64_t>(4, c.index(0));  // rows 0 and 4 share a slot
  oracle::OracleOptions contract;
  contract.level = ValidationLevel::kContract;
  std::vector<std::uint8_t> both = testkit::make_store_backing(c);
  ASSERT_TRUE(oracle::store_rotated(c, both, contract).ok());
  StoreCase without_first = c;
  without_first.indices.store<std::int64_t>(0, -1);
  std::vector<std::uint8_t> last_only = testkit::make_store_backing(c);
  ASSERT_TRUE(oracle::store_rotated(without_first, last_only, contract).ok());
  EXPECT_EQ(both, last_only);
}

}  // namespace
}  // namespace kvc
