// abi_call_test.cpp: the shims' common half on the CPU: kernel-ABI calls built over metadata-only
// DLPack tensors (CUDA device, addresses never dereferenced) taken apart by abi_call.h.
//
// Catches, for both shims at once: a malformed call forwarded instead of answered 403; a broken
// metadata rule forwarded (or answered with another code than the contract's); a binding picked
// for a format or dtype it does not serve; a value missing under one of its names or aliases, or
// pointing at another argument's tensor (a swapped slot/position tensor would write the wrong
// records); the Q head padding or force_grid wrong; a call with no row to write forwarded; the
// support declaration losing the config's rsqrt modes or policies; an exception crossing the C
// boundary (from the op, or from the shim's first use) or a message overrunning the caller's
// buffer. And kernel ABI 1.2: a call outside the declared support (unbound format or dtype,
// geometry outside the binding's limits) answered with a validation code instead of 402; the
// fused kv_norm query (op 5) answered by the plain insert's bindings; the geometry limits or the
// validation scope declared wrong, or written past a 1.1 caller's struct.
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

#include "abi_call.h"
#include "kvc/abi/dl_dtype.h"
#include "kvc/abi/struct_size.h"
#include "kvc/status.h"
#include "testkit/cases/small_cases.h"
#include "testkit/device/abi_args.h"

namespace kvc::shim {
namespace {

// Where the fake device tensors "live": aligned and non-canonical on x86-64, so a dereference
// faults for certain (the point: the common half reads metadata only).
constexpr std::uintptr_t kFakeDeviceAddress = 0x8000000000000000;

class FakeCall {
 public:
  const DLTensor* tensor(const TensorMeta& m) {
    std::vector<std::int64_t>& shape = dims_.emplace_back(m.sizes);
    std::vector<std::int64_t>& strides = dims_.emplace_back(m.strides);
    DLTensor& t = tensors_.emplace_back();
    t.data = reinterpret_cast<void*>(kFakeDeviceAddress);
    t.device = DLDevice{kDLCUDA, m.device};
    t.ndim = m.rank();
    t.dtype = abi::dl_dtype(m.dtype);
    t.shape = shape.data();
    t.strides = strides.data();
    t.byte_offset = static_cast<std::uint64_t>(m.offset_bytes);
    return &t;
  }
  const DLTensor* optional(const HostTensor& t) { return t.present ? tensor(t.meta) : nullptr; }

  // The structs as the suite's device backend fills them (testkit/device/abi_args.h), over fake
  // tensors; the legacy call asks for grid 2 so that force_grid is seen to arrive.
  kvc_kv_only_insert_args kv_only(const InsertCase& c) { return testkit::kv_only_insert_args(c, tensors(c)); }
  kvc_legacy_insert_args legacy(const InsertCase& c) { return testkit::legacy_insert_args(c, tensors(c), 2); }

 private:
  // A fake tensor for each argument of the case's op.
  testkit::InsertCallTensors tensors(const InsertCase& c) {
    testkit::InsertCallTensors t;
    t.kv = tensor(c.kv.meta);
    t.kv_cache = tensor(testkit::cache_meta(c.cache));
    t.slot_mapping = tensor(c.slots.meta);
    t.position_ids = tensor(c.positions.meta);
    t.cos_sin_cache = tensor(c.cos_sin.meta);
    t.fp8_scale = optional(c.fp8_scale);
    t.kv_norm_weight = optional(c.kv_norm_weight);
    if (c.op == InsertOp::kLegacy) {
      t.q = tensor(c.q.meta);
      t.q_out = tensor(c.q_out);
      t.q_scale_inv = optional(c.q_scale_inv);
    }
    return t;
  }

