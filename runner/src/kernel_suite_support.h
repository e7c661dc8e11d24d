// kernel_suite_support.h: what every kernel suite shares: making a kernel check, recording device
// memory damage, and recording the judge's verdict (testkit/compare/judge.h) on one library call
// with the bytes it compared.
//
// Built with the device backend only (CUDA builds, kvc::testkit_device).
#pragma once

#include <optional>
#include <string>

#include "abi_op.h"
#include "kvc/insert_case.h"
#include "kvc/profile.h"
#include "kvc/store_case.h"
#include "run_report.h"
#include "testkit/compare/verdict.h"
#include "testkit/device/device_backend.h"

namespace kvc::runner {

// A passed kernel check until fail() or skip() says otherwise.
CheckResult kernel_check(const char* suite, std::string op, std::string format, std::string name);

// "packed584"
std::string format_key(RecordFormat f);

// Device memory damage is never a status: it fails the check and is classified as damage to a
// region no op may touch.
void record_damage(CheckResult& r, const std::string& what);

// Runs `body` (the library's part of one check) and turns the device's two failures into the
// check's verdict instead of an exception: memory damage (record_damage) and a call the library
// could not make ("kernel call failed: ...").
template <typename Body>
void judge_library_call(CheckResult& r, Body&& body) {
  try {
    body();
  } catch (const testkit::BufferDamageError& e) {
    record_damage(r, e.what());
  } catch (const testkit::KernelCallError& e) {
    fail(r, std::string("kernel call failed: ") + e.what());
  }
}

// The judge's verdict in the check: the bytes it compared under `op` (none when the library was
// not called: the harness rejected the case first), the approximate-rsqrt rows, and on a failure
// its report and mismatch classes.
void record_verdict(CheckResult& r, AbiOp op, const testkit::Verdict& v, bool library_called);

// One insert case through the library, judged under the profile it declares (or `profile`,
// `kvconform run --profile`). With `repeat`, a second run must write the same bytes. Damage and
// kernel call errors fail the check.
void check_insert(testkit::DeviceBackend& device, const std::optional<kvc::Profile>& profile, const InsertCase& c,
                  bool repeat, CheckResult& r);

// The same for a store case.
void check_store(testkit::DeviceBackend& device, const std::optional<kvc::Profile>& profile, const StoreCase& c,
                 bool repeat, CheckResult& r);

}  // namespace kvc::runner
