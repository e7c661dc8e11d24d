// stream_handle.cpp: the kind of stream an ABI call names (see stream_handle.h).
#include "stream_handle.h"

namespace kvc::shim {

StreamHandleKind stream_handle_kind(const void* stream) {
  const auto handle = reinterpret_cast<std::uintptr_t>(stream);
  if (handle == 0 || handle == kCudaStreamLegacyHandle) return StreamHandleKind::kLegacyDefault;
  if (handle == kCudaStreamPerThreadHandle) return StreamHandleKind::kPerThreadDefault;
  return StreamHandleKind::kCreated;
}

const char* stream_handle_kind_name(StreamHandleKind kind) {
  switch (kind) {
    case StreamHandleKind::kLegacyDefault: return "the legacy default stream";
    case StreamHandleKind::kPerThreadDefault: return "the per-thread default stream";
    case StreamHandleKind::kCreated: break;
  }
  return "a created stream";
}

}  // namespace kvc::shim
