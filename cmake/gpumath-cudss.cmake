# SPDX-License-Identifier: Apache-2.0
# cuDSS, the sparse direct solver behind gpumath::sparse::DirectSolver. It is not part of the CUDA
# toolkit: NVIDIA ships it as archives and as the pip wheel nvidia-cudss-cu13. Only its header
# cudss.h is needed to build; the library (libcudss.so.<major>) is loaded at run time, so nothing
# links it and programs start without it.
#
# cudss.h is looked for under a root the user names, GPUMATH_CUDSS_ROOT (cache variable) or
# CUDSS_ROOT (variable or environment): <root>/include (an archive) and the wheel's layouts
# <root>/nvidia/cu13/include, <root>/nvidia/cu12/include, <root>/cu13/include (a pip --target
# folder, or site-packages); then in build/_deps/cudss/include, where scripts/deps.sh puts the
# header; then in the CUDA toolkit's include folder. GPUMATH_CUDSS_INCLUDE_DIR may name the folder
# directly. With GPUMATH_WITH_CUDSS on and the header found, GPUMATH_HAS_CUDSS is ON and
# gpumath_target_cudss() compiles the solver's sources against it; without it the solver still
# exists and throws NotSupported saying how to get cuDSS.

option(GPUMATH_WITH_CUDSS "Build sparse::DirectSolver on cuDSS when cudss.h is found" ON)
set(GPUMATH_CUDSS_ROOT "" CACHE PATH "Root of a cuDSS install or of the nvidia-cudss-cu13 wheel (holds cudss.h)")

set(GPUMATH_HAS_CUDSS OFF)
if(GPUMATH_WITH_CUDSS)
  set(_gpumath_cudss_roots "")
  foreach(_root IN ITEMS "${GPUMATH_CUDSS_ROOT}" "${CUDSS_ROOT}" "$ENV{CUDSS_ROOT}")
    if(_root)
      list(APPEND _gpumath_cudss_roots "${_root}")
    endif()
  endforeach()
  list(APPEND _gpumath_cudss_roots "${CMAKE_CURRENT_SOURCE_DIR}/build/_deps/cudss")
  find_path(GPUMATH_CUDSS_INCLUDE_DIR cudss.h
            HINTS ${_gpumath_cudss_roots}
            PATH_SUFFIXES include nvidia/cu13/include nvidia/cu12/include cu13/include
            PATHS ${CUDAToolkit_INCLUDE_DIRS}
            NO_DEFAULT_PATH
            DOC "Folder holding cudss.h (sparse::DirectSolver)")
  if(GPUMATH_CUDSS_INCLUDE_DIR AND EXISTS "${GPUMATH_CUDSS_INCLUDE_DIR}/cudss.h")
    file(STRINGS "${GPUMATH_CUDSS_INCLUDE_DIR}/cudss.h" _gpumath_cudss_major REGEX "#define CUDSS_VERSION_MAJOR ")
    string(REGEX MATCH "[0-9]+" _gpumath_cudss_major "${_gpumath_cudss_major}")
    if(_gpumath_cudss_major STREQUAL "" OR _gpumath_cudss_major LESS 1)
      message(STATUS "gpumath: sparse direct solver off: ${GPUMATH_CUDSS_INCLUDE_DIR}/cudss.h is older than cuDSS 1.0 "
                     "(install nvidia-cudss-cu13 1.x, or point GPUMATH_CUDSS_ROOT at a newer cuDSS)")
    else()
      set(GPUMATH_HAS_CUDSS ON)
      message(STATUS "gpumath: sparse direct solver on (${GPUMATH_CUDSS_INCLUDE_DIR}/cudss.h, cuDSS "
                     "${_gpumath_cudss_major}.x; libcudss.so.${_gpumath_cudss_major} loaded at run time)")
    endif()
  else()
    message(STATUS "gpumath: sparse direct solver off: cudss.h not found (scripts/deps.sh fetches it, or "
                   "`pip install nvidia-cudss-cu13` and set GPUMATH_CUDSS_ROOT to the folder holding nvidia/cu13)")
  endif()
else()
  message(STATUS "gpumath: sparse direct solver off (GPUMATH_WITH_CUDSS is OFF)")
endif()
set(gpumath_HAS_CUDSS ${GPUMATH_HAS_CUDSS})
if(NOT CMAKE_CURRENT_SOURCE_DIR STREQUAL CMAKE_SOURCE_DIR)
  set(gpumath_HAS_CUDSS ${GPUMATH_HAS_CUDSS} PARENT_SCOPE)
endif()

# gpumath_target_cudss(<target> <sources...>): compiles <sources> (the solver's, in <target>)
# against cudss.h, privately, with GPUMATH_HAS_CUDSS=1 on them, and links the dynamic loader.
# Without cudss.h it does nothing: the sources build their NotSupported fallback.
function(gpumath_target_cudss target)
  if(GPUMATH_HAS_CUDSS)
    set_property(SOURCE ${ARGN} TARGET_DIRECTORY ${target} APPEND PROPERTY COMPILE_DEFINITIONS GPUMATH_HAS_CUDSS=1)
    set_property(SOURCE ${ARGN} TARGET_DIRECTORY ${target} APPEND PROPERTY INCLUDE_DIRECTORIES
                 "${GPUMATH_CUDSS_INCLUDE_DIR}")
    target_link_libraries(${target} PRIVATE ${CMAKE_DL_LIBS})
  endif()
endfunction()
