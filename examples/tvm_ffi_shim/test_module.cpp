// test_module.cpp: a tvm-ffi module exporting kvconform's own kernels, for the tvm-ffi shim's GPU
// test. Each function is exported the way TVM_FFI_DLL_EXPORT_TYPED_FUNC exports one: the symbol
// __tvm_ffi_<name> with tvm-ffi's safe-call signature, positional TVMFFIAny arguments, errors
// raised into tvm-ffi's thread-local slot (return -1), and the launch stream taken from
// TVMFFIEnvGetStream for the tensors' device, as SGLang's and FlashInfer's kernels do. It is
// written against the C ABI alone so that it accepts what any tvm-ffi caller passes: a tensor as
// a DLTensor* or as a tensor object, None for an absent optional, an integer for a flag.
//
// The functions (argument order = the order in kvc_test_module.json):
//   kvc_test_kv_rope_insert(kv, k_cache, slot_mapping, position_ids, cos_sin_cache, cache_block_size,
//                           fp8_scale?, kv_mxfp8)
//   kvc_test_kv_norm_rope_insert(same, norm_weight, eps)
//   kvc_test_qnorm_rope_kv_insert(q, q_out, q_scale_inv?, kv, k_cache, slot_mapping, position_ids,
//                                 cos_sin_cache, fp8_scale?, cache_block_size, kv_mxfp8, eps,
//                                 apply_q_norm, apply_q_rope, is_q_interleaved, force_grid)
//   kvc_test_kv_norm(kv, weight, out, eps)
// Our kernels are linked in statically with nothing of them exported, so their kvc_* entry points
// cannot be interposed by the shim's own.
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "kvc/kernel_abi.h"

namespace {

struct CallError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Positional arguments with the checks TVM_FFI_DLL_EXPORT_TYPED_FUNC's unpacking makes.
class Args {
 public:
  Args(const char* function, const TVMFFIAny* args, std::int32_t count, std::int32_t expected)
      : function_(function), args_(args) {
    if (count != expected)
      throw CallError(std::string(function) + " takes " + std::to_string(expected) + " arguments, got " +
                      std::to_string(count));
  }

  const DLTensor* tensor(int i) const {
    const TVMFFIAny& a = args_[i];
    if (a.type_index == kTVMFFIDLTensorPtr) return static_cast<const DLTensor*>(a.v_ptr);
    if (a.type_index == kTVMFFITensor)  // a tensor object: { TVMFFIObject, DLTensor, ... }
      return reinterpret_cast<const DLTensor*>(reinterpret_cast<const char*>(a.v_obj) + sizeof(TVMFFIObject));
    throw mismatch(i, "a tensor");
  }
  const DLTensor* optional_tensor(int i) const { return args_[i].type_index == kTVMFFINone ? nullptr : tensor(i); }
  std::int64_t integer(int i) const {
    const TVMFFIAny& a = args_[i];
    if (a.type_index == kTVMFFIInt || a.type_index == kTVMFFIBool) return a.v_int64;
    throw mismatch(i, "an integer");
  }
  double real(int i) const {
    const TVMFFIAny& a = args_[i];
    if (a.type_index == kTVMFFIFloat) return a.v_float64;
    if (a.type_index == kTVMFFIInt) return static_cast<double>(a.v_int64);
    throw mismatch(i, "a float");
  }
  std::int32_t flag(int i) const { return integer(i) != 0 ? 1 : 0; }

  // The tensors' device, made current for the launch's stream lookup.
  static std::int32_t device_of(const DLTensor* t) { return t->device.device_id; }

