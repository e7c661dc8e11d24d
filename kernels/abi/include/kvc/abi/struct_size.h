// struct_size.h: whether a caller's argument struct covers a field. Every ABI struct starts with
// struct_size, and a library reads only the fields that size covers (kvc/kernel_abi.h), so that
// fields can be appended in a minor version without breaking older callers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

// The offset just past `field` of struct `Type`: the least struct_size with which a caller has
// filled that field in.
#define KVC_ABI_END_OF(Type, field) (offsetof(Type, field) + sizeof(static_cast<Type*>(nullptr)->field))

namespace kvc::abi {

// Empty when struct_size reaches end_of_field, else "<what> <struct_size> does not cover <type>"
// (`what` names the size field: "struct_size", "layer_struct_size").
std::string struct_size_defect(const char* what, std::uint32_t struct_size, std::size_t end_of_field,
                               const char* type_name);

// The first check of every entry point: empty when `args` is given and its struct_size reaches
// `end_of_field`, else "args is NULL" or struct_size_defect's message.
template <typename Args>
std::string args_defect(const Args* args, std::size_t end_of_field, const char* type_name) {
  if (args == nullptr) return "args is NULL";
  return struct_size_defect("struct_size", args->struct_size, end_of_field, type_name);
}

}  // namespace kvc::abi
