// properties.cpp: the property table (see properties.h).
#include "kvc/fuzz/properties.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "kvc/oracle/bf16.h"
#include "kvc/oracle/fp8_e4m3.h"
#include "kvc/oracle/kv_insert.h"
#include "kvc/oracle/record_codec.h"
#include "kvc/oracle/ue8m0.h"
#include "kvc/resolved_case.h"
#include "testkit/compare/approx_rsqrt.h"
#include "testkit/backends/backing.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/cases/case_builder.h"
#include "testkit/compare/judge.h"
#include "testkit/cases/rule_breakers.h"
#include "testkit/cases/small_cases.h"

namespace kvc::fuzz {
namespace {

[[noreturn]] void fail(const PropertyInput& in, PropertyContext& ctx, const std::string& message) {
  *ctx.last_failure = FailureRecord{in, message, ctx.sut.declared_profile(in.c)};
  RC_FAIL(message);
}

InsertOutputs run_ok(const InsertCase& c, const PropertyInput& in, PropertyContext& ctx, const char* what) {
  InsertOutputs out = testkit::make_outputs(c);
  const Status s = ctx.sut.run(c, out);
  if (!s.ok()) fail(in, ctx, std::string(what) + ": a valid case was rejected: " + s.ToString());
  return out;
}

void expect_same_cache(const InsertCase& c, const std::vector<std::uint8_t>& expected,
                       const std::vector<std::uint8_t>& actual, const PropertyInput& in, PropertyContext& ctx,
                       const std::string& expected_name, const std::string& actual_name) {
  const testkit::DiffReport r = testkit::diff_case_backings(c, expected, actual);
  if (r.equal()) return;
  testkit::ReportContext rc_ctx;
  rc_ctx.expected_name = expected_name;
  rc_ctx.actual_name = actual_name;
  fail(in, ctx, testkit::format_case_report(c, r, expected, actual, rc_ctx));
}

// A copy of the case keeping only the rows in `rows` (in that order) as the inserted rows, and
// the DP-padding rows after them.
InsertCase select_rows(const InsertCase& c, const std::vector<std::int64_t>& rows, bool keep_padding) {
  InsertCase out = c;
  std::vector<std::int64_t> order = rows;
  if (keep_padding)
    for (std::int64_t t = c.num_inserted(); t < c.num_rows(); ++t) order.push_back(t);
  const std::int64_t n = static_cast<std::int64_t>(order.size());
  std::vector<std::uint16_t> kv(static_cast<std::size_t>(n * kHeadDim));
  std::vector<std::int64_t> positions, slots;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t t = order[static_cast<std::size_t>(i)];
    for (int d = 0; d < kHeadDim; ++d)
      kv[static_cast<std::size_t>(i * kHeadDim + d)] = c.kv.load<std::uint16_t>(t * kHeadDim + d);
    positions.push_back(c.positions.load<std::int64_t>(t));
  }
  for (std::int64_t r : rows) slots.push_back(c.slots.load<std::int64_t>(r));
  out.kv = make_tensor_from(c.kv.meta.dtype, kv, {n, kHeadDim});
  out.positions = make_tensor_from(DType::kI64, positions, {n});
  out.slots = make_tensor_from(DType::kI64, slots, {static_cast<std::int64_t>(slots.size())});
  return out;
}

std::vector<std::int64_t> iota_rows(std::int64_t from, std::int64_t to) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(std::max<std::int64_t>(0, to - from)));
  std::iota(v.begin(), v.end(), from);
  return v;
}

