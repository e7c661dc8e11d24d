// expected_bytes.cpp: records and Q outputs from tensor operations (see expected_bytes.h).
#include "expected_bytes.h"

#include <cstring>
#include <stdexcept>

#include "encodings.h"
#include "exact_float.h"

namespace kvc::golden_generator {
namespace {

using torch::Tensor;
constexpr auto kF32 = torch::kFloat32;
constexpr auto kI32 = torch::kInt32;
constexpr auto kI64 = torch::kInt64;

Tensor raw_tensor(const GenTensor& t, torch::ScalarType type) {
  if (!t.present) throw std::runtime_error("compute_expected: a required tensor is absent");
  return torch::from_blob(const_cast<std::uint8_t*>(t.bytes.data()), {static_cast<std::int64_t>(t.bytes.size())},
                          torch::kUInt8)
      .clone()
      .view(type);
}

// 16-bit patterns of a bf16 or f16 tensor, as int32 0..0xFFFF.
Tensor bits16(const GenTensor& t) { return raw_tensor(t, torch::kInt16).to(kI32) & 0xFFFF; }

Storage16 storage_of(const GenTensor& t) {
  if (t.dtype == "bf16") return Storage16::kBf16;
  if (t.dtype == "f16") return Storage16::kF16;
  throw std::runtime_error("compute_expected: 16-bit tensor of dtype " + t.dtype);
}

// r = rsqrt(fma(S, 1/512, eps)) per row of x [R, 512] (§2.4), S summed in the order of §1.3:
// each lane's 16 squares by fma in dim order, then the butterfly over masks 16, 8, 4, 2, 1.
Tensor rms_inverse(const Tensor& x, float eps) {
  const std::int64_t rows = x.size(0);
  const Tensor lanes = x.reshape({rows, kLanes, kDimsPerLane});
  Tensor acc = torch::zeros({rows, kLanes}, kF32);
  for (std::int64_t i = 0; i < kDimsPerLane; ++i) {
    const Tensor e = lanes.select(2, i);
    acc = fma32(e, e, acc);
  }
  Tensor t = acc;
  for (int half : kButterflyHalves) t = add32(t.narrow(1, 0, half), t.narrow(1, half, half));
  return rsqrt32(fma32(t, torch::full_like(t, kRmsInverseDims), torch::full_like(t, eps)));  // [rows, 1]
}

// kv_norm (§2.4 step 4, §4.4): fl(fl(e·r)·w), then the bf16 round trip.
Tensor kv_norm_rows(const Tensor& x, const Tensor& weight, float eps) {
  const Tensor e = mul32(mul32(x, rms_inverse(x, eps)), weight.unsqueeze(0));
  return widen16(narrow16(e, Storage16::kBf16), Storage16::kBf16);
}

// GPT-J RoPE on dims 448..511 (§2.6), one table row per data row.
Tensor rope_rows(const Tensor& x, const Tensor& table_rows) {
  const std::int64_t rows = x.size(0);
  const Tensor pairs = x.narrow(1, kNopeDims, kRopeDims).reshape({rows, kRopePairs, 2});
  const Tensor a = pairs.select(2, 0), b = pairs.select(2, 1);
  const Tensor c = table_rows.narrow(1, 0, kRopePairs), s = table_rows.narrow(1, kRopePairs, kRopePairs);
  const Tensor even = fma32(a, c, torch::neg(mul32(b, s)));
  const Tensor odd = fma32(a, s, mul32(b, c));
  return torch::cat({x.narrow(1, 0, kNopeDims), torch::stack({even, odd}, -1).reshape({rows, kRopeDims})}, 1);
}

// e4m3 codes of blocks of `block_dims` values with their UE8M0 scales (§2.3, §3.3, §3.4).
struct QuantizedBlocks {
  Tensor codes;        // [R, dims]
  Tensor scale_bytes;  // [R, dims / block_dims]
};
QuantizedBlocks quantize_blocks(const Tensor& y, std::int64_t block_dims) {
  const std::int64_t rows = y.size(0), dims = y.size(1);
  const Tensor blocks = y.reshape({rows, dims / block_dims, block_dims});
  const BlockScales s = ue8m0_scales(nan_ignoring_amax(blocks));
  return {e4m3_codes(mul32(blocks, s.inv.unsqueeze(-1))).reshape({rows, dims}), s.byte};
}

// Writes rows of bytes [R, W] (int32 0..255) at byte offsets start [R] of the backing, failing
// closed if two rows overlap (the generator never builds duplicate slots).
void scatter_rows(Tensor& backing, const Tensor& start, const Tensor& bytes) {
  const Tensor index = (start.unsqueeze(1) + torch::arange(bytes.size(1), kI64).unsqueeze(0)).flatten();
  if (std::get<0>(torch::_unique(index)).numel() != index.numel())
    throw std::runtime_error("compute_expected: two records overlap");
  if (index.numel() > 0 &&
      (index.min().item<std::int64_t>() < 0 || index.max().item<std::int64_t>() >= backing.numel()))
    throw std::runtime_error("compute_expected: a record falls outside the backing");
  backing.index_put_({index}, bytes.flatten().to(backing.scalar_type()));
}

std::vector<std::uint8_t> to_bytes(const Tensor& values0to255) {
  const Tensor b = values0to255.to(torch::kUInt8).contiguous().flatten();
  std::vector<std::uint8_t> out(static_cast<std::size_t>(b.numel()));
  if (!out.empty()) std::memcpy(out.data(), b.data_ptr<std::uint8_t>(), out.size());
  return out;
}

void write_kv_side(const GenCase& c, Tensor& backing) {
  const FormatLayout& l = layout(c.cache.format);
  const Storage16 storage = storage_of(c.kv);
  const Tensor kv = bits16(c.kv).reshape({-1, kDims});
  const Tensor slots = raw_tensor(c.slots, kI64);
  const Tensor positions = raw_tensor(c.positions, kI64);
  const Tensor table = raw_tensor(c.cos_sin, kF32).reshape({-1, kRopeDims});

  // Rows t < M whose slot is >= 0 (§4.1); rows M..N-1 are data-parallel padding, never read.
  const Tensor live = torch::nonzero(slots >= 0).flatten();
  if (live.numel() == 0) return;
  Tensor x = widen16(kv.index_select(0, live), storage);
  if (c.kv_norm_weight.present) x = kv_norm_rows(x, widen16(bits16(c.kv_norm_weight), Storage16::kBf16), c.kv_norm_eps);
  x = rope_rows(x, table.index_select(0, positions.index_select(0, live)));

  const Tensor slot = slots.index_select(0, live);
  const std::int64_t bs = c.cache.block_size;
  const Tensor page = torch::div(slot, bs, "floor"), token = torch::remainder(slot, bs);
  const Tensor page_start = c.cache.offset_bytes + page * (c.cache.stride0 * l.element_bytes);
  const std::int64_t rows = x.size(0);

  if (l.packed) {
    // §3.2 step 3: every dim through the 16-bit narrowing and back.
    const Tensor y = widen16(narrow16(x, storage), storage);
    Tensor data, scales;
    if (c.cache.format == Format::kPacked584) {
      const QuantizedBlocks q = quantize_blocks(y.narrow(1, 0, kNopeDims), l.block_dims);
      data = torch::cat({q.codes, bytes_of16(narrow16(y.narrow(1, kNopeDims, kRopeDims), storage))}, 1);
      scales = torch::cat({q.scale_bytes, torch::full({rows, 1}, kScalePadByte, kI32)}, 1);
    } else {
      const QuantizedBlocks q = quantize_blocks(y, l.block_dims);
      data = q.codes;
      scales = q.scale_bytes;
    }
    scatter_rows(backing, page_start + token * l.data_bytes, data);
    scatter_rows(backing, page_start + bs * l.data_bytes + token * l.scale_bytes, scales);
    return;
  }
  Tensor data;
  if (c.cache.format == Format::kFp8_512) {
    // §3.5: one correctly rounded reciprocal, then a multiply per dim, no 16-bit rounding.
    const Tensor inv = div32(torch::ones({1}, kF32), raw_tensor(c.fp8_scale, kF32).reshape({1}));
    data = e4m3_codes(mul32(x, inv));
  } else {
    data = bytes_of16(narrow16(x, Storage16::kBf16));  // §3.6
  }
  scatter_rows(backing, page_start + token * (c.cache.stride1 * l.element_bytes), data);
}

std::vector<std::uint8_t> q_side(const GenCase& c) {
  const FormatLayout& l = layout(c.cache.format);
  const Storage16 storage = storage_of(c.q);
  const std::int64_t n = c.q.sizes.at(0), heads = c.q.sizes.at(1);
  const std::int64_t padded = l.packed ? (c.q_out->sizes.size() == 3 ? c.q_out->sizes[1] : 0) : heads;
  if (padded == 0 || n == 0) return {};
  const bool interleaved = l.packed && c.q_interleaved;  // the full-cache Q paths ignore the flag

  // q_in in logical order [N, H, 512]; interleaved memory is [N][32 lanes][H][16] (§4.2).
  Tensor q = bits16(c.q);
  q = interleaved ? q.reshape({n, kLanes, heads, kDimsPerLane}).permute({0, 2, 1, 3}).reshape({n, heads, kDims})
                  : q.reshape({n, heads, kDims});
  Tensor e = widen16(q.reshape({n * heads, kDims}), storage);
  if (c.apply_q_norm) e = mul32(e, rms_inverse(e, c.eps));  // Q-norm, no weight (§2.4 step 3)
  if (!l.packed || c.apply_q_rope) {
    const Tensor positions = raw_tensor(c.positions, kI64).repeat_interleave(heads);
    const Tensor table = raw_tensor(c.cos_sin, kF32).reshape({-1, kRopeDims});
    e = rope_rows(e, table.index_select(0, positions));
  }
  if (c.cache.format == Format::kFp8_512)  // §4.3: a multiply by the reciprocal scale, then e4m3
    return to_bytes(e4m3_codes(mul32(e, raw_tensor(c.q_scale_inv, kF32).reshape({1}))));
  if (c.cache.format == Format::kBf16_512) return to_bytes(bytes_of16(narrow16(e, Storage16::kBf16)));

  // Packed: live heads n16(e), pad heads zero (§4.2), in q_out's layout.
  Tensor out = torch::zeros({n, padded, kDims}, kI32);
  out.narrow(1, 0, heads).copy_(narrow16(e, storage).reshape({n, heads, kDims}));
  if (interleaved) out = out.reshape({n, padded, kLanes, kDimsPerLane}).permute({0, 2, 1, 3});
  return to_bytes(bytes_of16(out.contiguous().reshape({-1, 1})));
}

}  // namespace

GenExpected compute_expected(const GenCase& c, std::uint8_t canary) {
  torch::NoGradGuard no_grad;
  GenExpected out;
  out.canary = canary;
  Tensor backing = torch::full({c.cache.backing_bytes()}, static_cast<std::int32_t>(canary), kI32);
  write_kv_side(c, backing);
  out.cache = to_bytes(backing);
  if (c.op == GenOp::kLegacy) out.q_out = q_side(c);
  return out;
}

}  // namespace kvc::golden_generator
