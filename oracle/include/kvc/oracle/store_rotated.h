// store_rotated.h: the store op (docs/contract.md §6.4) and the packed record encoder it shares
// with the insert ops.
//
// store_rotated writes one packed584 or packed528 record per row of 16-bit values that are
// already normed and rotated (SGLang's fused_store_cache), into the slot its index names; a
// negative index writes nothing. The KV-only insert is RoPE followed by this op: for a packed
// format its rows are rotated, rounded to 16 bits (rotated_row16) and handed to the same
// store_rotated_row, so for every case c, kv_only_insert(c) and store_rotated(store_case_of(c))
// write the same bytes (conformance/cpu/store_rotated_test.cpp checks it).
//
// Profiles (profile.h): the clamp order, Inf block, pad byte, exponent and amax floor policies
// apply as in the insert ops. The op never rotates; its rope policy decides only how packed584
// stores the RoPE dims: `rotate` through bf() as the insert does after its rotation (a NaN becomes
// 0x7FFF), `none` the input bits (NaN payloads kept).
#pragma once

#include <cstdint>
#include <vector>

#include "kvc/insert_case.h"
#include "kvc/oracle/options.h"
#include "kvc/oracle/record_codec.h"
#include "kvc/status.h"
#include "kvc/store_case.h"

namespace kvc::oracle {

// Validates (validate_store_rotated at o.level, then the backing), then writes every row in
// order (a slot given twice: the last row wins). Rejected cases write nothing.
Status store_rotated(const StoreCase& c, std::vector<std::uint8_t>& backing, const OracleOptions& o = {});

// The record codec's view of a store case's cache (a validated case).
PagedCacheView store_view(const StoreCase& c);

// Encodes one 512-value row of `dtype` (bf16; f16 on the legacy op's fp16 path) into the packed
// record of `slot` (nothing for slot < 0): block scales and e4m3 codes of the widened values,
// packed584's RoPE dims per the rope policy, the scale bytes and the pad byte.
void store_rotated_row(const std::uint16_t* row16, DType dtype, const PagedCacheView& view, std::int64_t slot,
                       std::vector<std::uint8_t>& backing, const OracleOptions& o);

// The 16-bit row a packed insert encodes for row `row` of an insert case: widened, kv_norm'd when
// fused, rotated (rope policy `rotate`) and rounded to kv's dtype; under rope `none` the input
// bits themselves (the normed, rounded values when kv_norm is fused).
void rotated_row16(const InsertCase& c, std::int64_t row, const Profile& p, std::uint16_t* out512);

// The store case a KV-only case on a packed cache amounts to: rows t < M as rotated_row16 gives
// them, indices = the slots, the same cache as a 3-D view. Throws std::invalid_argument for a
// legacy case, fp16 kv or a full-cache format.
StoreCase store_case_of(const InsertCase& c, const Profile& p = {});

}  // namespace kvc::oracle
