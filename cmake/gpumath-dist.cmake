# SPDX-License-Identifier: Apache-2.0
# The multi-GPU module (gpumath::dist): NCCL's header nccl.h is needed to build it (the CUDA
# toolkit's include folder holds one on some installs; Debian/Ubuntu's libnccl-dev another); NCCL
# itself is loaded at run time, so nothing links it and programs start without it. cuFFT's
# multi-GPU API (cufftXt.h) comes with the toolkit. With GPUMATH_WITH_DIST on and nccl.h found (or
# GPUMATH_NCCL_INCLUDE_DIR set to its folder), src/dist/*.cpp are built as gpumath::dist. Sets
# GPUMATH_HAS_DIST, and gpumath_HAS_DIST for a project that adds gpumath with add_subdirectory (an
# installed gpumath's config sets it the same way). nccl.h stays private: no public header needs it.

set(GPUMATH_HAS_DIST OFF)
if(GPUMATH_WITH_DIST)
  find_path(GPUMATH_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS}
            DOC "Folder holding nccl.h (the multi-GPU module)")
  if(GPUMATH_NCCL_INCLUDE_DIR AND EXISTS "${GPUMATH_NCCL_INCLUDE_DIR}/nccl.h")
    set(GPUMATH_HAS_DIST ON)
    message(STATUS "gpumath: multi-GPU module on (${GPUMATH_NCCL_INCLUDE_DIR}/nccl.h; NCCL loaded at run time)")
  else()
    message(STATUS "gpumath: multi-GPU module off: nccl.h not found (install NCCL's header, e.g. Debian's "
                   "libnccl-dev, or set GPUMATH_NCCL_INCLUDE_DIR)")
  endif()
else()
  message(STATUS "gpumath: multi-GPU module off (GPUMATH_WITH_DIST is OFF)")
endif()
set(gpumath_HAS_DIST ${GPUMATH_HAS_DIST})
if(NOT CMAKE_CURRENT_SOURCE_DIR STREQUAL CMAKE_SOURCE_DIR)
  set(gpumath_HAS_DIST ${GPUMATH_HAS_DIST} PARENT_SCOPE)
endif()
