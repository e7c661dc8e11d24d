// byte_class.h: what a byte of a cache backing is to an insert case, as one enum with one name.
//
// The comparator counts differing bytes by class, the profile checker groups policy bytes by it
// and tells record bytes from address errors with it, the mismatch classifier cuts sites along
// it, and the locality checks (runner, fuzz, GPU suites) ask whether a class lies outside the
// records the case addresses. The names are the report texts: a field's name from the record
// codec (oracle::field_name), and "foreign slot".
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <string_view>

#include "kvc/oracle/record_codec.h"

namespace kvc::testkit {

// Declared in the alphabetical order of their names, so that a map keyed by the class lists the
// classes in the order the reports always have (they were keyed by the name).
enum class ByteClass : std::uint8_t {
  kValue16,       // "16-bit value": an addressed record's bf16/f16 value byte
  kForeignSlot,   // "foreign slot": a record byte (or row gap) of a slot the case does not address
  kFp8Code,       // "fp8 code": an addressed record's e4m3 code
  kOutsideCache,  // "outside the cache": before the first page, or after the last (guard zone)
  kPagePadding,   // "page padding": after the dense part of a page
  kRowGap,        // "row gap": full caches, between an addressed row's end and the next row
  kScale,         // "scale": an addressed record's UE8M0 byte
  kScalePad,      // "scale pad": packed584 byte 7 of an addressed record's scale group
};
inline constexpr std::array<ByteClass, 8> kAllByteClasses = {
    ByteClass::kValue16,     ByteClass::kForeignSlot, ByteClass::kFp8Code, ByteClass::kOutsideCache,
    ByteClass::kPagePadding, ByteClass::kRowGap,      ByteClass::kScale,   ByteClass::kScalePad};

std::string_view name(ByteClass c);

// The class of a byte by its field alone (never kForeignSlot).
ByteClass byte_class(oracle::Field f);
// The class of a located byte: kForeignSlot for a record byte or row gap of a slot not in
// `addressed_slots`, else its field's class.
ByteClass byte_class(const oracle::ByteLocation& loc, const std::set<std::int64_t>& addressed_slots);

// A byte of an addressed record (fp8 code, 16-bit value, scale, scale pad).
bool is_record_byte(ByteClass c);
// A byte the op must never write: outside every record the case addresses (page padding, a row
// gap, outside the cache, a foreign slot). The locality checks name them in this order.
inline constexpr std::array<ByteClass, 4> kOutsideAddressedRecords = {
    ByteClass::kPagePadding, ByteClass::kRowGap, ByteClass::kOutsideCache, ByteClass::kForeignSlot};
bool is_outside_addressed_records(ByteClass c);

}  // namespace kvc::testkit
