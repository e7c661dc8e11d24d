// declared_support.cpp: a kernel library's declarations, asked once and decoded (see
// declared_support.h).
#include "testkit/device/declared_support.h"

#include <utility>

#include "kvc/abi/dl_dtype.h"
#include "kvc/abi/enum_mapping.h"
#include "kvc/abi/limit_breach.h"
#include "kvc/abi/stacked_policies.h"
#include "testkit/backends/abi_profile.h"
#include "testkit/device/abi_args.h"

namespace kvc::testkit {
namespace {

RsqrtMode rsqrt_mode_of(std::int32_t declared) {
  return declared == KVC_RSQRT_APPROXIMATE ? RsqrtMode::kApproximate : RsqrtMode::kCorrectlyRounded;
}

std::string format_name(std::int32_t format) {
  const std::optional<RecordFormat> f = abi::record_format_of(format);
  return f ? std::string(layout_of(*f).name) : "no cache format";
}

}  // namespace

DeclaredSupport::DeclaredSupport(KernelLibrary library) : library_(std::move(library)) {}

std::int32_t DeclaredSupport::asked_op(std::int32_t op) const {
  if (op == KVC_OP_KV_ONLY_INSERT_KV_NORM && library_.abi_version() < abi::kAbiVersionWithCapabilities)
    return KVC_OP_KV_ONLY_INSERT;
  return op;
}

const Declaration& DeclaredSupport::of(std::int32_t op, std::int32_t format, DType kv_dtype) const {
  const std::int32_t asked = asked_op(op);
  const auto key = std::make_tuple(asked, format, kv_dtype);
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    Entry e;
    kvc_op_support s{};
    s.struct_size = sizeof s;
    Declaration& d = e.declaration;
    // A library older than 1.3 knows no op 6: it is not asked, and has no fused path.
    const bool predates_query =
        asked == KVC_OP_STACKED_CTX_KV_FUSED && library_.abi_version() < abi::kAbiVersionWithStackedPolicies;
    const int rc =
        predates_query ? KVC_STATUS_OK : library_.abi().kvc_op_support_get(asked, format, abi::dl_dtype(kv_dtype), &s);
    if (predates_query) {
      d.reason = abi::kNoFusedPathBefore13;
    } else if (rc != KVC_STATUS_OK) {
      d.reason = "kvc_op_support_get returned " + std::to_string(rc);
    } else if (!s.supported) {
      d.reason = s.reason != nullptr ? s.reason : "(no reason given)";
    } else {
      d.supported = true;
      d.rsqrt = {rsqrt_mode_of(s.q_norm_rsqrt), rsqrt_mode_of(s.kv_norm_rsqrt)};
      try {
        d.profile = profile_from_op_support(s, library_.abi_version(), asked);
        d.capabilities = abi::read_capabilities(s, library_.abi_version());
        if (abi::has_stacked_policies(asked)) d.stacked_profile = abi::read_stacked_profile(s, library_.abi_version());
      } catch (const std::runtime_error& error) {
        e.unreadable = library_.describe() + " declares " + op_name(asked) + " for " + format_name(format) + " with " +
                       dtype_name(kv_dtype) + " supported, but its declaration cannot be read: " + error.what();
      }
    }
    it = cache_.emplace(key, std::move(e)).first;
  }
  if (!it->second.unreadable.empty()) throw DeclarationError(it->second.unreadable);
  return it->second.declaration;
}

std::int32_t DeclaredSupport::abi_op_of(const InsertCase& c) {
  if (c.op == InsertOp::kLegacy) return KVC_OP_LEGACY_INSERT;
  return c.kv_norm_weight.present ? KVC_OP_KV_ONLY_INSERT_KV_NORM : KVC_OP_KV_ONLY_INSERT;
}

std::string DeclaredSupport::op_name(std::int32_t op) {
  switch (op) {
    case KVC_OP_KV_ONLY_INSERT: return "kv_only_insert";
    case KVC_OP_LEGACY_INSERT: return "legacy_insert";
    case KVC_OP_KV_NORM: return "kv_norm";
    case KVC_OP_STORE_ROTATED: return "store_rotated";
    case KVC_OP_STACKED_CTX_KV: return "stacked_ctx_kv";
    case KVC_OP_KV_ONLY_INSERT_KV_NORM: return "kv_only_insert with kv_norm fused in front";
    case KVC_OP_STACKED_CTX_KV_FUSED: return "stacked_ctx_kv's fused path";
  }
  return "op " + std::to_string(op);
}

