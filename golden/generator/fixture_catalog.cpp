// fixture_catalog.cpp: the fixture list and the cases it describes (see fixture_catalog.h).
#include "fixture_catalog.h"

#include <cstring>
#include <stdexcept>

#include "fixture_inputs.h"

namespace kvc::golden_generator {
namespace {

constexpr std::int64_t kAlign = 16;
constexpr std::uint16_t kPaddingRowValue = 0xFFFF;  // NaN in bf16 and fp16: visible if a padding row is read
constexpr std::int64_t kFarNegativeSlot = -(std::int64_t{1} << 62);

std::int64_t round_up(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }

template <typename T>
GenTensor tensor_of(const char* dtype, const std::vector<T>& values, std::vector<std::int64_t> sizes) {
  GenTensor t;
  t.present = true;
  t.dtype = dtype;
  t.strides.assign(sizes.size(), 1);
  for (int d = static_cast<int>(sizes.size()) - 2; d >= 0; --d)
    t.strides[static_cast<std::size_t>(d)] =
        t.strides[static_cast<std::size_t>(d) + 1] * sizes[static_cast<std::size_t>(d) + 1];
  t.sizes = std::move(sizes);
  t.bytes.resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

GenMeta meta_of(const char* dtype, std::vector<std::int64_t> sizes) {
  GenMeta m;
  m.dtype = dtype;
  m.strides.assign(sizes.size(), 1);
  for (int d = static_cast<int>(sizes.size()) - 2; d >= 0; --d)
    m.strides[static_cast<std::size_t>(d)] =
        m.strides[static_cast<std::size_t>(d) + 1] * sizes[static_cast<std::size_t>(d) + 1];
  m.sizes = std::move(sizes);
  return m;
}

const char* dtype16(Storage16 s) { return s == Storage16::kBf16 ? "bf16" : "f16"; }

// Row recipes in the order rows take them: every edge class within the first seven rows.
constexpr RowRecipe kKvRecipes[] = {RowRecipe::kEdgeMix, RowRecipe::kRandom,     RowRecipe::kRopeEdges,
                                    RowRecipe::kHuge,    RowRecipe::kPow2Blocks, RowRecipe::kTiny,
                                    RowRecipe::kEdgeMix, RowRecipe::kZero};
constexpr RowRecipe kQRecipes[] = {RowRecipe::kRandom,    RowRecipe::kEdgeMix, RowRecipe::kZero,
                                   RowRecipe::kRopeEdges, RowRecipe::kHuge,    RowRecipe::kTiny,
                                   RowRecipe::kPow2Blocks};

std::int64_t default_block_size(Format f) {
  switch (f) {
    case Format::kPacked584: return 4;
    case Format::kPacked528: return 5;
    case Format::kFp8_512: return 3;
    case Format::kBf16_512: return 4;
  }
  return 4;
}

FixtureSpec kv_only(Format f, bool kv_norm, std::uint64_t seed) {
  FixtureSpec s;
  s.op = GenOp::kKvOnly;
  s.format = f;
  s.kv_norm = kv_norm;
  s.seed = seed;
  s.block_size = default_block_size(f);
  s.name = std::string("kv_only.") + layout(f).name + (kv_norm ? ".kv_norm" : "");
  s.description = std::string("KV-only insert into ") + layout(f).name +
                  (kv_norm ? " with kv_norm fused in front (docs/contract.md §4.1, §4.4)" : " (docs/contract.md §4.1)");
  return s;
}

FixtureSpec legacy(Format f, std::int64_t heads, std::int64_t padded, std::uint64_t seed, const std::string& variant,
                   const std::string& what) {
  FixtureSpec s;
  s.op = GenOp::kLegacy;
  s.format = f;
  s.seed = seed;
  s.block_size = default_block_size(f);
  s.heads = heads;
  s.padded_heads = padded;
  const bool packed = layout(f).packed;
  s.name =
      std::string("legacy.") + layout(f).name + (packed ? ".hp" + std::to_string(padded) : std::string()) + variant;
  s.description = std::string("legacy insert into ") + layout(f).name + ", H = " + std::to_string(heads) +
                  (packed ? ", Hp = " + std::to_string(padded) : std::string()) + what +
                  (packed ? " (docs/contract.md §4.2)" : " (docs/contract.md §4.3)");
  return s;
}

}  // namespace

std::vector<FixtureSpec> fixture_catalog() {
  std::vector<FixtureSpec> c;
  std::uint64_t seed = 1001;
  for (Format f : {Format::kPacked584, Format::kPacked528, Format::kFp8_512, Format::kBf16_512})
    for (bool kv_norm : {false, true}) c.push_back(kv_only(f, kv_norm, seed++));

  for (Format f : {Format::kPacked584, Format::kPacked528}) {
    c.push_back(legacy(f, 3, 0, seed++, "", ", no Q output"));
    c.push_back(legacy(f, 5, 8, seed++, "", ", q-norm and q-rope"));
    FixtureSpec no_norm = legacy(f, 5, 8, seed++, ".no_q_norm", ", q-rope without q-norm");
    no_norm.q_norm = false;
    c.push_back(no_norm);
    FixtureSpec no_rope = legacy(f, 5, 8, seed++, ".no_q_rope", ", q-norm without q-rope");
    no_rope.q_rope = false;
    c.push_back(no_rope);
    FixtureSpec inter = legacy(f, 5, 8, seed++, ".interleaved", ", interleaved q_in and q_out");
    inter.interleaved = true;
    c.push_back(inter);
    const bool interleaved64 = f == Format::kPacked528;
    FixtureSpec wide = legacy(f, 37, 64, seed++, interleaved64 ? ".interleaved" : "",
                              interleaved64 ? ", interleaved, 27 pad heads" : ", 27 pad heads");
    wide.interleaved = interleaved64;
    wide.rows = 4;
    wide.inserted = 3;
    c.push_back(wide);
    FixtureSpec half = legacy(f, 5, 8, seed++, ".f16", ", fp16 q and kv");
    half.storage = Storage16::kF16;
    half.eps = 1e-5f;
    c.push_back(half);
  }

  c.push_back(legacy(Format::kFp8_512, 3, 0, seed++, "", ", q-norm, q_fp8 output"));
  FixtureSpec fp8_no_norm = legacy(Format::kFp8_512, 3, 0, seed++, ".no_q_norm", ", no q-norm, q_fp8 output");
  fp8_no_norm.q_norm = false;
  c.push_back(fp8_no_norm);
  FixtureSpec fp8_half = legacy(Format::kFp8_512, 3, 0, seed++, ".f16", ", fp16 q and kv, q_fp8 output");
  fp8_half.storage = Storage16::kF16;
  fp8_half.eps = 1e-5f;
  c.push_back(fp8_half);
  c.push_back(legacy(Format::kBf16_512, 3, 0, seed++, "", ", q-norm, q rotated in place"));
  FixtureSpec bf16_no_norm = legacy(Format::kBf16_512, 3, 0, seed++, ".no_q_norm", ", no q-norm, q rotated in place");
  bf16_no_norm.q_norm = false;
  c.push_back(bf16_no_norm);
  return c;
}

GenCase build_case(const FixtureSpec& s) {
  if (s.inserted > s.rows) throw std::logic_error(s.name + ": more slots than rows");
  const FormatLayout& l = layout(s.format);
  SplitMix64 rng(s.seed);
  GenCase c;
  c.op = s.op;

  // kv: rows t < M follow the recipes; padding rows are NaN, which no record may show.
  std::vector<std::uint16_t> kv;
  for (std::int64_t t = 0; t < s.rows; ++t) {
    std::vector<std::uint16_t> row(kDims, kPaddingRowValue);
    if (t < s.inserted)
      row = make_row(kKvRecipes[static_cast<std::size_t>(t) % std::size(kKvRecipes)], s.storage,
                     static_cast<std::uint64_t>(t) + s.seed, rng);
    kv.insert(kv.end(), row.begin(), row.end());
  }
  c.kv = tensor_of(dtype16(s.storage), kv, {s.rows, kDims});

  // slots: distinct, random over the whole cache; every fourth row skipped (-1), one at -2^62.
  const std::int64_t capacity = s.num_blocks * s.block_size;
  std::vector<std::int64_t> free_slots(static_cast<std::size_t>(capacity));
  for (std::int64_t i = 0; i < capacity; ++i) free_slots[static_cast<std::size_t>(i)] = i;
  std::vector<std::int64_t> slots;
  for (std::int64_t t = 0; t < s.inserted; ++t) {
    if (t % 4 == 2) {
      slots.push_back(t == 6 ? kFarNegativeSlot : -1);
      continue;
    }
    if (free_slots.empty()) throw std::logic_error(s.name + ": more live rows than slots");
    const std::size_t pick = static_cast<std::size_t>(rng.below(free_slots.size()));
    slots.push_back(free_slots[pick]);
    free_slots.erase(free_slots.begin() + static_cast<std::ptrdiff_t>(pick));
  }
  c.slots = tensor_of("i64", slots, {s.inserted});

  // positions: the ones an op reads are in range (the first live row at 0, the identity
  // rotation); the others lie far outside the table, so reading one is an out-of-bounds access.
  const bool q_reads_every_position =
      s.op == GenOp::kLegacy && s.heads > 0 && (l.packed ? (s.padded_heads > 0 && s.q_rope) : true);
  std::vector<std::int64_t> positions;
  bool first_live = true;
  for (std::int64_t t = 0; t < s.rows; ++t) {
    const bool kv_reads = t < s.inserted && slots[static_cast<std::size_t>(t)] >= 0;
    if (kv_reads || q_reads_every_position) {
      positions.push_back(
          kv_reads && first_live ? 0 : static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(s.max_pos))));
      if (kv_reads) first_live = false;
    } else {
      positions.push_back(s.max_pos + 1000 + t);
    }
  }
  c.positions = tensor_of("i64", positions, {s.rows});
  c.cos_sin = tensor_of("f32", make_cos_sin_table(s.max_pos, rng), {s.max_pos, kRopeDims});
  if (s.format == Format::kFp8_512) c.fp8_scale = tensor_of("f32", std::vector<float>{s.fp8_scale}, {1});

