// oracle_behind_abi_test.cpp: what the oracle-behind-the-ABI doubles (testkit/doubles/
// oracle_behind_abi.cpp) declare, read through the loader and the device backend with no GPU, so
// that CI checks it: the KV-only insert (with and without kv_norm) in every format and the store op
// in the packed ones, the rest unsupported with the double's reason, and each build's profile
// (`sglang-store`, `vllm`) for every op. Catches a double whose declaration would make the GPU
// agreement test (judge_agreement_device_test) judge it under the wrong profile or skip its cases.
#include <gtest/gtest.h>

#include <string>

#include "kvc/profile.h"
#include "testkit/cases/small_cases.h"
#include "testkit/cases/store_cases.h"
#include "testkit/device/device_backend.h"

namespace kvc::testkit {
namespace {

void expect_declares(const char* path, const kvc::Profile& declared) {
  SCOPED_TRACE(path);
  const DeviceBackend device(KernelLibrary::open(path));
  EXPECT_NE(device.name().find("oracle behind the ABI"), std::string::npos) << device.name();
  for (RecordFormat f : kAllFormats) {
    InsertCase c = small_valid_case(InsertOp::kKvOnly, f);
    EXPECT_TRUE(device.supports(c).supported) << device.supports(c).reason;
    EXPECT_EQ(device.declared_profile(c), declared) << kvc::profile_name(device.declared_profile(c));
    c.kv_norm_weight = make_tensor(DType::kBF16, {kHeadDim});
    EXPECT_TRUE(device.supports(c).supported) << "fused kv_norm: " << device.supports(c).reason;
    const Support legacy = device.supports(small_valid_case(InsertOp::kLegacy, f));
    EXPECT_FALSE(legacy.supported);
    EXPECT_NE(legacy.reason.find("the oracle behind the ABI implements"), std::string::npos) << legacy.reason;
  }
  for (RecordFormat f : {RecordFormat::kPacked584, RecordFormat::kPacked528}) {
    const StoreCase c = small_valid_store_case(f, StorePages::kSglangFlat);
    EXPECT_TRUE(device.supports_store(c).supported) << device.supports_store(c).reason;
    EXPECT_EQ(device.declared_store_profile(c), declared);
  }
  EXPECT_FALSE(device.supports_kv_norm().supported);
}

TEST(OracleBehindAbi, DeclaresSglangStoreForEveryOpItImplements) {
  expect_declares(KVC_ORACLE_DECLARES_SGLANG_STORE, kvc::sglang_store_profile());
}

TEST(OracleBehindAbi, TheMislabelledBuildDeclaresVllm) {
  expect_declares(KVC_ORACLE_DECLARES_VLLM, kvc::vllm_profile());
}

}  // namespace
}  // namespace kvc::testkit
