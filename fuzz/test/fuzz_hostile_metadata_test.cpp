// fuzz_hostile_metadata_test.cpp: random malformed metadata is rejected with a code, or accepted
// with every write inside the caller's buffers.
//
// The property starts from a valid generated case and applies one to three hostile edits: any
// tensor argument (kv, slot_mapping, position_ids, cos_sin_cache, fp8_scale, q, q_out,
// q_scale_inv, kv_norm_weight) gets a new rank 0..5 with sizes and strides of equal or different
// lengths, or one hostile size, stride, offset or dtype code; the cache geometry gets a hostile
// num_blocks, block size, width, stride, offset, rank or dtype; or the op code is replaced.
// Hostile values are negative, huge (near INT64_MAX/MIN, powers of two up to 2^62), off by one
// from the original, or arbitrary. For both ops and both validation levels:
//   - the outcome of the run equals what validate_insert + validate_outputs say, and metadata-only
//     validation (what kernel wrappers use) never rejects what full validation accepts;
//   - a rejected run leaves the outputs byte-identical;
//   - an accepted case is first run on a guarded copy (the outputs inside 4 KiB of canary on each
//     side, the offsets moved by as much): the guards keep the canary and the inner bytes equal an
//     unguarded run's. Under AddressSanitizer (preset `sanitize`) any write outside the std::vector
//     buffers also stops the run, and UndefinedBehaviorSanitizer any int64 overflow.
// Standalone kv_norm gets the same hostile kv and weight metadata.
//
// KVC_FUZZ_SEED and KVC_FUZZ_CASES override the seed and the number of cases (times the
// property's case multiplier, as for the other properties).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <limits>

#include <rapidcheck.h>

#include "testkit/backends/oracle_backend.h"
#include "kvc/checked_math.h"
#include "kvc/fuzz/campaign.h"
#include "kvc/oracle/kv_norm.h"
#include "testkit/backends/backing.h"
#include "kvc/validate.h"

namespace kvc::fuzz {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kGuard = 4096;  // canary bytes on each side of a guarded copy; 16-aligned
constexpr int kMaxRank = 5;

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : fallback;
}

// ---- hostile edits (drawn inside the property, so RapidCheck shrinks them) ----

// RapidCheck's inRange and arbitrary narrow with the size parameter; which target, which field and
// which hostile value must not depend on it, so they draw at full size (shrinking still moves
// toward the low end).
template <typename T>
T uniform(T lo, T hi) {
  return *rc::gen::resize(100, rc::gen::inRange<T>(lo, hi));
}
template <typename T>
T any_value() {
  return *rc::gen::resize(100, rc::gen::arbitrary<T>());
}
std::int64_t pick(std::initializer_list<std::int64_t> values) {
  return *(values.begin() + uniform<std::size_t>(0, values.size()));
}

std::int64_t hostile_value(std::int64_t original) {
  constexpr std::int64_t k31 = std::int64_t{1} << 31, k32 = std::int64_t{1} << 32, k40 = std::int64_t{1} << 40,
                         k62 = std::int64_t{1} << 62;
  switch (uniform(0, 8)) {
    case 0: return pick({0, 1, 2, -1, -2, -16, 16, kHeadDim});
    case 1: return pick({kMax, kMin, kMax - 1, kMin + 1, kMax / 2, -(kMax / 2), kMax / kHeadDim + 1});
    case 2: return pick({k31, k32, k40, k62, -k62, -k31});
    case 3: return checked_add(original, std::int64_t{1}).value_or(original);
    case 4: return checked_add(original, std::int64_t{-1}).value_or(original);
    case 5: return checked_mul(original, std::int64_t{2}).value_or(original);
    case 6: return original == kMin ? original : -original;
    default: return any_value<std::int64_t>();
  }
}

