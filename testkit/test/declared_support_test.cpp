// declared_support_test.cpp: what kernel libraries declare, read through the suite's one reader
// (testkit/device/declared_support.h) and the device backend's skip decisions, on our kernels and
// on the capability doubles of testkit/doubles/ (loaded like any user's library). Host code only:
// no device is needed, so this runs in CI.
//
// Catches: a fused kv_norm case asked the plain insert's declaration (every fused case of a
// library that binds only the plain insert then fails on its 402 instead of being skipped), or a
// library built before 1.2 asked a query it does not know; a declared limit not decoded as the
// double planted it; a case inside the limits skipped, or one outside them not skipped, or the
// skip naming another limit; the store matrix unable to lay its cases out in SGLang's own layout
// (SGLang's store kernel would never be checked); a validation rule the library does not declare
// it enforces still sent to it.
#include <gtest/gtest.h>

#include <string>

#include "kvc/oracle/store_rotated.h"
#include "testkit/cases/declared_store_layout.h"
#include "testkit/cases/registry.h"
#include "testkit/cases/small_cases.h"
#include "testkit/cases/store_cases.h"
#include "testkit/device/abi_args.h"
#include "testkit/device/declared_support.h"
#include "testkit/device/device_backend.h"
#include "testkit/device/device_tensor.h"

namespace kvc::testkit {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A KV-only case with kv_norm fused in front.
InsertCase fused(RecordFormat f) {
  InsertCase c = small_valid_case(InsertOp::kKvOnly, f);
  c.kv_norm_weight = make_tensor_from(DType::kBF16, std::vector<std::uint16_t>(kHeadDim, 0x3F80), {kHeadDim});
  c.kv_norm_eps = 1e-6f;
  return c;
}

// A KV-only case of the kernel matrix: 17 tokens, block size `bs`, dense or padded pages.
InsertCase matrix_case(RecordFormat f, std::int64_t bs, bool padded) {
  cases::ConformanceSpec spec{f, 17, bs};
  spec.padded_pages = padded;
  return cases::build_kv_only(spec, 0);
}

TEST(DeclaredSupportOurs, EveryOpIncludingTheFusedQueryWithNoLimitsAndEveryCode) {
  const DeviceBackend device(KernelLibrary::builtin());
  const DeclaredSupport& declared = device.declared();
  for (RecordFormat f : kAllFormats) {
    SCOPED_TRACE(layout_of(f).name);
    const Declaration& d = declared.of(KVC_OP_KV_ONLY_INSERT_KV_NORM, static_cast<std::int32_t>(f), DType::kBF16);
    EXPECT_TRUE(d.supported) << d.reason;
    EXPECT_EQ(d.capabilities.limits, abi::GeometryLimits{});
    EXPECT_EQ(d.capabilities.validation.scope, abi::ValidationScope::kAll);
    EXPECT_TRUE(device.supports(fused(f)).supported) << device.supports(fused(f)).reason;
    EXPECT_FALSE(declared.of(KVC_OP_KV_ONLY_INSERT_KV_NORM, static_cast<std::int32_t>(f), DType::kF16).supported);
  }
  for (StorePages p : kAllStorePages) {
    const StoreCase c = small_valid_store_case(RecordFormat::kPacked528, p);
    EXPECT_TRUE(device.supports_store(c).supported) << device.supports_store(c).reason;
    EXPECT_TRUE(declared.checks_store_breaker(c, c, ErrorCode::kSlotOutOfRange).supported);
  }
  EXPECT_EQ(DeclaredSupport::abi_op_of(fused(RecordFormat::kPacked584)), KVC_OP_KV_ONLY_INSERT_KV_NORM);
  EXPECT_EQ(DeclaredSupport::abi_op_of(small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584)),
            KVC_OP_KV_ONLY_INSERT);
}

TEST(DeclaredSupportPlainInsertOnly, FusedCasesAreSkippedWithTheLibrarysReasonAndPlainOnesRun) {
  const DeviceBackend device(KernelLibrary::open(KVC_DOUBLE_PLAIN_INSERT_ONLY));
  for (RecordFormat f : kAllFormats) {
    SCOPED_TRACE(layout_of(f).name);
    const Support s = device.supports(fused(f));
    EXPECT_FALSE(s.supported);
    EXPECT_TRUE(contains(s.reason, "does not implement kv_only_insert with kv_norm fused in front for " +
                                       std::string(layout_of(f).name) + " with bf16 kv"))
        << s.reason;
    EXPECT_TRUE(contains(s.reason, "binds the plain KV-only insert only")) << s.reason;
    EXPECT_TRUE(device.supports(small_valid_case(InsertOp::kKvOnly, f)).supported);
    EXPECT_TRUE(device.supports(small_valid_case(InsertOp::kLegacy, f)).supported);
  }
  EXPECT_TRUE(device.supports_kv_norm().supported) << "the standalone kv_norm is forwarded";
}

