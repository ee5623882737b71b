// SPDX-License-Identifier: Apache-2.0
// Private to src/fft: compiling, the per-stream work areas, elementwise passes.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include <cuda_runtime_api.h>

#include <gpumath/core/launch.hpp>
#include <gpumath/core/memory.hpp>
#include <gpumath/core/module.hpp>
#include <gpumath/core/program.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/detail/fft_geometry.hpp>
#include <gpumath/detail/fft_sources.hpp>
#include <gpumath/detail/stream_workspace.hpp>
#include <gpumath/fft/callback.hpp>
#include <gpumath/fft/fft.hpp>
#include <gpumath/fft/options.hpp>

namespace gpumath::detail {

/// Builds FFT objects for the free functions (whose kind is fixed and whose messages name them)
/// and runs them on operands the caller has checked.
struct FFTAccess {
    /// A plan of `problem`, made by make_fft_problem from the same options.
    [[nodiscard]] static FFT make(const FftProblem& problem, const FFTOptions& options, const char* api);
    /// `plan.execute(in, out, direction, stream)` without its operand checks: the caller ran
    /// check_fft_operands against an equal problem and read the current device (`device`).
    static void enqueue(FFT& plan, const TensorView& in, const TensorView& out, Direction direction,
                        core::StreamRef stream, int device);
};

/// Compiles `source` for `target` with the callback headers; a CompileError for a user callback
/// (`callback` not null) names it and its expected signature.
[[nodiscard]] core::ObjectCode compile_with_context(const std::string& source, core::CodeType target, std::string arch,
                                                    const char* name, const FFTCallback* callback, FFTCallbackKind kind,
                                                    DataType element);

/// LTO-IR of a fused callback entry (see fft_fused_callback_source).
[[nodiscard]] core::ObjectCode compile_fused_callback(const FFTCallback& callback, FFTCallbackKind kind,
                                                      DataType element, double scale, const std::string& rename,
                                                      std::string arch);

/// The built-in pass kernel (copy/scale, no callback) for `element` (pairs: f16/bf16 complex), on
/// `device` with architecture `arch`; compiled once per process.
[[nodiscard]] core::Kernel builtin_pass_kernel(DataType element, bool pairs, int device, const std::string& arch);

/// Enqueues a pass of `kernel` on `stream`. `single` selects a float scale argument (else double).
void launch_pass(const core::Kernel& kernel, core::StreamRef stream, const void* src, void* dst, const FftPass& pass,
                 double scale, bool single, void* info);

}  // namespace gpumath::detail
