// kernel_library_test.cpp: loading kernel libraries (builtin, dlopen, KVC_KERNELS) and refusing
// bad ones with a message that says what is wrong. Needs no GPU (nothing is launched).
//
// Catches: a loader that accepts a library of another ABI major (its structs may differ: memory
// corruption at the first call), one that crashes or reports a bare dlerror on a missing symbol,
// KVC_KERNELS being ignored, and our shared library not exporting the ABI.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "testkit/device/kernel_library.h"

namespace kvc::testkit {
namespace {

std::string load_error(const std::string& path) {
  try {
    KernelLibrary::open(path);
  } catch (const KernelLibraryError& e) {
    return e.what();
  }
  return {};
}

TEST(KernelLibrary, BuiltinSpeaksThisAbi) {
  const KernelLibrary lib = KernelLibrary::builtin();
  EXPECT_EQ(lib.abi_version() / 1000, KVC_KERNEL_ABI_VERSION_MAJOR);
  EXPECT_FALSE(lib.name().empty());
  EXPECT_EQ(lib.origin(), "builtin");
  std::printf("%s\n", lib.describe().c_str());
}

TEST(KernelLibrary, SharedLibraryLoadsThroughDlopenAndIsOurs) {
  const KernelLibrary lib = KernelLibrary::open(KVC_SHARED_KERNELS);
  EXPECT_EQ(lib.name(), KernelLibrary::builtin().name());
  EXPECT_EQ(lib.origin(), KVC_SHARED_KERNELS);
  EXPECT_NE(lib.abi().kvc_kv_only_insert, KernelLibrary::builtin().abi().kvc_kv_only_insert)
      << "dlopen must give the shared object's own entry points (RTLD_LOCAL), not the program's";
}

TEST(KernelLibrary, MissingFileNamesThePathAndTheVariable) {
  const std::string e = load_error("/nonexistent/libkernels.so");
  EXPECT_NE(e.find("/nonexistent/libkernels.so"), std::string::npos) << e;
  EXPECT_NE(e.find(kKernelLibraryEnv), std::string::npos) << e;
}

TEST(KernelLibrary, MissingSymbolIsNamed) {
  const std::string e = load_error(KVC_FAKE_MISSING_KV_NORM);
  EXPECT_NE(e.find("kvc_kv_norm"), std::string::npos) << e;
  EXPECT_EQ(e.find("kvc_kv_only_insert"), std::string::npos) << "only missing symbols are listed: " << e;
}

TEST(KernelLibrary, AnotherAbiMajorIsRefusedNamingBothVersions) {
  const std::string e = load_error(KVC_FAKE_ABI_MAJOR2);
  EXPECT_NE(e.find("ABI 2.0"), std::string::npos) << e;
  EXPECT_NE(e.find("ABI " + std::to_string(KVC_KERNEL_ABI_VERSION_MAJOR) + "."), std::string::npos) << e;
}

TEST(KernelLibrary, EnvironmentSelectsTheLibrary) {
  ASSERT_EQ(setenv(kKernelLibraryEnv, KVC_SHARED_KERNELS, 1), 0);
  EXPECT_EQ(KernelLibrary::from_environment().origin(), KVC_SHARED_KERNELS);
  ASSERT_EQ(setenv(kKernelLibraryEnv, "", 1), 0);
  EXPECT_EQ(KernelLibrary::from_environment().origin(), "builtin") << "an empty KVC_KERNELS means our kernels";
  ASSERT_EQ(unsetenv(kKernelLibraryEnv), 0);
  EXPECT_EQ(KernelLibrary::from_environment().origin(), "builtin");
}

}  // namespace
}  // namespace kvc::testkit