// The legacy case kv-only-equals-legacy runs a KV-only problem as: the same KV rows, no kv_norm
// (it is fused only in front of the KV-only op), and Q heads, padding and flags drawn from `aux`.
InsertCase legacy_twin(const InsertCase& kv_only, std::uint64_t aux, std::int64_t* padded_heads = nullptr) {
  const RecordFormat f = resolve_or_throw(kv_only).format;
  testkit::QuerySpec q;
  std::uint64_t a = aux;
  q.padded_heads = is_packed(f) ? kSupportedHeadPadding[a % kSupportedHeadPadding.size()] : 0;
  a /= kSupportedHeadPadding.size();
  q.heads = q.padded_heads ? 1 + static_cast<std::int64_t>(a % static_cast<std::uint64_t>(q.padded_heads))
                           : 1 + static_cast<std::int64_t>(a % 3);
  q.q_interleaved = (a >> 8) & 1;
  q.apply_q_norm = (a >> 9) & 1;
  q.apply_q_rope = (a >> 10) & 1;
  testkit::Rng rng(a);
  q.q = testkit::random_bf16_rows(rng, kv_only.num_rows() * q.heads);
  q.eps = 1e-6f;
  q.q_scale_inv = 2.0f;
  if (padded_heads) *padded_heads = q.padded_heads;
  return testkit::make_legacy_case(kv_only, q);
}

InsertCase without_kv_norm(const InsertCase& c) {
  InsertCase out = c;
  out.kv_norm_weight = HostTensor{};
  return out;
}

// Every policy but rsqrt: what decides the record bytes of a case without a norm row.
bool same_record_policies(kvc::Profile a, kvc::Profile b) {
  a.rsqrt = b.rsqrt = RsqrtMode::kCorrectlyRounded;
  return a == b;
}

// ---- properties ----

// The backend against the oracle under the profile the backend declares for the case: the
// judge's verdict (testkit/compare/judge.h, docs/contract.md §6.6): the same status, nothing
// written on a rejection, every cache byte (a mismatch names the policies the differing bytes
// follow, and address errors apart, never excused), and the legacy op's q_out; a backend that
// declares the approximate rsqrt has its norm rows checked per docs/contract.md §2.5. One oracle
// run per case. The class "profile:<name>" records the declared profile. With the oracle as the
// backend under test this compares the oracle with itself and cannot fail; it exists for kernel
// backends (and mutants: fuzz_mutation_test, fuzz_planted_defect_test, fuzz_profile_test).
void differential(const PropertyInput& in, PropertyContext& ctx) {
  const kvc::Profile declared = ctx.sut.declared_profile(in.c);
  record(ctx.coverage, {"profile:" + kvc::profile_name(declared)});
  if (declared.rsqrt == RsqrtMode::kApproximate && !testkit::norm_rows(in.c).empty())
    record(ctx.coverage, {"rsqrt:approximate"});
  const testkit::Verdict v = testkit::run_and_judge_insert(ctx.sut, in.c);
  if (!v.passed()) fail(in, ctx, v.report);
}

void slot_minus_one_is_noop(const PropertyInput& in, PropertyContext& ctx) {
  const InsertCase& c = in.c;
  if (c.num_inserted() == 0) return;
  const std::int64_t victim = static_cast<std::int64_t>(in.aux % static_cast<std::uint64_t>(c.num_inserted()));
  InsertCase skipped = c;
  skipped.slots.store<std::int64_t>(victim, -1);
  std::vector<std::int64_t> kept;
  for (std::int64_t t = 0; t < c.num_inserted(); ++t)
    if (t != victim) kept.push_back(t);
  const InsertCase removed = select_rows(c, kept, true);
  const InsertOutputs a = run_ok(skipped, in, ctx, "row with slot -1");
  const InsertOutputs b = run_ok(removed, in, ctx, "row removed");
  expect_same_cache(c, b.cache, a.cache, in, ctx, "row " + std::to_string(victim) + " removed", "its slot set to -1");
}

void locality(const PropertyInput& in, PropertyContext& ctx) {
  const InsertOutputs out = run_ok(in.c, in, ctx, "insert");
  const std::vector<std::uint8_t> canary = testkit::make_outputs(in.c).cache;
  const testkit::DiffReport r = testkit::diff_case_backings(in.c, canary, out.cache);
  for (const auto& [cls, count] : r.count_by_class) {
    if (testkit::is_outside_addressed_records(cls)) {
      testkit::ReportContext rc_ctx;
      rc_ctx.expected_name = "canary";
      rc_ctx.actual_name = "backing after insert";
      fail(in, ctx,
           "bytes outside the addressed records changed (" + std::string(testkit::name(cls)) + ")\n" +
               testkit::format_case_report(in.c, r, canary, out.cache, rc_ctx));
    }
  }
}

