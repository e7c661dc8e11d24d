// hostile_metadata_test.cpp: metadata that torch cannot express but a case file or a hostile
// caller can, rejected with a stable code at every level and with either ValueAccess, and never
// written through.
//
// Each entry is a defect that existed: a negative page or token stride passed the contract level
// and the oracle wrote at a negative index; a negative q_out offset passed both levels and the
// oracle wrote before the buffer; sizes and strides of different lengths made contiguous() read
// past the strides vector (in the insert ops and in kv_norm); products and sums of sizes, strides
// and offsets overflowed int64; a case handed to the other op's entry point was reported as a Q
// shape error. Random hostile metadata is the fuzz property fuzz_hostile_metadata_test.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>

#include "kvc/checked_math.h"
#include "kvc/oracle/kv_insert.h"
#include "kvc/oracle/kv_norm.h"
#include "kvc/oracle/legacy_insert.h"
#include "testkit/backends/oracle_backend.h"
#include "testkit/backends/backing.h"
#include "testkit/cases/test_name.h"
#include "testkit/io/case_file.h"
#include "testkit/cases/small_cases.h"
#include "kvc/validate.h"

namespace kvc {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr DType kUnknownDType = static_cast<DType>(200);

// A valid kv_norm weight, so that the fused form's tensor argument can be broken too.
HostTensor valid_norm_weight() {
  HostTensor w = make_tensor(DType::kBF16, {kHeadDim});
  for (int d = 0; d < kHeadDim; ++d) w.store<std::uint16_t>(d, 0x3F80);  // 1.0
  return w;
}

struct Hostile {
  std::string name;
  ErrorCode code;
  std::function<bool(InsertOp, RecordFormat)> applies;
  std::function<void(InsertCase&)> apply;
};

bool any(InsertOp, RecordFormat) { return true; }
bool legacy(InsertOp op, RecordFormat) { return op == InsertOp::kLegacy; }
bool kv_only(InsertOp op, RecordFormat) { return op == InsertOp::kKvOnly; }
bool full_cache(InsertOp, RecordFormat f) { return !is_packed(f); }
bool fp8_cache(InsertOp, RecordFormat f) { return f == RecordFormat::kFp8_512; }
bool fp8_legacy(InsertOp op, RecordFormat f) { return op == InsertOp::kLegacy && f == RecordFormat::kFp8_512; }

// The tensor arguments by name, with the ops and formats that have them.
struct Argument {
  const char* name;
  std::function<bool(InsertOp, RecordFormat)> applies;
  std::function<TensorMeta&(InsertCase&)> meta;
};
std::vector<Argument> tensor_arguments() {
  return {{"Kv", any, [](InsertCase& c) -> TensorMeta& { return c.kv.meta; }},
          {"Slots", any, [](InsertCase& c) -> TensorMeta& { return c.slots.meta; }},
          {"Positions", any, [](InsertCase& c) -> TensorMeta& { return c.positions.meta; }},
          {"CosSin", any, [](InsertCase& c) -> TensorMeta& { return c.cos_sin.meta; }},
          {"Fp8Scale", fp8_cache, [](InsertCase& c) -> TensorMeta& { return c.fp8_scale.meta; }},
          {"Q", legacy, [](InsertCase& c) -> TensorMeta& { return c.q.meta; }},
          {"QOut", legacy, [](InsertCase& c) -> TensorMeta& { return c.q_out; }},
          {"QScaleInv", fp8_legacy, [](InsertCase& c) -> TensorMeta& { return c.q_scale_inv.meta; }},
          {"KvNormWeight", kv_only, [](InsertCase& c) -> TensorMeta& {
             c.kv_norm_weight = valid_norm_weight();
             return c.kv_norm_weight.meta;
           }}};
}

std::vector<Hostile> hostile_table() {
  std::vector<Hostile> t = {
      {"NegativePageStride", ErrorCode::kCacheGeometryInvalid, any,
       [](InsertCase& c) { c.cache.stride0 = -c.cache.stride0; }},
      {"NegativeTokenStride", ErrorCode::kCacheGeometryInvalid, full_cache,
       [](InsertCase& c) { c.cache.stride1 = -c.cache.stride1; }},
      {"NegativeNumBlocks", ErrorCode::kCacheGeometryInvalid, any, [](InsertCase& c) { c.cache.num_blocks = -1; }},
      {"NegativeCacheOffset", ErrorCode::kCacheGeometryInvalid, any,
       [](InsertCase& c) { c.cache.offset_bytes = -kAlignment; }},
      {"PageStrideInt64Max", ErrorCode::kCacheGeometryInvalid, any, [](InsertCase& c) { c.cache.stride0 = kMax; }},
      {"NumBlocksTimesPageStrideOverflows", ErrorCode::kCacheGeometryInvalid, any,
       [](InsertCase& c) { c.cache.num_blocks = kMax / 2; }},
      {"BlockSizeTimesBlocksOverflows", ErrorCode::kCacheGeometryInvalid, any,
       [](InsertCase& c) { c.cache.block_size = c.block_size = std::int64_t{1} << 62; }},
      {"CacheOffsetNearInt64Max", ErrorCode::kCacheGeometryInvalid, any,
       [](InsertCase& c) { c.cache.offset_bytes = kMax - kAlignment + 1; }},
      {"QOutNegativeOffset", ErrorCode::kTensorMetaInvalid, legacy,
       [](InsertCase& c) { c.q_out.offset_bytes = -kAlignment; }},
      {"KvNegativeOffset", ErrorCode::kTensorMetaInvalid, any, [](InsertCase& c) { c.kv.meta.offset_bytes = -2; }},
      {"KvRowCountOverflows", ErrorCode::kTensorMetaInvalid, any,
       [](InsertCase& c) { c.kv.meta.sizes[0] = std::int64_t{1} << 62; }},
      {"KvRowStrideOverflows", ErrorCode::kTensorMetaInvalid, any, [](InsertCase& c) { c.kv.meta.strides[0] = kMax; }},
      {"CosSinOffsetNearInt64Max", ErrorCode::kTensorMetaInvalid, any,
       [](InsertCase& c) { c.cos_sin.meta.offset_bytes = kMax - 8; }},
      {"NegativePositionsSize", ErrorCode::kTensorMetaInvalid, any,
       [](InsertCase& c) { c.positions.meta.sizes[0] = -1; }},
      {"NegativeSlotsStride", ErrorCode::kTensorMetaInvalid, any, [](InsertCase& c) { c.slots.meta.strides[0] = -1; }},
      {"KvUnknownDtypeCode", ErrorCode::kTensorMetaInvalid, any,
       [](InsertCase& c) { c.kv.meta.dtype = kUnknownDType; }},
      {"UnknownOpCode", ErrorCode::kWrongOp, any, [](InsertCase& c) { c.op = static_cast<InsertOp>(7); }},
  };
  for (const Argument& a : tensor_arguments()) {
    const auto meta = a.meta;
    t.push_back({std::string(a.name) + "StridesShorterThanSizes", ErrorCode::kTensorMetaInvalid, a.applies,
                 [meta](InsertCase& c) { meta(c).strides.pop_back(); }});
    t.push_back({std::string(a.name) + "StridesLongerThanSizes", ErrorCode::kTensorMetaInvalid, a.applies,
                 [meta](InsertCase& c) { meta(c).strides.push_back(1); }});
  }
  return t;
}

struct Entry {
  const Hostile* hostile;
  InsertOp op;
  RecordFormat format;
};

std::vector<Entry> matrix() {
  static const std::vector<Hostile> table = hostile_table();
  std::vector<Entry> m;
  for (const Hostile& h : table)
    for (InsertOp op : {InsertOp::kKvOnly, InsertOp::kLegacy})
      for (RecordFormat f : kAllFormats)
        if (h.applies(op, f)) m.push_back({&h, op, f});
  return m;
}

std::string entry_name(const Entry& e) {
  return e.hostile->name + (e.op == InsertOp::kLegacy ? "_Legacy_" : "_KvOnly_") + testkit::format_test_name(e.format);
}

class HostileMetadata : public ::testing::TestWithParam<Entry> {};

TEST_P(HostileMetadata, RejectedWithItsCodeAtEveryLevelAndNothingWritten) {
  const Entry& e = GetParam();
  InsertCase c = testkit::small_valid_case(e.op, e.format);
  if (e.op == InsertOp::kKvOnly) c.kv_norm_weight = valid_norm_weight();
  InsertOutputs out = testkit::make_outputs(c);  // sized for the valid case
  ASSERT_TRUE(testkit::OracleBackend().run(c, out).ok()) << "the base case must be valid";
  out = testkit::make_outputs(c);
  e.hostile->apply(c);
  const InsertOutputs before = out;

  for (ValidationLevel level : {ValidationLevel::kContract, ValidationLevel::kStrict}) {
    SCOPED_TRACE(level == ValidationLevel::kStrict ? "strict" : "contract");
    oracle::OracleOptions options;
    options.level = level;
    const Status s = testkit::OracleBackend(options).run(c, out);
    EXPECT_EQ(s.code, e.hostile->code) << s.ToString();
    EXPECT_EQ(out.cache, before.cache) << "a rejected call wrote into the backing";
    EXPECT_EQ(out.q_out, before.q_out) << "a rejected call wrote into q_out";
    // Kernel wrappers validate metadata only; these rules need no values, so they fire there too.
    const Status m = validate_insert(c, level, ValueAccess::kMetadataOnly);
    EXPECT_EQ(m.code, e.hostile->code) << "metadata only: " << m.ToString();
  }
}

INSTANTIATE_TEST_SUITE_P(Hostile, HostileMetadata, ::testing::ValuesIn(matrix()),
                         [](const ::testing::TestParamInfo<Entry>& p) { return entry_name(p.param); });

TEST(HostileCaseFile, MismatchedStridesReadFromAFileAreRejected) {
  // The path such metadata arrives by: a case file (fuzz corpus, a user's replay).
  const InsertCase valid = testkit::small_valid_case(InsertOp::kLegacy, RecordFormat::kPacked584);
  nlohmann::json j = testkit::case_to_json(valid);
  j["kv"]["meta"]["strides"] = nlohmann::json::array({1});
  j["q_out"]["offset_bytes"] = -kAlignment;
  const InsertCase c = testkit::case_from_json(j);
  InsertOutputs out = testkit::make_outputs(valid);
  const InsertOutputs before = out;
  const Status s = testkit::OracleBackend().run(c, out);
  EXPECT_EQ(s.code, ErrorCode::kTensorMetaInvalid) << s.ToString();
  EXPECT_NE(s.detail.find("kv: 2 sizes but 1 strides"), std::string::npos) << s.detail;
  EXPECT_EQ(out.cache, before.cache);
  EXPECT_EQ(out.q_out, before.q_out);
}

TEST(WrongOp, EachEntryPointRejectsTheOtherOpsCase) {
  for (RecordFormat f : kAllFormats) {
    const InsertCase kv_only_case = testkit::small_valid_case(InsertOp::kKvOnly, f);
    const InsertCase legacy_case = testkit::small_valid_case(InsertOp::kLegacy, f);
    for (ValidationLevel level : {ValidationLevel::kContract, ValidationLevel::kStrict}) {
      for (ValueAccess access : {ValueAccess::kMetadataAndValues, ValueAccess::kMetadataOnly}) {
        EXPECT_EQ(validate_kv_only_insert(legacy_case, level, access).code, ErrorCode::kWrongOp);
        EXPECT_EQ(validate_legacy_insert(kv_only_case, level, access).code, ErrorCode::kWrongOp);
        EXPECT_TRUE(validate_insert(kv_only_case, level, access).ok());
        EXPECT_TRUE(validate_insert(legacy_case, level, access).ok());
      }
    }
    // The oracle's entry points: rejected, nothing written.
    InsertOutputs out = testkit::make_outputs(legacy_case);
    const InsertOutputs before = out;
    EXPECT_EQ(oracle::kv_only_insert(legacy_case, out).code, ErrorCode::kWrongOp);
    EXPECT_EQ(out.cache, before.cache);
    InsertOutputs out2 = testkit::make_outputs(kv_only_case);
    const InsertOutputs before2 = out2;
    EXPECT_EQ(oracle::legacy_insert(kv_only_case, out2).code, ErrorCode::kWrongOp);
    EXPECT_EQ(out2.cache, before2.cache);
  }
}

TEST(HostileKvNorm, MalformedMetadataIsRejectedAndNothingIsWritten) {
  const InsertCase base = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kBf16_512);
  const HostTensor weight = valid_norm_weight();
  struct Break {
    const char* what;
    std::function<void(HostTensor& kv, HostTensor& w)> apply;
  };
  const Break breaks[] = {
      {"kv strides shorter", [](HostTensor& kv, HostTensor&) { kv.meta.strides.pop_back(); }},
      {"kv strides longer", [](HostTensor& kv, HostTensor&) { kv.meta.strides.push_back(1); }},
      {"kv negative offset", [](HostTensor& kv, HostTensor&) { kv.meta.offset_bytes = -2; }},
      {"kv row count overflows", [](HostTensor& kv, HostTensor&) { kv.meta.sizes[0] = kMax / 2; }},
      {"weight strides longer", [](HostTensor&, HostTensor& w) { w.meta.strides.push_back(1); }},
      {"weight negative offset", [](HostTensor&, HostTensor& w) { w.meta.offset_bytes = -2; }},
  };
  for (const Break& b : breaks) {
    HostTensor kv = base.kv, w = weight;
    b.apply(kv, w);
    for (ValueAccess access : {ValueAccess::kMetadataAndValues, ValueAccess::kMetadataOnly})
      EXPECT_EQ(validate_kv_norm(kv, w, access).code, ErrorCode::kTensorMetaInvalid) << b.what;
    std::vector<std::uint16_t> out(7, 0xBEEF);
    EXPECT_EQ(oracle::kv_norm(kv, w, 1e-6f, &out).code, ErrorCode::kTensorMetaInvalid) << b.what;
    EXPECT_EQ(out, std::vector<std::uint16_t>(7, 0xBEEF)) << b.what << ": a rejected kv_norm wrote its output";
  }
}

