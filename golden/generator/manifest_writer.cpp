// manifest_writer.cpp: payload and manifest of one fixture (see manifest_writer.h).
#include "manifest_writer.h"

#include <openssl/evp.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "kvc/golden/manifest_schema.h"
#include "kvc/case_fields.h"

namespace kvc::golden_generator {
namespace {

using nlohmann::json;
namespace cf = kvc::testkit::case_fields;
namespace mf = kvc::golden::manifest;

std::string key(std::string_view k) { return std::string(k); }

std::string sha256_hex(const std::uint8_t* data, std::size_t size) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(data, size, digest, &length, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("OpenSSL EVP_Digest(sha256) failed");
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += digits[digest[i] >> 4];
    hex += digits[digest[i] & 15];
  }
  return hex;
}

int dtype_code(const std::string& name) {
  const cf::DTypeCode* d = cf::dtype_code(name);
  if (d == nullptr) throw std::logic_error("no case_fields dtype named " + name);
  return d->code;
}

[[noreturn]] void unknown(std::string_view what, std::string_view name) {
  throw std::logic_error("the shared field list has " + std::string(what) + " \"" + std::string(name) +
                         "\", which the generator does not know how to fill: teach manifest_writer.cpp");
}

// Appends byte ranges to the payload and describes each one.
class Payload {
 public:
  json append(const std::vector<std::uint8_t>& bytes) {
    const std::size_t offset = data_.size();
    data_.insert(data_.end(), bytes.begin(), bytes.end());
    return json{{key(mf::kOffset), offset},
                {key(mf::kSize), bytes.size()},
                {key(mf::kSha256), sha256_hex(bytes.data(), bytes.size())}};
  }
  const std::vector<std::uint8_t>& data() const { return data_; }

 private:
  std::vector<std::uint8_t> data_;
};

json meta_json(const std::string& dtype, const std::vector<std::int64_t>& sizes,
               const std::vector<std::int64_t>& strides) {
  json m = json::object();
  for (std::string_view k : cf::kTensorMetaKeys) {
    if (k == "dtype")
      m[key(k)] = dtype_code(dtype);
    else if (k == "sizes")
      m[key(k)] = sizes;
    else if (k == "strides")
      m[key(k)] = strides;
    else if (k == "offset_bytes")
      m[key(k)] = 0;  // every tensor starts its own allocation
    else if (k == "device")
      m[key(k)] = 0;
    else
      unknown("the tensor member", k);
  }
  return m;
}

const GenTensor& tensor_field(const GenCase& c, std::string_view name) {
  if (name == "kv") return c.kv;
  if (name == "slots") return c.slots;
  if (name == "positions") return c.positions;
  if (name == "cos_sin") return c.cos_sin;
  if (name == "fp8_scale") return c.fp8_scale;
  if (name == "q") return c.q;
  if (name == "q_scale_inv") return c.q_scale_inv;
  if (name == "kv_norm_weight") return c.kv_norm_weight;
  unknown("the tensor", name);
}

json cache_json(const GenCache& g) {
  const FormatLayout& l = layout(g.format);
  json j = json::object();
  for (std::string_view k : cf::kCacheKeys) {
    if (k == "dtype")
      j[key(k)] = dtype_code(l.cache_dtype);
    else if (k == "rank")
      j[key(k)] = 3;
    else if (k == "num_blocks")
      j[key(k)] = g.num_blocks;
    else if (k == "block_size")
      j[key(k)] = g.block_size;
    else if (k == "width")
      j[key(k)] = l.width;
    else if (k == "strides")
      j[key(k)] = {g.stride0, g.stride1, 1};
    else if (k == "offset_bytes")
      j[key(k)] = g.offset_bytes;
    else if (k == "device")
      j[key(k)] = 0;
    else
      unknown("the cache member", k);
  }
  return j;
}

json case_json(const GenCase& c, Payload& payload) {
  json j = json::object();
  for (const cf::Field& f : cf::kInsertCaseFields) {
    const std::string k = key(f.name);
    switch (f.kind) {
      case cf::Kind::kOp: j[k] = key(c.op == GenOp::kLegacy ? cf::kOpLegacy : cf::kOpKvOnly); break;
      case cf::Kind::kTensor: {
        const GenTensor& t = tensor_field(c, f.name);
        j[k] = t.present ? json{{key(cf::kMetaKey), meta_json(t.dtype, t.sizes, t.strides)},
                                {key(mf::kPayloadRange), payload.append(t.bytes)}}
                         : json(nullptr);
        break;
      }
      case cf::Kind::kTensorMeta:
        if (f.name != "q_out") unknown("the output", f.name);
        j[k] = c.q_out ? meta_json(c.q_out->dtype, c.q_out->sizes, c.q_out->strides) : json(nullptr);
        break;
      case cf::Kind::kCacheGeometry: j[k] = cache_json(c.cache); break;
      case cf::Kind::kInt:
        if (f.name != "block_size") unknown("the integer", f.name);
        j[k] = c.cache.block_size;  // the op's cache_block_size equals the cache's size(1)
        break;
      case cf::Kind::kBool:
        if (f.name == "kv_mxfp8")
          j[k] = layout(c.cache.format).kv_mxfp8;
        else if (f.name == "apply_q_norm")
          j[k] = c.apply_q_norm;
        else if (f.name == "apply_q_rope")
          j[k] = c.apply_q_rope;
        else if (f.name == "q_interleaved")
          j[k] = c.q_interleaved;
        else
          unknown("the flag", f.name);
        break;
      case cf::Kind::kFloat:
        if (f.name == "eps")
          j[k] = c.eps;
        else if (f.name == "kv_norm_eps")
          j[k] = c.kv_norm_eps;
        else
          unknown("the scalar", f.name);
        break;
    }
  }
  return j;
}

}  // namespace

