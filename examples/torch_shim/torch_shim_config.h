// torch_shim_config.h: which torch op the libtorch shim calls for each entry point of the kernel
// ABI, read from a JSON file (KVC_TORCH_SHIM_CONFIG=path).
//
//   {
//     "name": "vLLM _C",                                   // shown in the suite's reports
//     "libraries": ["/path/to/vllm/_C.abi3.so"],           // dlopen'ed (lazy binding) to register the ops
//     "rsqrt": {"q_norm": "approximate", "kv_norm": "correctly_rounded"},
//     "policies": {"clamp_order": 0},                      // kvc_op_support fields (kvc/kernel_abi.h)
//     "ops": {
//       "kv_only_insert":         [{"op": "_C::fused_deepseek_v4_kv_rope_insert"}],
//       "kv_only_insert_kv_norm": [{"op": "_C::fused_deepseek_v4_kv_norm_rope_quant_insert",
//                                   "formats": ["packed584"]}],
//       "legacy_insert":          [{"op": "_C::fused_deepseek_v4_qnorm_rope_kv_rope_quant_insert.out",
//                                   "formats": ["packed584", "packed528"], "kv_dtypes": ["bf16", "fp16"]}, ...],
//       "kv_norm":                []
//     }
//   }
//
// An op is named by its schema name, "namespace::name" or "namespace::name.overload". Each
// binding serves the formats and kv dtypes it lists (default: every format, bf16); an entry
// point, format and dtype no binding serves is declared unsupported, with a reason naming the
// config. The op's arguments are matched by name with the values of the ABI call (see
// torch_shim.cpp for the names: vLLM's schema names work as they are); "arguments" maps any
// other schema argument name to one of them: {"cache": "k_cache"}.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kvc/contract.h"

namespace kvc::torch_shim {

enum class AbiEntry : std::uint8_t { kKvOnlyInsert, kKvOnlyInsertKvNorm, kLegacyInsert, kKvNorm };

struct OpBinding {
  std::string op;        // "_C::fused_deepseek_v4_kv_rope_insert" (the schema name)
  std::string overload;  // "" or "out"
  std::vector<RecordFormat> formats;
  std::vector<DType> kv_dtypes;                  // kBF16, kF16
  std::map<std::string, std::string> arguments;  // schema argument name -> ABI value name
  // "_C::fused_deepseek_v4_kv_rope_insert" or "...insert.out"
  std::string display() const { return overload.empty() ? op : op + "." + overload; }
};

struct ShimConfig {
  std::string name;
  std::vector<std::string> libraries;
  std::map<AbiEntry, std::vector<OpBinding>> ops;
  int q_norm_rsqrt = 0;  // kvc_rsqrt_mode
  int kv_norm_rsqrt = 0;
  std::map<std::string, int> policies;  // kvc_op_support field name -> value (0 or 1)

  // The binding for an entry point, format (ignored for kv_norm) and kv dtype, or nullptr.
  const OpBinding* find(AbiEntry entry, RecordFormat format, DType kv_dtype) const;
};

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws ConfigError naming the member that is wrong.
ShimConfig parse_shim_config(const nlohmann::json& j);
ShimConfig load_shim_config(const std::string& path);

// The environment variable naming the config file.
inline constexpr const char* kShimConfigEnv = "KVC_TORCH_SHIM_CONFIG";

}  // namespace kvc::torch_shim
