# SPDX-License-Identifier: Apache-2.0
# DLPack, an optional dependency: the header dlpack/dlpack.h (Debian's libdlpack-dev; nothing to
# link). With GPUMATH_WITH_DLPACK on and the header found (or GPUMATH_DLPACK_INCLUDE_DIR set to its
# folder), src/dlpack.cpp is built and gpumath::core carries GPUMATH_HAS_DLPACK=1, which declares
# the from_dlpack/to_dlpack API. Sets GPUMATH_HAS_DLPACK, and gpumath_HAS_DLPACK for a project that
# adds gpumath with add_subdirectory (an installed gpumath's config sets it the same way).

set(GPUMATH_HAS_DLPACK OFF)
if(GPUMATH_WITH_DLPACK)
  find_path(GPUMATH_DLPACK_INCLUDE_DIR dlpack/dlpack.h DOC "Folder holding dlpack/dlpack.h (DLPack interop)")
  if(GPUMATH_DLPACK_INCLUDE_DIR AND EXISTS "${GPUMATH_DLPACK_INCLUDE_DIR}/dlpack/dlpack.h")
    set(GPUMATH_HAS_DLPACK ON)
    message(STATUS "gpumath: DLPack interop on (${GPUMATH_DLPACK_INCLUDE_DIR}/dlpack/dlpack.h)")
  else()
    message(STATUS "gpumath: DLPack interop off: dlpack/dlpack.h not found (install Debian's libdlpack-dev, or set "
                   "GPUMATH_DLPACK_INCLUDE_DIR)")
  endif()
else()
  message(STATUS "gpumath: DLPack interop off (GPUMATH_WITH_DLPACK is OFF)")
endif()
set(gpumath_HAS_DLPACK ${GPUMATH_HAS_DLPACK})
if(NOT CMAKE_CURRENT_SOURCE_DIR STREQUAL CMAKE_SOURCE_DIR)
  set(gpumath_HAS_DLPACK ${GPUMATH_HAS_DLPACK} PARENT_SCOPE)
endif()

# gpumath_target_dlpack(<target>): the DLPack definition and header folder on <target>'s public
# interface, when DLPack is on. The installed config adds the header folder it finds itself.
function(gpumath_target_dlpack target)
  if(GPUMATH_HAS_DLPACK)
    target_compile_definitions(${target} PUBLIC GPUMATH_HAS_DLPACK=1)
    target_include_directories(${target} SYSTEM PUBLIC $<BUILD_INTERFACE:${GPUMATH_DLPACK_INCLUDE_DIR}>)
  endif()
endfunction()
