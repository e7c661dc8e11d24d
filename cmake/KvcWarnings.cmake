# Warning set for all project targets, and the floating-point rule for the oracle.
include_guard(GLOBAL)
set(KVC_WARNINGS -Wall -Wextra -Wpedantic -Wshadow)
# The oracle's arithmetic is the contract: the host compiler must not fuse a*b+c into an fma
# (x86-64 with -march flags that enable FMA would otherwise change results), and nothing may
# assume finite math.
set(KVC_ORACLE_FP_FLAGS -ffp-contract=off -fno-fast-math)
