// encodings.h: the contract's narrowings and encodings as tensor operations (docs/contract.md
// §2.1 to §2.3).
//
// 16-bit values travel as int32 tensors holding the bit pattern (0..0xFFFF); e4m3 codes and
// scale bytes as int32 tensors holding 0..255. Torch's own bf16 and fp16 casts do the rounding
// (the probes check that they are round-to-nearest-even with subnormals); NaN is set to the
// contract's 0x7FFF explicitly, because torch's NaN bit patterns differ between its scalar and
// vector paths. e4m3 is encoded by integer arithmetic on the fp32 bits, so it does not depend on
// a float8 dtype (Debian's torch 1.13 has none).
#pragma once

#include <torch/torch.h>

namespace kvc::golden_generator {

enum class Storage16 : std::uint8_t { kBf16, kF16 };

// f32(b): exact widening of 16-bit patterns (int32 tensor) to kFloat32.
torch::Tensor widen16(const torch::Tensor& bits, Storage16 storage);
// n16(x): kFloat32 -> 16-bit pattern, RNE, every NaN -> 0x7FFF (§2.1).
torch::Tensor narrow16(const torch::Tensor& x, Storage16 storage);

// e4m3(v): clamp to [-448, 448] with NaN -> -448 (the vllm clamp order), then RNE to the nearest
// of the 254 finite codes, subnormals included, sign of zero kept (§2.2). int32 codes.
torch::Tensor e4m3_codes(const torch::Tensor& v);
// The clamp of §2.2 step 1 alone (kFloat32).
torch::Tensor e4m3_clamp(const torch::Tensor& v);

// The UE8M0 scale of blocks whose NaN-free absolute maxima are `amax` (§2.3): the scale byte
// (int32) and inv = 2^-E (kFloat32; 0 for a block holding ±Inf).
struct BlockScales {
  torch::Tensor byte;
  torch::Tensor inv;
};
BlockScales ue8m0_scales(const torch::Tensor& amax);

// The block maxima of §2.3 step 1 over the last dimension: max |y| ignoring NaN, from 0.
torch::Tensor nan_ignoring_amax(const torch::Tensor& blocks);

// Little-endian bytes (int32 0..255, last dimension doubled) of 16-bit patterns.
torch::Tensor bytes_of16(const torch::Tensor& bits);

}  // namespace kvc::golden_generator
