// device_allocation.h: the device memory under one guarded buffer: a mapped range inside a
// reserved virtual address range whose neighbours stay unmapped (CUDA virtual memory management),
// or plain cudaMalloc where that is not available.
//
// Reserved-range layout: [unmapped: far][mapped: bytes, rounded up to the granularity][unmapped:
// far], the whole range reserved by this object, so no other allocation is ever placed in it. A
// kernel that writes past the guard zones of the mapped range lands in unmapped addresses and
// faults (cudaErrorIllegalAddress) instead of silently corrupting whatever allocation lies next to
// it. Cost: physical memory rounded up to the granularity (2 MiB on current GPUs) per buffer;
// address space only for the unmapped ranges; a reserve, create, map and set-access per
// allocation and an unmap and free per release, a few driver calls where cudaMalloc and cudaFree
// were one each.
//
// The driver API is reached through cudaGetDriverEntryPointByVersion, not by linking libcuda
// (CUDA::cuda_driver): kvc::testkit_device is linked into programs that must start on machines
// without a driver (the CPU tests, the runner with --cpu-only), and the CUDA runtime, linked
// statically, loads the driver only when a CUDA call needs it.
#pragma once

#include <cstdint>
#include <string>

namespace kvc::testkit {

enum class AllocationKind : std::uint8_t {
  kReservedRange,  // mapped inside a reserved range with unmapped neighbours (VMM)
  kCudaMalloc,     // cudaMalloc: its neighbours are whatever the allocator put there
};

// "reserved range (VMM)" or "cudaMalloc".
const char* allocation_kind_name(AllocationKind k);

// Unmapped addresses on each side of a guarded buffer's mapped range: at least 1 GiB, and at
// least the payload, so that a record written at a slot up to twice the capacity, or a 32-bit
// offset wrapped below a cache of up to 4 GiB, lands in them. Address space only.
inline constexpr std::int64_t kMinUnmappedNeighbourBytes = std::int64_t{1} << 30;

class DeviceAllocation {
 public:
  // At least `bytes` (at least 1) on the current device. kReservedRange: `bytes` rounded up to the
  // granularity, mapped read-write, with `far_bytes` (rounded up) of unmapped reserved addresses on
  // each side; it falls back to cudaMalloc, with the reason on stderr, when the device offers no
  // VMM (once per process) or a driver call fails for this allocation. kCudaMalloc: exactly
  // `bytes` (compute-sanitizer's memcheck sees any access past it). `what` names the buffer in
  // errors. Throws DeviceError.
  DeviceAllocation(std::int64_t bytes, std::int64_t far_bytes, AllocationKind wanted, const std::string& what);
  ~DeviceAllocation();
  DeviceAllocation(DeviceAllocation&& other) noexcept;
  DeviceAllocation& operator=(DeviceAllocation&&) = delete;
  DeviceAllocation(const DeviceAllocation&) = delete;
  DeviceAllocation& operator=(const DeviceAllocation&) = delete;

  AllocationKind kind() const { return kind_; }
  // The first usable byte and how many there are (the mapped range, or the cudaMalloc'd bytes).
  std::uint8_t* base() const { return base_; }
  std::int64_t bytes() const { return bytes_; }
  // Unmapped reserved addresses right before base() and right after base() + bytes() (0 for
  // cudaMalloc).
  std::int64_t unmapped_before() const { return far_; }
  std::int64_t unmapped_after() const { return far_; }

 private:
  bool try_reserved_range(std::int64_t bytes, std::int64_t far_bytes, const std::string& what);
  void release() noexcept;

  AllocationKind kind_ = AllocationKind::kCudaMalloc;
  std::uint8_t* base_ = nullptr;
  std::int64_t bytes_ = 0;
  std::int64_t far_ = 0;
  std::uint64_t reserved_ = 0;  // CUdeviceptr of the reserved range
  std::int64_t reserved_bytes_ = 0;
};

// Why reserved ranges are unavailable on a device that does not offer VMM at all (the one reason
// the GPU tests of the layout skip for, instead of failing).
inline constexpr const char* kDeviceWithoutVmm = "the device does not support virtual memory management";

// The allocation granularity of a reserved range on the current device, or 0 when it has none
// (reserved_range_unavailable() says why).
std::int64_t reserved_range_granularity();
// "" when guarded buffers on the current device get reserved ranges; else why not
// (kDeviceWithoutVmm, or the driver call that failed).
std::string reserved_range_unavailable();

}  // namespace kvc::testkit
