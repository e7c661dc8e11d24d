// stacked_cache_loc_layout_test.cpp: a stacked case laid out for the slot-0-reserved cache_loc
// policy (testkit/cases/stacked_cache_loc_layout.h).
// Catches: a laid-out case that is invalid under the policy (a -1 left in place: every slot-0
// library's cells would be rejections with nothing compared); a token drawn at slot 0 left there
// (its bytes would never be compared) or moved onto a slot another token writes (E212) or past a
// pool; a layout that changes a token's bytes or writes a skipped token (the oracle under the
// policy must write exactly the contract's bytes at the moved slots); a contract case changed.
#include <gtest/gtest.h>

#include <cstdint>

#include "kvc/oracle/stacked_ctx_kv.h"
#include "kvc/stacked_ctx_kv_validate.h"
#include "testkit/cases/stacked_cache_loc_layout.h"
#include "testkit/cases/stacked_ctx_kv_builder.h"

namespace kvc::testkit {
namespace {

// A case with skipped tokens and one token drawn at slot 0 (searched over seeds).
StackedCtxKvCase case_writing_slot_zero() {
  StackedCtxKvShape shape;
  shape.layers = 2;
  shape.tokens = 9;
  shape.skip_every = 4;
  shape.extra_slots = 3;
  for (std::uint64_t seed = 1; seed < 200; ++seed) {
    shape.seed = seed;
    const StackedCtxKvCase c = make_stacked_ctx_kv_case(shape);
    for (std::int64_t t = 0; t < c.num_tokens(); ++t)
      if (c.cache_loc.load<std::int64_t>(t) == 0) return c;
  }
  ADD_FAILURE() << "no seed draws slot 0";
  return make_stacked_ctx_kv_case(shape);
}

TEST(StackedCacheLocLayout, SlotZeroReservedSkipsWithZeroAndMovesTheSlotZeroToken) {
  const StackedCtxKvCase c = case_writing_slot_zero();
  const StackedCtxKvCase laid = in_cache_loc_policy(c, CacheLocPolicy::kSlotZeroReserved);
  ASSERT_TRUE(validate_stacked_ctx_kv(laid, ValidationLevel::kStrict, ValueAccess::kMetadataAndValues,
                                      CacheLocPolicy::kSlotZeroReserved)
                  .ok());
  StackedCtxKvOutputs contract = make_stacked_outputs(c), reserved = make_stacked_outputs(laid);
  ASSERT_TRUE(oracle::stacked_ctx_kv(c, contract).ok());
  oracle::StackedCtxKvOptions o;
  o.profile.cache_loc = CacheLocPolicy::kSlotZeroReserved;
  ASSERT_TRUE(oracle::stacked_ctx_kv(laid, reserved, o).ok());
  const std::size_t slot_bytes = static_cast<std::size_t>(c.layers[0].k_pool.stride(0) * 2);
  for (std::int64_t t = 0; t < c.num_tokens(); ++t) {
    const std::int64_t before = c.cache_loc.load<std::int64_t>(t), after = laid.cache_loc.load<std::int64_t>(t);
    if (before < 0) {
      EXPECT_EQ(after, 0) << "token " << t;
      continue;
    }
    ASSERT_GE(after, 1) << "token " << t;
    for (std::size_t l = 0; l < c.layers.size(); ++l)
      for (std::size_t b = 0; b < slot_bytes; ++b)
        ASSERT_EQ(reserved.k_pools[l][static_cast<std::size_t>(after) * slot_bytes + b],
                  contract.k_pools[l][static_cast<std::size_t>(before) * slot_bytes + b])
            << "token " << t << " layer " << l;
  }
  for (std::size_t b = 0; b < slot_bytes; ++b)
    EXPECT_EQ(reserved.k_pools[0][b], make_stacked_outputs(laid).k_pools[0][b]) << "slot 0 written";
}

TEST(StackedCacheLocLayout, TheContractsCaseIsUnchanged) {
  const StackedCtxKvCase c = case_writing_slot_zero();
  EXPECT_EQ(in_cache_loc_policy(c, CacheLocPolicy::kNegativeSkipped).cache_loc.bytes, c.cache_loc.bytes);
}

}  // namespace
}  // namespace kvc::testkit