  std::deque<DLTensor> tensors_;
  std::deque<std::vector<std::int64_t>> dims_;
};

// Every entry point bound for every format, bf16 and fp16; one KV-only binding per format so
// that the test sees which one was picked.
ShimConfig every_op_config() {
  return parse_shim_config(nlohmann::json::parse(R"({
    "name": "test config",
    "rsqrt": {"q_norm": "approximate"},
    "policies": {"pad_byte": 1, "amax_floor": 1},
    "ops": {
      "kv_only_insert": [{"op": "t::packed", "formats": ["packed584", "packed528"]},
                         {"op": "t::full", "formats": ["fp8_512", "bf16_512"]}],
      "kv_only_insert_kv_norm": [{"op": "t::kv_only_norm"}],
      "legacy_insert": [{"op": "t::legacy", "kv_dtypes": ["bf16", "fp16"]}],
      "kv_norm": [{"op": "t::kv_norm"}]
    }})"));
}

const DLTensor* tensor_of(const PreparedCall& p, const std::string& name) {
  const auto it = p.values.find(name);
  if (it == p.values.end()) throw std::runtime_error("no value named " + name);
  const auto* t = std::get_if<const DLTensor*>(&it->second);
  return t != nullptr ? *t : nullptr;
}

template <typename T>
T scalar_of(const PreparedCall& p, const std::string& name) {
  return std::get<T>(p.values.at(name));
}

// `check(f, c, call)` for a small valid case `c` of `op` in every format `f`, over a fresh FakeCall.
template <typename Check>
void for_each_format(InsertOp op, Check&& check) {
  for (RecordFormat f : kAllFormats) {
    SCOPED_TRACE(layout_of(f).name);
    FakeCall call;
    check(f, testkit::small_valid_case(op, f), call);
  }
}

// The tensors both insert ops take, under each of their names: a swapped slot and position
// tensor would write the wrong records.
template <typename Args>
void expect_kv_side_tensors(const PreparedCall& p, const Args& a) {
  EXPECT_EQ(tensor_of(p, "kv"), a.kv);
  for (const char* n : {"k_cache", "kv_cache", "cache"}) EXPECT_EQ(tensor_of(p, n), a.kv_cache) << n;
  for (const char* n : {"slot_mapping", "slots"}) EXPECT_EQ(tensor_of(p, n), a.slot_mapping) << n;
  for (const char* n : {"position_ids", "positions"}) EXPECT_EQ(tensor_of(p, n), a.position_ids) << n;
}

TEST(ShimAbiCall, AValidKvOnlyCallGivesItsBindingAndEveryValueUnderEveryName) {
  const ShimConfig config = every_op_config();
  for_each_format(InsertOp::kKvOnly, [&](RecordFormat f, const InsertCase& c, FakeCall& call) {
    const kvc_kv_only_insert_args a = call.kv_only(c);
    const PreparedCall p = prepare_kv_only_insert(config, "test op", &a);
    ASSERT_EQ(p.outcome.status, KVC_STATUS_OK) << p.outcome.message;
    ASSERT_TRUE(p.forward());
    ASSERT_NE(p.binding, nullptr);
    EXPECT_EQ(p.binding->op, f == RecordFormat::kPacked584 || f == RecordFormat::kPacked528 ? "t::packed" : "t::full");
    expect_kv_side_tensors(p, a);
    EXPECT_EQ(tensor_of(p, "cos_sin_cache"), a.cos_sin_cache);
    EXPECT_EQ(tensor_of(p, "fp8_scale"), a.fp8_scale) << "None unless fp8_512";
    EXPECT_EQ(f == RecordFormat::kFp8_512, a.fp8_scale != nullptr);
    for (const char* n : {"norm_weight", "kv_norm_weight", "weight"}) EXPECT_EQ(tensor_of(p, n), nullptr) << n;
    for (const char* n : {"eps", "kv_norm_eps"}) EXPECT_EQ(scalar_of<double>(p, n), static_cast<double>(c.kv_norm_eps));
    for (const char* n : {"cache_block_size", "block_size"}) EXPECT_EQ(scalar_of<std::int64_t>(p, n), c.block_size);
    EXPECT_EQ(scalar_of<bool>(p, "kv_mxfp8"), f == RecordFormat::kPacked528);
  });
}

TEST(ShimAbiCall, KvNormWeightPicksTheFusedBinding) {
  const ShimConfig config = every_op_config();
  InsertCase c = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584);
  c.kv_norm_weight = make_tensor(DType::kBF16, {kHeadDim});
  c.kv_norm_eps = 1e-5f;
  FakeCall call;
  const kvc_kv_only_insert_args a = call.kv_only(c);
  const PreparedCall p = prepare_kv_only_insert(config, "test op", &a);
  ASSERT_EQ(p.outcome.status, KVC_STATUS_OK) << p.outcome.message;
  EXPECT_EQ(p.binding->op, "t::kv_only_norm");
  EXPECT_EQ(tensor_of(p, "norm_weight"), a.kv_norm_weight);
  EXPECT_EQ(scalar_of<double>(p, "eps"), static_cast<double>(1e-5f));
}

TEST(ShimAbiCall, LegacyValuesCarryTheHeadPaddingAndTheGridChoice) {
  const ShimConfig config = every_op_config();
  for_each_format(InsertOp::kLegacy, [&](RecordFormat f, const InsertCase& c, FakeCall& call) {
    kvc_legacy_insert_args a = call.legacy(c);
    PreparedCall p = prepare_legacy_insert(config, "test op", &a);
    ASSERT_EQ(p.outcome.status, KVC_STATUS_OK) << p.outcome.message;
    EXPECT_EQ(p.binding->op, "t::legacy");
    for (const char* n : {"q", "q_in"}) EXPECT_EQ(tensor_of(p, n), a.q) << n;
    for (const char* n : {"q_out", "q_fp8"}) EXPECT_EQ(tensor_of(p, n), a.q_out) << n;
    for (const char* n : {"q_scale_inv", "q_fp8_scale_inv"}) EXPECT_EQ(tensor_of(p, n), a.q_scale_inv) << n;
    EXPECT_EQ(f == RecordFormat::kFp8_512, a.q_scale_inv != nullptr);
    expect_kv_side_tensors(p, a);
    EXPECT_EQ(scalar_of<double>(p, "eps"), static_cast<double>(c.eps));
    EXPECT_EQ(scalar_of<std::int64_t>(p, "q_head_padded"), c.padded_heads());
    EXPECT_EQ(scalar_of<bool>(p, "apply_q_norm"), c.apply_q_norm);
    EXPECT_EQ(scalar_of<bool>(p, "apply_q_rope"), c.apply_q_rope);
    for (const char* n : {"is_q_interleaved", "q_interleaved"}) EXPECT_EQ(scalar_of<bool>(p, n), c.q_interleaved) << n;
    EXPECT_EQ(scalar_of<std::int64_t>(p, "force_grid"), 2);
    // A caller of an older ABI minor version: the struct ends before force_grid, whose value
    // must then be the library's own choice (0), never the bytes past the caller's struct.
    a.struct_size = static_cast<std::uint32_t>(offsetof(kvc_legacy_insert_args, force_grid));
    p = prepare_legacy_insert(config, "test op", &a);
    ASSERT_EQ(p.outcome.status, KVC_STATUS_OK) << p.outcome.message;
    EXPECT_EQ(scalar_of<std::int64_t>(p, "force_grid"), 0);
  });
}

TEST(ShimAbiCall, MalformedCallsAnswer403AndForwardNothing) {
  const ShimConfig config = every_op_config();
  EXPECT_EQ(prepare_kv_only_insert(config, "test op", nullptr).outcome.status, KVC_STATUS_BAD_ARGUMENT);
  const InsertCase c = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584);
  FakeCall call;
  kvc_kv_only_insert_args a = call.kv_only(c);
  a.struct_size = 8;
  PreparedCall p = prepare_kv_only_insert(config, "test op", &a);
  EXPECT_EQ(p.outcome.status, KVC_STATUS_BAD_ARGUMENT);
  EXPECT_NE(p.outcome.message.find("struct_size"), std::string::npos) << p.outcome.message;
  EXPECT_FALSE(p.forward());
  a = call.kv_only(c);
  DLTensor host_slots = *a.slot_mapping;
  host_slots.device = DLDevice{kDLCPU, 0};
  a.slot_mapping = &host_slots;
  p = prepare_kv_only_insert(config, "test op", &a);
  EXPECT_EQ(p.outcome.status, KVC_STATUS_BAD_ARGUMENT);
  EXPECT_NE(p.outcome.message.find("slot_mapping"), std::string::npos) << p.outcome.message;
  EXPECT_FALSE(p.forward());
}

