// SPDX-License-Identifier: Apache-2.0
// The normalization scale of multi-GPU FFTs: one grid-stride kernel per precision
// (kernels/fft_scale.cu), compiled for each device's architecture once per process by the core
// kernel loader and launched on a stream the caller gives.
#include "dist/fft_scale.hpp"

#include <algorithm>
#include <cstdint>

#include <gpumath/core/device.hpp>
#include <gpumath/core/launch.hpp>
#include <gpumath/core/module.hpp>
#include <gpumath/core/program.hpp>

#include "core/kernel_loader.hpp"
#include "dist/kernels/fft_scale.cu.inc"

namespace gpumath::dist::detail {

const gpumath::detail::DeviceProgram& scale_program() {
    static const gpumath::detail::DeviceProgram program(gpumath::embedded::dist_kernels_fft_scale_cu,
                                                        core::ProgramOptions{.name = "gm_dist_scale"});
    return program;
}

namespace {

/// The scale kernel of one precision on `device`, from the core kernel loader (compiled and loaded
/// on first use, also while a stream captures; a lookup afterwards).
core::Kernel scale_kernel(int device, bool dbl) {
    return gpumath::detail::device_kernel(device, scale_program(), dbl ? "gm_dist_scale_f64" : "gm_dist_scale_f32");
}

}  // namespace

void load_scale_kernel(int device, DataType precision) { (void)scale_kernel(device, precision == DataType::f64); }

void enqueue_scale(const FFTPart& part, DataType precision, double scale, core::StreamRef stream) {
    const std::uint64_t n = part.bytes / size_of(precision);
    if (scale == 1.0 || n == 0) return;
    const bool dbl = precision == DataType::f64;
    const core::Kernel kernel = scale_kernel(part.device, dbl);
    const std::int64_t multiprocessors = std::max<std::int64_t>(core::Device(part.device).multiprocessor_count(), 1);
    constexpr std::int64_t block = 256;
    const std::int64_t grid = std::clamp<std::int64_t>(std::int64_t((n + block - 1) / block), 1, multiprocessors * 32);
    const core::LaunchConfig config{.grid = grid, .block = block};
    if (dbl) core::launch(stream, config, kernel, static_cast<double*>(part.data), n, scale);
    else core::launch(stream, config, kernel, static_cast<float*>(part.data), n, float(scale));
}

}  // namespace gpumath::dist::detail
