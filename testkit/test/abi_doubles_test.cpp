// abi_doubles_test.cpp: the test doubles of testkit/doubles/ load as any kernel library does and
// declare what they plant. Needs no GPU (nothing is launched).
//
// Each double must load through KernelLibrary::open (every ABI symbol exported, ABI major 1), name
// itself a test double after what it plants, declare our kernels' support and profile for every
// op, format and kv dtype (it wraps them), and declare the validation scope its plant calls for:
// KVC_VALIDATION_NONE for the inserts of writes_past_end and reads_outside_cos_sin (their planted
// writes answer calls a validating library would refuse), the contract's (ALL) everywhere else.
// Calls our kernels reject without a device (NULL arguments) come back as ours answer them.
// Catches: a double that fails to load or to forward, that declares a support or profile of its
// own (the suites would compare it under the wrong policies), or whose scope the probe cannot see.
#include <gtest/gtest.h>

#include <string>

#include "kvc/abi/dl_dtype.h"
#include "testkit/device/kernel_library.h"

namespace kvc::testkit {
namespace {

struct Double {
  const char* name;
  const char* path;
  bool insert_validation_none;
};

const Double kDoubles[] = {{"writes_past_end", KVC_DOUBLE_WRITES_PAST_END, true},
                           {"reads_outside_cos_sin", KVC_DOUBLE_READS_OUTSIDE_COS_SIN, true},
                           {"zero_block_launch", KVC_DOUBLE_ZERO_BLOCK_LAUNCH, false}};

kvc_op_support support(const KernelLibrary& lib, std::int32_t op, std::int32_t format, DType dtype) {
  kvc_op_support s{};
  s.struct_size = sizeof s;
  EXPECT_EQ(lib.abi().kvc_op_support_get(op, format, abi::dl_dtype(dtype), &s), KVC_STATUS_OK);
  return s;
}

class AbiDouble : public ::testing::TestWithParam<Double> {};

TEST_P(AbiDouble, LoadsAndNamesItsPlant) {
  const KernelLibrary lib = KernelLibrary::open(GetParam().path);
  EXPECT_EQ(lib.abi_version(), KVC_KERNEL_ABI_VERSION);
  EXPECT_EQ(lib.name().rfind(std::string("test double ") + GetParam().name, 0), 0u) << lib.name();
  EXPECT_NE(lib.abi().kvc_store_rotated, nullptr);
  EXPECT_NE(lib.abi().kvc_stacked_ctx_kv, nullptr);
}

TEST_P(AbiDouble, DeclaresOurSupportAndProfileAndTheScopeOfItsPlant) {
  const KernelLibrary lib = KernelLibrary::open(GetParam().path);
  const KernelLibrary ours = KernelLibrary::builtin();
  for (std::int32_t op : {KVC_OP_KV_ONLY_INSERT, KVC_OP_LEGACY_INSERT, KVC_OP_KV_NORM, KVC_OP_STORE_ROTATED,
                          KVC_OP_STACKED_CTX_KV, KVC_OP_KV_ONLY_INSERT_KV_NORM}) {
    for (std::int32_t format :
         {KVC_FORMAT_PACKED584, KVC_FORMAT_PACKED528, KVC_FORMAT_FP8_512, KVC_FORMAT_BF16_512, KVC_FORMAT_NONE}) {
      for (DType dtype : {DType::kBF16, DType::kF16}) {
        SCOPED_TRACE("op " + std::to_string(op) + " format " + std::to_string(format) + " dtype " +
                     std::to_string(static_cast<int>(dtype)));
        const kvc_op_support mine = support(lib, op, format, dtype), theirs = support(ours, op, format, dtype);
        EXPECT_EQ(mine.supported, theirs.supported);
        EXPECT_EQ(mine.q_norm_rsqrt, theirs.q_norm_rsqrt);
        EXPECT_EQ(mine.kv_norm_rsqrt, theirs.kv_norm_rsqrt);
        EXPECT_EQ(mine.rope, theirs.rope);
        EXPECT_EQ(mine.clamp_order, theirs.clamp_order);
        EXPECT_EQ(mine.inf_block, theirs.inf_block);
        EXPECT_EQ(mine.pad_byte, theirs.pad_byte);
        EXPECT_EQ(mine.scale_exponent, theirs.scale_exponent);
        EXPECT_EQ(mine.amax_floor, theirs.amax_floor);
        const bool insert =
            op == KVC_OP_KV_ONLY_INSERT || op == KVC_OP_LEGACY_INSERT || op == KVC_OP_KV_ONLY_INSERT_KV_NORM;
        EXPECT_EQ(mine.validation,
                  insert && GetParam().insert_validation_none ? KVC_VALIDATION_NONE : theirs.validation);
      }
    }
  }
}

TEST_P(AbiDouble, ForwardsWhatOurKernelsRejectWithoutADevice) {
  const KernelLibrary lib = KernelLibrary::open(GetParam().path);
  char error[256] = {0};
  EXPECT_EQ(lib.abi().kvc_kv_only_insert(nullptr, nullptr, error, sizeof error), KVC_STATUS_BAD_ARGUMENT) << error;
  EXPECT_EQ(lib.abi().kvc_legacy_insert(nullptr, nullptr, error, sizeof error), KVC_STATUS_BAD_ARGUMENT) << error;
  EXPECT_EQ(lib.abi().kvc_kv_norm(nullptr, nullptr, error, sizeof error), KVC_STATUS_BAD_ARGUMENT) << error;
  EXPECT_EQ(lib.abi().kvc_store_rotated(nullptr, nullptr, error, sizeof error), KVC_STATUS_BAD_ARGUMENT) << error;
  EXPECT_EQ(lib.abi().kvc_stacked_ctx_kv(nullptr, nullptr, error, sizeof error), KVC_STATUS_BAD_ARGUMENT) << error;
}

INSTANTIATE_TEST_SUITE_P(Doubles, AbiDouble, ::testing::ValuesIn(kDoubles),
                         [](const ::testing::TestParamInfo<Double>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace kvc::testkit