TEST(ShimAbiCall, BrokenRulesAnswerTheContractsCodeAndForwardNothing) {
  const ShimConfig config = every_op_config();
  InsertCase c = testkit::small_valid_case(InsertOp::kLegacy, RecordFormat::kPacked528);
  c.cache.offset_bytes += 8;  // a misaligned cache base
  FakeCall call;
  const kvc_legacy_insert_args a = call.legacy(c);
  PreparedCall p = prepare_legacy_insert(config, "test op", &a);
  EXPECT_EQ(p.outcome.status, static_cast<int>(ErrorCode::kMisaligned)) << p.outcome.message;
  EXPECT_FALSE(p.forward());
  EXPECT_EQ(p.binding, nullptr);

  InsertCase s = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kFp8_512);
  s.slots.meta.dtype = DType::kI32;
  s.slots.meta.strides = {1};
  const kvc_kv_only_insert_args b = call.kv_only(s);
  p = prepare_kv_only_insert(config, "test op", &b);
  EXPECT_EQ(p.outcome.status, static_cast<int>(ErrorCode::kSlotsInvalid)) << p.outcome.message;
  EXPECT_FALSE(p.forward());
}

TEST(ShimAbiCall, AnUnboundFormatOrDtypeIsUnsupportedNamingTheConfig) {
  const ShimConfig config = parse_shim_config(nlohmann::json::parse(
      R"({"name": "packed only", "ops": {"kv_only_insert": {"op": "t::packed", "formats": ["packed584"]}}})"));
  const InsertCase c = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked528);
  FakeCall call;
  const kvc_kv_only_insert_args a = call.kv_only(c);
  const PreparedCall p = prepare_kv_only_insert(config, "test op", &a);
  EXPECT_EQ(p.outcome.status, KVC_STATUS_UNSUPPORTED);
  EXPECT_NE(p.outcome.message.find("no test op is bound to the KV-only insert for packed528 (config packed only)"),
            std::string::npos)
      << p.outcome.message;
  EXPECT_FALSE(p.forward());
}

