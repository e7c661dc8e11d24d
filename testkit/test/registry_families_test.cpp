// registry_families_test.cpp: the kernel matrix's families of input a plain matrix never sends,
// checked on the oracle and the validator (testkit/cases/registry.h).
//
//   OffsetViews: every tensor a view at a byte offset. Valid at the strict level; the 16-byte-rule
//     tensors sit at non-zero multiples of 16, the others at element-aligned offsets that are not;
//     the oracle's cache and q_out bytes are those of the same scenario in buffers of their own,
//     shifted by the view's offset, with the bytes before the view untouched; each 16-byte-rule
//     tensor moved by one element more is rule 202 at the strict level and valid at the contract
//     level; a kv_norm weight at its 2-byte offset gives the bytes of one at offset 0.
//   IndexTails: slot_mapping and position_ids views of longer buffers. Valid; the entries past
//     the views are distinct free slots and positions inside the table; the oracle writes the
//     bytes of the same case with the tails cut off; and a reader of slot_mapping past M (the
//     case with its slot view widened to N rows) writes records the comparison names as foreign
//     slots, one wrong-address site per row read past M.
//   EdgeValues: NaN, +-Inf, -0, subnormals and values past the fp8 range in the live kv rows
//     (and q rows); the oracle writes the codes docs/contract.md §3.7 gives them (0xFE for a NaN,
//     scale 0xFF for an Inf block, 0x80 and scale 0x69 for a block of -0, 0x7FFF for a bf16 NaN,
//     saturation to +-448 in fp8_512) and a q head holding a NaN comes out all NaN.
//   GridLoop: one scenario per op and format longer than any persistent grid an H200 holds,
//     exempt from --max-tokens, valid.
//   RuleMatrix: every site of rule 202 (docs/contract.md §5.2) has a breaker.
// Catches: an oracle or harness that reads a tensor from its buffer's start instead of its
// offset, or reads slot_mapping past M; views that break a strict rule or are not views at all;
// tails that are not valid or collide with the case's slots; edge rows that lose their edge values
// or an oracle that encodes them against §3.7; a grid-loop scenario dropped by --max-tokens or
// short of the grid; a misalignment site without a breaker.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kvc/oracle/bf16.h"
#include "kvc/oracle/record_codec.h"
#include "kvc/validate.h"
#include "testkit/backends/backing.h"
#include "testkit/backends/oracle_backend.h"
#include "testkit/cases/edge_values.h"
#include "testkit/cases/index_tails.h"
#include "testkit/cases/offset_views.h"
#include "testkit/cases/registry.h"
#include "testkit/cases/rule_breakers.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/compare/mismatch_classes.h"

