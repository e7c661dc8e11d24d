// case_file.cpp: JSON serialization of InsertCase (see case_file.h).
#include "kvc/testkit/case_file.h"

#include <fstream>
#include <stdexcept>

namespace kvc::testkit {
namespace {

using nlohmann::json;

std::string to_hex(const std::vector<std::uint8_t>& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (std::uint8_t b : bytes) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

std::vector<std::uint8_t> from_hex(const std::string& s) {
  if (s.size() % 2) throw std::runtime_error("hex payload of odd length");
  auto nibble = [](char ch) -> int {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    throw std::runtime_error("bad hex digit");
  };
  std::vector<std::uint8_t> out(s.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::uint8_t>(nibble(s[2 * i]) << 4 | nibble(s[2 * i + 1]));
  return out;
}

json meta_to_json(const TensorMeta& m) {
  return json{{"dtype", static_cast<int>(m.dtype)}, {"sizes", m.sizes}, {"strides", m.strides},
              {"offset_bytes", m.offset_bytes}, {"device", m.device}};
}
TensorMeta meta_from_json(const json& j) {
  TensorMeta m;
  m.dtype = static_cast<DType>(j.at("dtype").get<int>());
  m.sizes = j.at("sizes").get<std::vector<std::int64_t>>();
  m.strides = j.at("strides").get<std::vector<std::int64_t>>();
  m.offset_bytes = j.at("offset_bytes").get<std::int64_t>();
  m.device = j.at("device").get<int>();
  return m;
}

json tensor_to_json(const HostTensor& t) {
  if (!t.present) return nullptr;
  return json{{"meta", meta_to_json(t.meta)}, {"bytes", to_hex(t.bytes)}};
}
HostTensor tensor_from_json(const json& j) {
  HostTensor t;
  if (j.is_null()) return t;
  t.meta = meta_from_json(j.at("meta"));
  t.bytes = from_hex(j.at("bytes").get<std::string>());
  t.present = true;
  return t;
}

}  // namespace

json case_to_json(const InsertCase& c) {
  const CacheGeometry& g = c.cache;
  return json{
      {"contract_version", kContractVersion},
      {"op", c.op == InsertOp::kLegacy ? "legacy" : "kv_only"},
      {"kv", tensor_to_json(c.kv)},
      {"slots", tensor_to_json(c.slots)},
      {"positions", tensor_to_json(c.positions)},
      {"cos_sin", tensor_to_json(c.cos_sin)},
      {"fp8_scale", tensor_to_json(c.fp8_scale)},
      {"cache", json{{"dtype", static_cast<int>(g.dtype)}, {"rank", g.rank}, {"num_blocks", g.num_blocks},
                     {"block_size", g.block_size}, {"width", g.width}, {"strides", {g.stride0, g.stride1, g.stride2}},
                     {"offset_bytes", g.offset_bytes}, {"device", g.device}}},
      {"block_size", c.block_size},
      {"kv_mxfp8", c.kv_mxfp8},
      {"q", tensor_to_json(c.q)},
      {"q_out", c.op == InsertOp::kLegacy ? meta_to_json(c.q_out) : json(nullptr)},
      {"q_scale_inv", tensor_to_json(c.q_scale_inv)},
      {"eps", c.eps},
      {"apply_q_norm", c.apply_q_norm},
      {"apply_q_rope", c.apply_q_rope},
      {"q_interleaved", c.q_interleaved},
      {"kv_norm_weight", tensor_to_json(c.kv_norm_weight)},
      {"kv_norm_eps", c.kv_norm_eps},
  };
}

InsertCase case_from_json(const json& j) {
  try {
    const int version = j.at("contract_version").get<int>();
    if (version != kContractVersion)
      throw std::runtime_error("case written under contract version " + std::to_string(version) + ", this build is version " +
                               std::to_string(kContractVersion));
    InsertCase c;
    c.op = j.at("op").get<std::string>() == "legacy" ? InsertOp::kLegacy : InsertOp::kKvOnly;
    c.kv = tensor_from_json(j.at("kv"));
    c.slots = tensor_from_json(j.at("slots"));
    c.positions = tensor_from_json(j.at("positions"));
    c.cos_sin = tensor_from_json(j.at("cos_sin"));
    c.fp8_scale = tensor_from_json(j.at("fp8_scale"));
    const json& g = j.at("cache");
    c.cache.dtype = static_cast<DType>(g.at("dtype").get<int>());
    c.cache.rank = g.at("rank").get<int>();
    c.cache.num_blocks = g.at("num_blocks").get<std::int64_t>();
    c.cache.block_size = g.at("block_size").get<std::int64_t>();
    c.cache.width = g.at("width").get<std::int64_t>();
    const auto strides = g.at("strides").get<std::vector<std::int64_t>>();
    if (strides.size() != 3) throw std::runtime_error("cache.strides needs 3 entries");
    c.cache.stride0 = strides[0];
    c.cache.stride1 = strides[1];
    c.cache.stride2 = strides[2];
    c.cache.offset_bytes = g.at("offset_bytes").get<std::int64_t>();
    c.cache.device = g.at("device").get<int>();
    c.block_size = j.at("block_size").get<std::int64_t>();
    c.kv_mxfp8 = j.at("kv_mxfp8").get<bool>();
    c.q = tensor_from_json(j.at("q"));
    if (!j.at("q_out").is_null()) c.q_out = meta_from_json(j.at("q_out"));
    c.q_scale_inv = tensor_from_json(j.at("q_scale_inv"));
    c.eps = j.at("eps").get<float>();
    c.apply_q_norm = j.at("apply_q_norm").get<bool>();
    c.apply_q_rope = j.at("apply_q_rope").get<bool>();
    c.q_interleaved = j.at("q_interleaved").get<bool>();
    c.kv_norm_weight = tensor_from_json(j.at("kv_norm_weight"));
    c.kv_norm_eps = j.at("kv_norm_eps").get<float>();
    return c;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("malformed case file: ") + e.what());
  }
}

void write_json_file(const std::string& path, const json& j) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path);
  f << j.dump(1) << "\n";
}

json read_json_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot read " + path);
  return json::parse(f);
}

}  // namespace kvc::testkit
