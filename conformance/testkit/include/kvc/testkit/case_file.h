// case_file.h: InsertCase <-> JSON, the format of fuzz corpus files and replayable cases.
//
// A case file is self-contained: every tensor's metadata and bytes (hex), the cache geometry and
// the op's flags, plus the contract version it was written under. Readers reject files of another
// contract version, since their expected bytes may no longer hold.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "kvc/insert_case.h"

namespace kvc::testkit {

nlohmann::json case_to_json(const InsertCase& c);
// Throws std::runtime_error with a message naming the bad field.
InsertCase case_from_json(const nlohmann::json& j);

void write_json_file(const std::string& path, const nlohmann::json& j);
nlohmann::json read_json_file(const std::string& path);

}  // namespace kvc::testkit