// With the oracle as the backend under test this compares the oracle with itself (legacy_insert
// runs insert_kv_rows, the KV-only encoder) and cannot fail; it is the DSpark claim for kernels.
// It needs both ops to declare the same record policies (ProfileScope): the harness checks that
// before the property runs.
void kv_only_equals_legacy(const PropertyInput& in, PropertyContext& ctx) {
  const InsertCase c = without_kv_norm(in.c);
  std::int64_t padded_heads = 0;
  const InsertCase legacy = legacy_twin(c, in.aux, &padded_heads);
  const InsertOutputs kv = run_ok(c, in, ctx, "KV-only");
  const InsertOutputs lg = run_ok(legacy, in, ctx, "legacy");
  expect_same_cache(c, lg.cache, kv.cache, in, ctx, "legacy insert (Hp " + std::to_string(padded_heads) + ")",
                    "KV-only insert");
}

void token_permutation(const PropertyInput& in, PropertyContext& ctx) {
  std::vector<std::int64_t> rows = iota_rows(0, in.c.num_inserted());
  testkit::Rng rng(in.aux);
  for (std::size_t i = rows.size(); i > 1; --i)
    std::swap(rows[i - 1], rows[static_cast<std::size_t>(rng.uniform(0, static_cast<std::int64_t>(i) - 1))]);
  const InsertCase permuted = select_rows(in.c, rows, true);
  const InsertOutputs a = run_ok(in.c, in, ctx, "original order");
  const InsertOutputs b = run_ok(permuted, in, ctx, "permuted");
  expect_same_cache(in.c, a.cache, b.cache, in, ctx, "original token order", "permuted tokens");
}

void split_batch(const PropertyInput& in, PropertyContext& ctx) {
  const std::int64_t m = in.c.num_inserted();
  const std::int64_t k = static_cast<std::int64_t>(in.aux % static_cast<std::uint64_t>(m + 1));
  const InsertCase first = select_rows(in.c, iota_rows(0, k), false);
  const InsertCase second = select_rows(in.c, iota_rows(k, m), false);
  const InsertOutputs whole = run_ok(in.c, in, ctx, "one call");
  InsertOutputs split = testkit::make_outputs(in.c);
  for (const InsertCase* part : {&first, &second}) {
    const Status s = ctx.sut.run(*part, split);
    if (!s.ok()) fail(in, ctx, "split call rejected: " + s.ToString());
  }
  expect_same_cache(in.c, whole.cache, split.cache, in, ctx, "one call",
                    "two calls split at token " + std::to_string(k));
}

void idempotent(const PropertyInput& in, PropertyContext& ctx) {
  InsertOutputs once = run_ok(in.c, in, ctx, "first insert");
  InsertOutputs twice = once;
  const Status s = ctx.sut.run(in.c, twice);
  if (!s.ok()) fail(in, ctx, "second insert rejected: " + s.ToString());
  expect_same_cache(in.c, once.cache, twice.cache, in, ctx, "inserted once", "inserted twice");
}

