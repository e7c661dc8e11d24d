// shim_config_test.cpp: the shims' configuration, parsed and looked up (needs no torch, no
// tvm-ffi and no GPU).
//
// Catches: a binding that serves formats or dtypes it does not list (the suite would then call an
// op with a cache it cannot take instead of reporting the case skipped), an overload name lost
// ("....out" calling the functional form), renames dropped, a tvm-ffi binding without its
// argument order (positional arguments cannot be matched by name) or with a torch-style name, and
// a bad config accepted silently instead of naming the member that is wrong; a library path
// resolved against the working directory instead of the config's folder (the shim then loads
// nothing, or another file, as soon as the suite runs from another directory), a bare library
// name taken away from the dynamic loader's search; geometry limits lost or misread; two
// bindings serving one (format, kv dtype), which support can declare only one of; and the
// shipped vLLM config declaring fused kv_norm where vLLM has none.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "abi_call.h"
#include "config_paths.h"
#include "kvc/abi/dl_dtype.h"
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
  ASSERT_EQ(c.libraries.size(), 1u);
  EXPECT_EQ(c.libraries[0], "/path/to/site-packages/vllm/_C.abi3.so") << "an absolute path is kept";
}

// What real vLLM has: the fused kv_norm insert (fused_deepseek_v4_kv_norm_rope_quant_insert) for
// packed584 only; ABI 1.2's op 5 must say so, format by format, and op 0 must not stand in for it.
TEST(ShimConfig, TheShippedVllmConfigDeclaresFusedKvNormForPacked584Only) {
  ShimState shim{"torch shim", "torch op", load_shim_config(KVC_VLLM_CONFIG), {}, {}};
  const auto supported = [&](std::int32_t op, std::int32_t format) {
    kvc_op_support s{};
    s.struct_size = sizeof(s);
    EXPECT_EQ(declare_support(shim, op, format, abi::dl_dtype(DType::kBF16), &s), KVC_STATUS_OK);
    return s.supported == 1;
  };
  EXPECT_TRUE(supported(KVC_OP_KV_ONLY_INSERT_KV_NORM, KVC_FORMAT_PACKED584));
  for (std::int32_t f : {KVC_FORMAT_PACKED528, KVC_FORMAT_FP8_512, KVC_FORMAT_BF16_512}) {
    EXPECT_FALSE(supported(KVC_OP_KV_ONLY_INSERT_KV_NORM, f)) << "format " << f;
    EXPECT_TRUE(supported(KVC_OP_KV_ONLY_INSERT, f)) << "the plain insert serves every format; format " << f;
  }
  EXPECT_FALSE(supported(KVC_OP_KV_NORM, KVC_FORMAT_NONE)) << "vLLM's _C has no standalone kv_norm op";
}

// A folder of its own under the system's temporary folder, removed at the end; the working
// directory restored too.
class TempFolder {
 public:
  TempFolder() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kvc_shim_config_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
    cwd_ = std::filesystem::current_path();
  }
  ~TempFolder() {
    std::error_code ignored;
    std::filesystem::current_path(cwd_, ignored);
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_, cwd_;
};

TEST(ShimConfig, LibraryPathsAreResolvedAgainstTheConfigsFolder) {
  const TempFolder tmp;
  std::filesystem::create_directories(tmp.path() / "configs" / "vllm");
  std::filesystem::create_directories(tmp.path() / "elsewhere");
  {
    std::ofstream f(tmp.path() / "configs" / "vllm" / "ops.json");
    f << R"({"libraries": ["./_C.abi3.so", "../lib/ext.so", "sub/dir/x.so", "/opt/abs.so", "libbare.so"],
             "ops": {"kv_only_insert": {"op": "_C::a"}}})";
  }
  // Run from another folder, naming the config relative to it, as `ctest` or `kvconform` would.
  std::filesystem::current_path(tmp.path() / "elsewhere");
  const ShimConfig c = load_shim_config("../configs/vllm/ops.json");
  const std::string folder = (tmp.path() / "configs" / "vllm").lexically_normal().string();
  EXPECT_EQ(c.source, folder + "/ops.json");
  ASSERT_EQ(c.libraries.size(), 5u);
  EXPECT_EQ(c.libraries[0], folder + "/_C.abi3.so");
  EXPECT_EQ(c.libraries[1], (tmp.path() / "configs" / "lib" / "ext.so").lexically_normal().string());
  EXPECT_EQ(c.libraries[2], folder + "/sub/dir/x.so");
  EXPECT_EQ(c.libraries[3], "/opt/abs.so") << "absolute: kept";
  EXPECT_EQ(c.libraries[4], "libbare.so") << "a bare name: the dynamic loader's search, as for any dlopen";

  // A config that is not there names the path as given and as resolved.
  try {
    load_shim_config("missing.json");
    ADD_FAILURE() << "a missing config was accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("missing.json ("), std::string::npos) << what;
    EXPECT_NE(what.find("/elsewhere/missing.json)"), std::string::npos) << what;
  }
}

