// SPDX-License-Identifier: Apache-2.0
// Private to src/fft: compiling callbacks and the generated sources, and attaching fused callbacks
// to a cuFFT handle.
#pragma once

#include <array>
#include <span>
#include <string>
#include <vector>

#include <cufftXt.h>

#include <gpumath/core/program.hpp>
#include "fft/geometry.hpp"
#include <gpumath/fft/callback.hpp>
#include <gpumath/fft/options.hpp>

#include "fft/sources.hpp"

namespace gpumath::detail {

/// Rethrows the CompileError `e` of a program that holds `callback` as one that names the callback
/// and the signature it must have (NVRTC's status and log kept).
[[noreturn]] void throw_callback_compile_error(const CompileError& e, const FFTCallback& callback, FFTCallbackKind kind,
                                               DataType element);

/// Compiles `program` for `target` and `arch`; a CompileError for a user callback (`callback` not
/// null) names it and its expected signature.
[[nodiscard]] core::ObjectCode compile_with_context(FftProgram program, core::CodeType target, std::string arch,
                                                    const FFTCallback* callback, FFTCallbackKind kind,
                                                    DataType element);

/// LTO-IR of a fused callback entry (see fft_fused_callback_program).
[[nodiscard]] core::ObjectCode compile_fused_callback(const FFTCallback& callback, FFTCallbackKind kind,
                                                      DataType element, double scale, const std::string& rename,
                                                      std::string arch);

/// A callback for cuFFT to run inside a plan: LTO-IR defining `symbol`, attached with
/// cufftXtSetJITCallback. `info` is the plan's user-info array, which outlives the plan.
struct CufftCallback {
    FFTCallbackKind kind = FFTCallbackKind::load;
    DataType element = DataType::c32;
    core::ObjectCode code;
    std::string symbol;
    std::array<void*, 1>* info = nullptr;
};

/// What a fused plan runs inside cuFFT: the user's prolog, the user's epilog, and the scale baked
/// into the store (into the epilog, or a generated store when there is none).
struct FusedCallbacks {
    bool prolog = false;
    bool epilog = false;
    bool scale = false;
    double baked_scale = 1.0;
};

/// The callbacks of a fused plan of `p`, compiled once (LTO-IR) for `arch`; attached to each
/// planning attempt's handle.
[[nodiscard]] std::vector<CufftCallback> compile_cufft_callbacks(const FftProblem& p, const FFTOptions& options,
                                                                 const FusedCallbacks& fused, const std::string& arch,
                                                                 std::array<void*, 1>& prolog_info,
                                                                 std::array<void*, 1>& epilog_info);

/// Attaches `callbacks` to `handle` in order; the first status that is not CUFFT_SUCCESS.
[[nodiscard]] cufftResult attach_cufft_callbacks(cufftHandle handle, std::span<const CufftCallback> callbacks);

}  // namespace gpumath::detail
