# Warning set for all project targets, and the floating-point rule for the oracle.
include_guard(GLOBAL)
set(KVC_WARNINGS -Wall -Wextra -Wpedantic -Wshadow)
# CI builds with KVC_WERROR=ON (ci/test.sh): a warning in host C++ code fails the build there.
# Off by default so that a newer compiler's new warning does not stop a user's build.
option(KVC_WERROR "Treat warnings in project host C++ code as errors" OFF)
if(KVC_WERROR)
  list(APPEND KVC_WARNINGS -Werror)
endif()
# The oracle's arithmetic is the contract: the host compiler must not fuse a*b+c into an fma
# (x86-64 with -march flags that enable FMA would otherwise change results), and nothing may
# assume finite math.
set(KVC_ORACLE_FP_FLAGS -ffp-contract=off -fno-fast-math)
