// store_suite.cpp: see store_suite.h.
#include "store_suite.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernel_suite_support.h"
#include "kvc/oracle/store_rotated.h"
#include "stopwatch.h"
#include "testkit/device/store_target.h"
#include "testkit/cases/registry.h"
#include "testkit/cases/store_cases.h"

namespace kvc::runner {
namespace {

// Where a scenario's store case is written.
enum class StoreCache : std::uint8_t {
  kScenario = 0,    // the KV-only scenario's own 3-D cache, int64 indices
  kSglangFlat = 1,  // SGLang's 2-D cache of the same pages, int32 indices
};

// The store case of `spec` on `cache`.
StoreCase store_case(const cases::ConformanceSpec& spec, StoreCache cache) {
  StoreCase ours = oracle::store_case_of(cases::build_kv_only(spec, 0));
  if (cache == StoreCache::kScenario) return ours;
  std::vector<std::uint16_t> rows(static_cast<std::size_t>(ours.num_rows() * kHeadDim));
  if (!rows.empty())
    std::memcpy(rows.data(), ours.rows.bytes.data() + ours.rows.meta.offset_bytes, rows.size() * sizeof(rows[0]));
  std::vector<std::int64_t> indices;
  for (std::int64_t t = 0; t < ours.num_rows(); ++t) indices.push_back(ours.index(t));
  testkit::StoreShape shape;
  shape.format = store_format(ours);
  shape.pages = testkit::StorePages::kSglangFlat;
  shape.num_blocks = ours.cache.size(0);
  shape.block_size = ours.block_size;
  shape.index_dtype = DType::kI32;
  return testkit::make_store_case(shape, rows, indices);
}

void store_check(const RunOptions& options, testkit::DeviceBackend& device, const StoreCase& given, bool repeat,
                 CheckResult& r) {
  r.add_bytes(AbiOp::kStoreRotated, 0);
  // The case in the library's declared geometry where the contract allows it (SGLang's 2-D cache
  // for a library that takes nothing else), or the reason it is not sent (testkit/device/store_target.h).
  const testkit::StoreTarget target = testkit::store_target(device, given);
  if (target.outcome != testkit::StoreTargetOutcome::kSend) {
    skip(r, target.why_not);
    return;
  }
  const StoreCase& c = *target.c;
  // Judged (testkit/compare/judge.h) on the case as laid out; the layout is in the check's name.
  check_store(device, options.profile, c, repeat, r);
}

}  // namespace

void store_suite(const RunOptions& options, testkit::DeviceBackend& device, const RunSink& sink) {
  std::vector<cases::ConformanceSpec> specs;
  if (options.selects(AbiOp::kStoreRotated))
    for (const cases::ConformanceSpec& spec : cases::kernel_matrix(InsertOp::kKvOnly))
      if (is_packed(spec.format) && options.selects(spec.format) && options.within_tokens(spec.tokens))
        specs.push_back(spec);
  sink.begin_suite("kernel store: the store op on the KV-only matrix's rows, on its cache and on SGLang's",
                   2 * specs.size());
  for (const cases::ConformanceSpec& spec : specs) {
    for (StoreCache cache : {StoreCache::kScenario, StoreCache::kSglangFlat}) {
      const Stopwatch clock;
      const bool sglang = cache == StoreCache::kSglangFlat;
      CheckResult r = kernel_check(kSuiteStore, std::string(abi_op_name(AbiOp::kStoreRotated)), format_key(spec.format),
                                   spec.name() + (sglang ? "_SglangFlatInt32" : ""));
      if (!sink.starts(r)) continue;
      store_check(options, device, store_case(spec, cache), !sglang, r);
      r.seconds = clock.seconds();
      sink.record(r);
    }
  }
}

}  // namespace kvc::runner
