// device_case_buffers.h: an insert case (or a kv_norm call) resident on the device, for calls
// that outlive one run: CUDA-graph capture and replay, launches on streams the caller picks,
// inputs rewritten in place between calls, and caches too large to hold on the host.
//
// DeviceBackend::run() goes from host bytes to host bytes in one call. Graph and stream tests
// need the steps apart: upload once; enqueue the op through any kernel ABI table on any stream
// (inside a capture, where nothing else may touch the device); rewrite the inputs where the
// captured kernels read them; read the outputs back. Every tensor lives in its own allocation
// between two guard zones holding device_buffers.h's pattern (guarded_tensors.h). Every transfer
// goes through a pinned staging buffer on a non-blocking stream owned by the object
// (TransferPath::kStaged), so no transfer is ordered behind or ahead of work on the legacy
// default stream (the stream tests hold that stream on purpose). Transfers do not wait for the
// caller's streams: synchronise them before reading.
//
// Tensors too large for the host: a present tensor whose bytes are empty is allocated at its
// metadata's extent and zero-filled on the device, and an empty initial backing is allocated at
// backing_bytes() + kGuardBytes and filled with the canary on the device. write() fills the
// parts that matter, read() and scan() examine them in chunks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kvc/insert_case.h"
#include "kvc/kernel_abi.h"
#include "testkit/device/device_buffers.h"
#include "testkit/device/guarded_tensors.h"
#include "testkit/device/kernel_library.h"

namespace kvc::testkit {

// The device tensors of an insert call. For bf16_512's legacy op kQ and kQOut name one buffer
// (Q is rotated in place).
enum class CaseTensor : std::uint8_t {
  kKv,
  kSlots,
  kPositions,
  kCosSin,
  kFp8Scale,
  kQ,
  kQScaleInv,
  kKvNormWeight,
  kCache,  // the backing: payload offset 0 is backing byte 0
  kQOut,
};

class DeviceCaseBuffers {
 public:
  // Uploads every present tensor of `c`, the backing `initial.cache` and, for the legacy op, the
  // q output `initial.q_out` (empty: its extent of the canary). The cache's guard zones are a
  // page long (capped at 1 MiB), like DeviceBackend's. Throws DeviceError, or
  // std::invalid_argument for a case the ABI cannot express (abi_inexpressible()).
  DeviceCaseBuffers(const InsertCase& c, const InsertOutputs& initial);
  ~DeviceCaseBuffers();
  DeviceCaseBuffers(const DeviceCaseBuffers&) = delete;
  DeviceCaseBuffers& operator=(const DeviceCaseBuffers&) = delete;

  // The case whose metadata the DLTensors carry.
  const InsertCase& metadata() const { return case_; }

  // Enqueues the op through `abi` on `stream` (a cudaStream_t; not synchronised). Returns the
  // ABI's status; the library's error text goes to *message.
  int enqueue(const KernelAbi& abi, void* stream, std::string* message, std::int32_t force_grid = 0);

  // Overwrites every input tensor with `next`'s bytes, where the kernels read them. `next` must
  // be the same op with the same metadata (std::invalid_argument names the first tensor that
  // differs). Inputs are afterwards checked against these bytes.
  void write_inputs(const InsertCase& next);
  // Overwrites the backing and q_out (sizes as make_outputs gives them).
  void write_outputs(const InsertOutputs& out);
  // Writes bytes into one payload at `offset`. An input's expected bytes follow the write.
  void write(CaseTensor t, std::int64_t offset, const std::vector<std::uint8_t>& bytes);

  // Bytes [offset, offset + count) of one payload.
  std::vector<std::uint8_t> read(CaseTensor t, std::int64_t offset, std::int64_t count) const;
  // The whole backing and q_out (for caches that fit on the host).
  InsertOutputs read_outputs() const;
  // Every byte of a payload outside `excluded` (sorted or not) that differs from `fill`, the
  // first `max_reported` of them listed. Streams the payload through the host in chunks.
  ScanResult scan(CaseTensor t, std::uint8_t fill, std::vector<ByteRange> excluded, std::size_t max_reported) const;

  // Damage: both guard zones of every buffer, and every input payload that differs from what
  // was last written to it; the cache's guard damage names the rows whose slot addresses it.
  std::vector<BufferDamage> damage() const;

  std::int64_t payload_bytes(CaseTensor t) const;

 private:
  const GuardedDeviceBuffer& buffer(CaseTensor t) const;
  GuardedDeviceBuffer& buffer(CaseTensor t);
  const DLTensor* view(CaseTensor t, const TensorMeta& meta);

  InsertCase case_;                          // metadata only: the bytes are dropped after the upload
  std::vector<std::int64_t> slots_;          // the slots of rows t < M, kept to name out-of-range rows
  std::unique_ptr<GuardedTensors> tensors_;  // staged transfers, sized once the case is known
  std::vector<int> index_;                   // CaseTensor -> buffer id, -1 when absent
  kvc_kv_only_insert_args kv_only_args_{};
  kvc_legacy_insert_args legacy_args_{};
};

// The standalone kv_norm (kvc_kv_norm) resident on the device: kv [N, 512] bf16, weight [512]
// bf16, out [N, 512] bf16 (canary-filled), or out aliasing kv when in place.
class DeviceKvNormBuffers {
 public:
  DeviceKvNormBuffers(const HostTensor& kv, const HostTensor& weight, float eps, bool in_place);
  ~DeviceKvNormBuffers();
  DeviceKvNormBuffers(const DeviceKvNormBuffers&) = delete;
  DeviceKvNormBuffers& operator=(const DeviceKvNormBuffers&) = delete;

  int enqueue(const KernelAbi& abi, void* stream, std::string* message);
  // New kv and weight bytes (same metadata); out is left as it is.
  void write_inputs(const HostTensor& kv, const HostTensor& weight);
  // The N x 512 output rows.
  std::vector<std::uint16_t> read_out() const;
  std::vector<BufferDamage> damage() const;

 private:
  std::unique_ptr<GuardedTensors> tensors_;
  GuardedTensors::BufferId kv_buffer_ = 0, weight_buffer_ = 0, out_buffer_ = 0;  // out is kv's when in place
  std::int64_t rows_ = 0;
  std::int64_t out_offset_bytes_ = 0;
  bool in_place_ = false;
  kvc_kv_norm_args args_{};
};

}  // namespace kvc::testkit
