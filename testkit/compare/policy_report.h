// policy_report.h: the profile-aware checker (docs/contract.md §6).
//
// A backend's cache bytes are compared with the oracle's run under the profile the backend
// declares (the judge, judge.h, runs it and calls this checker). When they differ, the checker
// re-encodes the rows whose records differ under every combination of the other alternatives of
// the policies that apply to the format, takes the combination that reproduces the most bytes
// (the fewest policies on a tie), and groups the differing bytes by field and by the policies
// they need: "854 fp8 codes follow clamp order `sglang` and Inf block `sglang`; declared profile
// `vllm`". Bytes no profile reproduces are listed as unexplained.
//
// A write outside the records the op addresses is an address error under every profile, never a
// policy (§6.3): guard or outside-the-view bytes (before the cache, past it), page padding, row
// gaps, another slot's record. The checker names the row and slot that caused each one where a
// known address-arithmetic mistake explains it: a negative slot that is not skipped and is
// addressed with floor division (SGLang: slot -1 writes the last token of page -1, before the
// cache), with C's truncating division, or with its page or the slot itself truncated to 32 bits
// (SGLang with the int64 slot -2^62: page 0 token 0).
//
// Cost: no oracle run of its own (the caller's, under the declared profile, is its reference:
// judge.h runs it once per judgment), then one re-encoding of at most kSearchRows differing rows
// per combination (2^6 at most), and one per followed policy.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvc/insert_case.h"
#include "kvc/profile.h"
#include "kvc/oracle/record_codec.h"
#include "kvc/store_case.h"
#include "testkit/compare/backing_diff.h"

namespace kvc::testkit {

// Differing rows the combination search re-encodes (the chosen profile is then applied to all).
inline constexpr std::int64_t kSearchRows = 1024;

// Differing record bytes of one field class that need the same alternatives.
struct PolicyGroup {
  ByteClass field = ByteClass::kFp8Code;  // a record byte class: fp8 code, scale, scale pad, 16-bit value
  std::vector<kvc::Policy> policies;      // each needed (reverting any one breaks these bytes)
  bool any_one = false;                   // instead: each of `policies` alone reproduces them
  std::int64_t bytes = 0;
};

// A row whose slot, addressed with a known mistake, explains stray writes.
struct AddressCulprit {
  std::int64_t row = 0;
  std::int64_t slot = 0;
  std::string arithmetic;  // "floor division", "page truncated to 32 bits", ...
  std::int64_t page = 0;   // where that arithmetic puts the record
  std::int64_t token = 0;
  std::int64_t bytes = 0;  // stray bytes inside that record's footprint
  std::string where;       // "before the cache", "foreign slot 0 (page 0 token 0)", ...
};

struct PolicyReport {
  kvc::Profile declared;
  std::int64_t compared_bytes = 0;
  std::int64_t mismatching_bytes = 0;    // against the oracle under the declared profile
  std::int64_t record_bytes = 0;         // of them, inside records the case addresses
  std::vector<PolicyGroup> groups;       // record bytes another profile reproduces
  std::optional<kvc::Profile> followed;  // that profile (declared, with the groups' policies)
  std::int64_t unexplained_bytes = 0;    // record bytes no profile reproduces
  std::int64_t address_error_bytes = 0;  // never excused
  std::vector<AddressCulprit> culprits;
  std::int64_t unattributed_address_bytes = 0;
  std::string text;

  bool equal() const { return mismatching_bytes == 0; }
  // The backend is right under some profile: only policy bytes, no address errors.
  bool only_policies() const { return mismatching_bytes > 0 && unexplained_bytes == 0 && address_error_bytes == 0; }
};

// The checker on an insert case (both ops: their cache bytes). `initial` is the backing before
// the call, `expected` the oracle's backing under `declared` (written over `initial`: the caller
// runs the oracle, once, judge.h), `actual` the backend's; the case must be one the oracle
// accepts.
PolicyReport check_insert_under_profile(const InsertCase& c, const kvc::Profile& declared,
                                        const std::vector<std::uint8_t>& initial,
                                        const std::vector<std::uint8_t>& expected,
                                        const std::vector<std::uint8_t>& actual, const std::string& actual_name);
// The same for the store op.
PolicyReport check_store_under_profile(const StoreCase& c, const kvc::Profile& declared,
                                       const std::vector<std::uint8_t>& initial,
                                       const std::vector<std::uint8_t>& expected,
                                       const std::vector<std::uint8_t>& actual, const std::string& actual_name);

// Rows whose (negative) slot, addressed with a known mistake, covers the given backing offsets
// (negative: before the backing, as a device guard zone reports them). `row_slots[t]` is row t's
// slot. One entry per (row, arithmetic) that covers at least one offset.
std::vector<AddressCulprit> address_culprits(const oracle::PagedCacheView& view,
                                             const std::vector<std::int64_t>& row_slots,
                                             const std::vector<std::int64_t>& offsets);

}  // namespace kvc::testkit
