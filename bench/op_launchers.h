// op_launchers.h: one enqueue of each timed operation, its ABI arguments built once.
//
// A Launch holds its DLTensors and argument struct, and calls the library through its ABI table
// (so ours and a third party's are driven identically); a non-zero status throws with the
// library's message. The copy roofline is a plain cudaMemcpyAsync of the same bytes.
#pragma once

#include <cstdint>
#include <string>

#include "device_workspace.h"
#include "gpu_timer.h"
#include "testkit/device/declared_support.h"
#include "testkit/device/kernel_library.h"

namespace kvc::bench {

// "" when the library declares `op` for format `f` with bf16 kv, else its reason
// (KVC_OP_KV_ONLY_INSERT_KV_NORM: the fused insert, asked as the plain one of a library before 1.2).
std::string unsupported_reason(const testkit::DeclaredSupport& declared, kvc_op op, RecordFormat f);

// The KV-only insert of the current size into format f's cache; with `fused_kv_norm` the kv_norm
// weight is passed (kv_norm fused in front).
Launch kv_only_launch(const testkit::KernelAbi& abi, DeviceWorkspace& ws, RecordFormat f, bool fused_kv_norm);

// The legacy insert with `heads` query heads (Hp = heads for packed formats).
Launch legacy_launch(const testkit::KernelAbi& abi, DeviceWorkspace& ws, RecordFormat f, std::int64_t heads);

// Standalone kv_norm into a separate buffer, then the KV-only insert of the normed rows: what
// the fused form saves is one write and one read of the rows, and one launch.
Launch unfused_kv_norm_insert_launch(const testkit::KernelAbi& abi, DeviceWorkspace& ws, RecordFormat f);

// A device-to-device copy of `bytes` bytes (it moves twice that: read plus write).
Launch copy_launch(void* dst, const void* src, std::int64_t bytes);

}  // namespace kvc::bench
