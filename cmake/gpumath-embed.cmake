# SPDX-License-Identifier: Apache-2.0
# gpumath's own device code lives in real files (src/<module>/kernels/*.cu, *.cuh and the parameter
# headers they share with the host) and reaches NVRTC as text embedded at build time: no nvcc and
# no new dependency, only CMake.
#
#   gpumath_embed_device_sources(<target> <files relative to src/>...)
#
# makes, for each file, <build>/gpumath_embedded/<file>.inc: a header defining
# `gpumath::embedded::<file as a C identifier>` (e.g. core_kernels_tensor_ops_cu), a
# std::string_view of the file's text led by a #line directive naming the file, so that NVRTC's
# messages point at it. The target's sources include "<file>.inc". The compile cache keys on the
# text, so an edited kernel is compiled again.
set(GPUMATH_EMBED_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/embed_file.cmake")

function(gpumath_embed_device_sources target)
  set(out_dir "${CMAKE_CURRENT_BINARY_DIR}/gpumath_embedded")
  set(outputs "")
  foreach(file IN LISTS ARGN)
    set(in "${PROJECT_SOURCE_DIR}/src/${file}")
    set(out "${out_dir}/${file}.inc")
    string(MAKE_C_IDENTIFIER "${file}" name)
    add_custom_command(OUTPUT "${out}"
      COMMAND "${CMAKE_COMMAND}" "-DIN=${in}" "-DOUT=${out}" "-DNAME=${name}" "-DSHOWN=src/${file}"
              -P "${GPUMATH_EMBED_SCRIPT}"
      DEPENDS "${in}" "${GPUMATH_EMBED_SCRIPT}"
      COMMENT "Embedding src/${file}"
      VERBATIM)
    list(APPEND outputs "${out}")
  endforeach()
  add_custom_target(${target}_embedded DEPENDS ${outputs})
  add_dependencies(${target} ${target}_embedded)
  target_include_directories(${target} PRIVATE "${out_dir}")
endfunction()
