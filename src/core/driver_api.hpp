// SPDX-License-Identifier: Apache-2.0
// Private: driver entry points resolved at run time (gpumath never links libcuda).
#pragma once

#include <cuda.h>

#include <string_view>

namespace gpumath::detail {

// X(name, cuda version the symbol is requested at). Add an entry to make a driver function
// available as `driver().name`.
#define GPUMATH_DRIVER_FUNCTIONS(X)                      \
    X(cuGetErrorName, 6000)                              \
    X(cuGetErrorString, 6000)                            \
    X(cuDriverGetVersion, 2020)                          \
    X(cuDeviceGet, 2000)                                 \
    X(cuCtxGetCurrent, 4000)                             \
    X(cuCtxGetDevice, 2000)                              \
    X(cuCtxPushCurrent, 4000)                            \
    X(cuCtxPopCurrent, 4000)                             \
    X(cuStreamGetCtx, 9020)                              \
    X(cuDevicePrimaryCtxRetain, 7000)                    \
    X(cuModuleLoadData, 2000)                            \
    X(cuModuleUnload, 2000)                              \
    X(cuLibraryLoadData, 12000)                          \
    X(cuLibraryUnload, 12000)                            \
    X(cuLibraryGetKernel, 12000)                         \
    X(cuLibraryGetKernelCount, 12040)                    \
    X(cuLibraryEnumerateKernels, 12040)                  \
    X(cuKernelGetName, 12030)                            \
    X(cuKernelGetAttribute, 12000)                       \
    X(cuKernelSetAttribute, 12000)                       \
    X(cuKernelGetFunction, 12000)                        \
    X(cuKernelGetParamInfo, 12040)                       \
    X(cuFuncGetAttribute, 2020)                          \
    X(cuFuncSetAttribute, 9000)                          \
    X(cuFuncGetParamInfo, 12040)                         \
    X(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050) \
    X(cuOccupancyMaxActiveClusters, 11070)               \
    X(cuStreamIsCapturing, 10000)                        \
    X(cuMemsetD8Async, 3020)                             \
    X(cuMemsetD16Async, 3020)                            \
    X(cuMemsetD32Async, 3020)                            \
    X(cuLaunchKernel, 4000)                              \
    X(cuLaunchKernelEx, 11060)                           \
    X(cuTensorMapEncodeTiled, 12000)

/// Typed pointers to the driver functions above; null where the driver lacks one.
struct DriverApi {
#define GPUMATH_DRIVER_MEMBER(name, version) decltype(&::name) name = nullptr;
    GPUMATH_DRIVER_FUNCTIONS(GPUMATH_DRIVER_MEMBER)
#undef GPUMATH_DRIVER_MEMBER
};

/// The driver's entry points, resolved once (thread-safe) through cudaGetDriverEntryPointByVersion.
/// Throws CudaError ("no CUDA driver/device: ...") when no driver is installed.
const DriverApi& driver();

/// Like `driver()`, but returns nullptr instead of throwing when no driver is installed.
const DriverApi* driver_if_available() noexcept;

/// Throws NotSupported naming `name` when the driver does not provide the function `fn`.
void require_driver_function(const void* fn, const char* name);

/// The ordinal of the device `stream` belongs to (the current device for the default streams).
/// Read through the stream's context, which CUDA allows while streams capture:
/// cudaStreamGetDevice and cuStreamGetDevice are refused then (cudaErrorStreamCaptureUnsupported,
/// and the capture is invalidated). Throws CudaError naming `context` when a lookup fails.
[[nodiscard]] int stream_device(CUstream stream, std::string_view context);

}  // namespace gpumath::detail