// Scales one NoPE block of one live row by 2^j when that is exact for every element and keeps the
// amax above the floor; its codes must stay and its scale byte must move by j. Under the amax floor
// `after` (docs/contract.md §6.1) the floor binds up to amax = 448 * 2^-14, far above the 2e-4 this
// excludes: the property states that it holds under `before` only (ProfileScope).
void scale_by_power_of_two(const PropertyInput& in, PropertyContext& ctx) {
  const InsertCase& c = in.c;
  const RecordLayout& l = resolve_or_throw(c).layout;
  std::vector<std::int64_t> live;
  for (std::int64_t t = 0; t < c.num_inserted(); ++t)
    if (c.slots.load<std::int64_t>(t) >= 0) live.push_back(t);
  if (live.empty() || c.kv_norm_weight.present) return;
  const std::int64_t row = live[in.aux % live.size()];
  const int block = static_cast<int>((in.aux >> 16) % static_cast<std::uint64_t>(kNopeDim / l.quant_block_dims));
  const int j = static_cast<int>((in.aux >> 24) % 9) - 4;
  InsertCase scaled = c;
  float amax = 0.0f;
  for (int i = 0; i < l.quant_block_dims; ++i) {
    const std::int64_t idx = row * kHeadDim + block * l.quant_block_dims + i;
    const float v = oracle::bf16_to_float(c.kv.load<std::uint16_t>(idx));
    const float s = std::ldexp(v, j);
    if (!std::isfinite(v) || (v != 0.0f && (std::fabs(v) < 0x1p-120f || std::fabs(s) < 0x1p-120f)) ||
        oracle::round_through_bf16(s) != s || std::fabs(s) > 0x1p100f)
      return;  // not exactly scalable
    amax = std::max(amax, std::min(std::fabs(v), std::fabs(s)));
    scaled.kv.store<std::uint16_t>(idx, oracle::float_to_bf16(s));
  }
  if (amax < 2 * kAmaxFloor) return;  // the floor would hide the scaling
  record(ctx.coverage, {"scaled-block"});
  const InsertOutputs a = run_ok(c, in, ctx, "original");
  const InsertOutputs b = run_ok(scaled, in, ctx, "scaled");
  const oracle::PagedCacheView v = testkit::view_of(c);
  const std::int64_t slot = c.slots.load<std::int64_t>(row);
  const oracle::DecodedRecord ra = oracle::decode_record(a.cache, v, slot),
                              rb = oracle::decode_record(b.cache, v, slot);
  std::ostringstream msg;
  if (static_cast<int>(rb.scales[block]) != static_cast<int>(ra.scales[block]) + j)
    msg << "scale byte of block " << block << " went 0x" << std::hex << int(ra.scales[block]) << " -> 0x"
        << int(rb.scales[block]) << std::dec << " for a 2^" << j << " scaling (slot " << slot << ")";
  for (int i = 0; i < l.quant_block_dims && msg.str().empty(); ++i) {
    const int d = block * l.quant_block_dims + i;
    if (ra.codes[d] != rb.codes[d])
      msg << "code of dim " << d << " changed 0x" << std::hex << int(ra.codes[d]) << " -> 0x" << int(rb.codes[d])
          << std::dec << " under a 2^" << j << " block scaling (slot " << slot << ")";
  }
  if (!msg.str().empty()) fail(in, ctx, msg.str());
}

