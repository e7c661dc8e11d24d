// stacked_ctx_kv_commit_lens_test.cpp: prefix-valid writes of the stacked op (docs/contract.md
// §4.5, version 3): cache_loc [B, S] with commit lengths [B]; token (b, s) writes iff
// s < commit_lens[b], then the cache_loc policy applies.
//
// - A hand vector: cache_loc [[4, -1, -7], [0, 2, 3]] with commit lengths [2, 3] writes slots
//   {0, 2, 3, 4} on every path (-1 committed: skipped; -7 uncommitted: never read); under the
//   slot-0-reserved policy cache_loc [[4, 5, -7], [0, 2, 3]] writes {2, 3, 4, 5} and the
//   uncommitted -7 is no E159. Catches commit lengths ignored (slot -7 read: E159, or slot 1
//   written), the prefix taken as s <= commit_len, rows read column-major, the committed token of
//   the wrong row.
// - Commit lengths of 0 write nothing on any path; an uncommitted entry past the pools or repeating a
//   committed slot is accepted at the strict level (it is never read). Catches range and duplicate
//   rules applied to entries that are not read.
// - A case file keeps commit_lens (and a file without it reads as one without commit lengths).
#include <gtest/gtest.h>

#include <set>

#include "kvc/oracle/stacked_ctx_kv.h"
#include "testkit/cases/stacked_ctx_kv_builder.h"
#include "testkit/io/case_file.h"

