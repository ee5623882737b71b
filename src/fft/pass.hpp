// SPDX-License-Identifier: Apache-2.0
// Private to src/fft: the elementwise passes around cuFFT (gather, scatter, scale).
#pragma once

#include <string>

#include <gpumath/core/module.hpp>
#include <gpumath/core/stream.hpp>
#include "fft/geometry.hpp"

namespace gpumath::detail {

/// The built-in pass kernel (copy/scale, no callback) for `element` (pairs: f16/bf16 complex), on
/// `device` with architecture `arch`; compiled once per process.
[[nodiscard]] core::Kernel builtin_pass_kernel(DataType element, bool pairs, int device, const std::string& arch);

/// Enqueues a pass of `kernel` on `stream`. `single` selects a float scale argument (else double).
void launch_pass(const core::Kernel& kernel, core::StreamRef stream, const void* src, void* dst, const FftPass& pass,
                 double scale, bool single, void* info);

}  // namespace gpumath::detail