// Negating every kv element flips the sign bit of every code and 16-bit value and keeps the scales.
// Blocks holding +-Inf are checked too: under the Inf block policy `vllm` their finite elements
// encode as +-0 by sign, which flips; under `sglang` a +-0 there encodes as NaN whatever its sign
// (docs/contract.md §6.1), so the property states that it holds under `vllm` only (ProfileScope).
void negation_flips_sign(const PropertyInput& in, PropertyContext& ctx) {
  const InsertCase& c = in.c;
  if (c.kv_norm_weight.present) return;  // the weight is not negated: the claim is about kv alone
  InsertCase neg = c;
  for (std::int64_t i = 0; i < c.kv.meta.numel(); ++i)
    neg.kv.store<std::uint16_t>(i, c.kv.load<std::uint16_t>(i) ^ 0x8000);
  const InsertOutputs a = run_ok(c, in, ctx, "original");
  const InsertOutputs b = run_ok(neg, in, ctx, "negated");
  const RecordLayout& l = resolve_or_throw(c).layout;
  const oracle::PagedCacheView v = testkit::view_of(c);
  for (std::int64_t t = 0; t < c.num_inserted(); ++t) {
    const std::int64_t slot = c.slots.load<std::int64_t>(t);
    if (slot < 0) continue;
    float x[kHeadDim];
    oracle::kv_row_after_rope(c, t, x);
    const oracle::DecodedRecord ra = oracle::decode_record(a.cache, v, slot),
                                rb = oracle::decode_record(b.cache, v, slot);
    for (int k = 0; k < l.scale_blocks; ++k)
      if (ra.scales[k] != rb.scales[k])
        fail(in, ctx, "scale of block " + std::to_string(k) + " changed under negation, slot " + std::to_string(slot));
    for (int d = 0; d < kHeadDim; ++d) {
      if (!std::isfinite(x[d])) continue;  // NaN stays NaN (0xFE / canonical), Inf*0 is NaN
      // A zero RoPE result (zero inputs, injected into the RoPE dims) is a sum of signed zeros:
      // +0 + -0 = +0 in both directions, so its sign does not follow the negation.
      if (d >= kNopeDim && x[d] == 0.0f) continue;
      const bool code = d < l.fp8_dims;
      const unsigned va = code ? ra.codes[d] : ra.values16[d], vb = code ? rb.codes[d] : rb.values16[d];
      const unsigned sign = code ? 0x80u : 0x8000u;
      if ((va ^ sign) != vb) {
        std::ostringstream m;
        m << "negation changed more than the sign: slot " << slot << " dim " << d << " (value " << x[d];
        if (code && l.quant_block_dims)
          m << ", block " << d / l.quant_block_dims << " scale byte 0x" << std::hex
            << int(ra.scales[d / l.quant_block_dims]) << std::dec;
        m << ") 0x" << std::hex << va << " -> 0x" << vb << ", expected 0x" << (va ^ sign);
        fail(in, ctx, m.str());
      }
    }
  }
}

// |dequantized - y| <= half an e4m3 step of y's scaled value, times the scale (packed), or the
// scaled value saturated at 448 (fp8_512). y is the value the op quantizes under the rope policy
// the backend declares (rotated, or as it arrives: docs/contract.md §6.1); every other policy
// leaves the bound as it is (the scale is read from the record), except an approximate rsqrt,
// whose normed rows are not the correctly rounded ones this computes (ProfileScope).
void dequantization_bound(const PropertyInput& in, PropertyContext& ctx) {
  const InsertCase& c = in.c;
  const ResolvedInsertCase resolved = resolve_or_throw(c);
  const RecordFormat f = resolved.format;
  if (f == RecordFormat::kBf16_512) return;
  const RecordLayout& l = resolved.layout;
  const bool rotated = ctx.sut.declared_profile(c).rope == kvc::RopePolicy::kRotate;
  const InsertOutputs out = run_ok(c, in, ctx, "insert");
  const oracle::PagedCacheView v = testkit::view_of(c);
  const float fp8_scale = c.fp8_scale.present ? c.fp8_scale.load<float>(0) : 1.0f;
  for (std::int64_t t = 0; t < c.num_inserted(); ++t) {
    const std::int64_t slot = c.slots.load<std::int64_t>(t);
    if (slot < 0) continue;
    float x[kHeadDim];
    if (rotated)
      oracle::kv_row_after_rope(c, t, x);
    else
      oracle::kv_row_before_rope(c, t, x);
    const oracle::DecodedRecord r = oracle::decode_record(out.cache, v, slot, fp8_scale);
    for (int d = 0; d < l.fp8_dims; ++d) {
      const float y = l.paged_regions ? oracle::round_through_bf16(x[d]) : x[d];
      if (!std::isfinite(y)) continue;
      const float scale = l.paged_regions ? oracle::ue8m0_decode(r.scales[d / l.quant_block_dims]) : fp8_scale;
      if (!std::isfinite(scale)) continue;  // the block holds an Inf
      // The value the contract quantizes: y * 2^-E (exact) for packed records, fl(x * fl(1/s))
      // for the fp8 full cache.
      const double scaled =
          l.paged_regions ? static_cast<double>(y) / scale : static_cast<double>(y * (1.0f / fp8_scale));
      const double a = std::fabs(scaled);
      const double step = a < 0x1p-6 ? 0x1p-9 : std::ldexp(1.0, std::ilogb(a) - 3);
      const double deq = static_cast<double>(oracle::e4m3_decode(r.codes[d]));
      const bool saturated = a >= kFp8Max && std::fabs(deq) == kFp8Max && std::signbit(deq) == std::signbit(scaled);
      if (!saturated && std::fabs(deq - scaled) > step / 2) {
        std::ostringstream m;
        m << "slot " << slot << " dim " << d << ": value " << y << " / scale " << scale << " = " << scaled
          << " but code 0x" << std::hex << int(r.codes[d]) << std::dec << " decodes to " << deq << " (bound: half step "
          << step / 2 << ")";
        fail(in, ctx, m.str());
      }
    }
  }
}

