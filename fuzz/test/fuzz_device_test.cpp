// fuzz_device_test.cpp (GPU, fuzz): the fuzz properties with the kernel library as the backend
// under test (KVC_KERNELS=path.so, or our kernels).
//
// DeviceDifferential: generated problems up to 65536 tokens (every format and op, edge values,
// odd block sizes, padding, skipped slots), each run on the device and on the oracle, byte for
// byte; a failure shrinks to a minimal problem, printed and written as a replayable case file.
// DeviceProperty: every other property that runs the backend (metamorphic claims: permutation,
// split batches, idempotence, locality, ...) with the device as the backend.
// Damage to device memory (guard zones, inputs) fails the property like a wrong byte, and shrinks
// the same way. KVC_FUZZ_SEED and KVC_FUZZ_CASES override the seed and the number of cases; each
// run prints its throughput in cases per second.
#include <gtest/gtest.h>

#include <rapidcheck.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>

#include "testkit/device/gpu_test_support.h"
#include "kvc/fuzz/campaign.h"
#include "testkit/backends/forwarding_backend.h"
#include "testkit/cases/test_name.h"
#include "testkit/io/case_file.h"

namespace kvc::fuzz {
namespace {

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : fallback;
}

// The device backend as a property sees it: cases the library does not implement are discarded
// (not counted as passed), and an exception (device memory damaged, a CUDA error) becomes a
// property failure, so RapidCheck shrinks it; the last case that threw is kept, which after
// shrinking is the minimal one.
class DeviceUnderFuzz final : public testkit::ForwardingBackend {
 public:
  explicit DeviceUnderFuzz(testkit::DeviceBackend& device) : ForwardingBackend(device) {}
  Status run(const InsertCase& c, InsertOutputs& out) override {
    if (const testkit::Support s = inner().supports(c); !s.supported) {
      ++discarded;
      unsupported_reason = s.reason;
      RC_DISCARD(s.reason);
    }
    try {
      return inner().run(c, out);
    } catch (const std::exception& e) {
      last_thrown = PropertyInput{c, 0};
      RC_FAIL(std::string("device run threw: ") + e.what());
    }
  }

  std::optional<PropertyInput> last_thrown;
  std::int64_t discarded = 0;
  std::string unsupported_reason;
};

// `ctest_regex` selects this test again, for the reproduce line.
void run_on_device(PropertySpec p, RunConfig config, const std::string& ctest_regex) {
  testkit::DeviceBackend device(gpu::kernel_library());  // damage throws: the adapter turns it into a failure
  DeviceUnderFuzz sut(device);
  const PropertyOutcome o = run_property(p, sut, config);
  std::printf("%s on %s: %d cases in %.2f s (%.1f cases/s), up to %lld tokens, seed %llu\n", p.name.c_str(),
              device.name().c_str(), o.cases, o.seconds, o.seconds > 0 ? o.cases / o.seconds : 0.0,
              static_cast<long long>(p.generation.max_tokens), static_cast<unsigned long long>(config.seed));
  for (const auto& [cls, n] : o.coverage) std::printf("  %-28s %lld\n", cls.c_str(), static_cast<long long>(n));
  if (!o.not_applicable.empty()) GTEST_SKIP() << "the library's declared profile: " << o.not_applicable;
  if (!o.passed && o.cases == 0 && sut.discarded > 0 && !o.failure && !sut.last_thrown)
    GTEST_SKIP() << "the library implements none of the cases this property generates: " << sut.unsupported_reason;
  if (!o.passed) {
    const std::optional<PropertyInput> minimal =
        o.failure ? std::optional<PropertyInput>(o.failure->input) : sut.last_thrown;
    std::string where;
    if (minimal) {
      const std::string path = "fuzz-device-failure-" + p.name + ".json";
      testkit::write_json_file(path, testkit::case_to_json(minimal->c, device.declared_profile(minimal->c)));
      std::ostringstream summary;
      summary << *minimal;
      where = "\nminimal problem: " + summary.str() + "\ncase written to " + path;
    }
    FAIL() << (o.failure ? o.failure->message : o.message) << where << "\nreproduce: KVC_FUZZ_SEED=" << config.seed
           << " ctest --test-dir build/default -R '" << ctest_regex << "'";
  }
  EXPECT_TRUE(o.missing_classes.empty()) << "required classes never generated: "
                                         << ::testing::PrintToString(o.missing_classes);
}

TEST(DeviceDifferential, KernelsEqualOracleUpTo65536Tokens) {
  KVC_REQUIRE_CUDA_DEVICE();
  PropertySpec p = *find_property("differential");
  p.generation.max_tokens = 65536;
  RunConfig config;
  config.seed = env_or("KVC_FUZZ_SEED", 20261201);
  config.cases = static_cast<int>(env_or("KVC_FUZZ_CASES", 120));
  config.max_size = 100;  // the full token range: sizes grow to max_tokens over the run
  run_on_device(p, config, "DeviceDifferential");
}

// Properties that do not run the backend (the decoder's totality) gain nothing on the device.
std::vector<std::string> device_property_names() {
  std::vector<std::string> v;
  for (const PropertySpec& p : all_properties())
    if (p.name != "differential" && p.name != "decoder-total") v.push_back(p.name);
  return v;
}

class DeviceProperty : public ::testing::TestWithParam<std::string> {};

TEST_P(DeviceProperty, HoldsForTheKernelLibrary) {
  KVC_REQUIRE_CUDA_DEVICE();
  RunConfig config;
  config.seed = env_or("KVC_FUZZ_SEED", 20261129);
  config.cases = static_cast<int>(env_or("KVC_FUZZ_CASES", 120));
  config.max_size = 40;  // up to ~1600 tokens, as the CPU pass
  // The test's name spells the property with '_'.
  run_on_device(*find_property(GetParam()), config,
                "DeviceProperty.*/" + testkit::dashes_to_underscores(GetParam()) + "$");
}

INSTANTIATE_TEST_SUITE_P(Fuzz, DeviceProperty, ::testing::ValuesIn(device_property_names()),
                         testkit::DashedParamName());

}  // namespace
}  // namespace kvc::fuzz
