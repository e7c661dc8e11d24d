// torch_shim.cpp: the kernel ABI over torch ops: run any torch extension's kernels (vLLM's _C, a
// custom op library) through the kvconform suite without writing C++ against them.
//
// On first use the shim reads its configuration (shim_config.h, KVC_TORCH_SHIM_CONFIG), dlopens
// the extension libraries it names with lazy binding (their static initialisers register the ops
// with the dispatcher), and finds every configured op by its schema name
// (c10::Dispatcher::findSchemaOrThrow). Per ABI call it:
//   1. checks the call and finds its binding (abi_call.h: 403 for a malformed call, the rule's
//      code for broken metadata, 404 for what the config does not bind; nothing launched);
//   2. wraps the caller's device buffers as tensors without copying (at::from_blob of data +
//      byte_offset with the DLPack sizes and strides, so a padded cache stays a strided view);
//   3. builds the op's boxed argument stack by the schema's argument names from the call's values
//      (vLLM's names, plus aliases and the config's "arguments" map; defaults and None for the
//      rest) and calls it with the caller's stream made current (CUDAStreamGuard; which torch
//      stream that is: torch_stream() below), without synchronising.
// Whatever throws inside a call (the op, torch itself: a c10::Error, any exception) answers 401
// when CUDA reports an error, else 403, with the message; nothing crosses the C boundary. A
// missing or broken config makes every op unsupported with that error, so the suite reports every
// case skipped and says why.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <torch/version.h>

#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "abi_call.h"
#include "configured_shim.h"
#include "stream_handle.h"
#include "kvc/abi/dl_dtype.h"
#include "kvc/abi/dlpack_metadata.h"
#include "kvc/kernel_abi.h"

namespace {

using kvc::DType;
using kvc::shim::AbiValue;
using kvc::shim::OpBinding;
using kvc::shim::Outcome;
using kvc::shim::PreparedCall;

class Shim : public kvc::shim::ConfiguredShim {
 public:
  static Shim& get() {
    static Shim shim;
    return shim;
  }

  const c10::OperatorHandle& handle(const OpBinding* b) const { return handles_.at(b); }

 private:
  Shim() : ConfiguredShim("torch shim", "torch op") {
    configure(
        {kvc::shim::kTorchShimConfigEnv, kvc::shim::OpNaming::kTorchSchema, "examples/torch_shim/README.md"},
        [&](const kvc::shim::ShimConfig& config) {
          // Loaded into the global namespace: their static initialisers register the ops.
          kvc::shim::open_libraries(config, RTLD_LAZY | RTLD_GLOBAL);
          kvc::shim::for_each_binding(config, [&](const OpBinding& b) {
            handles_.emplace(&b, c10::Dispatcher::singleton().findSchemaOrThrow(b.op.c_str(), b.overload.c_str()));
          });
        },
        std::string(" (torch ") + TORCH_VERSION + ")");
  }

  std::map<const OpBinding*, c10::OperatorHandle> handles_;
};

// ---- DLPack -> tensors (no copy) ------------------------------------------------------------

c10::ScalarType scalar_type(DLDataType t) {
  const auto d = kvc::abi::dtype_of(t);
  switch (d.value_or(DType::kU8)) {
    case DType::kBF16: return at::kBFloat16;
    case DType::kF16: return at::kHalf;
    case DType::kF32: return at::kFloat;
    case DType::kI64: return at::kLong;
    case DType::kI32: return at::kInt;
    case DType::kE4M3:
#if TORCH_VERSION_MAJOR >= 2 && (TORCH_VERSION_MAJOR > 2 || TORCH_VERSION_MINOR >= 1)
      return at::kFloat8_e4m3fn;
#else
      return at::kByte;  // no float8 dtype before torch 2.1: the bytes as uint8
#endif
    default: return at::kByte;
  }
}

at::Tensor wrap(const DLTensor& t) {
  std::vector<std::int64_t> sizes(t.shape, t.shape + t.ndim);
  std::vector<std::int64_t> strides =
      t.strides != nullptr ? std::vector<std::int64_t>(t.strides, t.strides + t.ndim) : kvc::contiguous_strides(sizes);
  const at::TensorOptions options =
      at::TensorOptions()
          .dtype(scalar_type(t.dtype))
          .device(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(t.device.device_id)));
  return at::from_blob(kvc::abi::first_element(t), sizes, strides, options);
}

