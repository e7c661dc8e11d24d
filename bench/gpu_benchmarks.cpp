// gpu_benchmarks.cpp: GPU case registration, measurement and the side-by-side summary
// (see gpu_benchmarks.h).
#include "gpu_benchmarks.h"

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "bytes_moved.h"
#include "copy_roofline.h"
#include "device_workspace.h"
#include "gpu_timer.h"
#include "testkit/device/device_buffers.h"
#include "op_launchers.h"

namespace kvc::bench {
namespace {

enum class OpKind : std::uint8_t { kCopy, kKvOnly, kLegacy, kKvNormFused, kKvNormUnfused };

const char* op_name(OpKind op) {
  switch (op) {
    case OpKind::kCopy: return "copy";
    case OpKind::kKvOnly: return "kv_only";
    case OpKind::kLegacy: return "legacy";
    case OpKind::kKvNormFused: return "kv_norm_fused";
    case OpKind::kKvNormUnfused: return "kv_norm_unfused";
  }
  return "?";
}

struct GpuCase {
  OpKind op = OpKind::kKvOnly;
  RecordFormat format = RecordFormat::kPacked584;
  std::int64_t heads = 0;  // legacy only
  std::int64_t tokens = 0;
  TimingMode mode = TimingMode::kCold;

  GpuCase with(OpKind o) const {
    GpuCase c = *this;
    c.op = o;
    c.heads = 0;
    return c;
  }
  // "legacy/packed584/hp:8/tokens:512/cold": the row name without the library suffix.
  std::string id() const {
    std::string s = std::string(op_name(op)) + "/" + std::string(layout_of(format).name);
    if (op == OpKind::kLegacy) s += "/hp:" + std::to_string(heads);
    return s + "/tokens:" + std::to_string(tokens) + "/" + std::string(mode_name(mode));
  }
};

// A case the library does not implement: reported as skipped with the library's reason.
class Unsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

constexpr double kMicro = 1e6;
constexpr double kGiga = 1e9;

}  // namespace

class GpuSession {
 public:
  struct SummaryRow {
    std::string id;
    std::size_t library = 0;  // index into libraries(); copy rows: 0
    RunStats stats;
    double gbps = 0;
    std::optional<double> copy_ratio;
    std::string relation;  // "kv_only_speedup 1.84" and the like
    std::string error;
  };

  GpuSession(BenchConfig config, std::vector<testkit::KernelLibrary> libraries)
      : config_(std::move(config)), libraries_(std::move(libraries)) {
    for (const testkit::KernelLibrary& l : libraries_) declared_.emplace_back(l);
  }

  const std::vector<testkit::KernelLibrary>& libraries() const { return libraries_; }
  const std::vector<SummaryRow>& rows() const { return rows_; }

  void run(benchmark::State& state, const GpuCase& c, std::size_t library) {
    SummaryRow row;
    row.id = c.id();
    row.library = library;
    state.SetLabel(c.op == OpKind::kCopy ? std::string("cudaMemcpyAsync") : libraries_[library].name());
    std::vector<double> seconds;
    try {
      const std::string unavailable = testkit::cuda_device_unavailable();
      if (!unavailable.empty()) throw std::runtime_error(unavailable);
      seconds = measure(state, c, library, row);
    } catch (const std::exception& e) {
      row.error = e.what();
      rows_.push_back(row);
      state.SkipWithError(row.error.c_str());
      return;
    }
    rows_.push_back(row);
    std::size_t i = 0;
    for (auto _ : state) state.SetIterationTime(seconds[i++ % seconds.size()]);
  }

 private:
  void ensure_device() {
    if (!timer_) {
      timer_ = std::make_unique<GpuTimer>();
      workspace_ = std::make_unique<DeviceWorkspace>(config_.seed, !config_.dense_pages);
    }
  }

  std::optional<double> median_of(const std::string& id, std::size_t library) const {
    auto it = medians_.find(id + "#" + std::to_string(library));
    if (it == medians_.end()) return std::nullopt;
    return it->second;
  }

  void require_support(const testkit::DeclaredSupport& declared, kvc_op op, RecordFormat f) {
    const std::string why = unsupported_reason(declared, op, f);
    if (!why.empty()) throw Unsupported(why);
  }

  BytesMoved bytes_of(const GpuCase& c) {
    DeviceWorkspace& ws = *workspace_;
    switch (c.op) {
      case OpKind::kCopy:
      case OpKind::kKvOnly: return insert_bytes_moved(ws.kv_only_case(c.format, false));
      case OpKind::kLegacy: return insert_bytes_moved(ws.legacy_case(c.format, c.heads));
      case OpKind::kKvNormFused: return insert_bytes_moved(ws.kv_only_case(c.format, true));
      case OpKind::kKvNormUnfused:
        return kv_norm_bytes_moved(c.tokens) + insert_bytes_moved(ws.kv_only_case(c.format, false));
    }
    return {};
  }

