// legacy_insert.h: the Q+KV insert ("dummy query" path), SPEC.md §4.
//
// Packed formats: every row t < N and head h < H gets optional Q-norm and optional RoPE and is
// stored (rounded to q's dtype) into q_out at the head-major or chunk-interleaved offset; heads
// H..Hp-1 are zero-filled. Full caches: Q is normed (optionally), always rotated, and written
// as bf16 in place or as fp8 with the reciprocal scale. The KV side equals kv_only_insert's bytes
// for the same rows, positions and slots.
#pragma once

#include "kvc/insert_case.h"
#include "kvc/oracle/options.h"
#include "kvc/status.h"

namespace kvc::oracle {

Status legacy_insert(const InsertCase& c, InsertOutputs& out, const OracleOptions& options = {});

// q_out element offset of (row t, head h, dim d) for Hp heads: head-major (t*Hp + h)*512 + d, or
// chunk-interleaved t*Hp*512 + (d/16)*Hp*16 + h*16 + d%16.
std::int64_t q_out_offset(std::int64_t t, std::int64_t h, int d, std::int64_t hp, bool interleaved);

}  // namespace kvc::oracle
