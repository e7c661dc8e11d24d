// case_fields_io.cpp: InsertCase <-> JSON through case_fields.h (see case_fields_io.h).
#include "testkit/io/case_fields_io.h"

#include <stdexcept>
#include <string>

#include "kvc/case_fields.h"

namespace kvc::testkit {
namespace {

using nlohmann::json;
namespace cf = case_fields;

// The wire codes are kvc::DType's numbers: files written by any build stay readable.
constexpr bool dtype_codes_match() {
  for (const cf::DTypeCode& d : cf::kDTypeCodes)
    if (dtype_size(static_cast<DType>(d.code)) != d.bytes) return false;
  return static_cast<int>(DType::kBF16) == cf::dtype_code("bf16")->code &&
         static_cast<int>(DType::kF16) == cf::dtype_code("f16")->code &&
         static_cast<int>(DType::kF32) == cf::dtype_code("f32")->code &&
         static_cast<int>(DType::kI64) == cf::dtype_code("i64")->code &&
         static_cast<int>(DType::kU8) == cf::dtype_code("u8")->code &&
         static_cast<int>(DType::kE4M3) == cf::dtype_code("e4m3")->code &&
         static_cast<int>(DType::kI32) == cf::dtype_code("i32")->code;
}
static_assert(dtype_codes_match(), "case_fields::kDTypeCodes must equal kvc::DType");

// The InsertCase member behind each listed name. A listed field without a binding is a
// programming error (case_fields_test round-trips every field).
// Templates over InsertCase and const InsertCase: the writer and the reader share one binding.
template <typename Case>
auto tensor_member(Case& c, std::string_view name) -> decltype(&c.kv) {
  if (name == "kv") return &c.kv;
  if (name == "slots") return &c.slots;
  if (name == "positions") return &c.positions;
  if (name == "cos_sin") return &c.cos_sin;
  if (name == "fp8_scale") return &c.fp8_scale;
  if (name == "q") return &c.q;
  if (name == "q_scale_inv") return &c.q_scale_inv;
  if (name == "kv_norm_weight") return &c.kv_norm_weight;
  return nullptr;
}
template <typename Case>
auto bool_member(Case& c, std::string_view name) -> decltype(&c.kv_mxfp8) {
  if (name == "kv_mxfp8") return &c.kv_mxfp8;
  if (name == "apply_q_norm") return &c.apply_q_norm;
  if (name == "apply_q_rope") return &c.apply_q_rope;
  if (name == "q_interleaved") return &c.q_interleaved;
  return nullptr;
}
template <typename Case>
auto float_member(Case& c, std::string_view name) -> decltype(&c.eps) {
  if (name == "eps") return &c.eps;
  if (name == "kv_norm_eps") return &c.kv_norm_eps;
  return nullptr;
}
template <typename Case>
auto int_member(Case& c, std::string_view name) -> decltype(&c.block_size) {
  if (name == "block_size") return &c.block_size;
  return nullptr;
}

template <typename T>
T& bound(T* member, std::string_view name) {
  if (member == nullptr)
    throw std::logic_error("case_fields lists \"" + std::string(name) + "\" but no InsertCase member is bound to it");
  return *member;
}

const json& member(const json& j, std::string_view name) {
  const std::string key(name);
  if (!j.is_object() || !j.contains(key)) throw std::runtime_error("missing field \"" + key + "\"");
  return j.at(key);
}

json geometry_to_json(const CacheGeometry& g) {
  return json{{"dtype", static_cast<int>(g.dtype)}, {"rank", g.rank},    {"num_blocks", g.num_blocks},
              {"block_size", g.block_size},         {"width", g.width},  {"strides", {g.stride0, g.stride1, g.stride2}},
              {"offset_bytes", g.offset_bytes},     {"device", g.device}};
}

CacheGeometry geometry_from_json(const json& j) {
  CacheGeometry g;
  g.dtype = static_cast<DType>(member(j, "dtype").get<int>());
  g.rank = member(j, "rank").get<int>();
  g.num_blocks = member(j, "num_blocks").get<std::int64_t>();
  g.block_size = member(j, "block_size").get<std::int64_t>();
  g.width = member(j, "width").get<std::int64_t>();
  const auto strides = member(j, "strides").get<std::vector<std::int64_t>>();
  if (strides.size() != 3) throw std::runtime_error("cache.strides needs 3 entries");
  g.stride0 = strides[0];
  g.stride1 = strides[1];
  g.stride2 = strides[2];
  g.offset_bytes = member(j, "offset_bytes").get<std::int64_t>();
  g.device = member(j, "device").get<int>();
  return g;
}

}  // namespace

json tensor_meta_to_json(const TensorMeta& m) {
  return json{{"dtype", static_cast<int>(m.dtype)},
              {"sizes", m.sizes},
              {"strides", m.strides},
              {"offset_bytes", m.offset_bytes},
              {"device", m.device}};
}

TensorMeta tensor_meta_from_json(const json& j) {
  TensorMeta m;
  m.dtype = static_cast<DType>(member(j, "dtype").get<int>());
  m.sizes = member(j, "sizes").get<std::vector<std::int64_t>>();
  m.strides = member(j, "strides").get<std::vector<std::int64_t>>();
  m.offset_bytes = member(j, "offset_bytes").get<std::int64_t>();
  m.device = member(j, "device").get<int>();
  return m;
}

json insert_case_fields_to_json(const InsertCase& c, const TensorBytesCodec& codec) {
  json j = json::object();
  for (const cf::Field& f : cf::kInsertCaseFields) {
    const std::string key(f.name);
    switch (f.kind) {
      case cf::Kind::kOp: j[key] = std::string(c.op == InsertOp::kLegacy ? cf::kOpLegacy : cf::kOpKvOnly); break;
      case cf::Kind::kTensor: {
        const HostTensor& t = bound(tensor_member(c, f.name), f.name);
        if (!t.present) {
          j[key] = nullptr;
          break;
        }
        json object{{std::string(cf::kMetaKey), tensor_meta_to_json(t.meta)}};
        codec.write(f.name, t, object);
        j[key] = std::move(object);
        break;
      }
      case cf::Kind::kTensorMeta:  // q_out: the legacy op's output; the KV-only op has none
        j[key] = c.op == InsertOp::kLegacy ? tensor_meta_to_json(c.q_out) : json(nullptr);
        break;
      case cf::Kind::kCacheGeometry: j[key] = geometry_to_json(c.cache); break;
      case cf::Kind::kInt: j[key] = bound(int_member(c, f.name), f.name); break;
      case cf::Kind::kBool: j[key] = bound(bool_member(c, f.name), f.name); break;
      case cf::Kind::kFloat: j[key] = bound(float_member(c, f.name), f.name); break;
    }
  }
  return j;
}

InsertCase insert_case_fields_from_json(const json& j, const TensorBytesCodec& codec) {
  InsertCase c;
  for (const cf::Field& f : cf::kInsertCaseFields) {
    const json& v = member(j, f.name);
    try {
      switch (f.kind) {
        case cf::Kind::kOp: {
          const std::string op = v.get<std::string>();
          if (op == cf::kOpLegacy)
            c.op = InsertOp::kLegacy;
          else if (op == cf::kOpKvOnly)
            c.op = InsertOp::kKvOnly;
          else
            throw std::runtime_error("unknown op \"" + op + "\"");
          break;
        }
        case cf::Kind::kTensor: {
          HostTensor& t = bound(tensor_member(c, f.name), f.name);
          if (v.is_null()) break;  // absent optional
          t.meta = tensor_meta_from_json(member(v, cf::kMetaKey));
          t.bytes = codec.read(f.name, v);
          t.present = true;
          break;
        }
        case cf::Kind::kTensorMeta:
          if (!v.is_null()) c.q_out = tensor_meta_from_json(v);
          break;
        case cf::Kind::kCacheGeometry: c.cache = geometry_from_json(v); break;
        case cf::Kind::kInt: bound(int_member(c, f.name), f.name) = v.get<std::int64_t>(); break;
        case cf::Kind::kBool: bound(bool_member(c, f.name), f.name) = v.get<bool>(); break;
        case cf::Kind::kFloat: bound(float_member(c, f.name), f.name) = v.get<float>(); break;
      }
    } catch (const json::exception& e) {
      throw std::runtime_error("field \"" + std::string(f.name) + "\": " + e.what());
    } catch (const std::runtime_error& e) {
      throw std::runtime_error("field \"" + std::string(f.name) + "\": " + e.what());
    }
  }
  return c;
}

}  // namespace kvc::testkit
