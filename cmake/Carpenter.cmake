# Build rules shared by every module: warnings, sanitizers, and two helpers,
# carp_module() for a library under internal/ and carp_unit_test() for a
# cmocka binary registered with ctest.

set(CARP_WARNINGS
  -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wstrict-prototypes
  -Wmissing-prototypes -Wimplicit-fallthrough -Wvla -Wno-unused-parameter)

add_compile_definitions(_GNU_SOURCE)

if(CARP_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

# carp_module(NAME SOURCES a.c b.c DEPS other libs)
function(carp_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS" ${ARGN})
  add_library(carp_${name} STATIC ${M_SOURCES})
  target_include_directories(carp_${name}
    PUBLIC ${CMAKE_SOURCE_DIR}/include ${CMAKE_BINARY_DIR}/generated
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_compile_options(carp_${name} PRIVATE ${CARP_WARNINGS})
  target_link_libraries(carp_${name} PUBLIC ${M_DEPS})
endfunction()

# carp_unit_test(NAME SOURCES test.c DEPS libs TIMEOUT seconds LABELS l)
function(carp_unit_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_include_directories(${name} PRIVATE
    ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/test/tools
    ${CMAKE_BINARY_DIR}/generated)
  target_compile_options(${name} PRIVATE ${CARP_WARNINGS}
    -Wno-missing-prototypes)
  target_link_libraries(${name} PRIVATE ${T_DEPS} cmocka)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT}
    LABELS "${T_LABELS}"
    ENVIRONMENT "CARP_SOURCE_DIR=${CMAKE_SOURCE_DIR};CARP_BUILD_DIR=${CMAKE_BINARY_DIR}")
endfunction()

# Where the tests find Debian 12's kubectl 1.20 (fixture debian_kubectl,
# test/CMakeLists.txt).
set(CARP_DEBIAN_KUBECTL ${CMAKE_BINARY_DIR}/debian-kubectl/usr/bin/kubectl)

# carp_script_test(NAME COMMAND cmd... TIMEOUT seconds LABELS l
#                  [ENV VAR=value...] [FIXTURES fixture...])
# FIXTURES names fixtures the test needs (ctest runs their setup first).
function(carp_script_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "COMMAND;LABELS;ENV;FIXTURES" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  add_test(NAME ${name} COMMAND ${T_COMMAND})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT}
    LABELS "${T_LABELS}"
    ENVIRONMENT "CARP_SOURCE_DIR=${CMAKE_SOURCE_DIR};CARP_BUILD_DIR=${CMAKE_BINARY_DIR};${T_ENV}")
  if(T_FIXTURES)
    set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED "${T_FIXTURES}")
  endif()
endfunction()
