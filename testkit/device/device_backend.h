// device_backend.h: the Backend that runs a case through a kernel library's C ABI on the GPU.
//
// run(): validates the case on the host (strict, values included: a kernel wrapper sees metadata
// only, so the harness checks slot and position ranges, duplicate slots, scale values and buffer
// coverage, exactly as the oracle does), uploads every tensor into its own device allocation
// between two guard zones (guarded_tensors.h; plain cudaMemcpy on the legacy default stream), the
// cache backing included (prefilled from out.cache: the canary), builds DLPack tensors and the
// op's argument struct (abi_args.h: kDLCUDA, strides in elements, offset_bytes kept as
// byte_offset so a misaligned base reaches the kernel as such), calls the ABI on a stream,
// synchronises, checks every guard zone and that every input is unchanged (after a rejected
// call: that every buffer is), and downloads the backing and q_out. The ABI's status comes back
// as the case's Status.
//
// Damage (a guard byte or an input byte changed, or any byte after a rejection) is memory
// corruption, never a status: by default run() throws BufferDamageError naming the buffer,
// region and offset (and, for the cache, the rows whose slot addresses the damaged bytes), so no
// caller (a test, a fuzz property, the runner) can miss it; with throw_on_damage off it is only
// recorded in last_checks(). A write farther out faults; the fault surfaces at the
// synchronisation and is thrown as DeviceFaultError (device_fault.h), whatever throw_on_damage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kvc/abi/dl_dtype.h"
#include "kvc/kernel_abi.h"
#include "testkit/backends/backend.h"
#include "testkit/device/abi_args.h"
#include "testkit/device/declared_support.h"
#include "testkit/device/device_buffers.h"
#include "testkit/device/guarded_layout.h"
#include "testkit/device/kernel_library.h"
#include "testkit/device/owned_stream.h"

namespace kvc::testkit {

// The DLPack type of a contract dtype, for the DLTensors the device side describes.
using abi::dl_dtype;

struct DeviceBackendOptions {
  // true: the host-side harness validation above runs first (a rejection never reaches the ABI).
  // false: the ABI sees the case as it is, for tests of the library's own metadata validation
  // and of its device-side skipping of out-of-range slots and positions.
  bool host_validation = true;
  // kvc_legacy_insert_args.force_grid: 0 = the library's choice, 1 = per-token grid, 2 =
  // large-batch grid. Bytes must not depend on it.
  int force_grid = 0;
  bool throw_on_damage = true;
  // Where the cache backing sits in its allocation: between two guard zones, or at its first
  // byte with unmapped addresses right before it (a page -1 write then faults).
  PayloadPlacement cache_placement = PayloadPlacement::kBetweenGuards;
};

class BufferDamageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The ABI returned a status outside the validation codes: a CUDA error (401), an op it does not
// implement although it said it did (402), or a malformed call (403).
class KernelCallError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What the last run() or kv_norm() did beyond its Status.
struct DeviceRunChecks {
  bool abi_called = false;  // false: the host validation rejected the case; nothing was uploaded
  int abi_status = KVC_STATUS_OK;
  std::string abi_message;  // the library's error text, if any
  std::vector<BufferDamage> damage;
  bool clean() const { return damage.empty(); }
  std::string to_string() const;  // one damage per line
};

class GuardedTensors;

class DeviceBackend final : public Backend {
 public:
  explicit DeviceBackend(KernelLibrary library, DeviceBackendOptions options = {});
  DeviceBackend(const DeviceBackend&) = delete;
  DeviceBackend& operator=(const DeviceBackend&) = delete;

  // "device:<library name> (<origin>, ABI x.y)"
  std::string name() const override;
  // What the library declares for the case's op (the fused kv_norm query for a KV-only case with
  // a kv_norm weight), format and kv dtype, then whether the case lies inside its declared
  // geometry (DeclaredSupport::insert_support: the reason names the limit). Invalid cases, and
  // cases the ABI could not even describe (no format for the cache dtype, an unknown op), are
  // "supported" so that their rejection is tested.
  Support supports(const InsertCase& c) const override;
  RsqrtMode rsqrt_mode(InsertOp op, bool q_norm) const override;
  // The profile the library declares for the case's (op, format, kv dtype) (abi_profile.h).
  kvc::Profile declared_profile(const InsertCase& c) const override;
  // The store op through the optional entry point kvc_store_rotated, with run()'s host
  // validation, guard zones, input and rejection checks; unsupported when the library does not
  // export it, declares the format unsupported or the case outside its declared geometry.
  Support supports_store(const StoreCase& c) const override;
  Status run_store(const StoreCase& c, std::vector<std::uint8_t>& backing) override;
  kvc::Profile declared_store_profile(const StoreCase& c) const override;
  Status run(const InsertCase& c, InsertOutputs& out) override;

  // Standalone kv_norm through kvc_kv_norm: kv [N, 512] bf16, weight [512] bf16, out resized to
  // N * 512. in_place passes the same memory as kv and out (the ABI allows the alias).
  Status kv_norm(const HostTensor& kv, const HostTensor& weight, float eps, std::vector<std::uint16_t>* out,
                 bool in_place = false);
  Support supports_kv_norm() const;
  // The rsqrt the standalone kv_norm uses, as declared (kvc_op_support_get of KVC_OP_KV_NORM).
  RsqrtMode kv_norm_rsqrt_mode() const;

  // The modes the library declares for a case's (op, format, kv dtype).
  RsqrtModes rsqrt_modes(const InsertCase& c) const;

  const DeviceRunChecks& last_checks() const { return checks_; }
  DeviceBackendOptions& options() { return options_; }
  const KernelLibrary& library() const { return library_; }
  // Everything the library declares (support, profiles, limits, validation scope), read once.
  const DeclaredSupport& declared() const { return declared_; }
  // ABI op calls made so far (kvc_kv_only_insert, kvc_legacy_insert, kvc_kv_norm).
  std::int64_t abi_calls() const { return abi_calls_; }

 private:
  // One ABI op call on the backend's stream: op(stream, error, capacity) returns its status.
  using AbiOpCall = std::function<int(void* stream, char* error, std::size_t error_capacity)>;
  // Calls the op, synchronises, checks `call`'s buffers into checks_ and maps the status
  // (status_of, then finish_damage_checks: a KernelCallError wins over damage).
  Status call_library(const char* entry_point, const GuardedTensors& call, const AbiOpCall& op);
  // Maps the ABI's return value to a Status (validation codes) or throws KernelCallError.
  Status status_of(int rc, const char* entry_point, const char* message);
  void finish_damage_checks();

  KernelLibrary library_;
  DeviceBackendOptions options_;
  void* stream();  // the backend's own stream, created on first use
  std::optional<OwnedStream> stream_;
  DeviceRunChecks checks_;
  std::vector<std::string> call_description_;  // what a fault report says about the call in flight
  std::int64_t abi_calls_ = 0;
  DeclaredSupport declared_;
};

}  // namespace kvc::testkit
