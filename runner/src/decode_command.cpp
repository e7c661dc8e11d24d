// decode_command.cpp: `kvconform decode` (see decode_command.h).
#include "decode_command.h"

#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

#include "testkit/cases/registry.h"
#include "kvc/golden/fixture.h"
#include "kvc/golden/manifest_schema.h"
#include "kvc/oracle/record_codec.h"
#include "testkit/backends/oracle_backend.h"
#include "testkit/backends/backing.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/io/case_file.h"
#include "run_report.h"

namespace kvc::runner {
namespace {

struct Decoded {
  InsertCase c;
  std::vector<std::uint8_t> backing;
  std::uint8_t canary = testkit::kCanary;
  std::string source;  // where the case and its bytes come from
};

std::string value_text(const oracle::DecodedRecord& r, int d) {
  const RecordLayout& l = layout_of(r.format);
  char s[64];
  if (d < l.fp8_dims)
    std::snprintf(s, sizeof s, "%02x=%.6g", r.codes[static_cast<std::size_t>(d)],
                  static_cast<double>(r.dequantized[static_cast<std::size_t>(d)]));
  else
    std::snprintf(s, sizeof s, "%04x=%.6g", r.values16[static_cast<std::size_t>(d)],
                  static_cast<double>(r.dequantized[static_cast<std::size_t>(d)]));
  return s;
}

std::string scales_text(const oracle::DecodedRecord& r) {
  const RecordLayout& l = layout_of(r.format);
  std::string s;
  for (int k = 0; k < l.scale_blocks; ++k) {
    char b[16];
    const int byte = r.scales[static_cast<std::size_t>(k)];
    if (byte == kUe8m0Nan)
      std::snprintf(b, sizeof b, "%sff(NaN)", k ? " " : "");
    else
      std::snprintf(b, sizeof b, "%s%02x(%d)", k ? " " : "", byte, byte - kUe8m0Bias);
    s += b;
  }
  return s;
}

}  // namespace

struct DecodeCommand::State {
  CLI::App* cmd = nullptr;
  std::string file;
  std::string op = "kv_only";
  std::string format = "packed584";
  std::int64_t tokens = 17;
  std::int64_t block_size = 16;
  std::uint64_t seed = 42;
  bool dense = false;
  std::int64_t page = 0;
  std::int64_t slot = -1;
  std::vector<int> dims = {0, 1, 2, 447, 448, 449, 511};
  bool all_dims = false;

  Decoded load() const;
};

Decoded DecodeCommand::State::load() const {
  Decoded d;
  if (!file.empty()) {
    const nlohmann::json j = testkit::read_json_file(file);
    if (j.contains(golden::manifest::kFormatKey)) {
      const golden::Fixture f = golden::load_fixture(file);
      d.c = f.c;
      d.canary = f.canary;
      d.backing = testkit::make_outputs(f.c, f.canary).cache;
      std::copy(f.expected_cache.begin(), f.expected_cache.end(), d.backing.begin());
      d.source = "golden fixture " + f.name + ": its frozen expected bytes (" + f.provenance() + ")";
      return d;
    }
    const nlohmann::json& cj = j.contains("case") ? j.at("case") : j;
    d.c = testkit::case_from_json(cj);
    oracle::OracleOptions o;
    o.profile = testkit::case_profile_from_json(cj);
    d.source = "case file " + file + ": the oracle's bytes under profile `" + kvc::profile_name(o.profile) + "`";
    InsertOutputs out = testkit::make_outputs(d.c);
    if (const Status s = testkit::OracleBackend(o).run(d.c, out); !s.ok())
      throw std::runtime_error("the oracle rejects the case: " + s.ToString());
    d.backing = std::move(out.cache);
    return d;
  }
  const RecordLayout* layout = nullptr;
  for (const RecordLayout& l : kRecordLayouts)
    if (l.name == format) layout = &l;
  if (!layout) throw std::invalid_argument("--format: unknown format '" + format + "'");
  if (op != "kv_only" && op != "legacy") throw std::invalid_argument("--op: kv_only or legacy");
  cases::ConformanceSpec spec{layout->format, tokens, block_size};
  spec.seed = seed;
  spec.padded_pages = !dense;
  d.c = cases::build_case(op == "legacy" ? InsertOp::kLegacy : InsertOp::kKvOnly, spec, 0);
  InsertOutputs out = testkit::make_outputs(d.c);
  if (const Status s = testkit::OracleBackend().run(d.c, out); !s.ok())
    throw std::runtime_error("the oracle rejects the generated case: " + s.ToString());
  d.backing = std::move(out.cache);
  d.source = "generated " + spec.name() + " (seed " + std::to_string(seed) + "): the oracle's bytes (profile vllm)";
  return d;
}

DecodeCommand::DecodeCommand(CLI::App& parent) : state_(std::make_unique<State>()) {
  State& s = *state_;
  CLI::App* cmd = parent.add_subcommand("decode", "print a cache page as a table of records with decoded values");
  s.cmd = cmd;
  cmd->add_option("file", s.file, "case file (fuzz corpus or case JSON) or golden fixture manifest; default: generate");
  cmd->add_option("--op", s.op, "generated case: kv_only or legacy")->capture_default_str();
  cmd->add_option("--format", s.format, "generated case: packed584, packed528, fp8_512, bf16_512")
      ->capture_default_str();
  cmd->add_option("--tokens", s.tokens, "generated case: tokens inserted")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("--block-size", s.block_size, "generated case: tokens per page")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{4096}))
      ->capture_default_str();
  cmd->add_option("--seed", s.seed, "generated case: seed")->capture_default_str();
  cmd->add_flag("--dense", s.dense, "generated case: dense pages instead of the upstream padded page stride");
  cmd->add_option("--page", s.page, "page to print")->capture_default_str();
  cmd->add_option("--slot", s.slot, "print only this slot's record (its page is then the one shown)");
  cmd->add_option("--dims", s.dims, "dims shown per record")->delimiter(',')->check(CLI::Range(0, kHeadDim - 1));
  cmd->add_flag("--all-dims", s.all_dims, "also print every dim of each written record");
}

