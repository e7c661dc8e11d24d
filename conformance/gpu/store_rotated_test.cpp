// store_rotated_test.cpp (GPU): the store op of the kernel library (docs/contract.md §6.4)
// against the oracle, through the kernel ABI's optional entry point kvc_store_rotated.
//
// KernelMatrixStore: every packed scenario of the KV-only kernel matrix (the same token counts,
// block sizes and page strides as gpu_kv_insert_test), its rows rotated and rounded by the oracle
// (oracle::store_case_of) and stored twice: into the scenario's own cache with int64 indices, and
// into SGLang's 2-D cache [pages, ceil(record * bs / 576) * 576] with int32 indices, each laid out
// in the geometry the library declares where the contract allows it (declared_store_layout.h: a
// library that declares SGLang's geometry gets both sets of rows on SGLang's cache); a layout the
// declared limits leave no room for (a block size) is skipped naming the limit. Each time the
// whole backing, canary included, is judged (testkit/compare/judge.h) against the oracle's store
// op under the profile the library declares (on a difference the policy report names the policies the bytes follow and
// any address error); guard zones are intact and inputs unchanged; a second run writes identical bytes. A library that
// refuses a case inside its declared support (402) fails with its message. On the scenario's own cache the device's
// KV-only insert of the unrotated rows writes the same bytes as its store op (kv_only_insert == RoPE, then
// store_rotated, on the device).
//
// StoreRotatedAbi: every store validation rule rejected with its code and nothing written, by the
// host harness (ABI never called) and, for the rules a metadata-only wrapper can see, by the
// library itself, unless it declares it does not enforce the rule; indices the wrapper cannot see
// (-1, -2^62, past the cache) skipped on the device without a stray byte (unless the library
// declares it does not enforce 203); the profile and capabilities every op declares through
// kvc_op_support (vllm, no limits and every code for ours).
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>
#include <utility>

#include "testkit/device/gpu_test_support.h"
#include "kvc/abi/enum_mapping.h"
#include "testkit/cases/registry.h"
#include "kvc/profile.h"
#include "kvc/oracle/store_rotated.h"
#include "testkit/backends/backing.h"
#include "testkit/compare/policy_report.h"
#include "testkit/cases/declared_store_layout.h"
#include "testkit/device/store_target.h"
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

// run_store of a valid case: accepted, or a failure carrying the status, or the library's
// message when it refused the call (402 for a case inside its declared support, 401, 403).
::testing::AssertionResult stored(testkit::DeviceBackend& device, const StoreCase& c,
                                  std::vector<std::uint8_t>& backing) {
  try {
    const Status s = device.run_store(c, backing);
    if (!s.ok()) return ::testing::AssertionFailure() << "a valid store case was rejected: " << s.ToString();
  } catch (const testkit::KernelCallError& e) {
    return ::testing::AssertionFailure() << "the library refused a case inside its declared support: " << e.what();
  }
  return ::testing::AssertionSuccess();
}

// A store case of the scenario, in the library's declared layout, and what to call it.
struct NamedStoreCase {
  StoreCase c;
  std::string name;
  bool scenario_cache;  // the KV-only scenario's own cache, unchanged: the insert writes the same backing
};

class KernelMatrixStore : public ::testing::TestWithParam<cases::ConformanceSpec> {};

