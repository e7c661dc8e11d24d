// legacy_insert.h: the Q+KV insert ("dummy query" path), docs/contract.md §4.
//
// Packed formats: every row t < N and head h < H gets optional Q-norm and optional RoPE and is
// stored (rounded to q's dtype) into q_out at the head-major or chunk-interleaved offset; heads
// H..Hp-1 are zero-filled. With q_interleaved, q_in is read chunk-interleaved too (over H heads).
// Full caches: Q is normed (optionally), always rotated, and written as bf16 in place or as fp8
// with the reciprocal scale. The KV side equals kv_only_insert's bytes for the same rows,
// positions and slots.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kvc/insert_case.h"
#include "kvc/oracle/options.h"
#include "kvc/oracle/q_out_codec.h"
#include "kvc/status.h"

namespace kvc::oracle {

Status legacy_insert(const InsertCase& c, InsertOutputs& out, const OracleOptions& options = {});

// One live Q head of a validated legacy case, as the op computes it before the store: q_in read
// at its layout's offset and widened, Q-norm when apply_q_norm (with `q_norm_inverse` as r when
// given, else the correctly rounded r), then RoPE when the path rotates (full caches always,
// packed when apply_q_rope).
void q_head_before_store(const InsertCase& c, std::int64_t t, std::int64_t h, float* row512,
                         std::optional<float> q_norm_inverse = std::nullopt);

// The correctly rounded r of head (t, h)'s Q-norm.
float q_head_rms_inverse(const InsertCase& c, std::int64_t t, std::int64_t h);

// Stores a live head's row into the q output bytes (q_out's dtype and layout: packed bf16/f16 at
// the head-major or interleaved offset, fp8_512 e4m3 with q_scale_inv, bf16_512 bf16).
void store_q_head(const InsertCase& c, std::int64_t t, std::int64_t h, const float* row512,
                  std::vector<std::uint8_t>& q_out_bytes);

// Where element (t, h, d) of the q output of a validated legacy case lies in its buffer
// (q_out_codec.h, with the case's Q output layout).
std::int64_t q_out_byte_offset(const InsertCase& c, std::int64_t t, std::int64_t h, int d);

}  // namespace kvc::oracle
