// store_rotated_test.cpp (GPU): the store op of the kernel library (docs/contract.md §6.4)
// against the oracle, through the kernel ABI's optional entry point kvc_store_rotated.
//
// KernelMatrixStore: every packed scenario of the KV-only kernel matrix (the same token counts,
// block sizes and page strides as gpu_kv_insert_test), its rows rotated and rounded by the oracle
// (oracle::store_case_of) and stored twice: into the scenario's own cache with int64 indices, and
// into SGLang's 2-D cache [pages, ceil(record * bs / 576) * 576] with int32 indices. Each time the
// whole backing, canary included, is judged (testkit/compare/judge.h) against the oracle's store
// op under the profile the library declares (on a difference the policy report names the
// policies the bytes follow and any address error); guard zones are intact and inputs unchanged;
// a second run writes identical bytes. On the scenario's own cache the device's KV-only insert of
// the unrotated rows writes the same bytes as its store op (kv_only_insert == RoPE, then
// store_rotated, on the device).
//
// StoreRotatedAbi: every store validation rule rejected with its code and nothing written, by the
// host harness (ABI never called) and, for the rules a metadata-only wrapper can see, by the
// library itself; indices the wrapper cannot see (-1, -2^62, past the cache) skipped on the device
// without a stray byte; the profile every op declares through kvc_op_support (vllm for ours).
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <utility>

#include "testkit/device/gpu_test_support.h"
#include "testkit/cases/registry.h"
#include "kvc/profile.h"
#include "kvc/oracle/store_rotated.h"
#include "testkit/backends/backing.h"
#include "testkit/compare/policy_report.h"
#include "testkit/cases/small_cases.h"
#include "testkit/cases/store_cases.h"
#include "testkit/cases/test_name.h"

