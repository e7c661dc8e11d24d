# kvc_add_test(): the one way a test executable is declared.
#
# Every GoogleTest case of the executable becomes its own ctest entry (so `ctest -R` picks single
# cases) carrying the labels given here. GTEST_SKIP is reported by ctest as "skipped", never as
# passed (GoogleTest.cmake sets SKIP_REGULAR_EXPRESSION): a GPU test on a machine without a GPU
# shows up in the summary as such.
#
#   kvc_add_test(NAME bf16_test SOURCES cpu/bf16_test.cpp LIBS kvc::oracle LABELS cpu)
#
# Labels in use: cpu, gpu, exhaustive, fuzz, golden, sanitizer, slow.
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
