// SPDX-License-Identifier: Apache-2.0
// The normalization scale of multi-GPU FFTs: one grid-stride kernel per precision, compiled with
// NVRTC for each device's architecture once per process and launched on a stream the caller gives.
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

#include "detail/capture_mode.hpp"

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

// A loaded scale kernel and its device's multiprocessors (which size the grid).
struct ScaleKernel {
    core::Kernel kernel;
    std::int64_t multiprocessors = 1;
};

// The scale kernel of `precision` on `device`, compiled on first use (kept for the process).
const ScaleKernel& scale_kernel(int device, bool dbl) {
    using Key = std::pair<int, bool>;
    static std::mutex mutex;
    static auto* kernels = new std::map<Key, ScaleKernel>();  // never destroyed: used until exit
    const Key key{device, dbl};
    {
        std::lock_guard lock(mutex);
        if (auto it = kernels->find(key); it != kernels->end()) return it->second;
    }
    // Loading a module is no stream work: allowed while the caller's stream captures.
    const gpumath::detail::RelaxedCaptureMode relaxed("loading the scale kernel of a dist::FFT");
    const core::Device dev(device);
    const core::Program program(scale_source, core::ProgramOptions{.name = "gm_dist_scale", .arch = dev.arch()});
    const core::ObjectCode code = program.compile(core::CodeType::cubin);
    ScaleKernel k{core::Module(code).kernel(dbl ? "gm_dist_scale_f64" : "gm_dist_scale_f32", device),
                  std::max<std::int64_t>(dev.multiprocessor_count(), 1)};
    std::lock_guard lock(mutex);
    return kernels->emplace(key, std::move(k)).first->second;  // a concurrent first load may have won
}

}  // namespace

void load_scale_kernel(int device, DataType precision) { (void)scale_kernel(device, precision == DataType::f64); }

void enqueue_scale(const FFTPart& part, DataType precision, double scale, core::StreamRef stream) {
    const std::uint64_t n = part.bytes / size_of(precision);
    if (scale == 1.0 || n == 0) return;
    const bool dbl = precision == DataType::f64;
    const ScaleKernel& k = scale_kernel(part.device, dbl);
    constexpr std::int64_t block = 256;
    const std::int64_t grid =
        std::clamp<std::int64_t>(std::int64_t((n + block - 1) / block), 1, k.multiprocessors * 32);
    const core::LaunchConfig config{.grid = grid, .block = block};
    if (dbl) core::launch(stream, config, k.kernel, static_cast<double*>(part.data), n, scale);
    else core::launch(stream, config, k.kernel, static_cast<float*>(part.data), n, float(scale));
}

}  // namespace gpumath::dist::detail
