// shim_config_test.cpp: the shims' configuration, parsed and looked up (needs no torch, no
// tvm-ffi and no GPU).
//
// Catches: a binding that serves formats or dtypes it does not list (the suite would then call an
// op with a cache it cannot take instead of reporting the case skipped), an overload name lost
// ("....out" calling the functional form), renames dropped, a tvm-ffi binding without its
// argument order (positional arguments cannot be matched by name) or with a torch-style name, and
// a bad config accepted silently instead of naming the member that is wrong.
#include <gtest/gtest.h>

#include <fstream>

#include "shim_config.h"

namespace kvc::shim {
namespace {

const char* kVllm = R"({
  "name": "vLLM _C",
  "libraries": ["/opt/vllm/_C.abi3.so"],
  "rsqrt": {"q_norm": "approximate"},
  "policies": {"clamp_order": 1},
  "ops": {
    "kv_only_insert": {"op": "_C::fused_deepseek_v4_kv_rope_insert"},
    "kv_only_insert_kv_norm": [{"op": "_C::fused_deepseek_v4_kv_norm_rope_quant_insert", "formats": ["packed584"]}],
    "legacy_insert": [
      {"op": "_C::fused_deepseek_v4_qnorm_rope_kv_rope_quant_insert.out", "formats": ["packed584", "packed528"],
       "kv_dtypes": ["bf16", "fp16"], "arguments": {"q_in": "q"}},
      {"op": "_C::fused_deepseek_v4_qnorm_rope_kv_rope_full_cache_bf16_insert", "formats": ["bf16_512"]}
    ],
    "kv_norm": null
  }
})";

TEST(ShimConfig, BindingsServeExactlyTheirFormatsAndDtypes) {
  const ShimConfig c = parse_shim_config(nlohmann::json::parse(kVllm));
  EXPECT_EQ(c.name, "vLLM _C");
  ASSERT_EQ(c.libraries.size(), 1u);
  EXPECT_EQ(c.q_norm_rsqrt, 1);
  EXPECT_EQ(c.kv_norm_rsqrt, 0);
  EXPECT_EQ(c.policies.at("clamp_order"), 1);

  const OpBinding* kv = c.find(AbiEntry::kKvOnlyInsert, RecordFormat::kFp8_512, DType::kBF16);
  ASSERT_NE(kv, nullptr);
  EXPECT_EQ(kv->op, "_C::fused_deepseek_v4_kv_rope_insert");
  EXPECT_EQ(kv->overload, "");
  EXPECT_EQ(c.find(AbiEntry::kKvOnlyInsert, RecordFormat::kFp8_512, DType::kF16), nullptr) << "bf16 unless listed";

  EXPECT_NE(c.find(AbiEntry::kKvOnlyInsertKvNorm, RecordFormat::kPacked584, DType::kBF16), nullptr);
  EXPECT_EQ(c.find(AbiEntry::kKvOnlyInsertKvNorm, RecordFormat::kPacked528, DType::kBF16), nullptr);

  const OpBinding* packed = c.find(AbiEntry::kLegacyInsert, RecordFormat::kPacked528, DType::kF16);
  ASSERT_NE(packed, nullptr);
  EXPECT_EQ(packed->op, "_C::fused_deepseek_v4_qnorm_rope_kv_rope_quant_insert");
  EXPECT_EQ(packed->overload, "out");
  EXPECT_EQ(packed->display(), "_C::fused_deepseek_v4_qnorm_rope_kv_rope_quant_insert.out");
  EXPECT_EQ(packed->arguments.at("q_in"), "q");
  const OpBinding* full = c.find(AbiEntry::kLegacyInsert, RecordFormat::kBf16_512, DType::kBF16);
  ASSERT_NE(full, nullptr);
  EXPECT_EQ(full->op, "_C::fused_deepseek_v4_qnorm_rope_kv_rope_full_cache_bf16_insert");
  EXPECT_EQ(c.find(AbiEntry::kLegacyInsert, RecordFormat::kFp8_512, DType::kBF16), nullptr) << "not bound";
  EXPECT_EQ(c.find(AbiEntry::kKvNorm, RecordFormat::kPacked584, DType::kBF16), nullptr) << "null binds nothing";
}

