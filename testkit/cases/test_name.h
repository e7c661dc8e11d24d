// test_name.h: how a record format, or any dashed name, reads in a GoogleTest name ("Packed584",
// "Fp8_512", "kv_only_equals_legacy").
//
// The case registries, the rule matrix and the GPU suites name their cells after the format;
// spelling it here once keeps a cell's name the same in every suite that runs it. Property and
// defect names are dashed ("kv-only-equals-legacy"), which GoogleTest does not accept in a name.
#pragma once

#include <string>
#include <string_view>

#include "kvc/contract.h"

namespace kvc::testkit {

// "packed584" -> "Packed584": the first letter upper-cased ("" stays "").
std::string capitalized(std::string_view s);

// The format's layout name, capitalized: "Packed584", "Packed528", "Fp8_512", "Bf16_512".
std::string format_test_name(RecordFormat f);

// "kv-only-equals-legacy" -> "kv_only_equals_legacy": every '-' becomes '_'.
std::string dashes_to_underscores(std::string_view s);

// The name generator of INSTANTIATE_TEST_SUITE_P that names each parameter with `Name(param)`,
// e.g. ParamNamedBy<rule_matrix_name>() (a template over GoogleTest's TestParamInfo, so that the
// testkit needs no GoogleTest itself).
template <auto Name>
struct ParamNamedBy {
  template <typename ParamInfo>
  std::string operator()(const ParamInfo& info) const {
    return Name(info.param);
  }
};

// For a suite over dashed string parameters (property names).
using DashedParamName = ParamNamedBy<dashes_to_underscores>;

}  // namespace kvc::testkit
