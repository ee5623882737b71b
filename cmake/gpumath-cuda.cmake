# SPDX-License-Identifier: Apache-2.0
# Imported targets for the CUDA libraries gpumath links that CMake's FindCUDAToolkit does not
# provide without libcuda: FindCUDAToolkit's CUDA::nvrtc depends on CUDA::cuda_driver (libcuda, or
# its link stub), and gpumath must never link libcuda. Needs find_package(CUDAToolkit) first.

foreach(_gpumath_lib IN ITEMS nvrtc nvJitLink)
  if(NOT TARGET gpumath::cuda_${_gpumath_lib})
    find_library(GPUMATH_${_gpumath_lib}_LIBRARY NAMES ${_gpumath_lib}
                 HINTS "${CUDAToolkit_LIBRARY_DIR}" "${CUDAToolkit_LIBRARY_ROOT}/lib64"
                 NO_DEFAULT_PATH)
    if(NOT GPUMATH_${_gpumath_lib}_LIBRARY)
      message(FATAL_ERROR "gpumath: lib${_gpumath_lib}.so not found in ${CUDAToolkit_LIBRARY_DIR}; "
                          "install the CUDA Toolkit's ${_gpumath_lib} component")
    endif()
    add_library(gpumath::cuda_${_gpumath_lib} SHARED IMPORTED)
    set_target_properties(gpumath::cuda_${_gpumath_lib} PROPERTIES
      IMPORTED_LOCATION "${GPUMATH_${_gpumath_lib}_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${CUDAToolkit_INCLUDE_DIRS}")
  endif()
endforeach()
unset(_gpumath_lib)
