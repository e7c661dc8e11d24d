// offset_views.h: an InsertCase whose every tensor is a view at a byte offset into a larger buffer.
//
// torch hands kernels views whose data starts past their allocation (a slice, a narrow, one
// buffer shared by several tensors): DLPack's byte_offset, TensorMeta::offset_bytes here. A kernel
// that ignores the offset, or rounds the pointer down, reads and writes the wrong bytes; one whose
// vector path assumes more alignment than the view has faults or never takes its scalar path.
// The contract (docs/contract.md §5.2, rule 202) requires 16-byte alignment of the kv, q, q_out,
// cos_sin_cache and cache bases only (and of the page and token strides); every other tensor may
// sit at any offset of its element size. So place_in_offset_views() puts
//   kv at 48, q at 32, q_out at 80 (bf16_512: q's offset, q is rotated in place), cos_sin_cache
//     at 16 and the cache at 64: 16-byte multiples other than 0, the only offsets strict
//     validation accepts (a 2-byte offset of these is rule 202: the rule matrix's Misaligned*
//     breakers, testkit/cases/rule_breakers.h);
//   slot_mapping at 8, position_ids at 24 (8-byte elements), fp8_scale at 4, q_scale_inv at 12:
//     aligned to their element, not to 16 bytes;
// and place_kv_norm_weight() puts a kv_norm weight at 2: aligned to its bf16 element, not to 16
// bytes, which sends our kernels down their scalar weight loads (kernels/src/rms_norm.cuh).
// The bytes before a view are a decoy a kernel must not read: the canary byte for the float and
// bf16 tensors (a bf16_512 legacy case's q shares its buffer with q_out, whose bytes before the
// view the oracle leaves as the canary), a free slot before slot_mapping and position 0 before
// position_ids, so that a kernel reading them writes a record the byte comparison names instead of
// faulting. Values, geometry and outputs are otherwise unchanged: the oracle's cache bytes are the
// case's own shifted by the cache offset. Cost: one copy of each tensor.
#pragma once

#include <cstdint>

#include "kvc/insert_case.h"

namespace kvc::testkit {

struct OffsetViewBytes {
  std::int64_t kv = 48;
  std::int64_t q = 32;
  std::int64_t q_out = 80;
  std::int64_t cos_sin = 16;
  std::int64_t cache = 64;
  std::int64_t slots = 8;
  std::int64_t positions = 24;
  std::int64_t fp8_scale = 4;
  std::int64_t q_scale_inv = 12;
  std::int64_t kv_norm_weight = 2;
};
inline constexpr OffsetViewBytes kOffsetViewBytes{};

// Moves every present tensor of `c` (a case with every tensor at offset 0) to its offset above.
// `free_slot` is the decoy before slot_mapping: a slot no row addresses.
void place_in_offset_views(InsertCase& c, std::int64_t free_slot);

// `weight` (offset 0) moved to kOffsetViewBytes.kv_norm_weight.
HostTensor place_kv_norm_weight(HostTensor weight);

// A tensor's bytes moved `offset` bytes into its buffer, the bytes before it set to `decoy`
// (one element's bytes, repeated). Exposed for the tests' misaligned variants.
void move_to_offset(HostTensor& t, std::int64_t offset, const std::uint8_t* decoy, int decoy_bytes);

}  // namespace kvc::testkit
