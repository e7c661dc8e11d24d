// shim_config.cpp: the shims' configuration (see shim_config.h).
#include "shim_config.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <limits>

#include "config_paths.h"
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

// "page_stride" and "block_sizes" (geometry_limits.h); absent, the contract's.
GeometryLimits parse_limits(const json& j, const std::string& where, AbiEntry entry) {
  GeometryLimits l;
  if ((j.contains("page_stride") || j.contains("block_sizes")) && entry == AbiEntry::kKvNorm)
    throw ConfigError(where + ": kv_norm has no cache: \"page_stride\" and \"block_sizes\" belong to insert bindings");
  if (j.contains("page_stride")) {
    const json& p = j.at("page_stride");
    if (p == "any") {
      l.page_stride = PageStrideRule::kAny;
    } else if (p == "dense") {
      l.page_stride = PageStrideRule::kDense;
    } else if (p.is_object() && p.size() == 1 && p.contains("aligned_up") && p.at("aligned_up").is_number_integer() &&
               p.at("aligned_up").get<std::int64_t>() > 0 &&
               p.at("aligned_up").get<std::int64_t>() <= std::numeric_limits<std::int32_t>::max()) {
      l.page_stride = PageStrideRule::kAlignedUp;
      l.page_stride_align = p.at("aligned_up").get<std::int64_t>();
    } else {
      throw ConfigError(where + ".page_stride: \"any\", \"dense\" or {\"aligned_up\": <bytes, > 0>}, not " + p.dump());
    }
  }
  if (j.contains("block_sizes")) {
    const json& b = j.at("block_sizes");
    if (b == "any") {
      l.block_size = BlockSizeRule::kAny;
    } else if (b == "power_of_two") {
      l.block_size = BlockSizeRule::kPowerOfTwo;
    } else if (b.is_array() && !b.empty() && std::all_of(b.begin(), b.end(), [](const json& v) {
                 return v.is_number_integer() && v.get<std::int64_t>() > 0;
               })) {
      l.block_size = BlockSizeRule::kListed;
      for (const json& v : b) l.block_sizes.push_back(v.get<std::int64_t>());
    } else {
      throw ConfigError(where + ".block_sizes: \"any\", \"power_of_two\" or a non-empty list of block sizes > 0, not " +
                        b.dump());
    }
  }
  return l;
}

// Refuses two bindings of one entry point that serve the same (format, kv dtype).
void check_no_overlap(const std::vector<OpBinding>& bindings, AbiEntry entry, const std::string& where) {
  for (std::size_t i = 0; i < bindings.size(); ++i)
    for (std::size_t k = 0; k < i; ++k)
      for (RecordFormat f : bindings[i].formats)
        for (DType d : bindings[i].kv_dtypes) {
          const std::vector<RecordFormat>& fk = bindings[k].formats;
          const std::vector<DType>& dk = bindings[k].kv_dtypes;
          const bool format_shared = entry == AbiEntry::kKvNorm || std::count(fk.begin(), fk.end(), f) > 0;
          if (format_shared && std::count(dk.begin(), dk.end(), d) > 0)
            throw ConfigError(where + "[" + std::to_string(i) + "] and [" + std::to_string(k) + "] both serve " +
                              (entry == AbiEntry::kKvNorm ? std::string() : std::string(layout_of(f).name) + " with ") +
                              (d == DType::kF16 ? "fp16" : "bf16") +
                              " rows: one binding per format and kv dtype (list each in one binding only)");
        }
}

OpBinding parse_binding(const json& j, const std::string& where, OpNaming naming, AbiEntry entry) {
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
  b.limits = parse_limits(j, where, entry);
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
        list.push_back(parse_binding(v, "ops." + k, naming, e->second));
      } else {
        for (std::size_t i = 0; i < v.size(); ++i)
          list.push_back(parse_binding(v.at(i), "ops." + k + "[" + std::to_string(i) + "]", naming, e->second));
        check_no_overlap(list, e->second, "ops." + k);
      }
    }
    return c;
  } catch (const json::exception& e) {
    throw ConfigError(std::string("malformed config: ") + e.what());
  }
}

ShimConfig load_shim_config(const std::string& path, OpNaming naming) {
  const std::string absolute = absolute_config_path(path);
  const std::string shown = absolute == path ? path : path + " (" + absolute + ")";
  std::ifstream f(absolute);
  if (!f) throw ConfigError("cannot read " + shown);
  ShimConfig c;
  try {
    c = parse_shim_config(json::parse(f), naming);
  } catch (const json::exception& e) {
    throw ConfigError(shown + ": not JSON: " + e.what());
  } catch (const ConfigError& e) {
    throw ConfigError(shown + ": " + e.what());
  }
  c.source = absolute;
  for (std::string& lib : c.libraries) lib = resolve_library_path(lib, config_folder(absolute));
  return c;
}

}  // namespace kvc::shim
