# SPDX-License-Identifier: Apache-2.0
# Fails if an installed CMake file of gpumath (DIR: <prefix>/lib/cmake/gpumath) refers to fmt: a
# target of it (fmt::fmt, fmt::fmt-header-only) in the exported link interface, or a
# find_dependency/find_package of it. fmt is private to gpumath's build; a consumer needs only the
# CUDA toolkit.
file(GLOB files "${DIR}/*.cmake")
if(NOT files)
  message(FATAL_ERROR "no CMake files in ${DIR}; install gpumath there first")
endif()
set(bad "")
foreach(f IN LISTS files)
  file(STRINGS "${f}" lines REGEX "fmt::|(find_dependency|find_package)[ \t]*\\([ \t]*fmt[ \t)]")
  foreach(line IN LISTS lines)
    list(APPEND bad "${f}: ${line}")
  endforeach()
endforeach()
if(bad)
  string(REPLACE ";" "\n  " bad "${bad}")
  message(FATAL_ERROR "the installed package refers to fmt, which consumers need not have:\n  ${bad}")
endif()
list(LENGTH files count)
message(STATUS "checked ${count} installed CMake files: none refers to fmt")
