# One helper each for a library, a test and a benchmark, so every target is declared alike.

set(RERACE_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
    -Wcast-align -Woverloaded-virtual -Wconversion -Wsign-conversion
    -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough)
if(RERACE_WERROR)
  list(APPEND RERACE_WARNINGS -Werror)
endif()

if(RERACE_SANITIZE)
  add_compile_options(-fsanitize=${RERACE_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${RERACE_SANITIZE})
  add_compile_definitions(RERACE_SANITIZED=1)
endif()

# rerace_library(NAME component SOURCES ... DEPS ... [PRIVATE_DEPS ...] [HEADER_ONLY])
# Declares rerace_<component>, alias rerace::<component>, public headers in <dir>/include.
function(rerace_library)
  cmake_parse_arguments(A "HEADER_ONLY" "NAME" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  set(target rerace_${A_NAME})
  if(A_HEADER_ONLY)
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE
      $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>)
    target_link_libraries(${target} INTERFACE ${A_DEPS})
  else()
    add_library(${target} STATIC ${A_SOURCES})
    target_include_directories(${target} PUBLIC
      $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>
      PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
    target_link_libraries(${target} PUBLIC ${A_DEPS} PRIVATE ${A_PRIVATE_DEPS})
    target_compile_options(${target} PRIVATE ${RERACE_WARNINGS})
  endif()
  add_library(rerace::${A_NAME} ALIAS ${target})
  # Installed as rerace::<component> through find_package(rerace).
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${A_NAME})
  install(TARGETS ${target} EXPORT reraceTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/include)
    install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()
endfunction()

# rerace_test(NAME name SOURCES ... DEPS ... [LABELS ...] [PRE_TEST])
# PRE_TEST: the tests are listed when ctest runs, not when the binary is built (a test per file
# of a folder sees the files there now).
function(rerace_test)
  cmake_parse_arguments(A "PRE_TEST" "NAME" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${A_NAME} ${A_SOURCES})
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS} GTest::gtest GTest::gtest_main)
  target_compile_options(${A_NAME} PRIVATE ${RERACE_WARNINGS})
  set_target_properties(${A_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  include(GoogleTest)
  # RERACE_REPORT_WIDTH=0: the reports' lines whole, as the tests parse them (the wrapping at
  # 160 columns users see is tested by wrap_test and Cli.HelpFits80ColumnsAndReportsFit160).
  # (One value per property: gtest_discover_tests splits a list, keeping only its first.)
  set(props ENVIRONMENT "RERACE_BIN=${CMAKE_BINARY_DIR}/bin" ENVIRONMENT_MODIFICATION
    "RERACE_REPORT_WIDTH=set:0")
  if(A_LABELS)
    list(APPEND props LABELS "${A_LABELS}")
  endif()
  set(mode)
  if(A_PRE_TEST)
    set(mode DISCOVERY_MODE PRE_TEST)
  endif()
  gtest_discover_tests(${A_NAME} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} ${mode} PROPERTIES ${props})
endfunction()

# rerace_bench(NAME name SOURCES ... DEPS ...)
function(rerace_bench)
  cmake_parse_arguments(A "" "NAME" "SOURCES;DEPS" ${ARGN})
  add_executable(${A_NAME} ${A_SOURCES})
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS} benchmark::benchmark)
  target_compile_options(${A_NAME} PRIVATE ${RERACE_WARNINGS})
  set_target_properties(${A_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
endfunction()
