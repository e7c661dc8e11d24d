// backend_choice.h: the backend a kvconform-fuzz command runs against, chosen by its flags.
//
// --backend oracle (the default) runs the CPU oracle, optionally a deliberately broken mutant of
// it (--mutation). --backend device runs a kernel library on the GPU through the device backend:
// --kernels PATH.so, else KVC_KERNELS, else our kernels (testkit::KernelLibrary). A build without
// CUDA, a machine without a usable CUDA device and a library that fails to load are refused with
// a BackendUnavailable naming the reason, before any case runs.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "kvc/oracle/options.h"
#include "kvc/profile.h"
#include "testkit/backends/backend.h"

namespace kvc::fuzz {

enum class BackendKind : std::uint8_t { kOracle, kDevice };

// "oracle" / "device"; false for any other name.
bool backend_kind_from_name(const std::string& name, BackendKind* kind);

// Token limits of a device campaign unless given (--max-tokens, --max-legacy-tokens): KV-only
// problems up to 262144 tokens; legacy problems, which carry q_in and q_out for up to 128 heads,
// up to 16384.
inline constexpr std::int64_t kDeviceMaxTokens = 262144;
inline constexpr std::int64_t kDeviceMaxLegacyTokens = 16384;

struct BackendChoice {
  BackendKind kind = BackendKind::kOracle;
  std::string kernels;                                              // device: library path; empty: KVC_KERNELS or ours
  oracle::OracleMutation mutation = oracle::OracleMutation::kNone;  // oracle only
  kvc::Profile profile = kvc::vllm_profile();                       // oracle only (a library declares its own)
};

class BackendUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Whether this build has the device backend (a CUDA build).
bool device_backend_built();

// The backend, or throws BackendUnavailable (std::invalid_argument for contradictory choices: a
// mutation or a kernel library with the oracle backend's counterpart).
std::unique_ptr<testkit::Backend> make_backend(const BackendChoice& choice);

// Flags that select the same backend again, for reproduce lines: "" for the plain oracle,
// "--backend device --kernels PATH" (the library named by --kernels or KVC_KERNELS, when any).
std::string backend_flags(const BackendChoice& choice);

}  // namespace kvc::fuzz
