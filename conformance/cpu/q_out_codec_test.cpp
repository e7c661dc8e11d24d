// q_out_codec_test.cpp: the legacy op's Q output addressing (oracle/q_out_codec.h), both ways.
//
// Every byte of a small Q output of each layout the contract has (packed [N, Hp, 512] head-major
// and chunk-interleaved, bf16_512's in-place q, fp8_512's q_fp8) is decoded and encoded back; then
// positions computed here by hand from docs/contract.md §4 are checked, each against the mistake
// it would expose; then the layouts resolve() derives from real cases, and the padding heads the
// oracle zero-fills, are checked to be where the codec says.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvc/oracle/legacy_insert.h"
#include "kvc/oracle/q_out_codec.h"
#include "kvc/resolved_case.h"
#include "testkit/backends/backing.h"
#include "testkit/cases/small_cases.h"

namespace kvc {
namespace {

using oracle::locate_q_out_byte;
using oracle::q_out_byte_offset;
using oracle::QOutElement;

constexpr std::int64_t kTokens = 3;

QOutLayout layout(QOutKind kind, std::int64_t q_heads, std::int64_t heads, int element_bytes, bool interleaved,
                  std::int64_t offset_bytes = 0) {
  QOutLayout q;
  q.kind = kind;
  q.tokens = kTokens;
  q.q_heads = q_heads;
  q.heads = heads;
  q.element_bytes = element_bytes;
  q.interleaved = interleaved;
  q.offset_bytes = offset_bytes;
  return q;
}

struct NamedLayout {
  std::string name;
  QOutLayout q;
};

std::vector<NamedLayout> all_layouts() {
  return {{"packed head-major, Hp 8", layout(QOutKind::kPadded, 2, 8, 2, false)},
          {"packed interleaved, Hp 8", layout(QOutKind::kPadded, 2, 8, 2, true)},
          {"packed head-major at byte offset 32", layout(QOutKind::kPadded, 2, 8, 2, false, 32)},
          {"bf16_512 q in place, H 2", layout(QOutKind::kInPlace, 2, 2, 2, false)},
          {"fp8_512 q_fp8, H 2", layout(QOutKind::kFp8, 2, 2, 1, false)}};
}

// Decoding any byte and encoding its element back lands on that byte; every element's first byte
// decodes to it. Catches an encoder and a decoder that disagree: a report naming the wrong token,
// head or dim for a differing byte.
TEST(QOutCodec, EveryByteRoundTripsInEveryLayout) {
  for (const NamedLayout& l : all_layouts()) {
    SCOPED_TRACE(l.name);
    const std::int64_t end = l.q.offset_bytes + l.q.elements() * l.q.element_bytes;
    for (std::int64_t b = l.q.offset_bytes; b < end; ++b) {
      const std::optional<QOutElement> e = locate_q_out_byte(l.q, b);
      ASSERT_TRUE(e) << "byte " << b;
      ASSERT_LT(e->token, kTokens);
      ASSERT_LT(e->head, l.q.heads);
      ASSERT_LT(e->dim, kHeadDim);
      ASSERT_EQ(q_out_byte_offset(l.q, e->token, e->head, e->dim) + e->byte_in_element, b) << "byte " << b;
    }
    for (std::int64_t t = 0; t < kTokens; ++t)
      for (std::int64_t h = 0; h < l.q.heads; ++h)
        for (int d = 0; d < kHeadDim; ++d) {
          const std::optional<QOutElement> e = locate_q_out_byte(l.q, q_out_byte_offset(l.q, t, h, d));
          ASSERT_TRUE(e);
          ASSERT_EQ(e->token, t);
          ASSERT_EQ(e->head, h);
          ASSERT_EQ(e->dim, d);
          ASSERT_EQ(e->byte_in_element, 0);
        }
  }
}

void expect_at(const QOutLayout& q, std::int64_t byte, std::int64_t t, std::int64_t h, int d, int byte_in_element,
               const char* defect) {
  EXPECT_EQ(q_out_byte_offset(q, t, h, d) + byte_in_element, byte) << defect;
  const std::optional<QOutElement> e = locate_q_out_byte(q, byte);
  ASSERT_TRUE(e) << defect;
  EXPECT_EQ(e->token, t) << defect;
  EXPECT_EQ(e->head, h) << defect;
  EXPECT_EQ(e->dim, d) << defect;
  EXPECT_EQ(e->byte_in_element, byte_in_element) << defect;
}

TEST(QOutCodec, HandComputedPositions) {
  const QOutLayout packed = layout(QOutKind::kPadded, 2, 8, 2, false);
  // ((1 * 8 + 2) * 512 + 5) * 2: a token holds Hp heads, not H ((1 * 2 + 2) * 512 + 5) * 2 = 4106.
  expect_at(packed, 10250, 1, 2, 5, 0, "token stride of H heads instead of Hp");
  expect_at(packed, 10251, 1, 2, 5, 1, "byte offset taken as an element index (16-bit elements)");
  // Interleaved: t * Hp * 512 + (d / 16) * Hp * 16 + h * 16 + d % 16 = 4096 + 128 + 32 + 5 = 4261
  // elements; head-major would put it at (1 * 8 + 2) * 512 + 21 = 5141.
  const QOutLayout interleaved = layout(QOutKind::kPadded, 2, 8, 2, true);
  expect_at(interleaved, 4261 * 2, 1, 2, 21, 0, "head-major addressing of an interleaved q_out");
  // The last element of token 0 interleaved, (0, 7, 511): lane 31, i 15: 31 * 8 * 16 + 7 * 16 + 15 = 4095.
  expect_at(interleaved, 4095 * 2, 0, 7, 511, 0, "the chunk of the last lane misplaced");
  // fp8_512 q_fp8 [N, 2, 512] e4m3, one byte per element: (2 * 2 + 1) * 512 + 500 = 3060 (2-byte
  // elements would put it at 6120, a head count of Hp = 8 at (2 * 8 + 1) * 512 + 500 = 9204).
  const QOutLayout fp8 = layout(QOutKind::kFp8, 2, 2, 1, false);
  expect_at(fp8, 3060, 2, 1, 500, 0, "2-byte elements assumed for e4m3, or Hp used for H");
  // bf16_512 in place [N, 2, 512] bf16: (2 * 2 + 0) * 512 * 2 = 4096.
  const QOutLayout in_place = layout(QOutKind::kInPlace, 2, 2, 2, false);
  expect_at(in_place, 4096, 2, 0, 0, 0, "the in-place q addressed with the padded head count");
  // A q_out starting 32 bytes into its buffer: its element 0 is byte 32.
  const QOutLayout offset = layout(QOutKind::kPadded, 2, 8, 2, false, 32);
  expect_at(offset, 32, 0, 0, 0, 0, "the buffer's base offset ignored");
  expect_at(offset, 32 + 2 * 513, 0, 1, 1, 0, "the buffer's base offset ignored");
}

// Bytes no element holds are not given a made-up position. Catches a decoder that reports
// "token N" (one past the last) or a negative dim for a byte before the tensor.
TEST(QOutCodec, BytesOutsideTheElementsAreNotLocated) {
  const QOutLayout offset = layout(QOutKind::kPadded, 2, 8, 2, false, 32);
  EXPECT_FALSE(locate_q_out_byte(offset, 31)) << "a byte before the base offset";
  EXPECT_FALSE(locate_q_out_byte(offset, 32 + offset.elements() * 2)) << "the byte after the last element";
  EXPECT_TRUE(locate_q_out_byte(offset, 32 + offset.elements() * 2 - 1)) << "the last byte of the last element";
  EXPECT_FALSE(locate_q_out_byte(layout(QOutKind::kPadded, 2, 0, 2, false), 0)) << "Hp = 0 has no Q output";
  EXPECT_FALSE(locate_q_out_byte(QOutLayout{}, 0)) << "the KV-only op has no Q output";
}

struct ExpectedQOut {
  QOutKind kind;
  std::int64_t heads;
  int element_bytes;
  bool interleaved;  // with q_interleaved set: only the packed path reads it
};

ExpectedQOut expected_q_out(RecordFormat f) {
  switch (f) {
    case RecordFormat::kPacked584:
    case RecordFormat::kPacked528: return {QOutKind::kPadded, 8, 2, true};
    case RecordFormat::kFp8_512: return {QOutKind::kFp8, 2, 1, false};
    case RecordFormat::kBf16_512: return {QOutKind::kInPlace, 2, 2, false};
  }
  return {};
}

// What resolve() derives for each format's legacy case (testkit::small_valid_case: 6 rows, H 2,
// Hp 8). Catches a layout that takes H for Hp on the packed path, Hp for H on the full caches,
// q's dtype for q_fp8's, or the interleaved flag on a path that is head-major.
TEST(QOutCodec, ResolvedLayoutOfEachFormat) {
  for (RecordFormat f : kAllFormats) {
    SCOPED_TRACE(std::string(layout_of(f).name));
    InsertCase c = testkit::small_valid_case(InsertOp::kLegacy, f);
    c.q_interleaved = true;
    const ResolvedInsertCase r = resolve_or_throw(c);
    EXPECT_EQ(r.q_out.tokens, 6);
    EXPECT_EQ(r.q_out.q_heads, 2);
    EXPECT_EQ(r.q_out.offset_bytes, c.q_out.offset_bytes);
    EXPECT_EQ(r.q_out.elements() * r.q_out.element_bytes + r.q_out.offset_bytes, c.q_out.span_bytes());
    const ExpectedQOut e = expected_q_out(f);
    EXPECT_EQ(r.q_out.kind, e.kind);
    EXPECT_EQ(r.q_out.heads, e.heads);
    EXPECT_EQ(r.q_out.element_bytes, e.element_bytes);
    EXPECT_EQ(r.q_out.interleaved, e.interleaved);
    EXPECT_EQ(resolve_or_throw(testkit::small_valid_case(InsertOp::kKvOnly, f)).q_out.kind, QOutKind::kNone);
  }
}

// The oracle stores through the codec; the bytes it zero-fills (heads H..Hp-1 of the packed path)
// must be exactly those the codec decodes as padding heads. Catches a report that would call a
// live head's byte padding, or the reverse, in either layout.
TEST(QOutCodec, OracleZeroFillsExactlyThePaddingHeadsTheCodecLocates) {
  for (bool interleaved : {false, true}) {
    SCOPED_TRACE(interleaved ? "interleaved" : "head-major");
    InsertCase c = testkit::small_valid_case(InsertOp::kLegacy, RecordFormat::kPacked584);
    c.q_interleaved = interleaved;
    InsertOutputs out = testkit::make_outputs(c);
    ASSERT_TRUE(oracle::legacy_insert(c, out).ok());
    const QOutLayout q = resolve_or_throw(c).q_out;
    std::int64_t padding_bytes = 0;
    for (std::int64_t b = 0; b < static_cast<std::int64_t>(out.q_out.size()); ++b) {
      const std::optional<QOutElement> e = locate_q_out_byte(q, b);
      ASSERT_TRUE(e) << "byte " << b;
      if (e->head < q.q_heads) continue;
      ++padding_bytes;
      ASSERT_EQ(out.q_out[static_cast<std::size_t>(b)], 0) << "byte " << b << " of padding head " << e->head;
    }
    EXPECT_EQ(padding_bytes, q.tokens * (q.heads - q.q_heads) * q.bytes_per_head());
  }
}

}  // namespace
}  // namespace kvc
