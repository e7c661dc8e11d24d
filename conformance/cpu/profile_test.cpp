// profile_test.cpp: every alternative of every policy of docs/contract.md §6.1, with expected
// bytes derived by hand in the comments (never by the oracle's encoder), plus the profile names,
// the spec parser, case files that record a profile, and the ABI's profile declaration.
//
// Records are written by the store op on one packed page (bs = 2, slot 0, canary 0xA5), so a
// row's values reach quantization unchanged; the rope policy is also shown through the KV-only
// insert (cos = 0, sin = 1: each pair (a, b) rotates to (-b, a)).
//
// Catches: an alternative that changes the wrong bytes or none (NaN under either clamp order, the
// six kinds of element of an Inf block under each combination of Inf-block inverse and clamp
// order, the pad byte, the floor placement at and around amax = 448 * 2^-14, the exponent rule
// just above a power of two, the RoPE dims' storage), a parser that accepts a malformed spec or
// loses a policy, a case file that forgets its profile or misreads an old one, and an ABI reader
// that trusts fields a 1.0 library never wrote.
#include <gtest/gtest.h>

#include <cstddef>
#include <map>

#include "kvc/oracle/float_bits.h"
#include "kvc/oracle/fp8_e4m3.h"
#include "kvc/oracle/kv_insert.h"
#include "kvc/profile.h"
#include "kvc/oracle/store_rotated.h"
#include "kvc/oracle/ue8m0.h"
#include "testkit/backends/abi_profile.h"
#include "testkit/backends/backing.h"
#include "testkit/cases/case_builder.h"
#include "testkit/io/case_file.h"
#include "testkit/cases/small_cases.h"
#include "testkit/cases/store_cases.h"

