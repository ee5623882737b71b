// SPDX-License-Identifier: Apache-2.0
// Private to src/dist: the normalization scale of a multi-GPU FFT, run on each device's part.
#pragma once

#include <vector>

#include <gpumath/dist/fft.hpp>
#include <gpumath/types.hpp>

namespace gpumath::dist::detail {

/// Waits for each part's device to finish its work (the transform), multiplies every real of each
/// part (`bytes / size_of(precision)` values of `precision`, f32 or f64) by `scale` with a kernel
/// compiled at run time (once per device and precision; skipped when `scale` is 1), and waits for it.
/// Padding reals are scaled too, which is harmless. Leaves the current device changed.
void scale_parts(const std::vector<FFTPart>& parts, DataType precision, double scale, const char* api);

}  // namespace gpumath::dist::detail