// ABI 1.2: support is answered before any validation code. Each call below also breaks a
// metadata rule; outside the declared support it must be 402, inside it the rule's code.
TEST(ShimAbiCall, OutsideTheDeclaredSupportIs402BeforeAnyValidationCode) {
  const ShimConfig config = parse_shim_config(nlohmann::json::parse(R"({"name": "vllm-like", "ops": {
      "kv_only_insert": {"op": "t::kv"},
      "kv_only_insert_kv_norm": {"op": "t::kv_norm_fused", "formats": ["packed584"]},
      "legacy_insert": {"op": "t::legacy", "formats": ["packed584", "bf16_512"]}}})"));
  FakeCall call;
  const auto misaligned = [](InsertCase c) {
    c.cache.offset_bytes += 8;
    return c;
  };
  const auto fused = [](InsertCase c) {
    c.kv_norm_weight = make_tensor(DType::kBF16, {kHeadDim});
    c.kv_norm_eps = 1e-6f;
    return c;
  };

  // The fused kv_norm insert on packed528: not bound, whatever else is wrong.
  kvc_kv_only_insert_args a =
      call.kv_only(misaligned(fused(testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked528))));
  PreparedCall p = prepare_kv_only_insert(config, "test op", &a);
  EXPECT_EQ(p.outcome.status, KVC_STATUS_UNSUPPORTED) << p.outcome.message;
  EXPECT_NE(p.outcome.message.find("the KV-only insert with kv_norm for packed528"), std::string::npos)
      << p.outcome.message;
  EXPECT_FALSE(p.forward());
  // The same on packed584, which is bound: the rule's code.
  a = call.kv_only(misaligned(fused(testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584))));
  p = prepare_kv_only_insert(config, "test op", &a);
  EXPECT_EQ(p.outcome.status, static_cast<int>(ErrorCode::kMisaligned)) << p.outcome.message;
  // The plain insert on packed528 is bound: the rule's code, not the fused binding's absence.
  a = call.kv_only(misaligned(testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked528)));
  p = prepare_kv_only_insert(config, "test op", &a);
  EXPECT_EQ(p.outcome.status, static_cast<int>(ErrorCode::kMisaligned)) << p.outcome.message;

  // The legacy op: fp8_512 unbound (402); packed584 with fp16 rows unbound (402, naming fp16).
  kvc_legacy_insert_args l =
      call.legacy(misaligned(testkit::small_valid_case(InsertOp::kLegacy, RecordFormat::kFp8_512)));
  p = prepare_legacy_insert(config, "test op", &l);
  EXPECT_EQ(p.outcome.status, KVC_STATUS_UNSUPPORTED) << p.outcome.message;
  InsertCase half = testkit::small_valid_case(InsertOp::kLegacy, RecordFormat::kPacked584);
  half.kv.meta.dtype = half.q.meta.dtype = half.q_out.dtype = DType::kF16;
  l = call.legacy(misaligned(half));
  p = prepare_legacy_insert(config, "test op", &l);
  EXPECT_EQ(p.outcome.status, KVC_STATUS_UNSUPPORTED) << p.outcome.message;
  EXPECT_NE(p.outcome.message.find("for packed584 with fp16 rows"), std::string::npos) << p.outcome.message;

  // Rows the contract does not take for the op ask no question of support: the contract's code
  // (KV-only takes bf16 only; fp16 is unbound here too, and still answers kKvDtype).
  InsertCase fp16_kv_only = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584);
  fp16_kv_only.kv.meta.dtype = DType::kF16;
  a = call.kv_only(fp16_kv_only);
  p = prepare_kv_only_insert(config, "test op", &a);
  EXPECT_EQ(p.outcome.status, static_cast<int>(ErrorCode::kKvDtype)) << p.outcome.message;
  // And a cache whose dtype selects no format: its rule's code.
  InsertCase f32_cache = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584);
  f32_cache.cache.dtype = DType::kF32;
  a = call.kv_only(f32_cache);
  p = prepare_kv_only_insert(config, "test op", &a);
  EXPECT_EQ(p.outcome.status, static_cast<int>(ErrorCode::kCacheDtype)) << p.outcome.message;

  // kv_norm unbound: 402 before out's broken dtype.
  TensorMeta kv;
  kv.dtype = DType::kBF16;
  kv.sizes = {3, kHeadDim};
  kv.strides = {kHeadDim, 1};
  TensorMeta w = kv;
  w.sizes = {kHeadDim};
  w.strides = {1};
  TensorMeta out = kv;
  out.sizes[0] = 2;
  kvc_kv_norm_args n{sizeof(kvc_kv_norm_args), call.tensor(kv), call.tensor(w), call.tensor(out), 1e-6f};
  p = prepare_kv_norm(config, "test op", &n);
  EXPECT_EQ(p.outcome.status, KVC_STATUS_UNSUPPORTED) << p.outcome.message;
}

