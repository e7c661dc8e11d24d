// device_allocation.cpp: reserved ranges with unmapped neighbours, or cudaMalloc (see
// device_allocation.h).
#include "testkit/device/device_allocation.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <utility>

#include "testkit/device/device_buffers.h"

namespace kvc::testkit {
namespace {

// The driver's VMM entry points, looked up once per process.
struct DriverVmm {
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&::cuMemGetAllocationGranularity) get_granularity = nullptr;
  decltype(&::cuMemAddressReserve) address_reserve = nullptr;
  decltype(&::cuMemAddressFree) address_free = nullptr;
  decltype(&::cuMemCreate) create = nullptr;
  decltype(&::cuMemRelease) release = nullptr;
  decltype(&::cuMemMap) map = nullptr;
  decltype(&::cuMemUnmap) unmap = nullptr;
  decltype(&::cuMemSetAccess) set_access = nullptr;
  std::string missing;  // why the table is unusable, "" when complete
};

// The versions of the entry points: their CUDA 12.0 forms, which every driver of the toolkit the
// project builds with provides.
constexpr unsigned kEntryPointVersion = 12000;

template <typename F>
void look_up(const char* symbol, F* out, std::string* missing) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t e = cudaGetDriverEntryPointByVersion(symbol, &p, kEntryPointVersion, cudaEnableDefault, &found);
  if (e == cudaSuccess && found == cudaDriverEntryPointSuccess && p != nullptr) {
    *out = reinterpret_cast<F>(p);
    return;
  }
  if (missing->empty())
    *missing = std::string("cudaGetDriverEntryPointByVersion(") + symbol +
               ") failed: " + (e != cudaSuccess ? cudaGetErrorName(e) : "symbol not found in the driver");
}

const DriverVmm& driver() {
  static const DriverVmm table = [] {
    DriverVmm t;
    look_up("cuGetErrorName", &t.get_error_name, &t.missing);
    look_up("cuDeviceGet", &t.device_get, &t.missing);
    look_up("cuDeviceGetAttribute", &t.device_get_attribute, &t.missing);
    look_up("cuMemGetAllocationGranularity", &t.get_granularity, &t.missing);
    look_up("cuMemAddressReserve", &t.address_reserve, &t.missing);
    look_up("cuMemAddressFree", &t.address_free, &t.missing);
    look_up("cuMemCreate", &t.create, &t.missing);
    look_up("cuMemRelease", &t.release, &t.missing);
    look_up("cuMemMap", &t.map, &t.missing);
    look_up("cuMemUnmap", &t.unmap, &t.missing);
    look_up("cuMemSetAccess", &t.set_access, &t.missing);
    return t;
  }();
  return table;
}

std::string result_text(const char* call, CUresult r) {
  const char* name = nullptr;
  if (driver().get_error_name == nullptr || driver().get_error_name(r, &name) != CUDA_SUCCESS || name == nullptr)
    return std::string(call) + " returned " + std::to_string(static_cast<int>(r));
  return std::string(call) + ": " + name;
}

CUmemAllocationProp device_memory(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

// Per device: the granularity, or 0 and why not. Found once per device and process; the first
// "not available" is written to stderr, since every guarded buffer then silently loses its
// unmapped neighbours.
struct Availability {
  std::int64_t granularity = 0;
  std::string why_not;
};

Availability probe(int device) {
  const DriverVmm& d = driver();
  if (!d.missing.empty()) return {0, d.missing};
  CUdevice handle = 0;
  if (const CUresult r = d.device_get(&handle, device); r != CUDA_SUCCESS) return {0, result_text("cuDeviceGet", r)};
  int supported = 0;
  if (const CUresult r =
          d.device_get_attribute(&supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, handle);
      r != CUDA_SUCCESS)
    return {0, result_text("cuDeviceGetAttribute", r)};
  if (supported == 0) return {0, kDeviceWithoutVmm};
  const CUmemAllocationProp prop = device_memory(device);
  std::size_t granularity = 0;
  if (const CUresult r = d.get_granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM); r != CUDA_SUCCESS)
    return {0, result_text("cuMemGetAllocationGranularity", r)};
  if (granularity == 0) return {0, "cuMemGetAllocationGranularity returned 0"};
  return {static_cast<std::int64_t>(granularity), ""};
}

const Availability& availability() {
  static std::mutex m;
  static std::map<int, Availability> by_device;
  const int device = current_device();
  const std::lock_guard<std::mutex> lock(m);
  auto it = by_device.find(device);
  if (it == by_device.end()) {
    // The runtime's primary context must be current for the driver calls (cudaSetDevice makes it
    // so, without synchronising anything).
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    it = by_device.emplace(device, probe(device)).first;
    if (!it->second.why_not.empty())
      std::fprintf(stderr,
                   "kvconform: guarded device buffers on device %d use cudaMalloc, without unmapped neighbours (%s): "
                   "a write past a guard zone is not caught\n",
                   device, it->second.why_not.c_str());
  }
  return it->second;
}