// One entry of sizes or strides (when there is one) made hostile; records `edit_class`.
void edit_one_entry(std::vector<std::int64_t>& entries, const char* edit_class, std::vector<std::string>& classes) {
  if (!entries.empty()) {
    auto& e = entries[static_cast<std::size_t>(uniform<std::size_t>(0, entries.size()))];
    e = hostile_value(e);
  }
  classes.push_back(edit_class);
}

// One hostile edit of a tensor's metadata; records its class.
void edit_meta(TensorMeta& m, std::vector<std::string>& classes) {
  const int kind = uniform(0, 6);
  switch (kind) {
    case 0: {  // a new rank, sizes and strides possibly of different lengths
      const int rank = uniform(0, kMaxRank + 1);
      const int strides = std::max(0, rank + static_cast<int>(pick({-1, 0, 0, 1})));
      std::vector<std::int64_t> sizes, new_strides;
      for (int d = 0; d < rank; ++d) sizes.push_back(hostile_value(d < m.rank() ? m.size(d) : 1));
      for (int d = 0; d < strides; ++d)
        new_strides.push_back(
            hostile_value(d < static_cast<int>(m.strides.size()) ? m.strides[static_cast<std::size_t>(d)] : 1));
      m.sizes = std::move(sizes);
      m.strides = std::move(new_strides);
      classes.push_back("rank:" + std::to_string(rank));
      if (m.sizes.size() != m.strides.size()) classes.push_back("edit:lengths-differ");
      return;
    }
    case 1: return edit_one_entry(m.sizes, "edit:size", classes);
    case 2: return edit_one_entry(m.strides, "edit:stride", classes);
    case 3:
      if (*rc::gen::arbitrary<bool>() && !m.strides.empty())
        m.strides.pop_back();
      else
        m.strides.push_back(hostile_value(1));
      classes.push_back("edit:lengths-differ");
      return;
    case 4:
      m.offset_bytes = hostile_value(m.offset_bytes);
      classes.push_back("edit:offset");
      return;
    default:
      m.dtype = static_cast<DType>(any_value<std::uint8_t>());
      classes.push_back("edit:dtype");
      return;
  }
}

void edit_cache(InsertCase& c, std::vector<std::string>& classes) {
  CacheGeometry& g = c.cache;
  static const char* const names[] = {"num_blocks", "block_size", "op-block_size", "both-block_sizes",
                                      "width",      "stride0",    "stride1",       "stride2",
                                      "offset",     "rank",       "dtype"};
  const int field = uniform(0, 11);
  switch (field) {
    case 0: g.num_blocks = hostile_value(g.num_blocks); break;
    case 1: g.block_size = hostile_value(g.block_size); break;
    case 2: c.block_size = hostile_value(c.block_size); break;
    case 3: g.block_size = c.block_size = hostile_value(c.block_size); break;
    case 4: g.width = hostile_value(g.width); break;
    case 5: g.stride0 = hostile_value(g.stride0); break;
    case 6: g.stride1 = hostile_value(g.stride1); break;
    case 7: g.stride2 = hostile_value(g.stride2); break;
    case 8: g.offset_bytes = hostile_value(g.offset_bytes); break;
    case 9: g.rank = uniform(0, kMaxRank + 1); break;
    default: g.dtype = static_cast<DType>(any_value<std::uint8_t>()); break;
  }
  classes.push_back(std::string("cache:") + names[field]);
}

HostTensor valid_norm_weight() {
  HostTensor w = make_tensor(DType::kBF16, {kHeadDim});
  for (int d = 0; d < kHeadDim; ++d) w.store<std::uint16_t>(d, 0x3F80);  // 1.0
  return w;
}

// The targets a hostile edit can hit. Absent optional tensors are made present first (a valid
// kv_norm weight, a one-element scale) so that every tensor argument is exercised.
const char* const kTargets[] = {"kv",    "slot_mapping", "position_ids",   "cos_sin_cache", "fp8_scale", "q",
                                "q_out", "q_scale_inv",  "kv_norm_weight", "cache",         "op"};
constexpr int kTargetCount = static_cast<int>(std::size(kTargets));

