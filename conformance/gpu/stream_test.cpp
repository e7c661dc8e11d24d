// stream_test.cpp (GPU): the kernel library on streams other than the default one.
//
// The stream-ordered check (DefaultStreamGate): the legacy default stream is held by a spinning
// kernel while the op is enqueued on a non-blocking stream of the test's. The op must finish on
// that stream while the default stream is still held, its outputs (read through a third,
// non-blocking stream, still under the hold) must equal the oracle's byte for byte, and nothing
// may change once the hold is released. An op launched on the legacy or per-thread default
// stream, or on any blocking stream, is still queued behind the hold when the outputs are read;
// work it leaves on the default stream shows up after the release; a call that synchronises with
// the default stream blocks until the hold times out. Tests using it are named DefaultStreamHeld*
// (a sanitizer serialises kernels, so they cannot run under compute-sanitizer).
//
// DefaultStreamHeldOps: each insert op (KV-only, KV-only with kv_norm, legacy) in every format at
// 1025 tokens, and the standalone kv_norm.
// TwoStreams: two caches (packed584 KV-only, fp8_512 legacy) written from two non-blocking
// streams at once, several calls each, interleaved: both equal the oracle's.
// GraphOnAnotherStream: captured on one stream, replayed on another with new inputs (and, in
// DefaultStreamHeldGraph, with the default stream held): equal the oracle's.
// DefaultStreamHeldGate: the gate holds a memset queued on the legacy stream and releases it.
// DefaultStreamHeldPlanted: the check catches an op launched on the legacy default stream and
// one launched on the per-thread default stream.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "testkit/device/cuda_graph_support.h"
#include "testkit/device/owned_stream.h"
#include "testkit/device/default_stream_gate.h"
#include "testkit/device/gpu_test_support.h"
#include "testkit/cases/registry.h"
#include "kvc/oracle/bf16.h"
#include "kvc/oracle/kv_norm.h"
#include "testkit/compare/approx_rsqrt.h"
#include "testkit/backends/backing.h"
#include "testkit/cases/test_name.h"
#include "testkit/device/device_case_buffers.h"
#include "testkit/device/wrong_stream_abi.h"