DecodeCommand::~DecodeCommand() = default;

bool DecodeCommand::selected() const { return state_->cmd->parsed(); }

int DecodeCommand::execute() {
  const State& s = *state_;
  Decoded d;
  try {
    d = s.load();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kvconform decode: %s\n", e.what());
    return kRunUsage;
  }
  const oracle::PagedCacheView view = testkit::view_of(d.c);
  const RecordLayout& l = view.layout();
  const std::int64_t page = s.slot >= 0 ? s.slot / view.block_size : s.page;
  if (page < 0 || page >= view.num_blocks || (s.slot >= 0 && s.slot >= view.capacity())) {
    std::fprintf(stderr, "kvconform decode: page %lld is not in the cache (%lld pages)\n", static_cast<long long>(page),
                 static_cast<long long>(view.num_blocks));
    return kRunUsage;
  }
  const float fp8_scale = d.c.fp8_scale.present ? d.c.fp8_scale.load<float>(0) : 1.0f;
  std::map<std::int64_t, std::int64_t> writer;  // slot -> last row
  for (std::int64_t t = 0; t < d.c.num_inserted(); ++t)
    if (const std::int64_t slot = d.c.slots.load<std::int64_t>(t); slot >= 0) writer[slot] = t;

  std::printf("%s\n", d.source.c_str());
  std::printf("case: %s %s, %lld rows (%lld inserted), block size %lld, %lld pages, page stride %lld B (dense %lld B)",
              d.c.op == InsertOp::kLegacy ? "legacy" : "kv_only", std::string(l.name).c_str(),
              static_cast<long long>(d.c.num_rows()), static_cast<long long>(d.c.num_inserted()),
              static_cast<long long>(view.block_size), static_cast<long long>(view.num_blocks),
              static_cast<long long>(view.page_stride_bytes),
              static_cast<long long>(l.paged_regions ? l.dense_page_bytes(view.block_size)
                                                     : view.block_size * view.token_stride_bytes));
  if (!l.paged_regions) std::printf(", token stride %lld B", static_cast<long long>(view.token_stride_bytes));
  if (d.c.fp8_scale.present) std::printf(", fp8 scale %g", static_cast<double>(fp8_scale));
  std::printf("\npage %lld at backing offset %lld; values are bits=decoded%s\n", static_cast<long long>(page),
              static_cast<long long>(view.page_offset(page)),
              l.quant_block_dims ? " (fp8 code x 2^E of its block)" : "");

  std::printf("%5s %8s %6s %-8s", "token", "slot", "row", "state");
  if (l.scale_blocks) std::printf(" %-*s", l.scale_blocks * 9, "scales: byte(E)");
  if (l.scale_bytes > l.scale_blocks) std::printf(" %4s", "pad");
  for (int dim : s.dims) std::printf(" %16s", ("dim " + std::to_string(dim)).c_str());
  std::printf("\n");
  std::vector<std::int64_t> shown;
  for (std::int64_t i = 0; i < view.block_size; ++i) {
    const std::int64_t slot = page * view.block_size + i;
    if (s.slot >= 0 && slot != s.slot) continue;
    const oracle::DecodedRecord r = oracle::decode_record(d.backing, view, slot, fp8_scale);
    const auto w = writer.find(slot);
    // A record nobody addressed still holds the fill the backing started with.
    const std::int64_t data = oracle::token_data_offset(view, slot);
    bool untouched = true;
    for (std::int64_t k = data; k < data + l.data_bytes && untouched; ++k)
      untouched = d.backing[static_cast<std::size_t>(k)] == d.canary;
    const char* state = w != writer.end() ? "written" : (untouched ? "canary" : "other");
    std::printf("%5lld %8lld %6s %-8s", static_cast<long long>(i), static_cast<long long>(slot),
                w != writer.end() ? std::to_string(w->second).c_str() : "-", state);
    if (l.scale_blocks) std::printf(" %-*s", l.scale_blocks * 9, scales_text(r).c_str());
    if (l.scale_bytes > l.scale_blocks) std::printf(" %4x", r.pad);
    for (int dim : s.dims) std::printf(" %16s", value_text(r, dim).c_str());
    std::printf("\n");
    if (w != writer.end()) shown.push_back(slot);
  }
  if (s.all_dims) {
    for (std::int64_t slot : shown) {
      const oracle::DecodedRecord r = oracle::decode_record(d.backing, view, slot, fp8_scale);
      std::printf("\nslot %lld (row %lld), every dim:\n", static_cast<long long>(slot),
                  static_cast<long long>(writer.at(slot)));
      for (int dim = 0; dim < kHeadDim; ++dim) {
        if (dim % 8 == 0) std::printf("  %3d:", dim);
        std::printf(" %16s", value_text(r, dim).c_str());
        if (dim % 8 == 7) std::printf("\n");
      }
    }
  }
  return 0;
}

}  // namespace kvc::runner
