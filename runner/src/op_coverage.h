// op_coverage.h: per ABI op, what the kernel library declares and what the run compared.
//
// Before any check, the runner reads from the library, per op of abi_op.h, whether its entry
// point is exported (kvc_store_rotated and kvc_stacked_ctx_kv are optional symbols) and for which
// formats and dtypes kvc_op_support_get declares it supported, under which profile. After the run
// each op gets its checks (run, passed, failed, skipped) and the kernel bytes they compared, and
// one status. An op the library declares supported and exports, that the run was asked to check,
// must have compared bytes: otherwise it is uncovered and the run is INCOMPLETE, never PASSED.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "abi_op.h"

namespace kvc::runner {

enum class Export : std::uint8_t { kExported, kNotExported };

// What a library says about one op (kvc_op_support_get), read once per run.
struct OpDeclaration {
  AbiOp op = AbiOp::kKvOnly;
  Export exported = Export::kExported;
  // The combinations declared supported: "packed584/bf16", or the dtype alone for the ops without
  // a cache format (kv_norm, stacked_ctx_kv): "fp16".
  std::vector<std::string> supported;
  std::vector<std::string> profiles;  // the distinct profiles declared for them: "vllm"
  bool approximate_rsqrt = false;     // some of them declare the approximate rsqrt for their norm

  bool declared_supported() const { return !supported.empty(); }
};

enum class OpStatus : std::uint8_t {
  kCovered,      // kernel bytes of this op were compared
  kUncovered,    // declared supported, exported, asked for, and not one byte compared: INCOMPLETE
  kNotExported,  // the library does not export the entry point
  kNotDeclared,  // exported, but declared unsupported for every format and dtype
  kNotSelected,  // --ops or --suites left it out
  kNotRun,       // the kernel suites did not run (no device): the run says so loudly
  kNoLibrary,    // no kernel library was checked (--cpu-only, no device backend)
};
// "covered", "INCOMPLETE", "not exported", "not declared supported", "not selected", "not run",
// "no library"
std::string_view op_status_name(OpStatus s);

struct OpCoverage {
  AbiOp op = AbiOp::kKvOnly;
  bool declared = false;  // a declaration was read (a library was loaded)
  OpDeclaration declaration;
  bool selected = false;    // --ops and --suites ask for it
  bool suites_ran = false;  // the kernel suites ran
  std::int64_t checks = 0, passed = 0, failed = 0, skipped = 0;
  std::int64_t bytes_compared = 0;
  OpStatus status = OpStatus::kNoLibrary;
};

// The op's status from the rest (the rule above; an op with compared bytes is covered whatever
// it declared).
OpStatus op_status(const OpCoverage& c);

}  // namespace kvc::runner
