// approx_rsqrt.h: checking a backend that declares the "approximate rsqrt" mode (docs/contract.md §2, §6).
//
// The contract's rsqrt is correctly rounded. A kernel that uses the hardware approximation
// (rsqrtf, as the upstream vLLM q-norm does) cannot match byte for byte, so the freedom is granted
// on r itself, not on the outputs: a norm row passes iff its bytes equal exactly the oracle's bytes
// for that row computed with some r' within kApproxRsqrtMaxUlps fp32 ulps of the correctly rounded
// r. (A budget on the outputs does not work: RoPE cancellation turns 1 ulp of r into several bf16
// ulps of an output.) Every byte that is not part of a norm row must still be exact.
//
// A norm row is one Q head of one token in the legacy op's q output (when apply_q_norm), the
// record of one token of a KV-only insert with kv_norm fused in front, or one output row of the
// standalone kv_norm. Cost: one oracle recomputation of a row per candidate r', only for rows
// that differ from the exact result.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvc/contract.h"
#include "kvc/insert_case.h"
#include "kvc/profile.h"
#include "testkit/backends/backend.h"

namespace kvc::testkit {

enum class NormRowKind : std::uint8_t {
  kQHead,         // q output of (token, head)
  kKvNormRecord,  // cache record of a token whose row went through the fused kv_norm
  kKvNormOutput,  // output row `token` of the standalone kv_norm
};

struct NormRow {
  NormRowKind kind = NormRowKind::kQHead;
  std::int64_t token = 0;
  std::int64_t head = -1;  // kQHead only
  std::int64_t slot = -1;  // kKvNormRecord only
};
// "token 3 head 1", "token 3 (slot 17)", "row 3".
std::string describe(const NormRow& row);

// The norm rows of an insert case, in order: every (t, h < H) of a legacy case with apply_q_norm;
// every token t < M with a live slot of a KV-only case with kv_norm (for a slot written twice,
// only the last writer's record is observable). Empty when no norm runs.
std::vector<NormRow> norm_rows(const InsertCase& c);

// r moved by `ulps` fp32 ulps (positive: up). r itself when it is not finite.
float offset_by_ulps(float r, int ulps);

// Rewrites one norm row of `out` (outputs of the oracle for this case under `profile`) with the
// row computed with r' = r moved by `ulps` ulps; no other byte changes. A kv_norm record is
// encoded under `profile`'s record policies (its rsqrt policy is what r' stands for). Tests plant
// rows with it.
void rewrite_norm_row(const InsertCase& c, const NormRow& row, int ulps, InsertOutputs& out,
                      const kvc::Profile& profile = kvc::vllm_profile());
void rewrite_kv_norm_row(const HostTensor& kv, const HostTensor& weight, float eps, std::int64_t row, int ulps,
                         std::vector<std::uint16_t>& out);

struct RowOffset {
  NormRow row;
  int ulps = 0;  // the r' that reproduced the row: r moved by this many ulps
};

struct ApproxRsqrtResult {
  RsqrtMode mode = RsqrtMode::kCorrectlyRounded;
  bool accepted = false;
  std::int64_t norm_rows = 0;     // rows the mode applied to (0 under kCorrectlyRounded)
  std::vector<RowOffset> moved;   // rows reproduced only with r' != r, in row order
  std::vector<NormRow> rejected;  // rows that no r' in the window reproduces
  bool other_bytes_equal = true;  // every byte outside the norm rows equals the oracle's
  std::string report;             // mode, offsets used, rejected rows, remaining byte diff
};

// Compares a backend's outputs with the oracle's (`expected`, computed with the correctly rounded
// r under `profile`'s record policies) under `mode`. kCorrectlyRounded: byte-exact, cache and q
// output. kApproximate: as above.
ApproxRsqrtResult compare_under_rsqrt_mode(const InsertCase& c, RsqrtMode mode, const InsertOutputs& expected,
                                           const InsertOutputs& actual,
                                           const kvc::Profile& profile = kvc::vllm_profile());

// The same for the standalone kv_norm's [N, 512] bf16 outputs.
ApproxRsqrtResult compare_kv_norm_under_rsqrt_mode(const HostTensor& kv, const HostTensor& weight, float eps,
                                                   RsqrtMode mode, const std::vector<std::uint16_t>& expected,
                                                   const std::vector<std::uint16_t>& actual);

// The mode `backend` declares for this case's norm rows: its Q-norm for a legacy case, its kv_norm
// for a KV-only case.
RsqrtMode declared_rsqrt_mode(const Backend& backend, const InsertCase& c);

std::string_view rsqrt_mode_name(RsqrtMode mode);

}  // namespace kvc::testkit
