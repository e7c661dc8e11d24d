// probe_cells.cpp: the probe's calls (see probe_cells.h).
#include "probe_cells.h"

#include "kvc/kernel_abi.h"
#include "testkit/backends/backing.h"
#include "testkit/cases/rule_breakers.h"
#include "testkit/cases/small_cases.h"
#include "testkit/cases/stacked_ctx_kv_builder.h"
#include "testkit/cases/stacked_ctx_kv_rule_breakers.h"
#include "kvc/stacked_ctx_kv_validate.h"
#include "testkit/cases/store_cases.h"
#include "testkit/device/abi_args.h"

namespace kvc::runner {
namespace {

constexpr const char* kHarnessRule =
    "harness rule: the caller's host buffers do not cover the case (a library sees device pointers, not allocation "
    "sizes)";

bool is_harness_code(ErrorCode code) {
  const int n = static_cast<int>(code);
  return n >= 300 && n < 400;  // status.h: 3xx = the caller's buffers do not fit the case
}

std::string inexpressible(const std::string& why) { return "a DLTensor cannot carry it: " + why; }

std::vector<int> rule_codes(ErrorCode code, bool required_tensor_missing) {
  return {required_tensor_missing ? KVC_STATUS_BAD_ARGUMENT : static_cast<int>(code)};
}

void add_insert_cells(std::uint64_t seed, std::vector<ProbeCell>* cells) {
  for (const testkit::RuleMatrixEntry& e : testkit::rule_matrix()) {
    InsertCall call{testkit::small_valid_case(e.op, e.format, seed), {}};
    call.out = testkit::make_outputs(call.c);
    const bool broken = e.breaker->apply(call.c, call.out);
    const InsertCase& c = call.c;
    ProbeCell cell;
    cell.family = ProbeFamily::kInsert;
    cell.name = testkit::rule_matrix_name(e);
    cell.rule = e.breaker->name;
    cell.code = e.breaker->code;
    cell.op = e.op == InsertOp::kLegacy  ? AbiOp::kLegacy
              : c.kv_norm_weight.present ? AbiOp::kKvOnlyKvNorm
                                         : AbiOp::kKvOnly;
    cell.format = std::string(layout_of(e.format).name);
    cell.base_format = e.format;
    const bool missing = !c.kv.present || !c.slots.present || !c.positions.present || !c.cos_sin.present ||
                         (e.op == InsertOp::kLegacy && !c.q.present);
    cell.right_codes = rule_codes(e.breaker->code, missing);
    if (!broken)
      cell.not_sent = "the small case offers this breaker nothing to break";
    else if (is_harness_code(e.breaker->code))
      cell.not_sent = kHarnessRule;
    else if (const std::string why = testkit::abi_inexpressible(c); !why.empty())
      cell.not_sent = inexpressible(why);
    cell.call = std::move(call);
    cells->push_back(std::move(cell));
  }
}

void add_store_cells(std::uint64_t seed, std::vector<ProbeCell>* cells) {
  for (const testkit::StoreRuleCell& e : testkit::store_rule_matrix()) {
    StoreCall call{testkit::small_valid_store_case(e.format, e.pages, seed), {}};
    call.backing = testkit::make_store_backing(call.c);
    e.breaker->apply(call.c, call.backing);
    const StoreCase& c = call.c;
    ProbeCell cell;
    cell.family = ProbeFamily::kStore;
    cell.name = testkit::store_rule_cell_name(e);
    cell.rule = e.breaker->name;
    cell.code = e.breaker->code;
    cell.op = AbiOp::kStoreRotated;
    cell.format = std::string(layout_of(e.format).name) + "/" + testkit::store_pages_name(e.pages);
    cell.base_format = e.format;
    cell.right_codes = rule_codes(e.breaker->code, !c.rows.present || !c.indices.present);
    if (is_harness_code(e.breaker->code)) {
      cell.not_sent = kHarnessRule;
    } else {
      for (const auto& [name, meta] : {std::make_pair("rows", &c.rows.meta), std::make_pair("indices", &c.indices.meta),
                                       std::make_pair("kv_cache", &c.cache)})
        if (const std::string why = testkit::meta_inexpressible(name, *meta); !why.empty() && cell.not_sent.empty())
          cell.not_sent = inexpressible(why);
    }
    cell.call = std::move(call);
    cells->push_back(std::move(cell));
  }
}

// Why a DLTensor cannot carry some tensor of a stacked case, or "".
std::string stacked_inexpressible(const StackedCtxKvCase& c) {
  std::vector<std::pair<std::string, const TensorMeta*>> metas;
  for (const auto& [name, t] : {std::make_pair("x", &c.x), std::make_pair("positions", &c.positions),
                                std::make_pair("cache_loc", &c.cache_loc)})
    if (t->present) metas.emplace_back(name, &t->meta);
  for (std::size_t i = 0; i < c.layers.size(); ++i) {
    const StackedCtxKvLayer& l = c.layers[i];
    const std::string p = "layer " + std::to_string(i) + " ";
    for (const auto& [name, t] :
         {std::make_pair("qkv_weight", &l.qkv_weight), std::make_pair("qkv_bias", &l.qkv_bias),
          std::make_pair("k_norm_weight", &l.k_norm_weight), std::make_pair("cos_sin", &l.cos_sin)})
      if (t->present) metas.emplace_back(p + name, &t->meta);
    metas.emplace_back(p + "K pool", &l.k_pool);
    metas.emplace_back(p + "V pool", &l.v_pool);
  }
  for (const auto& [name, meta] : metas)
    if (std::string why = testkit::meta_inexpressible(name, *meta); !why.empty()) return why;
  return "";
}

void add_stacked_cells(std::vector<ProbeCell>* cells) {
  for (const testkit::StackedRuleBreaker& b : testkit::stacked_rule_breakers()) {
    StackedCall call{testkit::small_stacked_case(), {}, b.path};
    call.out = testkit::make_stacked_outputs(call.c);
    b.apply(call.c, call.out);
    const StackedCtxKvCase& c = call.c;
    ProbeCell cell;
    cell.family = ProbeFamily::kStacked;
    cell.name = "Stacked_" + b.name;
    cell.rule = b.name;
    cell.code = b.code;
    cell.op = AbiOp::kStackedCtxKv;
    cell.format = "-";
    bool missing = !c.x.present || !c.positions.present || !c.cache_loc.present;
    for (const StackedCtxKvLayer& l : c.layers)
      missing = missing || !l.qkv_weight.present || !l.k_norm_weight.present || !l.cos_sin.present;
    cell.right_codes = rule_codes(b.code, missing);
    if (is_harness_code(b.code))
      cell.not_sent = kHarnessRule;
    else if (const std::string why = stacked_inexpressible(c); !why.empty())
      cell.not_sent = inexpressible(why);
    else if (const Status s = validate_stacked_ctx_kv_outputs(c, call.out); !s.ok())
      // The device harness checks the pool views it hands over before any call
      // (stacked_ctx_kv_device.cpp); a view it refuses never reaches the library.
      cell.not_sent = "the harness does not hand over a pool view it refuses: " + s.ToString();
    cell.call = std::move(call);
    cells->push_back(std::move(cell));
  }
}

}  // namespace

std::string_view probe_family_name(ProbeFamily f) {
  switch (f) {
    case ProbeFamily::kInsert: return "insert";
    case ProbeFamily::kStore: return "store";
    case ProbeFamily::kStacked: return "stacked";
  }
  return "?";
}

std::vector<ProbeCell> probe_cells(std::uint64_t seed) {
  std::vector<ProbeCell> cells;
  add_insert_cells(seed, &cells);
  add_store_cells(seed, &cells);
  add_stacked_cells(&cells);
  return cells;
}

}  // namespace kvc::runner