// A binding's geometry limits: a call outside them is unsupported (402, before its validation
// code), one inside them goes on to validation and the op.
TEST(ShimAbiCall, ACacheOutsideTheBindingsGeometryIsUnsupported) {
  const ShimConfig config = parse_shim_config(nlohmann::json::parse(R"({"name": "dense only", "ops": {
      "kv_only_insert": {"op": "t::dense", "page_stride": "dense", "block_sizes": [16]}}})"));
  FakeCall call;
  InsertCase c = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584);  // pages padded by 32 B
  kvc_kv_only_insert_args a = call.kv_only(c);
  PreparedCall p = prepare_kv_only_insert(config, "test op", &a);
  EXPECT_EQ(p.outcome.status, KVC_STATUS_UNSUPPORTED) << p.outcome.message;
  EXPECT_NE(p.outcome.message.find("t::dense (config dense only) does not take this cache: page stride 9376 B is "
                                   "not the 9344 B of dense pages"),
            std::string::npos)
      << p.outcome.message;
  c.cache.stride0 = c.block_size * 584;  // dense
  a = call.kv_only(c);
  p = prepare_kv_only_insert(config, "test op", &a);
  EXPECT_EQ(p.outcome.status, KVC_STATUS_OK) << p.outcome.message;
  EXPECT_TRUE(p.forward());
  c.cache.offset_bytes += 8;  // dense but misaligned: inside the limits, so the rule's code
  a = call.kv_only(c);
  p = prepare_kv_only_insert(config, "test op", &a);
  EXPECT_EQ(p.outcome.status, static_cast<int>(ErrorCode::kMisaligned)) << p.outcome.message;
  c.cache.offset_bytes -= 8;
  a = call.kv_only(c);
  a.block_size = 32;  // not listed (and not the cache's either): 402 first
  p = prepare_kv_only_insert(config, "test op", &a);
  EXPECT_EQ(p.outcome.status, KVC_STATUS_UNSUPPORTED) << p.outcome.message;
  EXPECT_NE(p.outcome.message.find("block size 32 is not one of 16"), std::string::npos) << p.outcome.message;
}

TEST(ShimAbiCall, NoRowToWriteIsAnsweredWithoutForwarding) {
  const ShimConfig config = every_op_config();
  InsertCase c = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kBf16_512);
  c.kv.meta.sizes[0] = 0;
  c.slots.meta.sizes[0] = 0;
  c.positions.meta.sizes[0] = 0;
  FakeCall call;
  const kvc_kv_only_insert_args a = call.kv_only(c);
  const PreparedCall p = prepare_kv_only_insert(config, "test op", &a);
  EXPECT_EQ(p.outcome.status, KVC_STATUS_OK) << p.outcome.message;
  EXPECT_TRUE(p.nothing_to_do);
  EXPECT_FALSE(p.forward());
}

