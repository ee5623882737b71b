# SPDX-License-Identifier: Apache-2.0
# The fuzz targets and the sources that define them, for both drivers.
set(GPUMATH_FUZZ_TARGETS fatbin elf ptx lz4 zstd compile_cache tuning linalg_choices environment ld_so_cache)
set(GPUMATH_FUZZ_TARGET_SOURCES
  "${CMAKE_CURRENT_LIST_DIR}/object_code.cpp"
  "${CMAKE_CURRENT_LIST_DIR}/decompress.cpp"
  "${CMAKE_CURRENT_LIST_DIR}/formats.cpp"
  "${CMAKE_CURRENT_LIST_DIR}/seeds.cpp")
if(GPUMATH_HAS_DLPACK)
  list(APPEND GPUMATH_FUZZ_TARGETS dlpack)
  list(APPEND GPUMATH_FUZZ_TARGET_SOURCES "${CMAKE_CURRENT_LIST_DIR}/dlpack.cpp")
endif()
