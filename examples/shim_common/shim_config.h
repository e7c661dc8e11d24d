// shim_config.h: which op of another library a shim calls for each entry point of the kernel
// ABI, read from a JSON file. One format serves both shims: the libtorch shim (ops named by their
// torch schema, KVC_TORCH_SHIM_CONFIG) and the tvm-ffi shim (functions named by the symbol a
// tvm-ffi module exports, KVC_TVM_FFI_SHIM_CONFIG).
//
//   {
//     "name": "vLLM _C",                                   // shown in the suite's reports
//     "libraries": ["/path/to/vllm/_C.abi3.so"],           // dlopen'ed (lazy binding); relative
//                                                          // paths: against the config's folder
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
// A torch op is named by its schema name, "namespace::name" or "namespace::name.overload"; a
// tvm-ffi function by its export name ("kv_rope_insert" for the symbol __tvm_ffi_kv_rope_insert).
// Each binding serves the formats and kv dtypes it lists (default: every format, bf16); an entry
// point, format and dtype no binding serves is declared unsupported, with a reason naming the
// config. "arguments" says how the call's values (abi_call.h names them) reach the op: for a
// torch op, whose arguments have names, an object mapping a schema argument name to a value name
// ({"cache": "k_cache"}; vLLM's names need none); for a tvm-ffi function, whose arguments are
// positional, the list of value names in order (["kv", "k_cache", ...], required).
//
// At most one binding of an entry point serves a (format, kv dtype): kvc_op_support_get declares
// one answer per combination, so overlapping bindings are refused rather than resolved by order.
// A binding of an insert entry point may declare the cache geometry its op takes ("page_stride",
// "block_sizes": geometry_limits.h); a call outside it is unsupported (402), like an unbound
// format. "libraries" entries are resolved by config_paths.h when the config is loaded from a file.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "geometry_limits.h"
#include "kvc/contract.h"

namespace kvc::shim {

enum class AbiEntry : std::uint8_t { kKvOnlyInsert, kKvOnlyInsertKvNorm, kLegacyInsert, kKvNorm };

// How the config names an op: which shim reads it.
enum class OpNaming : std::uint8_t {
  kTorchSchema,   // "namespace::name[.overload]", arguments by name
  kTvmFfiExport,  // an export name (a C identifier), arguments by position
};

struct OpBinding {
  std::string op;        // "_C::fused_deepseek_v4_kv_rope_insert" (schema) or "kv_rope_insert" (export)
  std::string overload;  // "" or "out" (torch only)
  std::vector<RecordFormat> formats;
  std::vector<DType> kv_dtypes;                  // kBF16, kF16
  std::map<std::string, std::string> arguments;  // torch: schema argument name -> value name
  std::vector<std::string> positional;           // tvm-ffi: value name of each argument, in order
  GeometryLimits limits;                         // the cache geometry the op takes (inserts only)
  // "_C::fused_deepseek_v4_kv_rope_insert" or "...insert.out"
  std::string display() const { return overload.empty() ? op : op + "." + overload; }
};

struct ShimConfig {
  std::string name;
  std::string source;                  // the absolute path of the file it was loaded from, or ""
  std::vector<std::string> libraries;  // as dlopen gets them (resolved against the config's folder)
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

// Throws ConfigError naming the member that is wrong. parse_shim_config keeps "libraries" as
// written; load_shim_config reads `path` (relative to the working directory) and resolves them
// against the file's folder (config_paths.h).
ShimConfig parse_shim_config(const nlohmann::json& j, OpNaming naming = OpNaming::kTorchSchema);
ShimConfig load_shim_config(const std::string& path, OpNaming naming = OpNaming::kTorchSchema);

// The environment variables naming each shim's config file.
inline constexpr const char* kTorchShimConfigEnv = "KVC_TORCH_SHIM_CONFIG";
inline constexpr const char* kTvmFfiShimConfigEnv = "KVC_TVM_FFI_SHIM_CONFIG";

}  // namespace kvc::shim