c10::IValue ivalue(const AbiValue& v) {
  if (const auto* t = std::get_if<const DLTensor*>(&v)) return c10::IValue(wrap(**t));
  if (const auto* i = std::get_if<std::int64_t>(&v)) return c10::IValue(*i);
  if (const auto* d = std::get_if<double>(&v)) return c10::IValue(*d);
  if (const auto* b = std::get_if<bool>(&v)) return c10::IValue(*b);
  return c10::IValue();
}

// The caller's stream as a torch stream of `device`, by its kind (stream_handle.h):
//  - NULL and cudaStreamLegacy: torch's default stream of the device. Its handle is NULL, which
//    torch and extensions built with nvcc's default (--default-stream legacy) launch on as the
//    legacy default stream. (cudaStreamLegacy must never reach getStreamFromExternal: torch takes
//    the odd id 0x1 for a malformed internal stream id, "invalid StreamId".)
//  - cudaStreamPerThread and a created stream: getStreamFromExternal, whose stream id is the handle
//    itself (torch 2.x: an even, nonzero id is an external stream), so ops launch on the handle
//    given: for 0x2, the calling thread's default stream, the thread the op runs on.
// Then checked: the handle torch will hand to the op must be the one given, so that a torch that
// encodes stream ids otherwise answers an error instead of launching on another stream.
c10::cuda::CUDAStream torch_stream(void* stream, c10::DeviceIndex device) {
  const kvc::shim::StreamHandleKind kind = kvc::shim::stream_handle_kind(stream);
  if (kind == kvc::shim::StreamHandleKind::kLegacyDefault) return c10::cuda::getDefaultCUDAStream(device);
  const auto handle = static_cast<cudaStream_t>(stream);
  const c10::cuda::CUDAStream s = c10::cuda::getStreamFromExternal(handle, device);
  if (s.stream() != handle) {
    std::ostringstream why;
    why << "torch " << TORCH_VERSION << " cannot name " << kvc::shim::stream_handle_kind_name(kind) << " (" << stream
        << "): getStreamFromExternal gives a stream whose handle is " << static_cast<void*>(s.stream())
        << "; call with a created stream or the legacy default stream";
    throw std::invalid_argument(why.str());
  }
  return s;
}

Outcome failed(const OpBinding& b, const std::string& what) {
  const cudaError_t cuda = cudaPeekAtLastError();
  return {cuda != cudaSuccess ? KVC_STATUS_CUDA_ERROR : KVC_STATUS_BAD_ARGUMENT, b.display() + " threw: " + what};
}

// The op, called with the caller's stream current on the tensors' device. Everything that touches
// torch is inside the try: building tensors and the stack can throw c10::Error as well as the op.
Outcome call(const PreparedCall& p, void* stream) {
  const OpBinding& b = *p.binding;
  try {
    const c10::OperatorHandle& op = Shim::get().handle(&b);
    std::vector<c10::IValue> stack;
    for (const c10::Argument& a : op.schema().arguments()) {
      const auto rename = b.arguments.find(a.name());
      const std::string key = rename != b.arguments.end() ? rename->second : a.name();
      const auto it = p.values.find(key);
      if (it != p.values.end())
        stack.push_back(ivalue(it->second));
      else if (a.default_value())
        stack.push_back(*a.default_value());
      else if (a.type()->kind() == c10::TypeKind::OptionalType)
        stack.push_back(c10::IValue());
      else
        return {KVC_STATUS_BAD_ARGUMENT, "argument \"" + a.name() + "\" of " + b.display() +
                                             " has no value in this ABI call (map it in the config's \"arguments\")"};
    }
    const auto device = static_cast<c10::DeviceIndex>(p.device);
    const c10::cuda::CUDAGuard device_guard(device);
    const c10::cuda::CUDAStreamGuard stream_guard(torch_stream(stream, device));
    op.callBoxed(&stack);
  } catch (const c10::Error& e) {
    return failed(b, e.what_without_backtrace());
  } catch (const std::exception& e) {
    return failed(b, e.what());
  } catch (...) {
    return failed(b, "an exception that is not a std::exception");
  }
  return {};
}

}  // namespace

// kvc_library_info_get, kvc_op_support_get, kvc_kv_only_insert, kvc_legacy_insert, kvc_kv_norm.
KVC_SHIM_ENTRY_POINTS(Shim::get().state(), Shim::get().name(), call)
