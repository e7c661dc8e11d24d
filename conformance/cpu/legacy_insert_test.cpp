// legacy_insert_test.cpp: the Q side of the legacy op, and its KV side against the KV-only op.
//
// The expected Q rows are composed here from the primitives (widen, norm, RoPE, narrow) at the
// q_in/q_out offsets written out from docs/contract.md §4, not taken from the op's own code.
#include <gtest/gtest.h>

#include <cstring>

#include "kvc/oracle/bf16.h"
#include "kvc/oracle/fp16.h"
#include "kvc/oracle/fp8_e4m3.h"
#include "kvc/oracle/legacy_insert.h"
#include "kvc/oracle/record_codec.h"
#include "kvc/oracle/rms_norm.h"
#include "kvc/oracle/rope.h"
#include "kvc/oracle/ue8m0.h"
#include "kvc/resolved_case.h"
#include "testkit/backends/oracle_backend.h"
#include "testkit/backends/backing.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/cases/case_builder.h"
#include "testkit/cases/small_cases.h"

namespace kvc {
namespace {

std::vector<float> cos_sin_row(const InsertCase& c, std::int64_t t) {
  std::vector<float> row(kRopeDim);
  const std::int64_t pos = c.positions.load<std::int64_t>(t);
  for (int j = 0; j < kRopeDim; ++j) row[j] = c.cos_sin.load<float>(pos * kRopeDim + j);
  return row;
}

// Element (t, h, d) of a [N, heads, 512] tensor, docs/contract.md §4: head-major, or
// chunk-interleaved (lane L = d / 16 holds the 16-dim chunks of all heads next to each other).
std::int64_t head_major(std::int64_t t, std::int64_t h, int d, std::int64_t heads) {
  return (t * heads + h) * kHeadDim + d;
}
std::int64_t interleaved(std::int64_t t, std::int64_t h, int d, std::int64_t heads) {
  return t * heads * kHeadDim + (d / 16) * heads * 16 + h * 16 + d % 16;
}

// The Q row the contract prescribes, composed from the primitives: widen, [norm], [RoPE]. With
// q_interleaved (packed path) q_in is read interleaved over H heads.
std::vector<float> expected_q_row(const InsertCase& c, std::int64_t t, std::int64_t h, bool rotate) {
  std::vector<float> e(kHeadDim);
  const std::int64_t heads = c.q.meta.size(1);
  const bool read_interleaved = c.q_interleaved && resolve_or_throw(c).packed();
  for (int d = 0; d < kHeadDim; ++d) {
    const std::uint16_t bits =
        c.q.load<std::uint16_t>(read_interleaved ? interleaved(t, h, d, heads) : head_major(t, h, d, heads));
    e[d] = c.q.meta.dtype == DType::kF16 ? oracle::fp16_to_float(bits) : oracle::bf16_to_float(bits);
  }
  if (c.apply_q_norm) oracle::q_norm_row(e.data(), c.eps);
  if (rotate) oracle::rope_gptj_row(e.data(), cos_sin_row(c, t).data());
  return e;
}

std::uint16_t q_out16(const InsertOutputs& out, std::int64_t element) {
  std::uint16_t v;
  std::memcpy(&v, out.q_out.data() + 2 * element, 2);
  return v;
}

InsertCase legacy_case(RecordFormat f, std::int64_t heads, std::int64_t hp, bool interleaved, bool norm, bool rope) {
  testkit::Rng rng(11);
  InsertCase kv = testkit::small_valid_case(InsertOp::kKvOnly, f, 5);
  testkit::QuerySpec q;
  q.heads = heads;
  q.padded_heads = hp;
  q.q = testkit::random_bf16_rows(rng, kv.num_rows() * heads);
  q.eps = 1e-6f;
  q.apply_q_norm = norm;
  q.apply_q_rope = rope;
  q.q_interleaved = interleaved;
  q.q_scale_inv = 3.0f;
  return testkit::make_legacy_case(kv, q);
}

TEST(LegacyQ, HeadMajorLiveHeadsAndZeroPadding) {
  for (bool norm : {false, true}) {
    for (bool rope : {false, true}) {
      SCOPED_TRACE(std::string("norm ") + (norm ? "on" : "off") + ", rope " + (rope ? "on" : "off"));
      const InsertCase c = legacy_case(RecordFormat::kPacked584, 3, 8, false, norm, rope);
      InsertOutputs out = testkit::make_outputs(c);
      ASSERT_TRUE(oracle::legacy_insert(c, out).ok());
      for (std::int64_t t = 0; t < c.num_rows(); ++t) {
        for (std::int64_t h = 0; h < 8; ++h) {
          const std::vector<float> e = h < 3 ? expected_q_row(c, t, h, rope) : std::vector<float>(kHeadDim, 0.0f);
          for (int d = 0; d < kHeadDim; ++d)
            ASSERT_EQ(q_out16(out, (t * 8 + h) * kHeadDim + d), h < 3 ? oracle::float_to_bf16(e[d]) : 0)
                << "t " << t << " h " << h << " d " << d;
        }
      }
      if (!norm && !rope) {
        EXPECT_EQ(q_out16(out, 5), c.q.load<std::uint16_t>(5)) << "no norm, no rope: input bits";
      }
    }
  }
}

// q_in laid out interleaved: the same logical (t, h, d) values as a head-major case.
InsertCase as_interleaved(const InsertCase& head_major_case) {
  InsertCase c = head_major_case;
  c.q_interleaved = true;
  const std::int64_t heads = c.q.meta.size(1);
  for (std::int64_t t = 0; t < c.num_rows(); ++t)
    for (std::int64_t h = 0; h < heads; ++h)
      for (int d = 0; d < kHeadDim; ++d)
        c.q.store<std::uint16_t>(interleaved(t, h, d, heads),
                                 head_major_case.q.load<std::uint16_t>(head_major(t, h, d, heads)));
  return c;
}

TEST(LegacyQ, InterleavedIsAPermutationOfHeadMajor) {
  const InsertCase hm = legacy_case(RecordFormat::kPacked528, 5, 16, false, true, true);
  const InsertCase il = as_interleaved(hm);
  InsertOutputs a = testkit::make_outputs(hm), b = testkit::make_outputs(il);
  ASSERT_TRUE(oracle::legacy_insert(hm, a).ok());
  ASSERT_TRUE(oracle::legacy_insert(il, b).ok());
  for (std::int64_t t = 0; t < hm.num_rows(); ++t)
    for (std::int64_t h = 0; h < 16; ++h)
      for (int d = 0; d < kHeadDim; ++d)
        ASSERT_EQ(q_out16(b, interleaved(t, h, d, 16)), q_out16(a, head_major(t, h, d, 16)))
            << "t " << t << " h " << h << " d " << d;
  EXPECT_EQ(a.cache, b.cache) << "the Q layout never touches the cache";
}

// Contract version 2 (docs/contract.md §4): with q_interleaved the op reads q_in at
// t*H*512 + L*H*16 + h*16 + i and writes q_out at t*Hp*512 + L*Hp*16 + h*16 + i. Every
// (token, head, dim) gets its own bf16 value; without norm and RoPE each value must land exactly
// where the two formulas put it, and the padding heads must be zero. Reading head-major (version
// 1), or with Hp instead of H, moves values and fails.
TEST(LegacyQ, InterleavedReadsQInAndWritesQOutAtTheChunkOffsets) {
  constexpr std::int64_t kHeads = 3, kPadded = 8;
  const InsertCase kv = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584, 5);
  const std::int64_t n = kv.num_rows();
  auto value = [](std::int64_t t, std::int64_t h, int d) {  // distinct, finite, positive bf16
    return static_cast<std::uint16_t>(0x3C00 + (t * kHeads + h) * kHeadDim + d);
  };
  std::vector<std::uint16_t> q(static_cast<std::size_t>(n * kHeads * kHeadDim));
  for (std::int64_t t = 0; t < n; ++t)
    for (std::int64_t h = 0; h < kHeads; ++h)
      for (int d = 0; d < kHeadDim; ++d)
        q[static_cast<std::size_t>(t * kHeads * 512 + (d / 16) * kHeads * 16 + h * 16 + d % 16)] = value(t, h, d);
  testkit::QuerySpec spec;
  spec.heads = kHeads;
  spec.padded_heads = kPadded;
  spec.q = q;
  spec.apply_q_norm = false;
  spec.apply_q_rope = false;
  spec.q_interleaved = true;
  const InsertCase c = testkit::make_legacy_case(kv, spec);
  InsertOutputs out = testkit::make_outputs(c);
  ASSERT_TRUE(oracle::legacy_insert(c, out).ok());
  for (std::int64_t t = 0; t < n; ++t)
    for (std::int64_t h = 0; h < kPadded; ++h)
      for (int d = 0; d < kHeadDim; ++d)
        ASSERT_EQ(q_out16(out, t * kPadded * 512 + (d / 16) * kPadded * 16 + h * 16 + d % 16),
                  h < kHeads ? value(t, h, d) : 0)
            << "t " << t << " h " << h << " d " << d;