namespace kvc {
namespace {

constexpr double kWaitSeconds = 10.0;  // an op here takes milliseconds
constexpr float kEps = 1e-6f;

std::string damage_text(const std::vector<testkit::BufferDamage>& damage) {
  std::string s;
  for (const testkit::BufferDamage& d : damage) s += "  " + d.to_string() + "\n";
  return s;
}

HostTensor weight_tensor(testkit::Rng& rng) {
  std::vector<std::uint16_t> w(kHeadDim);
  for (auto& x : w) x = oracle::float_to_bf16(1.0f + 0.25f * rng.normal());
  return make_tensor_from(DType::kBF16, w, {kHeadDim});
}

// One op of the stream tests: an insert (op, format, kv_norm fused or not) at `tokens` tokens
// with a random query of 2 heads padded to 8.
struct StreamSpec {
  InsertOp op = InsertOp::kKvOnly;
  RecordFormat format = RecordFormat::kPacked584;
  bool kv_norm = false;
  std::int64_t tokens = 1025;
  std::string name() const {
    return std::string(op == InsertOp::kLegacy ? "Legacy_" : (kv_norm ? "KvOnlyKvNorm_" : "KvOnly_")) +
           testkit::format_test_name(format) + "_Tokens" + std::to_string(tokens);
  }
};

void PrintTo(const StreamSpec& s, std::ostream* os) { *os << s.name(); }

InsertCase stream_case(const StreamSpec& s, int round) {
  cases::ConformanceSpec spec{s.format, s.tokens, 64};
  spec.values = cases::KvValues::kWideRange;
  spec.random_query = true;
  spec.query_heads = 2;
  spec.padded_heads = 8;
  spec.seed = 0x5354u + static_cast<std::uint64_t>(s.format) * 5u + static_cast<std::uint64_t>(s.tokens);
  InsertCase c = cases::build_case(s.op, spec, round);
  if (s.kv_norm) {
    testkit::Rng rng(spec.seed + 1u + static_cast<std::uint64_t>(round));
    c.kv_norm_weight = weight_tensor(rng);
    c.kv_norm_eps = kEps;
  }
  return c;
}

std::vector<StreamSpec> held_specs() {
  std::vector<StreamSpec> v;
  for (RecordFormat f : kAllFormats) {
    v.push_back({InsertOp::kKvOnly, f, false});
    v.push_back({InsertOp::kKvOnly, f, true});
    v.push_back({InsertOp::kLegacy, f, false});
  }
  return v;
}

// What happened while the legacy default stream was held.
struct HeldObservation {
  int rc = 0;
  std::string message;
  bool finished = false;          // the op's stream drained while the default stream was held
  bool released_in_time = false;  // the hold was released by the test, not by its timeout
};

// Closes the gate, enqueues on `stream`, waits for it, calls read_held() (still under the hold),
// then releases the hold and synchronises the device.
HeldObservation with_default_stream_held(void* stream, const gpu::CapturedGraph::Enqueue& enqueue,
                                         const std::function<void()>& read_held, double wait_seconds = kWaitSeconds) {
  HeldObservation o;
  gpu::DefaultStreamGate gate(kWaitSeconds);
  gate.close();
  o.rc = enqueue(stream, &o.message);
  o.finished = gpu::DefaultStreamGate::wait_for(stream, wait_seconds);
  read_held();
  o.released_in_time = gate.open();
  testkit::check_cuda(cudaDeviceSynchronize(), "synchronising after the hold");
  return o;
}

// "" when the observation shows an op that ran on its own stream only.
std::string held_failure(const HeldObservation& o) {
  if (o.rc != 0) return "the ABI call returned " + std::to_string(o.rc) + ": " + o.message;
  if (!o.released_in_time)
    return "the default-stream hold ran into its timeout: the ABI call (or the op) waited for the legacy default "
           "stream";
  if (!o.finished)
    return "the op did not finish on its stream within " + std::to_string(static_cast<int>(kWaitSeconds)) +
           " s while the legacy default stream was held: it waits for the default stream";
  return {};
}

constexpr const char* kNotOnItsStream =
    "the outputs read while the legacy default stream was held are not the oracle's: the op did not run "
    "(only) on the stream it was given";
constexpr const char* kLeftWork =
    "bytes changed after the legacy default stream was released: the op left work on the default stream";

// The stream-ordered check of one insert, through `abi`. `reference` (the library under test)
// gives the declared rsqrt mode.
::testing::AssertionResult conforms_with_default_stream_held(const testkit::KernelAbi& abi, const InsertCase& c,
                                                             const std::string& name,
                                                             const testkit::DeviceBackend& reference) {
  const InsertOutputs initial = testkit::make_outputs(c);
  testkit::DeviceCaseBuffers resident(c, initial);
  testkit::OwnedStream stream;
  // Warm-up: loads the library's kernels before the hold (see default_stream_gate.h).
  std::string message;
  if (const int rc = resident.enqueue(abi, stream.get(), &message); rc != 0)
    return ::testing::AssertionFailure() << name << ": the ABI call returned " << rc << ": " << message;
  testkit::check_cuda(cudaDeviceSynchronize(), "synchronising after the warm-up call");
  // Back to the canary, so that the held read sees only the next call's writes; then the inputs
  // again (bf16_512 rotates Q in place, in the buffer write_outputs just reset).
  resident.write_outputs(initial);
  resident.write_inputs(c);

  InsertOutputs held;
  const HeldObservation o = with_default_stream_held(
      stream.get(), [&](void* s, std::string* m) { return resident.enqueue(abi, s, m); },
      [&] { held = resident.read_outputs(); });
  if (const std::string why = held_failure(o); !why.empty())
    return ::testing::AssertionFailure() << name << ": " << why;
  if (const auto r = gpu::passes(gpu::judge(reference, c, Status::Ok(), held), name); !r)
    return ::testing::AssertionFailure() << kNotOnItsStream << "\n" << r.message();
  const InsertOutputs after = resident.read_outputs();
  if (const auto r = gpu::identical_runs(c, held, after, "under the hold", "after the release"); !r)
    return ::testing::AssertionFailure() << kLeftWork << "\n" << r.message();
  if (const auto damage = resident.damage(); !damage.empty())
    return ::testing::AssertionFailure() << name << ": guard zones or inputs damaged:\n" << damage_text(damage);
  return ::testing::AssertionSuccess();
}

class DefaultStreamHeldOps : public ::testing::TestWithParam<StreamSpec> {};

TEST_P(DefaultStreamHeldOps, OpOnItsOwnStreamEqualsOracleAndLeavesTheDefaultStreamAlone) {
  KVC_REQUIRE_CUDA_DEVICE();
  const InsertCase c = stream_case(GetParam(), 0);
  testkit::DeviceBackend reference = gpu::make_backend();
  KVC_REQUIRE_SUPPORT(reference, c);
  EXPECT_TRUE(conforms_with_default_stream_held(gpu::kernel_library().abi(), c, GetParam().name(), reference));
}

INSTANTIATE_TEST_SUITE_P(Ops, DefaultStreamHeldOps, ::testing::ValuesIn(held_specs()),
                         [](const ::testing::TestParamInfo<StreamSpec>& p) { return p.param.name(); });

TEST(DefaultStreamHeldKvNorm, StandaloneKvNormOnItsOwnStreamEqualsOracle) {
  KVC_REQUIRE_CUDA_DEVICE();
  testkit::DeviceBackend reference = gpu::make_backend();
  if (const testkit::Support s = reference.supports_kv_norm(); !s.supported) GTEST_SKIP() << s.reason;
  constexpr std::int64_t kRows = 1025;
  testkit::Rng rng(0x4B4Eu);
  const HostTensor kv = make_tensor_from(DType::kBF16, testkit::random_bf16_rows(rng, kRows), {kRows, kHeadDim});
  const HostTensor w = weight_tensor(rng);
  std::vector<std::uint16_t> expected;
  ASSERT_TRUE(oracle::kv_norm(kv, w, kEps, &expected).ok());
  testkit::DeviceKvNormBuffers resident(kv, w, kEps, /*in_place=*/false);
  const std::vector<std::uint16_t> canary = resident.read_out();
  testkit::OwnedStream stream;
  const testkit::KernelAbi& abi = gpu::kernel_library().abi();
  std::string message;
  ASSERT_EQ(resident.enqueue(abi, stream.get(), &message), 0) << message;  // warm-up
  testkit::check_cuda(cudaDeviceSynchronize(), "synchronising after the warm-up call");
  std::vector<std::uint16_t> held;
  {
    // Reset the output rows to the canary so that the held read sees only this call's writes.
    testkit::DeviceKvNormBuffers fresh(kv, w, kEps, false);
    ASSERT_EQ(fresh.read_out(), canary);
    const HeldObservation o = with_default_stream_held(
        stream.get(), [&](void* s, std::string* m) { return fresh.enqueue(abi, s, m); },
        [&] { held = fresh.read_out(); });
    ASSERT_EQ(held_failure(o), "");
    const std::vector<std::uint16_t> after = fresh.read_out();
    EXPECT_EQ(after, held) << kLeftWork;
    const auto damage = fresh.damage();
    EXPECT_TRUE(damage.empty()) << damage_text(damage);
  }
  if (held != expected) {
    const testkit::ApproxRsqrtResult a =
        testkit::compare_kv_norm_under_rsqrt_mode(kv, w, kEps, reference.kv_norm_rsqrt_mode(), expected, held);
    EXPECT_TRUE(a.accepted) << kNotOnItsStream << "\n" << a.report;
  }
}

// ---- two caches, two streams ----

class TwoStreams : public ::testing::TestWithParam<std::int64_t> {};

TEST_P(TwoStreams, ConcurrentCallsOnTwoCachesEachEqualTheOracle) {
  KVC_REQUIRE_CUDA_DEVICE();
  constexpr int kCallsPerStream = 4;
  const StreamSpec a_spec{InsertOp::kKvOnly, RecordFormat::kPacked584, false, GetParam()};
  const StreamSpec b_spec{InsertOp::kLegacy, RecordFormat::kFp8_512, false, GetParam()};
  const InsertCase a = stream_case(a_spec, 0);
  const InsertCase b = stream_case(b_spec, 0);
  testkit::DeviceBackend reference = gpu::make_backend();
  KVC_REQUIRE_SUPPORT(reference, a);
  KVC_REQUIRE_SUPPORT(reference, b);
  testkit::DeviceCaseBuffers resident_a(a, testkit::make_outputs(a));
  testkit::DeviceCaseBuffers resident_b(b, testkit::make_outputs(b));
  testkit::OwnedStream stream_a, stream_b;
  const testkit::KernelAbi& abi = gpu::kernel_library().abi();
  std::string message;
  // Everything is queued before anything is waited for: the two streams run side by side.
  for (int call = 0; call < kCallsPerStream; ++call) {
    ASSERT_EQ(resident_a.enqueue(abi, stream_a.get(), &message), 0) << message;
    ASSERT_EQ(resident_b.enqueue(abi, stream_b.get(), &message), 0) << message;
  }
  stream_a.synchronize();
  stream_b.synchronize();
  EXPECT_TRUE(
      gpu::passes(gpu::judge(reference, a, Status::Ok(), resident_a.read_outputs()), a_spec.name() + " on stream A"));
  EXPECT_TRUE(
      gpu::passes(gpu::judge(reference, b, Status::Ok(), resident_b.read_outputs()), b_spec.name() + " on stream B"));
  EXPECT_TRUE(resident_a.damage().empty()) << damage_text(resident_a.damage());
  EXPECT_TRUE(resident_b.damage().empty()) << damage_text(resident_b.damage());
}

INSTANTIATE_TEST_SUITE_P(Tokens, TwoStreams, ::testing::Values<std::int64_t>(1100, 65536),
                         [](const ::testing::TestParamInfo<std::int64_t>& p) {
                           return "Tokens" + std::to_string(p.param);
                         });

// ---- a graph captured on one stream, replayed on another ----

std::vector<StreamSpec> graph_specs() {
  std::vector<StreamSpec> v;
  for (RecordFormat f : kAllFormats) {
    v.push_back({InsertOp::kKvOnly, f, false, 1100});
    v.push_back({InsertOp::kLegacy, f, false, 1100});
  }
  return v;
}

// Enqueues a captured graph's replay on `stream` and waits for it; puts the outputs in `out`. ""
// when it went as it must, else what went wrong.
using Replay = std::function<std::string(const gpu::CapturedGraph&, void* stream, const InsertCase& c,
                                         testkit::DeviceCaseBuffers&, InsertOutputs* out)>;

// Captures round 0 on one stream, rewrites the inputs to round `round` (new kv and positions;
// not the last round, whose slots are all -1) and replays on another stream through `replay`
// (which enqueues and waits); the outputs equal the oracle's for round `round`.
::testing::AssertionResult replay_on_another_stream_conforms(const StreamSpec& spec, int round, const Replay& replay) {
  testkit::DeviceBackend reference = gpu::make_backend();
  const InsertCase first = stream_case(spec, 0);
  const InsertCase c = stream_case(spec, round);
  InsertOutputs warm_up = testkit::make_outputs(first);  // loads the kernels outside the capture
  if (const Status s = reference.run(first, warm_up); !s.ok())
    return ::testing::AssertionFailure() << spec.name() << ": rejected: " << s.ToString();
  testkit::DeviceCaseBuffers resident(first, testkit::make_outputs(first));
  testkit::OwnedStream capture_stream, replay_stream;
  const testkit::KernelAbi& abi = gpu::kernel_library().abi();
  const gpu::CapturedGraph graph(capture_stream.get(),
                                 [&](void* s, std::string* message) { return resident.enqueue(abi, s, message); });
  if (!graph.ok()) return ::testing::AssertionFailure() << spec.name() << ": capture failed: " << graph.error();
  resident.write_inputs(c);
  InsertOutputs out;
  if (const std::string why = replay(graph, replay_stream.get(), c, resident, &out); !why.empty())
    return ::testing::AssertionFailure() << spec.name() << ": " << why;
  if (const auto damage = resident.damage(); !damage.empty())
    return ::testing::AssertionFailure() << spec.name() << ": guard zones or inputs damaged:\n" << damage_text(damage);
  return gpu::passes(gpu::judge(reference, c, Status::Ok(), std::move(out)),
                     spec.name() + " replayed on another stream");
}

// The graph tests below: skipped without a device or without the library's support for the
// spec's op; otherwise replay_on_another_stream_conforms(spec, 1, replay) must hold.
void expect_replay_on_another_stream_conforms(const StreamSpec& spec, const Replay& replay) {
  KVC_REQUIRE_CUDA_DEVICE();
  testkit::DeviceBackend reference = gpu::make_backend();
  KVC_REQUIRE_SUPPORT(reference, stream_case(spec, 0));
  EXPECT_TRUE(replay_on_another_stream_conforms(spec, 1, replay));
}

// A replay: launch, wait, read the outputs.
std::string replay_and_read(const gpu::CapturedGraph& graph, void* stream, const InsertCase&,
                            testkit::DeviceCaseBuffers& resident, InsertOutputs* out) {
  graph.launch(stream);
  testkit::check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "synchronising the replay");
  *out = resident.read_outputs();
  return std::string();
}

// A replay with the legacy default stream held: a warm-up replay, then the outputs back to the
// canary, then the replay whose writes a read under the hold must see.
std::string replay_with_the_default_stream_held(const gpu::CapturedGraph& graph, void* stream, const InsertCase& c,
                                                testkit::DeviceCaseBuffers& resident, InsertOutputs* out) {
  graph.launch(stream);  // warm-up: the graph's kernels are loaded before the hold
  testkit::check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "synchronising the warm-up");
  // Back to the canary (and the inputs again: bf16_512 rotates Q in place), so that the held
  // read sees only the held replay's writes.
  resident.write_outputs(testkit::make_outputs(c));
  resident.write_inputs(c);
  const HeldObservation o = with_default_stream_held(
      stream,
      [&](void* s, std::string*) {
        graph.launch(s);
        return 0;
      },
      [&] { *out = resident.read_outputs(); });
  if (std::string why = held_failure(o); !why.empty()) return why;
  if (resident.read_outputs().cache != out->cache) return std::string(kLeftWork);
  return std::string();
}

