// case_file.h: InsertCase <-> JSON, the format of fuzz corpus files and replayable cases.
//
// A case file is self-contained: every tensor's metadata and bytes (hex), the cache geometry and
// the op's flags, plus the contract version it was written under. A file of an older version is
// read when its case means the same under this build's version (docs/contract.md, "Changes from
// version 1"): a version 1 file is refused only when its case is bf16_512 with a NaN in a NoPE
// dim of a live row, or a legacy case with q_interleaved. A file of an unknown (newer) version is
// refused. Refusals throw with a message that names the change.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "kvc/insert_case.h"

namespace kvc::testkit {

nlohmann::json case_to_json(const InsertCase& c);
// Throws std::runtime_error with a message naming the bad field, or the contract change that
// makes an older file mean something else.
InsertCase case_from_json(const nlohmann::json& j);

void write_json_file(const std::string& path, const nlohmann::json& j);
nlohmann::json read_json_file(const std::string& path);

}  // namespace kvc::testkit