TEST(ShimAbiCall, KvNormOutputMustBeKvsTwinWithOurWrappersCodes) {
  const ShimConfig config = every_op_config();
  FakeCall call;
  TensorMeta kv;
  kv.dtype = DType::kBF16;
  kv.sizes = {3, kHeadDim};
  kv.strides = {kHeadDim, 1};
  TensorMeta w = kv;
  w.sizes = {kHeadDim};
  w.strides = {1};
  TensorMeta out = kv;
  kvc_kv_norm_args a{sizeof(kvc_kv_norm_args), call.tensor(kv), call.tensor(w), call.tensor(out), 1e-6f};
  PreparedCall p = prepare_kv_norm(config, "test op", &a);
  ASSERT_EQ(p.outcome.status, KVC_STATUS_OK) << p.outcome.message;
  for (const char* n : {"kv", "input", "x"}) EXPECT_EQ(tensor_of(p, n), a.kv) << n;
  for (const char* n : {"out", "output"}) EXPECT_EQ(tensor_of(p, n), a.out) << n;
  // Each broken property of out answers the code our own ABI wrapper (kernels/src/kernel_abi.cpp)
  // answers for it, so a shim and the direct path agree on every kv_norm rejection.
  struct Breaker {
    const char* what;
    void (*apply)(TensorMeta&);
    ErrorCode code;
  };
  const Breaker breakers[] = {
      {"fp32", [](TensorMeta& m) { m.dtype = DType::kF32; }, ErrorCode::kKvDtype},
      {"one row short", [](TensorMeta& m) { m.sizes[0] -= 1; }, ErrorCode::kKvShape},
      {"rows strided", [](TensorMeta& m) { m.strides[0] = 2 * kHeadDim; }, ErrorCode::kKvNotContiguous},
      {"another device", [](TensorMeta& m) { m.device = 1; }, ErrorCode::kDeviceMismatch},
      {"a negative size", [](TensorMeta& m) { m.sizes[1] = -kHeadDim; }, ErrorCode::kTensorMetaInvalid},
  };
  for (const Breaker& b : breakers) {
    TensorMeta broken = out;
    b.apply(broken);
    a.out = call.tensor(broken);
    p = prepare_kv_norm(config, "test op", &a);
    EXPECT_EQ(p.outcome.status, static_cast<int>(b.code)) << b.what << ": " << p.outcome.message;
    EXPECT_FALSE(p.forward()) << b.what;
  }
}

TEST(ShimAbiCall, SupportDeclaresTheConfigsModesPoliciesAndReasons) {
  ShimState shim{"test shim", "test op", every_op_config(), {}, {}};
  kvc_op_support s{};
  s.struct_size = sizeof(s);
  ASSERT_EQ(declare_support(shim, KVC_OP_KV_ONLY_INSERT, KVC_FORMAT_PACKED528, abi::dl_dtype(DType::kBF16), &s),
            KVC_STATUS_OK);
  EXPECT_EQ(s.supported, 1);
  EXPECT_EQ(s.q_norm_rsqrt, 1);
  EXPECT_EQ(s.kv_norm_rsqrt, 0);
  EXPECT_EQ(s.pad_byte, 1);
  EXPECT_EQ(s.amax_floor, 1);
  EXPECT_EQ(s.clamp_order, 0);
  ASSERT_EQ(declare_support(shim, KVC_OP_KV_ONLY_INSERT, KVC_FORMAT_PACKED528, abi::dl_dtype(DType::kF16), &s),
            KVC_STATUS_OK);
  EXPECT_EQ(s.supported, 0);
  ASSERT_NE(s.reason, nullptr);
  EXPECT_STREQ(
      s.reason,
      "the test shim's config (test config) binds no test op to the KV-only insert for packed528 with fp16 rows");
  EXPECT_EQ(declare_support(shim, KVC_OP_KV_ONLY_INSERT, KVC_FORMAT_PACKED528, abi::dl_dtype(DType::kBF16), nullptr),
            KVC_STATUS_BAD_ARGUMENT);

  shim.error = "no config";
  ASSERT_EQ(declare_support(shim, KVC_OP_LEGACY_INSERT, KVC_FORMAT_BF16_512, abi::dl_dtype(DType::kBF16), &s),
            KVC_STATUS_OK);
  EXPECT_EQ(s.supported, 0);
  EXPECT_STREQ(s.reason, "test shim not configured: no config");
}