namespace kvc {
namespace {

using kvc::Profile;

constexpr std::int64_t kBlockSize = 2;
constexpr std::uint8_t kCanaryByte = testkit::kCanary;

Profile spec(const char* s) {
  std::string error;
  const auto p = kvc::parse_profile(s, &error);
  EXPECT_TRUE(p.has_value()) << s << ": " << error;
  return p.value_or(Profile{});
}

// Slot 0's record of one row (512 bf16 bits, dims not listed are +0), written by the store op.
std::vector<std::uint8_t> store_one_row(RecordFormat f, const std::map<int, std::uint16_t>& dims, const Profile& p) {
  std::vector<std::uint16_t> row(kHeadDim, 0);
  for (const auto& [d, bits] : dims) row[static_cast<std::size_t>(d)] = bits;
  testkit::StoreShape shape{f, testkit::StorePages::kPagedView, 1, kBlockSize, 0, DType::kI64};
  const StoreCase c = testkit::make_store_case(shape, row, {0});
  std::vector<std::uint8_t> backing = testkit::make_store_backing(c);
  oracle::OracleOptions o;
  o.profile = p;
  const Status s = oracle::store_rotated(c, backing, o);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return backing;
}

// Slot 0 of a bs = 2 page: codes at d, scales at record_data * 2 + k (docs/contract.md §3.3-3.4).
std::uint8_t code(const std::vector<std::uint8_t>& b, int dim) { return b[static_cast<std::size_t>(dim)]; }
std::uint8_t scale(const std::vector<std::uint8_t>& b, RecordFormat f, int block) {
  return b[static_cast<std::size_t>(layout_of(f).data_bytes * kBlockSize + block)];
}
std::uint16_t value16(const std::vector<std::uint8_t>& b, int dim) {
  const std::size_t at = static_cast<std::size_t>(kNopeDim + 2 * (dim - kNopeDim));
  return static_cast<std::uint16_t>(b[at] | (b[at + 1] << 8));
}

// ---- e4m3 clamp order ------------------------------------------------------------------------

TEST(ClampOrderPolicy, OnlyNaNMovesFrom0xFETo0x7E) {
  using kvc::ClampOrder;
  const float nan = oracle::float_of(0x7FC00000u), negative_nan = oracle::float_of(0xFFC00001u);
  // fminf(fmaxf(NaN, -448), 448) = -448 -> 0xFE; fmaxf(fminf(NaN, 448), -448) = 448 -> 0x7E.
  EXPECT_EQ(oracle::e4m3_encode(nan, ClampOrder::kMaxThenMin), 0xFE);
  EXPECT_EQ(oracle::e4m3_encode(nan, ClampOrder::kMinThenMax), 0x7E);
  EXPECT_EQ(oracle::e4m3_encode(negative_nan, ClampOrder::kMinThenMax), 0x7E);
  // Both orders agree elsewhere: +-Inf and |v| > 448 saturate, 1.0 is 0x38, -0 is 0x80.
  for (ClampOrder order : {ClampOrder::kMaxThenMin, ClampOrder::kMinThenMax}) {
    EXPECT_EQ(oracle::e4m3_encode(INFINITY, order), 0x7E);
    EXPECT_EQ(oracle::e4m3_encode(-INFINITY, order), 0xFE);
    EXPECT_EQ(oracle::e4m3_encode(500.0f, order), 0x7E);
    EXPECT_EQ(oracle::e4m3_encode(1.0f, order), 0x38);
    EXPECT_EQ(oracle::e4m3_encode(-0.0f, order), 0x80);
  }
}

TEST(ClampOrderPolicy, BlockWithANaN) {
  // packed584 block 0: NaN, 3.0 (0x4040), zeros. amax 3 (NaN ignored): q = 3/448, E = -7, byte
  // 0x78, inv 128: 3 * 128 = 384 -> 0x7C; zeros 0x00; NaN -> 0xFE (vllm) or 0x7E (sglang).
  const std::map<int, std::uint16_t> row = {{0, 0x7FC0}, {1, 0x4040}};
  for (const auto& [name, nan_code] : {std::make_pair("vllm", 0xFE), std::make_pair("clamp=sglang", 0x7E)}) {
    SCOPED_TRACE(name);
    const auto b = store_one_row(RecordFormat::kPacked584, row, spec(name));
    EXPECT_EQ(scale(b, RecordFormat::kPacked584, 0), 0x78);
    EXPECT_EQ(code(b, 0), nan_code);
    EXPECT_EQ(code(b, 1), 0x7C);
    EXPECT_EQ(code(b, 2), 0x00);
    EXPECT_EQ(code(b, 63), 0x00);
  }
}

// ---- Inf block ---------------------------------------------------------------------------------

TEST(InfBlockPolicy, PlusAndMinusInfBlocksUnderEveryCombination) {
  // packed584 block 1 (dims 64..): +Inf, 2, -2, +0, -0, then zeros. Block 2 (dims 128..): -Inf,
  // 1.5, -1.5, +0, -0, then zeros. Both blocks: amax = Inf, E = +Inf, scale byte 0xFF.
  //   inv = 0 (vllm): x * 0 = +-0 for finite x (-2 * 0 = -0 -> 0x80), Inf * 0 = NaN.
  //   inv = -Inf (sglang): +Inf and positive -> -Inf; -Inf and negative -> +Inf; +-0 * -Inf = NaN.
  //   Then the clamp: +-Inf -> 0x7E / 0xFE under both orders; NaN -> 0xFE (vllm) or 0x7E (sglang).
  const std::map<int, std::uint16_t> row = {{64, 0x7F80},  {65, 0x4000},  {66, 0xC000},  {67, 0x0000},  {68, 0x8000},
                                            {128, 0xFF80}, {129, 0x3FC0}, {130, 0xBFC0}, {131, 0x0000}, {132, 0x8000}};
  struct Expected {
    const char* profile;
    std::uint8_t plus[6];   // dims 64..69
    std::uint8_t minus[6];  // dims 128..133
  };
  const Expected table[] = {
      // Inf * 0 = NaN -> 0xFE; 2 * 0 = 0; -2 * 0 = -0; 0; -0; zero.
      {"vllm", {0xFE, 0x00, 0x80, 0x00, 0x80, 0x00}, {0xFE, 0x00, 0x80, 0x00, 0x80, 0x00}},
      // The same with the NaN (Inf * 0) -> 0x7E.
      {"clamp=sglang", {0x7E, 0x00, 0x80, 0x00, 0x80, 0x00}, {0x7E, 0x00, 0x80, 0x00, 0x80, 0x00}},
      // +Inf * -Inf = -Inf -> 0xFE; 2 -> -Inf -> 0xFE; -2 -> +Inf -> 0x7E; +-0 and zeros -> NaN -> 0xFE.
      // -Inf * -Inf = +Inf -> 0x7E; 1.5 -> 0xFE; -1.5 -> 0x7E; zeros -> NaN -> 0xFE.
      {"inf=sglang", {0xFE, 0xFE, 0x7E, 0xFE, 0xFE, 0xFE}, {0x7E, 0xFE, 0x7E, 0xFE, 0xFE, 0xFE}},
      // SGLang's store (both): as above with every NaN -> 0x7E (docs/contract.md §6.1's table).
      {"sglang-store", {0xFE, 0xFE, 0x7E, 0x7E, 0x7E, 0x7E}, {0x7E, 0xFE, 0x7E, 0x7E, 0x7E, 0x7E}},
  };
  for (const Expected& e : table) {
    SCOPED_TRACE(e.profile);
    const auto b = store_one_row(RecordFormat::kPacked584, row, spec(e.profile));
    EXPECT_EQ(scale(b, RecordFormat::kPacked584, 1), 0xFF);
    EXPECT_EQ(scale(b, RecordFormat::kPacked584, 2), 0xFF);
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(code(b, 64 + i), e.plus[i]) << "dim " << 64 + i;
      EXPECT_EQ(code(b, 128 + i), e.minus[i]) << "dim " << 128 + i;
    }
    // Block 0 (all zeros) is untouched by both policies: floor, E = -22, byte 0x69, codes 0x00.
    EXPECT_EQ(scale(b, RecordFormat::kPacked584, 0), 0x69);
    EXPECT_EQ(code(b, 0), 0x00);
  }
}

TEST(InfBlockPolicy, InverseScaleItself) {
  const float values[2] = {INFINITY, 1.0f};
  oracle::ScaleRules rules;
  EXPECT_EQ(oracle::bits_of(oracle::block_scale(values, 2, rules).inverse), 0x00000000u);
  rules.inf_block = kvc::InfBlockInverse::kNegativeInfinity;
  const oracle::BlockScale s = oracle::block_scale(values, 2, rules);
  EXPECT_EQ(oracle::bits_of(s.inverse), 0xFF800000u);
  EXPECT_EQ(s.byte, 0xFF);
  const float finite[2] = {3.0f, 1.0f};  // a finite block keeps inv = 2^7
  EXPECT_EQ(oracle::block_scale(finite, 2, rules).inverse, 128.0f);
}

// ---- pad byte ----------------------------------------------------------------------------------

TEST(PadBytePolicy, WrittenOrKept) {
  // packed584 slot 0 of a bs = 2 page: its scale group at 576 * 2 = 1152, pad byte at 1159.
  const auto written = store_one_row(RecordFormat::kPacked584, {{0, 0x3F80}}, spec("vllm"));
  const auto kept = store_one_row(RecordFormat::kPacked584, {{0, 0x3F80}}, spec("pad=keep"));
  EXPECT_EQ(written[1159], 0x00);
  EXPECT_EQ(kept[1159], kCanaryByte);
  // Everything else of the record is the same: scale 0 of amax 1 is E = -8, byte 0x77; 1 -> 0x78.
  for (const auto* b : {&written, &kept}) {
    EXPECT_EQ((*b)[1152], 0x77);
    EXPECT_EQ((*b)[0], 0x78);
    EXPECT_EQ((*b)[1160], kCanaryByte) << "slot 1's scale group is not written";
  }
}

// ---- scale exponent ----------------------------------------------------------------------------

TEST(ExponentPolicy, JustAboveAPowerOfTwoAtThePrimitive) {
  using kvc::ExponentRule;
  // q = 0x41800001 = 16 (1 + 2^-23): log2 q = 4 + 1.7e-7 rounds to 4.0 in fp32 -> E = 4 (byte
  // 131, 0x83); exact: biased exponent 131 - 127 = 4, mantissa != 0 -> 5 (byte 132, 0x84).
  const float q1 = oracle::float_of(0x41800001u);
  EXPECT_EQ(oracle::scale_exponent(q1, ExponentRule::kDeviceLog2f), 4.0f);
  EXPECT_EQ(oracle::scale_exponent(q1, ExponentRule::kExact), 5.0f);
  EXPECT_EQ(oracle::ue8m0_encode(oracle::scale_exponent(q1, ExponentRule::kDeviceLog2f)), 0x83);
  EXPECT_EQ(oracle::ue8m0_encode(oracle::scale_exponent(q1, ExponentRule::kExact)), 0x84);
  // q = 0x3D000001 = 2^-5 (1 + 2^-23): -5 (byte 122) against -4 (byte 123).
  const float q2 = oracle::float_of(0x3D000001u);
  EXPECT_EQ(oracle::scale_exponent(q2, ExponentRule::kDeviceLog2f), -5.0f);
  EXPECT_EQ(oracle::scale_exponent(q2, ExponentRule::kExact), -4.0f);
  // The next value up, 16 (1 + 2^-22), and 16 itself: the rules agree (5 and 4).
  for (ExponentRule rule : {ExponentRule::kDeviceLog2f, ExponentRule::kExact}) {
    EXPECT_EQ(oracle::scale_exponent(oracle::float_of(0x41800002u), rule), 5.0f);
    EXPECT_EQ(oracle::scale_exponent(16.0f, rule), 4.0f);
  }
}

// ---- amax floor (packed528) --------------------------------------------------------------------

TEST(AmaxFloorPolicy, Packed528BlocksAroundTheBoundary) {
  // Block 0: 0.010009765625 (0x3C24 = 41 * 2^-12) and zeros.
  //   before: q = fl(0.0100098/448) = 2.234e-5, log2 = -15.45, E = -15, byte 0x70; 41 * 2^3 = 328
  //           lies between 320 (0x7A) and 352: 0x7A.
  //   after:  fl(amax/448) < 1e-4, so q = 1e-4, E = ceil(-13.29) = -13, byte 0x72; 41 * 2 = 82
  //           lies between 80 (0x6A) and 88: 0x6A.
  // Block 1: zeros. before: 1e-4/448 = 2.23e-7, E = -22, byte 0x69; after: 1e-4, byte 0x72.
  // Block 2: 0.02734375 (0x3CE0 = 448 * 2^-14). before: q = 2^-14 exactly, E = -14, byte 0x71,
  //           code 448 = 0x7E; after: 2^-14 < 1e-4, so E = -13, byte 0x72, code 224 = 0x76.
  // Block 3: 0.03125 (0x3D00 = 2^-5), above the boundary: q = 6.98e-5 lies in (2^-14, 2^-13], so
  //           both give E = -13, byte 0x72, code 2^-5 * 2^13 = 256 = 0x78.
  const std::map<int, std::uint16_t> row = {{0, 0x3C24}, {64, 0x3CE0}, {96, 0x3D00}};
  const auto before = store_one_row(RecordFormat::kPacked528, row, spec("vllm"));
  const auto after = store_one_row(RecordFormat::kPacked528, row, spec("floor=after"));
  constexpr RecordFormat f = RecordFormat::kPacked528;
  EXPECT_EQ(scale(before, f, 0), 0x70);
  EXPECT_EQ(code(before, 0), 0x7A);
  EXPECT_EQ(scale(after, f, 0), 0x72);
  EXPECT_EQ(code(after, 0), 0x6A);
  EXPECT_EQ(scale(before, f, 1), 0x69);
  EXPECT_EQ(scale(after, f, 1), 0x72);
  EXPECT_EQ(code(before, 32), 0x00);
  EXPECT_EQ(code(after, 32), 0x00);
  EXPECT_EQ(scale(before, f, 2), 0x71);
  EXPECT_EQ(code(before, 64), 0x7E);
  EXPECT_EQ(scale(after, f, 2), 0x72);
  EXPECT_EQ(code(after, 64), 0x76);
  for (const auto* b : {&before, &after}) {
    EXPECT_EQ(scale(*b, f, 3), 0x72);
    EXPECT_EQ(code(*b, 96), 0x78);
  }
}

// ---- rope --------------------------------------------------------------------------------------

TEST(RopePolicy, StoreOpKeepsNaNPayloadsOnlyUnderNone) {
  // packed584 RoPE dims are stored as 16-bit values: 1.0 (0x3F80) either way; the NaNs 0x7FC1 and
  // 0xFFC1 through bf() -> 0x7FFF (rotate) or as the input bits (none).
  const std::map<int, std::uint16_t> row = {{448, 0x3F80}, {449, 0x7FC1}, {450, 0xFFC1}};
  const auto rotate = store_one_row(RecordFormat::kPacked584, row, spec("vllm"));
  const auto none = store_one_row(RecordFormat::kPacked584, row, spec("rope=none"));
  EXPECT_EQ(value16(rotate, 448), 0x3F80);
  EXPECT_EQ(value16(rotate, 449), 0x7FFF);
  EXPECT_EQ(value16(rotate, 450), 0x7FFF);
  EXPECT_EQ(value16(none, 448), 0x3F80);
  EXPECT_EQ(value16(none, 449), 0x7FC1);
  EXPECT_EQ(value16(none, 450), 0xFFC1);
}

TEST(RopePolicy, KvOnlyInsertRotatesOrNot) {
  // cos = 0, sin = 1 for every pair: (a, b) -> (fma(a, 0, -fl(b*1)), fma(a, 1, fl(b*0))) = (-b, a).
  // Dims 448, 449 = (1.0, 2.0): rotate -> (-2.0, 1.0) = (0xC000, 0x3F80); none -> (0x3F80, 0x4000).
  std::vector<std::uint16_t> kv(kHeadDim, 0);
  kv[448] = 0x3F80;
  kv[449] = 0x4000;
  testkit::KvInputs in;
  in.kv = kv;
  in.slots = {0};
  in.positions = {0};
  in.cos_sin.assign(kRopeDim, 0.0f);
  for (int j = kRopePairs; j < kRopeDim; ++j) in.cos_sin[static_cast<std::size_t>(j)] = 1.0f;
  const InsertCase c =
      testkit::make_kv_only_case(testkit::CacheShape{RecordFormat::kPacked584, 1, kBlockSize, 0, 0, 0}, in);
  for (const auto& [name, first, second] :
       {std::make_tuple("vllm", 0xC000, 0x3F80), std::make_tuple("rope=none", 0x3F80, 0x4000)}) {
    SCOPED_TRACE(name);
    InsertOutputs out = testkit::make_outputs(c);
    oracle::OracleOptions o;
    o.profile = spec(name);
    ASSERT_TRUE(oracle::kv_only_insert(c, out, o).ok());
    EXPECT_EQ(value16(out.cache, 448), first);
    EXPECT_EQ(value16(out.cache, 449), second);
  }
}

// ---- names, specs, case files, the ABI ----------------------------------------------------------

TEST(ProfileNames, NamedProfilesAreTheTablesRows) {
  const Profile v = kvc::vllm_profile(), s = kvc::sglang_store_profile();
  for (kvc::Policy p : kvc::kAllPolicies) EXPECT_EQ(kvc::alternative_of(v, p), 0) << kvc::policy_key(p);
  EXPECT_EQ(s.rope, kvc::RopePolicy::kNone);
  EXPECT_EQ(s.clamp_order, kvc::ClampOrder::kMinThenMax);
  EXPECT_EQ(s.inf_block, kvc::InfBlockInverse::kNegativeInfinity);
  EXPECT_EQ(s.pad_byte, kvc::PadBytePolicy::kNotWritten);
  EXPECT_EQ(s.exponent, kvc::ExponentRule::kExact);
  EXPECT_EQ(s.amax_floor, kvc::AmaxFloor::kBeforeDivide);
  EXPECT_EQ(s.rsqrt, RsqrtMode::kCorrectlyRounded);
  EXPECT_EQ(kvc::profile_name(v), "vllm");
  EXPECT_EQ(kvc::profile_name(s), "sglang-store");
}

TEST(ParseProfile, NamedComposedAndOverridden) {
  EXPECT_EQ(spec("vllm"), kvc::vllm_profile());
  EXPECT_EQ(spec("sglang-store"), kvc::sglang_store_profile());
  const Profile c = spec("rope=none, clamp = sglang");
  EXPECT_EQ(c.rope, kvc::RopePolicy::kNone);
  EXPECT_EQ(c.clamp_order, kvc::ClampOrder::kMinThenMax);
  EXPECT_EQ(c.inf_block, kvc::InfBlockInverse::kZero);
  EXPECT_EQ(kvc::profile_name(c), "rope=none,clamp=sglang");
  const Profile o = spec("sglang-store,pad=write,floor=after,rsqrt=approx");
  EXPECT_EQ(o.pad_byte, kvc::PadBytePolicy::kWritten);
  EXPECT_EQ(o.amax_floor, kvc::AmaxFloor::kAfterDivide);
  EXPECT_EQ(o.rsqrt, RsqrtMode::kApproximate);
  EXPECT_EQ(o.clamp_order, kvc::ClampOrder::kMinThenMax);
  EXPECT_EQ(spec("exponent=exact").exponent, kvc::ExponentRule::kExact);
  EXPECT_EQ(spec("inf=sglang").inf_block, kvc::InfBlockInverse::kNegativeInfinity);
}

TEST(ParseProfile, MalformedSpecsAreRefusedWithTheReason) {
  const std::pair<const char*, const char*> bad[] = {
      {"", "empty"},
      {"sglang", "unknown profile 'sglang'"},
      {"clamp=maybe", "unknown alternative 'maybe' of policy clamp"},
      {"colour=red", "unknown policy 'colour'"},
      {"clamp=sglang,clamp=vllm", "given twice"},
      {"rope=none,vllm", "may only come first"},
      {"vllm,", "unknown profile ''"},
  };
  for (const auto& [text, why] : bad) {
    std::string error;
    EXPECT_FALSE(kvc::parse_profile(text, &error).has_value()) << text;
    EXPECT_NE(error.find(why), std::string::npos) << text << ": " << error;
  }
}

TEST(ParseProfile, EveryProfileRoundTripsThroughItsName) {
  for (unsigned mask = 0; mask < (1u << kvc::kAllPolicies.size()); ++mask) {
    Profile p;
    for (std::size_t i = 0; i < kvc::kAllPolicies.size(); ++i)
      p = kvc::with_alternative(p, kvc::kAllPolicies[i], (mask >> i) & 1);
    EXPECT_EQ(spec(kvc::profile_name(p).c_str()), p) << kvc::profile_name(p);
  }
}

TEST(CaseFileProfile, RecordedAndReadBackOldFilesAreVllm) {
  const InsertCase c = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584);
  nlohmann::json j = testkit::case_to_json(c, kvc::sglang_store_profile());
  EXPECT_EQ(j.at("profile"), "sglang-store");
  EXPECT_EQ(testkit::case_profile_from_json(j), kvc::sglang_store_profile());
  j = testkit::case_to_json(c, spec("clamp=sglang,pad=keep"));
  EXPECT_EQ(testkit::case_profile_from_json(j), spec("clamp=sglang,pad=keep"));
  EXPECT_EQ(testkit::case_profile_from_json(testkit::case_to_json(c)), kvc::vllm_profile());
  j.erase("profile");  // a file written before profiles
  EXPECT_EQ(testkit::case_profile_from_json(j), kvc::vllm_profile());
  EXPECT_NO_THROW(testkit::case_from_json(j));
  j["profile"] = "clamp=sideways";
  try {
    (void)testkit::case_profile_from_json(j);
    ADD_FAILURE() << "an unreadable profile was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown alternative 'sideways'"), std::string::npos) << e.what();
  }
}