TEST(DeclaredSupportPlainInsertOnly, ABreakerThatAddsAKvNormWeightIsNotSentForItsCode) {
  const DeviceBackend device(KernelLibrary::open(KVC_DOUBLE_PLAIN_INSERT_ONLY));
  const InsertCase base = small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584);
  InsertCase broken = base;  // the rule matrix's NormWeightOf256
  broken.kv_norm_weight = make_tensor(DType::kBF16, {256});
  const Support s = device.declared().checks_breaker(base, broken, ErrorCode::kNormWeightInvalid);
  EXPECT_FALSE(s.supported);
  EXPECT_TRUE(contains(s.reason,
                       "does not implement kv_only_insert with kv_norm fused in front, which the broken "
                       "case asks for"))
      << s.reason;
  const DeviceBackend ours(KernelLibrary::builtin());
  EXPECT_TRUE(ours.declared().checks_breaker(base, broken, ErrorCode::kNormWeightInvalid).supported);
}

TEST(DeclaredSupportPlainInsertOnly, ALibraryBuiltAgainst11IsAskedThePlainInsertForAFusedCase) {
  const DeviceBackend device(KernelLibrary::open(KVC_DOUBLE_PLAIN_INSERT_ONLY_ABI11));
  ASSERT_EQ(device.library().abi_version(), 1001);
  // 1.1 has no fused query: the plain insert's answer (supported) is all the suite can know.
  EXPECT_TRUE(device.supports(fused(RecordFormat::kPacked584)).supported);
  EXPECT_TRUE(device.declared().of(KVC_OP_KV_ONLY_INSERT_KV_NORM, KVC_FORMAT_PACKED584, DType::kBF16).supported);
  // And its 1.2 fields, which ours fills in below it, are not read.
  EXPECT_EQ(device.declared().of(KVC_OP_KV_ONLY_INSERT, KVC_FORMAT_PACKED584, DType::kBF16).capabilities.validation,
            abi::ValidationDeclaration{});
}

TEST(DeclaredSupportPlainInsertDensePages, InsertCasesOutsideTheDeclaredGeometryNameTheLimit) {
  const DeviceBackend device(KernelLibrary::open(KVC_DOUBLE_PLAIN_INSERT_DENSE_PAGES));
  const abi::GeometryLimits& l =
      device.declared().of(KVC_OP_KV_ONLY_INSERT, KVC_FORMAT_PACKED584, DType::kBF16).capabilities.limits;
  EXPECT_EQ(l.page_stride, abi::PageStrideRule::kDense);
  EXPECT_EQ(l.block_sizes, std::vector<std::int64_t>({16, 64}));

  EXPECT_TRUE(device.supports(matrix_case(RecordFormat::kPacked584, 16, false)).supported);
  EXPECT_TRUE(device.supports(matrix_case(RecordFormat::kBf16_512, 64, false)).supported);
  const Support big = device.supports(matrix_case(RecordFormat::kPacked528, 256, false));
  EXPECT_FALSE(big.supported);
  EXPECT_TRUE(contains(big.reason,
                       "does not take this case: block size 256 is not listed (the library declares "
                       "block sizes 16 and 64 only)"))
      << big.reason;
  const Support padded = device.supports(matrix_case(RecordFormat::kPacked584, 16, true));
  EXPECT_FALSE(padded.supported);
  EXPECT_TRUE(contains(padded.reason, "the library declares exactly bs * 584 = 9344 B (dense pages)")) << padded.reason;
  // The limits are the KV-only insert's: the legacy op declares none.
  InsertCase legacy = cases::build_legacy(cases::ConformanceSpec{RecordFormat::kPacked584, 17, 256}, 0);
  EXPECT_TRUE(device.supports(legacy).supported) << device.supports(legacy).reason;
}