  // With norm and RoPE the logical rows are the ones read at the interleaved q_in offsets.
  InsertCase normed = c;
  normed.apply_q_norm = true;
  normed.apply_q_rope = true;
  normed.eps = 1e-6f;
  out = testkit::make_outputs(normed);
  ASSERT_TRUE(oracle::legacy_insert(normed, out).ok());
  for (std::int64_t t = 0; t < n; ++t)
    for (std::int64_t h = 0; h < kHeads; ++h) {
      const std::vector<float> e = expected_q_row(normed, t, h, true);
      for (int d = 0; d < kHeadDim; ++d)
        ASSERT_EQ(q_out16(out, interleaved(t, h, d, kPadded)), oracle::float_to_bf16(e[d]))
            << "t " << t << " h " << h << " d " << d;
    }
}

TEST(LegacyQ, FullCacheBf16InPlaceAndFp8WithReciprocalScale) {
  const InsertCase bf = legacy_case(RecordFormat::kBf16_512, 2, 0, false, true, true);
  InsertOutputs out = testkit::make_outputs(bf);
  ASSERT_TRUE(oracle::legacy_insert(bf, out).ok());
  for (std::int64_t t = 0; t < bf.num_rows(); ++t)
    for (std::int64_t h = 0; h < 2; ++h) {
      const auto e = expected_q_row(bf, t, h, true);
      for (int d = 0; d < kHeadDim; ++d)
        ASSERT_EQ(q_out16(out, (t * 2 + h) * kHeadDim + d), oracle::float_to_bf16(e[d]));
    }
  InsertCase f8 = legacy_case(RecordFormat::kFp8_512, 2, 0, false, false, true);
  out = testkit::make_outputs(f8);
  ASSERT_TRUE(oracle::legacy_insert(f8, out).ok());
  for (std::int64_t t = 0; t < f8.num_rows(); ++t)
    for (std::int64_t h = 0; h < 2; ++h) {
      const auto e = expected_q_row(f8, t, h, true);  // full-cache Q always rotates
      for (int d = 0; d < kHeadDim; ++d)
        ASSERT_EQ(out.q_out[static_cast<std::size_t>((t * 2 + h) * kHeadDim + d)], oracle::e4m3_encode(e[d] * 3.0f));
    }
}

TEST(LegacyQ, HeadPaddingZeroWritesNoQ) {
  const InsertCase c = legacy_case(RecordFormat::kPacked584, 4, 0, false, true, true);
  InsertOutputs out = testkit::make_outputs(c);
  EXPECT_TRUE(out.q_out.empty());
  ASSERT_TRUE(oracle::legacy_insert(c, out).ok());
}

// The DSpark claim beyond the upstream replay: for every format, head count, padding and Q flag,
// the legacy op's cache bytes equal the KV-only op's. On the oracle this compares the oracle with
// itself (both ops run the same KV encoder, insert_kv_rows), so it cannot fail here; it becomes
// meaningful when a kernel backend runs the two ops. The hand-derived vectors of
// kv_insert_edge_test and record_codec_test are what pin the oracle's KV bytes.
TEST(LegacyKvSide, EqualsKvOnlyForEveryHeadPaddingAndFlag) {
  for (RecordFormat f : kAllFormats) {
    const InsertCase kv_only = testkit::small_valid_case(InsertOp::kKvOnly, f, 5);
    InsertOutputs expected = testkit::make_outputs(kv_only);
    ASSERT_TRUE(testkit::OracleBackend().run(kv_only, expected).ok());
    for (std::int64_t hp : kSupportedHeadPadding) {
      if (!is_packed(f) && hp != 0) continue;
      for (bool interleaved : {false, true}) {
        for (bool norm : {false, true}) {
          const std::int64_t heads = hp == 0 ? 3 : hp;
          const InsertCase legacy = legacy_case(f, heads, hp, interleaved, norm, !norm);
          InsertOutputs actual = testkit::make_outputs(legacy);
          const Status s = testkit::OracleBackend().run(legacy, actual);
          ASSERT_TRUE(s.ok()) << s.ToString();
          const testkit::DiffReport r = testkit::diff_case_backings(kv_only, expected.cache, actual.cache);
          EXPECT_TRUE(r.equal()) << layout_of(f).name << " Hp " << hp << "\n"
                                 << testkit::format_case_report(kv_only, r, expected.cache, actual.cache, {});
        }
      }
    }
  }
}

TEST(LegacyFp16, PackedRopeRegionHoldsFp16) {
  InsertCase c = legacy_case(RecordFormat::kPacked584, 1, 8, false, false, false);
  // Reinterpret the same bits as f16 (values stay finite and moderate: |bf16 normal| < 8).
  c.kv.meta.dtype = DType::kF16;
  c.q.meta.dtype = DType::kF16;
  c.q_out.dtype = DType::kF16;
  for (std::int64_t i = 0; i < c.kv.meta.numel(); ++i)
    c.kv.store<std::uint16_t>(i, oracle::float_to_fp16(0.25f * static_cast<float>(i % 13) - 1.5f));
  InsertOutputs out = testkit::make_outputs(c);
  const Status s = oracle::legacy_insert(c, out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const oracle::PagedCacheView view = testkit::view_of(c);
  EXPECT_EQ(view.value_dtype, DType::kF16);
  const std::int64_t t = 0, slot = c.slots.load<std::int64_t>(t);
  std::vector<float> x(kHeadDim);
  for (int d = 0; d < kHeadDim; ++d) x[d] = oracle::fp16_to_float(c.kv.load<std::uint16_t>(d));
  oracle::rope_gptj_row(x.data(), cos_sin_row(c, t).data());
  const oracle::DecodedRecord r = oracle::decode_record(out.cache, view, slot);
  for (int d = kNopeDim; d < kHeadDim; ++d) ASSERT_EQ(r.values16[d], oracle::float_to_fp16(x[d])) << "dim " << d;
  for (int d = 0; d < kNopeDim; ++d)
    ASSERT_EQ(r.dequantized[d], x[d]) << "quarter steps are exact in e4m3 here, dim " << d;
}

// fp16 q/kv (docs/contract.md §4): a legacy case of format f with fp16 values of moderate size,
// whose fp16 and bf16 roundings differ, so a path that narrows or widens as bf16 fails.
InsertCase fp16_legacy_case(RecordFormat f, std::int64_t heads, std::int64_t hp) {
  InsertCase c = legacy_case(f, heads, hp, false, true, true);
  c.kv.meta.dtype = DType::kF16;
  c.q.meta.dtype = DType::kF16;
  if (is_packed(f)) c.q_out.dtype = DType::kF16;  // full caches keep their Q output dtype (e4m3 / bf16)
  testkit::Rng rng(23);
  for (std::int64_t i = 0; i < c.kv.meta.numel(); ++i)
    c.kv.store<std::uint16_t>(i, oracle::float_to_fp16(3.0f * rng.normal()));
  for (std::int64_t i = 0; i < c.q.meta.numel(); ++i)
    c.q.store<std::uint16_t>(i, oracle::float_to_fp16(3.0f * rng.normal()));
  return c;
}

// The record of row t composed from the primitives with fp16 as the storage type: widen, RoPE,
// fp16 round trip (packed), block scales and e4m3 codes, fp16 RoPE values (packed584).
void expect_fp16_record(const InsertCase& c, const InsertOutputs& out, std::int64_t t) {
  const ResolvedInsertCase resolved = resolve_or_throw(c);
  const RecordFormat f = resolved.format;
  const RecordLayout& l = resolved.layout;
  const oracle::PagedCacheView view = testkit::view_of(c);
  const std::int64_t slot = c.slots.load<std::int64_t>(t);
  std::vector<float> x(kHeadDim);
  for (int d = 0; d < kHeadDim; ++d) x[d] = oracle::fp16_to_float(c.kv.load<std::uint16_t>(t * kHeadDim + d));
  oracle::rope_gptj_row(x.data(), cos_sin_row(c, t).data());
  const float fp8_scale = f == RecordFormat::kFp8_512 ? c.fp8_scale.load<float>(0) : 1.0f;
  const oracle::DecodedRecord r = oracle::decode_record(out.cache, view, slot, fp8_scale);
  if (!l.paged_regions) {
    const float inv = 1.0f / fp8_scale;
    for (int d = 0; d < kHeadDim; ++d)
      ASSERT_EQ(r.codes[d], oracle::e4m3_encode(x[d] * inv)) << "slot " << slot << " dim " << d;
    return;
  }
  std::vector<float> y(kHeadDim);
  for (int d = 0; d < kHeadDim; ++d) y[d] = oracle::round_through_fp16(x[d]);
  for (int k = 0; k < l.scale_blocks; ++k) {
    const oracle::BlockScale s = oracle::block_scale(y.data() + k * l.quant_block_dims, l.quant_block_dims);
    ASSERT_EQ(r.scales[k], s.byte) << "slot " << slot << " block " << k;
    for (int i = 0; i < l.quant_block_dims; ++i) {
      const int d = k * l.quant_block_dims + i;
      ASSERT_EQ(r.codes[d], oracle::e4m3_encode(y[d] * s.inverse)) << "slot " << slot << " dim " << d;
    }
  }
  for (int d = l.fp8_dims; d < kHeadDim; ++d)
    ASSERT_EQ(r.values16[d], oracle::float_to_fp16(y[d])) << "slot " << slot << " dim " << d;
}

class LegacyFp16Formats : public ::testing::TestWithParam<RecordFormat> {};

// Every format the legacy op accepts with fp16: the KV records and the Q output.
TEST_P(LegacyFp16Formats, KvRecordsAndQOutputUseFp16) {
  const RecordFormat f = GetParam();
  const bool packed = is_packed(f);
  const InsertCase c = fp16_legacy_case(f, 3, packed ? 8 : 0);
  InsertOutputs out = testkit::make_outputs(c);
  const Status s = oracle::legacy_insert(c, out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(testkit::view_of(c).value_dtype, DType::kF16);
  for (std::int64_t t = 0; t < c.num_inserted(); ++t)
    if (c.slots.load<std::int64_t>(t) >= 0) expect_fp16_record(c, out, t);
  const std::int64_t heads = 3, out_heads = packed ? 8 : heads;
  for (std::int64_t t = 0; t < c.num_rows(); ++t) {
    for (std::int64_t h = 0; h < out_heads; ++h) {
      const std::vector<float> e = h < heads ? expected_q_row(c, t, h, true) : std::vector<float>(kHeadDim, 0.0f);
      for (int d = 0; d < kHeadDim; ++d) {
        const std::int64_t i = head_major(t, h, d, out_heads);
        if (f == RecordFormat::kFp8_512) {
          ASSERT_EQ(out.q_out[static_cast<std::size_t>(i)], oracle::e4m3_encode(e[d] * 3.0f))
              << "t " << t << " h " << h << " d " << d;
        } else {
          ASSERT_EQ(q_out16(out, i), h < heads ? oracle::float_to_fp16(e[d]) : 0)
              << "fp16 Q output: t " << t << " h " << h << " d " << d;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, LegacyFp16Formats,
                         ::testing::Values(RecordFormat::kPacked584, RecordFormat::kPacked528, RecordFormat::kFp8_512),
                         [](const ::testing::TestParamInfo<RecordFormat>& p) {
                           std::string n(layout_of(p.param).name);
                           n[0] = static_cast<char>(n[0] - 'a' + 'A');
                           return n;
                         });

TEST(LegacyFp16, Bf16FullCacheRejectsFp16) {
  const InsertCase c = fp16_legacy_case(RecordFormat::kBf16_512, 2, 0);
  InsertOutputs out = testkit::make_outputs(c);
  const InsertOutputs before = out;
  EXPECT_EQ(oracle::legacy_insert(c, out).code, ErrorCode::kKvDtype);
  EXPECT_EQ(out.cache, before.cache);
}

}  // namespace
}  // namespace kvc
