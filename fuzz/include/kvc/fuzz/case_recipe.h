// case_recipe.h: the few numbers a fuzzed insert problem is built from, and edge-class accounting.
//
// RapidCheck generates and shrinks a CaseRecipe (small integers and seeds), never the megabytes of
// a case directly; build_case() turns a recipe into an InsertCase that is valid by construction
// (slots unique and in range, positions in range, strides 16-byte aligned). Shrinking a recipe
// therefore always yields a valid problem of the same kind, just smaller.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kvc/contract.h"
#include "kvc/insert_case.h"

namespace kvc::fuzz {

// Values the generators inject into live kv rows. Stable names: coverage reports use them.
enum class EdgeClass : std::uint8_t {
  kNaN,
  kPosInf,
  kNegInf,
  kPosZero,
  kNegZero,
  kSubnormal,
  kZeroBlock,
  kOutlierBlock,
  kAmaxPow2,
  kAmaxAboveUlp,
  kAmaxBelowUlp,
};
inline constexpr int kEdgeClassCount = 11;
const char* edge_class_name(EdgeClass c);

struct Injection {
  EdgeClass cls = EdgeClass::kNaN;
  std::uint32_t row = 0;    // index into the live rows (modulo their count)
  std::uint32_t block = 0;  // block of the row (modulo its blocks, the RoPE dims' included)
  std::uint32_t dim = 0;    // dim inside the block (modulo its width)
  int power = 0;            // k of 448 * 2^k for the amax classes
};

enum class SkipMode : std::uint8_t { kNone = 0, kSome = 1, kAll = 2 };

struct CaseRecipe {
  RecordFormat format = RecordFormat::kPacked584;
  InsertOp op = InsertOp::kKvOnly;
  std::int64_t block_size = 1;
  std::int64_t extra_blocks = 0;
  std::int64_t page_padding_units = 0;  // x 16 bytes beyond the 16-aligned dense page
  std::int64_t row_gap_units = 0;       // full caches: x 16 bytes between rows
  std::int64_t tokens = 0;              // M
  std::int64_t dp_rows = 0;             // kv rows beyond M, never read
  SkipMode skip = SkipMode::kNone;
  std::int64_t max_pos_extra = 0;
  bool base10000_table = false;
  int fp8_scale_choice = 0;
  bool fused_kv_norm = false;
  bool fp16 = false;       // legacy op, formats other than bf16_512: kv and q in float16
  std::uint64_t seed = 0;  // values, slots, positions, table
  std::vector<Injection> injections;
  // legacy
  int padded_heads_choice = 0;  // index into kSupportedHeadPadding
  std::int64_t heads = 1;
  bool q_interleaved = false, apply_q_norm = true, apply_q_rope = true;
};

InsertCase build_case(const CaseRecipe& r);

// Classes present in a case's live rows (slot >= 0, row < M), read from its bytes: the edge
// classes of the NoPE dims by name, the special values of the RoPE dims ("rope-dims:nan",
// "rope-dims:inf", "rope-dims:-0", "rope-dims:subnormal"), "inf-block:zero" (a packed NoPE block
// holding +-Inf and a +-0: the Inf block policy decides its code, docs/contract.md §6.1), plus
// structural ones
// ("format:packed528", "slots:some-skipped", "dp-padding", "block-size:non-pow2", "page-padding",
// "tokens:zero", "tokens:>=1024", "op:legacy", "kv:f16", ...).
std::vector<std::string> classify(const InsertCase& c);

// Counts of classes seen across a run.
using Coverage = std::map<std::string, std::int64_t>;
void record(Coverage& coverage, const std::vector<std::string>& classes);

std::vector<std::string> all_edge_class_names();

}  // namespace kvc::fuzz
