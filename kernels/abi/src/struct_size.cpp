// struct_size.cpp: struct_size coverage (see struct_size.h).
#include "kvc/abi/struct_size.h"

namespace kvc::abi {

std::string struct_size_defect(const char* what, std::uint32_t struct_size, std::size_t end_of_field,
                               const char* type_name) {
  if (struct_size >= end_of_field) return {};
  return std::string(what) + " " + std::to_string(struct_size) + " does not cover " + type_name;
}

}  // namespace kvc::abi