 private:
  CallError mismatch(int i, const char* what) const {
    return CallError(std::string(function_) + ": argument " + std::to_string(i) + " is not " + what + " (type index " +
                     std::to_string(args_[i].type_index) + ")");
  }
  const char* function_;
  const TVMFFIAny* args_;
};

void* stream_for(const DLTensor* t) { return TVMFFIEnvGetStream(kDLCUDA, Args::device_of(t)); }

void check(int status, const char* error) {
  if (status != KVC_STATUS_OK) throw CallError("kvc status " + std::to_string(status) + ": " + error);
}

// Runs body with tvm-ffi's safe-call convention: 0, or -1 with the error raised.
template <typename Body>
int safe_call(TVMFFIAny* result, Body&& body) {
  try {
    result->type_index = kTVMFFINone;
    body();
    return 0;
  } catch (const std::exception& e) {
    TVMFFIErrorSetRaisedFromCStr("RuntimeError", e.what());
  } catch (...) {
    TVMFFIErrorSetRaisedFromCStr("RuntimeError", "unknown exception");
  }
  return -1;
}

void kv_only(const Args& a, bool with_norm) {
  kvc_kv_only_insert_args k{};
  k.struct_size = sizeof(k);
  k.kv = a.tensor(0);
  k.kv_cache = a.tensor(1);
  k.slot_mapping = a.tensor(2);
  k.position_ids = a.tensor(3);
  k.cos_sin_cache = a.tensor(4);
  k.block_size = a.integer(5);
  k.fp8_scale = a.optional_tensor(6);
  k.kv_mxfp8 = a.flag(7);
  if (with_norm) {
    k.kv_norm_weight = a.tensor(8);
    k.kv_norm_eps = static_cast<float>(a.real(9));
  }
  char error[512] = "";
  check(kvc_kv_only_insert(&k, stream_for(k.kv), error, sizeof(error)), error);
}

}  // namespace

extern "C" {

TVM_FFI_DLL_EXPORT int __tvm_ffi_kvc_test_kv_rope_insert(void*, const TVMFFIAny* args, std::int32_t n,
                                                         TVMFFIAny* result) {
  return safe_call(result, [&] { kv_only(Args("kvc_test_kv_rope_insert", args, n, 8), false); });
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_kvc_test_kv_norm_rope_insert(void*, const TVMFFIAny* args, std::int32_t n,
                                                              TVMFFIAny* result) {
  return safe_call(result, [&] { kv_only(Args("kvc_test_kv_norm_rope_insert", args, n, 10), true); });
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_kvc_test_qnorm_rope_kv_insert(void*, const TVMFFIAny* args, std::int32_t n,
                                                               TVMFFIAny* result) {
  return safe_call(result, [&] {
    const Args a("kvc_test_qnorm_rope_kv_insert", args, n, 16);
    kvc_legacy_insert_args l{};
    l.struct_size = sizeof(l);
    l.q = a.tensor(0);
    l.q_out = a.tensor(1);
    l.q_scale_inv = a.optional_tensor(2);
    l.kv = a.tensor(3);
    l.kv_cache = a.tensor(4);
    l.slot_mapping = a.tensor(5);
    l.position_ids = a.tensor(6);
    l.cos_sin_cache = a.tensor(7);
    l.fp8_scale = a.optional_tensor(8);
    l.block_size = a.integer(9);
    l.kv_mxfp8 = a.flag(10);
    l.eps = static_cast<float>(a.real(11));
    l.apply_q_norm = a.flag(12);
    l.apply_q_rope = a.flag(13);
    l.q_interleaved = a.flag(14);
    l.force_grid = static_cast<std::int32_t>(a.integer(15));
    char error[512] = "";
    check(kvc_legacy_insert(&l, stream_for(l.kv), error, sizeof(error)), error);
  });
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_kvc_test_kv_norm(void*, const TVMFFIAny* args, std::int32_t n, TVMFFIAny* result) {
  return safe_call(result, [&] {
    const Args a("kvc_test_kv_norm", args, n, 4);
    kvc_kv_norm_args k{};
    k.struct_size = sizeof(k);
    k.kv = a.tensor(0);
    k.weight = a.tensor(1);
    k.out = a.tensor(2);
    k.eps = static_cast<float>(a.real(3));
    char error[512] = "";
    check(kvc_kv_norm(&k, stream_for(k.kv), error, sizeof(error)), error);
  });
}

}  // extern "C"