TEST(ShimConfig, ErrorsNameTheMember) {
  auto error_of = [](const std::string& text) {
    try {
      parse_shim_config(nlohmann::json::parse(text));
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(error_of(R"({"name": "x"})").find("ops"), std::string::npos);
  EXPECT_NE(error_of(R"({"ops": {"kv_only": {"op": "_C::a"}}})").find("unknown entry point \"kv_only\""),
            std::string::npos);
  EXPECT_NE(error_of(R"({"ops": {"kv_only_insert": {"op": "no_namespace"}}})").find("namespace::name"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"ops": {"kv_only_insert": {"op": "_C::a", "formats": ["packed999"]}}})").find("packed999"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"ops": {"kv_only_insert": {"op": "_C::a", "kv_dtypes": ["fp32"]}}})").find("kv_dtypes"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"rsqrt": {"q_norm": "fast"}, "ops": {}})").find("rsqrt.q_norm"), std::string::npos);
  EXPECT_NE(error_of(R"({"policies": {"clamp": 1}, "ops": {}})").find("unknown field \"clamp\""), std::string::npos);
  EXPECT_NE(error_of(R"({"policies": {"pad_byte": 2}, "ops": {}})").find("policies.pad_byte"), std::string::npos);
  EXPECT_THROW(load_shim_config("/nonexistent/config.json"), ConfigError);
}

TEST(ShimConfig, TheShippedVllmConfigParses) {
  const ShimConfig c = load_shim_config(KVC_VLLM_CONFIG);
  EXPECT_NE(c.find(AbiEntry::kKvOnlyInsert, RecordFormat::kPacked584, DType::kBF16), nullptr);
  EXPECT_NE(c.find(AbiEntry::kLegacyInsert, RecordFormat::kFp8_512, DType::kBF16), nullptr);
  EXPECT_NE(c.find(AbiEntry::kLegacyInsert, RecordFormat::kBf16_512, DType::kBF16), nullptr);
  EXPECT_EQ(c.q_norm_rsqrt, 1) << "vLLM's q-norm uses rsqrtf";
}

TEST(ShimConfig, TvmFfiBindingsNameExportsAndListTheirArgumentsInOrder) {
  const ShimConfig c = parse_shim_config(nlohmann::json::parse(R"({
    "libraries": ["/tmp/module.so"],
    "ops": {"kv_only_insert": {"op": "kv_rope_insert", "formats": ["packed584"],
                               "arguments": ["kv", "k_cache", "slot_mapping", "position_ids", "cos_sin_cache"]}}
  })"),
                                         OpNaming::kTvmFfiExport);
  EXPECT_EQ(c.name, "unnamed tvm-ffi module");
  const OpBinding* b = c.find(AbiEntry::kKvOnlyInsert, RecordFormat::kPacked584, DType::kBF16);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->op, "kv_rope_insert");
  EXPECT_EQ(b->overload, "");
  EXPECT_EQ(b->positional,
            (std::vector<std::string>{"kv", "k_cache", "slot_mapping", "position_ids", "cos_sin_cache"}));
  EXPECT_TRUE(b->arguments.empty());

  auto error_of = [](const std::string& text) {
    try {
      parse_shim_config(nlohmann::json::parse(text), OpNaming::kTvmFfiExport);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(error_of(R"({"ops": {"kv_only_insert": {"op": "kv_rope_insert"}}})").find("by position"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"ops": {"kv_only_insert": {"op": "kv_rope_insert", "arguments": {"a": "kv"}}}})")
                .find("by position"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"ops": {"kv_only_insert": {"op": "_C::kv_rope_insert", "arguments": []}}})")
                .find("not a tvm-ffi export name"),
            std::string::npos);
  // And the other way round: a torch binding with a positional list is a config for the other shim.
  EXPECT_THROW(
      parse_shim_config(nlohmann::json::parse(R"({"ops": {"kv_only_insert": {"op": "_C::a", "arguments": ["kv"]}}})")),
      ConfigError);
}

}  // namespace
}  // namespace kvc::shim
