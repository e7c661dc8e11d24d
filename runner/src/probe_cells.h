// probe_cells.h: the calls `kvconform probe` sends: every cell of the invalid-input matrices,
// broken, with what the rule calls for.
//
// A cell is a rule breaker applied to the small valid case of one op and format: the insert
// matrix (testkit::rule_matrix(), cells named as the invalid suites name them,
// "SlotBeyondTheCache_KvOnly_Packed584"), the store op's (store_rule_matrix(),
// "IndexAtCapacity_packed584_PagedView") and the stacked projection's ("Stacked_CacheLocBeyondPool").
// Each is built here once per process, the same in the parent (which lists and filters them) and
// in the child (which sends one, found by name). Cells the library cannot be sent are marked with
// the reason: a harness rule (the caller's host buffers do not cover the case: a library sees
// device pointers, not allocation sizes) or metadata a DLTensor cannot carry.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "abi_op.h"
#include "kvc/insert_case.h"
#include "kvc/stacked_ctx_kv_case.h"
#include "kvc/status.h"
#include "kvc/store_case.h"

namespace kvc::runner {

enum class ProbeFamily : std::uint8_t { kInsert = 0, kStore = 1, kStacked = 2 };
std::string_view probe_family_name(ProbeFamily f);  // "insert", "store", "stacked"

struct InsertCall {
  InsertCase c;
  InsertOutputs out;  // the canary backing and q_out handed over
};
struct StoreCall {
  StoreCase c;
  std::vector<std::uint8_t> backing;
};
struct StackedCall {
  StackedCtxKvCase c;
  StackedCtxKvOutputs out;
  StackedPathRequest path = StackedPathRequest::kAuto;  // the breaker's request (E157 rows ask for a path)
};

struct ProbeCell {
  ProbeFamily family = ProbeFamily::kInsert;
  std::string name;           // unique: the invalid suites' cell name ("Stacked_" + rule for the stacked op)
  std::string rule;           // the breaker's name
  ErrorCode code{};           // the rule's code
  AbiOp op = AbiOp::kKvOnly;  // the entry point and op the broken call reaches
  std::string format;         // "packed584", "packed584/SglangFlat", "-" (stacked)
  std::optional<RecordFormat> base_format;  // the valid case's format (none for the stacked op)
  std::string not_sent;                     // non-empty: why the library is not called
  // The statuses that answer the rule: its code, or KVC_STATUS_BAD_ARGUMENT when a required tensor
  // is left out (a NULL pointer through the ABI). KVC_STATUS_UNSUPPORTED joins them where the
  // library declares the call outside its support (probe_library.h).
  std::vector<int> right_codes;
  std::variant<InsertCall, StoreCall, StackedCall> call;
};

// Every cell, in matrix order (insert, store, stacked), built from seed `seed` (the insert and
// store small cases; the stacked case has a fixed seed).
std::vector<ProbeCell> probe_cells(std::uint64_t seed);

}  // namespace kvc::runner