abi::GeometryLimits sglang_store_limits() {
  abi::GeometryLimits l;
  l.page_stride = abi::PageStrideRule::kAlignedUp;
  l.page_stride_align = 576;
  l.block_size = abi::BlockSizeRule::kPowerOfTwo;
  l.cache_ranks = {2};
  l.index_dtypes = {DType::kI32, DType::kI64};
  return l;
}

TEST(DeclaredSupportSglangStore, TheDeclarationDecodesAsPlanted) {
  const DeviceBackend device(KernelLibrary::open(KVC_DOUBLE_STORE_ONLY_SGLANG_GEOMETRY));
  EXPECT_NE(device.library().abi().kvc_store_rotated, nullptr);
  EXPECT_EQ(device.library().abi().kvc_stacked_ctx_kv, nullptr);
  const Declaration& d = device.declared().of(KVC_OP_STORE_ROTATED, KVC_FORMAT_PACKED584, DType::kBF16);
  ASSERT_TRUE(d.supported) << d.reason;
  EXPECT_EQ(d.capabilities.limits, sglang_store_limits());
  EXPECT_EQ(d.capabilities.validation.scope, abi::ValidationScope::kNone);
  EXPECT_EQ(d.profile, kvc::vllm_profile());
  EXPECT_FALSE(device.declared().of(KVC_OP_STORE_ROTATED, KVC_FORMAT_PACKED528, DType::kBF16).supported);
  for (RecordFormat f : kAllFormats) {
    const Support s = device.supports(small_valid_case(InsertOp::kKvOnly, f));
    EXPECT_FALSE(s.supported);
    EXPECT_TRUE(contains(s.reason, "implements SGLang's store op alone")) << s.reason;
  }
  EXPECT_FALSE(device.supports_kv_norm().supported);
}

TEST(DeclaredSupportSglangStore, StoreCasesOutsideTheGeometryNameTheLimit) {
  const DeviceBackend device(KernelLibrary::open(KVC_DOUBLE_STORE_ONLY_SGLANG_GEOMETRY));
  for (DType index : {DType::kI32, DType::kI64}) {
    const StoreCase sglang = small_valid_store_case(RecordFormat::kPacked584, StorePages::kSglangFlat, 1, index);
    EXPECT_TRUE(device.supports_store(sglang).supported) << device.supports_store(sglang).reason;
  }
  const auto reason = [&](const StoreCase& c) { return device.supports_store(c).reason; };
  EXPECT_TRUE(contains(reason(small_valid_store_case(RecordFormat::kPacked584, StorePages::kPagedView)),
                       "does not take this case: a 3-D cache: the library declares 2-D caches only"));
  StoreShape dense{RecordFormat::kPacked584, StorePages::kSglangFlat, 2, 16, 0, DType::kI64};
  StoreCase dense_case = make_store_case(dense, policy_edge_rows(2, 3), {0, 5});
  dense_case.cache.sizes = {2, 9344};
  dense_case.cache.strides = {9344, 1};
  EXPECT_TRUE(contains(reason(dense_case),
                       "page stride 9344 B: the library declares exactly ceil(bs * 584 / 576) * 576 = 9792 B"))
      << reason(dense_case);
  StoreShape bs48{RecordFormat::kPacked584, StorePages::kSglangFlat, 2, 48, 0, DType::kI32};
  EXPECT_TRUE(contains(reason(make_store_case(bs48, policy_edge_rows(2, 3), {0, 50})),
                       "block size 48 is not a power of two (the library declares powers of two only)"));
  EXPECT_TRUE(contains(reason(small_valid_store_case(RecordFormat::kPacked528, StorePages::kSglangFlat)),
                       "does not implement store_rotated for packed528"));
}

TEST(DeclaredSupportSglangStore, RuleBreakersItDoesNotEnforceAreNamed) {
  const DeviceBackend device(KernelLibrary::open(KVC_DOUBLE_STORE_ONLY_SGLANG_GEOMETRY));
  const StoreCase c = small_valid_store_case(RecordFormat::kPacked584, StorePages::kSglangFlat);
  const Support s = device.declared().checks_store_breaker(c, c, ErrorCode::kSlotOutOfRange);
  EXPECT_FALSE(s.supported);
  EXPECT_TRUE(contains(s.reason, "declares it does not enforce 203 (a slot lies beyond num_blocks * block_size)"))
      << s.reason;
}