  void require_support(const GpuCase& c, const testkit::DeclaredSupport& declared) {
    switch (c.op) {
      case OpKind::kCopy: return;
      case OpKind::kKvOnly: return require_support(declared, KVC_OP_KV_ONLY_INSERT, c.format);
      case OpKind::kKvNormFused: return require_support(declared, KVC_OP_KV_ONLY_INSERT_KV_NORM, c.format);
      case OpKind::kLegacy: return require_support(declared, KVC_OP_LEGACY_INSERT, c.format);
      case OpKind::kKvNormUnfused:
        require_support(declared, KVC_OP_KV_NORM, c.format);
        return require_support(declared, KVC_OP_KV_ONLY_INSERT, c.format);
    }
  }

  Launch launch_of(const GpuCase& c, const testkit::KernelAbi& abi) {
    DeviceWorkspace& ws = *workspace_;
    switch (c.op) {
      case OpKind::kKvOnly: return kv_only_launch(abi, ws, c.format, false);
      case OpKind::kLegacy: return legacy_launch(abi, ws, c.format, c.heads);
      case OpKind::kKvNormFused: return kv_only_launch(abi, ws, c.format, true);
      case OpKind::kKvNormUnfused: return unfused_kv_norm_insert_launch(abi, ws, c.format);
      case OpKind::kCopy: break;
    }
    throw std::logic_error("no launch for a copy case");
  }

  std::vector<double> measure(benchmark::State& state, const GpuCase& c, std::size_t library, SummaryRow& row) {
    require_support(c, declared_[library]);
    ensure_device();
    workspace_->use_tokens(c.tokens);
    const BytesMoved bytes = bytes_of(c);
    state.counters["tokens"] = static_cast<double>(c.tokens);
    state.counters["bytes"] = static_cast<double>(bytes.total());

    // The copy first: for the largest legacy cases its buffers and the query's do not fit together.
    std::optional<CopyTiming> copy;
    std::string copy_error;
    try {
      copy = copies_.timing(*timer_, config_.plan, bytes.total(), c.mode);
    } catch (const std::exception& e) {
      if (c.op == OpKind::kCopy) throw;
      copy_error = e.what();
    }

    std::vector<double> seconds;
    if (c.op == OpKind::kCopy) {
      seconds = copy->seconds;
    } else {
      const Launch launch = launch_of(c, libraries_[library].abi());
      seconds = timer_->time(c.mode, config_.plan, launch);
    }
    row.stats = summarize(seconds);
    const double median = row.stats.median;
    row.gbps = static_cast<double>(bytes.total()) / median / kGiga;
    medians_[c.id() + "#" + std::to_string(library)] = median;

    state.counters["median_us"] = median * kMicro;
    state.counters["min_us"] = row.stats.min * kMicro;
    state.counters["max_us"] = row.stats.max * kMicro;
    state.counters["GBps"] = row.gbps;
    if (c.mode == TimingMode::kGraph) state.counters["graph_calls"] = config_.plan.graph_calls;
    if (copy && c.op != OpKind::kCopy) {
      row.copy_ratio = copy->stats.median / median;
      state.counters["copy_us"] = copy->stats.median * kMicro;
      state.counters["copy_ratio"] = *row.copy_ratio;
    } else if (!copy_error.empty()) {
      row.relation = "no copy roofline: " + copy_error;
    }
    auto relate = [&](const char* counter, const std::string& other_id, std::size_t other_library,
                      bool ours_over_other) {
      const std::optional<double> other = median_of(other_id, other_library);
      if (!other) return;
      const double ratio = ours_over_other ? median / *other : *other / median;
      state.counters[counter] = ratio;
      char text[96];
      std::snprintf(text, sizeof text, "%s %.3f", counter, ratio);
      row.relation = text;
    };
    if (c.op == OpKind::kLegacy) relate("kv_only_speedup", c.with(OpKind::kKvOnly).id(), library, true);
    if (c.op == OpKind::kKvNormUnfused) relate("fused_speedup", c.with(OpKind::kKvNormFused).id(), library, true);
    if (library > 0 && c.op != OpKind::kCopy) relate("vs_kernels", c.id(), 0, true);
    return seconds;
  }

