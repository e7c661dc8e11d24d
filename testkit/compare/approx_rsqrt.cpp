// approx_rsqrt.cpp: norm rows and the approximate-rsqrt comparison (see approx_rsqrt.h).
#include "testkit/compare/approx_rsqrt.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include "kvc/hex_text.h"
#include "kvc/oracle/float_bits.h"
#include "kvc/oracle/kv_insert.h"
#include "kvc/oracle/kv_norm.h"
#include "kvc/oracle/legacy_insert.h"
#include "kvc/oracle/q_out_codec.h"
#include "kvc/oracle/record_codec.h"
#include "kvc/resolved_case.h"
#include "testkit/compare/backing_diff.h"
#include "testkit/compare/q_out_diff.h"

namespace kvc::testkit {
namespace {

// Candidate offsets, nearest first: a row reproduced by several r' reports the closest one.
std::vector<int> candidate_offsets() {
  std::vector<int> v;
  for (int k = 1; k <= kApproxRsqrtMaxUlps; ++k) {
    v.push_back(k);
    v.push_back(-k);
  }
  return v;
}

// Byte ranges [begin, end) of one norm row in the cache (first) or the q output (second).
struct RowBytes {
  std::vector<std::pair<std::int64_t, std::int64_t>> cache, q_out;
};

RowBytes bytes_of(const InsertCase& c, const QOutLayout& q_out, const NormRow& row) {
  RowBytes b;
  if (row.kind == NormRowKind::kQHead) {
    for (int d = 0; d < kHeadDim; ++d) {
      const std::int64_t at = oracle::q_out_byte_offset(q_out, row.token, row.head, d);
      b.q_out.push_back({at, at + q_out.element_bytes});
    }
  } else {
    const oracle::PagedCacheView v = view_of(c);
    const RecordLayout& l = v.layout();
    const std::int64_t data = oracle::token_data_offset(v, row.slot);
    b.cache.push_back({data, data + l.data_bytes});
    if (l.scale_bytes > 0) {
      const std::int64_t scales = oracle::token_scale_offset(v, row.slot);
      b.cache.push_back({scales, scales + l.scale_bytes});
    }
  }
  return b;
}

bool ranges_equal(const std::vector<std::pair<std::int64_t, std::int64_t>>& ranges, const std::vector<std::uint8_t>& a,
                  const std::vector<std::uint8_t>& b) {
  for (const auto& [begin, end] : ranges)
    for (std::int64_t i = begin; i < end; ++i)
      if (a[static_cast<std::size_t>(i)] != b[static_cast<std::size_t>(i)]) return false;
  return true;
}

// r's fp32 bits: "0x3f800000".
std::string hex32(float x) { return hex(oracle::bits_of(x), 8); }

std::string offset_text(int ulps) {
  if (ulps == 0) return "r";
  return std::string("r ") + (ulps > 0 ? "+ " : "- ") + std::to_string(std::abs(ulps)) + " ulp";
}

// The shared search: for every row that differs, find the nearest r' that reproduces it and
// write that row into `adjusted` (a copy of the exact outputs); rows with none stay exact.
struct Search {
  std::function<bool(const NormRow&)> row_equal;     // adjusted vs actual, this row
  std::function<void(const NormRow&, int)> rewrite;  // adjusted's row with r moved
  std::function<float(const NormRow&)> exact_r;
};

void search_rows(const std::vector<NormRow>& rows, const Search& s, ApproxRsqrtResult& result) {
  result.norm_rows = static_cast<std::int64_t>(rows.size());
  for (const NormRow& row : rows) {
    if (s.row_equal(row)) continue;
    bool found = false;
    if (std::isfinite(s.exact_r(row))) {
      for (int k : candidate_offsets()) {
        s.rewrite(row, k);
        if (s.row_equal(row)) {
          result.moved.push_back({row, k});
          found = true;
          break;
        }
      }
    }
    if (!found) {
      s.rewrite(row, 0);  // back to the exact bytes, so the final diff shows them against actual
      result.rejected.push_back(row);
    }
  }
}

void report_header(std::ostringstream& s, RsqrtMode mode, const ApproxRsqrtResult& r, const char* what,
                   const std::function<float(const NormRow&)>& exact_r) {
  s << "rsqrt mode: " << rsqrt_mode_name(mode);
  if (mode == RsqrtMode::kCorrectlyRounded) {
    s << " (byte-exact)\n";
    return;
  }
  s << " (each norm row must equal the oracle's bytes for some r' within " << kApproxRsqrtMaxUlps
    << " fp32 ulp of the correctly rounded r)\n";
  s << "  " << r.norm_rows << " " << what << ": "
    << r.norm_rows - static_cast<std::int64_t>(r.moved.size() + r.rejected.size()) << " reproduced with r, "
    << r.moved.size() << " with r' != r, " << r.rejected.size() << " rejected\n";
  for (const RowOffset& m : r.moved) {
    const float r0 = exact_r(m.row);
    s << "    " << describe(m.row) << ": r' = " << offset_text(m.ulps) << " (" << hex32(r0) << " -> "
      << hex32(offset_by_ulps(r0, m.ulps)) << ")\n";
  }
  for (const NormRow& row : r.rejected)
    s << "    REJECTED " << describe(row) << ": no r' in [r - " << kApproxRsqrtMaxUlps << " ulp, r + "
      << kApproxRsqrtMaxUlps << " ulp] reproduces its bytes (r = " << hex32(exact_r(row))
      << "; the diff below shows them against r)\n";
}

}  // namespace

std::string_view rsqrt_mode_name(RsqrtMode mode) {
  return mode == RsqrtMode::kApproximate ? "approximate" : "correctly rounded";
}

std::string describe(const NormRow& row) {
  switch (row.kind) {
    case NormRowKind::kQHead: return "token " + std::to_string(row.token) + " head " + std::to_string(row.head);
    case NormRowKind::kKvNormRecord:
      return "token " + std::to_string(row.token) + " (slot " + std::to_string(row.slot) + ")";
    case NormRowKind::kKvNormOutput: return "row " + std::to_string(row.token);
  }
  return "?";
}

std::vector<NormRow> norm_rows(const InsertCase& c) {
  std::vector<NormRow> rows;
  if (c.op == InsertOp::kLegacy) {
    if (!c.apply_q_norm) return rows;
    if (resolve_or_throw(c).q_out.heads == 0) return rows;  // packed with Hp = 0: no Q output at all
    for (std::int64_t t = 0; t < c.num_rows(); ++t)
      for (std::int64_t h = 0; h < c.q.meta.size(1); ++h) rows.push_back({NormRowKind::kQHead, t, h, -1});
    return rows;
  }
  if (!c.kv_norm_weight.present) return rows;
  std::map<std::int64_t, std::int64_t> last_writer;  // slot -> token
  for (std::int64_t t = 0; t < c.num_inserted(); ++t) {
    const std::int64_t s = c.slots.load<std::int64_t>(t);
    if (s >= 0) last_writer[s] = t;
  }
  for (std::int64_t t = 0; t < c.num_inserted(); ++t) {
    const std::int64_t s = c.slots.load<std::int64_t>(t);
    if (s >= 0 && last_writer[s] == t) rows.push_back({NormRowKind::kKvNormRecord, t, -1, s});
  }
  return rows;
}

float offset_by_ulps(float r, int ulps) {
  if (!std::isfinite(r)) return r;
  for (int i = 0; i < std::abs(ulps); ++i) r = std::nextafter(r, ulps > 0 ? INFINITY : -INFINITY);
  return r;
}

namespace {

float exact_r_of(const InsertCase& c, const NormRow& row) {
  return row.kind == NormRowKind::kQHead ? oracle::q_head_rms_inverse(c, row.token, row.head)
                                         : oracle::kv_norm_rms_inverse(c, row.token);
}

}  // namespace

void rewrite_norm_row(const InsertCase& c, const NormRow& row, int ulps, InsertOutputs& out,
                      const kvc::Profile& profile) {
  const float r = offset_by_ulps(exact_r_of(c, row), ulps);
  if (row.kind == NormRowKind::kQHead) {
    float e[kHeadDim];
    oracle::q_head_before_store(c, row.token, row.head, e, r);
    oracle::store_q_head(c, row.token, row.head, e, out.q_out);
  } else {
    oracle::OracleOptions o;
    o.profile = profile;
    oracle::insert_kv_row(c, view_of(c), row.token, out.cache, o, r);
  }
}

void rewrite_kv_norm_row(const HostTensor& kv, const HostTensor& weight, float eps, std::int64_t row, int ulps,
                         std::vector<std::uint16_t>& out) {
  const float r = offset_by_ulps(oracle::kv_norm_row_rms_inverse(kv, eps, row), ulps);
  oracle::kv_norm_output_row(kv, weight, eps, row, out.data() + row * kHeadDim, r);
}

ApproxRsqrtResult compare_under_rsqrt_mode(const InsertCase& c, RsqrtMode mode, const InsertOutputs& expected,
                                           const InsertOutputs& actual, const kvc::Profile& profile) {
  ApproxRsqrtResult result;
  result.mode = mode;
  InsertOutputs adjusted = expected;
  const std::optional<ResolvedInsertCase> resolved = resolve(c);
  const QOutLayout q_layout = resolved ? resolved->q_out : QOutLayout{};
  const bool comparable = expected.cache.size() == actual.cache.size() && expected.q_out.size() == actual.q_out.size();
  const auto exact_r = [&](const NormRow& row) { return exact_r_of(c, row); };
  if (mode == RsqrtMode::kApproximate && comparable) {
    Search s;
    s.row_equal = [&](const NormRow& row) {
      const RowBytes b = bytes_of(c, q_layout, row);
      return ranges_equal(b.cache, adjusted.cache, actual.cache) && ranges_equal(b.q_out, adjusted.q_out, actual.q_out);
    };
    s.rewrite = [&](const NormRow& row, int k) { rewrite_norm_row(c, row, k, adjusted, profile); };
    s.exact_r = exact_r;
    search_rows(norm_rows(c), s, result);
  }

  const DiffReport cache = diff_case_backings(c, adjusted.cache, actual.cache);
  const std::string q_out = q_out_difference_report(c, adjusted.q_out, actual.q_out);
  result.other_bytes_equal = cache.equal() && q_out.empty();
  result.accepted = result.other_bytes_equal && result.rejected.empty();

  std::ostringstream s;
  report_header(s, mode, result, c.op == InsertOp::kLegacy ? "Q-norm heads" : "kv_norm records", exact_r);
  if (!cache.equal()) {
    ReportContext ctx;
    ctx.expected_name = mode == RsqrtMode::kApproximate ? "oracle (norm rows at the r' found)" : "oracle";
    s << format_case_report(c, cache, adjusted.cache, actual.cache, ctx);
  }
  s << q_out;
  result.report = s.str();
  return result;
}

ApproxRsqrtResult compare_kv_norm_under_rsqrt_mode(const HostTensor& kv, const HostTensor& weight, float eps,
                                                   RsqrtMode mode, const std::vector<std::uint16_t>& expected,
                                                   const std::vector<std::uint16_t>& actual) {
  ApproxRsqrtResult result;
  result.mode = mode;
  std::vector<std::uint16_t> adjusted = expected;
  const bool comparable = expected.size() == actual.size() && expected.size() % kHeadDim == 0;
  const auto exact_r = [&](const NormRow& row) { return oracle::kv_norm_row_rms_inverse(kv, eps, row.token); };
  auto row_equal = [&](const NormRow& row) {
    for (int d = 0; d < kHeadDim; ++d)
      if (adjusted[static_cast<std::size_t>(row.token * kHeadDim + d)] !=
          actual[static_cast<std::size_t>(row.token * kHeadDim + d)])
        return false;
    return true;
  };
  std::vector<NormRow> rows;
  if (comparable)
    for (std::int64_t t = 0; t < static_cast<std::int64_t>(expected.size()) / kHeadDim; ++t)
      rows.push_back({NormRowKind::kKvNormOutput, t, -1, -1});
  if (mode == RsqrtMode::kApproximate) {
    Search s;
    s.row_equal = row_equal;
    s.rewrite = [&](const NormRow& row, int k) { rewrite_kv_norm_row(kv, weight, eps, row.token, k, adjusted); };
    s.exact_r = exact_r;
    search_rows(rows, s, result);
  }
  std::ostringstream s;
  report_header(s, mode, result, "kv_norm rows", exact_r);
  if (!comparable) s << "  output sizes differ: " << expected.size() << " vs " << actual.size() << " elements\n";
  bool all_equal = comparable;
  int shown = 0;
  for (const NormRow& row : rows) {
    if (row_equal(row)) continue;
    all_equal = false;
    for (int d = 0; d < kHeadDim && shown < static_cast<int>(DiffReport::kShown); ++d) {
      const std::size_t i = static_cast<std::size_t>(row.token * kHeadDim + d);
      if (adjusted[i] == actual[i]) continue;
      char line[96];
      std::snprintf(line, sizeof line, "  row %lld dim %d: expected bf16 0x%04x actual 0x%04x\n",
                    static_cast<long long>(row.token), d, adjusted[i], actual[i]);
      s << line;
      ++shown;
    }
  }
  // Under the approximate mode every output byte belongs to a norm row: a mismatch left over is a
  // rejected row. Under the exact mode there are no norm rows to excuse anything.
  result.other_bytes_equal = comparable && (mode == RsqrtMode::kApproximate || all_equal);
  result.accepted = all_equal;
  result.report = s.str();
  return result;
}

RsqrtMode declared_rsqrt_mode(const Backend& backend, const InsertCase& c) {
  return c.op == InsertOp::kLegacy ? backend.rsqrt_mode(InsertOp::kLegacy, true)
                                   : backend.rsqrt_mode(InsertOp::kKvOnly, false);
}

}  // namespace kvc::testkit
