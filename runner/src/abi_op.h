// abi_op.h: the ops of the kernel ABI as the runner reports coverage for them.
//
// kvc/kernel_abi.h has five entry points; the KV-only insert with a kv_norm weight (kv_norm fused
// in front) is its own op here, because a library can implement the plain insert and not the
// fused one, and a kernel engineer must see that its bytes were compared or not. `--ops` takes
// these names; every check of the kernel suites says which of them it called.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvc/insert_case.h"

namespace kvc::runner {

enum class AbiOp : std::uint8_t {
  kKvOnly = 0,        // kvc_kv_only_insert without a kv_norm weight
  kKvOnlyKvNorm = 1,  // kvc_kv_only_insert with a kv_norm weight (fused)
  kLegacy = 2,        // kvc_legacy_insert
  kKvNorm = 3,        // kvc_kv_norm (standalone)
  kStoreRotated = 4,  // kvc_store_rotated (optional symbol)
  kStackedCtxKv = 5,  // kvc_stacked_ctx_kv (optional symbol)
};
inline constexpr std::array<AbiOp, 6> kAllAbiOps = {AbiOp::kKvOnly, AbiOp::kKvOnlyKvNorm, AbiOp::kLegacy,
                                                    AbiOp::kKvNorm, AbiOp::kStoreRotated, AbiOp::kStackedCtxKv};

// "kv_only", "kv_only+kv_norm", "legacy", "kv_norm", "store_rotated", "stacked_ctx_kv": the
// `--ops` values and the op column of the reports.
std::string_view abi_op_name(AbiOp op);
std::optional<AbiOp> abi_op_from_name(std::string_view name);
// "kv_only, kv_only+kv_norm, legacy, kv_norm, store_rotated, stacked_ctx_kv", for usage errors.
std::string abi_op_names();
// The entry point the op is reached through: "kvc_kv_only_insert", ...
std::string_view abi_op_symbol(AbiOp op);

// The op an insert case calls: legacy, or the KV-only insert with or without the fused kv_norm.
AbiOp abi_op_of(const InsertCase& c);

// The suites (run_options.h) that call the op: kv_only and legacy go through matrix, dspark,
// golden and invalid; the fused kv_norm through fused_kv_norm, golden and invalid; each other op
// through its own suite.
std::vector<std::string_view> suites_calling(AbiOp op);

}  // namespace kvc::runner