  BenchConfig config_;
  std::vector<testkit::KernelLibrary> libraries_;
  std::vector<testkit::DeclaredSupport> declared_;  // one per library, what it declares read once
  std::unique_ptr<GpuTimer> timer_;
  std::unique_ptr<DeviceWorkspace> workspace_;
  CopyRoofline copies_;
  std::map<std::string, double> medians_;  // "<id>#<library>" -> median seconds
  std::vector<SummaryRow> rows_;
};

std::string device_description() {
  const std::string unavailable = testkit::cuda_device_unavailable();
  if (!unavailable.empty()) return unavailable;
  int device = 0, driver = 0, runtime = 0;
  cudaDeviceProp p{};
  testkit::check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  testkit::check_cuda(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  char s[512];  // the name is up to 256 characters
  std::snprintf(s, sizeof s, "%s, %d SMs, L2 %.1f MiB, %.1f GiB, driver %d.%d, runtime %d.%d", p.name,
                p.multiProcessorCount, p.l2CacheSize / 1048576.0, static_cast<double>(p.totalGlobalMem) / 1073741824.0,
                driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
  return s;
}

std::shared_ptr<GpuSession> register_gpu_benchmarks(const BenchConfig& config,
                                                    const std::vector<testkit::KernelLibrary>& libraries) {
  auto session = std::make_shared<GpuSession>(config, libraries);
  auto add = [&](const GpuCase& c, std::size_t library) {
    std::string name = "gpu/" + c.id();
    if (library > 0) name += "/against";
    benchmark::RegisterBenchmark(name.c_str(),
                                 [session, c, library](benchmark::State& state) { session->run(state, c, library); })
        ->UseManualTime()
        ->Iterations(config.plan.runs)
        ->Unit(benchmark::kMicrosecond);
  };
  auto add_all_libraries = [&](const GpuCase& c) {
    for (std::size_t l = 0; l < libraries.size(); ++l) add(c, l);
  };
  // Size outermost: every case of one token count runs on one upload. Within a format, the modes
  // of one op are adjacent (one query allocation serves a legacy case's cold, hot and graph rows),
  // and the KV-only and fused rows come before the legacy and unfused rows that are divided by them.
  const std::vector<TimingMode> all_modes = {TimingMode::kCold, TimingMode::kHot, TimingMode::kGraph};
  for (std::int64_t tokens : config.tokens) {
    for (RecordFormat f : config.formats) {
      auto add_modes = [&](GpuCase c, bool graph_too, bool all_libraries) {
        for (TimingMode mode : all_modes) {
          if (mode == TimingMode::kGraph && (!graph_too || tokens > kGraphMaxTokens)) continue;
          c.mode = mode;
          if (all_libraries)
            add_all_libraries(c);
          else
            add(c, 0);
        }
      };
      GpuCase c;
      c.format = f;
      c.tokens = tokens;
      add_modes(c.with(OpKind::kCopy), true, false);
      add_modes(c.with(OpKind::kKvOnly), true, true);
      for (std::size_t h = 0; h < config.heads.size(); ++h) {
        GpuCase legacy = c.with(OpKind::kLegacy);
        legacy.heads = config.heads[h];
        add_modes(legacy, h == 0, true);  // graph replay: the first head count only
      }
      add_modes(c.with(OpKind::kKvNormFused), false, true);
      add_modes(c.with(OpKind::kKvNormUnfused), false, true);
    }
  }
  return session;
}

void print_gpu_summary(const GpuSession& session, std::ostream& out) {
  const auto& rows = session.rows();
  if (rows.empty()) return;
  bool all_failed_alike = true;
  for (const auto& r : rows) all_failed_alike = all_failed_alike && !r.error.empty() && r.error == rows.front().error;
  if (all_failed_alike) {
    out << "\nGPU summary: all " << rows.size() << " GPU cases skipped: " << rows.front().error << "\n";
    return;
  }
  const auto& libs = session.libraries();
  const bool against = libs.size() > 1;
  out << "\nGPU summary (median us per call [min, max]; copy_ratio = copy time / op time)\n";
  out << "  kernels: " << libs[0].describe() << "\n";
  if (against) out << "  against: " << libs[1].describe() << "\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-52s %-28s %9s %7s", "case", "kernels", "GB/s", "copy");
  out << line << (against ? "  against                        vs_kernels" : "") << "  note\n";
  auto cell = [](const GpuSession::SummaryRow* r) {
    char s[64];
    if (r == nullptr) return std::string("-");
    if (!r->error.empty()) return std::string("skipped");
    std::snprintf(s, sizeof s, "%.2f [%.2f, %.2f]", r->stats.median * kMicro, r->stats.min * kMicro,
                  r->stats.max * kMicro);
    return std::string(s);
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const GpuSession::SummaryRow& a = rows[i];
    if (a.library != 0) continue;
    const GpuSession::SummaryRow* b = nullptr;
    if (i + 1 < rows.size() && rows[i + 1].library == 1 && rows[i + 1].id == a.id) b = &rows[i + 1];
    char gbps[32] = "-", copy[32] = "-";
    if (a.error.empty()) std::snprintf(gbps, sizeof gbps, "%.1f", a.gbps);
    if (a.copy_ratio) std::snprintf(copy, sizeof copy, "%.3f", *a.copy_ratio);
    std::snprintf(line, sizeof line, "%-52s %-28s %9s %7s", a.id.c_str(), cell(&a).c_str(), gbps, copy);
    out << line;
    if (against) {
      char ratio[32] = "-";
      if (b != nullptr && b->error.empty() && a.error.empty())
        std::snprintf(ratio, sizeof ratio, "%.3f", b->stats.median / a.stats.median);
      std::snprintf(line, sizeof line, "  %-30s %10s", cell(b).c_str(), ratio);
      out << line;
    }
    std::string note = a.error.empty() ? a.relation : a.error;
    if (note.size() > 100) note = note.substr(0, 97) + "...";
    out << "  " << note << "\n";
  }
}

}  // namespace kvc::bench