TEST(ShimAbiCall, TheFusedKvNormQueryAsksForItsOwnBinding) {
  ShimState shim{"test shim",
                 "test op",
                 parse_shim_config(nlohmann::json::parse(R"({"name": "plain only", "ops": {
                     "kv_only_insert": {"op": "t::kv"},
                     "kv_only_insert_kv_norm": {"op": "t::fused", "formats": ["packed584"]}}})")),
                 {},
                 {}};
  const auto query = [&](std::int32_t op, std::int32_t format) {
    kvc_op_support s{};
    s.struct_size = sizeof(s);
    EXPECT_EQ(declare_support(shim, op, format, abi::dl_dtype(DType::kBF16), &s), KVC_STATUS_OK);
    return s;
  };
  EXPECT_EQ(query(KVC_OP_KV_ONLY_INSERT_KV_NORM, KVC_FORMAT_PACKED584).supported, 1);
  const kvc_op_support s = query(KVC_OP_KV_ONLY_INSERT_KV_NORM, KVC_FORMAT_PACKED528);
  EXPECT_EQ(s.supported, 0) << "the plain insert's binding must not answer for the fused one";
  ASSERT_NE(s.reason, nullptr);
  EXPECT_STREQ(s.reason,
               "the test shim's config (plain only) binds no test op to the KV-only insert with kv_norm for packed528");
  EXPECT_EQ(query(KVC_OP_KV_ONLY_INSERT, KVC_FORMAT_PACKED528).supported, 1);
}

TEST(ShimAbiCall, SupportDeclaresTheBindingsGeometryAndEveryValidationCode) {
  ShimState shim{"test shim",
                 "test op",
                 parse_shim_config(nlohmann::json::parse(R"({"ops": {
                     "kv_only_insert": [{"op": "t::store", "formats": ["packed584"], "page_stride": {"aligned_up": 576},
                                         "block_sizes": [64, 256]},
                                        {"op": "t::any", "formats": ["packed528"]}],
                     "kv_norm": {"op": "t::n"}}})")),
                 {},
                 {}};
  const OpBinding* store = shim.config.find(AbiEntry::kKvOnlyInsert, RecordFormat::kPacked584, DType::kBF16);
  ASSERT_NE(store, nullptr);
  kvc_op_support s{};
  s.struct_size = sizeof(s);
  s.validation = 7;  // stale values a shim must overwrite
  s.enforced_code_count = 3;
  ASSERT_EQ(declare_support(shim, KVC_OP_KV_ONLY_INSERT, KVC_FORMAT_PACKED584, abi::dl_dtype(DType::kBF16), &s),
            KVC_STATUS_OK);
  EXPECT_EQ(s.supported, 1);
  EXPECT_EQ(s.page_stride_rule, KVC_PAGE_STRIDE_ALIGNED_UP);
  EXPECT_EQ(s.page_stride_align, 576);
  EXPECT_EQ(s.block_size_rule, KVC_BLOCK_SIZE_LISTED);
  ASSERT_EQ(s.block_size_count, 2);
  EXPECT_EQ(s.block_sizes, store->limits.block_sizes.data());
  EXPECT_EQ(s.cache_ranks, 0u);
  EXPECT_EQ(s.index_dtypes, 0u);
  EXPECT_EQ(s.validation, KVC_VALIDATION_ALL) << "the shim checks every rule on the op's behalf";
  EXPECT_EQ(s.enforced_code_count, 0);
  EXPECT_EQ(s.enforced_codes, nullptr);

  // Another format's binding has no limits: none declared (not the last answer's).
  ASSERT_EQ(declare_support(shim, KVC_OP_KV_ONLY_INSERT, KVC_FORMAT_PACKED528, abi::dl_dtype(DType::kBF16), &s),
            KVC_STATUS_OK);
  EXPECT_EQ(s.supported, 1);
  EXPECT_EQ(s.page_stride_rule, KVC_PAGE_STRIDE_ANY);
  EXPECT_EQ(s.block_size_rule, KVC_BLOCK_SIZE_ANY);
  EXPECT_EQ(s.block_sizes, nullptr);

  // A caller of ABI 1.1 has no room for the 1.2 fields: nothing written past amax_floor.
  kvc_op_support old{};
  old.struct_size = static_cast<std::uint32_t>(KVC_ABI_END_OF(kvc_op_support, amax_floor));
  old.page_stride_rule = -5;
  old.validation = -5;
  ASSERT_EQ(declare_support(shim, KVC_OP_KV_ONLY_INSERT, KVC_FORMAT_PACKED584, abi::dl_dtype(DType::kBF16), &old),
            KVC_STATUS_OK);
  EXPECT_EQ(old.supported, 1);
  EXPECT_EQ(old.page_stride_rule, -5);
  EXPECT_EQ(old.validation, -5);
}

