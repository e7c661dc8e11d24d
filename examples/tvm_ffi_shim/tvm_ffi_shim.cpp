// tvm_ffi_shim.cpp: the kernel ABI over functions a tvm-ffi module exports: run kernels packaged
// the way SGLang's and FlashInfer's JIT kernels are (a shared object whose functions are exported
// with TVM_FFI_DLL_EXPORT_TYPED_FUNC) through the kvconform suite without writing C++ against them.
//
// Only tvm-ffi's stable C ABI is used (tvm/ffi/c_api.h, tvm/ffi/extra/c_env_api.h): an exported
// function is the symbol __tvm_ffi_<name> with the TVMFFISafeCallType signature, arguments are
// TVMFFIAny values, errors are raised into tvm-ffi's thread-local slot, and the stream a kernel
// launches on is the one set with TVMFFIEnvSetStream for its device. So the shim works with any
// module built against the same tvm-ffi ABI, whatever C++ or CUDA it was compiled with.
//
// On first use the shim reads its configuration (shim_config.h, KVC_TVM_FFI_SHIM_CONFIG), dlopens
// the module libraries it names (lazy binding, local symbols) and finds every configured
// function's symbol in them. Per ABI call it:
//   1. checks the call and finds its binding (abi_call.h: 403 for a malformed call, the rule's
//      code for broken metadata, 404 for what the config does not bind; nothing launched);
//   2. builds the positional arguments the config lists from the call's values: tensors as
//      DLTensor* (kTVMFFIDLTensorPtr, no copy; byte_offset folded into data, so the callee sees
//      element 0 at data whether or not it honours byte_offset, and strides kept, so a padded
//      cache stays a strided view), integers, floats, flags, and None for an absent optional;
//   3. makes the tensors' device current and the caller's stream the one tvm-ffi hands out for it
//      (TVMFFIEnvSetStream), calls the function, and restores both; nothing is synchronised.
//      tvm-ffi stores the handle and gives it back untouched (TVMFFIEnvGetStream), so every kind
//      of handle (stream_handle.h) reaches the kernel as a handle the CUDA runtime resolves at
//      launch; the legacy default stream is handed on as cudaStreamLegacy, never as NULL, which a
//      module built with --default-stream per-thread would launch on as its per-thread stream.
// A function that raises answers 401 when the CUDA runtime reports an error, else 403, with the
// error's kind and message (the shim links the shared CUDA runtime, the one a module built with
// the toolkit's defaults or with torch uses; a module with a static runtime of its own keeps its
// errors to itself, and its failures answer 403 with its message). A missing or broken config
// makes every op unsupported with that error.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "abi_call.h"
#include "configured_shim.h"
#include "stream_handle.h"
#include "kvc/abi/dlpack_metadata.h"
#include "kvc/kernel_abi.h"

namespace {

using kvc::shim::AbiValue;
using kvc::shim::OpBinding;
using kvc::shim::Outcome;
using kvc::shim::PreparedCall;

constexpr const char* kSymbolPrefix = "__tvm_ffi_";  // what TVM_FFI_DLL_EXPORT_TYPED_FUNC exports

class Shim : public kvc::shim::ConfiguredShim {
 public:
  static Shim& get() {
    static Shim shim;
    return shim;
  }

  TVMFFISafeCallType function(const OpBinding* b) const { return functions_.at(b); }

 private:
  Shim() : ConfiguredShim("tvm-ffi shim", "tvm-ffi function") {
    configure({kvc::shim::kTvmFfiShimConfigEnv, kvc::shim::OpNaming::kTvmFfiExport, "examples/tvm_ffi_shim/README.md"},
              [&](const kvc::shim::ShimConfig& config) {
                const std::vector<void*> modules = kvc::shim::open_libraries(config, RTLD_LAZY | RTLD_LOCAL);
                kvc::shim::for_each_binding(config,
                                            [&](const OpBinding& b) { functions_.emplace(&b, find(modules, b.op)); });
              });
  }

  TVMFFISafeCallType find(const std::vector<void*>& modules, const std::string& name) const {
    const std::string symbol = kSymbolPrefix + name;
    for (void* h : modules)
      if (void* f = dlsym(h, symbol.c_str()); f != nullptr) return reinterpret_cast<TVMFFISafeCallType>(f);
    throw kvc::shim::ConfigError("no module in \"libraries\" exports " + symbol + " (the function \"" + name +
                                 "\"; nm -D <module.so> | grep __tvm_ffi_ lists what a module exports)");
  }

