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

// The InsertCase member behind each listed name, one table per member type. A listed field
// without a binding is a programming error (case_fields_test round-trips every field).
template <typename T>
struct Binding {
  std::string_view name;
  T InsertCase::*member;
};
constexpr Binding<HostTensor> kTensorMembers[] = {
    {"kv", &InsertCase::kv},
    {"slots", &InsertCase::slots},
    {"positions", &InsertCase::positions},
    {"cos_sin", &InsertCase::cos_sin},
    {"fp8_scale", &InsertCase::fp8_scale},
    {"q", &InsertCase::q},
    {"q_scale_inv", &InsertCase::q_scale_inv},
    {"kv_norm_weight", &InsertCase::kv_norm_weight},
};
constexpr Binding<bool> kBoolMembers[] = {{"kv_mxfp8", &InsertCase::kv_mxfp8},
                                          {"apply_q_norm", &InsertCase::apply_q_norm},
                                          {"apply_q_rope", &InsertCase::apply_q_rope},
                                          {"q_interleaved", &InsertCase::q_interleaved}};
constexpr Binding<float> kFloatMembers[] = {{"eps", &InsertCase::eps}, {"kv_norm_eps", &InsertCase::kv_norm_eps}};
constexpr Binding<std::int64_t> kIntMembers[] = {{"block_size", &InsertCase::block_size}};

// The member of `c` that `bindings` bind to `name`. A template over InsertCase and const
// InsertCase: the writer and the reader share one binding.
template <typename Case, typename T, std::size_t N>
auto& bound(Case& c, const Binding<T> (&bindings)[N], std::string_view name) {
  for (const Binding<T>& b : bindings)
    if (b.name == name) return c.*(b.member);
  throw std::logic_error("case_fields lists \"" + std::string(name) + "\" but no InsertCase member is bound to it");
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
        const HostTensor& t = bound(c, kTensorMembers, f.name);
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
      case cf::Kind::kInt: j[key] = bound(c, kIntMembers, f.name); break;
      case cf::Kind::kBool: j[key] = bound(c, kBoolMembers, f.name); break;
      case cf::Kind::kFloat: j[key] = bound(c, kFloatMembers, f.name); break;
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
          HostTensor& t = bound(c, kTensorMembers, f.name);
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
        case cf::Kind::kInt: bound(c, kIntMembers, f.name) = v.get<std::int64_t>(); break;
        case cf::Kind::kBool: bound(c, kBoolMembers, f.name) = v.get<bool>(); break;
        case cf::Kind::kFloat: bound(c, kFloatMembers, f.name) = v.get<float>(); break;
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
