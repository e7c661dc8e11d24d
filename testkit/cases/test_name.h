// test_name.h: how a record format reads in a GoogleTest name ("Packed584", "Fp8_512").
//
// The case registries, the rule matrix and the GPU suites name their cells after the format;
// spelling it here once keeps a cell's name the same in every suite that runs it.
#pragma once

#include <string>
#include <string_view>

#include "kvc/contract.h"

namespace kvc::testkit {

// "packed584" -> "Packed584": the first letter upper-cased ("" stays "").
std::string capitalized(std::string_view s);

// The format's layout name, capitalized: "Packed584", "Packed528", "Fp8_512", "Bf16_512".
std::string format_test_name(RecordFormat f);

}  // namespace kvc::testkit
