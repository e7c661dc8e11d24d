// shim_config.cpp: the shims' configuration (see shim_config.h).
#include "shim_config.h"

#include <algorithm>
#include <cctype>
#include <fstream>

#include "kvc/abi/enum_mapping.h"

namespace kvc::shim {
namespace {

using json = nlohmann::json;

constexpr const char* kPolicyFields[] = {"rope",     "clamp_order",    "inf_block",
                                         "pad_byte", "scale_exponent", "amax_floor"};

const std::map<std::string, AbiEntry>& entry_names() {
  static const std::map<std::string, AbiEntry> names = {{"kv_only_insert", AbiEntry::kKvOnlyInsert},
                                                        {"kv_only_insert_kv_norm", AbiEntry::kKvOnlyInsertKvNorm},
                                                        {"legacy_insert", AbiEntry::kLegacyInsert},
                                                        {"kv_norm", AbiEntry::kKvNorm}};
  return names;
}

int rsqrt_mode(const json& j, const char* key) {
  if (!j.contains(key)) return abi::abi_rsqrt(RsqrtMode::kCorrectlyRounded);
  const std::string v = j.at(key).get<std::string>();
  if (v == "correctly_rounded") return abi::abi_rsqrt(RsqrtMode::kCorrectlyRounded);
  if (v == "approximate") return abi::abi_rsqrt(RsqrtMode::kApproximate);
  throw ConfigError(std::string("rsqrt.") + key + ": \"" + v + "\" (correctly_rounded or approximate)");
}

bool c_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; });
}

OpBinding parse_binding(const json& j, const std::string& where, OpNaming naming) {
  if (!j.is_object() || !j.contains("op")) throw ConfigError(where + ": a binding needs \"op\"");
  OpBinding b;
  const std::string name = j.at("op").get<std::string>();
  if (naming == OpNaming::kTorchSchema) {
    const std::size_t ns = name.find("::");
    if (ns == std::string::npos || ns == 0) throw ConfigError(where + ".op: \"" + name + "\" is not namespace::name");
    const std::size_t dot = name.find('.', ns + 2);
    b.op = name.substr(0, dot);
    if (dot != std::string::npos) b.overload = name.substr(dot + 1);
  } else {
    if (!c_identifier(name))
      throw ConfigError(where + ".op: \"" + name + "\" is not a tvm-ffi export name (the symbol is __tvm_ffi_<name>)");
    b.op = name;
  }
  if (j.contains("formats")) {
    for (const json& f : j.at("formats")) {
      const std::string fn = f.get<std::string>();
      const auto it = std::find_if(kRecordLayouts.begin(), kRecordLayouts.end(),
                                   [&](const RecordLayout& l) { return l.name == fn; });
      if (it == kRecordLayouts.end()) throw ConfigError(where + ".formats: unknown format \"" + fn + "\"");
      b.formats.push_back(it->format);
    }
  } else {
    b.formats.assign(kAllFormats.begin(), kAllFormats.end());
  }
  if (j.contains("kv_dtypes")) {
    for (const json& d : j.at("kv_dtypes")) {
      const std::string dn = d.get<std::string>();
      if (dn == "bf16")
        b.kv_dtypes.push_back(DType::kBF16);
      else if (dn == "fp16")
        b.kv_dtypes.push_back(DType::kF16);
      else
        throw ConfigError(where + ".kv_dtypes: \"" + dn + "\" (bf16 or fp16)");
    }
  } else {
    b.kv_dtypes = {DType::kBF16};
  }
  if (naming == OpNaming::kTorchSchema) {
    if (j.contains("arguments")) {
      if (!j.at("arguments").is_object())
        throw ConfigError(where + ".arguments: an object {\"schema name\": \"value name\"} for a torch op");
      for (const auto& [k, v] : j.at("arguments").items()) b.arguments[k] = v.get<std::string>();
    }
  } else {
    if (!j.contains("arguments") || !j.at("arguments").is_array())
      throw ConfigError(where +
                        ".arguments: a tvm-ffi function takes its arguments by position: list the value "
                        "names in order ([\"kv\", \"k_cache\", ...])");
    for (const json& v : j.at("arguments")) b.positional.push_back(v.get<std::string>());
  }
  return b;
}

}  // namespace

const OpBinding* ShimConfig::find(AbiEntry entry, RecordFormat format, DType kv_dtype) const {
  const auto it = ops.find(entry);
  if (it == ops.end()) return nullptr;
  for (const OpBinding& b : it->second) {
    const bool format_ok = entry == AbiEntry::kKvNorm || std::count(b.formats.begin(), b.formats.end(), format) > 0;
    if (format_ok && std::count(b.kv_dtypes.begin(), b.kv_dtypes.end(), kv_dtype) > 0) return &b;
  }
  return nullptr;
}

ShimConfig parse_shim_config(const json& j, OpNaming naming) {
  try {
    ShimConfig c;
    c.name = j.value(
        "name", std::string(naming == OpNaming::kTorchSchema ? "unnamed torch extension" : "unnamed tvm-ffi module"));
    if (j.contains("libraries"))
      for (const json& l : j.at("libraries")) c.libraries.push_back(l.get<std::string>());
    if (j.contains("rsqrt")) {
      c.q_norm_rsqrt = rsqrt_mode(j.at("rsqrt"), "q_norm");
      c.kv_norm_rsqrt = rsqrt_mode(j.at("rsqrt"), "kv_norm");
    }
    if (j.contains("policies")) {
      for (const auto& [k, v] : j.at("policies").items()) {
        if (std::find(std::begin(kPolicyFields), std::end(kPolicyFields), k) == std::end(kPolicyFields))
          throw ConfigError("policies: unknown field \"" + k +
                            "\" (rope, clamp_order, inf_block, pad_byte, "
                            "scale_exponent, amax_floor)");
        const int value = v.get<int>();
        if (value != 0 && value != 1) throw ConfigError("policies." + k + ": 0 or 1 (kvc/kernel_abi.h)");
        c.policies[k] = value;
      }
    }
    if (!j.contains("ops")) throw ConfigError("no \"ops\": nothing to call");
    for (const auto& [k, v] : j.at("ops").items()) {
      const auto e = entry_names().find(k);
      if (e == entry_names().end())
        throw ConfigError("ops: unknown entry point \"" + k +
                          "\" (kv_only_insert, kv_only_insert_kv_norm, legacy_insert, kv_norm)");
      std::vector<OpBinding>& list = c.ops[e->second];
      if (v.is_null()) continue;
      if (v.is_object()) {
        list.push_back(parse_binding(v, "ops." + k, naming));
      } else {
        for (std::size_t i = 0; i < v.size(); ++i)
          list.push_back(parse_binding(v.at(i), "ops." + k + "[" + std::to_string(i) + "]", naming));
      }
    }
    return c;
  } catch (const json::exception& e) {
    throw ConfigError(std::string("malformed config: ") + e.what());
  }
}

ShimConfig load_shim_config(const std::string& path, OpNaming naming) {
  std::ifstream f(path);
  if (!f) throw ConfigError("cannot read " + path);
  try {
    return parse_shim_config(json::parse(f), naming);
  } catch (const json::exception& e) {
    throw ConfigError(path + ": not JSON: " + e.what());
  } catch (const ConfigError& e) {
    throw ConfigError(path + ": " + e.what());
  }
}

}  // namespace kvc::shim
