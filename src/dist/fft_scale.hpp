// SPDX-License-Identifier: Apache-2.0
// Private to src/dist: the normalization scale of a multi-GPU FFT, enqueued on each device's part.
#pragma once

#include <gpumath/core/stream.hpp>
#include <gpumath/dist/fft.hpp>
#include <gpumath/types.hpp>

#include "core/kernel_loader.hpp"

namespace gpumath::dist::detail {

/// The program of both scale kernels (kernels/fft_scale.cu, "gm_dist_scale_f32" and
/// "gm_dist_scale_f64"), made once.
[[nodiscard]] const gpumath::detail::DeviceProgram& scale_program();

/// Compiles (NVRTC, through the compile cache) and loads the scale kernel of `precision` (f32 or
/// f64) on `device`, once per process; planning calls it, so that executions load nothing (also
/// inside a graph capture).
void load_scale_kernel(int device, DataType precision);

/// Enqueues `part` *= `scale` on `stream` (of `part.device`, which must be current): every real of
/// the part (`bytes / size_of(precision)` values of `precision`), padding included, which is
/// harmless. Nothing for a scale of 1 or an empty part. Loads the kernel if planning did not.
void enqueue_scale(const FFTPart& part, DataType precision, double scale, core::StreamRef stream);

}  // namespace gpumath::dist::detail
