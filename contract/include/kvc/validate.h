// validate.h: the validation rules of docs/contract.md §5, one entry point per op.
//
// Two levels. kContract applies the rules the upstream ops check (dtype, rank, contiguity, widths,
// row counts, scale presence, head padding). kStrict adds the rules they do not check, where a
// violation is memory corruption or a race on the device: page stride >= dense page, 16-byte
// alignment, slot range, duplicate slots, position range, finite positive scales.
// Every rejection names its rule by a stable ErrorCode; the first violated rule wins, in the order
// the upstream op checks them. The harness rules (3xx) always apply: buffers that do not cover the
// case are rejected before anything is read.
//
// Hostile metadata (a case file or caller can say anything) is rejected at every level and with
// either ValueAccess, before any extent is computed from it: an op code that is not the entry
// point's (kWrongOp), tensor metadata that is not TensorMeta::well_formed() (kTensorMetaInvalid:
// sizes and strides of different lengths, a negative size, stride or offset, an unknown dtype,
// an extent past int64), and a cache view with a negative num_blocks, stride or offset or an
// address computation past int64 (kCacheGeometryInvalid). Validation itself never reads out of
// bounds or overflows, whatever the input; an accepted case keeps every write of the oracle inside
// the caller's buffers.
#pragma once

#include "kvc/insert_case.h"
#include "kvc/status.h"

namespace kvc {

enum class ValidationLevel : std::uint8_t { kContract = 0, kStrict = 1 };

// What the validator may read. The oracle and the test harness hold every tensor's bytes on the
// host and check values too (slot and position ranges, duplicate slots, scale values, buffer
// coverage). A kernel wrapper sees device pointers: reading values would cost a device-to-host
// copy and a synchronisation per call (and break graph capture), so it checks metadata only, and
// its kernels skip, on the device, any slot or position outside the cache or the cos/sin table.
enum class ValueAccess : std::uint8_t { kMetadataAndValues = 0, kMetadataOnly = 1 };

Status validate_kv_only_insert(const InsertCase& c, ValidationLevel level,
                               ValueAccess access = ValueAccess::kMetadataAndValues);
Status validate_legacy_insert(const InsertCase& c, ValidationLevel level,
                              ValueAccess access = ValueAccess::kMetadataAndValues);
// Dispatches on c.op.
Status validate_insert(const InsertCase& c, ValidationLevel level,
                       ValueAccess access = ValueAccess::kMetadataAndValues);

// The caller's output buffers against the case (harness rules 301/302). Safe on an unvalidated
// case: it checks the cache geometry and q_out's metadata before forming extents from them.
Status validate_outputs(const InsertCase& c, const InsertOutputs& out);

// Standalone kv_norm: kv [N, 512] bf16 contiguous, weight [512] bf16 contiguous.
Status validate_kv_norm(const HostTensor& kv, const HostTensor& weight,
                        ValueAccess access = ValueAccess::kMetadataAndValues);

// Rows whose position the op reads (KV rows with a slot >= 0, and every Q row the op rotates).
// Used by the strict position rule and by generators that must keep positions in range.
bool position_is_read(const InsertCase& c, std::int64_t row);

}  // namespace kvc
