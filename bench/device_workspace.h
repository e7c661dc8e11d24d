// device_workspace.h: one token count's inputs on the device, uploaded once, untimed.
//
// The benchmarks are registered size by size, so every format, op, mode and library of one token
// count shares one upload: the kv rows, slots, positions and cos/sin table (the same for every
// format), a cache per format (allocated on first use), and the legacy op's query buffers (one
// (format, heads) pair at a time: at 262144 tokens and 128 heads they are 32 GiB each).
#pragma once

#include <cstdint>
#include <map>
#include <utility>

#include "bench_cases.h"
#include "device_memory.h"

namespace kvc::bench {

class DeviceWorkspace {
 public:
  DeviceWorkspace(std::uint64_t seed, bool padded_pages) : seed_(seed), padded_pages_(padded_pages) {}

  // Makes `tokens` current: builds the host inputs and uploads them, freeing the previous size.
  void use_tokens(std::int64_t tokens);
  std::int64_t tokens() const { return inputs_.tokens; }

  // The host description of the current size's cases: KV-only ones built once per format, the
  // legacy one kept for the last (format, heads) asked (its rows run one after the other).
  const InsertCase& kv_only_case(RecordFormat f, bool fused_kv_norm);
  const InsertCase& legacy_case(RecordFormat f, std::int64_t heads);

  void* kv() const { return kv_.data(); }
  void* slots() const { return slots_.data(); }
  void* positions() const { return positions_.data(); }
  void* cos_sin() const { return cos_sin_.data(); }
  void* fp8_scale() const { return fp8_scale_.data(); }
  void* q_scale_inv() const { return q_scale_inv_.data(); }
  void* kv_norm_weight() const { return kv_norm_weight_.data(); }
  void* normed_kv();  // output of the standalone kv_norm, allocated on first use

  // The cache of format `f` (whole backing, padding included), canary-filled on first use.
  void* cache(RecordFormat f);

  // q and q_out for the legacy case of (f, heads), replacing the previous pair: q random N(0,1)
  // (a repeated random tile), q_out zeroed; for bf16_512 q_out is q itself.
  struct Query {
    void* q = nullptr;
    void* q_out = nullptr;
  };
  Query query(RecordFormat f, std::int64_t heads);

 private:
  std::uint64_t seed_;
  bool padded_pages_;
  BenchInputs inputs_;
  std::map<std::pair<RecordFormat, bool>, InsertCase> cases_;
  std::pair<RecordFormat, std::int64_t> legacy_key_{RecordFormat::kPacked584, -1};
  InsertCase legacy_;
  DeviceAllocation kv_, slots_, positions_, cos_sin_, fp8_scale_, q_scale_inv_, kv_norm_weight_, normed_kv_;
  std::map<RecordFormat, DeviceAllocation> caches_;
  std::pair<RecordFormat, std::int64_t> query_key_{RecordFormat::kPacked584, -1};
  DeviceAllocation q_, q_out_;
};

}  // namespace kvc::bench
