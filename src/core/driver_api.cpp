// SPDX-License-Identifier: Apache-2.0
// Resolves driver entry points through the runtime, so nothing links libcuda.
#include "core/driver_api.hpp"

#include <mutex>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "detail/status.hpp"

namespace gpumath::detail {
namespace {

struct Loaded {
    DriverApi api;
    cudaError_t status = cudaSuccess;
};

const Loaded& loaded() noexcept {
    static const Loaded result = [] {
        Loaded l;
        // Any runtime call that needs the driver reports its absence; cudaGetDeviceCount is the
        // cheapest and initialises nothing else.
        int count = 0;
        l.status = cudaGetDeviceCount(&count);
        if (l.status != cudaSuccess) {
            (void)cudaGetLastError();
            return l;
        }
#define GPUMATH_DRIVER_RESOLVE(name, version)                                                              \
    {                                                                                                      \
        void* fn = nullptr;                                                                                \
        cudaDriverEntryPointQueryResult q{};                                                               \
        if (cudaGetDriverEntryPointByVersion(#name, &fn, version, cudaEnableDefault, &q) == cudaSuccess && \
            q == cudaDriverEntryPointSuccess)                                                              \
            l.api.name = reinterpret_cast<decltype(l.api.name)>(fn);                                       \
        else (void)cudaGetLastError();                                                                     \
    }
        GPUMATH_DRIVER_FUNCTIONS(GPUMATH_DRIVER_RESOLVE)
#undef GPUMATH_DRIVER_RESOLVE
        return l;
    }();
    return result;
}

}  // namespace

const DriverApi& driver() {
    const Loaded& l = loaded();
    if (l.status != cudaSuccess) throw_cuda(l.status, "cudaGetDeviceCount", "loading the CUDA driver's entry points");
    return l.api;
}

const DriverApi* driver_if_available() noexcept {
    const Loaded& l = loaded();
    return l.status == cudaSuccess ? &l.api : nullptr;
}

void require_driver_function(const void* fn, const char* name) {
    if (fn == nullptr) {
        int version = 0;
        (void)cudaDriverGetVersion(&version);
        throw_not_supported(fmt::format("the installed CUDA driver (version {}.{}) does not provide {}; "
                                        "update the driver",
                                        version / 1000, (version % 1000) / 10, name),
                            name);
    }
}

int stream_device(CUstream stream, std::string_view context) {
    // The default streams (null, legacy, per-thread) belong to the current device, whose primary
    // context the driver may not have current yet on this thread.
    if (stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD) {
        int device = 0;
        const cudaError_t status = cudaGetDevice(&device);
        if (status != cudaSuccess) throw_cuda(status, "cudaGetDevice", context);
        return device;
    }
    const DriverApi& d = driver();
    const auto check_cu = [&](CUresult r, const char* api) {
        if (r != CUDA_SUCCESS) throw_cu(r, api, context);
    };
    CUcontext ctx = nullptr;
    check_cu(d.cuStreamGetCtx(stream, &ctx), "cuStreamGetCtx");
    check_cu(d.cuCtxPushCurrent(ctx), "cuCtxPushCurrent");
    CUdevice device = 0;
    const CUresult r = d.cuCtxGetDevice(&device);
    CUcontext popped = nullptr;
    (void)d.cuCtxPopCurrent(&popped);
    check_cu(r, "cuCtxGetDevice");
    return int(device);
}

}  // namespace gpumath::detail