void invalid_rejected(const PropertyInput& in, PropertyContext& ctx) {
  // The generator drew the rule (aux) first and a case it applies to second.
  const auto& breakers = testkit::rule_breakers();
  const testkit::RuleBreaker& b = breakers[in.aux % breakers.size()];
  if (!b.applies(in.c.op, resolve_or_throw(in.c).format)) return;
  InsertCase broken = in.c;
  InsertOutputs out = testkit::make_outputs(in.c);
  if (!b.apply(broken, out)) return;  // nothing to break in this case (no live slot, one row, ...)
  const InsertOutputs before = out;
  const Status s = ctx.sut.run(broken, out);
  record(ctx.coverage, {"rule:" + b.name});
  if (s.code != b.code)
    fail(in, ctx,
         "breaking " + b.name + " gave " + s.ToString() + ", expected E" + std::to_string(static_cast<int>(b.code)));
  if (out.cache != before.cache || out.q_out != before.q_out)
    fail(in, ctx, "rejected call (" + b.name + ") wrote into its outputs");
}

// The decoder and locate() on random bytes (they read the oracle's codec, not the backend under
// test; ctx.codec substitutes another for the planted-defect test): no crash, and every located
// byte names a slot of the cache and a field consistent with its offset.
void decoder_total(const PropertyInput& in, PropertyContext& ctx) {
  CodecUnderTest codec;
  codec.locate = [](const oracle::PagedCacheView& v, std::int64_t off) { return oracle::locate(v, off); };
  codec.decode = [](const std::vector<std::uint8_t>& b, const oracle::PagedCacheView& v, std::int64_t slot) {
    return oracle::decode_record(b, v, slot);
  };
  if (ctx.codec && ctx.codec->locate) codec.locate = ctx.codec->locate;
  if (ctx.codec && ctx.codec->decode) codec.decode = ctx.codec->decode;
  testkit::Rng rng(in.aux);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(in.c.cache.backing_bytes() + testkit::kGuardBytes));
  for (auto& b : bytes) b = static_cast<std::uint8_t>(rng.bits());
  const oracle::PagedCacheView v = testkit::view_of(in.c);
  for (std::int64_t slot = 0; slot < v.capacity(); slot += 1 + v.capacity() / 64) (void)codec.decode(bytes, v, slot);
  for (int i = 0; i < 256; ++i) {
    const std::int64_t off = rng.uniform(-64, static_cast<std::int64_t>(bytes.size()) + 64);
    const oracle::ByteLocation loc = codec.locate(v, off);
    if (loc.slot >= v.capacity()) fail(in, ctx, "locate() returned a slot beyond the cache");
    const bool in_view = off >= v.base_offset && off < v.page_offset(v.num_blocks);
    if (in_view != (loc.field != oracle::Field::kOutsideCache))
      fail(in, ctx,
           "locate() put offset " + std::to_string(off) + (in_view ? ", inside" : ", outside") +
               " the cache view, in field " + std::string(oracle::field_name(loc.field)));
    if (loc.slot >= 0 && loc.page != loc.slot / v.block_size)
      fail(in, ctx, "locate() gave slot " + std::to_string(loc.slot) + " on page " + std::to_string(loc.page));
    if (loc.slot >= 0) (void)oracle::describe_field(bytes, v, loc);
  }
  record(ctx.coverage, {"decoded-random-bytes"});
}

