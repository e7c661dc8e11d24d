// byte_class.cpp: byte classes and their names (see byte_class.h).
#include "testkit/compare/byte_class.h"

namespace kvc::testkit {
namespace {

// The field whose name a class carries (kForeignSlot has none).
oracle::Field field_of(ByteClass c) {
  switch (c) {
    case ByteClass::kFp8Code: return oracle::Field::kFp8Code;
    case ByteClass::kValue16: return oracle::Field::kValue16;
    case ByteClass::kScale: return oracle::Field::kScale;
    case ByteClass::kScalePad: return oracle::Field::kScalePad;
    case ByteClass::kRowGap: return oracle::Field::kRowGap;
    case ByteClass::kPagePadding: return oracle::Field::kPagePadding;
    case ByteClass::kOutsideCache:
    case ByteClass::kForeignSlot: break;
  }
  return oracle::Field::kOutsideCache;
}

}  // namespace

std::string_view name(ByteClass c) {
  if (c == ByteClass::kForeignSlot) return "foreign slot";
  return oracle::field_name(field_of(c));
}

ByteClass byte_class(oracle::Field f) {
  switch (f) {
    case oracle::Field::kFp8Code: return ByteClass::kFp8Code;
    case oracle::Field::kValue16: return ByteClass::kValue16;
    case oracle::Field::kScale: return ByteClass::kScale;
    case oracle::Field::kScalePad: return ByteClass::kScalePad;
    case oracle::Field::kRowGap: return ByteClass::kRowGap;
    case oracle::Field::kPagePadding: return ByteClass::kPagePadding;
    case oracle::Field::kOutsideCache: break;
  }
  return ByteClass::kOutsideCache;
}

ByteClass byte_class(const oracle::ByteLocation& loc, const std::set<std::int64_t>& addressed_slots) {
  const ByteClass field = byte_class(loc.field);
  // A row gap belongs to the row before it: one after a foreign record is that record's too.
  const bool slot_byte = is_record_byte(field) || field == ByteClass::kRowGap;
  return slot_byte && addressed_slots.count(loc.slot) == 0 ? ByteClass::kForeignSlot : field;
}

bool is_record_byte(ByteClass c) {
  return c == ByteClass::kFp8Code || c == ByteClass::kValue16 || c == ByteClass::kScale || c == ByteClass::kScalePad;
}

bool is_outside_addressed_records(ByteClass c) { return !is_record_byte(c); }

}  // namespace kvc::testkit
