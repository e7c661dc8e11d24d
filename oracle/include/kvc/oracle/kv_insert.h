// kv_insert.h: the KV-only insert (fused_deepseek_v4_kv_rope_insert), docs/contract.md §3-4.
//
// For every row t < slots.size(0) with slot >= 0: widen, [kv_norm], GPT-J RoPE on dims 448..511,
// then the format's encoding into the record addressed by the slot. A packed format is RoPE
// followed by the store op (store_rotated.h): the rotated row rounded to 16 bits goes through
// store_rotated_row. Under a profile (options.h) the policies of docs/contract.md §6 apply. Rows >= slots.size(0) are
// never read; every byte outside the addressed records keeps its value. Cost: O(M x 512) scalar
// work, one record write per inserted row.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kvc/insert_case.h"
#include "kvc/oracle/options.h"
#include "kvc/oracle/record_codec.h"
#include "kvc/status.h"

namespace kvc::oracle {

// Validates (c.op must be kKvOnly), then inserts. Rejected cases write nothing.
Status kv_only_insert(const InsertCase& c, InsertOutputs& out, const OracleOptions& options = {});

// The KV side shared by both ops: every row t < slots.size(0) of an already validated case.
void insert_kv_rows(const InsertCase& c, std::vector<std::uint8_t>& backing, const OracleOptions& options);

// One row of it: encodes row t into `backing`. A negative slot writes nothing. With a fused
// kv_norm, `kv_norm_inverse` replaces the norm's correctly rounded r (an approximate-rsqrt check
// recomputes a record with r' this way, docs/contract.md §2); it is ignored without kv_norm.
void insert_kv_row(const InsertCase& c, const PagedCacheView& view, std::int64_t row,
                   std::vector<std::uint8_t>& backing, const OracleOptions& options,
                   std::optional<float> kv_norm_inverse = std::nullopt);

// The fp32 row the record encodes: widened input, optional kv_norm (with r given or the
// correctly rounded one), then RoPE.
void kv_row_after_rope(const InsertCase& c, std::int64_t row, float* out512,
                       std::optional<float> kv_norm_inverse = std::nullopt);
// The same before RoPE (what a profile with rope `none` encodes).
void kv_row_before_rope(const InsertCase& c, std::int64_t row, float* out512,
                        std::optional<float> kv_norm_inverse = std::nullopt);

// The correctly rounded r of row `row`'s fused kv_norm (the case must have a norm weight).
float kv_norm_rms_inverse(const InsertCase& c, std::int64_t row);

// GPT-J RoPE of dims 448..511 with the cos/sin row of row `row`'s position (KV rows and Q heads).
void rope_at_row_position(const InsertCase& c, std::int64_t row, float* row512);

}  // namespace kvc::oracle