class GraphOnAnotherStream : public ::testing::TestWithParam<StreamSpec> {};

TEST_P(GraphOnAnotherStream, ReplayWithNewInputsEqualsOracle) {
  expect_replay_on_another_stream_conforms(GetParam(), replay_and_read);
}

INSTANTIATE_TEST_SUITE_P(Ops, GraphOnAnotherStream, ::testing::ValuesIn(graph_specs()),
                         [](const ::testing::TestParamInfo<StreamSpec>& p) { return p.param.name(); });

class DefaultStreamHeldGraph : public ::testing::TestWithParam<StreamSpec> {};

TEST_P(DefaultStreamHeldGraph, ReplayOnAnotherStreamWithTheDefaultStreamHeldEqualsOracle) {
  expect_replay_on_another_stream_conforms(GetParam(), replay_with_the_default_stream_held);
}

INSTANTIATE_TEST_SUITE_P(Ops, DefaultStreamHeldGraph, ::testing::ValuesIn(graph_specs()),
                         [](const ::testing::TestParamInfo<StreamSpec>& p) { return p.param.name(); });

// ---- the check itself ----

TEST(DefaultStreamHeldGate, HoldsAMemsetOnTheLegacyStreamAndReleasesIt) {
  KVC_REQUIRE_CUDA_DEVICE();
  void* p = nullptr;
  testkit::check_cuda(cudaMalloc(&p, 256), "cudaMalloc");
  testkit::check_cuda(cudaMemset(p, 0x11, 256), "cudaMemset");
  testkit::check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  testkit::OwnedStream reader;
  unsigned char* host = nullptr;
  testkit::check_cuda(cudaHostAlloc(reinterpret_cast<void**>(&host), 256, cudaHostAllocDefault), "cudaHostAlloc");
  auto first_byte = [&] {
    testkit::check_cuda(cudaMemcpyAsync(host, p, 256, cudaMemcpyDeviceToHost, static_cast<cudaStream_t>(reader.get())),
                        "cudaMemcpyAsync");
    reader.synchronize();
    return host[0];
  };
  const HeldObservation o = with_default_stream_held(
      cudaStreamLegacy,
      [&](void* s, std::string*) {
        return static_cast<int>(cudaMemsetAsync(p, 0x22, 256, static_cast<cudaStream_t>(s)));
      },
      [&] { EXPECT_EQ(first_byte(), 0x11) << "the memset on the legacy default stream ran while the gate was closed"; },
      /*wait_seconds=*/1.0);
  EXPECT_EQ(o.rc, 0);
  EXPECT_TRUE(o.released_in_time);
  EXPECT_FALSE(o.finished) << "the legacy default stream drained while it was held";
  EXPECT_EQ(first_byte(), 0x22) << "the memset did not run after the gate opened";
  cudaFreeHost(host);
  cudaFree(p);
}

