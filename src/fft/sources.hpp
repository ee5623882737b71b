// SPDX-License-Identifier: Apache-2.0
// Private to src/fft: the programs gpumath compiles for FFTs. Their device code is fixed, in
// kernels/ (embedded at build time): the entry cuFFT calls for a fused callback
// (fft_callback_entry.cu), the elementwise pass (fft_pass.cu) and the stand-in for cufftXt.h
// (cufft_types.cuh). What varies per request travels in the program's options: macros, and the
// user's callback as an in-memory header.
#pragma once

#include <string>
#include <string_view>

#include <gpumath/core/program.hpp>
#include <gpumath/fft/callback.hpp>
#include <gpumath/fft/options.hpp>
#include <gpumath/types.hpp>

namespace gpumath::detail {

/// Name of the C++-linkage entry gpumath hands to cuFFT for a callback of `kind`.
[[nodiscard]] const char* fft_callback_entry_name(FFTCallbackKind kind) noexcept;

/// cufftComplex, cufftDoubleComplex, cufftReal or cufftDoubleReal for c32, c64, f32, f64;
/// InvalidArgument otherwise (naming `api`).
[[nodiscard]] const char* fft_callback_value_type(DataType element, const char* api);

/// True when prolog and epilog are given as one (non-empty) source.
[[nodiscard]] bool fft_callbacks_share_source(const FFTOptions& options) noexcept;

/// True when prolog and epilog share one source and their symbols end in the same name ("f" and
/// "ns::f", or one overloaded name): the fused modules of that source cannot rename one function
/// apart from the other, so such callbacks run in separate passes only.
[[nodiscard]] bool fft_callbacks_share_name(const FFTOptions& options) noexcept;

/// A program of the FFT module: one of the fixed sources and the options that make it one variant
/// (name, macros, in-memory headers; `arch` left empty). The compile cache keys on all of it.
struct FftProgram {
    std::string_view source;
    core::ProgramOptions options;
};

/// The program cuFFT gets for a fused callback: an entry named `fft_callback_entry_name(kind)`
/// with C++ linkage that calls `callback.symbol` from the user's source (and, for stores,
/// multiplies the element by `scale` first when it is not 1). `rename` (may be empty) is the other
/// callback's symbol when prolog and epilog share one source: the last component of its (possibly
/// qualified) name is renamed away in this compile, so the two LTO-IR modules do not both define
/// it. InvalidArgument when `rename` ends in the same name as `callback.symbol` (see
/// fft_callbacks_share_name).
[[nodiscard]] FftProgram fft_fused_callback_program(const FFTCallback& callback, FFTCallbackKind kind, DataType element,
                                                    double scale, const std::string& rename);

/// The program of a generated store callback that only scales (normalization fused into cuFFT).
[[nodiscard]] FftProgram fft_scale_callback_program(DataType element, double scale);

/// What an elementwise pass does to each element.
struct FftPassSpec {
    /// Element type of the pass: f32, f64, c32, c64, f16, bf16; `pairs` for f16/bf16 complex data.
    DataType element = DataType::c32;
    bool pairs = false;
    /// A user callback applied while loading (gather) or storing (scatter), or null.
    const FFTCallback* callback = nullptr;
    FFTCallbackKind kind = FFTCallbackKind::load;
    /// Declare the callback instead of including its source (it comes as LTO-IR `code`).
    bool declare_only = false;
    /// The callback's symbol has C linkage (only with declare_only).
    bool c_linkage = false;
};

/// The program of the kernel `gpumath_fft_pass(const void* src, void* dst, FftPass pass, S scale,
/// void* info)`: for every element of the pass, value = load(src, src offset) (or the callback),
/// times scale, then store(dst, dst offset) (or the callback). S is double for f64/c64, float
/// otherwise.
[[nodiscard]] FftProgram fft_pass_program(const FftPassSpec& spec);

/// The in-memory header a declare_only pass includes in place of the callback's source: the
/// declaration of `spec.callback->symbol` in its namespaces, with C linkage when asked.
[[nodiscard]] std::string fft_callback_declaration(const FftPassSpec& spec);

/// Name of the pass kernel (extern "C").
inline constexpr const char* fft_pass_kernel_name = "gpumath_fft_pass";

/// Exact C++ text of `v` as a hexadecimal floating literal of type `element`'s precision.
[[nodiscard]] std::string fft_literal(double v, bool single);

}  // namespace gpumath::detail
