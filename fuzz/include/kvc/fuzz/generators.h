// generators.h: RapidCheck generators of insert problems (valid and invalid).
//
// gen_recipe() draws every dimension the contract varies: format, op, block size (powers of two
// and not, 1..512), pages, page padding, token count (0..4096, growing with RapidCheck's size),
// DP-padding rows, slot patterns (none/some/all -1), positions, random or base-10000 tables,
// injected edge values (into NoPE and RoPE dims), and the legacy op's heads, padding, flags and
// 16-bit type (bf16 or fp16). Shrinking acts on the
// recipe, so a shrunk problem is still a valid problem of the same kind.
#pragma once

#include <cstdint>
#include <ostream>

#include <rapidcheck.h>

#include "kvc/fuzz/case_recipe.h"

namespace kvc::fuzz {

struct GenConfig {
  bool allow_legacy = true;  // false: KV-only problems only
  bool packed_only = false;  // only packed584 / packed528
  std::int64_t max_tokens = 4096;
  // Invalid problems: draw a rule of testkit::rule_breakers() uniformly (its index becomes the
  // input's aux), then a valid case of an op and format the rule applies to.
  bool rule_breaking = false;
  // When > 0, problems that run through the legacy op draw at most this many tokens: a legacy
  // call carries q_in and q_out for up to 128 heads (up to 272 KiB per token), so a campaign that
  // raises max_tokens for the KV-only op keeps legacy problems smaller. legacy_sized: every
  // problem of the property is sized so (a property that re-runs a KV-only problem as legacy).
  std::int64_t max_legacy_tokens = 0;
  bool legacy_sized = false;
};

rc::Gen<CaseRecipe> gen_recipe(GenConfig config);

// What a property receives: a built case plus one free integer for the property's own choices
// (split point, permutation, Hp, which rule to break); both shrink.
struct PropertyInput {
  InsertCase c;
  std::uint64_t aux = 0;
};
std::ostream& operator<<(std::ostream& os, const PropertyInput& in);  // a one-line summary

rc::Gen<PropertyInput> gen_property_input(GenConfig config);

}  // namespace kvc::fuzz