// The NoPE edge classes, and the special values the injections also put into the RoPE dims.
std::vector<std::string> edges_and(std::vector<std::string> extra) {
  std::vector<std::string> v = all_edge_class_names();
  v.push_back("rope-dims:nan");
  v.push_back("rope-dims:inf");
  v.insert(v.end(), extra.begin(), extra.end());
  return v;
}

// Profile scopes (docs/contract.md §6.1), each derived from what the policies change.
ProfileScope every_profile(std::string why) {
  ProfileScope s;
  s.description = "every profile (" + why + ")";
  return s;
}

ProfileScope only_where(std::string description, std::function<bool(const kvc::Profile&)> holds) {
  ProfileScope s;
  s.description = std::move(description);
  s.holds = std::move(holds);
  return s;
}

// Probe cases for not_applicable(property, sut): a small case of every op and format the
// property's generation draws.
std::vector<InsertCase> probe_cases(const GenConfig& g) {
  std::vector<InsertCase> v;
  for (InsertOp op : {InsertOp::kKvOnly, InsertOp::kLegacy}) {
    if (op == InsertOp::kLegacy && !g.allow_legacy) continue;
    for (RecordFormat f : kAllFormats)
      if (!g.packed_only || is_packed(f)) v.push_back(testkit::small_valid_case(op, f));
  }
  return v;
}

const std::vector<std::string> kStructural = {
    "format:packed584",  "format:packed528", "format:fp8_512",      "format:bf16_512", "slots:some-skipped",
    "slots:all-skipped", "dp-padding",       "block-size:non-pow2", "block-size:pow2", "page-padding"};

}  // namespace

const std::vector<PropertySpec>& all_properties() {
  static const std::vector<PropertySpec> table = [] {
    const GenConfig any{}, kv_only{false, false, 4096, false}, packed_kv{false, true, 4096, false};
    // Validation does not depend on size: small problems keep rule-breaking cases cheap.
    const GenConfig rule_breaking{true, false, 256, true};
    GenConfig kv_only_as_legacy = kv_only;  // kv-only-equals-legacy re-runs each problem as legacy
    kv_only_as_legacy.legacy_sized = true;
    std::vector<std::string> structural = kStructural;
    std::vector<std::string> with_legacy = kStructural;
    with_legacy.push_back("op:legacy");
    with_legacy.push_back("kv:f16");  // the legacy op's fp16 path
    std::vector<std::string> invalid_required;
    for (const auto& b : testkit::rule_breakers()) invalid_required.push_back("rule:" + b.name);
    // Per row: a row's record depends on that row alone under every policy (pad `keep` leaves the
    // byte as it was, whoever wrote it), so the structural claims hold under every profile.
    const std::string per_row = "each record depends on its own row alone under every policy";
    ProfileScope both_ops = every_profile("when the legacy op declares the KV-only op's record policies");
    both_ops.same_record_policies_across_ops = true;
    std::vector<std::string> negation_required = edges_and(structural);
    negation_required.push_back("inf-block:zero");
    return std::vector<PropertySpec>{
        {"differential", "the backend under test writes the oracle's bytes", any, edges_and(with_legacy), differential,
         1, every_profile("compared with the oracle under the profile the backend declares")},
        {"slot-minus-one-is-noop", "a row with slot -1 changes nothing", kv_only, structural, slot_minus_one_is_noop, 1,
         every_profile("no profile excuses a write, docs/contract.md §6.3")},
        {"locality", "only addressed records change; padding, gaps and other slots keep the canary", any,
         edges_and(with_legacy), locality, 1, every_profile("no profile excuses a write, docs/contract.md §6.3")},
        {"kv-only-equals-legacy", "the legacy op's cache bytes equal the KV-only op's", kv_only_as_legacy,
         edges_and(structural), kv_only_equals_legacy, 1, both_ops},
        {"token-permutation", "permuting tokens with their slots gives the same cache", kv_only, structural,
         token_permutation, 1, every_profile(per_row)},
        {"split-batch", "one call equals the same batch in two calls", kv_only, structural, split_batch, 1,
         every_profile(per_row)},
        {"idempotent", "inserting twice equals inserting once", any, with_legacy, idempotent, 1,
         every_profile(per_row)},
        {"scale-by-power-of-two", "scaling a block by 2^j keeps its codes and adds j to its scale byte", packed_kv,
         std::vector<std::string>{"format:packed584", "format:packed528", "scaled-block"}, scale_by_power_of_two, 1,
         only_where("amax floor `before` (under `after` every block with amax <= 448 * 2^-14 gets E = -13, "
                    "whatever its scaling)",
                    [](const kvc::Profile& p) { return p.amax_floor == kvc::AmaxFloor::kBeforeDivide; })},
        {"negation-flips-sign", "negating kv flips only sign bits", kv_only, negation_required, negation_flips_sign, 1,
         only_where("Inf block `vllm` (under `sglang` a +-0 in a block holding +-Inf encodes as NaN whatever its "
                    "sign)",
                    [](const kvc::Profile& p) { return p.inf_block == kvc::InfBlockInverse::kZero; })},
        {"dequantization-bound", "dequantized codes are within half an e4m3 step of the input (or saturated)", kv_only,
         edges_and({"format:packed584", "format:packed528", "format:fp8_512"}), dequantization_bound, 1,
         only_where("rsqrt `rn` for a case with a norm row (the bound is taken from the correctly rounded norm; "
                    "the rope policy decides the input, every other policy keeps the bound)",
                    [](const kvc::Profile& p) { return p.rsqrt == RsqrtMode::kCorrectlyRounded; })},
        {"invalid-rejected", "a case breaking one rule is rejected with its code and writes nothing", rule_breaking,
         invalid_required, invalid_rejected, 5, every_profile("validation does not depend on the profile")},
        {"decoder-total",
         "the record decoder accepts arbitrary bytes",
         any,
         {"decoded-random-bytes"},
         decoder_total,
         1,
         every_profile("reads the record codec, not a backend")},
    };
  }();
  return table;
}