namespace kvc {
namespace {

std::vector<cases::ConformanceSpec> packed_kv_only_specs() {
  std::vector<cases::ConformanceSpec> specs;
  for (const cases::ConformanceSpec& s : cases::kernel_matrix(InsertOp::kKvOnly))
    if (is_packed(s.format)) specs.push_back(s);
  return specs;
}

// The store case on SGLang's 2-D cache of the same pages and block size, with int32 indices.
StoreCase on_sglang_cache(const StoreCase& ours) {
  StoreCase c = ours;
  const RecordFormat f = store_format(ours);
  const std::int64_t stride = sglang_page_stride_bytes(f, ours.block_size);
  c.cache.sizes = {ours.cache.size(0), stride};
  c.cache.strides = {stride, 1};
  c.cache.offset_bytes = 0;
  std::vector<std::int32_t> narrow(static_cast<std::size_t>(ours.num_rows()));
  for (std::int64_t t = 0; t < ours.num_rows(); ++t)
    narrow[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(ours.index(t));
  c.indices = make_tensor_from(DType::kI32, narrow, {ours.num_rows()});
  return c;
}

class KernelMatrixStore : public ::testing::TestWithParam<cases::ConformanceSpec> {};

TEST_P(KernelMatrixStore, BackingEqualsOracleOnBothCachesGuardsIntactDeterministicAndEqualsKvOnly) {
  KVC_REQUIRE_CUDA_DEVICE();
  const cases::ConformanceSpec& spec = GetParam();
  const InsertCase kv_only = cases::build_kv_only(spec, 0);
  testkit::DeviceBackend device = gpu::make_backend();
  const StoreCase ours = oracle::store_case_of(kv_only);
  const testkit::Support support = device.supports_store(ours);
  if (!support.supported) GTEST_SKIP() << support.reason;
  // The device's two ops can be compared when the library has both under one rotating profile.
  const bool compare_with_insert = device.supports(kv_only).supported &&
                                   device.declared_profile(kv_only) == device.declared_store_profile(ours) &&
                                   device.declared_store_profile(ours).rope == kvc::RopePolicy::kRotate;

  for (const StoreCase& c : {ours, on_sglang_cache(ours)}) {
    const std::string name = spec.name() + (c.cache.rank() == 2 ? " on SGLang's cache, int32 indices" : "");
    SCOPED_TRACE(name);
    const std::vector<std::uint8_t> initial = testkit::make_store_backing(c);
    std::vector<std::uint8_t> written = initial;
    const Status s = device.run_store(c, written);
    ASSERT_TRUE(gpu::clean(device));
    const testkit::Verdict v = gpu::judge(device, c, s, std::move(written));
    EXPECT_TRUE(gpu::passes(v, name));
    if (!v.passed()) continue;
    const std::vector<std::uint8_t>& first = v.actual.cache;
    std::vector<std::uint8_t> second = initial;
    ASSERT_TRUE(device.run_store(c, second).ok());
    EXPECT_TRUE(gpu::clean(device));
    EXPECT_TRUE(first == second) << name << ": two runs wrote different bytes";

    if (compare_with_insert && c.cache.rank() == 3) {  // the KV-only case's cache: the two ops agree
      InsertOutputs via_insert = testkit::make_outputs(kv_only);
      ASSERT_EQ(via_insert.cache.size(), first.size());
      ASSERT_TRUE(device.run(kv_only, via_insert).ok());
      ASSERT_TRUE(gpu::clean(device));
      EXPECT_TRUE(gpu::identical_runs(kv_only, InsertOutputs{via_insert.cache, {}}, InsertOutputs{first, {}},
                                      "KV-only insert", "store_rotated of the rotated rows"));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, KernelMatrixStore, ::testing::ValuesIn(packed_kv_only_specs()),
                         [](const ::testing::TestParamInfo<cases::ConformanceSpec>& p) { return p.param.name(); });

// ---- validation, skipped indices, the declared profile ------------------------------------------

using testkit::StoreRuleCell;

// Rules only the host sees (values, buffer sizes), and breakers a DLTensor cannot carry or that
// leave a required tensor out (the wrapper answers KVC_STATUS_BAD_ARGUMENT, not a rule's code).
const std::set<std::string>& host_only_breakers() {
  static const std::set<std::string> names = {"IndexAtCapacity", "DuplicateIndex",        "BackingShort",
                                              "RowsBytesShort",  "IndicesBytesShort",     "RowsMissing",
                                              "IndicesMissing",  "RowsMetadataMalformed", "CacheNegativeOffset"};
  return names;
}

class StoreRotatedAbi : public ::testing::TestWithParam<StoreRuleCell> {};

TEST_P(StoreRotatedAbi, RejectedWithItsCodeByTheHarnessAndByTheLibraryNothingWritten) {
  KVC_REQUIRE_CUDA_DEVICE();
  const StoreRuleCell& cell = GetParam();
  for (bool host_validation : {true, false}) {
    SCOPED_TRACE(host_validation ? "host validation" : "the library's own validation");
    if (!host_validation && host_only_breakers().count(cell.breaker->name)) continue;
    StoreCase c = testkit::small_valid_store_case(cell.format, cell.pages);
    std::vector<std::uint8_t> backing = testkit::make_store_backing(c);
    cell.breaker->apply(c, backing);
    testkit::DeviceBackendOptions options;
    options.host_validation = host_validation;
    testkit::DeviceBackend device = gpu::make_backend(options);
    if (!device.supports_store(testkit::small_valid_store_case(cell.format, cell.pages)).supported)
      GTEST_SKIP() << device.supports_store(testkit::small_valid_store_case(cell.format, cell.pages)).reason;
    const std::vector<std::uint8_t> before = backing;
    const Status s = device.run_store(c, backing);
    EXPECT_EQ(s.code, cell.breaker->code) << s.ToString();
    EXPECT_EQ(device.last_checks().abi_called, !host_validation);
    EXPECT_TRUE(gpu::clean(device));
    EXPECT_EQ(backing, before) << "a rejected call wrote into the cache";
  }
}

INSTANTIATE_TEST_SUITE_P(Breakers, StoreRotatedAbi, ::testing::ValuesIn(testkit::store_rule_matrix()),
                         testkit::ParamNamedBy<testkit::store_rule_cell_name>());

TEST(StoreRotatedDevice, IndicesTheWrapperCannotSeeAreSkippedOnTheDevice) {
  KVC_REQUIRE_CUDA_DEVICE();
  for (RecordFormat f : {RecordFormat::kPacked584, RecordFormat::kPacked528}) {
    SCOPED_TRACE(layout_of(f).name);
    testkit::StoreShape shape{f, testkit::StorePages::kSglangFlat, 2, 16, 0, DType::kI64};
    const std::int64_t capacity = 32;
    const std::vector<std::int64_t> wild = {3, -1, capacity, -(std::int64_t{1} << 62), 17, capacity + 1000};
    const StoreCase c = testkit::make_store_case(shape, testkit::policy_edge_rows(6, 7), wild);
    StoreCase skipped = c;  // what the device must write: the same rows with those indices at -1
    for (std::int64_t t = 0; t < c.num_rows(); ++t)
      if (c.index(t) < 0 || c.index(t) >= capacity) skipped.indices.store<std::int64_t>(t, -1);
    testkit::DeviceBackendOptions options;
    options.host_validation = false;
    testkit::DeviceBackend device = gpu::make_backend(options);
    if (!device.supports_store(skipped).supported) GTEST_SKIP() << device.supports_store(skipped).reason;
    std::vector<std::uint8_t> actual = testkit::make_store_backing(c);
    ASSERT_TRUE(device.run_store(c, actual).ok()) << "metadata is valid: the library must accept the call";
    // Stray writes are never excused by a profile (docs/contract.md §6.3): name the row behind each.
    std::vector<std::int64_t> slots;
    for (std::int64_t t = 0; t < c.num_rows(); ++t) slots.push_back(c.index(t));
    for (const testkit::BufferDamage& d : device.last_checks().damage)  // offsets into the backing
      for (const testkit::AddressCulprit& culprit : testkit::address_culprits(oracle::store_view(c), slots, {d.offset}))
        ADD_FAILURE() << d.to_string() << ": row " << culprit.row << " (index " << culprit.slot << ") addressed by "
                      << culprit.arithmetic << " as page " << culprit.page << " token " << culprit.token;
    EXPECT_TRUE(gpu::clean(device)) << "a skipped index wrote outside the cache";
    EXPECT_TRUE(gpu::passes(gpu::judge(device, skipped, Status::Ok(), std::move(actual)), "wild indices"));
  }
}

TEST(StoreRotatedAbi, EveryOpDeclaresItsProfile) {
  // Host code only (kvc_op_support_get): runs without a device too.
  const testkit::DeviceBackend device(gpu::kernel_library());
  std::printf("%s declares, per op and format:\n", device.name().c_str());
  for (InsertOp op : {InsertOp::kKvOnly, InsertOp::kLegacy})
    for (RecordFormat f : kAllFormats) {
      const InsertCase c = testkit::small_valid_case(op, f);
      const kvc::Profile p = device.declared_profile(c);
      std::printf("  %s %s: %s\n", op == InsertOp::kLegacy ? "legacy_insert" : "kv_only_insert",
                  std::string(layout_of(f).name).c_str(), kvc::profile_name(p).c_str());
      if (device.library().name().rfind("kvconform-kernels", 0) == 0) {
        EXPECT_EQ(p, kvc::vllm_profile()) << "our kernels implement the contract";
      }
    }
  for (RecordFormat f : {RecordFormat::kPacked584, RecordFormat::kPacked528}) {
    const StoreCase c = testkit::small_valid_store_case(f, testkit::StorePages::kSglangFlat);
    const testkit::Support s = device.supports_store(c);
    const kvc::Profile p = device.declared_store_profile(c);
    std::printf("  store_rotated %s: %s (%s)\n", std::string(layout_of(f).name).c_str(), kvc::profile_name(p).c_str(),
                s.supported ? "supported" : s.reason.c_str());
    if (device.library().name().rfind("kvconform-kernels", 0) == 0) {
      EXPECT_TRUE(s.supported) << s.reason;
      EXPECT_EQ(p, kvc::vllm_profile());
    }
  }
}

}  // namespace
}  // namespace kvc
