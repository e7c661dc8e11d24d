// forward_to_ours.h: how a test double reaches our kernels. The double is a shared object that
// exports the ABI itself, so it cannot also link kvc::kernels (the symbols would collide); it
// dlopens libkvconform_kernels.so (the path is compiled in: KVC_DOUBLE_OURS) with RTLD_LOCAL and
// calls through the table below. A double then changes only what it plants (a declaration, a
// refusal, a stray write) around kernels known to be right.
#pragma once

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include "kvc/kernel_abi.h"

#ifndef KVC_DOUBLE_OURS
#error "forward_to_ours.h needs KVC_DOUBLE_OURS (kvc_add_abi_double(... FORWARDS_TO_OURS))"
#endif

namespace kvc::doubles {

struct OurKernels {
#define KVC_DOUBLE_POINTER(symbol) decltype(&::symbol) symbol = nullptr;
  KVC_ABI_SYMBOLS(KVC_DOUBLE_POINTER)
  KVC_ABI_OPTIONAL_SYMBOLS(KVC_DOUBLE_POINTER)
#undef KVC_DOUBLE_POINTER
};

// Loaded once; a double that cannot reach our kernels cannot answer anything, so it says why on
// stderr and aborts (a test of the double, not of the suite, has failed).
inline const OurKernels& ours() {
  static const OurKernels table = [] {
    OurKernels t;
    void* handle = dlopen(KVC_DOUBLE_OURS, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      std::fprintf(stderr, "test double: cannot load %s: %s\n", KVC_DOUBLE_OURS, dlerror());
      std::abort();
    }
#define KVC_DOUBLE_LOOKUP(symbol) t.symbol = reinterpret_cast<decltype(&::symbol)>(dlsym(handle, #symbol));
    KVC_ABI_SYMBOLS(KVC_DOUBLE_LOOKUP)
    KVC_ABI_OPTIONAL_SYMBOLS(KVC_DOUBLE_LOOKUP)
#undef KVC_DOUBLE_LOOKUP
    return t;
  }();
  return table;
}

}  // namespace kvc::doubles