TEST(HostileOutputs, ValidateOutputsIsSafeOnAnUnvalidatedCase) {
  // validate_outputs forms the view's extent; it must not overflow on geometry nobody checked.
  InsertCase c = testkit::small_valid_case(InsertOp::kLegacy, RecordFormat::kFp8_512);
  const InsertOutputs out = testkit::make_outputs(c);
  c.cache.num_blocks = kMax / 2;
  EXPECT_EQ(validate_outputs(c, out).code, ErrorCode::kCacheGeometryInvalid);
  c = testkit::small_valid_case(InsertOp::kLegacy, RecordFormat::kFp8_512);
  c.q_out.strides.pop_back();
  EXPECT_EQ(validate_outputs(c, out).code, ErrorCode::kTensorMetaInvalid);
}

TEST(TensorMetaExtents, MismatchedLengthsNeverReadPastTheStrides) {
  // contiguous() used to index strides by the sizes' rank: under AddressSanitizer this read past
  // the vector.
  TensorMeta m;
  m.dtype = DType::kBF16;
  m.sizes = {3, 4, kHeadDim};
  m.strides = {kHeadDim};
  EXPECT_FALSE(m.contiguous());
  EXPECT_FALSE(m.well_formed());
  EXPECT_FALSE(m.checked_span_bytes().has_value());
  EXPECT_EQ(m.span_bytes(), kMax) << "the plain form saturates instead of wrapping";
}

