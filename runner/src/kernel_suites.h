// kernel_suites.h: kernel conformance: a kernel library on the GPU, through the device backend.
//
//   matrix         cases::kernel_matrix(op) of kv_only and legacy: every format x token count x
//                  block size x page kind (--max-tokens trims it, except the scenarios longer than any
//                  persistent grid, cases::kGridLoopTokens). Each case runs through the
//                  library and is judged by testkit's judge (testkit/compare/judge.h, the GPU
//                  suites' judge too) under the profile the library declares (or --profile):
//                  status, whole backing (profile checker, policy_report.h), q_out exactly or row
//                  by row under a declared approximate rsqrt; guard zones and inputs intact (the
//                  device backend throws on damage); a second run must write the same bytes. A
//                  failure carries its mismatch classes.
//   dspark         the upstream DSpark scenario (cases::conformance_matrix()), three rounds: the
//                  legacy op with its dummy query and the KV-only op each equal the oracle.
//   golden         the frozen fixtures through the library (the kv_norm ones through the fused op).
//   invalid        every validation rule broken alone, sent to the ABI: metadata rules must come
//                  back with their code and nothing written; harness rules are rejected before the
//                  library is called. Value rules (slot or position ranges, duplicates, scale
//                  values) are reported skipped here: gpu_invalid_input_test checks what a library
//                  does with them.
//   kv_norm        the standalone kv_norm (kv_norm_suites.h).
//   fused_kv_norm  the KV-only matrix with a kv_norm weight (kv_norm_suites.h).
//   store          the store op on the KV-only matrix's packed scenarios (store_suite.h).
//   stacked        the stacked context-KV registry (stacked_suite.h).
// An (op, format, kv dtype) the library does not implement, or an optional entry point it does
// not export, is skipped with its reason. Every check records the kernel bytes it compared, per
// ABI op (run_report.h), and messages call the library "the library": the report names it once.
//
// Built with the device backend (CUDA builds, kvc::testkit_device); in a CPU build the session
// cannot be made and device_backend_unavailable() says why.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "op_coverage.h"
#include "run_options.h"

namespace kvc::runner {

// "" in a build with the device backend, else why it has none.
std::string device_backend_unavailable();
// "" when a CUDA device can be used, else why not.
std::string cuda_device_unavailable_reason();
// "NVIDIA H200 (sm_90, 139.8 GiB)", or the reason no device can be used.
std::string device_description();

class KernelSession {
 public:
  // Loads `path`, else KVC_KERNELS, else our kernels (no GPU needed to load one). Throws
  // std::runtime_error naming the path and what is wrong with it.
  explicit KernelSession(const std::string& path);
  ~KernelSession();
  KernelSession(const KernelSession&) = delete;
  KernelSession& operator=(const KernelSession&) = delete;

  // "kvconform-kernels 0.1.0 (builtin, ABI 1.1)"
  std::string library() const;
  // What the library exports and declares, per ABI op (no GPU needed).
  std::vector<OpDeclaration> declarations() const;
  // One kernel suite (suite_plan.h: kKernelSuites), whatever --suites says; the run makes each in
  // a process of its own (suite_children.h). Needs a CUDA device; throws std::invalid_argument for
  // another name, and lets a CUDA error of the device's (testkit::DeviceError) through: after a
  // fault the context is lost, and the process running the suite reports it (cuda_fault.h).
  void run_suite(const std::string& suite, const RunOptions& options, const RunSink& sink);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvc::runner
