// q_out_codec.h: where each element of the legacy op's Q output lies, and which element a byte of
// it belongs to (docs/contract.md §4).
//
// Every Q output layout the contract has goes through here: the packed formats' q_out
// [N, Hp, 512] of q's dtype, head-major or chunk-interleaved; bf16_512's q, rewritten in place,
// [N, H, 512] bf16; fp8_512's q_fp8 [N, H, 512] e4m3 (QOutLayout, kvc/resolved_case.h). The op
// stores through q_out_byte_offset(); every report that names the token, head and dim of a
// differing q_out byte decodes it with locate_q_out_byte(), so the two cannot disagree.
#pragma once

#include <cstdint>
#include <optional>

#include "kvc/resolved_case.h"

namespace kvc::oracle {

// Element offset of (row t, head h, dim d) in a [N, heads, 512] tensor: head-major
// (t*heads + h)*512 + d, or chunk-interleaved t*heads*512 + (d/16)*heads*16 + h*16 + d%16.
// The Q output uses heads = its own head count; q_in (read interleaved when q_interleaved) uses H.
std::int64_t q_out_offset(std::int64_t t, std::int64_t h, int d, std::int64_t heads, bool interleaved);

// Byte offset, in the output buffer, of the first byte of element (t, h, d).
std::int64_t q_out_byte_offset(const QOutLayout& q, std::int64_t t, std::int64_t h, int d);

// The element a byte of the output buffer belongs to.
struct QOutElement {
  std::int64_t token = -1;
  std::int64_t head = -1;
  int dim = -1;
  int byte_in_element = 0;  // 0: the first (low) byte
};
// Nothing for a byte before element 0 or past the last element (or a layout without elements).
std::optional<QOutElement> locate_q_out_byte(const QOutLayout& q, std::int64_t byte_offset);

}  // namespace kvc::oracle
