// planted_backends.h: a backend with deliberate differences, to show the profile checker
// (policy_report.h) catching and naming each one.
//
// PlantedBackend runs the oracle under one profile and declares another: the shape of a kernel
// that follows SGLang's policies but is checked as `vllm` (or declares them honestly, for the
// "accepted under its profile" side). Optionally it also makes the address mistakes of such a
// kernel on the packed formats, for both ops: a row with a negative slot is not skipped but
// written at
//   kNegativeSlotFloorPage: page floor(slot / bs), token slot mod bs (SGLang's shift and mask:
//                           slot -1 writes the last token of page -1, before the cache);
//   kPageTruncatedTo32Bits: the same page truncated to int32 (SGLang with the int64 slot -2^62
//                           and a power-of-two bs: page 0 token 0, another slot's record).
// The stray record is the row's own record under the run profile. A CPU backend cannot write
// outside its buffer: a case whose stray record would leave the backing throws
// std::logic_error (give the cache a base offset of at least one page).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvc/profile.h"
#include "testkit/backends/backend.h"

namespace kvc::testkit {

enum class AddressDefect : std::uint8_t { kNegativeSlotFloorPage = 0, kPageTruncatedTo32Bits = 1 };

class PlantedBackend final : public Backend {
 public:
  PlantedBackend(kvc::Profile runs_under, kvc::Profile declares, std::optional<AddressDefect> defect = std::nullopt);
  // "planted[runs sglang-store, declares vllm, negative slots at the floor page]"
  std::string name() const override;
  Status run(const InsertCase& c, InsertOutputs& out) override;
  kvc::Profile declared_profile(const InsertCase& c) const override;
  Support supports_store(const StoreCase& c) const override;
  Status run_store(const StoreCase& c, std::vector<std::uint8_t>& backing) override;
  kvc::Profile declared_store_profile(const StoreCase& c) const override;

 private:
  kvc::Profile runs_under_;
  kvc::Profile declares_;
  std::optional<AddressDefect> defect_;
};

}  // namespace kvc::testkit