std::size_t write_fixture(const std::string& dir, const FixtureSpec& spec, const GenCase& c,
                          const GenExpected& expected, const RunInfo& run) {
  Payload payload;
  json manifest = json::object();
  manifest[key(mf::kFormatKey)] = mf::kFormatVersion;
  manifest[key(mf::kName)] = spec.name;
  manifest[key(mf::kDescription)] = spec.description;
  manifest[key(mf::kOp)] = key(c.op == GenOp::kLegacy ? cf::kOpLegacy : cf::kOpKvOnly);
  manifest[key(mf::kRecordFormat)] = layout(c.cache.format).name;
  manifest[key(mf::kSeed)] = spec.seed;
  manifest[key(mf::kContractVersion)] = kContractVersion;
  manifest[key(mf::kProfile)] = key(mf::kProfileValue);
  manifest[key(mf::kCase)] = case_json(c, payload);
  manifest[key(mf::kExpected)] = json{
      {key(mf::kCanary), expected.canary},
      {key(mf::kExpectedCache), payload.append(expected.cache)},
      {key(mf::kExpectedQOut), c.q_out ? payload.append(expected.q_out) : json(nullptr)},
  };
  const std::string payload_name = spec.name + std::string(mf::kPayloadSuffix);
  manifest[key(mf::kPayload)] = json{{key(mf::kFile), payload_name},
                                     {key(mf::kSize), payload.data().size()},
                                     {key(mf::kSha256), sha256_hex(payload.data().data(), payload.data().size())}};
  manifest[key(mf::kGenerator)] = json{{key(mf::kGeneratorName), kGeneratorName},
                                       {key(mf::kGeneratorVersion), kGeneratorVersion},
                                       {key(mf::kTorchVersion), run.torch_version},
                                       {key(mf::kE4m3Path), run.probes.e4m3_path},
                                       {key(mf::kProbes), run.probes.passed}};

  std::ofstream bin(dir + "/" + payload_name, std::ios::binary);
  bin.write(reinterpret_cast<const char*>(payload.data().data()), static_cast<std::streamsize>(payload.data().size()));
  std::ofstream js(dir + "/" + spec.name + std::string(mf::kManifestSuffix));
  js << manifest.dump(1) << "\n";
  if (!bin || !js) throw std::runtime_error("cannot write fixture " + spec.name + " into " + dir);
  return payload.data().size();
}

}  // namespace kvc::golden_generator