std::string apply_hostile_edit(InsertCase& c, std::vector<std::string>& classes) {
  const int target = uniform(0, kTargetCount);
  classes.push_back(std::string("target:") + kTargets[target]);
  auto tensor = [&](HostTensor& t, HostTensor fallback) -> TensorMeta& {
    if (!t.present) t = std::move(fallback);
    return t.meta;
  };
  auto scalar = [] { return make_tensor_from(DType::kF32, std::vector<float>{1.0f}, {1}); };
  switch (target) {
    case 0: edit_meta(c.kv.meta, classes); break;
    case 1: edit_meta(c.slots.meta, classes); break;
    case 2: edit_meta(c.positions.meta, classes); break;
    case 3: edit_meta(c.cos_sin.meta, classes); break;
    case 4: edit_meta(tensor(c.fp8_scale, scalar()), classes); break;
    case 5: edit_meta(tensor(c.q, make_tensor(DType::kBF16, {1, 1, kHeadDim})), classes); break;
    case 6: edit_meta(c.q_out, classes); break;
    case 7: edit_meta(tensor(c.q_scale_inv, scalar()), classes); break;
    case 8: edit_meta(tensor(c.kv_norm_weight, valid_norm_weight()), classes); break;
    case 9: edit_cache(c, classes); break;
    default:
      c.op = *rc::gen::arbitrary<bool>() ? static_cast<InsertOp>(any_value<std::uint8_t>())
                                         : (c.op == InsertOp::kLegacy ? InsertOp::kKvOnly : InsertOp::kLegacy);
      break;
  }
  return kTargets[target];
}

// ---- the property ----

[[noreturn]] void fail(const PropertyInput& in, PropertyContext& ctx, const std::string& edits,
                       const std::string& message) {
  *ctx.last_failure = FailureRecord{in, "after hostile edits [" + edits + "]: " + message};
  RC_FAIL(ctx.last_failure->value().message);
}

std::vector<std::uint8_t> with_guards(const std::vector<std::uint8_t>& inner) {
  std::vector<std::uint8_t> v(inner.size() + 2 * static_cast<std::size_t>(kGuard), testkit::kCanary);
  std::copy(inner.begin(), inner.end(), v.begin() + kGuard);
  return v;
}
bool guards_intact(const std::vector<std::uint8_t>& v) {
  const auto canary = [](std::uint8_t b) { return b == testkit::kCanary; };
  return std::all_of(v.begin(), v.begin() + kGuard, canary) && std::all_of(v.end() - kGuard, v.end(), canary);
}
std::vector<std::uint8_t> inner_of(const std::vector<std::uint8_t>& v) {
  return std::vector<std::uint8_t>(v.begin() + kGuard, v.end() - kGuard);
}

// The oracle at one validation level, optionally with a planted defect wrapped around it (the
// planted-defect tests below). The property runs both levels, so it makes its own backends
// instead of using the run's single backend under test.
using Defect = std::function<Status(const InsertCase&, InsertOutputs&, testkit::Backend& oracle)>;

class LevelledOracle final : public testkit::Backend {
 public:
  LevelledOracle(ValidationLevel level, Defect defect) : oracle_(options(level)), defect_(std::move(defect)) {}
  std::string name() const override { return defect_ ? "defective oracle" : "oracle"; }
  Status run(const InsertCase& c, InsertOutputs& out) override {
    return defect_ ? defect_(c, out, oracle_) : oracle_.run(c, out);
  }

 private:
  static oracle::OracleOptions options(ValidationLevel level) {
    oracle::OracleOptions o;
    o.level = level;
    return o;
  }
  testkit::OracleBackend oracle_;
  Defect defect_;
};

