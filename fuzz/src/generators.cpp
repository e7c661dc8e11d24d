// generators.cpp: RapidCheck generators (see generators.h).
#include "kvc/fuzz/generators.h"

#include <functional>
#include <optional>

#include "kvc/resolved_case.h"
#include "testkit/cases/rule_breakers.h"

namespace kvc::fuzz {
namespace {

// RapidCheck's inRange narrows its range with the size parameter; choices that should not depend
// on size (which edge class, which padding) draw at full size. Shrinking still moves toward lo.
template <typename T>
rc::Gen<T> uniform_in(T lo, T hi) {
  return rc::gen::resize(100, rc::gen::inRange<T>(lo, hi));
}

// One of `values`, uniformly, shrinking toward the first (gen::element does not shrink).
template <typename T>
rc::Gen<T> pick_shrinking(std::vector<T> values) {
  const std::size_t n = values.size();
  return rc::gen::map(uniform_in<std::size_t>(0, n), [values = std::move(values)](std::size_t i) { return values[i]; });
}

// One of `values` with integer weights, shrinking toward the first.
template <typename T>
rc::Gen<T> pick_weighted_shrinking(std::vector<std::pair<int, T>> weighted) {
  std::vector<T> expanded;
  for (const auto& [w, v] : weighted) expanded.insert(expanded.end(), static_cast<std::size_t>(w), v);
  return pick_shrinking(std::move(expanded));
}

rc::Gen<std::int64_t> gen_block_size() {
  return rc::gen::weightedOneOf<std::int64_t>({
      {3, rc::gen::map(uniform_in(0, 10), [](int e) { return std::int64_t{1} << e; })},  // 1..512
      {2, uniform_in<std::int64_t>(1, 513)},
  });
}

rc::Gen<std::int64_t> gen_tokens(std::int64_t max_tokens) {
  // Grows with size: small cases first, up to max_tokens at full size, and the cut-off sizes.
  return rc::gen::weightedOneOf<std::int64_t>({
      {8, rc::gen::withSize([max_tokens](int size) {
         return uniform_in<std::int64_t>(0, 1 + max_tokens * std::min(size, 100) / 100);
       })},
      {1, pick_shrinking<std::int64_t>({0, 1, std::min<std::int64_t>(1023, max_tokens),
                                        std::min<std::int64_t>(1024, max_tokens),
                                        std::min<std::int64_t>(1025, max_tokens), max_tokens})},
  });
}

rc::Gen<Injection> gen_injection() {
  return rc::gen::build<Injection>(
      rc::gen::set(&Injection::cls,
                   rc::gen::map(uniform_in(0, kEdgeClassCount), [](int i) { return static_cast<EdgeClass>(i); })),
      rc::gen::set(&Injection::row, uniform_in<std::uint32_t>(0, 1u << 20)),
      rc::gen::set(&Injection::block, uniform_in<std::uint32_t>(0, 16)),
      rc::gen::set(&Injection::dim, uniform_in<std::uint32_t>(0, 64)),
      rc::gen::set(&Injection::power, uniform_in(-12, 9)));
}

}  // namespace

namespace {

struct OpFormat {
  InsertOp op;
  RecordFormat format;
};

rc::Gen<OpFormat> gen_op_format(const GenConfig& config, const std::function<bool(InsertOp, RecordFormat)>& allowed) {
  std::vector<OpFormat> choices;
  for (InsertOp op : {InsertOp::kKvOnly, InsertOp::kLegacy}) {
    if (op == InsertOp::kLegacy && !config.allow_legacy) continue;
    for (RecordFormat f : kAllFormats)
      if ((!config.packed_only || is_packed(f)) && allowed(op, f)) choices.push_back({op, f});
  }
  return pick_shrinking(std::move(choices));
}

CaseRecipe draw_recipe(const GenConfig& config, OpFormat choice) {
  CaseRecipe r;
  r.format = choice.format;
  r.op = choice.op;
  const bool legacy_sized = choice.op == InsertOp::kLegacy || config.legacy_sized;
  const std::int64_t token_limit = legacy_sized && config.max_legacy_tokens > 0
                                       ? std::min(config.max_tokens, config.max_legacy_tokens)
                                       : config.max_tokens;
  r.tokens = *gen_tokens(token_limit);
  r.block_size = *gen_block_size();
  r.extra_blocks = *uniform_in<std::int64_t>(0, 4);
  r.page_padding_units = *uniform_in<std::int64_t>(0, 9);
  r.row_gap_units = *uniform_in<std::int64_t>(0, 3);
  r.dp_rows =
      *rc::gen::weightedOneOf<std::int64_t>({{1, rc::gen::just<std::int64_t>(0)}, {1, uniform_in<std::int64_t>(0, 8)}});
  r.skip = *pick_weighted_shrinking<SkipMode>({{4, SkipMode::kNone}, {5, SkipMode::kSome}, {1, SkipMode::kAll}});
  r.max_pos_extra = *uniform_in<std::int64_t>(0, 64);
  r.base10000_table = *rc::gen::arbitrary<bool>();
  r.fp8_scale_choice = *uniform_in(0, 5);
  r.fused_kv_norm = r.op == InsertOp::kKvOnly && *pick_weighted_shrinking<bool>({{9, false}, {1, true}});
  r.seed = *rc::gen::arbitrary<std::uint64_t>();
  r.injections =
      *rc::gen::container<std::vector<Injection>>(static_cast<std::size_t>(*uniform_in(0, 12)), gen_injection());
  if (r.op == InsertOp::kLegacy) {
    r.padded_heads_choice = *uniform_in(0, 6);
    r.heads = *uniform_in<std::int64_t>(1, 9);
    r.q_interleaved = *rc::gen::arbitrary<bool>();
    r.apply_q_norm = *rc::gen::arbitrary<bool>();
    r.apply_q_rope = *rc::gen::arbitrary<bool>();
    // fp16 q/kv: legacy op only, not for the bf16 full cache (docs/contract.md §4).
    r.fp16 = r.format != RecordFormat::kBf16_512 && *pick_weighted_shrinking<bool>({{2, false}, {1, true}});
  }
  return r;
}

}  // namespace

rc::Gen<CaseRecipe> gen_recipe(GenConfig config) {
  return rc::gen::exec(
      [config] { return draw_recipe(config, *gen_op_format(config, [](InsertOp, RecordFormat) { return true; })); });
}

rc::Gen<PropertyInput> gen_property_input(GenConfig config) {
  return rc::gen::exec([config] {
    PropertyInput in;
    if (config.rule_breaking) {
      const auto& rules = testkit::rule_breakers();
      const std::size_t rule = *uniform_in<std::size_t>(0, rules.size());
      in.c = build_case(draw_recipe(config, *gen_op_format(config, rules[rule].applies)));
      in.aux = rule;
    } else {
      in.c = build_case(*gen_recipe(config));
      in.aux = *rc::gen::arbitrary<std::uint64_t>();
    }
    return in;
  });
}

std::ostream& operator<<(std::ostream& os, const PropertyInput& in) {
  const std::optional<ResolvedInsertCase> resolved = resolve(in.c);
  os << (in.c.op == InsertOp::kLegacy ? "legacy " : "kv-only ") << (resolved ? resolved->layout.name : "?")
     << (in.c.kv.meta.dtype == DType::kF16 ? " f16" : "") << ", " << in.c.num_inserted() << " tokens, "
     << in.c.num_rows() << " rows, " << in.c.cache.num_blocks << " pages x " << in.c.block_size << ", page stride "
     << in.c.cache.page_stride_bytes() << " B, aux " << in.aux;
  return os;
}

}  // namespace kvc::fuzz
