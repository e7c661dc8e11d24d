// case_fields.h: the one list of the fields a file records for an insert case.
//
// Case files (case_file.h) and golden fixture manifests (golden/) describe an InsertCase with the
// same JSON members, in the same encoding; only the way a tensor's bytes travel differs (inline
// hex in a case file, a range of a binary payload in a fixture). This header is that list, as
// plain data: it includes nothing of kvconform, so that the golden generator, which must share
// no code with the oracle, writes its manifests from the same list that case_fields_io.h binds
// to InsertCase members. A field added to InsertCase is added here once, and both writers and
// both readers follow (a reader rejects a file that lacks a listed field).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace kvc::testkit::case_fields {

// How a member is encoded.
enum class Kind : std::uint8_t {
  kOp,             // string: kOpKvOnly or kOpLegacy
  kTensor,         // null (an absent optional) or {"meta": tensor meta, ...the tensor's bytes}
  kTensorMeta,     // null when the op has no such output, else a tensor meta
  kCacheGeometry,  // an object with kCacheKeys
  kInt,            // integer
  kBool,           // true / false
  kFloat,          // a number holding an fp32 value exactly
};

struct Field {
  std::string_view name;
  Kind kind;
};

// Every member of an insert case, in the order InsertCase declares them.
inline constexpr std::array<Field, 18> kInsertCaseFields = {{
    {"op", Kind::kOp},
    {"kv", Kind::kTensor},
    {"slots", Kind::kTensor},
    {"positions", Kind::kTensor},
    {"cos_sin", Kind::kTensor},
    {"fp8_scale", Kind::kTensor},
    {"cache", Kind::kCacheGeometry},
    {"block_size", Kind::kInt},
    {"kv_mxfp8", Kind::kBool},
    {"q", Kind::kTensor},
    {"q_out", Kind::kTensorMeta},
    {"q_scale_inv", Kind::kTensor},
    {"eps", Kind::kFloat},
    {"apply_q_norm", Kind::kBool},
    {"apply_q_rope", Kind::kBool},
    {"q_interleaved", Kind::kBool},
    {"kv_norm_weight", Kind::kTensor},
    {"kv_norm_eps", Kind::kFloat},
}};

inline constexpr std::string_view kOpKvOnly = "kv_only";
inline constexpr std::string_view kOpLegacy = "legacy";

// A present tensor is an object with its metadata under kMetaKey; the bytes sit beside it
// (case files: "bytes", hex; fixtures: "payload", a range of the payload file).
inline constexpr std::string_view kMetaKey = "meta";
inline constexpr std::array<std::string_view, 5> kTensorMetaKeys = {"dtype", "sizes", "strides", "offset_bytes",
                                                                    "device"};
// Cache geometry members; "strides" holds stride0, stride1, stride2 (elements of the cache dtype).
inline constexpr std::array<std::string_view, 8> kCacheKeys = {"dtype", "rank",    "num_blocks",   "block_size",
                                                               "width", "strides", "offset_bytes", "device"};

// Element types as files write them: the integer under "dtype". The numbers are those of
// kvc::DType (case_fields_io.cpp checks it at compile time); they never change.
struct DTypeCode {
  std::string_view name;
  int code;
  int bytes;
};
inline constexpr std::array<DTypeCode, 7> kDTypeCodes = {{
    {"bf16", 0, 2},
    {"f16", 1, 2},
    {"f32", 2, 4},
    {"i64", 3, 8},
    {"u8", 4, 1},
    {"e4m3", 5, 1},
    {"i32", 6, 4},
}};

constexpr const DTypeCode* dtype_code(std::string_view name) {
  for (const DTypeCode& d : kDTypeCodes)
    if (d.name == name) return &d;
  return nullptr;
}

}  // namespace kvc::testkit::case_fields