const PropertySpec* find_property(const std::string& name) {
  for (const PropertySpec& p : all_properties())
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<std::string> property_names() {
  std::vector<std::string> names;
  for (const PropertySpec& p : all_properties()) names.push_back(p.name);
  return names;
}

kvc::Profile judged_profile(const testkit::Backend& sut, const InsertCase& c) {
  kvc::Profile p = sut.declared_profile(c);
  if (testkit::norm_rows(c).empty()) p.rsqrt = RsqrtMode::kCorrectlyRounded;
  return p;
}

std::optional<std::string> not_applicable(const PropertySpec& property, const testkit::Backend& sut,
                                          const InsertCase& c) {
  const ProfileScope& scope = property.profiles;
  const kvc::Profile p = judged_profile(sut, c);
  if (!scope.holds_under(p))
    return "not applicable under " + kvc::profile_name(p) + " (" + property.name + " holds under " + scope.description +
           ")";
  if (scope.same_record_policies_across_ops && c.op == InsertOp::kKvOnly) {
    const kvc::Profile kv = sut.declared_profile(without_kv_norm(c));
    testkit::QuerySpec q;  // the dummy query: a backend declares per op, format and kv dtype
    q.heads = 1;
    q.padded_heads = 0;
    const kvc::Profile legacy = sut.declared_profile(testkit::make_legacy_case(without_kv_norm(c), q));
    if (!same_record_policies(kv, legacy))
      return "not applicable: the KV-only op declares " + kvc::profile_name(kv) + " and the legacy op " +
             kvc::profile_name(legacy) + " (" + property.name + " holds under " + scope.description + ")";
  }
  return std::nullopt;
}

std::optional<std::string> not_applicable(const PropertySpec& property, const testkit::Backend& sut) {
  std::optional<std::string> first;
  for (const InsertCase& c : probe_cases(property.generation)) {
    std::optional<std::string> why = not_applicable(property, sut, c);
    if (!why) return std::nullopt;
    if (!first) first = std::move(why);
  }
  return first;
}

}  // namespace kvc::fuzz
