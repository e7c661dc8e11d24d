// graph_replay_test.cpp (GPU): every op of the kernel library captured in a CUDA graph and
// replayed with its inputs rewritten in place between replays.
//
// GraphReplay: each insert op (KV-only, with and without kv_norm fused; legacy with Hp 0 and 8
// for the packed formats, the full-cache Q paths), every format, 0, 40 and 1100 tokens. The call
// goes through the kernel ABI (KVC_KERNELS or ours) on a non-blocking stream captured in
// cudaStreamCaptureModeGlobal. The capture itself must write nothing. Then 5 replays; before each,
// kv, slots, positions, q, the scales and the kv_norm weight are rewritten where the graph reads
// them (replay 2 maps every slot to -1). After each replay the whole backing and q_out equal,
// byte for byte, both the oracle's and an eager call's (DeviceBackend, the same library) run on
// the bytes the previous replay left; guard zones are intact and inputs unchanged.
// Catches: a library that cannot be captured (a synchronising call, the legacy default stream,
// an allocation, a host read of slots), one that launches on another stream than its argument
// (the capture writes and the replays do not), one that bakes values into the graph (slots,
// positions, scales, the token count of a device-side skip), and replay-order or stale-state bugs.
//
// GraphReplayKvNorm: the standalone kv_norm, out of place and in place, the same way.
//
// GraphReplayPlanted: the checks above catch a library that launches on a private stream (the
// capture writes) and one that launches on the legacy default stream (the capture fails, or,
// from a non-blocking capturing stream, writes).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <string>

#include "testkit/device/cuda_graph_support.h"
#include "testkit/device/owned_stream.h"
#include "testkit/device/gpu_test_support.h"
#include "kvc/oracle/bf16.h"
#include "kvc/oracle/kv_norm.h"
#include "testkit/compare/approx_rsqrt.h"
#include "testkit/backends/backing.h"
#include "testkit/cases/test_name.h"
#include "testkit/cases/case_builder.h"
#include "testkit/device/device_case_buffers.h"
#include "testkit/device/wrong_stream_abi.h"

namespace kvc {
namespace {

constexpr int kReplays = 5;
constexpr int kAllSkippedReplay = 2;  // every slot -1
constexpr std::int64_t kBlockSize = 16;
constexpr std::int64_t kMaxPos = 4096;
constexpr std::int64_t kDpPaddingRows = 3;
constexpr std::int64_t kQueryHeads = 2;
constexpr std::int64_t kRowGapBytes = 32;  // full caches: a gap after each row
constexpr float kEps = 1e-6f;

struct GraphSpec {
  InsertOp op = InsertOp::kKvOnly;
  RecordFormat format = RecordFormat::kPacked584;
  std::int64_t padded_heads = 0;  // packed legacy only
  bool kv_norm = false;           // KV-only only
  std::int64_t tokens = 40;