TEST(DeclaredSupportPlainInsertDensePages, ABreakerOutsideTheDeclaredGeometryIsNotSentForItsCode) {
  const DeviceBackend device(KernelLibrary::open(KVC_DOUBLE_PLAIN_INSERT_DENSE_PAGES));
  const InsertCase base = matrix_case(RecordFormat::kPacked584, 16, false);
  ASSERT_TRUE(device.supports(base).supported);
  EXPECT_TRUE(device.declared().checks_breaker(base, base, ErrorCode::kSlotOutOfRange).supported)
      << "the library declares every code and the case lies inside its geometry";
  InsertCase broken = base;
  broken.block_size = 32;  // kBlockSizeMismatch, and a block size it does not list
  const Support s = device.declared().checks_breaker(base, broken, ErrorCode::kBlockSizeMismatch);
  EXPECT_FALSE(s.supported);
  EXPECT_TRUE(contains(s.reason, "does not take the broken case: block size 32 is not listed")) << s.reason;
}

TEST(DeclaredSupportSglangStore, TheStoreMatrixIsLaidOutInTheLibrarysOwnLayout) {
  const DeviceBackend device(KernelLibrary::open(KVC_DOUBLE_STORE_ONLY_SGLANG_GEOMETRY));
  const abi::GeometryLimits limits = sglang_store_limits();
  int laid_out = 0;
  for (const cases::ConformanceSpec& spec : cases::kernel_matrix(InsertOp::kKvOnly)) {
    if (spec.format != RecordFormat::kPacked584 || spec.tokens > 1025) continue;
    SCOPED_TRACE(spec.name());
    const StoreCase ours = oracle::store_case_of(cases::build_kv_only(spec, 0));
    EXPECT_FALSE(device.supports_store(ours).supported) << "our 3-D cache is outside its limits";
    const DeclaredStoreLayout theirs = in_declared_layout(ours, limits);
    ASSERT_TRUE(theirs.c.has_value()) << theirs.why_not;
    EXPECT_EQ(theirs.c->cache.rank(), 2);
    EXPECT_EQ(theirs.c->cache.stride(0), sglang_page_stride_bytes(RecordFormat::kPacked584, spec.block_size));
    EXPECT_EQ(theirs.c->indices.meta.dtype, DType::kI64) << "an allowed index dtype is kept";
    for (std::int64_t t = 0; t < ours.num_rows(); ++t) ASSERT_EQ(theirs.c->index(t), ours.index(t));
    EXPECT_TRUE(device.supports_store(*theirs.c).supported) << device.supports_store(*theirs.c).reason;
    ++laid_out;
  }
  EXPECT_GT(laid_out, 0);
  StoreShape bs48{RecordFormat::kPacked584, StorePages::kPagedView, 2, 48, 0, DType::kI64};
  const DeclaredStoreLayout none = in_declared_layout(make_store_case(bs48, policy_edge_rows(2, 3), {0, 50}), limits);
  EXPECT_FALSE(none.c.has_value());
  EXPECT_EQ(none.why_not, "block size 48 is not a power of two (the library declares powers of two only)");
  // A layout never changes a case already inside the limits.
  const StoreCase sglang = small_valid_store_case(RecordFormat::kPacked584, StorePages::kSglangFlat, 1, DType::kI32);
  const DeclaredStoreLayout same = in_declared_layout(sglang, limits);
  ASSERT_TRUE(same.c.has_value());
  EXPECT_EQ(same.c->cache.strides, sglang.cache.strides);
  EXPECT_EQ(same.c->indices.bytes, sglang.indices.bytes);
}

// ---- the doubles answer what they declare: 402 for a call outside it, before anything else ----
//
// Only calls outside the declarations are made: the tensors point at host memory no call reads (a
// call inside would be forwarded to our kernels and launched).

int store_call(const KernelLibrary& library, const StoreCase& c, std::string* message) {
  std::vector<std::uint8_t> never_read(64);
  const DeviceTensor rows(never_read.data(), c.rows.meta, 0), indices(never_read.data(), c.indices.meta, 0),
      cache(never_read.data(), c.cache, 0);
  const kvc_store_rotated_args a = store_rotated_args(c, rows.dl(), indices.dl(), cache.dl());
  char error[kAbiErrorCapacity] = {0};
  const int rc = library.abi().kvc_store_rotated(&a, nullptr, error, sizeof error);
  *message = error;
  return rc;
}