std::int64_t round_up(std::int64_t n, std::int64_t to) { return (n + to - 1) / to * to; }

}  // namespace

const char* allocation_kind_name(AllocationKind k) {
  return k == AllocationKind::kReservedRange ? "reserved range (VMM)" : "cudaMalloc";
}

std::int64_t reserved_range_granularity() { return availability().granularity; }

std::string reserved_range_unavailable() { return availability().why_not; }

DeviceAllocation::DeviceAllocation(std::int64_t bytes, std::int64_t far_bytes, AllocationKind wanted,
                                   const std::string& what) {
  const std::int64_t n = bytes > 0 ? bytes : 1;
  if (wanted == AllocationKind::kReservedRange && try_reserved_range(n, far_bytes, what)) return;
  void* p = nullptr;
  check_cuda(cudaMalloc(&p, static_cast<std::size_t>(n)), "cudaMalloc of " + std::to_string(n) + " bytes for " + what);
  kind_ = AllocationKind::kCudaMalloc;
  base_ = static_cast<std::uint8_t*>(p);
  bytes_ = n;
}

bool DeviceAllocation::try_reserved_range(std::int64_t bytes, std::int64_t far_bytes, const std::string& what) {
  const Availability& a = availability();
  if (a.granularity == 0) return false;  // said once, in availability()
  const DriverVmm& d = driver();
  const int device = current_device();
  const std::int64_t mapped = round_up(bytes, a.granularity);
  const std::int64_t far = round_up(far_bytes > 0 ? far_bytes : 0, a.granularity);
  const std::int64_t total = mapped + 2 * far;
  auto fall_back = [&](const std::string& why) {
    std::fprintf(
        stderr,
        "kvconform: %s: no reserved range (%s); cudaMalloc instead: a write past its guard zones is not caught\n",
        what.c_str(), why.c_str());
    return false;
  };
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  CUdeviceptr range = 0;
  if (const CUresult r =
          d.address_reserve(&range, static_cast<std::size_t>(total), static_cast<std::size_t>(a.granularity), 0, 0);
      r != CUDA_SUCCESS)
    return fall_back(result_text("cuMemAddressReserve", r) + " of " + std::to_string(total) + " bytes");
  const CUmemAllocationProp prop = device_memory(device);
  CUmemGenericAllocationHandle handle = 0;
  if (const CUresult r = d.create(&handle, static_cast<std::size_t>(mapped), &prop, 0); r != CUDA_SUCCESS) {
    d.address_free(range, static_cast<std::size_t>(total));
    return fall_back(result_text("cuMemCreate", r) + " of " + std::to_string(mapped) + " bytes");
  }
  const CUdeviceptr at = range + static_cast<CUdeviceptr>(far);
  const CUresult mapped_result = d.map(at, static_cast<std::size_t>(mapped), 0, handle, 0);
  // The mapping holds the memory from here on: the handle is released either way, and the memory
  // goes back to the driver when the range is unmapped.
  d.release(handle);
  if (mapped_result != CUDA_SUCCESS) {
    d.address_free(range, static_cast<std::size_t>(total));
    return fall_back(result_text("cuMemMap", mapped_result));
  }
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (const CUresult r = d.set_access(at, static_cast<std::size_t>(mapped), &access, 1); r != CUDA_SUCCESS) {
    d.unmap(at, static_cast<std::size_t>(mapped));
    d.address_free(range, static_cast<std::size_t>(total));
    return fall_back(result_text("cuMemSetAccess", r));
  }
  kind_ = AllocationKind::kReservedRange;
  base_ = reinterpret_cast<std::uint8_t*>(static_cast<std::uintptr_t>(at));
  bytes_ = mapped;
  far_ = far;
  reserved_ = range;
  reserved_bytes_ = total;
  return true;
}

DeviceAllocation::~DeviceAllocation() { release(); }

DeviceAllocation::DeviceAllocation(DeviceAllocation&& other) noexcept
    : kind_(other.kind_),
      base_(std::exchange(other.base_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      far_(std::exchange(other.far_, 0)),
      reserved_(std::exchange(other.reserved_, 0)),
      reserved_bytes_(std::exchange(other.reserved_bytes_, 0)) {}

void DeviceAllocation::release() noexcept {
  // Failures are ignored: nothing can be done about them here, and after a fault (a sticky error)
  // every call fails anyway. Each resource is given back once: the moved-from object holds none.
  if (kind_ == AllocationKind::kReservedRange && reserved_ != 0) {
    // cudaFree waits for the device before it frees; unmapping does not promise to, and work a
    // library left on a stream of its own may still use the range.
    cudaDeviceSynchronize();
    const DriverVmm& d = driver();
    d.unmap(static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(base_)), static_cast<std::size_t>(bytes_));
    d.address_free(static_cast<CUdeviceptr>(reserved_), static_cast<std::size_t>(reserved_bytes_));
  } else if (kind_ == AllocationKind::kCudaMalloc && base_ != nullptr) {
    cudaFree(base_);
  }
  base_ = nullptr;
  reserved_ = 0;
}

}  // namespace kvc::testkit
