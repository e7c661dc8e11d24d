// device_workspace.cpp: uploads of one token count (see device_workspace.h).
#include "device_workspace.h"

#include <cstring>

#include "testkit/backends/backing.h"

namespace kvc::bench {
namespace {

// Rows of the random query tile that fills q: enough that neighbouring heads and tokens differ,
// small enough to generate instantly. The op's cost does not depend on the values repeating.
constexpr std::int64_t kQueryTileRows = 256;

template <typename T>
void upload_vector(DeviceAllocation& a, const std::vector<T>& v) {
  a.upload(v.data(), static_cast<std::int64_t>(v.size() * sizeof(T)));
}

std::int64_t meta_bytes(const TensorMeta& m) { return m.numel() * dtype_size(m.dtype); }

}  // namespace

void DeviceWorkspace::use_tokens(std::int64_t tokens) {
  if (tokens == inputs_.tokens && !kv_.empty()) return;
  // Free the previous size first: its buffers and this size's must not have to fit together.
  cases_.clear();
  legacy_key_ = {RecordFormat::kPacked584, -1};
  legacy_ = InsertCase();
  caches_.clear();
  q_ = DeviceAllocation();
  q_out_ = DeviceAllocation();
  query_key_ = {RecordFormat::kPacked584, -1};
  normed_kv_ = DeviceAllocation();
  kv_ = DeviceAllocation();
  inputs_ = BenchInputs();

  inputs_ = make_bench_inputs(tokens, seed_);
  const InsertCase& base = kv_only_case(RecordFormat::kPacked584, false);
  require_free_device_memory(static_cast<std::int64_t>(base.kv.bytes.size() + base.slots.bytes.size() +
                                                       base.positions.bytes.size() + base.cos_sin.bytes.size()),
                             "the inputs of " + std::to_string(tokens) + " tokens");
  auto upload_tensor = [](const char* name, const HostTensor& t) {
    DeviceAllocation a(name, static_cast<std::int64_t>(t.bytes.size()));
    upload_vector(a, t.bytes);
    return a;
  };
  kv_ = upload_tensor("kv", base.kv);
  slots_ = upload_tensor("slot_mapping", base.slots);
  positions_ = upload_tensor("position_ids", base.positions);
  cos_sin_ = upload_tensor("cos_sin_cache", base.cos_sin);
  fp8_scale_ = DeviceAllocation("fp8_scale", sizeof(float));
  upload_vector(fp8_scale_, std::vector<float>{inputs_.kv.fp8_scale});
  q_scale_inv_ = DeviceAllocation("q_scale_inv", sizeof(float));
  upload_vector(q_scale_inv_, std::vector<float>{kQScaleInv});
  kv_norm_weight_ = DeviceAllocation("kv_norm_weight",
                                     static_cast<std::int64_t>(inputs_.kv_norm_weight.size() * sizeof(std::uint16_t)));
  upload_vector(kv_norm_weight_, inputs_.kv_norm_weight);
}

const InsertCase& DeviceWorkspace::kv_only_case(RecordFormat f, bool fused_kv_norm) {
  const auto key = std::make_pair(f, fused_kv_norm);
  auto it = cases_.find(key);
  if (it == cases_.end()) it = cases_.emplace(key, bench_kv_only_case(inputs_, f, padded_pages_, fused_kv_norm)).first;
  return it->second;
}

const InsertCase& DeviceWorkspace::legacy_case(RecordFormat f, std::int64_t heads) {
  const auto key = std::make_pair(f, heads);
  if (key != legacy_key_) {
    legacy_ = bench_legacy_case(kv_only_case(f, false), heads);
    legacy_key_ = key;
  }
  return legacy_;
}

void* DeviceWorkspace::normed_kv() {
  if (normed_kv_.empty()) {
    require_free_device_memory(kv_.bytes(), "the standalone kv_norm output");
    normed_kv_ = DeviceAllocation("kv_norm output", kv_.bytes());
  }
  return normed_kv_.data();
}

void* DeviceWorkspace::cache(RecordFormat f) {
  auto it = caches_.find(f);
  if (it == caches_.end()) {
    const std::int64_t bytes = kv_only_case(f, false).cache.backing_bytes();
    require_free_device_memory(bytes, std::string("the ") + std::string(layout_of(f).name) + " cache");
    DeviceAllocation a(std::string(layout_of(f).name) + " cache", bytes);
    a.memset(testkit::kCanary);
    it = caches_.emplace(f, std::move(a)).first;
  }
  return it->second.data();
}

DeviceWorkspace::Query DeviceWorkspace::query(RecordFormat f, std::int64_t heads) {
  const auto key = std::make_pair(f, heads);
  if (key != query_key_) {
    q_ = DeviceAllocation();
    q_out_ = DeviceAllocation();
    query_key_ = {RecordFormat::kPacked584, -1};
    const InsertCase& c = legacy_case(f, heads);
    const bool in_place = f == RecordFormat::kBf16_512;
    const std::int64_t q_bytes = meta_bytes(c.q.meta);
    const std::int64_t q_out_bytes = in_place ? 0 : meta_bytes(c.q_out);
    require_free_device_memory(q_bytes + q_out_bytes, "the query of " + std::to_string(heads) + " heads");
    q_ = DeviceAllocation("q", q_bytes);
    testkit::Rng rng(seed_ ^ static_cast<std::uint64_t>(heads));
    const std::vector<std::uint16_t> tile = testkit::random_bf16_rows(rng, kQueryTileRows);
    std::vector<std::uint8_t> tile_bytes(tile.size() * sizeof(std::uint16_t));
    std::memcpy(tile_bytes.data(), tile.data(), tile_bytes.size());
    q_.fill_repeating(tile_bytes);
    if (!in_place) {
      q_out_ = DeviceAllocation("q_out", q_out_bytes);
      q_out_.memset(0);
    }
    query_key_ = key;
  }
  return {q_.data(), query_key_.first == RecordFormat::kBf16_512 ? q_.data() : q_out_.data()};
}

}  // namespace kvc::bench