namespace kvc {
namespace {

// Two layers, 6 tokens as cache_loc [2, 3], pools of 9 slots, bf16 without bias (every path).
StackedCtxKvCase hand_case(const std::vector<std::int64_t>& loc, const std::vector<std::int64_t>& lens) {
  testkit::StackedCtxKvShape s;
  s.layers = 2;
  s.tokens = 6;
  s.hidden = 16;
  s.q_heads = 1;
  s.kv_heads = 2;
  s.head_dim = 8;
  s.dtype = DType::kBF16;
  s.max_pos = 16;
  s.seed = 7;
  s.commit_lens = lens;
  StackedCtxKvCase c = testkit::make_stacked_ctx_kv_case(s);
  for (std::size_t t = 0; t < loc.size(); ++t) c.cache_loc.store<std::int64_t>(static_cast<std::int64_t>(t), loc[t]);
  return c;
}

// The slots of layer `l`'s K and V pools the run wrote: run twice over two canaries, a slot is
// written when its elements agree.
std::set<std::int64_t> written_slots(const StackedCtxKvCase& c, const oracle::StackedCtxKvOptions& o, int l,
                                     Status* status) {
  StackedCtxKvOutputs a = testkit::make_stacked_outputs(c, 0xA5), b = testkit::make_stacked_outputs(c, 0x5A);
  *status = oracle::stacked_ctx_kv(c, a, o);
  if (!status->ok()) return {};
  EXPECT_TRUE(oracle::stacked_ctx_kv(c, b, o).ok());
  const StackedCtxKvLayer& layer = c.layers[static_cast<std::size_t>(l)];
  std::set<std::int64_t> slots;
  for (std::int64_t slot = 0; slot < layer.k_pool.size(0); ++slot) {
    bool k_written = true, v_written = true;
    for (std::int64_t e = 0; e < layer.kv_size(); ++e)
      for (int byte = 0; byte < 2; ++byte) {
        const std::size_t k = static_cast<std::size_t>((slot * layer.k_pool.stride(0) + e) * 2 + byte);
        const std::size_t v = static_cast<std::size_t>((slot * layer.v_pool.stride(0) + e) * 2 + byte);
        k_written = k_written && a.k_pools[static_cast<std::size_t>(l)][k] == b.k_pools[static_cast<std::size_t>(l)][k];
        v_written = v_written && a.v_pools[static_cast<std::size_t>(l)][v] == b.v_pools[static_cast<std::size_t>(l)][v];
      }
    EXPECT_EQ(k_written, v_written) << "slot " << slot << ": K and V must be written together";
    if (k_written) slots.insert(slot);
  }
  return slots;
}

TEST(StackedCommitLens, TheCommittedPrefixOfEachRowIsWrittenOnEveryPath) {
  const StackedCtxKvCase c = hand_case({4, -1, -7, 0, 2, 3}, {2, 3});
  for (StackedPathRequest path :
       {StackedPathRequest::kPerLayer, StackedPathRequest::kStacked, StackedPathRequest::kFused}) {
    oracle::StackedCtxKvOptions o;
    o.path = path;
    for (int l = 0; l < 2; ++l) {
      Status s;
      EXPECT_EQ(written_slots(c, o, l, &s), (std::set<std::int64_t>{0, 2, 3, 4}))
          << "path " << static_cast<int>(path) << " layer " << l;
      EXPECT_TRUE(s.ok()) << s.ToString();
    }
  }
}

TEST(StackedCommitLens, UnderTheReservedSlot0PolicyTheUncommittedNegativeEntryIsNoError) {
  const StackedCtxKvCase c = hand_case({4, 5, -7, 0, 2, 3}, {2, 3});
  oracle::StackedCtxKvOptions o;
  o.profile.cache_loc = CacheLocPolicy::kSlotZeroReserved;
  Status s;
  EXPECT_EQ(written_slots(c, o, 1, &s), (std::set<std::int64_t>{2, 3, 4, 5}));
  EXPECT_TRUE(s.ok()) << s.ToString();
  // The same -7 committed is E159.
  const StackedCtxKvCase committed = hand_case({4, 5, -7, 0, 2, 3}, {3, 3});
  written_slots(committed, o, 1, &s);
  EXPECT_EQ(s.code, ErrorCode::kStackedNegativeCacheLoc) << s.ToString();
}

TEST(StackedCommitLens, ZeroLengthsWriteNothingOnEveryPath) {
  const StackedCtxKvCase c = hand_case({4, 1, 5, 0, 2, 3}, {0, 0});
  for (StackedPathRequest path :
       {StackedPathRequest::kPerLayer, StackedPathRequest::kStacked, StackedPathRequest::kFused}) {
    oracle::StackedCtxKvOptions o;
    o.path = path;
    Status s;
    EXPECT_TRUE(written_slots(c, o, 0, &s).empty()) << "path " << static_cast<int>(path);
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
}

TEST(StackedCommitLens, UncommittedEntriesAreNeverRead) {
  // Token (0, 2) is uncommitted: past the pools, then repeating token (0, 0)'s slot.
  for (std::int64_t loc : {std::int64_t{1000}, std::int64_t{4}}) {
    const StackedCtxKvCase c = hand_case({4, 1, loc, 0, 2, 3}, {2, 3});
    EXPECT_TRUE(validate_stacked_ctx_kv(c, ValidationLevel::kStrict).ok()) << loc;
    StackedCtxKvCase all = hand_case({4, 1, loc, 0, 2, 3}, {3, 3});
    EXPECT_FALSE(validate_stacked_ctx_kv(all, ValidationLevel::kStrict).ok()) << loc << " committed must be refused";
  }
}

TEST(StackedCommitLens, ACaseFileKeepsTheCommitLengths) {
  const StackedCtxKvCase c = hand_case({4, -1, -7, 0, 2, 3}, {2, 3});
  const StackedCtxKvCase back = testkit::stacked_case_from_json(testkit::stacked_case_to_json(c, {}));
  ASSERT_TRUE(back.has_commit_lens());
  EXPECT_EQ(back.commit_lens.bytes, c.commit_lens.bytes);
  EXPECT_EQ(back.cache_loc.meta.sizes, (std::vector<std::int64_t>{2, 3}));
  StackedCtxKvCase plain = c;
  plain.commit_lens = HostTensor{};
  plain.cache_loc.meta.sizes = {6};
  plain.cache_loc.meta.strides = {1};
  const nlohmann::json j = testkit::stacked_case_to_json(plain, {});
  EXPECT_FALSE(j.contains("commit_lens")) << "a file without commit lengths is the file earlier builds wrote";
  EXPECT_FALSE(testkit::stacked_case_from_json(j).has_commit_lens());
}

}  // namespace
}  // namespace kvc