TEST(ShimAbiCall, WhatTheShimsFirstUseThrowsIsAnsweredToo) {
  FakeCall call;
  const kvc_kv_only_insert_args a =
      call.kv_only(testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584));
  char error[128] = {0};
  const auto throwing_state = []() -> ShimState& { throw std::runtime_error("torch failed to initialise"); };
  const auto never = [](const PreparedCall&, void*) -> Outcome {
    ADD_FAILURE() << "forwarded";
    return {};
  };
  EXPECT_EQ(answer_op_call(throwing_state, prepare_kv_only_insert, &a, nullptr, error, sizeof(error), never),
            KVC_STATUS_BAD_ARGUMENT);
  EXPECT_STREQ(error, "internal error: torch failed to initialise");

  ShimState shim{"test shim", "test op", every_op_config(), {}, {}};
  const auto state = [&]() -> ShimState& { return shim; };
  const auto throwing_forward = [](const PreparedCall&, void*) -> Outcome { throw std::logic_error("op threw"); };
  EXPECT_EQ(answer_op_call(state, prepare_kv_only_insert, &a, nullptr, error, sizeof(error), throwing_forward),
            KVC_STATUS_BAD_ARGUMENT);
  EXPECT_STREQ(error, "internal error: op threw");
}

TEST(ShimAbiCall, OnlyCallsToMakeReachTheShimsForward) {
  const ShimConfig config = every_op_config();
  int forwarded = 0;
  const auto forward = [&](const PreparedCall& p, void*) {
    ++forwarded;
    EXPECT_TRUE(p.forward());
    return Outcome{KVC_STATUS_CUDA_ERROR, "from forward"};
  };
  FakeCall call;
  InsertCase c = testkit::small_valid_case(InsertOp::kKvOnly, RecordFormat::kPacked584);
  kvc_kv_only_insert_args a = call.kv_only(c);
  EXPECT_EQ(forward_prepared(prepare_kv_only_insert(config, "test op", &a), nullptr, forward).status,
            KVC_STATUS_CUDA_ERROR);
  EXPECT_EQ(forwarded, 1);
  a.struct_size = 8;  // rejected: answered with its own outcome
  EXPECT_EQ(forward_prepared(prepare_kv_only_insert(config, "test op", &a), nullptr, forward).status,
            KVC_STATUS_BAD_ARGUMENT);
  c.kv.meta.sizes[0] = c.slots.meta.sizes[0] = c.positions.meta.sizes[0] = 0;
  a = call.kv_only(c);  // nothing to write: OK without forwarding
  EXPECT_EQ(forward_prepared(prepare_kv_only_insert(config, "test op", &a), nullptr, forward).status, KVC_STATUS_OK);
  EXPECT_EQ(forwarded, 1);
}

TEST(ShimAbiCall, AnswersCatchEveryExceptionAndTruncateTheMessage) {
  ShimState shim{"test shim", "test op", every_op_config(), {}, {}};
  char error[16];
  std::memset(error, 'x', sizeof(error));
  EXPECT_EQ(answer(shim, error, 8, []() -> Outcome { throw std::runtime_error("boom in the op"); }),
            KVC_STATUS_BAD_ARGUMENT);
  EXPECT_STREQ(error, "interna") << "7 characters and the NUL in a capacity of 8";
  EXPECT_EQ(error[8], 'x') << "nothing written past the capacity";
  EXPECT_EQ(answer(shim, error, sizeof(error), []() -> Outcome { throw 42; }), KVC_STATUS_BAD_ARGUMENT);
  EXPECT_EQ(answer(shim, nullptr, 0, [] { return Outcome{KVC_STATUS_CUDA_ERROR, "x"}; }), KVC_STATUS_CUDA_ERROR);
  shim.error = "no config";
  bool ran = false;
  EXPECT_EQ(answer(shim, error, sizeof(error),
                   [&] {
                     ran = true;
                     return Outcome{};
                   }),
            KVC_STATUS_UNSUPPORTED);
  EXPECT_FALSE(ran) << "an unconfigured shim calls nothing";
}

}  // namespace
}  // namespace kvc::shim
