// check_result_json.cpp: see check_result_json.h.
#include "check_result_json.h"

#include <stdexcept>
#include <string>

namespace kvc::runner {
namespace {

Verdict verdict_from_name(const std::string& name) {
  for (Verdict v : {Verdict::kPassed, Verdict::kFailed, Verdict::kSkipped})
    if (verdict_name(v) == name) return v;
  throw std::invalid_argument("unknown verdict '" + name + "'");
}

testkit::MismatchClass class_from_key(const std::string& key) {
  for (testkit::MismatchClass c : testkit::kAllMismatchClasses)
    if (testkit::mismatch_class_key(c) == key) return c;
  throw std::invalid_argument("unknown mismatch class '" + key + "'");
}

// The inverse of MismatchClassification::to_json(): every class with sites gets its counts and
// its examples (an empty list when none were written, as report() expects one per class).
testkit::MismatchClassification classes_from_json(const nlohmann::json& j) {
  testkit::MismatchClassification m;
  m.mismatching_bytes = j.value("mismatching_bytes", std::int64_t{0});
  m.not_searched = j.value("not_searched", std::int64_t{0});
  for (const auto& [key, n] : j.at("sites").items()) {
    const testkit::MismatchClass c = class_from_key(key);
    m.sites[c] = n.get<std::int64_t>();
    m.bytes[c] = j.at("bytes").at(key).get<std::int64_t>();
    m.shown[c];
  }
  for (const auto& [key, sites] : j.at("examples").items()) {
    std::vector<testkit::ClassifiedSite>& shown = m.shown[class_from_key(key)];
    for (const nlohmann::json& s : sites) {
      testkit::ClassifiedSite site;
      site.cls = class_from_key(key);
      site.where = s.at("where").get<std::string>();
      site.detail = s.at("detail").get<std::string>();
      site.bytes = s.at("bytes").get<std::int64_t>();
      site.first_offset = s.at("first_offset").get<std::int64_t>();
      shown.push_back(site);
    }
  }
  return m;
}

}  // namespace

nlohmann::json check_result_to_json(const CheckResult& c) {
  nlohmann::json row = {{"where", c.side},      {"suite", c.suite},
                        {"op", c.op},           {"format", c.format},
                        {"name", c.name},       {"verdict", std::string(verdict_name(c.verdict))},
                        {"seconds", c.seconds}, {"message", c.message}};
  if (c.side == kKernelSide) {
    row["bytes_compared"] = c.bytes_compared();
    row["bytes_by_op"] = nlohmann::json::object();
    for (const auto& [op, bytes] : c.bytes_by_op) row["bytes_by_op"][std::string(abi_op_name(op))] = bytes;
  }
  if (!c.classes.empty()) row["mismatch_classes"] = c.classes.to_json();
  if (!c.rsqrt.empty())
    row["approx_rsqrt"] = {
        {"rows_checked", c.rsqrt.rows_checked}, {"rows_moved", c.rsqrt.rows_moved}, {"max_ulps", c.rsqrt.max_ulps}};
  return row;
}

CheckResult check_result_from_json(const nlohmann::json& j) {
  try {
    CheckResult c;
    c.side = j.at("where").get<std::string>();
    c.suite = j.at("suite").get<std::string>();
    c.op = j.at("op").get<std::string>();
    c.format = j.at("format").get<std::string>();
    c.name = j.at("name").get<std::string>();
    c.verdict = verdict_from_name(j.at("verdict").get<std::string>());
    c.seconds = j.at("seconds").get<double>();
    c.message = j.at("message").get<std::string>();
    if (j.contains("bytes_by_op")) {
      for (const auto& [name, bytes] : j.at("bytes_by_op").items()) {
        const std::optional<AbiOp> op = abi_op_from_name(name);
        if (!op) throw std::invalid_argument("unknown ABI op '" + name + "'");
        c.bytes_by_op[*op] = bytes.get<std::int64_t>();
      }
    }
    if (j.contains("mismatch_classes")) c.classes = classes_from_json(j.at("mismatch_classes"));
    if (j.contains("approx_rsqrt")) {
      const nlohmann::json& t = j.at("approx_rsqrt");
      c.rsqrt.rows_checked = t.at("rows_checked").get<std::int64_t>();
      c.rsqrt.rows_moved = t.at("rows_moved").get<std::int64_t>();
      c.rsqrt.max_ulps = t.at("max_ulps").get<int>();
    }
    return c;
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("not a check: ") + e.what());
  }
}

}  // namespace kvc::runner
