// abi_op.cpp: the kernel ABI's ops (see abi_op.h).
#include "abi_op.h"

#include "run_options.h"

namespace kvc::runner {

std::string_view abi_op_name(AbiOp op) {
  switch (op) {
    case AbiOp::kKvOnly: return "kv_only";
    case AbiOp::kKvOnlyKvNorm: return "kv_only+kv_norm";
    case AbiOp::kLegacy: return "legacy";
    case AbiOp::kKvNorm: return "kv_norm";
    case AbiOp::kStoreRotated: return "store_rotated";
    case AbiOp::kStackedCtxKv: return "stacked_ctx_kv";
  }
  return "?";
}

std::optional<AbiOp> abi_op_from_name(std::string_view name) {
  for (AbiOp op : kAllAbiOps)
    if (abi_op_name(op) == name) return op;
  return std::nullopt;
}

std::string abi_op_names() {
  std::string s;
  for (AbiOp op : kAllAbiOps) s += (s.empty() ? "" : ", ") + std::string(abi_op_name(op));
  return s;
}

std::string_view abi_op_symbol(AbiOp op) {
  switch (op) {
    case AbiOp::kKvOnly:
    case AbiOp::kKvOnlyKvNorm: return "kvc_kv_only_insert";
    case AbiOp::kLegacy: return "kvc_legacy_insert";
    case AbiOp::kKvNorm: return "kvc_kv_norm";
    case AbiOp::kStoreRotated: return "kvc_store_rotated";
    case AbiOp::kStackedCtxKv: return "kvc_stacked_ctx_kv";
  }
  return "?";
}

AbiOp abi_op_of(const InsertCase& c) {
  if (c.op == InsertOp::kLegacy) return AbiOp::kLegacy;
  return c.kv_norm_weight.present ? AbiOp::kKvOnlyKvNorm : AbiOp::kKvOnly;
}

std::vector<std::string_view> suites_calling(AbiOp op) {
  switch (op) {
    case AbiOp::kKvOnly:
    case AbiOp::kLegacy: return {kSuiteMatrix, kSuiteDspark, kSuiteGolden, kSuiteInvalid};
    case AbiOp::kKvOnlyKvNorm: return {kSuiteFusedKvNorm, kSuiteGolden, kSuiteInvalid};
    case AbiOp::kKvNorm: return {kSuiteKvNorm};
    case AbiOp::kStoreRotated: return {kSuiteStore};
    case AbiOp::kStackedCtxKv: return {kSuiteStacked};
  }
  return {};
}

}  // namespace kvc::runner