const Declaration* DeclaredSupport::declaration_of(const InsertCase& c) const {
  const std::optional<RecordFormat> format = format_of(c);
  if ((c.op != InsertOp::kKvOnly && c.op != InsertOp::kLegacy) || !format || dtype_size(c.kv.meta.dtype) == 0)
    return nullptr;
  return &of(abi_op_of(c), abi::abi_format(*format), c.kv.meta.dtype);
}

const Declaration* DeclaredSupport::declaration_of(const StoreCase& c) const {
  return &of(KVC_OP_STORE_ROTATED, abi::abi_format(store_format(c)), DType::kBF16);
}

Support DeclaredSupport::insert_support(const InsertCase& c) const {
  const Declaration* d = declaration_of(c);
  if (d == nullptr) return {};
  if (!d->supported)
    return {false, library_.name() + " does not implement " + op_name(asked_op(abi_op_of(c))) + " for " +
                       std::string(layout_of(*format_of(c)).name) + " with " + dtype_name(c.kv.meta.dtype) +
                       " kv: " + d->reason};
  if (const std::optional<abi::LimitBreach> b = abi::insert_limit_breach(c, d->capabilities.limits))
    return {false, library_.name() + " does not take this case: " + b->text};
  return {};
}

Support DeclaredSupport::store_support(const StoreCase& c) const {
  if (library_.abi().kvc_store_rotated == nullptr)
    return {false, library_.name() + " does not export kvc_store_rotated (the store op is optional since ABI 1.1)"};
  const Declaration& d = *declaration_of(c);
  if (!d.supported)
    return {false, library_.name() + " does not implement store_rotated for " +
                       std::string(layout_of(store_format(c)).name) + ": " + d.reason};
  if (const std::optional<abi::LimitBreach> b = abi::store_limit_breach(c, d.capabilities.limits))
    return {false, library_.name() + " does not take this case: " + b->text};
  return {};
}

namespace {

// The breaker rule of checks_breaker() on a base case's declaration and the broken case's breach.
Support breaker_check(const std::string& library, const Declaration* d, ErrorCode code,
                      const std::optional<abi::LimitBreach>& broken_breach) {
  if (d == nullptr || !d->supported) return {};
  if (!d->capabilities.validation.enforces(code))
    return {false, library + " declares it does not enforce " + std::to_string(static_cast<int>(code)) + " (" +
                       std::string(error_message(code)) + ")"};
  if (broken_breach)
    return {false, library + " does not take the broken case: " + broken_breach->text +
                       " (a call outside the declared geometry is answered 402 before any validation code)"};
  return {};
}

}  // namespace

Support DeclaredSupport::checks_breaker(const InsertCase& base, const InsertCase& broken, ErrorCode code) const {
  const Declaration* d = declaration_of(base);
  if (d == nullptr || !d->supported) return {};
  // A breaker that gives the KV-only case a kv_norm weight asks the fused query: a library that
  // declares it unsupported answers 402 (asked with the base's format and kv dtype, which the
  // broken case may have broken too).
  const std::int32_t broken_op = abi_op_of(broken);
  if (broken_op != abi_op_of(base) && base.op == broken.op) {
    const Declaration& fused = of(broken_op, abi::abi_format(*format_of(base)), base.kv.meta.dtype);
    if (!fused.supported)
      return {false, library_.name() + " does not implement " + op_name(asked_op(broken_op)) +
                         ", which the broken case asks for (a call outside the declared support is answered 402 "
                         "before any validation code): " +
                         fused.reason};
  }
  return breaker_check(library_.name(), d, code, abi::insert_limit_breach(broken, d->capabilities.limits));
}

Support DeclaredSupport::checks_store_breaker(const StoreCase& base, const StoreCase& broken, ErrorCode code) const {
  const Declaration* d = declaration_of(base);
  if (!d->supported) return {};
  return breaker_check(library_.name(), d, code, abi::store_limit_breach(broken, d->capabilities.limits));
}

}  // namespace kvc::testkit
