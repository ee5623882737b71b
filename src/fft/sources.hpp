// SPDX-License-Identifier: Apache-2.0
// Private: CUDA C++ that gpumath generates for FFTs (callback entries for cuFFT, elementwise
// gather/scatter/scale passes) and the header that stands in for cufftXt.h under NVRTC.
#pragma once

#include <map>
#include <string>

#include <gpumath/fft/callback.hpp>
#include <gpumath/fft/options.hpp>
#include <gpumath/types.hpp>

namespace gpumath::detail {

/// Name of the C++-linkage entry gpumath hands to cuFFT for a callback of `kind`.
[[nodiscard]] const char* fft_callback_entry_name(FFTCallbackKind kind) noexcept;

/// cufftComplex, cufftDoubleComplex, cufftReal or cufftDoubleReal for c32, c64, f32, f64;
/// InvalidArgument otherwise (naming `api`).
[[nodiscard]] const char* fft_callback_value_type(DataType element, const char* api);

/// In-memory headers for callback sources: "cufftXt.h" and "cufft.h" declare the cuFFT types
/// and callback typedefs without cuFFT's host API (which NVRTC cannot compile).
[[nodiscard]] const std::map<std::string, std::string>& fft_callback_headers();

/// True when prolog and epilog are given as one (non-empty) source.
[[nodiscard]] bool fft_callbacks_share_source(const FFTOptions& options) noexcept;

/// True when prolog and epilog share one source and their symbols end in the same name ("f" and
/// "ns::f", or one overloaded name): the fused modules of that source cannot rename one function
/// apart from the other, so such callbacks run in separate passes only.
[[nodiscard]] bool fft_callbacks_share_name(const FFTOptions& options) noexcept;

/// The source cuFFT gets for a fused callback: the user's source, then an entry named
/// `fft_callback_entry_name(kind)` with C++ linkage that calls `callback.symbol` (and, for
/// stores, multiplies the element by `scale` first when it is not 1). `rename` (may be empty) is
/// the other callback's symbol when prolog and epilog share one source: the last component of
/// its (possibly qualified) name is renamed away in this compile, so the two LTO-IR modules do
/// not both define it. InvalidArgument when `rename` ends in the same name as `callback.symbol`
/// (see fft_callbacks_share_name).
[[nodiscard]] std::string fft_fused_callback_source(const FFTCallback& callback, FFTCallbackKind kind, DataType element,
                                                    double scale, const std::string& rename);

/// The source of a generated store callback that only scales (normalization fused into cuFFT).
[[nodiscard]] std::string fft_scale_callback_source(DataType element, double scale);

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

/// The kernel `gpumath_fft_pass(const void* src, void* dst, FftPass pass, S scale, void* info)`:
/// for every element of the pass, value = load(src, src offset) (or the callback), times scale,
/// then store(dst, dst offset) (or the callback). S is double for f64/c64, float otherwise.
[[nodiscard]] std::string fft_pass_source(const FftPassSpec& spec);

/// Name of the pass kernel (extern "C").
inline constexpr const char* fft_pass_kernel_name = "gpumath_fft_pass";

/// Exact C++ text of `v` as a hexadecimal floating literal of type `element`'s precision.
[[nodiscard]] std::string fft_literal(double v, bool single);

}  // namespace gpumath::detail
