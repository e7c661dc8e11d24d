// edge_values.h: the edge values of docs/contract.md §3.7, planted into rows of 512 bf16 values.
//
// Random rows (normal or wide-range draws) never hold NaN, Inf, -0 or a bf16 subnormal, so a
// kernel matrix of them leaves the clamp that sends NaN to 0xFE, the Inf block's 0xFF scale, the
// sign of zero, the NaN canonicalisation of the 16-bit stores and the subnormal paths to the
// golden fixtures alone. plant_edge_values() overwrites a few dims of every row, the pattern
// chosen by the row's index modulo kEdgePatterns, so that any 8 consecutive rows hold all of
// them and a case of 17 rows with every fifth slot -1 still inserts each at least once:
//
//   0  NaN 0x7FC0 in NoPE dim 70, the negative NaN with a payload 0xFFC1 in NoPE dim 200
//   1  +Inf in NoPE dim 130 beside finite values of both signs and a -0 (dim 131)
//   2  -Inf in NoPE dim 260, the rest of its block as drawn
//   3  the signalling-payload NaN 0x7F81 in RoPE dim 452 (its GPT-J pair 453 becomes NaN too)
//   4  +Inf in RoPE dim 470, -Inf in RoPE dim 501
//   5  a whole packed584 block of -0 (dims 320..383) and a -0 in RoPE dim 490
//   6  a block of bf16 subnormals of both signs (dims 384..447), subnormals in dims 0..15 of an
//      otherwise normal block and in RoPE dim 480
//   7  values past the fp8 range: 330, -1e4 and the largest finite bf16 (+-3.39e38) in NoPE dims
//      10..13 (fp8_512 with a scale below 1 saturates them; without the clamp they would be NaN)
//      and 3.39e38 in RoPE dim 460 (its rotation overflows to Inf)
//
// The same rows go to the legacy op's q heads, where a NaN or Inf in a head makes its q-norm
// NaN or 0 (docs/contract.md §2.4). Cost: a few stores per row.
#pragma once

#include <cstdint>
#include <vector>

namespace kvc::testkit {

inline constexpr int kEdgePatterns = 8;

// Overwrites dims of every row of `rows` (a multiple of 512 bf16 values) as the table above says.
void plant_edge_values(std::vector<std::uint16_t>& rows);

}  // namespace kvc::testkit
