// probe_writes.h: where the bytes a probed call changed lie, and what it did with the rows that
// break a value rule.
//
// The device checks of a call (testkit/device: guard zones, inputs, a rejected call's writes; the
// cache backing or pools downloaded after an accepted call) say that bytes changed; the probe must
// say where, in the case's terms: inside a record the call addresses, or outside (page padding, a
// row gap, a foreign slot, past the view, a guard zone, an input), with the row and slot whose
// record lies there, or would lie there for a slot past the cache (its record extrapolated one
// page on). A row whose position lies outside the cos/sin table and whose record was written
// anyway is a read past the table: its rotation came from there. These functions append to a
// ProbeObservation; they are pure (host bytes in, facts out), so the child's facts are tested on
// the CPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvc/insert_case.h"
#include "kvc/stacked_ctx_kv_case.h"
#include "kvc/store_case.h"
#include "testkit/device/device_buffers.h"
#include "testkit/probe/probe_observation.h"

namespace kvc::testkit {

// At most this many runs of changed bytes outside the addressed records are listed per buffer;
// the rest are summed into one last run ("more").
inline constexpr std::size_t kMaxListedRuns = 16;

// An insert call: `damage` from the device checks; `before` the cache backing handed over;
// `after` the backing downloaded after the call, or nullptr when it was not (a rejected call, a
// fault). Appends the located writes and the case's bad rows (slot past the cache, a read
// position outside the table with a live slot).
void observe_insert_call(const InsertCase& c, const std::vector<BufferDamage>& damage,
                         const std::vector<std::uint8_t>& before, const std::vector<std::uint8_t>* after,
                         ProbeObservation* o);

// A store call: the same over the store case's paged view (store_cache_geometry), with its
// indices as slots.
void observe_store_call(const StoreCase& c, const std::vector<BufferDamage>& damage,
                        const std::vector<std::uint8_t>& before, const std::vector<std::uint8_t>* after,
                        ProbeObservation* o);

// The stacked projection: every layer's K and V pool ("layer <i> K pool", as the stacked device
// runner names them), a pool slot addressed when some token's cache_loc names it. A position
// outside a layer's table read: that layer's K pool row (the rotated one) was written.
void observe_stacked_call(const StackedCtxKvCase& c, const std::vector<BufferDamage>& damage,
                          const StackedCtxKvOutputs& before, const StackedCtxKvOutputs* after, ProbeObservation* o);

// "layer 1 K pool": the stacked device runner's name of a pool buffer.
std::string stacked_pool_buffer(int layer, char k_or_v);

}  // namespace kvc::testkit
