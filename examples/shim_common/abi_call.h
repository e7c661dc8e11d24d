// abi_call.h: one kernel-ABI call taken apart for a shim that forwards it to another library's op
// (the libtorch shim, the tvm-ffi shim). What a shim must not get wrong, and must not get wrong
// differently from the other shim, lives here once:
//   - the call checked by the ABI's front-end that our own wrapper uses (kvc/abi/*_call.h): a
//     malformed call (NULL, struct_size too small, a non-CUDA tensor) answers 403;
//   - then, as kernel ABI 1.2 orders it, the binding the config names for the entry point,
//     format and kv dtype, whose cache geometry limits the call must meet, or 402 with a reason,
//     whatever else is wrong with the call (what kvc_op_support_get declares and what a call
//     answers cannot disagree);
//   - then the metadata validated with the contract's own rules (kvc::validate_insert, metadata
//     only): a broken rule answers its code, with nothing forwarded;
//   - the call's values by name (vLLM's argument names plus aliases), for the shim to turn into
//     its library's argument list;
//   - kvc_op_support_get and the no-exception-across-C answer, shared by both shims.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <variant>

#include "kvc/abi/outcome.h"
#include "kvc/abi/struct_size.h"
#include "kvc/kernel_abi.h"
#include "shim_config.h"

namespace kvc::shim {

// A status of kvc/kernel_abi.h and its message: the ABI front-end's, which our own wrapper answers.
using abi::Outcome;

// A value of the call: absent (an optional tensor not given: None), a tensor, an integer, a
// float, a flag. Tensors point into the caller's args and live as long as the call.
using AbiValue = std::variant<std::monostate, const DLTensor*, std::int64_t, double, bool>;
// Every value under each of its names: kv, k_cache (kv_cache, cache), slot_mapping (slots),
// position_ids (positions), cos_sin_cache, fp8_scale, cache_block_size (block_size), kv_mxfp8,
// norm_weight (kv_norm_weight, weight), eps (kv_norm_eps), q (q_in), q_out (q_fp8), q_scale_inv
// (q_fp8_scale_inv), apply_q_norm, apply_q_rope, is_q_interleaved (q_interleaved), q_head_padded,
// force_grid; kv_norm: kv (input, x), weight (norm_weight), out (output), eps.
using AbiValues = std::map<std::string, AbiValue>;

struct PreparedCall {
  Outcome outcome;  // not OK: answer it and call nothing
  const OpBinding* binding = nullptr;
  AbiValues values;
  int device = 0;              // the tensors' CUDA device
  bool nothing_to_do = false;  // valid, with no row to write: answer OK and launch nothing

  bool forward() const { return outcome.status == KVC_STATUS_OK && !nothing_to_do; }
};

// `op_kind` names what the shim binds in reasons ("torch op", "tvm-ffi function").
PreparedCall prepare_kv_only_insert(const ShimConfig& config, const char* op_kind, const kvc_kv_only_insert_args* a);
PreparedCall prepare_legacy_insert(const ShimConfig& config, const char* op_kind, const kvc_legacy_insert_args* a);
PreparedCall prepare_kv_norm(const ShimConfig& config, const char* op_kind, const kvc_kv_norm_args* a);

// Strings that outlive the call (kvc_op_support.reason is not copied by the caller).
class ReasonStore {
 public:
  const char* keep(const std::string& text);

