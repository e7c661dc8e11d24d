// stacked_ctx_kv_benchmarks.cpp: the stacked context-KV projection, stacked against per-layer, on
// the device (docs/contract.md §4.5).
//
// The claim under test: one GEMM over every layer's KV rows and one epilogue launch beat L GEMMs
// and L epilogues. Rows, for each GEMM (exact: the exact-order CUDA-core GEMM; cublas: cuBLASLt),
// L in {1, 2, 4, 8} and T in {1, 16, 256, 4096}, the per-layer path then the stacked path:
//   gpu/stacked_ctx_kv/<exact|cublas>/layers:<L>/tokens:<T>/<per_layer|stacked>
// The model is a Llama-class draft layer (hidden 4096, 32 Q heads, 8 KV heads of 128 dims, bf16,
// no bias), one copy on the device for all rows (the first L layers, the first T tokens), with the
// stacked weight built once from the layers' KV rows, as a model caches it. Every token is written
// (cache_loc = t), and the projection goes to a buffer of the model's. Timing: gpu_timer.h's hot
// mode (runs back to back behind a launch gate, so host launch cost is not device time), 20 runs
// after 3 warm-up runs; quote the median.
// Counters: layers, tokens, median_us, min_us, max_us, launches (kernels per call: 2 stacked,
// 2 L per-layer), and on stacked rows speedup = per-layer median / stacked median.
// The library is KVC_KERNELS when set, else ours; without a device every row is skipped with the
// reason. Registered at program start (Google Benchmark's static registration).
#include <benchmark/benchmark.h>

#include <cuda_runtime_api.h>

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "device_memory.h"
#include "gpu_timer.h"
#include "kvc/kernel_abi.h"
#include "kvc/oracle/cos_sin_cache.h"
#include "testkit/device/device_buffers.h"
#include "testkit/device/device_tensor.h"
#include "testkit/device/kernel_library.h"
#include "stacked_ctx_kv_benchmarks.h"

namespace kvc::bench {
namespace {

constexpr int kLayers[] = {1, 2, 4, 8};
constexpr std::int64_t kTokens[] = {1, 16, 256, 4096};
constexpr int kMaxLayers = 8;
constexpr std::int64_t kMaxTokens = 4096;
constexpr std::int64_t kHidden = 4096;
constexpr std::int64_t kQHeads = 32;
constexpr std::int64_t kKvHeads = 8;
constexpr std::int64_t kHeadDim = 128;
constexpr std::int64_t kQSize = kQHeads * kHeadDim;
constexpr std::int64_t kKvRows = 2 * kKvHeads * kHeadDim;
constexpr std::int64_t kQkvRows = kQSize + kKvRows;
constexpr std::int64_t kMaxPos = kMaxTokens;
constexpr double kMicro = 1e6;
// 20 timed runs (the minimum the benchmarks quote) after 3 warm-up runs: a per-layer run of 8
// layers enqueues up to ~30 operations (cuBLAS may launch two kernels per GEMM), and all timed
// runs must fit in the device's launch queue before the gate opens (gpu_timer.h).
constexpr TimingPlan kPlan{3, 20, 1};

void check(cudaError_t e, const char* what) { testkit::check_cuda(static_cast<int>(e), what); }

// The whole benchmark model on the device, made once.
class Model {
 public:
  Model() {
    const std::int64_t weight_bytes = kQkvRows * kHidden * 2;
    const std::int64_t pool_bytes = kMaxTokens * kKvHeads * kHeadDim * 2;
    require_free_device_memory(
        kMaxLayers * (weight_bytes + 2 * pool_bytes) + kMaxLayers * kKvRows * kHidden * 2 + kMaxTokens * kHidden * 2,
        "the stacked context-KV benchmark model");
    x_ = DeviceAllocation("x", kMaxTokens * kHidden * 2);
    check(fill_uniform16(x_.data(), kMaxTokens * kHidden, false, 1, nullptr), "filling x");
    stacked_ = DeviceAllocation("stacked_weight", kMaxLayers * kKvRows * kHidden * 2);
    projection_ = DeviceAllocation("projection", kMaxTokens * kMaxLayers * kKvRows * 2);
    for (int l = 0; l < kMaxLayers; ++l) {
      weights_.emplace_back("qkv_weight", weight_bytes);
      check(fill_uniform16(weights_.back().data(), kQkvRows * kHidden, false, 100 + static_cast<std::uint64_t>(l),
                           nullptr),
            "filling a QKV weight");
      // The stacked weight: the layers' KV rows, concatenated (layer-major: a prefix is L layers).
      check(cudaMemcpy(static_cast<char*>(stacked_.data()) + l * kKvRows * kHidden * 2,
                       static_cast<char*>(weights_.back().data()) + kQSize * kHidden * 2, kKvRows * kHidden * 2,
                       cudaMemcpyDeviceToDevice),
            "building the stacked weight");
      norms_.emplace_back("k_norm_weight", kHeadDim * 2);
      check(fill_uniform16(norms_.back().data(), kHeadDim, false, 200 + static_cast<std::uint64_t>(l), nullptr),
            "filling a K-norm weight");
      k_pools_.emplace_back("k_pool", pool_bytes);
      v_pools_.emplace_back("v_pool", pool_bytes);
    }
    const std::vector<float> table = oracle::make_cos_sin_cache(kMaxPos, static_cast<int>(kHeadDim));
    cos_sin_ = DeviceAllocation("cos_sin", kMaxPos * kHeadDim * 4);
    cos_sin_.upload(table.data(), cos_sin_.bytes());
    std::vector<std::int64_t> index(static_cast<std::size_t>(kMaxTokens));
    for (std::int64_t t = 0; t < kMaxTokens; ++t) index[static_cast<std::size_t>(t)] = t;
    positions_ = DeviceAllocation("positions", kMaxTokens * 8);
    positions_.upload(index.data(), positions_.bytes());
    cache_loc_ = DeviceAllocation("cache_loc", kMaxTokens * 8);
    cache_loc_.upload(index.data(), cache_loc_.bytes());
    check(cudaDeviceSynchronize(), "making the benchmark model");
  }

