// exhaustive_sweep.cpp: threaded u32 sweeps (see exhaustive_sweep.h).
#include "testkit/compare/exhaustive_sweep.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

#include "kvc/oracle/float_bits.h"

namespace kvc::testkit {

SweepResult sweep_u32(std::uint32_t begin, std::uint32_t end, const std::function<bool(std::uint32_t)>& matches) {
  const auto start = std::chrono::steady_clock::now();
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const std::uint64_t total = static_cast<std::uint64_t>(end) - begin + 1;
  constexpr std::uint64_t kChunk = 1u << 20;
  SweepResult result;
  result.checked = total;
  std::mutex mutex;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::uint64_t local_mismatches = 0;
      std::vector<std::uint32_t> local_first;
      for (std::uint64_t chunk = t * kChunk; chunk < total; chunk += threads * kChunk) {
        const std::uint64_t stop = std::min(total, chunk + kChunk);
        for (std::uint64_t i = chunk; i < stop; ++i) {
          const auto u = static_cast<std::uint32_t>(begin + i);
          if (matches(u)) continue;
          ++local_mismatches;
          if (local_first.size() < SweepResult::kKeptMismatches) local_first.push_back(u);
        }
      }
      std::lock_guard<std::mutex> lock(mutex);
      result.mismatches += local_mismatches;
      result.first_mismatches.insert(result.first_mismatches.end(), local_first.begin(), local_first.end());
    });
  }
  for (auto& th : pool) th.join();
  std::sort(result.first_mismatches.begin(), result.first_mismatches.end());
  if (result.first_mismatches.size() > SweepResult::kKeptMismatches)
    result.first_mismatches.resize(SweepResult::kKeptMismatches);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

std::string describe(const std::string& what, const SweepResult& r) {
  char line[256];
  std::snprintf(line, sizeof line, "%s: %llu inputs, %llu mismatches, %.1f s wall", what.c_str(),
                static_cast<unsigned long long>(r.checked), static_cast<unsigned long long>(r.mismatches), r.seconds);
  std::string out = line;
  for (std::uint32_t u : r.first_mismatches) {
    std::snprintf(line, sizeof line, "\n  first mismatch input 0x%08x", u);
    out += line;
  }
  return out;
}

SweepResult sweep_every_float(const std::string& what, const std::function<bool(float)>& matches) {
  const SweepResult r = sweep_u32(0, 0xFFFFFFFFu, [&](std::uint32_t u) { return matches(oracle::float_of(u)); });
  std::printf("%s\n", describe(what, r).c_str());
  return r;
}

}  // namespace kvc::testkit