void check_level(const InsertCase& h, const InsertOutputs& fresh, ValidationLevel level, const Defect& defect,
                 const PropertyInput& in, PropertyContext& ctx, const std::string& edits) {
  LevelledOracle sut(level, defect);
  Status expected = validate_insert(h, level);
  if (expected.ok()) expected = validate_outputs(h, fresh);
  const Status metadata_only = validate_insert(h, level, ValueAccess::kMetadataOnly);
  if (expected.ok() && !metadata_only.ok())
    fail(in, ctx, edits,
         "metadata-only validation rejected a case full validation accepts: " + metadata_only.ToString());

  // An accepted case runs on the guarded copy first, so a write outside the buffers lands in a
  // guard (and is reported) rather than in someone else's memory.
  InsertOutputs guarded;
  if (expected.ok()) {
    InsertCase g = h;
    const CheckedI64 cache_offset = checked_add(g.cache.offset_bytes, kGuard);
    const CheckedI64 q_offset = checked_add(g.q_out.offset_bytes, kGuard);
    if (!cache_offset || !q_offset) fail(in, ctx, edits, "an accepted case has offsets near INT64_MAX");
    g.cache.offset_bytes = *cache_offset;
    g.q_out.offset_bytes = *q_offset;
    guarded.cache = with_guards(fresh.cache);
    guarded.q_out = with_guards(fresh.q_out);
    const Status s = sut.run(g, guarded);
    if (!s.ok()) fail(in, ctx, edits, "accepted, but rejected once moved into guarded buffers: " + s.ToString());
    if (!guards_intact(guarded.cache)) fail(in, ctx, edits, "an accepted case wrote outside the cache backing");
    if (!guards_intact(guarded.q_out)) fail(in, ctx, edits, "an accepted case wrote outside the q output");
  }

  InsertOutputs out = fresh;  // a copy: capacity == size, so AddressSanitizer sees the buffer's true end
  const Status s = sut.run(h, out);
  if (s.code != expected.code)
    fail(in, ctx, edits, "the run says " + s.ToString() + ", validation says " + expected.ToString());
  if (s.ok()) {
    record(ctx.coverage, {"outcome:accepted"});
    if (out.cache != inner_of(guarded.cache) || out.q_out != inner_of(guarded.q_out))
      fail(in, ctx, edits, "the guarded and the plain run wrote different bytes");
    return;
  }
  record(ctx.coverage, {"code:E" + std::to_string(static_cast<int>(s.code))});
  if (error_name(s.code) == "kUnknown") fail(in, ctx, edits, "rejected with a code that has no name");
  if (out.cache != fresh.cache || out.q_out != fresh.q_out)
    fail(in, ctx, edits, "a rejected call wrote into its outputs");
}

void hostile_metadata(const PropertyInput& in, PropertyContext& ctx, const Defect& defect) {
  InsertCase h = in.c;
  const InsertOutputs fresh = testkit::make_outputs(in.c);  // sized for the valid case
  std::vector<std::string> classes{std::string("base-op:") + (in.c.op == InsertOp::kLegacy ? "legacy" : "kv-only")};
  std::string edits;
  const int count = uniform(1, 4);
  for (int i = 0; i < count; ++i) edits += (i ? ", " : "") + apply_hostile_edit(h, classes);
  record(ctx.coverage, classes);

  for (ValidationLevel level : {ValidationLevel::kContract, ValidationLevel::kStrict})
    check_level(h, fresh, level, defect, in, ctx, edits);

  // Standalone kv_norm over the same (possibly hostile) kv and weight.
  const HostTensor weight = h.kv_norm_weight.present ? h.kv_norm_weight : valid_norm_weight();
  (void)validate_kv_norm(h.kv, weight, ValueAccess::kMetadataOnly);
  std::vector<std::uint16_t> normed;
  const Status expected = validate_kv_norm(h.kv, weight);
  const Status s = oracle::kv_norm(h.kv, weight, 1e-6f, &normed);
  if (s.code != expected.code)
    fail(in, ctx, edits, "kv_norm says " + s.ToString() + ", validation says " + expected.ToString());
}

