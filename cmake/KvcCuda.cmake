# CUDA detection. KVC_CUDA=AUTO enables CUDA when nvcc is found, ON requires it, OFF never looks
# (neither for nvcc nor for the toolkit's headers). Nothing on the CPU side depends on the outcome:
# the oracle, testkit and CPU tests build either way.
include_guard(GLOBAL)
set(KVC_CUDA "AUTO" CACHE STRING "Build CUDA kernels: AUTO, ON or OFF")
set_property(CACHE KVC_CUDA PROPERTY STRINGS AUTO ON OFF)

set(KVC_HAVE_CUDA OFF)
if(NOT KVC_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)  # H200; sm_80+ is the contract's minimum
    endif()
    enable_language(CUDA)
    set(KVC_HAVE_CUDA ON)
  elseif(KVC_CUDA STREQUAL "ON")
    message(FATAL_ERROR "KVC_CUDA=ON but no CUDA compiler was found")
  endif()
endif()

# The CUDA headers alone (cuda_fp8.h, cuda_bf16.h) are usable from host code; the exhaustive
# primitive tests compare against their host conversion paths when present (and skip loudly when
# not). KVC_CUDA=OFF means OFF: no compiler check and no toolkit search either, so the `cpu`
# preset configures identically on a machine with and without CUDA installed.
set(KVC_HAVE_CUDA_HEADERS OFF)
if(NOT KVC_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND AND EXISTS "${CUDAToolkit_INCLUDE_DIRS}/cuda_fp8.h")
    set(KVC_HAVE_CUDA_HEADERS ON)
  endif()
endif()
message(STATUS "kvconform: CUDA kernels ${KVC_HAVE_CUDA}, CUDA headers for host checks ${KVC_HAVE_CUDA_HEADERS}")
