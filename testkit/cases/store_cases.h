// store_cases.h: store-op cases (docs/contract.md §6.4) for tests: builders, a small valid case,
// rows that show every policy, and one breaker per validation rule of the store op.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kvc/contract.h"
#include "kvc/status.h"
#include "kvc/store_case.h"
#include "testkit/backends/backing.h"
#include "kvc/validate.h"

namespace kvc::testkit {

// How the cache tensor is shaped: ours (the 3-D view of the insert ops, padded pages) or
// SGLang's (2-D [pages, page bytes], page bytes = block_size records rounded up to 576).
enum class StorePages : std::uint8_t { kPagedView = 0, kSglangFlat = 1 };
inline constexpr StorePages kAllStorePages[] = {StorePages::kPagedView, StorePages::kSglangFlat};
const char* store_pages_name(StorePages p);  // "PagedView", "SglangFlat"

// Page padding of the kPagedView convention: 64 bytes after the dense page (a multiple of 16).
inline constexpr std::int64_t kStorePagePaddingBytes = 64;

struct StoreShape {
  RecordFormat format = RecordFormat::kPacked584;
  StorePages pages = StorePages::kPagedView;
  std::int64_t num_blocks = 2;
  std::int64_t block_size = 16;
  std::int64_t base_offset_bytes = 0;  // where the cache starts in its backing (16-byte multiple)
  DType index_dtype = DType::kI64;     // kI64 or kI32
};

// The page stride the shape's convention gives.
std::int64_t store_page_stride_bytes(const StoreShape& shape);

// A store case over `rows` (N x 512 bf16 bits) and one index per row.
StoreCase make_store_case(const StoreShape& shape, const std::vector<std::uint16_t>& rows,
                          const std::vector<std::int64_t>& indices);

// Rows in which every policy of docs/contract.md §6 shows (for the packed formats), on top of
// bf16(N(0, 1)) values: row r % 5 == 0 has a NaN in dim 7 and the NaN payload 0xFFC1 in RoPE dim
// 450; == 1 a block holding +Inf with positive, negative and +-0 finite elements (dims 64..95);
// == 2 the same with -Inf (dims 128..159); == 3 a block with amax below 448 * 2^-14 (dims
// 192..255 scaled by 2^-8); == 4 a block of zeros (dims 256..319).
std::vector<std::uint16_t> policy_edge_rows(std::int64_t rows, std::uint64_t seed);

// The canary backing of a store case: the cache tensor, every page with its padding and the
// last page's records, plus kGuardBytes.
std::vector<std::uint8_t> make_store_backing(const StoreCase& c, std::uint8_t canary = kCanary);

// 2 pages of 16 tokens, 6 rows of policy_edge_rows, indices with one -1, all others distinct.
StoreCase small_valid_store_case(RecordFormat format, StorePages pages, std::uint64_t seed = 1,
                                 DType index_dtype = DType::kI64, std::int64_t base_offset_bytes = 0);

// One way to break each validation rule of the store op, applied to a valid case and its backing
// (harness rules shrink the backing). Applied to small_valid_store_case(format, pages), the op
// must reject with `code` at `level` and above.
struct StoreRuleBreaker {
  std::string name;
  ErrorCode code;
  ValidationLevel level;  // the lowest level that rejects it
  std::function<bool(StorePages)> applies;
  std::function<void(StoreCase&, std::vector<std::uint8_t>& backing)> apply;
};
const std::vector<StoreRuleBreaker>& store_rule_breakers();

// One cell of the store invalid-input matrix: a breaker, a packed format, and a page convention
// the breaker applies to. The CPU and GPU suites run the same cells under the same names.
struct StoreRuleCell {
  const StoreRuleBreaker* breaker;
  RecordFormat format;
  StorePages pages;
};
std::vector<StoreRuleCell> store_rule_matrix();
// "DuplicateIndex_packed584_PagedView": the test name of a cell.
std::string store_rule_cell_name(const StoreRuleCell& cell);

}  // namespace kvc::testkit
