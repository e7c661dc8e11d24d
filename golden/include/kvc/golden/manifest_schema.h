// manifest_schema.h: the member names of a golden fixture manifest.
//
// A fixture is two files: NAME.json (this manifest) and NAME.bin (the payload: every tensor's
// bytes, inputs first, then the expected outputs, back to back). The manifest says what the case
// is and where each tensor's bytes lie in the payload, with a sha256 per range and for the whole
// file. Its "case" member holds the case through the shared field list (case_fields.h), a tensor
// written as {"meta": ..., "payload": {"offset", "size", "sha256"}}.
//
//   {
//     "kvconform_golden_manifest": 1,
//     "name": "kv_only.packed584", "description": "...",
//     "op": "kv_only", "format": "packed584", "seed": 17,
//     "contract_version": 2, "profile": "vllm",
//     "generator": {"name": "kvconform-golden", "version": "1", "torch_version": "1.13.0",
//                   "e4m3_path": "...", "probes": [...]},
//     "case": {...},
//     "expected": {"canary": 165, "cache": {range}, "q_out": {range} or null},
//     "payload": {"file": "kv_only.packed584.bin", "size": N, "sha256": "..."}
//   }
//
// Plain data, no kvconform includes: the generator writes manifests from these names too.
#pragma once

#include <string_view>

namespace kvc::golden::manifest {

inline constexpr std::string_view kFormatKey = "kvconform_golden_manifest";
inline constexpr int kFormatVersion = 1;

inline constexpr std::string_view kName = "name";
inline constexpr std::string_view kDescription = "description";
inline constexpr std::string_view kOp = "op";
inline constexpr std::string_view kRecordFormat = "format";
inline constexpr std::string_view kSeed = "seed";
inline constexpr std::string_view kContractVersion = "contract_version";
inline constexpr std::string_view kProfile = "profile";
inline constexpr std::string_view kProfileValue = "vllm";  // fixtures hold the contract's default profile

inline constexpr std::string_view kGenerator = "generator";
inline constexpr std::string_view kGeneratorName = "name";
inline constexpr std::string_view kGeneratorVersion = "version";
inline constexpr std::string_view kTorchVersion = "torch_version";
inline constexpr std::string_view kE4m3Path = "e4m3_path";
inline constexpr std::string_view kProbes = "probes";

inline constexpr std::string_view kCase = "case";
inline constexpr std::string_view kPayloadRange = "payload";  // inside a present tensor of "case"

inline constexpr std::string_view kExpected = "expected";
inline constexpr std::string_view kCanary = "canary";
inline constexpr std::string_view kExpectedCache = "cache";
inline constexpr std::string_view kExpectedQOut = "q_out";

inline constexpr std::string_view kPayload = "payload";  // top level: the payload file
inline constexpr std::string_view kFile = "file";

// A range of the payload file.
inline constexpr std::string_view kOffset = "offset";
inline constexpr std::string_view kSize = "size";
inline constexpr std::string_view kSha256 = "sha256";

inline constexpr std::string_view kManifestSuffix = ".json";
inline constexpr std::string_view kPayloadSuffix = ".bin";

}  // namespace kvc::golden::manifest
