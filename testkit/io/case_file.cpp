// case_file.cpp: JSON serialization of InsertCase (see case_file.h).
#include "testkit/io/case_file.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "testkit/io/case_fields_io.h"

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

json tensor_to_json(const HostTensor& t) {
  if (!t.present) return nullptr;
  return json{{"meta", tensor_meta_to_json(t.meta)}, {"bytes", to_hex(t.bytes)}};
}
HostTensor tensor_from_json(const json& j) {
  HostTensor t;
  if (j.is_null()) return t;
  t.meta = tensor_meta_from_json(j.at("meta"));
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

// Case files carry a tensor's bytes inline, as hex under "bytes" (case_fields_io.h).
TensorBytesCodec hex_bytes_codec() {
  return {[](std::string_view, const HostTensor& t, json& object) { object["bytes"] = to_hex(t.bytes); },
          [](std::string_view, const json& object) { return from_hex(object.at("bytes").get<std::string>()); }};
}

}  // namespace

json case_to_json(const InsertCase& c, const kvc::Profile& profile) {
  json j = insert_case_fields_to_json(c, hex_bytes_codec());
  j["contract_version"] = kContractVersion;
  j["profile"] = kvc::profile_name(profile);
  return j;
}

InsertCase case_from_json(const json& j) {
  try {
    const int version = j.at("contract_version").get<int>();
    if (version > kContractVersion || version < 1)
      throw std::runtime_error("case written under contract version " + std::to_string(version) +
                               ", unknown to this build (version " + std::to_string(kContractVersion) +
                               "): refusing to guess what its bytes mean");
    InsertCase c;
    if (is_stacked_case_file(j))
      throw std::runtime_error("a stacked_ctx_kv case file: read it with stacked_case_from_json");
    try {
      c = insert_case_fields_from_json(j, hex_bytes_codec());
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(std::string("malformed case file: ") + e.what());
    }
    if (const std::string why = changed_meaning(c, version); !why.empty())
      throw std::runtime_error("case written under contract version " + std::to_string(version) +
                               " does not mean the same under version " + std::to_string(kContractVersion) + ": " +
                               why + "; regenerate it under version " + std::to_string(kContractVersion));
    return c;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("malformed case file: ") + e.what());
  }
}

kvc::Profile case_profile_from_json(const json& j) {
  if (!j.contains("profile")) return kvc::vllm_profile();
  if (!j.at("profile").is_string()) throw std::runtime_error("malformed case file: \"profile\" must be a string");
  std::string error;
  const auto p = kvc::parse_profile(j.at("profile").get<std::string>(), &error);
  if (!p) throw std::runtime_error("case file names an implementation profile this build cannot read: " + error);
  return *p;
}

bool is_stacked_case_file(const json& j) {
  return j.is_object() && j.contains("op") && j.at("op").is_string() &&
         j.at("op").get<std::string>() == "stacked_ctx_kv";
}

json stacked_case_to_json(const StackedCtxKvCase& c, const StackedProfile& profile) {
  json layers = json::array();
  for (const StackedCtxKvLayer& l : c.layers) {
    std::uint32_t eps_bits;
    std::memcpy(&eps_bits, &l.eps, sizeof eps_bits);
    layers.push_back(json{{"qkv_weight", tensor_to_json(l.qkv_weight)},
                          {"qkv_bias", tensor_to_json(l.qkv_bias)},
                          {"k_norm_weight", tensor_to_json(l.k_norm_weight)},
                          {"cos_sin", tensor_to_json(l.cos_sin)},
                          {"eps", l.eps},
                          {"eps_bits", eps_bits},
                          {"q_size", l.q_size},
                          {"num_kv_heads", l.num_kv_heads},
                          {"head_dim", l.head_dim},
                          {"quantized", l.quantized},
                          {"k_pool", tensor_meta_to_json(l.k_pool)},
                          {"v_pool", tensor_meta_to_json(l.v_pool)}});
  }
  json j{{"contract_version", kContractVersion},
         {"op", "stacked_ctx_kv"},
         {"stacked_profile", stacked_profile_name(profile)},
         {"x", tensor_to_json(c.x)},
         {"positions", tensor_to_json(c.positions)},
         {"cache_loc", tensor_to_json(c.cache_loc)},
         {"layers", std::move(layers)}};
  // Prefix-valid writes (docs/contract.md §7): written only when present, so a file without them
  // is the file every earlier build wrote.
  if (c.has_commit_lens()) j["commit_lens"] = tensor_to_json(c.commit_lens);
  return j;
}

StackedCtxKvCase stacked_case_from_json(const json& j) {
  try {
    if (!is_stacked_case_file(j))
      throw std::runtime_error("not a stacked_ctx_kv case file (op \"" + j.value("op", std::string("?")) +
                               "\"): read it with case_from_json");
    const int version = j.at("contract_version").get<int>();
    if (version < kStackedOrderSinceVersion || version > kContractVersion)
      throw std::runtime_error("stacked_ctx_kv case written under contract version " + std::to_string(version) +
                               ": only versions " + std::to_string(kStackedOrderSinceVersion) + " to " +
                               std::to_string(kContractVersion) +
                               " fix this op's order of operations (docs/contract.md §4.5, §8)");
    (void)stacked_case_profile_from_json(j);  // a file whose policies cannot be read is refused here
    StackedCtxKvCase c;
    c.x = tensor_from_json(j.at("x"));
    c.positions = tensor_from_json(j.at("positions"));
    c.cache_loc = tensor_from_json(j.at("cache_loc"));
    if (j.contains("commit_lens")) c.commit_lens = tensor_from_json(j.at("commit_lens"));
    for (const json& lj : j.at("layers")) {
      StackedCtxKvLayer l;
      l.qkv_weight = tensor_from_json(lj.at("qkv_weight"));
      l.qkv_bias = tensor_from_json(lj.at("qkv_bias"));
      l.k_norm_weight = tensor_from_json(lj.at("k_norm_weight"));
      l.cos_sin = tensor_from_json(lj.at("cos_sin"));
      const std::uint32_t eps_bits = lj.at("eps_bits").get<std::uint32_t>();
      std::memcpy(&l.eps, &eps_bits, sizeof eps_bits);
      l.q_size = lj.at("q_size").get<std::int64_t>();
      l.num_kv_heads = lj.at("num_kv_heads").get<std::int64_t>();
      l.head_dim = lj.at("head_dim").get<std::int64_t>();
      l.quantized = lj.at("quantized").get<bool>();
      l.k_pool = tensor_meta_from_json(lj.at("k_pool"));
      l.v_pool = tensor_meta_from_json(lj.at("v_pool"));
      c.layers.push_back(std::move(l));
    }
    return c;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("malformed stacked_ctx_kv case file: ") + e.what());
  }
}

StackedProfile stacked_case_profile_from_json(const json& j) {
  const int version = j.at("contract_version").get<int>();
  if (version < 3) return contract_stacked_profile();  // version 2 declared no stacked policies
  if (!j.contains("stacked_profile") || !j.at("stacked_profile").is_string())
    throw std::runtime_error("malformed stacked_ctx_kv case file: a version " + std::to_string(version) +
                             " file records its policies as \"stacked_profile\" (docs/contract.md §7)");
  std::string error;
  const auto p = parse_stacked_profile(j.at("stacked_profile").get<std::string>(), &error);
  if (!p) throw std::runtime_error("stacked_ctx_kv case file names stacked policies this build cannot read: " + error);
  return *p;
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
