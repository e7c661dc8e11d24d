// library_declarations.cpp: see library_declarations.h.
#include "library_declarations.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

#include "kvc/contract.h"
#include "kvc/profile.h"
#include "kvc/stacked_profile.h"
#include "testkit/device/declared_support.h"

namespace kvc::runner {
namespace {

std::int32_t abi_op_code(AbiOp op) {
  switch (op) {
    case AbiOp::kKvOnly: return KVC_OP_KV_ONLY_INSERT;
    case AbiOp::kKvOnlyKvNorm: return KVC_OP_KV_ONLY_INSERT_KV_NORM;  // asked as kv_only before ABI 1.2
    case AbiOp::kLegacy: return KVC_OP_LEGACY_INSERT;
    case AbiOp::kKvNorm: return KVC_OP_KV_NORM;
    case AbiOp::kStoreRotated: return KVC_OP_STORE_ROTATED;
    case AbiOp::kStackedCtxKv: return KVC_OP_STACKED_CTX_KV;
  }
  return -1;
}

bool has_cache_format(AbiOp op) { return op != AbiOp::kKvNorm && op != AbiOp::kStackedCtxKv; }

// Whether the op's bytes depend on a norm's rsqrt (and so on a declared approximate rsqrt).
bool has_norm(AbiOp op) { return op == AbiOp::kLegacy || op == AbiOp::kKvOnlyKvNorm || op == AbiOp::kKvNorm; }

Export exported(const testkit::KernelLibrary& library, AbiOp op) {
  if (op == AbiOp::kStoreRotated && library.abi().kvc_store_rotated == nullptr) return Export::kNotExported;
  if (op == AbiOp::kStackedCtxKv && library.abi().kvc_stacked_ctx_kv == nullptr) return Export::kNotExported;
  return Export::kExported;
}

void add_once(std::vector<std::string>& items, const std::string& item) {
  if (std::count(items.begin(), items.end(), item) == 0) items.push_back(item);
}

// The stacked op's policies per path (docs/contract.md §6.2.1): "stacked profile `contract` (per-layer,
// stacked)", "stacked profile `sglang-dspark-fused` (fused)" or "no fused path (<reason>)".
void add_stacked_profiles(const testkit::DeclaredSupport& declared, DType dtype, OpDeclaration& d) {
  try {
    add_once(d.profiles,
             "stacked profile `" +
                 kvc::stacked_profile_name(declared.of(KVC_OP_STACKED_CTX_KV, KVC_FORMAT_NONE, dtype).stacked_profile) +
                 "` (per-layer, stacked)");
    const testkit::Declaration& fused = declared.of(KVC_OP_STACKED_CTX_KV_FUSED, KVC_FORMAT_NONE, dtype);
    add_once(d.profiles, fused.supported
                             ? "stacked profile `" + kvc::stacked_profile_name(fused.stacked_profile) + "` (fused)"
                             : "no fused path (" + fused.reason + ")");
  } catch (const testkit::DeclarationError& e) {
    add_once(d.profiles, std::string("stacked profile unreadable: ") + e.what());
  }
}

OpDeclaration declaration(const testkit::DeclaredSupport& declared, AbiOp op) {
  OpDeclaration d;
  d.op = op;
  d.exported = exported(declared.library(), op);
  std::vector<std::optional<RecordFormat>> formats;
  if (has_cache_format(op))
    formats.assign(kAllFormats.begin(), kAllFormats.end());
  else
    formats.push_back(std::nullopt);
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    for (const std::optional<RecordFormat>& format : formats) {
      const std::int32_t format_code = format ? static_cast<std::int32_t>(*format) : KVC_FORMAT_NONE;
      std::string profile;
      try {
        const testkit::Declaration& s = declared.of(abi_op_code(op), format_code, dtype);
        if (!s.supported) continue;
        kvc::Profile p = s.profile;
        if (has_norm(op) && p.rsqrt == RsqrtMode::kApproximate) d.approximate_rsqrt = true;
        if (!has_norm(op)) p.rsqrt = RsqrtMode::kCorrectlyRounded;
        profile = kvc::profile_name(p);
      } catch (const testkit::DeclarationError& e) {
        profile = std::string("unreadable: ") + e.what();
      }
      const std::string dtype_name = dtype == DType::kF16 ? "fp16" : "bf16";
      d.supported.push_back(format ? std::string(layout_of(*format).name) + "/" + dtype_name : dtype_name);
      if (has_cache_format(op) && std::count(d.profiles.begin(), d.profiles.end(), profile) == 0)
        d.profiles.push_back(profile);
      if (op == AbiOp::kStackedCtxKv) add_stacked_profiles(declared, dtype, d);
    }
  }
  return d;
}

}  // namespace

std::vector<OpDeclaration> library_declarations(const testkit::KernelLibrary& library) {
  const testkit::DeclaredSupport declared(library);
  std::vector<OpDeclaration> out;
  for (AbiOp op : kAllAbiOps) out.push_back(declaration(declared, op));
  return out;
}

}  // namespace kvc::runner