TEST_P(KernelMatrixStore, BackingEqualsOracleOnBothCachesGuardsIntactDeterministicAndEqualsKvOnly) {
  KVC_REQUIRE_CUDA_DEVICE();
  const cases::ConformanceSpec& spec = GetParam();
  const InsertCase kv_only = cases::build_kv_only(spec, 0);
  testkit::DeviceBackend device = gpu::make_backend();
  const StoreCase ours = oracle::store_case_of(kv_only);
  // The entry point, the format and the declared geometry (testkit/device/store_target.h), for our
  // cache and for SGLang's 2-D one.
  std::vector<NamedStoreCase> targets;
  std::string outside;
  for (const StoreCase& c : {ours, on_sglang_cache(ours)}) {
    const std::string cache = c.cache.rank() == 2 ? " on SGLang's cache, int32 indices" : "";
    const testkit::StoreTarget t = testkit::store_target(device, c);
    if (t.outcome == testkit::StoreTargetOutcome::kNotDeclared) GTEST_SKIP() << t.why_not;
    if (t.outcome == testkit::StoreTargetOutcome::kOutsideLimits) {
      outside += "\n  " + spec.name() + cache + ": " + t.why_not;
      continue;
    }
    const std::string layout =
        t.relaid ? " in the library's layout (" + testkit::store_layout_name(*t.c) + ")" : std::string();
    ASSERT_EQ(t.outcome, testkit::StoreTargetOutcome::kSend)
        << spec.name() << cache << layout << ": a layout inside the declared limits must be supported: " << t.why_not;
    targets.push_back({*t.c, spec.name() + cache + layout, c.cache.rank() == 3 && !t.relaid});
  }
  if (targets.empty()) GTEST_SKIP() << device.library().name() << " does not take these cases:" << outside;
  if (!outside.empty()) std::printf("skipped, outside the declared geometry:%s\n", outside.c_str());
  // The device's two ops can be compared when the library has both under one rotating profile.
  const bool compare_with_insert = device.supports(kv_only).supported &&
                                   device.declared_profile(kv_only) == device.declared_store_profile(ours) &&
                                   device.declared_store_profile(ours).rope == kvc::RopePolicy::kRotate;

  for (const NamedStoreCase& target : targets) {
    const StoreCase& c = target.c;
    SCOPED_TRACE(target.name);
    const std::vector<std::uint8_t> initial = testkit::make_store_backing(c);
    std::vector<std::uint8_t> written = initial;
    ASSERT_TRUE(stored(device, c, written));
    ASSERT_TRUE(gpu::clean(device));
    const testkit::Verdict v = gpu::judge(device, c, Status::Ok(), std::move(written));
    EXPECT_TRUE(gpu::passes(v, target.name));
    if (!v.passed()) continue;
    const std::vector<std::uint8_t>& first = v.actual.cache;
    std::vector<std::uint8_t> second = initial;
    ASSERT_TRUE(stored(device, c, second));
    EXPECT_TRUE(gpu::clean(device));
    EXPECT_TRUE(first == second) << target.name << ": two runs wrote different bytes";

    if (compare_with_insert && target.scenario_cache) {  // the KV-only case's cache: the two ops agree
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
  const StoreCase base = testkit::small_valid_store_case(cell.format, cell.pages);
  {
    const testkit::DeviceBackend probe = gpu::make_backend();
    if (const testkit::Support s = probe.supports_store(base); !s.supported) GTEST_SKIP() << s.reason;
  }
  for (bool host_validation : {true, false}) {
    SCOPED_TRACE(host_validation ? "host validation" : "the library's own validation");
    if (!host_validation && host_only_breakers().count(cell.breaker->name)) continue;
    StoreCase c = base;
    std::vector<std::uint8_t> backing = testkit::make_store_backing(c);
    cell.breaker->apply(c, backing);
    testkit::DeviceBackendOptions options;
    options.host_validation = host_validation;
    testkit::DeviceBackend device = gpu::make_backend(options);
    // Last in the loop: the harness half above has been checked either way.
    if (!host_validation)
      if (const testkit::Support s = device.declared().checks_store_breaker(base, c, cell.breaker->code); !s.supported)
        GTEST_SKIP() << s.reason;
    const std::vector<std::uint8_t> before = backing;
    Status s;
    try {
      s = device.run_store(c, backing);
    } catch (const testkit::KernelCallError& e) {
      ADD_FAILURE() << "the library must answer E" << static_cast<int>(cell.breaker->code) << ": " << e.what();
    }
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
    // An index past the capacity breaks 203: only a library that enforces it must survive it.
    if (const testkit::Support s = device.declared().checks_store_breaker(skipped, c, ErrorCode::kSlotOutOfRange);
        !s.supported)
      GTEST_SKIP() << s.reason;
    const std::vector<std::uint8_t> initial = testkit::make_store_backing(c);
    std::vector<std::uint8_t> actual = initial;
    ASSERT_TRUE(stored(device, c, actual)) << "metadata is valid: the library must accept the call";
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

// "no limits, every validation code", or what the declaration limits and leaves unenforced.
std::string capabilities_text(const abi::Capabilities& c) {
  std::vector<std::string> parts;
  const abi::GeometryLimits& l = c.limits;
  if (l.page_stride == abi::PageStrideRule::kAlignedUp)
    parts.push_back("page stride aligned up to " + std::to_string(l.page_stride_align) + " B");
  if (l.page_stride == abi::PageStrideRule::kDense) parts.push_back("dense pages");
  if (l.block_size == abi::BlockSizeRule::kPowerOfTwo) parts.push_back("power-of-two block sizes");
  if (l.block_size == abi::BlockSizeRule::kListed)
    parts.push_back(std::to_string(l.block_sizes.size()) + " listed block sizes");
  for (int r : l.cache_ranks) parts.push_back(std::to_string(r) + "-D caches");
  for (DType t : l.index_dtypes) parts.push_back(std::string(abi::index_dtype_name(t)) + " indices");
  if (c.validation.scope == abi::ValidationScope::kNone) parts.push_back("validates nothing");
  if (c.validation.scope == abi::ValidationScope::kListed)
    parts.push_back("enforces " + std::to_string(c.validation.enforced.size()) + " listed codes");
  if (parts.empty()) return " no limits, every validation code";
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? " " : ", ") + p;
  return s;
}

TEST(StoreRotatedAbi, EveryOpDeclaresItsProfile) {
  // Host code only (kvc_op_support_get): runs without a device too.
  const testkit::DeviceBackend device(gpu::kernel_library());
  const bool ours = device.library().name().rfind("kvconform-kernels", 0) == 0;
  std::printf("%s declares, per op and format:\n", device.name().c_str());
  for (std::int32_t op : {KVC_OP_KV_ONLY_INSERT, KVC_OP_KV_ONLY_INSERT_KV_NORM, KVC_OP_LEGACY_INSERT})
    for (RecordFormat f : kAllFormats) {
      const testkit::Declaration& d = device.declared().of(op, abi::abi_format(f), DType::kBF16);
      std::printf("  %s %s: %s\n", testkit::DeclaredSupport::op_name(op).c_str(),
                  std::string(layout_of(f).name).c_str(),
                  d.supported ? (kvc::profile_name(d.profile) + ";" + capabilities_text(d.capabilities)).c_str()
                              : ("unsupported: " + d.reason).c_str());
      if (ours) {
        EXPECT_TRUE(d.supported) << "our kernels implement every insert, the fused kv_norm included: " << d.reason;
        EXPECT_EQ(d.profile, kvc::vllm_profile()) << "our kernels implement the contract";
        EXPECT_EQ(d.capabilities.limits, abi::GeometryLimits{}) << "our kernels take every geometry";
        EXPECT_EQ(d.capabilities.validation.scope, abi::ValidationScope::kAll);
      }
    }
  for (RecordFormat f : {RecordFormat::kPacked584, RecordFormat::kPacked528}) {
    const StoreCase c = testkit::small_valid_store_case(f, testkit::StorePages::kSglangFlat);
    const testkit::Support s = device.supports_store(c);
    const kvc::Profile p = device.declared_store_profile(c);
    const testkit::Declaration& d = *device.declared().declaration_of(c);
    std::printf("  store_rotated %s: %s (%s)%s\n", std::string(layout_of(f).name).c_str(), kvc::profile_name(p).c_str(),
                s.supported ? "supported" : s.reason.c_str(),
                d.supported ? capabilities_text(d.capabilities).c_str() : "");
    if (ours) {
      EXPECT_TRUE(s.supported) << s.reason;
      EXPECT_EQ(p, kvc::vllm_profile());
      EXPECT_EQ(d.capabilities.limits, abi::GeometryLimits{});
      EXPECT_EQ(d.capabilities.validation.scope, abi::ValidationScope::kAll);
    }
  }
}

}  // namespace
}  // namespace kvc
