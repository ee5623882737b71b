// SPDX-License-Identifier: Apache-2.0
// The normalization scale of multi-GPU FFTs: one grid-stride kernel per precision, compiled with
// NVRTC for each device's architecture once per process, launched on each device's legacy default
// stream (ordered after the one-device plan's transform) and waited for.
#include "dist/fft_scale.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include <gpumath/core/device.hpp>
#include <gpumath/core/launch.hpp>
#include <gpumath/core/module.hpp>
#include <gpumath/core/program.hpp>

#include "detail/status.hpp"

namespace gpumath::dist::detail {
namespace {

constexpr const char* scale_source = R"(
extern "C" __global__ void gm_dist_scale_f32(float* p, unsigned long long n, float s) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        p[i] *= s;
}
extern "C" __global__ void gm_dist_scale_f64(double* p, unsigned long long n, double s) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        p[i] *= s;
}
)";

// The scale kernel of `precision` on `device`, compiled on first use (kept for the process).
core::Kernel scale_kernel(int device, bool dbl) {
    using Key = std::pair<int, bool>;
    static std::mutex mutex;
    static auto* kernels = new std::map<Key, core::Kernel>();
    const Key key{device, dbl};
    {
        std::lock_guard lock(mutex);
        if (auto it = kernels->find(key); it != kernels->end()) return it->second;
    }
    const core::Program program(scale_source,
                                core::ProgramOptions{.name = "gm_dist_scale", .arch = core::Device(device).arch()});
    const core::ObjectCode code = program.compile(core::CodeType::cubin);
    core::Kernel kernel = core::Module(code).kernel(dbl ? "gm_dist_scale_f64" : "gm_dist_scale_f32", device);
    std::lock_guard lock(mutex);
    return kernels->emplace(key, std::move(kernel)).first->second;
}

}  // namespace

void scale_parts(const std::vector<FFTPart>& parts, DataType precision, double scale, const char* api) {
    const bool dbl = precision == DataType::f64;
    for (const FFTPart& part : parts) {
        gpumath::detail::check(cudaSetDevice(part.device), "cudaSetDevice", api);
        gpumath::detail::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize", api);
    }
    if (scale == 1.0) return;
    for (const FFTPart& part : parts) {
        const std::uint64_t n = part.bytes / size_of(precision);
        if (n == 0) continue;
        gpumath::detail::check(cudaSetDevice(part.device), "cudaSetDevice", api);
        const core::Kernel kernel = scale_kernel(part.device, dbl);
        constexpr std::int64_t block = 256;
        const std::int64_t sms = std::max(core::Device(part.device).multiprocessor_count(), 1);
        const std::int64_t grid = std::clamp<std::int64_t>(std::int64_t((n + block - 1) / block), 1, sms * 32);
        const core::LaunchConfig config{.grid = grid, .block = block};
        if (dbl) core::launch(core::StreamRef{}, config, kernel, static_cast<double*>(part.data), n, scale);
        else core::launch(core::StreamRef{}, config, kernel, static_cast<float*>(part.data), n, float(scale));
    }
    for (const FFTPart& part : parts) {
        gpumath::detail::check(cudaSetDevice(part.device), "cudaSetDevice", api);
        gpumath::detail::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize", api);
    }
}

}  // namespace gpumath::dist::detail
