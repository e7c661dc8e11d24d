# kvc_add_test(): the one way a test executable is declared.
#
# Every GoogleTest case of the executable becomes its own ctest entry (so `ctest -R` picks single
# cases) carrying the labels given here. GTEST_SKIP is reported by ctest as "skipped", never as
# passed (GoogleTest.cmake sets SKIP_REGULAR_EXPRESSION): a GPU test on a machine without a GPU
# shows up in the summary as such.
#
#   kvc_add_test(NAME bf16_test SOURCES cpu/bf16_test.cpp LIBS kvc::oracle LABELS cpu)
#
# Labels in use: cpu, gpu, exhaustive, fuzz, golden, sanitizer, slow. Compute-sanitizer runs are
# declared with kvc_add_sanitizer_test() (below).
include_guard(GLOBAL)
include(GoogleTest)

set(KVC_KNOWN_LABELS cpu gpu exhaustive fuzz golden sanitizer slow)
# Instrumented builds run several times slower: the `sanitize` preset multiplies every test's
# timeout by 3 rather than cutting the fuzz runs' case counts (which their coverage needs).
set(KVC_TEST_TIMEOUT_SCALE 1 CACHE STRING "Multiplier for every test's timeout (3 in the sanitize preset)")

function(kvc_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT T_NAME OR NOT T_SOURCES OR NOT T_LABELS)
    message(FATAL_ERROR "kvc_add_test needs NAME, SOURCES and LABELS")
  endif()
  foreach(label IN LISTS T_LABELS)
    if(NOT label IN_LIST KVC_KNOWN_LABELS)
      message(FATAL_ERROR "kvc_add_test(${T_NAME}): unknown label '${label}'")
    endif()
  endforeach()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  math(EXPR T_TIMEOUT "${T_TIMEOUT} * ${KVC_TEST_TIMEOUT_SCALE}")
  math(EXPR discovery_timeout "60 * ${KVC_TEST_TIMEOUT_SCALE}")
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  target_compile_options(${T_NAME} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${KVC_WARNINGS}>)
  # Labels are set by a script that runs after discovery: a list value inside
  # gtest_discover_tests(PROPERTIES) loses its separators on the way to set_tests_properties.
  gtest_discover_tests(${T_NAME}
    TEST_LIST ${T_NAME}_TESTS
    DISCOVERY_TIMEOUT ${discovery_timeout}
    NO_PRETTY_VALUES
    PROPERTIES TIMEOUT ${T_TIMEOUT})
  set(label_file "${CMAKE_CURRENT_BINARY_DIR}/${T_NAME}_labels.cmake")
  file(WRITE "${label_file}"
    "if(${T_NAME}_TESTS)\n  set_tests_properties(\${${T_NAME}_TESTS} PROPERTIES LABELS \"${T_LABELS}\")\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${label_file}")
endfunction()

# kvc_add_sanitizer_test(): one compute-sanitizer run of a program as one ctest entry, labelled
# gpu and sanitizer (so the CPU presets and the GPU suite stage leave it out; ci/device-gate.sh
# --sanitizer runs it). cmake/kvc_sanitizer_run.sh runs it and decides: passed (zero findings,
# at least one GoogleTest case passed), failed, or skipped with the reason (exit 77: no
# compute-sanitizer, no CUDA device, or a runtime on which compute-sanitizer refuses the device).
#
#   kvc_add_sanitizer_test(NAME sanitizer.memcheck.gpu_kv_insert TOOL memcheck TARGET gpu_kv_insert_test
#                          ARGS --gtest_filter=... [ENVIRONMENT VAR=value...] [TIMEOUT s])
#   kvc_add_sanitizer_test(NAME ... TOOL racecheck TARGET kvc_sanitizer_planted ARGS shared-race
#                          EXPECT_REPORT "Race reported between")   # passes only if the tool reports it
#
# KVC_COMPUTE_SANITIZER (found at configure time, else looked up on PATH when the entry runs) and
# the device probe target kvc_cuda_device_probe must exist.
function(kvc_add_sanitizer_test)
  cmake_parse_arguments(S "" "NAME;TOOL;TARGET;TIMEOUT;EXPECT_REPORT" "ARGS;ENVIRONMENT" ${ARGN})
  if(NOT S_NAME OR NOT S_TOOL OR NOT S_TARGET)
    message(FATAL_ERROR "kvc_add_sanitizer_test needs NAME, TOOL and TARGET")
  endif()
  if(NOT S_TOOL MATCHES "^(memcheck|racecheck|initcheck|synccheck)$")
    message(FATAL_ERROR "kvc_add_sanitizer_test(${S_NAME}): unknown tool '${S_TOOL}'")
  endif()
  if(NOT S_TIMEOUT)
    set(S_TIMEOUT 300)
  endif()
  math(EXPR S_TIMEOUT "${S_TIMEOUT} * ${KVC_TEST_TIMEOUT_SCALE}")
  set(expect)
  if(DEFINED S_EXPECT_REPORT)
    set(expect --expect-report "${S_EXPECT_REPORT}")
  endif()
  add_test(NAME ${S_NAME}
           COMMAND bash ${PROJECT_SOURCE_DIR}/cmake/kvc_sanitizer_run.sh --tool ${S_TOOL}
                   --probe $<TARGET_FILE:kvc_cuda_device_probe> --sanitizer "${KVC_COMPUTE_SANITIZER}" ${expect}
                   -- $<TARGET_FILE:${S_TARGET}> ${S_ARGS})
  set_tests_properties(${S_NAME} PROPERTIES LABELS "gpu;sanitizer" SKIP_RETURN_CODE 77 TIMEOUT ${S_TIMEOUT})
  if(S_ENVIRONMENT)
    set_tests_properties(${S_NAME} PROPERTIES ENVIRONMENT "${S_ENVIRONMENT}")
  endif()
endfunction()