  std::map<const OpBinding*, TVMFFISafeCallType> functions_;
};

std::string byte_array(const TVMFFIByteArray& a) { return std::string(a.data, a.size); }

// The raised error's "Kind: message", taking it out of tvm-ffi's thread-local slot.
std::string take_raised_error() {
  TVMFFIObjectHandle error = nullptr;
  TVMFFIErrorMoveFromRaised(&error);
  if (error == nullptr) return "an error without an error object";
  const TVMFFIErrorCell* cell = TVMFFIErrorGetCellPtr(error);
  std::string text = byte_array(cell->kind) + ": " + byte_array(cell->message);
  TVMFFIObjectDecRef(error);
  return text;
}

// The arguments of one call. The DLTensors are copies with byte_offset folded into data; they
// live as long as the call.
class Arguments {
 public:
  void add(const AbiValue& v) {
    TVMFFIAny a{};
    if (const auto* t = std::get_if<const DLTensor*>(&v)) {
      DLTensor& copy = tensors_.emplace_back(**t);
      copy.data = kvc::abi::first_element(**t);
      copy.byte_offset = 0;
      a.type_index = kTVMFFIDLTensorPtr;
      a.v_ptr = &copy;
    } else if (const auto* i = std::get_if<std::int64_t>(&v)) {
      a.type_index = kTVMFFIInt;
      a.v_int64 = *i;
    } else if (const auto* d = std::get_if<double>(&v)) {
      a.type_index = kTVMFFIFloat;
      a.v_float64 = *d;
    } else if (const auto* b = std::get_if<bool>(&v)) {
      a.type_index = kTVMFFIBool;
      a.v_int64 = *b ? 1 : 0;
    } else {
      a.type_index = kTVMFFINone;
    }
    values_.push_back(a);
  }
  const TVMFFIAny* data() const { return values_.data(); }
  std::int32_t size() const { return static_cast<std::int32_t>(values_.size()); }

 private:
  std::deque<DLTensor> tensors_;
  std::vector<TVMFFIAny> values_;
};

// For the duration of a call: the tensors' device current and the caller's stream the one tvm-ffi
// hands to kernels for that device; both restored on every way out.
class CallContext {
 public:
  CallContext(std::int32_t device_type, int device, void* stream) : device_type_(device_type), device_(device) {
    if (cudaGetDevice(&previous_device_) != cudaSuccess || cudaSetDevice(device) != cudaSuccess) {
      error_ = {KVC_STATUS_CUDA_ERROR, "cannot make device " + std::to_string(device) + " current"};
      return;
    }
    device_set_ = true;
    if (TVMFFIEnvSetStream(device_type, device, stream, &previous_stream_) != 0) {
      error_ = {KVC_STATUS_BAD_ARGUMENT, "TVMFFIEnvSetStream failed: " + take_raised_error()};
      return;
    }
    stream_set_ = true;
  }
  ~CallContext() {
    if (stream_set_) TVMFFIEnvSetStream(device_type_, device_, previous_stream_, nullptr);
    if (device_set_) cudaSetDevice(previous_device_);
  }
  CallContext(const CallContext&) = delete;
  CallContext& operator=(const CallContext&) = delete;

  const Outcome& error() const { return error_; }

 private:
  std::int32_t device_type_;
  int device_;
  int previous_device_ = 0;
  TVMFFIStreamHandle previous_stream_ = nullptr;
  bool device_set_ = false;
  bool stream_set_ = false;
  Outcome error_;
};

// The handle a module gets from TVMFFIEnvGetStream for the caller's stream: the caller's own,
// except that NULL, the ABI's name for the legacy default stream, becomes cudaStreamLegacy, which
// means that stream whatever --default-stream the module was built with.
TVMFFIStreamHandle module_stream(void* stream) {
  return kvc::shim::stream_handle_kind(stream) == kvc::shim::StreamHandleKind::kLegacyDefault ? cudaStreamLegacy
                                                                                              : stream;
}

Outcome call(const PreparedCall& p, void* stream) {
  const OpBinding& b = *p.binding;
  const TVMFFISafeCallType function = Shim::get().function(&b);
  Arguments args;
  for (const std::string& name : b.positional) {
    if (name == "none") {
      args.add(AbiValue());
      continue;
    }
    const auto it = p.values.find(name);
    if (it == p.values.end())
      return {KVC_STATUS_BAD_ARGUMENT, "argument \"" + name + "\" of " + b.op +
                                           " names no value of this ABI call (abi_call.h lists the names; \"none\" "
                                           "passes None)"};
    args.add(it->second);
  }
  // The stream is keyed by the tensors' device type (kDLCUDA or kDLCUDAManaged), as a kernel that
  // asks TVMFFIEnvGetStream(t.device.device_type, ...) looks it up.
  const std::int32_t device_type = std::get<const DLTensor*>(p.values.at("kv"))->device.device_type;
  TVMFFIAny result{};
  result.type_index = kTVMFFINone;
  int rc = 0;
  {
    const CallContext context(device_type, p.device, module_stream(stream));
    if (context.error().status != KVC_STATUS_OK) return context.error();
    rc = function(nullptr, args.data(), args.size(), &result);
  }
  if (rc != 0) {
    const std::string error = rc == -1 ? take_raised_error() : "a frontend error (status " + std::to_string(rc) + ")";
    const cudaError_t cuda = cudaPeekAtLastError();
    return {cuda != cudaSuccess ? KVC_STATUS_CUDA_ERROR : KVC_STATUS_BAD_ARGUMENT, b.op + " raised " + error};
  }
  if (result.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(result.v_obj);  // the ops return nothing
  return {};
}

}  // namespace

// kvc_library_info_get, kvc_op_support_get, kvc_kv_only_insert, kvc_legacy_insert, kvc_kv_norm.
KVC_SHIM_ENTRY_POINTS(Shim::get().state(), Shim::get().name(), call)
