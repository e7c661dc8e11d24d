// planted_backends.cpp: the planted backend (see planted_backends.h).
#include "testkit/backends/oracle_backend.h"
#include "testkit/planted/planted_backends.h"

#include <stdexcept>

#include "kvc/oracle/record_codec.h"
#include "kvc/oracle/store_rotated.h"
#include "testkit/compare/backing_diff.h"

namespace kvc::testkit {
namespace {

oracle::OracleOptions options_under(const kvc::Profile& p) {
  oracle::OracleOptions o;
  o.profile = p;
  return o;
}

// SGLang's address arithmetic for a negative slot with a power-of-two block size: an arithmetic
// shift for the page and a mask for the token, i.e. floor division.
void floor_place(std::int64_t slot, std::int64_t block_size, std::int64_t* page, std::int64_t* token) {
  *page = slot / block_size;
  *token = slot % block_size;
  if (*token < 0) {
    *token += block_size;
    *page -= 1;
  }
}

// Writes row16's record for a slot the planted arithmetic puts at (page, token) of `view`.
void write_stray_record(const std::uint16_t* row16, DType dtype, const oracle::PagedCacheView& view, std::int64_t page,
                        std::int64_t token, std::vector<std::uint8_t>& backing, const oracle::OracleOptions& o) {
  const CheckedI64 page_start = checked_mul_add(page, view.page_stride_bytes, view.base_offset);
  if (!page_start) throw std::logic_error("planted stray record at page " + std::to_string(page) + ": past int64");
  oracle::PagedCacheView shifted = view;  // page `page` of `view` as page 0 of `shifted`
  shifted.base_offset = *page_start;
  const RecordLayout& l = view.layout();
  const std::int64_t first = shifted.base_offset + token * l.data_bytes;
  const std::int64_t last = shifted.base_offset + view.block_size * l.data_bytes + (token + 1) * l.scale_bytes;
  if (first < 0 || last > static_cast<std::int64_t>(backing.size()))
    throw std::logic_error("planted stray record at page " + std::to_string(page) + " token " + std::to_string(token) +
                           " lies outside the host backing: give the cache a base offset of at least one page");
  oracle::store_rotated_row(row16, dtype, shifted, token, backing, o);
}

void plant(AddressDefect defect, const std::uint16_t* row16, DType dtype, const oracle::PagedCacheView& view,
           std::int64_t slot, std::vector<std::uint8_t>& backing, const oracle::OracleOptions& o) {
  if (slot >= 0) return;
  if (!is_packed(view.format)) throw std::logic_error("address plants are for the packed formats");
  std::int64_t page = 0, token = 0;
  floor_place(slot, view.block_size, &page, &token);
  if (defect == AddressDefect::kPageTruncatedTo32Bits) page = static_cast<std::int32_t>(page);
  write_stray_record(row16, dtype, view, page, token, backing, o);
}

const char* defect_name(AddressDefect d) {
  return d == AddressDefect::kNegativeSlotFloorPage ? "negative slots at the floor page"
                                                    : "negative slots at a page truncated to 32 bits";
}

}  // namespace

PlantedBackend::PlantedBackend(kvc::Profile runs_under, kvc::Profile declares, std::optional<AddressDefect> defect)
    : runs_under_(runs_under), declares_(declares), defect_(defect) {}

std::string PlantedBackend::name() const {
  std::string n = "planted[runs " + kvc::profile_name(runs_under_) + ", declares " + kvc::profile_name(declares_);
  if (defect_) n += std::string(", ") + defect_name(*defect_);
  return n + "]";
}

Status PlantedBackend::run(const InsertCase& c, InsertOutputs& out) {
  const oracle::OracleOptions o = options_under(runs_under_);
  const Status s = OracleBackend(o).run(c, out);
  if (!s.ok() || !defect_) return s;
  const oracle::PagedCacheView view = view_of(c);
  std::uint16_t row16[kHeadDim];
  for (std::int64_t t = 0; t < c.num_inserted(); ++t) {
    const std::int64_t slot = c.slots.load<std::int64_t>(t);
    if (slot >= 0) continue;
    oracle::rotated_row16(c, t, runs_under_, row16);
    plant(*defect_, row16, c.kv.meta.dtype, view, slot, out.cache, o);
  }
  return s;
}

kvc::Profile PlantedBackend::declared_profile(const InsertCase& c) const {
  (void)c;
  return declares_;
}

Support PlantedBackend::supports_store(const StoreCase& c) const {
  (void)c;
  return {};
}

Status PlantedBackend::run_store(const StoreCase& c, std::vector<std::uint8_t>& backing) {
  const oracle::OracleOptions o = options_under(runs_under_);
  const Status s = oracle::store_rotated(c, backing, o);
  if (!s.ok() || !defect_) return s;
  const oracle::PagedCacheView view = oracle::store_view(c);
  std::uint16_t row16[kHeadDim];
  for (std::int64_t t = 0; t < c.num_rows(); ++t) {
    if (c.index(t) >= 0) continue;
    for (int d = 0; d < kHeadDim; ++d) row16[d] = c.rows.load<std::uint16_t>(t * kHeadDim + d);
    plant(*defect_, row16, DType::kBF16, view, c.index(t), backing, o);
  }
  return s;
}

kvc::Profile PlantedBackend::declared_store_profile(const StoreCase& c) const {
  (void)c;
  return declares_;
}

}  // namespace kvc::testkit
