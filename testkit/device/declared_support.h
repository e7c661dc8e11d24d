// declared_support.h: the one reader of what a kernel library declares (kvc_op_support_get), for
// every part of the suite that asks: the device backend, the stacked-op runner, the runner's
// report of declarations, the benchmarks and the GPU tests.
//
// Per (op, format, kv dtype) it asks once and keeps the answer decoded: supported or the
// library's reason, the profile (abi_profile.h), the rsqrt of each norm, the geometry limits and
// the validation scope (kvc/abi/capabilities.h). It also owns the one rule of which op a case
// asks about: a KV-only case with a kv_norm weight asks KVC_OP_KV_ONLY_INSERT_KV_NORM of a library
// built against ABI 1.2 or later, and KVC_OP_KV_ONLY_INSERT of an older one.
//
// The stacked op asks KVC_OP_STACKED_CTX_KV for its per-layer and stacked paths and, since ABI 1.3,
// KVC_OP_STACKED_CTX_KV_FUSED for its fused path; each answer carries that path's stacked profile
// (kvc/abi/stacked_policies.h). A library built before 1.3 is not asked op 6: it has no fused
// path (unsupported, "built against ABI 1.x: no fused stacked path"), and op 4 declares the
// contract's stacked policies.
//
// A supported answer whose fields name no alternative (a profile policy of 7, a page stride rule
// of 9) is a library bug the suite cannot guess around: of() throws DeclarationError naming the
// library, the combination and the field. An unsupported answer is never decoded further.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

#include "kvc/abi/capabilities.h"
#include "kvc/insert_case.h"
#include "kvc/kernel_abi.h"
#include "kvc/profile.h"
#include "kvc/stacked_profile.h"
#include "kvc/store_case.h"
#include "testkit/backends/backend.h"
#include "testkit/device/kernel_library.h"

namespace kvc::testkit {

// The rsqrt each norm of an (op, format, kv dtype) uses, as the library declares it.
struct RsqrtModes {
  RsqrtMode q_norm = RsqrtMode::kCorrectlyRounded;
  RsqrtMode kv_norm = RsqrtMode::kCorrectlyRounded;
};

// A supported combination whose declaration cannot be read (see above).
class DeclarationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One answer of kvc_op_support_get, decoded.
struct Declaration {
  bool supported = false;
  std::string reason;  // unsupported: the library's reason, or why no answer came
  // Supported only (defaults otherwise):
  kvc::Profile profile = kvc::vllm_profile();
  RsqrtModes rsqrt;
  abi::Capabilities capabilities;
  // The stacked op's queries (4, 6) only: the policies of the path(s) the answer is for.
  StackedProfile stacked_profile = contract_stacked_profile();
};

class DeclaredSupport {
 public:
  explicit DeclaredSupport(KernelLibrary library);

  // The decoded answer for (op, format, kv dtype); format KVC_FORMAT_NONE for the ops without a
  // cache. KVC_OP_KV_ONLY_INSERT_KV_NORM is asked as KVC_OP_KV_ONLY_INSERT of a library older
  // than 1.2. Asked once per combination; throws DeclarationError as above.
  const Declaration& of(std::int32_t op, std::int32_t format, DType kv_dtype) const;

  // The ABI op a case asks about: legacy, KV-only, or (a kv_norm weight given) the fused query.
  static std::int32_t abi_op_of(const InsertCase& c);

  // Whether the library takes a valid case: the declaration of its (op, format, kv dtype), then
  // its declared geometry (abi/limit_breach.h). Unsupported: "<library> does not implement
  // kv_only_insert with kv_norm fused in front for packed584 with bf16 kv: <its reason>"; outside
  // the limits: "<library> does not take this case: block size 48 is not a power of two (...)".
  // A case the ABI cannot describe (no format, no dtype, an unknown op) is "supported": its
  // rejection is what is tested.
  Support insert_support(const InsertCase& c) const;
  // The same for a store case: the optional entry point kvc_store_rotated exported, the store
  // op's declaration for the case's format and bf16 rows, then the limits.
  Support store_support(const StoreCase& c) const;

  // Whether a rule breaker may be sent to the library to see it answer with the rule's code:
  // `broken` breaks one rule (`code`) of `base`, a valid case the library supports. Not when the
  // library declares it does not enforce `code` ("<library> declares it does not enforce 203 (a
  // slot lies beyond num_blocks * block_size)": such a call is the caller's fault, its outcome
  // undefined), nor when the broken case lies outside its declared support: a kv_norm weight
  // given to a library that declares the fused insert unsupported, or a geometry outside its
  // limits ("<library> does not take the broken case: <limit>"); it answers those with 402
  // before any validation code.
  Support checks_breaker(const InsertCase& base, const InsertCase& broken, ErrorCode code) const;
  Support checks_store_breaker(const StoreCase& base, const StoreCase& broken, ErrorCode code) const;

  // The declaration of a case's combination (of() above), or nothing for a case the ABI cannot
  // describe.
  const Declaration* declaration_of(const InsertCase& c) const;
  const Declaration* declaration_of(const StoreCase& c) const;

  // "kv_only_insert with kv_norm fused in front", "store_rotated", ...: an op as messages name it.
  static std::string op_name(std::int32_t op);

  const KernelLibrary& library() const { return library_; }

 private:
  // The op actually asked: the fused query falls back to the plain insert before 1.2.
  std::int32_t asked_op(std::int32_t op) const;

  KernelLibrary library_;
  struct Entry {
    Declaration declaration;
    std::string unreadable;  // a supported answer's decoding error, thrown on every of()
  };
  mutable std::map<std::tuple<std::int32_t, std::int32_t, DType>, Entry> cache_;
};

}  // namespace kvc::testkit
