// SPDX-License-Identifier: Apache-2.0
// Private to src/fft: the elementwise passes around cuFFT (gather, scatter, scale).
#pragma once

#include <gpumath/core/module.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/fft/callback.hpp>

#include "fft/geometry.hpp"

namespace gpumath::detail {

/// The built-in pass kernel (copy/scale, no callback) for `element` (pairs: f16/bf16 complex) on
/// `device`: compiled and loaded by the core kernel loader on first use, a lookup afterwards.
[[nodiscard]] core::Kernel builtin_pass_kernel(DataType element, bool pairs, int device);

/// The pass kernel that runs `callback` as a load (gather) or store (scatter) of `element`s on
/// `device`, from the core kernel loader: its program holds the callback's source, or declares its
/// symbol and links its LTO-IR (C++ linkage tried first, then C). Like the built-in ones, it stays
/// loaded for the life of the process: work an FFT enqueued (eagerly or in a graph) may still run
/// after the FFT is gone, and unloading it safely would take a device synchronization, which blocks
/// the caller and invalidates other threads' captures. Each distinct callback adds one small module
/// per device and element type. A CompileError of the callback's source names it and its expected
/// signature.
[[nodiscard]] core::Kernel callback_pass_kernel(DataType element, const FFTCallback& callback, FFTCallbackKind kind,
                                                int device);

/// Enqueues a pass of `kernel` on `stream`. `single` selects a float scale argument (else double).
void launch_pass(const core::Kernel& kernel, core::StreamRef stream, const void* src, void* dst, const FftPass& pass,
                 double scale, bool single, void* info);

}  // namespace gpumath::detail
