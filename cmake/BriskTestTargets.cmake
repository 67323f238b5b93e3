# brisk_test_build_settings(target): compile-time settings shared by the
# GoogleTest executables (one per tests/<layer>/test_<name>.cpp).
#
# CI builds the tests twice (release and asan) on 2 cores, so test code is
# kept cheap to compile: it is built at -O1 (the library it calls keeps -O3)
# and reuses one precompiled header of <gtest/gtest.h> and <brisk/brisk.h>,
# which take a third to a half of a test file's compile time. The header is
# owned by a tiny executable that always links, so building one test never
# needs another test to build. In a sanitizer build the test code itself is
# compiled with ASan only: UBSan's checks on gtest-heavy code double its
# compile time, while the library under test keeps ASan and UBSan.
function(_brisk_test_flags target)
  target_compile_options(${target} PRIVATE -O1)
  if(BRISK_SANITIZE)
    get_target_property(opts ${target} COMPILE_OPTIONS)
    list(TRANSFORM opts REPLACE "^-fsanitize=address,undefined$" "-fsanitize=address")
    list(REMOVE_ITEM opts -fno-sanitize-recover=undefined)
    set_property(TARGET ${target} PROPERTY COMPILE_OPTIONS ${opts})
  endif()
endfunction()

function(brisk_test_build_settings target)
  if(NOT TARGET brisk_test_pch)
    file(CONFIGURE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/brisk_test_pch.cpp
         CONTENT "// Owner of the tests' precompiled header (cmake/BriskTestTargets.cmake).\nint main() { return 0; }\n")
    add_executable(brisk_test_pch EXCLUDE_FROM_ALL ${CMAKE_CURRENT_BINARY_DIR}/brisk_test_pch.cpp)
    target_link_libraries(brisk_test_pch PRIVATE brisk::brisk GTest::gtest)
    target_include_directories(brisk_test_pch PRIVATE ${PROJECT_SOURCE_DIR}/tests ${PROJECT_SOURCE_DIR}/src)
    _brisk_test_flags(brisk_test_pch)
    target_precompile_headers(brisk_test_pch PRIVATE <gtest/gtest.h> <brisk/brisk.h>)
  endif()
  _brisk_test_flags(${target})
  target_precompile_headers(${target} REUSE_FROM brisk_test_pch)
endfunction()