TEST(AbiProfile, PolicyFieldsReadFromALibraryOf11AndIgnoredFrom10) {
  kvc_op_support s{};
  s.struct_size = sizeof s;
  testkit::declare_profile(kvc::sglang_store_profile(), KVC_OP_STORE_ROTATED, &s);
  EXPECT_EQ(s.rope, KVC_ROPE_NONE);
  EXPECT_EQ(s.clamp_order, KVC_CLAMP_MIN_THEN_MAX);
  EXPECT_EQ(s.inf_block, KVC_INF_BLOCK_NEGATIVE_INFINITY_INVERSE);
  EXPECT_EQ(s.pad_byte, KVC_PAD_BYTE_NOT_WRITTEN);
  EXPECT_EQ(s.scale_exponent, KVC_SCALE_EXPONENT_EXACT);
  EXPECT_EQ(s.amax_floor, KVC_AMAX_FLOOR_BEFORE_DIVIDE);
  EXPECT_EQ(testkit::profile_from_op_support(s, 1001, KVC_OP_STORE_ROTATED), kvc::sglang_store_profile());
  // A library built against 1.0 never wrote the policy fields: whatever they hold, it is vllm.
  EXPECT_EQ(testkit::profile_from_op_support(s, 1000, KVC_OP_STORE_ROTATED), kvc::vllm_profile());
  // So is a struct whose struct_size stops before them.
  kvc_op_support small = s;
  small.struct_size = offsetof(kvc_op_support, rope);
  EXPECT_EQ(testkit::profile_from_op_support(small, 1001, KVC_OP_STORE_ROTATED), kvc::vllm_profile());
  // rsqrt per op: the legacy op's q-norm field, every other op's kv_norm field.
  kvc_op_support r{};
  r.struct_size = sizeof r;
  r.q_norm_rsqrt = KVC_RSQRT_APPROXIMATE;
  EXPECT_EQ(testkit::profile_from_op_support(r, 1000, KVC_OP_LEGACY_INSERT).rsqrt, RsqrtMode::kApproximate);
  EXPECT_EQ(testkit::profile_from_op_support(r, 1000, KVC_OP_KV_ONLY_INSERT).rsqrt, RsqrtMode::kCorrectlyRounded);
  s.clamp_order = 7;
  try {
    (void)testkit::profile_from_op_support(s, 1001, KVC_OP_STORE_ROTATED);
    ADD_FAILURE() << "an out-of-range policy value was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("clamp_order = 7"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kvc