 private:
  std::mutex mutex_;
  std::deque<std::string> texts_;
};

// A configured shim, as both shims see it: its config or the error that left it unconfigured.
struct ShimState {
  const char* shim_kind;  // "torch shim", "tvm-ffi shim"
  const char* op_kind;    // "torch op", "tvm-ffi function"
  ShimConfig config;
  std::string error;  // non-empty: not configured, every op unsupported with this reason
  ReasonStore reasons;
};

// kvc_op_support_get over the config: supported where a binding serves (op, format, kv dtype),
// else the reason; the rsqrt modes and profile policies as the config declares them; for a caller
// of ABI 1.2, the binding's geometry limits, and every validation code enforced (the shims check
// every rule on the op's behalf). KVC_OP_KV_ONLY_INSERT_KV_NORM asks for the entry point
// "kv_only_insert_kv_norm", KVC_OP_KV_ONLY_INSERT for "kv_only_insert" alone.
int declare_support(ShimState& shim, std::int32_t op, std::int32_t format, DLDataType kv_dtype, kvc_op_support* out);

// Runs `body` (returning an Outcome) as the ABI front-end's answer does (kvc/abi/outcome.h: every
// exception caught, the message copied into error[capacity], the status returned), and answers
// an unconfigured shim's every call unsupported with its error, without running body.
inline Outcome not_configured(const ShimState& shim) {
  return {KVC_STATUS_UNSUPPORTED, std::string(shim.shim_kind) + " not configured: " + shim.error};
}
template <typename Body>
int answer(const ShimState& shim, char* error, std::size_t capacity, Body&& body) {
  return abi::answer(error, capacity, [&]() -> Outcome { return shim.error.empty() ? body() : not_configured(shim); });
}

// Answers a prepared call: its own outcome when it is not to be forwarded (rejected, unbound, or
// nothing to write), else what forward(p, stream) answers. A shim's forward() sees only calls to
// make.
template <typename Forward>
Outcome forward_prepared(const PreparedCall& p, void* stream, Forward&& forward) {
  return p.forward() ? forward(p, stream) : p.outcome;
}

// One op entry point of a shim: the call prepared by `prepare` (prepare_kv_only_insert, ...),
// then answered or forwarded, with no exception crossing the C boundary. `state()` gives the
// shim's ShimState; it is called inside the answer, so that whatever the shim's first use (its
// configuration, a torch or tvm-ffi error) throws is answered as a status too.
template <typename State, typename Args, typename Forward>
int answer_op_call(State&& state, PreparedCall (*prepare)(const ShimConfig&, const char*, const Args*),
                   const Args* args, void* stream, char* error, std::size_t error_capacity, Forward&& forward) {
  return abi::answer(error, error_capacity, [&]() -> Outcome {
    ShimState& s = state();
    if (!s.error.empty()) return not_configured(s);
    return forward_prepared(prepare(s.config, s.op_kind, args), stream, forward);
  });
}

}  // namespace kvc::shim

// Defines the five C entry points of the kernel ABI for a shim, in the file that includes it:
// `state_` is an expression giving the shim's ShimState&, `name_` one giving its name (a
// std::string that lives as long as the process), and `forward_` a function
// `Outcome forward_(const PreparedCall&, void* stream)` that calls the bound op; it is called only
// for a call prepared for forwarding (forward_prepared). The entry points are the same in every
// shim; only forward_ differs.
#define KVC_SHIM_ENTRY_POINTS(state_, name_, forward_)                                                                 \
  extern "C" {                                                                                                         \
  KVC_ABI_EXPORT int kvc_library_info_get(kvc_library_info* out) {                                                     \
    if (out == nullptr || out->struct_size < KVC_ABI_END_OF(kvc_library_info, name)) return KVC_STATUS_BAD_ARGUMENT;   \
    try {                                                                                                              \
      out->abi_version = KVC_KERNEL_ABI_VERSION;                                                                       \
      out->name = (name_).c_str();                                                                                     \
      return KVC_STATUS_OK;                                                                                            \
    } catch (...) {                                                                                                    \
      return KVC_STATUS_BAD_ARGUMENT;                                                                                  \
    }                                                                                                                  \
  }                                                                                                                    \
  KVC_ABI_EXPORT int kvc_op_support_get(int32_t op, int32_t format, DLDataType kv_dtype, kvc_op_support* out) {        \
    try {                                                                                                              \
      return kvc::shim::declare_support(state_, op, format, kv_dtype, out);                                            \
    } catch (...) {                                                                                                    \
      return KVC_STATUS_BAD_ARGUMENT;                                                                                  \
    }                                                                                                                  \
  }                                                                                                                    \
  KVC_ABI_EXPORT int kvc_kv_only_insert(const kvc_kv_only_insert_args* args, void* stream, char* error,                \
                                        size_t error_capacity) {                                                       \
    return kvc::shim::answer_op_call([]() -> kvc::shim::ShimState& { return state_; },                                 \
                                     kvc::shim::prepare_kv_only_insert, args, stream, error, error_capacity,           \
                                     forward_);                                                                        \
  }                                                                                                                    \
  KVC_ABI_EXPORT int kvc_legacy_insert(const kvc_legacy_insert_args* args, void* stream, char* error,                  \
                                       size_t error_capacity) {                                                        \
    return kvc::shim::answer_op_call([]() -> kvc::shim::ShimState& { return state_; },                                 \
                                     kvc::shim::prepare_legacy_insert, args, stream, error, error_capacity, forward_); \
  }                                                                                                                    \
  KVC_ABI_EXPORT int kvc_kv_norm(const kvc_kv_norm_args* args, void* stream, char* error, size_t error_capacity) {     \
    return kvc::shim::answer_op_call([]() -> kvc::shim::ShimState& { return state_; }, kvc::shim::prepare_kv_norm,     \
                                     args, stream, error, error_capacity, forward_);                                   \
  }                                                                                                                    \
  }