namespace kvc::cases {
namespace {

using Bytes = std::vector<std::uint8_t>;

struct Cell {
  InsertOp op;
  ConformanceSpec spec;
};

std::string cell_name(const Cell& c) { return (c.op == InsertOp::kLegacy ? "Legacy_" : "KvOnly_") + c.spec.name(); }
void PrintTo(const Cell& c, std::ostream* os) { *os << cell_name(c); }

template <typename Keep>
std::vector<Cell> cells(Keep keep) {
  std::vector<Cell> v;
  for (InsertOp op : {InsertOp::kKvOnly, InsertOp::kLegacy})
    for (const ConformanceSpec& s : kernel_matrix(op))
      if (keep(s)) v.push_back({op, s});
  return v;
}

InsertOutputs run_oracle(const InsertCase& c) {
  InsertOutputs out = testkit::make_outputs(c);
  const Status s = testkit::OracleBackend().run(c, out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

ConformanceSpec in_own_buffers(ConformanceSpec s) {
  s.placement = Placement::kOwnBuffers;
  return s;
}

// ---- the matrix holds each family ----

TEST(RegistryFamilies, EveryOpHoldsEachFamilyInEveryFormatAtTwoSmallSizes) {
  for (InsertOp op : {InsertOp::kKvOnly, InsertOp::kLegacy}) {
    std::map<std::string, int> per_family;
    std::set<std::string> names;
    for (const ConformanceSpec& s : kernel_matrix(op)) {
      EXPECT_TRUE(names.insert(s.name()).second) << "two scenarios named " << s.name();
      if (s.values == KvValues::kEdgeValues) ++per_family["edge"];
      if (s.placement == Placement::kOffsetViews) ++per_family["offset"];
      if (s.placement == Placement::kIndexTails) ++per_family["tails"];
      if (s.token_limit == TokenLimit::kExempt) ++per_family["grid"];
      if (s.values == KvValues::kEdgeValues || s.placement != Placement::kOwnBuffers) {
        EXPECT_LE(s.tokens, kTokenCutoff + 1) << s.name() << ": the families are small";
      }
    }
    EXPECT_EQ(per_family["edge"], 8);
    EXPECT_EQ(per_family["offset"], 8);
    EXPECT_EQ(per_family["tails"], 8);
    EXPECT_EQ(per_family["grid"], 4);
  }
}

// ---- OffsetViews ----

class OffsetViews : public ::testing::TestWithParam<Cell> {};

TEST_P(OffsetViews, ValidViewsWriteThePlainCasesBytesShifted) {
  const Cell& cell = GetParam();
  const InsertCase view = build_case(cell.op, cell.spec, 0);
  const InsertCase plain = build_case(cell.op, in_own_buffers(cell.spec), 0);
  ASSERT_TRUE(validate_insert(view, ValidationLevel::kStrict).ok())
      << validate_insert(view, ValidationLevel::kStrict).ToString();

  const bool legacy = cell.op == InsertOp::kLegacy;
  const bool fp8 = cell.spec.format == RecordFormat::kFp8_512;
  struct Offset {
    const char* what;
    std::int64_t bytes;
    int element;
    bool sixteen_byte_rule;
  };
  std::vector<Offset> offsets = {{"kv", view.kv.meta.offset_bytes, 2, true},
                                 {"cos_sin", view.cos_sin.meta.offset_bytes, 4, true},
                                 {"cache", view.cache.offset_bytes, 1, true},
                                 {"slots", view.slots.meta.offset_bytes, 8, false},
                                 {"positions", view.positions.meta.offset_bytes, 8, false}};
  if (fp8) offsets.push_back({"fp8_scale", view.fp8_scale.meta.offset_bytes, 4, false});
  if (legacy) {
    offsets.push_back({"q", view.q.meta.offset_bytes, 2, true});
    offsets.push_back({"q_out", view.q_out.offset_bytes, 1, true});
    if (fp8) offsets.push_back({"q_scale_inv", view.q_scale_inv.meta.offset_bytes, 4, false});
  }
  for (const Offset& o : offsets) {
    EXPECT_GT(o.bytes, 0) << o.what << " is not a view";
    EXPECT_EQ(o.bytes % o.element, 0) << o.what << ": an offset torch cannot make";
    EXPECT_EQ(o.bytes % kAlignment == 0, o.sixteen_byte_rule) << o.what << " at " << o.bytes;
  }

  const InsertOutputs v = run_oracle(view), p = run_oracle(plain);
  const std::int64_t shift = view.cache.offset_bytes;
  ASSERT_EQ(v.cache.size(), p.cache.size() + static_cast<std::size_t>(shift));
  EXPECT_TRUE(std::equal(p.cache.begin(), p.cache.end(), v.cache.begin() + shift)) << "the cache bytes, shifted";
  EXPECT_TRUE(std::all_of(v.cache.begin(), v.cache.begin() + shift, [](std::uint8_t b) {
    return b == testkit::kCanary;
  })) << "a byte before the cache view was written";
  if (legacy) {
    const std::int64_t q_shift = view.q_out.offset_bytes;
    ASSERT_EQ(v.q_out.size(), p.q_out.size() + static_cast<std::size_t>(q_shift));
    EXPECT_TRUE(std::equal(p.q_out.begin(), p.q_out.end(), v.q_out.begin() + q_shift)) << "q_out, shifted";
    EXPECT_TRUE(
        std::all_of(v.q_out.begin(), v.q_out.begin() + q_shift, [](std::uint8_t b) { return b == testkit::kCanary; }));
  }
}

// One element more: the 16-byte-rule tensors then break rule 202, which only the strict level has.
TEST_P(OffsetViews, OneElementMoreOnASixteenByteTensorIsRule202) {
  const Cell& cell = GetParam();
  const InsertCase view = build_case(cell.op, cell.spec, 0);
  std::vector<std::pair<const char*, InsertCase>> moved;
  auto shifted = [&](HostTensor InsertCase::*t, int element) {
    InsertCase c = view;
    HostTensor& h = c.*t;
    h.bytes.insert(h.bytes.begin(), static_cast<std::size_t>(element), 0);
    h.meta.offset_bytes += element;
    return c;
  };
  moved.push_back({"kv", shifted(&InsertCase::kv, 2)});
  moved.push_back({"cos_sin", shifted(&InsertCase::cos_sin, 4)});
  InsertCase cache = view;
  cache.cache.offset_bytes += cache.cache.element_bytes();
  moved.push_back({"cache", cache});
  if (cell.op == InsertOp::kLegacy) moved.push_back({"q", shifted(&InsertCase::q, 2)});
  for (const auto& [what, c] : moved) {
    EXPECT_EQ(validate_insert(c, ValidationLevel::kStrict).code, ErrorCode::kMisaligned) << what;
    EXPECT_TRUE(validate_insert(c, ValidationLevel::kContract).ok()) << what << ": 202 is a strict rule";
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, OffsetViews, ::testing::ValuesIn(cells([](const ConformanceSpec& s) {
                           return s.placement == Placement::kOffsetViews;
                         })),
                         [](const ::testing::TestParamInfo<Cell>& p) { return cell_name(p.param); });

TEST(OffsetViewsKvNormWeight, AtTwoBytesWritesTheBytesOfTheWeightAtZero) {
  ConformanceSpec spec{RecordFormat::kPacked584, 17, 16};
  spec.placement = Placement::kOffsetViews;
  std::vector<std::uint16_t> w(kHeadDim);
  for (int d = 0; d < kHeadDim; ++d) w[static_cast<std::size_t>(d)] = oracle::float_to_bf16(1.0f + 0.01f * (d % 7));
  InsertCase aligned = build_kv_only(spec, 0);
  aligned.kv_norm_weight = make_tensor_from(DType::kBF16, w, {kHeadDim});
  InsertCase offset = aligned;
  offset.kv_norm_weight = place_kv_norm_weight(spec, aligned.kv_norm_weight);
  EXPECT_EQ(offset.kv_norm_weight.meta.offset_bytes, 2);
  ASSERT_TRUE(validate_insert(offset, ValidationLevel::kStrict).ok()) << "the weight has no alignment rule";
  EXPECT_EQ(run_oracle(offset).cache, run_oracle(aligned).cache);
  EXPECT_EQ(place_kv_norm_weight(in_own_buffers(spec), aligned.kv_norm_weight).meta.offset_bytes, 0);
}

// ---- IndexTails ----

class IndexTails : public ::testing::TestWithParam<Cell> {};

TEST_P(IndexTails, TailsHoldValidEntriesTheOracleNeverReads) {
  const Cell& cell = GetParam();
  const InsertCase c = build_case(cell.op, cell.spec, 0);
  ASSERT_TRUE(validate_insert(c, ValidationLevel::kStrict).ok())
      << validate_insert(c, ValidationLevel::kStrict).ToString();
  const std::int64_t m = c.num_inserted(), n = c.num_rows(), capacity = c.cache.num_blocks * c.block_size;
  ASSERT_EQ(c.slots.meta.sizes, std::vector<std::int64_t>{m});
  ASSERT_EQ(static_cast<std::int64_t>(c.slots.bytes.size()), (m + testkit::index_tail_slots(n, m)) * 8);
  ASSERT_EQ(static_cast<std::int64_t>(c.positions.bytes.size()), (n + testkit::kTailRowsPastN) * 8);
  const std::set<std::int64_t> live = testkit::addressed_slots(c);
  std::set<std::int64_t> tail;
  for (std::int64_t t = m; t < m + testkit::index_tail_slots(n, m); ++t) {
    const std::int64_t s = c.slots.load<std::int64_t>(t);
    EXPECT_TRUE(s >= 0 && s < capacity) << "tail entry " << t << ": slot " << s;
    EXPECT_FALSE(live.count(s)) << "tail entry " << t << " is a slot the case writes: " << s;
    EXPECT_TRUE(tail.insert(s).second) << "tail slot " << s << " twice";
  }
  for (std::int64_t t = n; t < n + testkit::kTailRowsPastN; ++t) {
    const std::int64_t p = c.positions.load<std::int64_t>(t);
    EXPECT_TRUE(p >= 0 && p < c.cos_sin.meta.size(0)) << "tail position " << t << ": " << p;
  }

  InsertCase cut = c;
  cut.slots.bytes.resize(static_cast<std::size_t>(m * 8));
  cut.positions.bytes.resize(static_cast<std::size_t>(n * 8));
  const InsertOutputs with_tails = run_oracle(c);
  EXPECT_EQ(with_tails.cache, run_oracle(cut).cache) << "the oracle read an entry past a view";
  EXPECT_EQ(with_tails.q_out, run_oracle(cut).q_out);
}

// What the family is for: a reader of slot_mapping past M (here the oracle on the slot view widened
// to the N rows of kv) writes the tail's records, and the byte comparison names them.
TEST_P(IndexTails, AReaderPastMWritesForeignSlotsTheComparisonNames) {
  const Cell& cell = GetParam();
  const InsertCase c = build_case(cell.op, cell.spec, 0);
  InsertCase past_m = c;
  past_m.slots.meta.sizes = {c.num_rows()};
  const InsertOutputs initial = testkit::make_outputs(c), expected = run_oracle(c), actual = run_oracle(past_m);
  const testkit::DiffReport diff = testkit::diff_case_backings(c, expected.cache, actual.cache);
  const auto foreign = diff.count_by_class.find(testkit::ByteClass::kForeignSlot);
  ASSERT_NE(foreign, diff.count_by_class.end()) << "no foreign-slot byte: the tail was not read";
  const testkit::MismatchClassification m =
      testkit::classify_insert_mismatches(c, kvc::vllm_profile(), initial.cache, expected.cache, actual.cache);
  EXPECT_EQ(m.count(testkit::MismatchClass::kWrongAddress), c.num_rows() - c.num_inserted()) << m.report();
  EXPECT_EQ(m.total_sites(), m.count(testkit::MismatchClass::kWrongAddress)) << m.report();
}

INSTANTIATE_TEST_SUITE_P(Registry, IndexTails, ::testing::ValuesIn(cells([](const ConformanceSpec& s) {
                           return s.placement == Placement::kIndexTails;
                         })),
                         [](const ::testing::TestParamInfo<Cell>& p) { return cell_name(p.param); });

// ---- EdgeValues ----

bool is_nan16(std::uint16_t b) { return (b & 0x7FFF) > 0x7F80; }
bool is_subnormal16(std::uint16_t b) { return (b & 0x7F80) == 0 && (b & 0x7F) != 0; }

class EdgeValues : public ::testing::TestWithParam<Cell> {};

TEST_P(EdgeValues, LiveRowsHoldEveryEdgeValueAndTheOracleWritesTheirCodes) {
  const Cell& cell = GetParam();
  const InsertCase c = build_case(cell.op, cell.spec, 0);
  ASSERT_TRUE(validate_insert(c, ValidationLevel::kStrict).ok());
  int nan = 0, pos_inf = 0, neg_inf = 0, neg_zero = 0, subnormal = 0;
  std::set<std::int64_t> patterns;
  for (std::int64_t t = 0; t < c.num_inserted(); ++t) {
    if (c.slots.load<std::int64_t>(t) < 0) continue;
    patterns.insert(t % testkit::kEdgePatterns);
    for (int d = 0; d < kHeadDim; ++d) {
      const std::uint16_t b = c.kv.load<std::uint16_t>(t * kHeadDim + d);
      nan += is_nan16(b);
      pos_inf += b == 0x7F80;
      neg_inf += b == 0xFF80;
      neg_zero += b == 0x8000;
      subnormal += is_subnormal16(b);
    }
  }
  EXPECT_EQ(patterns.size(), static_cast<std::size_t>(testkit::kEdgePatterns)) << "a pattern no live row inserts";
  EXPECT_GT(nan, 0);
  EXPECT_GT(pos_inf, 0);
  EXPECT_GT(neg_inf, 0);
  EXPECT_GT(neg_zero, 0);
  EXPECT_GT(subnormal, 0);

  const InsertOutputs out = run_oracle(c);
  const oracle::PagedCacheView view = testkit::view_of(c);
  const RecordFormat f = cell.spec.format;
  const RecordLayout& l = layout_of(f);
  for (std::int64_t t = 0; t < c.num_inserted(); ++t) {
    const std::int64_t slot = c.slots.load<std::int64_t>(t);
    if (slot < 0) continue;
    SCOPED_TRACE("row " + std::to_string(t) + " slot " + std::to_string(slot));
    const std::int64_t data = oracle::token_data_offset(view, slot);
    auto byte = [&](int d, int k = 0) {
      return out.cache[static_cast<std::size_t>(data + oracle::dim_offset_in_data(f, d) + k)];
    };
    auto value16 = [&](int d) { return static_cast<std::uint16_t>(byte(d) | byte(d, 1) << 8); };
    auto scale = [&](int d) {
      return out.cache[static_cast<std::size_t>(oracle::token_scale_offset(view, slot) + d / l.quant_block_dims)];
    };
    switch (t % testkit::kEdgePatterns) {
      case 0:  // NaN in NoPE dims 70 and 200
        for (int d : {70, 200}) {
          if (f == RecordFormat::kBf16_512)
            EXPECT_EQ(value16(d), 0x7FFF) << d;
          else
            EXPECT_EQ(byte(d), kE4m3NegMax) << d;
        }
        break;
      case 1:  // +Inf in dim 130, -0 in dim 131
        if (is_packed(f)) {
          EXPECT_EQ(scale(130), kUe8m0Nan);
          EXPECT_EQ(byte(130), kE4m3NegMax) << "Inf * 0 is NaN";
          EXPECT_EQ(byte(131), 0x80);
        } else if (f == RecordFormat::kFp8_512) {
          EXPECT_EQ(byte(130), 0x7E);
          EXPECT_EQ(byte(131), 0x80);
        } else {
          EXPECT_EQ(value16(130), 0x7F80);
          EXPECT_EQ(value16(131), 0x8000);
        }
        break;
      case 2:  // -Inf in dim 260
        if (is_packed(f)) {
          EXPECT_EQ(scale(260), kUe8m0Nan);
          EXPECT_EQ(byte(260), kE4m3NegMax);
        } else if (f == RecordFormat::kFp8_512) {
          EXPECT_EQ(byte(260), kE4m3NegMax);
        } else {
          EXPECT_EQ(value16(260), 0xFF80);
        }
        break;
      case 5:  // dims 320..383 all -0: the floored scale 0x69, codes -0
        for (int d = 320; d < 384; ++d) {
          if (f == RecordFormat::kBf16_512) {
            EXPECT_EQ(value16(d), 0x8000) << d;
          } else {
            EXPECT_EQ(byte(d), 0x80) << d;
            if (is_packed(f)) {
              EXPECT_EQ(scale(d), 0x69) << d;
            }
          }
        }
        break;
      case 7:  // 330, -9984, +-3.39e38 in dims 10..13: saturated in fp8_512 (scale 0.7)
        if (f == RecordFormat::kFp8_512) {
          EXPECT_EQ(byte(10), 0x7E);
          EXPECT_EQ(byte(11), kE4m3NegMax);
          EXPECT_EQ(byte(12), 0x7E);
          EXPECT_EQ(byte(13), kE4m3NegMax);
        } else if (f == RecordFormat::kBf16_512) {
          EXPECT_EQ(value16(12), 0x7F7F) << "a finite value is stored as it is";
        }
        break;
      default: break;
    }
  }

  if (cell.op != InsertOp::kLegacy) return;
  // q rows carry the patterns too; a head holding a NaN (pattern 0) norms to NaN in every dim.
  const std::int64_t heads = c.q.meta.size(1), out_heads = c.q_out.size(1);
  const int es = dtype_size(c.q_out.dtype);
  int nan_heads = 0;
  for (std::int64_t t = 0; t < c.num_rows(); ++t)
    for (std::int64_t h = 0; h < heads; ++h) {
      if ((t * heads + h) % testkit::kEdgePatterns != 0) continue;
      ++nan_heads;
      for (int d = 0; d < kHeadDim; ++d) {
        const std::size_t at =
            static_cast<std::size_t>(c.q_out.offset_bytes + ((t * out_heads + h) * kHeadDim + d) * es);
        if (es == 1)
          ASSERT_EQ(out.q_out[at], kE4m3NegMax) << "token " << t << " head " << h << " dim " << d;
        else
          ASSERT_EQ(out.q_out[at] | out.q_out[at + 1] << 8, 0x7FFF) << "token " << t << " head " << h << " dim " << d;
      }
    }
  EXPECT_GT(nan_heads, 0);
}

INSTANTIATE_TEST_SUITE_P(Registry, EdgeValues, ::testing::ValuesIn(cells([](const ConformanceSpec& s) {
                           return s.values == KvValues::kEdgeValues;
                         })),
                         [](const ::testing::TestParamInfo<Cell>& p) { return cell_name(p.param); });

// ---- GridLoop ----

TEST(GridLoop, OneScenarioPerOpAndFormatPastEveryGridKeptUnderMaxTokens) {
  EXPECT_GT(kGridLoopTokens, kH200Sms * kMaxResidentWarpsPerSm) << "no occupancy holds it in one pass";
  for (InsertOp op : {InsertOp::kKvOnly, InsertOp::kLegacy}) {
    std::set<RecordFormat> formats;
    for (const ConformanceSpec& s : kernel_matrix(op)) {
      if (s.token_limit != TokenLimit::kExempt) {
        if (s.tokens > 4096) {
          EXPECT_FALSE(within_token_limit(s, 4096)) << s.name();
        }
        continue;
      }
      EXPECT_TRUE(formats.insert(s.format).second) << s.name();
      EXPECT_EQ(s.tokens, kGridLoopTokens);
      EXPECT_TRUE(within_token_limit(s, 4096)) << s.name() << " dropped by --max-tokens 4096";
      EXPECT_TRUE(within_token_limit(s, 1)) << s.name();
      const InsertCase c = build_case(op, s, 0);
      EXPECT_EQ(c.num_inserted(), kGridLoopTokens);
      EXPECT_TRUE(validate_insert(c, ValidationLevel::kStrict).ok()) << s.name();
    }
    EXPECT_EQ(formats.size(), kAllFormats.size());
  }
}

// ---- RuleMatrix ----

TEST(RuleMatrix, EverySiteOfTheAlignmentRuleHasABreaker) {
  std::set<std::string> breakers;
  for (const testkit::RuleBreaker& b : testkit::rule_breakers())
    if (b.code == ErrorCode::kMisaligned) {
      EXPECT_EQ(b.level, ValidationLevel::kStrict) << b.name;
      breakers.insert(b.name);
    }
  // docs/contract.md §5.2: the kv, cos_sin_cache and cache bases, the page stride, the token
  // stride (full caches), the q and q_out bases (legacy).
  EXPECT_EQ(breakers, (std::set<std::string>{"MisalignedKvBase", "MisalignedCosSinBase", "MisalignedCacheBase",
                                             "MisalignedPageStride", "MisalignedTokenStride", "MisalignedQBase",
                                             "MisalignedQOutBase"}));
}

}  // namespace
}  // namespace kvc::cases