  // Cache geometry: padded pages (and row gaps for the full caches), 16-byte aligned.
  c.cache.format = s.format;
  c.cache.num_blocks = s.num_blocks;
  c.cache.block_size = s.block_size;
  if (l.packed) {
    c.cache.stride1 = l.width;
    c.cache.stride0 = round_up(s.block_size * (l.data_bytes + l.scale_bytes), kAlign) + s.page_padding_bytes;
  } else {
    const std::int64_t row_stride_bytes = l.data_bytes + s.row_gap_bytes;
    c.cache.stride1 = row_stride_bytes / l.element_bytes;
    c.cache.stride0 = (s.block_size * row_stride_bytes + s.page_padding_bytes) / l.element_bytes;
  }

  if (s.kv_norm) {
    c.kv_norm_weight = tensor_of("bf16", make_norm_weight(rng), {kDims});
    c.kv_norm_eps = s.kv_norm_eps;
  }

  if (s.op == GenOp::kLegacy) {
    // q in logical order [N, H, 512], stored interleaved ([N][32 lanes][H][16]) when asked.
    std::vector<std::uint16_t> logical;
    for (std::int64_t i = 0; i < s.rows * s.heads; ++i) {
      const auto row = make_row(kQRecipes[static_cast<std::size_t>(i) % std::size(kQRecipes)], s.storage,
                                static_cast<std::uint64_t>(i) * 3 + s.seed, rng);
      logical.insert(logical.end(), row.begin(), row.end());
    }
    std::vector<std::uint16_t> memory = logical;
    if (l.packed && s.interleaved)
      for (std::int64_t t = 0; t < s.rows; ++t)
        for (std::int64_t h = 0; h < s.heads; ++h)
          for (std::int64_t d = 0; d < kDims; ++d)
            memory[static_cast<std::size_t>(t * s.heads * kDims + (d / kDimsPerLane) * s.heads * kDimsPerLane +
                                            h * kDimsPerLane + d % kDimsPerLane)] =
                logical[static_cast<std::size_t>((t * s.heads + h) * kDims + d)];
    c.q = tensor_of(dtype16(s.storage), memory, {s.rows, s.heads, kDims});
    c.eps = s.eps;
    c.apply_q_norm = s.q_norm;
    c.apply_q_rope = s.q_rope;
    c.q_interleaved = s.interleaved;
    if (l.packed) {
      c.q_out = s.padded_heads == 0 ? meta_of(dtype16(s.storage), {0})
                                    : meta_of(dtype16(s.storage), {s.rows, s.padded_heads, kDims});
    } else if (s.format == Format::kFp8_512) {
      c.q_out = meta_of("e4m3", {s.rows, s.heads, kDims});
      c.q_scale_inv = tensor_of("f32", std::vector<float>{s.q_scale_inv}, {1});
    } else {
      c.q_out = meta_of("bf16", {s.rows, s.heads, kDims});
    }
  }
  return c;
}

}  // namespace kvc::golden_generator
