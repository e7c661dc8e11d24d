// out_of_bounds_fault_child.cpp: one call that faults, in a process of its own, for
// gpu_out_of_bounds_test (a CUDA fault leaves the process's context unusable, so the test runs it
// here and reads what this process printed).
//
//   kvc_out_of_bounds_fault_child <library.so> far-past-end|page-minus-one-at-byte-0 catch|abort
//
// far-past-end: a packed584 case whose row 1 has slot 1032 (capacity 32), the cache between its
// guard zones: the record lands about 570 KiB past the end, in the unmapped range.
// page-minus-one-at-byte-0: row 1 has slot -1 and the cache sits at byte 0 of its mapping: the
// record lands on page -1, in the unmapped range right before it.
// The library (writes_out_of_range_rows) writes those records; the device backend must throw
// DeviceFaultError. `catch`: print it and exit 3. `abort`: abort at once, as a process whose
// context faulted may, so that only what the backend printed when it found the fault remains.
// Exit 0: no fault (the damage, if any, printed); 1: another error; 2: usage.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "conformance/gpu/out_of_bounds_cases.h"
#include "testkit/backends/backing.h"
#include "testkit/device/device_backend.h"
#include "testkit/device/device_fault.h"
#include "testkit/device/kernel_library.h"

namespace {

constexpr int kFaultCaught = 3;

int usage() {
  std::fprintf(stderr,
               "usage: kvc_out_of_bounds_fault_child <library.so> far-past-end|page-minus-one-at-byte-0 "
               "catch|abort\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return usage();
  const std::string library = argv[1], scenario = argv[2], ending = argv[3];
  const bool far = scenario == "far-past-end";
  if ((!far && scenario != "page-minus-one-at-byte-0") || (ending != "catch" && ending != "abort")) return usage();
  try {
    kvc::testkit::DeviceBackendOptions options;
    options.host_validation = false;  // the library must see the out-of-range slot
    options.throw_on_damage = false;
    if (!far) options.cache_placement = kvc::testkit::PayloadPlacement::kAtMappingStart;
    kvc::testkit::DeviceBackend device(kvc::testkit::KernelLibrary::open(library), options);
    const kvc::InsertCase c = kvc::gpu::case_with_slots(kvc::RecordFormat::kPacked584, {3, far ? 1032 : -1, 9});
    kvc::InsertOutputs out = kvc::testkit::make_outputs(c);
    try {
      const kvc::Status s = device.run(c, out);
      std::printf("child: no fault; status %s\n%s", s.ToString().c_str(), device.last_checks().to_string().c_str());
      return 0;
    } catch (const kvc::testkit::DeviceFaultError& fault) {
      if (ending == "abort") std::abort();
      std::printf("child: DeviceFaultError caught (cudaError %d):\n%s\n", fault.cuda_error(), fault.what());
      return kFaultCaught;
    }
  } catch (const std::exception& e) {
    std::printf("child: %s\n", e.what());
    return 1;
  }
}
