// case_file.h: InsertCase <-> JSON, the format of fuzz corpus files and replayable cases.
//
// A case file is self-contained: every tensor's metadata and bytes (hex), the cache geometry and
// the op's flags, plus the contract version and the implementation profile it was written under. A file of an older
// version is read when its case means the same under this build's version (docs/contract.md, "Changes from version 1"):
// a version 1 file is refused only when its case is bf16_512 with a NaN in a NoPE dim of a live row, or a legacy case
// with q_interleaved. A file of an unknown (newer) version is refused. Refusals throw with a message that names the
// change.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "kvc/insert_case.h"
#include "kvc/stacked_ctx_kv_case.h"
#include "kvc/profile.h"
#include "kvc/stacked_profile.h"

namespace kvc::testkit {

// `profile`: the implementation profile the case's expectations hold under (docs/contract.md
// §6), recorded as "profile": its name (kvc::profile_name).
nlohmann::json case_to_json(const InsertCase& c, const kvc::Profile& profile = kvc::vllm_profile());
// Throws std::runtime_error with a message naming the bad field, or the contract change that
// makes an older file mean something else.
InsertCase case_from_json(const nlohmann::json& j);
// The profile a case file records; a file without one (every file written before profiles) is a
// `vllm` case. Throws std::runtime_error for a profile this build cannot parse.
kvc::Profile case_profile_from_json(const nlohmann::json& j);

// Stacked context-KV cases (docs/contract.md §4.5): op "stacked_ctx_kv", every layer's tensors,
// pool views and scalars (eps as its bits). Each reader refuses the other kind's files, naming
// the right reader; a stacked file written under version 1 is refused (version 1 fixed no order
// of operations for this op, so its expectations cannot be replayed exactly). Since version 3 a
// stacked file records the stacked policies its expectations hold under, "stacked_profile":
// kvc::stacked_profile_name (docs/contract.md §7); a version 2 file, which has none, holds under
// the contract's.
nlohmann::json stacked_case_to_json(const StackedCtxKvCase& c,
                                    const StackedProfile& profile = contract_stacked_profile());
StackedCtxKvCase stacked_case_from_json(const nlohmann::json& j);
// The stacked policies a stacked case file records: version 2, the contract's; version 3, its
// "stacked_profile" (a version 3 file without one is malformed). Throws std::runtime_error for a
// spec this build cannot read.
StackedProfile stacked_case_profile_from_json(const nlohmann::json& j);
bool is_stacked_case_file(const nlohmann::json& j);

void write_json_file(const std::string& path, const nlohmann::json& j);
nlohmann::json read_json_file(const std::string& path);

}  // namespace kvc::testkit