  // The ABI arguments of one call over the first `layers` layers and `tokens` tokens.
  struct Call {
    std::deque<testkit::DeviceTensor> tensors;  // stable addresses: the args point into it
    std::vector<kvc_stacked_ctx_kv_layer> layers;
    kvc_stacked_ctx_kv_args args{};
  };
  std::unique_ptr<Call> call(int layers, std::int64_t tokens, int path, int gemm) {
    auto c = std::make_unique<Call>();
    const int device = testkit::current_device();
    auto tensor = [&](const TensorMeta& m, void* base) -> const DLTensor* {
      return c->tensors.emplace_back(base, m, device).dl();
    };
    const DType bf16 = DType::kBF16;
    c->args.struct_size = sizeof c->args;
    c->args.layer_struct_size = sizeof(kvc_stacked_ctx_kv_layer);
    c->args.x = tensor(contiguous_meta(bf16, {tokens, kHidden}), x_.data());
    c->args.positions = tensor(contiguous_meta(DType::kI64, {tokens}), positions_.data());
    c->args.cache_loc = tensor(contiguous_meta(DType::kI64, {tokens}), cache_loc_.data());
    const DLTensor* table = tensor(contiguous_meta(DType::kF32, {kMaxPos, kHeadDim}), cos_sin_.data());
    for (int l = 0; l < layers; ++l) {
      kvc_stacked_ctx_kv_layer a{};
      a.qkv_weight = tensor(contiguous_meta(bf16, {kQkvRows, kHidden}), weights_[static_cast<std::size_t>(l)].data());
      a.k_norm_weight = tensor(contiguous_meta(bf16, {kHeadDim}), norms_[static_cast<std::size_t>(l)].data());
      a.cos_sin_cache = table;  // one rotary table for every layer, as the model shares it
      a.k_pool =
          tensor(contiguous_meta(bf16, {kMaxTokens, kKvHeads, kHeadDim}), k_pools_[static_cast<std::size_t>(l)].data());
      a.v_pool =
          tensor(contiguous_meta(bf16, {kMaxTokens, kKvHeads, kHeadDim}), v_pools_[static_cast<std::size_t>(l)].data());
      a.q_size = kQSize;
      a.num_kv_heads = kKvHeads;
      a.head_dim = kHeadDim;
      a.eps = 1e-6f;
      c->layers.push_back(a);
    }
    c->args.layers = c->layers.data();
    c->args.num_layers = layers;
    c->args.path = path;
    c->args.gemm = gemm;
    c->args.stacked_weight = tensor(contiguous_meta(bf16, {layers * kKvRows, kHidden}), stacked_.data());
    // The projection in a buffer of the model's: no stream-ordered allocation inside the timed call.
    c->args.projection = tensor(contiguous_meta(bf16, {tokens, layers * kKvRows}), projection_.data());
    return c;
  }