TEST(ShimConfig, LibraryPathRules) {
  EXPECT_EQ(resolve_library_path("/a/b.so", "/cfg"), "/a/b.so");
  EXPECT_EQ(resolve_library_path("b.so", "/cfg"), "b.so");
  EXPECT_EQ(resolve_library_path("./b.so", "/cfg"), "/cfg/b.so");
  EXPECT_EQ(resolve_library_path("../x/./b.so", "/cfg/sub"), "/cfg/x/b.so");
  EXPECT_EQ(config_folder("/cfg/sub/ops.json"), "/cfg/sub");
  EXPECT_EQ(absolute_config_path("/cfg/./sub/../ops.json"), "/cfg/ops.json");
}

TEST(ShimConfig, BindingsDeclareTheirCacheGeometry) {
  const ShimConfig c = parse_shim_config(nlohmann::json::parse(R"({
    "ops": {
      "kv_only_insert": [
        {"op": "t::store", "formats": ["packed584"], "page_stride": {"aligned_up": 576}, "block_sizes": [64, 256]},
        {"op": "t::dense", "formats": ["packed528"], "page_stride": "dense", "block_sizes": "power_of_two"},
        {"op": "t::any", "formats": ["fp8_512", "bf16_512"], "page_stride": "any", "block_sizes": "any"}]
    }})"));
  const OpBinding* store = c.find(AbiEntry::kKvOnlyInsert, RecordFormat::kPacked584, DType::kBF16);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->limits.page_stride, PageStrideRule::kAlignedUp);
  EXPECT_EQ(store->limits.page_stride_align, 576);
  EXPECT_EQ(store->limits.block_size, BlockSizeRule::kListed);
  EXPECT_EQ(store->limits.block_sizes, (std::vector<std::int64_t>{64, 256}));
  const OpBinding* dense = c.find(AbiEntry::kKvOnlyInsert, RecordFormat::kPacked528, DType::kBF16);
  ASSERT_NE(dense, nullptr);
  EXPECT_EQ(dense->limits.page_stride, PageStrideRule::kDense);
  EXPECT_EQ(dense->limits.block_size, BlockSizeRule::kPowerOfTwo);
  const OpBinding* any = c.find(AbiEntry::kKvOnlyInsert, RecordFormat::kFp8_512, DType::kBF16);
  ASSERT_NE(any, nullptr);
  EXPECT_EQ(any->limits.page_stride, PageStrideRule::kAny);
  EXPECT_EQ(any->limits.block_size, BlockSizeRule::kAny);

  auto error_of = [](const std::string& text) {
    try {
      parse_shim_config(nlohmann::json::parse(text));
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(error_of(R"({"ops": {"kv_only_insert": {"op": "t::a", "page_stride": "padded"}}})")
                .find("ops.kv_only_insert.page_stride"),
            std::string::npos);
  EXPECT_NE(
      error_of(R"({"ops": {"kv_only_insert": {"op": "t::a", "page_stride": {"aligned_up": 0}}}})").find("page_stride"),
      std::string::npos);
  EXPECT_NE(error_of(R"({"ops": {"kv_only_insert": {"op": "t::a", "page_stride": {"aligned_up": 4294967296}}}})")
                .find("page_stride"),
            std::string::npos)
      << "kvc_op_support.page_stride_align is 32-bit";
  EXPECT_NE(error_of(R"({"ops": {"kv_only_insert": {"op": "t::a", "block_sizes": []}}})").find("block_sizes"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"ops": {"kv_only_insert": {"op": "t::a", "block_sizes": [16, -1]}}})").find("block_sizes"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"ops": {"kv_norm": {"op": "t::n", "block_sizes": [16]}}})").find("kv_norm has no cache"),
            std::string::npos);
}

TEST(ShimConfig, OneBindingPerFormatAndDtype) {
  auto error_of = [](const std::string& text) {
    try {
      parse_shim_config(nlohmann::json::parse(text));
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(error_of(R"({"ops": {"legacy_insert": [
                {"op": "t::a", "formats": ["packed584"], "kv_dtypes": ["bf16"]},
                {"op": "t::b", "formats": ["packed584"], "kv_dtypes": ["fp16"]},
                {"op": "t::c", "formats": ["fp8_512"]}]}})"),
            "accepted")
      << "disjoint (format, dtype) pairs";
  EXPECT_NE(error_of(R"({"ops": {"legacy_insert": [{"op": "t::a"}, {"op": "t::b", "formats": ["fp8_512"]}]}})")
                .find("ops.legacy_insert[1] and [0] both serve fp8_512 with bf16 rows"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"ops": {"kv_norm": [{"op": "t::a"}, {"op": "t::b"}]}})").find("both serve bf16 rows"),
            std::string::npos);
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