int kv_only_call(const KernelLibrary& library, const InsertCase& c, std::string* message) {
  std::vector<std::uint8_t> never_read(64);
  const DeviceTensor kv(never_read.data(), c.kv.meta, 0), slots(never_read.data(), c.slots.meta, 0),
      positions(never_read.data(), c.positions.meta, 0), cos_sin(never_read.data(), c.cos_sin.meta, 0),
      cache(never_read.data(), cache_meta(c.cache), 0), weight(never_read.data(), c.kv_norm_weight.meta, 0);
  InsertCallTensors t;
  t.kv = kv.dl();
  t.slot_mapping = slots.dl();
  t.position_ids = positions.dl();
  t.cos_sin_cache = cos_sin.dl();
  t.kv_cache = cache.dl();
  t.kv_norm_weight = c.kv_norm_weight.present ? weight.dl() : nullptr;
  const kvc_kv_only_insert_args a = kv_only_insert_args(c, t);
  char error[kAbiErrorCapacity] = {0};
  const int rc = library.abi().kvc_kv_only_insert(&a, nullptr, error, sizeof error);
  *message = error;
  return rc;
}

TEST(DeclaredSupportDoubles, StoreCallsTheSuiteSkipsAreAnswered402ByTheSglangDouble) {
  const DeviceBackend device(KernelLibrary::open(KVC_DOUBLE_STORE_ONLY_SGLANG_GEOMETRY));
  StoreCase dense = small_valid_store_case(RecordFormat::kPacked584, StorePages::kSglangFlat);
  dense.cache.sizes = {2, 9344};
  dense.cache.strides = {9344, 1};
  StoreShape bs48{RecordFormat::kPacked584, StorePages::kSglangFlat, 2, 48, 0, DType::kI32};
  const struct {
    const char* what;
    StoreCase c;
    const char* message;
  } outside[] = {
      {"our 3-D cache", small_valid_store_case(RecordFormat::kPacked584, StorePages::kPagedView), "a 3-D cache"},
      {"packed528", small_valid_store_case(RecordFormat::kPacked528, StorePages::kSglangFlat), "packed528"},
      {"a dense page", dense, "page stride 9344"},
      {"block size 48", make_store_case(bs48, policy_edge_rows(2, 3), {0, 50}), "block size 48"},
  };
  for (const auto& o : outside) {
    ASSERT_FALSE(device.supports_store(o.c).supported) << o.what << ": the suite must skip it";
    std::string message;
    EXPECT_EQ(store_call(device.library(), o.c, &message), KVC_STATUS_UNSUPPORTED) << o.what;
    EXPECT_TRUE(contains(message, o.message)) << o.what << ": " << message;
  }
  std::string message;
  EXPECT_EQ(kv_only_call(device.library(), small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584), &message),
            KVC_STATUS_UNSUPPORTED);
}

TEST(DeclaredSupportDoubles, FusedAndOffGeometryInsertCallsAreAnswered402) {
  const KernelLibrary plain = KernelLibrary::open(KVC_DOUBLE_PLAIN_INSERT_ONLY);
  std::string message;
  EXPECT_EQ(kv_only_call(plain, fused(RecordFormat::kPacked584), &message), KVC_STATUS_UNSUPPORTED);
  EXPECT_TRUE(contains(message, "no kv_norm fused in front")) << message;

  const DeviceBackend dense(KernelLibrary::open(KVC_DOUBLE_PLAIN_INSERT_DENSE_PAGES));
  for (const InsertCase& c :
       {matrix_case(RecordFormat::kPacked584, 16, true), matrix_case(RecordFormat::kFp8_512, 256, false)}) {
    ASSERT_FALSE(dense.supports(c).supported) << "the suite must skip it";
    EXPECT_EQ(kv_only_call(dense.library(), c, &message), KVC_STATUS_UNSUPPORTED);
    EXPECT_TRUE(contains(message, "dense pages of 16 or 64 tokens")) << message;
  }
}

TEST(DeclaredSupportStoreStub, ZeroedCapabilityFieldsDeclareNoLimits) {
  const DeviceBackend device(KernelLibrary::open(KVC_DOUBLE_STORE_ONLY_STUB));
  for (StorePages p : kAllStorePages)
    EXPECT_TRUE(device.supports_store(small_valid_store_case(RecordFormat::kPacked584, p)).supported);
}

}  // namespace
}  // namespace kvc::testkit