TEST(TensorMetaExtents, OverflowIsReportedNotWrapped) {
  TensorMeta m;
  m.dtype = DType::kI64;
  m.sizes = {std::int64_t{1} << 61};
  m.strides = {1};
  EXPECT_TRUE(m.checked_numel().has_value());
  EXPECT_FALSE(m.checked_span_bytes().has_value()) << "2^61 elements of 8 bytes wrap to 0 in int64";
  EXPECT_FALSE(m.well_formed());
  m.sizes = {std::int64_t{1} << 40, std::int64_t{1} << 40};
  m.strides = {std::int64_t{1} << 40, 1};
  EXPECT_FALSE(m.checked_numel().has_value());
  m.sizes = {0, kMax, kMax};
  m.strides = {1, 1, 1};
  EXPECT_EQ(m.checked_numel(), std::int64_t{0}) << "an empty tensor is empty whatever its other sizes";
  EXPECT_TRUE(m.well_formed());
}

TEST(CheckedMath, DetectsOverflowAndPropagatesIt) {
  EXPECT_EQ(checked_add(kMax - 1, std::int64_t{1}), kMax);
  EXPECT_FALSE(checked_add(kMax, std::int64_t{1}).has_value());
  EXPECT_FALSE(checked_add(std::numeric_limits<std::int64_t>::min(), std::int64_t{-1}).has_value());
  EXPECT_EQ(checked_mul(std::int64_t{1} << 31, std::int64_t{1} << 31), std::int64_t{1} << 62);
  EXPECT_FALSE(checked_mul(std::int64_t{1} << 32, std::int64_t{1} << 31).has_value());
  EXPECT_FALSE(checked_mul(std::numeric_limits<std::int64_t>::min(), std::int64_t{-1}).has_value());
  EXPECT_FALSE(checked_mul_add(CheckedI64{}, std::int64_t{1}, std::int64_t{0}).has_value())
      << "an earlier overflow propagates";
  EXPECT_EQ(checked_mul_add(std::int64_t{3}, std::int64_t{4}, std::int64_t{5}), 17);
  EXPECT_EQ(checked_product({}), 1);
  EXPECT_FALSE(checked_product({std::int64_t{1} << 32, std::int64_t{1} << 32}).has_value());
}

}  // namespace
}  // namespace kvc
