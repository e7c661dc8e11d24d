// case_fields_io.h: InsertCase <-> JSON through the one field list (case_fields.h).
//
// Case files and golden fixture manifests both call these; each passes its own way of carrying
// a tensor's bytes (a TensorBytesCodec). Everything else (metadata, geometry, flags, scalars) is
// written and read here, once.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kvc/insert_case.h"

namespace kvc::testkit {

struct TensorBytesCodec {
  // Adds the members that carry `t.bytes` to `object` (which already holds "meta").
  std::function<void(std::string_view field, const HostTensor& t, nlohmann::json& object)> write;
  // The bytes of a present tensor from its object.
  std::function<std::vector<std::uint8_t>(std::string_view field, const nlohmann::json& object)> read;
};

// One JSON member per case_fields::kInsertCaseFields entry.
nlohmann::json insert_case_fields_to_json(const InsertCase& c, const TensorBytesCodec& codec);
// Reads every listed member into a fresh InsertCase. A missing member or one of the wrong type
// throws std::runtime_error naming it.
InsertCase insert_case_fields_from_json(const nlohmann::json& j, const TensorBytesCodec& codec);

nlohmann::json tensor_meta_to_json(const TensorMeta& m);
TensorMeta tensor_meta_from_json(const nlohmann::json& j);

}  // namespace kvc::testkit
