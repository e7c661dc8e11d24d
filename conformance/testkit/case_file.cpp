// case_file.cpp: JSON serialization of InsertCase (see case_file.h).
#include "kvc/testkit/case_file.h"

#include <cstdio>
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
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<std::uint8_t>(nibble(s[2 * i]) << 4 | nibble(s[2 * i + 1]));
  return out;
}

json meta_to_json(const TensorMeta& m) {
  return json{{"dtype", static_cast<int>(m.dtype)},
              {"sizes", m.sizes},
              {"strides", m.strides},
              {"offset_bytes", m.offset_bytes},
              {"device", m.device}};
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

bool is_bf16_nan(std::uint16_t bits) { return (bits & 0x7FFFu) > 0x7F80u; }

// A NaN in a NoPE dim of a live row (slot >= 0, row < M) of a bf16_512 case, as "row R dim D
// holds 0xXXXX", or "". Reads only what the tensors' bytes hold: a malformed case is left to
// validation.
std::string bf16_nope_nan(const InsertCase& c) {
  if (format_of(c) != RecordFormat::kBf16_512 || c.kv.meta.dtype != DType::kBF16) return {};
  const auto readable = [](const HostTensor& t, std::int64_t element, int bytes) {
    return t.present && t.meta.offset_bytes >= 0 && element >= 0 &&
           t.meta.offset_bytes + (element + 1) * bytes <= static_cast<std::int64_t>(t.bytes.size());
  };
  for (std::int64_t t = 0; t < c.num_inserted(); ++t) {
    if (!readable(c.slots, t, 8) || c.slots.load<std::int64_t>(t) < 0) continue;
    for (int d = 0; d < kNopeDim; ++d) {
      const std::int64_t element = t * kHeadDim + d;
      if (!readable(c.kv, element, 2)) return {};
      const std::uint16_t bits = c.kv.load<std::uint16_t>(element);
      if (is_bf16_nan(bits)) {
        char where[64];
        std::snprintf(where, sizeof where, "row %lld dim %d holds 0x%04x", static_cast<long long>(t), d, bits);
        return where;
      }
    }
  }
  return {};
}

// Why a case written under `version` would not mean the same under this build's contract, or "".
// docs/contract.md, "Changes from version 1": a version 1 file means the same under version 2
// unless its case is bf16_512 with a NaN in a NoPE dim of a live row, or a legacy case with
// q_interleaved.
std::string changed_meaning(const InsertCase& c, int version) {
  if (version >= 2) return {};
  if (const std::string nan = bf16_nope_nan(c); !nan.empty())
    return "version 2 stores every NaN of a bf16_512 NoPE dim as 0x7FFF (docs/contract.md §3.6), version 1 kept its "
           "payload, and this case has one (" +
           nan + ")";
  if (c.op == InsertOp::kLegacy && c.q_interleaved)
    return "with q_interleaved, version 2 reads q_in interleaved too (docs/contract.md §4), version 1 read it "
           "head-major, and this is a legacy case with q_interleaved";
  return {};
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
      {"cache", json{{"dtype", static_cast<int>(g.dtype)},
                     {"rank", g.rank},
                     {"num_blocks", g.num_blocks},
                     {"block_size", g.block_size},
                     {"width", g.width},
                     {"strides", {g.stride0, g.stride1, g.stride2}},
                     {"offset_bytes", g.offset_bytes},
                     {"device", g.device}}},
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
    if (version > kContractVersion || version < 1)
      throw std::runtime_error("case written under contract version " + std::to_string(version) +
                               ", unknown to this build (version " + std::to_string(kContractVersion) +
                               "): refusing to guess what its bytes mean");
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
    if (const std::string why = changed_meaning(c, version); !why.empty())
      throw std::runtime_error("case written under contract version " + std::to_string(version) +
                               " does not mean the same under version " + std::to_string(kContractVersion) + ": " +
                               why + "; regenerate it under version " + std::to_string(kContractVersion));
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