  std::string name() const {
    const std::string f = testkit::format_test_name(format);
    std::string n = op == InsertOp::kLegacy ? "Legacy_" : (kv_norm ? "KvOnlyKvNorm_" : "KvOnly_");
    n += f;
    if (op == InsertOp::kLegacy && is_packed(format)) n += "_Hp" + std::to_string(padded_heads);
    return n + "_Tokens" + std::to_string(tokens);
  }
  std::uint64_t seed() const {
    return 0x6772u + static_cast<std::uint64_t>(tokens) * 131u + static_cast<std::uint64_t>(format) * 7u +
           static_cast<std::uint64_t>(op) * 3u + static_cast<std::uint64_t>(padded_heads) + (kv_norm ? 1000u : 0u);
  }
};

void PrintTo(const GraphSpec& g, std::ostream* os) { *os << g.name(); }

std::vector<GraphSpec> graph_specs() {
  std::vector<GraphSpec> v;
  for (std::int64_t tokens : {0, 40, 1100}) {
    for (RecordFormat f : kAllFormats) {
      v.push_back({InsertOp::kKvOnly, f, 0, false, tokens});
      v.push_back({InsertOp::kKvOnly, f, 0, true, tokens});
      if (is_packed(f)) {
        v.push_back({InsertOp::kLegacy, f, 0, false, tokens});
        v.push_back({InsertOp::kLegacy, f, 8, false, tokens});
      } else {
        v.push_back({InsertOp::kLegacy, f, 0, false, tokens});
      }
    }
  }
  return v;
}

HostTensor weight_tensor(testkit::Rng& rng) {
  std::vector<std::uint16_t> w(kHeadDim);
  for (auto& x : w) x = oracle::float_to_bf16(1.0f + 0.25f * rng.normal());
  return make_tensor_from(DType::kBF16, w, {kHeadDim});
}

// The case of one replay: the same metadata every time, new values (kv, slots, positions, q,
// scales, kv_norm weight); the cos/sin table stays. Positions include max_pos - 1 and 0.
InsertCase replay_case(const GraphSpec& g, int replay) {
  testkit::Rng table_rng(g.seed());
  testkit::Rng rng(g.seed() * 1000003u + static_cast<std::uint64_t>(replay) + 1u);
  const std::int64_t rows = g.tokens == 0 ? 0 : g.tokens + kDpPaddingRows;
  const std::int64_t num_blocks = (2 * g.tokens + kBlockSize - 1) / kBlockSize + 1;
  testkit::CacheShape shape;
  shape.format = g.format;
  shape.num_blocks = num_blocks;
  shape.block_size = kBlockSize;
  shape.page_padding_bytes = testkit::upstream_page_padding_bytes(g.format, kBlockSize);
  shape.row_gap_bytes = is_packed(g.format) ? 0 : kRowGapBytes;

  testkit::KvInputs in;
  in.kv = testkit::random_bf16_rows(rng, rows);
  in.slots = rng.distinct(num_blocks * kBlockSize, g.tokens);
  for (std::size_t i = static_cast<std::size_t>(replay % 4); i < in.slots.size(); i += 4) in.slots[i] = -1;
  if (replay == kAllSkippedReplay) in.slots.assign(in.slots.size(), -1);
  for (std::int64_t t = 0; t < rows; ++t) in.positions.push_back(rng.uniform(0, kMaxPos - 1));
  if (rows > 0) in.positions.front() = kMaxPos - 1, in.positions.back() = 0;
  in.cos_sin = testkit::random_cos_sin(table_rng, kMaxPos);
  in.fp8_scale = 0.5f + 0.125f * static_cast<float>(replay);
  InsertCase c = testkit::make_kv_only_case(shape, in);
  if (g.op == InsertOp::kKvOnly) {
    if (g.kv_norm) {
      c.kv_norm_weight = weight_tensor(rng);
      c.kv_norm_eps = kEps;
    }
    return c;
  }
  testkit::QuerySpec q;
  q.heads = kQueryHeads;
  q.padded_heads = g.padded_heads;
  q.q = testkit::random_bf16_rows(rng, rows * kQueryHeads);
  q.eps = kEps;
  q.q_scale_inv = 1.5f + 0.25f * static_cast<float>(replay);
  return testkit::make_legacy_case(c, q);
}

std::string damage_text(const std::vector<testkit::BufferDamage>& damage) {
  std::string s;
  for (const testkit::BufferDamage& d : damage) s += "  " + d.to_string() + "\n";
  return s;
}

// Capture, then kReplays replays with rewritten inputs, each compared with the oracle and an eager
// call. `abi` is the table the graph is captured through (the library under test, or a planted
// defect); the eager reference always uses the library under test.
::testing::AssertionResult replays_conform(const testkit::KernelAbi& abi, const GraphSpec& g) {
  testkit::DeviceBackend eager = gpu::make_backend();
  const InsertCase first = replay_case(g, 0);
  InsertOutputs state = testkit::make_outputs(first);
  // Warm-up outside the capture, as serving engines do: the library's kernels are loaded (CUDA
  // loads modules lazily, at a kernel's first launch) and any one-time set-up is done.
  InsertOutputs warm_up = state;
  if (const Status s = eager.run(first, warm_up); !s.ok())
    return ::testing::AssertionFailure() << g.name() << ": the eager call was rejected: " << s.ToString();
  testkit::DeviceCaseBuffers resident(first, state);
  const InsertOutputs before_capture = resident.read_outputs();  // bf16_512: q_out holds q (in place)
  testkit::OwnedStream stream;
  const gpu::CapturedGraph graph(stream.get(),
                                 [&](void* s, std::string* message) { return resident.enqueue(abi, s, message); });
  if (!graph.ok()) return ::testing::AssertionFailure() << g.name() << ": capture failed: " << graph.error();
  testkit::check_cuda(cudaDeviceSynchronize(), "synchronising after the capture");
  const InsertOutputs after_capture = resident.read_outputs();
  if (after_capture.cache != before_capture.cache || after_capture.q_out != before_capture.q_out) {
    ::testing::AssertionResult failure = ::testing::AssertionFailure();
    failure << g.name() << ": the capture itself wrote (the op ran at capture time, on another stream than the "
            << "capturing one):\n";
    return failure << gpu::identical_runs(first, before_capture, after_capture, "before the capture",
                                          "after the capture")
                          .message();
  }
  std::printf("%s: captured %zu graph node(s)\n", g.name().c_str(), graph.nodes());

  for (int replay = 0; replay < kReplays; ++replay) {
    const InsertCase c = replay_case(g, replay);
    const std::string name =
        g.name() + " replay " + std::to_string(replay) + (replay == kAllSkippedReplay ? " (every slot -1)" : "");
    resident.write_inputs(c);

    InsertOutputs eager_out = state;
    if (const Status s = eager.run(c, eager_out); !s.ok())
      return ::testing::AssertionFailure() << name << ": the eager call was rejected: " << s.ToString();
    if (!eager.last_checks().clean())
      return ::testing::AssertionFailure() << name << ": the eager call damaged memory:\n"
                                           << eager.last_checks().to_string();

    graph.launch(stream.get());
    stream.synchronize();
    const InsertOutputs replayed = resident.read_outputs();
    if (const auto damage = resident.damage(); !damage.empty())
      return ::testing::AssertionFailure() << name << ": guard zones or inputs damaged:\n" << damage_text(damage);
    // Judged over the replay's own initial bytes: the previous replay's outputs.
    if (const auto r = gpu::passes(gpu::judge(eager, c, Status::Ok(), replayed, state), name); !r) return r;
    if (const auto r = gpu::identical_runs(c, eager_out, replayed, "eager call", "graph replay"); !r)
      return ::testing::AssertionFailure() << name << ": " << r.message();
    state = replayed;
  }
  return ::testing::AssertionSuccess();
}

class GraphReplay : public ::testing::TestWithParam<GraphSpec> {};

TEST_P(GraphReplay, EveryReplayEqualsOracleAndEagerCall) {
  KVC_REQUIRE_CUDA_DEVICE();
  const GraphSpec& g = GetParam();
  testkit::DeviceBackend device = gpu::make_backend();
  KVC_REQUIRE_SUPPORT(device, replay_case(g, 0));
  EXPECT_TRUE(replays_conform(gpu::kernel_library().abi(), g));
}

INSTANTIATE_TEST_SUITE_P(Ops, GraphReplay, ::testing::ValuesIn(graph_specs()),
                         [](const ::testing::TestParamInfo<GraphSpec>& p) { return p.param.name(); });

// ---- standalone kv_norm ----

struct KvNormReplay {
  HostTensor kv, weight;
};

KvNormReplay kv_norm_replay(std::int64_t rows, int replay) {
  testkit::Rng rng(0x6B6Eu + static_cast<std::uint64_t>(rows) * 17u + static_cast<std::uint64_t>(replay));
  KvNormReplay r;
  r.kv = make_tensor_from(DType::kBF16, testkit::random_bf16_rows(rng, rows), {rows, kHeadDim});
  r.weight = weight_tensor(rng);
  return r;
}

class GraphReplayKvNorm : public gpu::KvNormRowsTest {};

TEST_P(GraphReplayKvNorm, EveryReplayEqualsOracleAndEagerCall) {
  const auto [rows, in_place] = GetParam();
  testkit::DeviceBackend& eager = backend();
  const KvNormReplay first = kv_norm_replay(rows, 0);
  std::vector<std::uint16_t> warm_up;  // loads the kernels outside the capture
  ASSERT_TRUE(eager.kv_norm(first.kv, first.weight, kEps, &warm_up, in_place).ok());
  testkit::DeviceKvNormBuffers resident(first.kv, first.weight, kEps, in_place);
  const std::vector<std::uint16_t> before = resident.read_out();
  testkit::OwnedStream stream;
  const testkit::KernelAbi& abi = gpu::kernel_library().abi();
  const gpu::CapturedGraph graph(stream.get(),
                                 [&](void* s, std::string* message) { return resident.enqueue(abi, s, message); });
  ASSERT_TRUE(graph.ok()) << "capture failed: " << graph.error();
  testkit::check_cuda(cudaDeviceSynchronize(), "synchronising after the capture");
  ASSERT_EQ(resident.read_out(), before) << "the capture itself wrote kv_norm output rows";
  for (int replay = 0; replay < kReplays; ++replay) {
    SCOPED_TRACE("replay " + std::to_string(replay));
    const KvNormReplay r = kv_norm_replay(rows, replay);
    resident.write_inputs(r.kv, r.weight);
    std::vector<std::uint16_t> expected, eager_out;
    ASSERT_TRUE(oracle::kv_norm(r.kv, r.weight, kEps, &expected).ok());
    ASSERT_TRUE(eager.kv_norm(r.kv, r.weight, kEps, &eager_out, in_place).ok());
    ASSERT_TRUE(gpu::clean(eager));
    graph.launch(stream.get());
    stream.synchronize();
    const std::vector<std::uint16_t> replayed = resident.read_out();
    const auto damage = resident.damage();
    ASSERT_TRUE(damage.empty()) << damage_text(damage);
    EXPECT_EQ(replayed, eager_out) << "the graph replay and the eager call wrote different kv_norm rows";
    if (replayed != expected) {
      const testkit::ApproxRsqrtResult a = testkit::compare_kv_norm_under_rsqrt_mode(
          r.kv, r.weight, kEps, eager.kv_norm_rsqrt_mode(), expected, replayed);
      EXPECT_TRUE(a.accepted) << a.report;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, GraphReplayKvNorm,
                         ::testing::Combine(::testing::Values<std::int64_t>(0, 40, 1100), ::testing::Bool()),
                         testkit::ParamNamedBy<gpu::kv_norm_rows_name>());

// ---- planted defects: the checks above fail on the stream bugs they exist for ----

::testing::AssertionResult fails_with(const ::testing::AssertionResult& r, const std::string& expected_text) {
  if (r) return ::testing::AssertionFailure() << "the planted defect passed the graph checks";
  const std::string message = r.message();
  if (message.find(expected_text) == std::string::npos)
    return ::testing::AssertionFailure() << "the planted defect failed, but not with \"" << expected_text << "\":\n"
                                         << message;
  std::printf("caught as expected:\n%s\n", message.substr(0, 600).c_str());
  return ::testing::AssertionSuccess();
}

// Our kernels behind a table that launches on the `wrong` stream: the graph checks of `g` must
// fail, saying `expected_text`. Skipped without a device or the library's support for `g`.
void expect_wrong_stream_caught(const GraphSpec& g, gpu::WrongStream wrong, const std::string& expected_text) {
  KVC_REQUIRE_CUDA_DEVICE();
  testkit::DeviceBackend device = gpu::make_backend();
  KVC_REQUIRE_SUPPORT(device, replay_case(g, 0));
  const testkit::KernelAbi abi = gpu::wrong_stream_abi(gpu::kernel_library().abi(), wrong);
  EXPECT_TRUE(fails_with(replays_conform(abi, g), expected_text));
}

TEST(GraphReplayPlanted, OpLaunchedOnAPrivateStreamIsCaughtAtCapture) {
  expect_wrong_stream_caught({InsertOp::kKvOnly, RecordFormat::kPacked584, 0, false, 40}, gpu::WrongStream::kPrivate,
                             "the capture itself wrote");
}

TEST(GraphReplayPlanted, OpLaunchedOnTheLegacyDefaultStreamIsCaughtAtCapture) {
  // The launch on the legacy stream either invalidates the capture or runs at capture time.
  expect_wrong_stream_caught({InsertOp::kLegacy, RecordFormat::kPacked528, 8, false, 40},
                             gpu::WrongStream::kLegacyDefault, "capture");
}

}  // namespace
}  // namespace kvc
