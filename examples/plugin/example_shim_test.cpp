// example_shim_test.cpp (GPU): the example shim loaded the way KVC_KERNELS loads any library, and
// run through the device backend: it names itself, declares the legacy op unsupported (those
// cases are skipped with its reason), and its KV-only insert and kv_norm equal the oracle.
// Catches a shim that does not export the ABI, that forwards the wrong pointers (byte_offset,
// strides), or that launches for a call its validation should reject.
#include <gtest/gtest.h>

#include <utility>

#include "testkit/device/gpu_test_support.h"
#include "testkit/cases/registry.h"
#include "testkit/backends/backing.h"
#include "testkit/cases/case_builder.h"
#include "testkit/cases/rule_breakers.h"
#include "testkit/cases/small_cases.h"

namespace kvc {
namespace {

testkit::DeviceBackend shim_backend() { return gpu::make_backend(testkit::KernelLibrary::open(KVC_EXAMPLE_SHIM)); }

TEST(ExampleShim, LoadsAndDeclaresWhatItImplements) {
  const testkit::DeviceBackend shim = shim_backend();
  EXPECT_NE(shim.name().find("example shim"), std::string::npos) << shim.name();
  const testkit::Support legacy = shim.supports(testkit::small_valid_case(InsertOp::kLegacy, RecordFormat::kPacked584));
  EXPECT_FALSE(legacy.supported);
  EXPECT_NE(legacy.reason.find("example shim"), std::string::npos) << legacy.reason;
  for (RecordFormat f : kAllFormats)
    EXPECT_TRUE(shim.supports(testkit::small_valid_case(InsertOp::kKvOnly, f)).supported);
}

TEST(ExampleShim, KvOnlyInsertEqualsOracleInEveryFormat) {
  KVC_REQUIRE_CUDA_DEVICE();
  testkit::DeviceBackend shim = shim_backend();
  for (RecordFormat f : kAllFormats) {
    cases::ConformanceSpec spec{f, kTokenCutoff + 1, 64};
    spec.values = cases::KvValues::kWideRange;
    const InsertCase c = cases::build_kv_only(spec, 0);
    InsertOutputs out = testkit::make_outputs(c);
    const Status s = shim.run(c, out);
    EXPECT_TRUE(gpu::clean(shim));
    EXPECT_TRUE(gpu::passes(gpu::judge(shim, c, s, std::move(out)), spec.name()));
  }
}

TEST(ExampleShim, KvNormEqualsOracle) {
  KVC_REQUIRE_CUDA_DEVICE();
  testkit::DeviceBackend shim = shim_backend();
  testkit::Rng rng(5);
  gpu::expect_kv_norm_equals_oracle(shim, rng, 100);
}

TEST(ExampleShim, RejectsAMetadataRuleWithItsCodeAndWritesNothing) {
  KVC_REQUIRE_CUDA_DEVICE();
  gpu::expect_rejects_misaligned_cache(testkit::KernelLibrary::open(KVC_EXAMPLE_SHIM), InsertOp::kKvOnly);
}

}  // namespace
}  // namespace kvc