 private:
  DeviceAllocation x_, stacked_, projection_, cos_sin_, positions_, cache_loc_;
  std::vector<DeviceAllocation> weights_, norms_, k_pools_, v_pools_;
};

// Device state shared by the rows, made when the first row runs (a machine without a GPU only
// reports every row as skipped).
class Session {
 public:
  void run(benchmark::State& state, int layers, std::int64_t tokens, bool stacked, bool cublas) {
    std::vector<double> seconds;
    std::int32_t path_taken = -1;
    try {
      const std::string unavailable = testkit::cuda_device_unavailable();
      if (!unavailable.empty()) throw std::runtime_error(unavailable);
      if (!library_) library_ = std::make_unique<testkit::KernelLibrary>(testkit::KernelLibrary::from_environment());
      const auto entry = library_->abi().kvc_stacked_ctx_kv;
      if (entry == nullptr) throw std::runtime_error(library_->describe() + " does not export kvc_stacked_ctx_kv");
      if (!timer_) timer_ = std::make_unique<GpuTimer>();
      if (!model_) model_ = std::make_unique<Model>();
      auto call = model_->call(layers, tokens, stacked ? KVC_STACKED_PATH_STACKED : KVC_STACKED_PATH_PER_LAYER,
                               cublas ? KVC_GEMM_ANY_ORDER : KVC_GEMM_EXACT_ORDER);
      call->args.path_taken = &path_taken;
      seconds = timer_->time(TimingMode::kHot, kPlan, [&](void* stream) {
        char error[512] = {0};
        const int rc = entry(&call->args, stream, error, sizeof error);
        if (rc != KVC_STATUS_OK)
          throw std::runtime_error("kvc_stacked_ctx_kv returned " + std::to_string(rc) + ": " + error);
      });
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      return;
    }
    const RunStats stats = summarize(seconds);
    state.SetLabel(library_->name() + (path_taken == KVC_STACKED_PATH_STACKED ? ", stacked" : ", per-layer"));
    state.counters["layers"] = layers;
    state.counters["tokens"] = static_cast<double>(tokens);
    state.counters["median_us"] = stats.median * kMicro;
    state.counters["min_us"] = stats.min * kMicro;
    state.counters["max_us"] = stats.max * kMicro;
    state.counters["launches"] = stacked ? 2 : 2 * layers;
    const std::string key = std::to_string(cublas) + "/" + std::to_string(layers) + "/" + std::to_string(tokens);
    if (!stacked) {
      per_layer_median_[key] = stats.median;
    } else if (auto it = per_layer_median_.find(key); it != per_layer_median_.end() && stats.median > 0) {
      state.counters["speedup"] = it->second / stats.median;
    }
    std::size_t i = 0;
    for (auto _ : state) state.SetIterationTime(seconds[i++ % seconds.size()]);
  }

 private:
  std::unique_ptr<testkit::KernelLibrary> library_;
  std::unique_ptr<GpuTimer> timer_;
  std::unique_ptr<Model> model_;
  std::map<std::string, double> per_layer_median_;
};

// Per GEMM, per L, per T: the per-layer row, then the stacked row (which divides by it).
[[maybe_unused]] const bool kRegistered = [] {
  auto session = std::make_shared<Session>();
  for (const bool cublas : {false, true}) {
    for (int layers : kLayers) {
      for (std::int64_t tokens : kTokens) {
        for (const bool stacked : {false, true}) {
          const std::string name = std::string("gpu/stacked_ctx_kv/") + (cublas ? "cublas" : "exact") +
                                   "/layers:" + std::to_string(layers) + "/tokens:" + std::to_string(tokens) + "/" +
                                   (stacked ? "stacked" : "per_layer");
          benchmark::RegisterBenchmark(name.c_str(),
                                       [session, layers, tokens, stacked, cublas](benchmark::State& state) {
                                         session->run(state, layers, tokens, stacked, cublas);
                                       })
              ->UseManualTime()
              ->Iterations(kPlan.runs)
              ->Unit(benchmark::kMicrosecond);
        }
      }
    }
  }
  return true;
}();

}  // namespace
}  // namespace kvc::bench
