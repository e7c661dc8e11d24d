// gpu_golden_test.cpp (GPU, labels gpu and golden): the kernel library under test reproduces
// every frozen fixture.
//
// Each fixture's case runs through the kernel ABI (testkit::DeviceBackend over the library that
// KVC_KERNELS names, else ours), with the harness's guard zones and input checks, and the whole
// backing and q_out must equal the frozen bytes. Because the fixtures come from an independent
// generator, this catches a kernel change that moves a byte even when the oracle moved with it.
// Without a CUDA device every case is skipped with the reason; a case the library does not
// implement, or judges under another profile or the approximate rsqrt, is skipped with the
// library's reason.
#include <gtest/gtest.h>

#include <filesystem>

#include "testkit/device/gpu_test_support.h"
#include "kvc/golden/fixture.h"
#include "kvc/golden/fixture_check.h"

namespace kvc {
namespace {

std::vector<std::string> manifests() { return golden::fixture_manifests(KVC_GOLDEN_FIXTURE_DIR); }

class KernelReproducesFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(KernelReproducesFixture, Bytes) {
  KVC_REQUIRE_CUDA_DEVICE();
  const golden::Fixture f = golden::load_fixture(GetParam());
  testkit::DeviceBackend device = gpu::make_backend();
  const golden::FixtureCheck check = golden::check_fixture(f, device);
  if (check.verdict == golden::Verdict::kSkipped) GTEST_SKIP() << check.report;
  EXPECT_EQ(check.verdict, golden::Verdict::kReproduced) << f.name << " (" << f.description << ")\n" << check.report;
  EXPECT_TRUE(gpu::clean(device));
}

INSTANTIATE_TEST_SUITE_P(Golden, KernelReproducesFixture, ::testing::ValuesIn(manifests()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string s = std::filesystem::path(p.param).stem().string();
                           for (char& ch : s)
                             if (ch == '.') ch = '_';
                           return s;
                         });

TEST(GpuGoldenFixtures, DirectoryIsNotEmpty) {
  EXPECT_FALSE(manifests().empty()) << "no fixtures in " << KVC_GOLDEN_FIXTURE_DIR
                                    << ": the GPU golden suite ran nothing";
}

}  // namespace
}  // namespace kvc
