// stacked_ctx_kv_rule_breakers.cpp: the stacked context-KV rule breakers (see stacked_ctx_kv_rule_breakers.h).
#include "testkit/cases/stacked_ctx_kv_rule_breakers.h"

#include "testkit/cases/breaker_table.h"
#include "testkit/cases/stacked_cache_loc_layout.h"

namespace kvc::testkit {
namespace {

using Case = StackedCtxKvCase;
using Outputs = StackedCtxKvOutputs;

// The tensor's bytes resized to its (changed) metadata, so only the rule under test is broken.
void fit(HostTensor& t) { t.bytes.resize(static_cast<std::size_t>(t.meta.span_bytes()), 0); }

void retype(HostTensor& t, DType d) {
  t.meta.dtype = d;
  fit(t);
}

void reshape(HostTensor& t, std::vector<std::int64_t> sizes) {
  t.meta.strides = contiguous_strides(sizes);
  t.meta.sizes = std::move(sizes);
  fit(t);
}

void spread_rows(HostTensor& t) {  // row stride doubled: not contiguous
  t.meta.strides[0] *= 2;
  fit(t);
}

StackedCtxKvLayer& layer(Case& c, int i) { return c.layers[static_cast<std::size_t>(i)]; }

// Outputs sized for the changed pool views (a pool rule must not turn into the harness rule).
void refit_outputs(const Case& c, Outputs& out) { out = make_stacked_outputs(c); }

StackedRuleBreaker row(std::string name, ErrorCode code, ValidationLevel level, bool abi_visible,
                       std::function<void(Case&, Outputs&)> apply) {
  return StackedRuleBreaker{std::move(name), code, level, abi_visible, std::move(apply)};
}

constexpr ValidationLevel kContract = ValidationLevel::kContract;
constexpr ValidationLevel kStrict = ValidationLevel::kStrict;

}  // namespace

StackedCtxKvShape small_stacked_shape() {
  StackedCtxKvShape s;
  s.layers = 2;
  s.tokens = 4;
  s.hidden = 16;
  s.q_heads = 1;
  s.kv_heads = 2;
  s.head_dim = 8;
  s.dtype = DType::kBF16;
  s.bias = true;
  s.max_pos = 16;
  s.skip_every = 4;  // token 3 skipped
  s.extra_slots = 2;
  s.seed = 5;
  return s;
}

StackedCtxKvCase small_stacked_case() { return make_stacked_ctx_kv_case(small_stacked_shape()); }

StackedCtxKvCase small_stacked_case(CacheLocPolicy policy) { return in_cache_loc_policy(small_stacked_case(), policy); }

namespace {

// Malformed metadata and short inputs (generic codes, at every level).
std::vector<StackedRuleBreaker> malformed_metadata_breakers() {
  return {
      row("XStridesOfAnotherRank", ErrorCode::kTensorMetaInvalid, kContract, false,
          [](Case& c, Outputs&) { c.x.meta.strides.push_back(1); }),
      row("KPoolOffsetOddBytes", ErrorCode::kTensorMetaInvalid, kContract, false,
          [](Case& c, Outputs& out) {
            layer(c, 1).k_pool.offset_bytes = 1;
            refit_outputs(c, out);
          }),
      row("WeightBytesShort", ErrorCode::kInputTooSmall, kContract, false,
          [](Case& c, Outputs&) { layer(c, 1).qkv_weight.bytes.pop_back(); }),
  };
}

// x: presence, dtype, rank, contiguity.
std::vector<StackedRuleBreaker> x_breakers() {
  return {
      row("XMissing", ErrorCode::kStackedXShape, kContract, false, [](Case& c, Outputs&) { c.x = HostTensor{}; }),
      row("XFloat32", ErrorCode::kStackedXDtype, kContract, true, [](Case& c, Outputs&) { retype(c.x, DType::kF32); }),
      row("XOneDimensional", ErrorCode::kStackedXShape, kContract, true,
          [](Case& c, Outputs&) { reshape(c.x, {c.x.meta.size(0) * c.x.meta.size(1)}); }),
      row("XNotContiguous", ErrorCode::kStackedXNotContiguous, kContract, true,
          [](Case& c, Outputs&) { spread_rows(c.x); }),
  };
}

// Layers: their count and head geometry.
std::vector<StackedRuleBreaker> layer_geometry_breakers() {
  return {
      row("NoLayers", ErrorCode::kStackedLayerCount, kContract, true,
          [](Case& c, Outputs& out) {
            c.layers.clear();
            refit_outputs(c, out);
          }),
      row("ThirtyThreeLayers", ErrorCode::kStackedLayerCount, kContract, true,
          [](Case& c, Outputs& out) {
            while (c.num_layers() <= kMaxStackedLayers) c.layers.push_back(c.layers.front());
            refit_outputs(c, out);
          }),
      row("HeadDimOdd", ErrorCode::kStackedHeadGeometry, kContract, true,
          [](Case& c, Outputs&) { layer(c, 1).head_dim = 7; }),
      row("HeadDimAbove512", ErrorCode::kStackedHeadGeometry, kContract, true,
          [](Case& c, Outputs&) { layer(c, 1).head_dim = kMaxStackedHeadDim + 2; }),
      row("NoKvHeads", ErrorCode::kStackedHeadGeometry, kContract, true,
          [](Case& c, Outputs&) { layer(c, 0).num_kv_heads = 0; }),
      row("NegativeQSize", ErrorCode::kStackedHeadGeometry, kContract, true,
          [](Case& c, Outputs&) { layer(c, 1).q_size = -8; }),
  };
}

// Layers: the qkv weight and bias, the k_norm weight.
std::vector<StackedRuleBreaker> weight_breakers() {
  return {
      row("WeightFloat32", ErrorCode::kStackedWeightDtype, kContract, true,
          [](Case& c, Outputs&) { retype(layer(c, 1).qkv_weight, DType::kF32); }),
      row("WeightMissing", ErrorCode::kStackedWeightDtype, kContract, false,
          [](Case& c, Outputs&) { layer(c, 0).qkv_weight = HostTensor{}; }),
      row("WeightOneRowShort", ErrorCode::kStackedWeightShape, kContract, true,
          [](Case& c, Outputs&) {
            HostTensor& w = layer(c, 1).qkv_weight;
            reshape(w, {w.meta.size(0) - 1, w.meta.size(1)});
          }),
      row("WeightNotContiguous", ErrorCode::kStackedWeightNotContiguous, kContract, true,
          [](Case& c, Outputs&) { spread_rows(layer(c, 1).qkv_weight); }),
      row("BiasOneShort", ErrorCode::kStackedBiasInvalid, kContract, true,
          [](Case& c, Outputs&) {
            HostTensor& b = layer(c, 0).qkv_bias;
            reshape(b, {b.meta.size(0) - 1});
          }),
      row("BiasOfAnotherDtype", ErrorCode::kStackedBiasInvalid, kContract, true,
          [](Case& c, Outputs&) { retype(layer(c, 1).qkv_bias, DType::kF16); }),
      row("NormWeightOfHeadDimPlusTwo", ErrorCode::kStackedNormWeightInvalid, kContract, true,
          [](Case& c, Outputs&) { reshape(layer(c, 1).k_norm_weight, {layer(c, 1).head_dim + 2}); }),
      row("NormWeightMissing", ErrorCode::kStackedNormWeightInvalid, kContract, false,
          [](Case& c, Outputs&) { layer(c, 1).k_norm_weight = HostTensor{}; }),
  };
}

// The cos/sin tables, positions and cache_loc.
std::vector<StackedRuleBreaker> table_and_index_breakers() {
  return {
      row("CosSinOfHeadDimPlusTwo", ErrorCode::kStackedCosSinInvalid, kContract, true,
          [](Case& c, Outputs&) {
            HostTensor& t = layer(c, 1).cos_sin;
            reshape(t, {t.meta.size(0), t.meta.size(1) + 2});
          }),
      row("CosSinFloat16", ErrorCode::kStackedCosSinInvalid, kContract, true,
          [](Case& c, Outputs&) { retype(layer(c, 0).cos_sin, DType::kF16); }),
      row("PositionsOneShort", ErrorCode::kStackedPositionsInvalid, kContract, true,
          [](Case& c, Outputs&) { reshape(c.positions, {c.positions.meta.size(0) - 1}); }),
      row("CacheLocInt32", ErrorCode::kStackedCacheLocInvalid, kContract, true,
          [](Case& c, Outputs&) { retype(c.cache_loc, DType::kI32); }),
  };
}

// The K and V pools: dtype, shape, head stride.
std::vector<StackedRuleBreaker> pool_breakers() {
  return {
      row("KPoolFloat32", ErrorCode::kStackedPoolDtype, kContract, true,
          [](Case& c, Outputs& out) {
            layer(c, 0).k_pool.dtype = DType::kF32;
            refit_outputs(c, out);
          }),
      row("VPoolOneKvHeadMore", ErrorCode::kStackedPoolShape, kContract, true,
          [](Case& c, Outputs& out) {
            TensorMeta& m = layer(c, 1).v_pool;
            m.sizes[1] += 1;
            m.strides[0] = m.sizes[1] * m.sizes[2];
            refit_outputs(c, out);
          }),
      row("KPoolHeadStrideNotHeadDim", ErrorCode::kStackedPoolStride, kContract, true,
          [](Case& c, Outputs& out) {
            TensorMeta& m = layer(c, 1).k_pool;
            m.strides[1] = m.sizes[2] + 2;
            m.strides[0] = m.sizes[1] * m.strides[1];
            refit_outputs(c, out);
          }),
  };
}

// Tensors on another device.
std::vector<StackedRuleBreaker> device_breakers() {
  return {
      row("NormWeightOnDevice1", ErrorCode::kStackedDeviceMismatch, kContract, false,
          [](Case& c, Outputs&) { layer(c, 1).k_norm_weight.meta.device = 1; }),
      row("VPoolOnDevice1", ErrorCode::kStackedDeviceMismatch, kContract, false,
          [](Case& c, Outputs&) { layer(c, 0).v_pool.device = 1; }),
  };
}

// Prefix-valid writes: cache_loc [B, S] and commit_lens [B] (docs/contract.md §4.5).
void with_commit_lens(Case& c, std::int64_t rows, std::vector<std::int64_t> lens) {
  const std::int64_t tokens = c.num_tokens();
  reshape(c.cache_loc, {rows, tokens / rows});
  c.commit_lens = make_tensor_from(DType::kI64, lens, {static_cast<std::int64_t>(lens.size())});
}

std::vector<StackedRuleBreaker> commit_lens_breakers() {
  // small_stacked_case() has 4 tokens: cache_loc [2, 2] with commit lengths {2, 1} is valid.
  const auto two_rows = [](Case& c) {
    const std::vector<std::int64_t> loc = {c.cache_loc.load<std::int64_t>(0), c.cache_loc.load<std::int64_t>(1),
                                           c.cache_loc.load<std::int64_t>(2), c.cache_loc.load<std::int64_t>(3)};
    with_commit_lens(c, 2, {2, 1});
    for (std::int64_t t = 0; t < 4; ++t) c.cache_loc.store<std::int64_t>(t, loc[static_cast<std::size_t>(t)]);
  };
  return {
      row("CacheLocTwoDimensionalWithoutCommitLens", ErrorCode::kStackedCacheLocInvalid, kContract, true,
          [](Case& c, Outputs&) {
            reshape(c.cache_loc, {2, 2});
          }),
      row("CacheLocRowsTimesLengthNotTokens", ErrorCode::kStackedCacheLocInvalid, kContract, true,
          [](Case& c, Outputs&) {
            reshape(c.cache_loc, {1, 3});
            c.commit_lens = make_tensor_from(DType::kI64, std::vector<std::int64_t>{1}, {1});
          }),
      row("CommitLensInt32", ErrorCode::kStackedCommitLensInvalid, kContract, true,
          [two_rows](Case& c, Outputs&) {
            two_rows(c);
            retype(c.commit_lens, DType::kI32);
          }),
      row("CommitLensOneShort", ErrorCode::kStackedCommitLensInvalid, kContract, true,
          [two_rows](Case& c, Outputs&) {
            two_rows(c);
            reshape(c.commit_lens, {1});
          }),
      row("CommitLenAboveRowLength", ErrorCode::kStackedCommitLenOutOfRange, kContract, false,
          [two_rows](Case& c, Outputs&) {
            two_rows(c);
            c.commit_lens.store<std::int64_t>(1, 3);
          }),
      row("NegativeCommitLen", ErrorCode::kStackedCommitLenOutOfRange, kContract, false,
          [two_rows](Case& c, Outputs&) {
            two_rows(c);
            c.commit_lens.store<std::int64_t>(0, -1);
          }),
  };
}

// Requests: the fused path forced on a model ineligible for it (small_stacked_case() has biases).
std::vector<StackedRuleBreaker> request_breakers() {
  StackedRuleBreaker fused =
      row("FusedPathOnABiasedModel", ErrorCode::kStackedPathIneligible, kContract, true, [](Case&, Outputs&) {});
  fused.path = StackedPathRequest::kFused;
  return {fused};
}

// Strict: overlapping slots, duplicates. Range rules hold at the contract level (values).
std::vector<StackedRuleBreaker> strict_and_value_breakers() {
  return {
      row("KPoolSlotStrideBelowSlot", ErrorCode::kStackedPoolSlotsOverlap, kStrict, true,
          [](Case& c, Outputs& out) {
            layer(c, 0).k_pool.strides[0] = layer(c, 0).kv_size() - 1;
            refit_outputs(c, out);
          }),
      row("CacheLocBeyondPool", ErrorCode::kStackedSlotOutOfRange, kContract, false,
          [](Case& c, Outputs&) { c.cache_loc.store<std::int64_t>(1, layer(c, 0).k_pool.size(0)); }),
      row("DuplicateCacheLoc", ErrorCode::kStackedDuplicateSlot, kStrict, false,
          [](Case& c, Outputs&) { c.cache_loc.store<std::int64_t>(2, c.cache_loc.load<std::int64_t>(0)); }),
      row("PositionBeyondTable", ErrorCode::kStackedPositionOutOfRange, kContract, false,
          [](Case& c, Outputs&) { c.positions.store<std::int64_t>(0, layer(c, 1).cos_sin.meta.size(0)); }),
  };
}

// Harness: the caller's pool buffers.
std::vector<StackedRuleBreaker> harness_breakers() {
  return {
      row("KPoolBufferOneByteShort", ErrorCode::kStackedPoolBufferTooSmall, kContract, false,
          [](Case&, Outputs& out) { out.k_pools[1].pop_back(); }),
      row("NoVPoolBuffers", ErrorCode::kStackedPoolBufferTooSmall, kContract, false,
          [](Case&, Outputs& out) { out.v_pools.clear(); }),
  };
}

}  // namespace

const std::vector<StackedRuleBreaker>& stacked_rule_breakers() {
  // The families in table order: the stacked invalid-input tests are named and ordered by it.
  static const std::vector<StackedRuleBreaker> table = breaker_table<StackedRuleBreaker>(
      {malformed_metadata_breakers, x_breakers, layer_geometry_breakers, weight_breakers, table_and_index_breakers,
       pool_breakers, device_breakers, commit_lens_breakers, request_breakers, strict_and_value_breakers,
       harness_breakers});
  return table;
}

std::vector<StackedRuleBreaker> stacked_rule_breakers(CacheLocPolicy policy) {
  std::vector<StackedRuleBreaker> table = stacked_rule_breakers();
  if (policy == CacheLocPolicy::kSlotZeroReserved)
    table.push_back(row("NegativeCacheLocWithSlotZeroReserved", ErrorCode::kStackedNegativeCacheLoc, kContract, false,
                        [](Case& c, Outputs&) { c.cache_loc.store<std::int64_t>(1, -1); }));
  return table;
}

void PrintTo(const StackedRuleBreaker& b, std::ostream* os) { *os << b.name; }

}  // namespace kvc::testkit
