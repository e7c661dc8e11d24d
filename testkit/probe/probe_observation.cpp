// probe_observation.cpp: the child's report as JSON (see probe_observation.h).
#include "testkit/probe/probe_observation.h"

#include <array>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace kvc::testkit {
namespace {

constexpr std::array<std::pair<WriteSite, const char*>, 4> kSiteKeys = {
    {{WriteSite::kAddressedRecord, "addressed_record"},
     {WriteSite::kOutsideRecords, "outside_records"},
     {WriteSite::kGuardZone, "guard_zone"},
     {WriteSite::kInput, "input"}}};
constexpr std::array<std::pair<BadRowKind, const char*>, 2> kBadRowKeys = {
    {{BadRowKind::kSlotPastCache, "slot_past_cache"}, {BadRowKind::kPositionOutsideTable, "position_outside_table"}}};

template <typename Enum, std::size_t N>
const char* key_of(const std::array<std::pair<Enum, const char*>, N>& keys, Enum e) {
  for (const auto& [value, key] : keys)
    if (value == e) return key;
  return "?";
}

template <typename Enum, std::size_t N>
Enum enum_of(const std::array<std::pair<Enum, const char*>, N>& keys, const std::string& key, const char* field) {
  for (const auto& [value, k] : keys)
    if (key == k) return value;
  throw std::invalid_argument(std::string("probe result: unknown ") + field + " '" + key + "'");
}

template <typename T>
T field(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key))
    throw std::invalid_argument(std::string("probe result: missing '") + key + "'");
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("probe result: '") + key + "': " + e.what());
  }
}

}  // namespace

nlohmann::json probe_observation_to_json(const ProbeObservation& o) {
  nlohmann::json writes = nlohmann::json::array();
  for (const ProbeWrite& w : o.writes)
    writes.push_back({{"buffer", w.buffer},
                      {"site", key_of(kSiteKeys, w.site)},
                      {"what", w.what},
                      {"offset", w.offset},
                      {"bytes", w.bytes},
                      {"row", w.row},
                      {"slot", w.slot}});
  nlohmann::json bad_rows = nlohmann::json::array();
  for (const BadRow& b : o.bad_rows)
    bad_rows.push_back({{"kind", key_of(kBadRowKeys, b.kind)},
                        {"table", b.table},
                        {"row", b.row},
                        {"slot", b.slot},
                        {"position", b.position},
                        {"limit", b.limit},
                        {"record_written", b.record_written}});
  return {{"status", o.status},
          {"message", o.message},
          {"cuda_fault", o.cuda_fault},
          {"writes", writes},
          {"bad_rows", bad_rows}};
}

ProbeObservation probe_observation_from_json(const nlohmann::json& j) {
  ProbeObservation o;
  o.status = field<int>(j, "status");
  o.message = field<std::string>(j, "message");
  o.cuda_fault = field<std::string>(j, "cuda_fault");
  for (const nlohmann::json& w : field<nlohmann::json>(j, "writes")) {
    ProbeWrite p;
    p.buffer = field<std::string>(w, "buffer");
    p.site = enum_of(kSiteKeys, field<std::string>(w, "site"), "site");
    p.what = field<std::string>(w, "what");
    p.offset = field<std::int64_t>(w, "offset");
    p.bytes = field<std::int64_t>(w, "bytes");
    p.row = field<std::int64_t>(w, "row");
    p.slot = field<std::int64_t>(w, "slot");
    o.writes.push_back(std::move(p));
  }
  for (const nlohmann::json& b : field<nlohmann::json>(j, "bad_rows")) {
    BadRow r;
    r.kind = enum_of(kBadRowKeys, field<std::string>(b, "kind"), "bad row kind");
    r.table = field<std::string>(b, "table");
    r.row = field<std::int64_t>(b, "row");
    r.slot = field<std::int64_t>(b, "slot");
    r.position = field<std::int64_t>(b, "position");
    r.limit = field<std::int64_t>(b, "limit");
    r.record_written = field<bool>(b, "record_written");
    o.bad_rows.push_back(std::move(r));
  }
  return o;
}

bool find_probe_result(const std::string& output, ProbeObservation* out) {
  std::istringstream lines(output);
  std::string line, last;
  const std::string marker = kProbeResultMarker;
  while (std::getline(lines, line))
    if (line.compare(0, marker.size(), marker) == 0) last = line.substr(marker.size());
  if (last.empty()) return false;
  const nlohmann::json j = nlohmann::json::parse(last, nullptr, false);
  if (j.is_discarded()) return false;
  try {
    *out = probe_observation_from_json(j);
  } catch (const std::invalid_argument&) {
    return false;
  }
  return true;
}

}  // namespace kvc::testkit
