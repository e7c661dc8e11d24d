// probe_command.h: `kvconform probe`, what a kernel library does with bad input.
//
//   kvconform probe [--kernels lib.so] [--ops kv_only,legacy,...] [--rules SlotBeyondTheCache,...]
//                   [--json FILE] [--seed N] [--timeout S]
//
// Every rule breaker of the invalid-input matrices (probe_cells.h) is sent to the library itself,
// host validation off, inside guard zones, one child process per call (the hidden subcommand
// `probe-one --cell NAME`, so that a crash, a CUDA fault or a hang is the call's class and the
// probe goes on), and classified (testkit/probe/classify_probe.h): rejected with the right code,
// with another code, returned ok and wrote nothing, wrote inside the addressed records, wrote out
// of bounds, read out of bounds, CUDA fault, crashed, hung, or not sent (harness rules and
// metadata a DLTensor cannot carry). A rule the library declares it does not enforce
// (kvc_op_support.validation NONE, or LISTED without its code) is marked "not declared enforced".
// The `invalid` suite of `kvconform run` checks our front-end; the probe says what a kernel does.
//
// Exit status: 0 every selected call was classified (the probe reports, it does not judge); 2
// usage (an unknown op or rule, a selection with nothing to send, an unwritable report); 3 the
// library cannot be loaded; 4 NOTHING PROBED: no usable CUDA device, or a build without the
// device backend.
#pragma once

#include <memory>

#include <CLI/CLI.hpp>

namespace kvc::runner {

inline constexpr int kProbeClassified = 0;
inline constexpr int kProbeUsage = 2;
inline constexpr int kProbeLibraryNotLoaded = 3;
inline constexpr int kProbeNoDevice = 4;

class ProbeCommand {
 public:
  // Adds `probe` and the hidden `probe-one` under `parent`.
  explicit ProbeCommand(CLI::App& parent);
  ~ProbeCommand();
  ProbeCommand(const ProbeCommand&) = delete;
  ProbeCommand& operator=(const ProbeCommand&) = delete;

  bool selected() const;  // probe or probe-one
  int execute();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kvc::runner
