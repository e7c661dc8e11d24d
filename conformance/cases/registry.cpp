// registry.cpp: the conformance matrix (see registry.h).
#include "kvc/cases/registry.h"

#include <cctype>

namespace kvc::cases {
namespace {

// "packed584" -> "Packed584", "fp8_512" -> "Fp8_512": test names that read like the format.
std::string capitalized(std::string_view s) {
  std::string out(s);
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

}  // namespace

std::string ConformanceSpec::name() const {
  return capitalized(layout_of(format).name) + "_Tokens" + std::to_string(tokens) + "_Bs" + std::to_string(block_size) +
         (padded_pages ? "_Padded" : "_Dense");
}

const std::vector<ConformanceSpec>& conformance_matrix() {
  static const std::vector<ConformanceSpec> matrix = [] {
    std::vector<ConformanceSpec> m;
    // The upstream DSpark matrix: every format, token counts straddling the 1024 grid cut-off.
    for (RecordFormat f : kAllFormats)
      for (std::int64_t n : {1, 17, 1023, 1024}) m.push_back({f, n});
    // Small unpadded pages with a block size that is not a power of two (6 keeps the packed584
    // page stride 6 * 584 a multiple of 16).
    for (RecordFormat f : kAllFormats) m.push_back({f, 40, 6, 2, false, 7});
    return m;
  }();
  return matrix;
}

InsertCase build_kv_only(const ConformanceSpec& spec, int round) {
  testkit::Rng rng(spec.seed);
  const std::int64_t rows = spec.tokens + spec.dp_padding_rows;
  const std::int64_t num_blocks = (spec.tokens + kUpstreamPositionBase + spec.block_size - 1) / spec.block_size;
  const std::int64_t max_pos = rows + 16;
  testkit::CacheShape shape;
  shape.format = spec.format;
  shape.num_blocks = num_blocks;
  shape.block_size = spec.block_size;
  if (spec.padded_pages) shape.page_padding_bytes = testkit::upstream_page_padding_bytes(spec.format, spec.block_size);

  testkit::KvInputs in;
  in.cos_sin = testkit::random_cos_sin(rng, max_pos);
  in.slots = rng.distinct(num_blocks * spec.block_size, spec.tokens);
  for (std::size_t i = 0; i < in.slots.size(); i += kUpstreamSkipEvery) in.slots[i] = -1;
  if (round == kUpstreamRounds - 1) in.slots.assign(in.slots.size(), -1);
  for (std::int64_t t = 0; t < rows; ++t) in.positions.push_back(t + kUpstreamPositionBase + round + 1);
  // Every round draws fresh kv from a stream that depends on the round.
  testkit::Rng values(spec.seed * 1000003u + static_cast<std::uint64_t>(round));
  in.kv = testkit::random_bf16_rows(values, rows);
  in.fp8_scale = kUpstreamFp8Scale;
  return testkit::make_kv_only_case(shape, in);
}

InsertCase build_legacy(const ConformanceSpec& spec, int round) {
  testkit::QuerySpec q;
  q.heads = kUpstreamQueryHeads;
  q.padded_heads = kUpstreamQueryHeads;
  q.eps = kUpstreamEps;
  q.q_scale_inv = kUpstreamFp8Scale;
  return testkit::make_legacy_case(build_kv_only(spec, round), q);
}

}  // namespace kvc::cases