void expect_caught(gpu::WrongStream which) {
  const StreamSpec spec{InsertOp::kKvOnly, RecordFormat::kPacked584, false, 1025};
  const InsertCase c = stream_case(spec, 0);
  testkit::DeviceBackend reference = gpu::make_backend();
  KVC_REQUIRE_SUPPORT(reference, c);
  const testkit::KernelAbi abi = gpu::wrong_stream_abi(gpu::kernel_library().abi(), which);
  const ::testing::AssertionResult r = conforms_with_default_stream_held(abi, c, spec.name(), reference);
  ASSERT_FALSE(r) << "an op launched on " << gpu::wrong_stream_name(which) << " passed the default-stream check";
  const std::string message = r.message();
  EXPECT_NE(message.find(kNotOnItsStream), std::string::npos) << message;
  std::printf("an op launched on %s is caught:\n%s\n", gpu::wrong_stream_name(which), message.substr(0, 600).c_str());
}

TEST(DefaultStreamHeldPlanted, OpOnTheLegacyDefaultStreamIsCaught) {
  KVC_REQUIRE_CUDA_DEVICE();
  expect_caught(gpu::WrongStream::kLegacyDefault);
}

TEST(DefaultStreamHeldPlanted, OpOnThePerThreadDefaultStreamIsCaught) {
  KVC_REQUIRE_CUDA_DEVICE();
  expect_caught(gpu::WrongStream::kPerThreadDefault);
}

}  // namespace
}  // namespace kvc