PropertySpec hostile_property(Defect defect = {}) {
  PropertySpec p;
  p.name = "hostile-metadata";
  p.claim = "malformed metadata is rejected with a code, or accepted with every write inside the buffers";
  p.generation = GenConfig{true, false, 64, false};  // validation does not depend on size: small cases
  for (const char* t : kTargets) p.required_classes.push_back(std::string("target:") + t);
  for (int r = 0; r <= kMaxRank; ++r) p.required_classes.push_back("rank:" + std::to_string(r));
  for (const char* c : {"code:E128", "code:E129", "code:E130", "outcome:accepted", "edit:lengths-differ",
                        "base-op:legacy", "base-op:kv-only"})
    p.required_classes.push_back(c);
  p.check = [defect](const PropertyInput& in, PropertyContext& ctx) { hostile_metadata(in, ctx, defect); };
  p.case_multiplier = 13;  // eleven targets, six ranks, three codes: many draws per class
  return p;
}

TEST(HostileMetadata, RejectedWithACodeOrEveryWriteInsideTheBuffers) {
  RunConfig config;
  config.seed = env_or("KVC_FUZZ_SEED", 20261207);
  config.cases = static_cast<int>(env_or("KVC_FUZZ_CASES", 120));  // times the case multiplier
  config.max_size = 20;
  testkit::OracleBackend unused;  // the property makes its own backends, one per level
  const PropertySpec p = hostile_property();
  const PropertyOutcome o = run_property(p, unused, config);
  std::printf("%s: %d cases in %.2f s, seed %llu\n", p.name.c_str(), o.cases, o.seconds,
              static_cast<unsigned long long>(config.seed));
  for (const auto& [cls, n] : o.coverage) std::printf("  %-28s %lld\n", cls.c_str(), static_cast<long long>(n));
  ASSERT_TRUE(o.passed) << (o.failure ? o.failure->message : o.message) << "\nreproduce: KVC_FUZZ_SEED=" << config.seed
                        << " ctest -R 'HostileMetadata.RejectedWithACodeOrEveryWriteInsideTheBuffers'";
  EXPECT_TRUE(o.missing_classes.empty()) << "required classes never generated: "
                                         << ::testing::PrintToString(o.missing_classes);
}

// ---- planted defects: the property is not vacuous ----

void expect_caught(const Defect& defect, const char* what) {
  testkit::OracleBackend unused;  // the property makes its own backends, one per level
  const PropertyOutcome o = run_property(hostile_property(defect), unused, RunConfig{11, 30, 20, true});
  EXPECT_FALSE(o.passed) << what << " went unnoticed in " << o.cases << " cases";
  if (o.failure) std::printf("caught %s: %s\n", what, o.failure->message.substr(0, 300).c_str());
}

TEST(HostileMetadataPlantedDefect, AcceptingMalformedMetadataIsCaught) {
  // A backend that forgets the metadata rule: it reports success without writing anything.
  expect_caught(
      [](const InsertCase& c, InsertOutputs& out, testkit::Backend& oracle) {
        const Status s = oracle.run(c, out);
        return s.code == ErrorCode::kTensorMetaInvalid ? Status::Ok() : s;
      },
      "accepting malformed tensor metadata");
}

TEST(HostileMetadataPlantedDefect, AWriteBeforeTheCacheViewIsCaught) {
  // A backend that also writes the byte just before the cache view (bounds-checked here, so the
  // defect itself stays inside the vector): the guarded copy's front guard catches it.
  expect_caught(
      [](const InsertCase& c, InsertOutputs& out, testkit::Backend& oracle) {
        const Status s = oracle.run(c, out);
        const std::int64_t before = c.cache.offset_bytes - 1;
        if (s.ok() && before >= 0 && before < static_cast<std::int64_t>(out.cache.size()))
          out.cache[static_cast<std::size_t>(before)] ^= 0x5A;
        return s;
      },
      "a write before the cache view");
}

}  // namespace
}  // namespace kvc::fuzz
