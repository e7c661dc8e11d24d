// abi_args.h: a case's call as the kernel ABI takes it: which metadata DLPack can carry, the
// cache view as a tensor, and the kvc_*_args structs filled from a case and its device tensors.
//
// The device backend, the resident case buffers and the benchmarks all call the library through
// these structs; filling them in one place keeps the three calls the same call (a flag forgotten
// in one of them would make a benchmark time another op than the suite checks).
#pragma once

#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "kvc/insert_case.h"
#include "kvc/kernel_abi.h"
#include "kvc/store_case.h"

namespace kvc::testkit {

// The error buffer handed to every ABI op call.
inline constexpr std::size_t kAbiErrorCapacity = 1024;

// "bf16", "e4m3", ...: a dtype as messages name it.
std::string dtype_name(DType t);

// Why a DLTensor cannot carry `m` ("kv: 2 sizes but 3 strides (a DLTensor has one ndim)", a
// negative byte offset, a dtype without a DLPack type), or "" when it can.
std::string meta_inexpressible(const std::string& name, const TensorMeta& m);

// Why DLPack cannot express this case's call (metadata a DLTensor cannot hold: strides of
// another length than sizes, a negative byte offset; an op the ABI has no entry point for), or
// "" when it can. Such cases are rejected by the host validation only.
std::string abi_inexpressible(const InsertCase& c);

// The cache view as the tensor a DLTensor describes: [num_blocks, block_size, width] with its
// strides, cut to its rank. (DLPack types: dl_dtype.h.)
TensorMeta cache_meta(const CacheGeometry& g);

// The device tensors of an insert call, by ABI argument; nullptr for an absent optional (and for
// what the op does not take).
struct InsertCallTensors {
  const DLTensor* kv = nullptr;
  const DLTensor* kv_cache = nullptr;
  const DLTensor* slot_mapping = nullptr;
  const DLTensor* position_ids = nullptr;
  const DLTensor* cos_sin_cache = nullptr;
  const DLTensor* fp8_scale = nullptr;
  const DLTensor* kv_norm_weight = nullptr;  // KV-only op
  const DLTensor* q = nullptr;               // legacy op from here on
  const DLTensor* q_out = nullptr;
  const DLTensor* q_scale_inv = nullptr;
};

// The structs with struct_size set, the tensors as given and every scalar from the case.
// `force_grid` is the legacy op's test-only grid choice (0: the library's own, what production runs).
kvc_kv_only_insert_args kv_only_insert_args(const InsertCase& c, const InsertCallTensors& t);
kvc_legacy_insert_args legacy_insert_args(const InsertCase& c, const InsertCallTensors& t, std::int32_t force_grid = 0);
kvc_kv_norm_args kv_norm_args(const DLTensor* kv, const DLTensor* weight, const DLTensor* out, float eps);
kvc_store_rotated_args store_rotated_args(const StoreCase& c, const DLTensor* rows, const DLTensor* indices,
                                          const DLTensor* kv_cache);

}  // namespace kvc::testkit
