// SPDX-License-Identifier: Apache-2.0
/// @file
/// FFT load/store callbacks: compiling them ahead of planning, and their signatures.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <gpumath/core/object_code.hpp>
#include <gpumath/fft/options.hpp>
#include <gpumath/types.hpp>

namespace gpumath {

/// Whether a callback loads (a prolog: runs on every input element) or stores (an epilog: runs on
/// every output element).
enum class FFTCallbackKind : std::uint8_t {
    load,  ///< A prolog (`FFTOptions::prolog`): returns each input element the transform reads.
    store  ///< An epilog (`FFTOptions::epilog`): receives each output element the transform writes.
};

/// "load" or "store".
[[nodiscard]] constexpr std::string_view to_string(FFTCallbackKind kind) noexcept {
    return kind == FFTCallbackKind::load ? "load" : kind == FFTCallbackKind::store ? "store" : "unknown";
}

/// The C++ declaration a callback of `kind` over elements of `element` (f32 -> cufftReal,
/// f64 -> cufftDoubleReal, c32 -> cufftComplex, c64 -> cufftDoubleComplex) must match, with
/// `name` as the function name. InvalidArgument for other element types, for a `kind` that is
/// neither load nor store and for a `name` that is not a (namespace-qualified) C++ name (a C++17 keyword is not one).
[[nodiscard]] std::string fft_callback_signature(FFTCallbackKind kind, DataType element,
                                                 const std::string& name = "callback");

/// Compiles `callback`'s source to the LTO-IR gpumath hands to cuFFT for a fused plan (the user's
/// function plus a C++-linkage entry that calls it, so `extern "C"` does not matter), through the
/// JIT compile cache. Needs no GPU when `arch` is given ("sm_90"); empty: the current device's.
/// Planning compiles callbacks itself; call this to check a callback early or to warm the cache.
/// Throws CompileError with NVRTC's log (the message names the callback and its expected
/// signature), InvalidArgument for an empty callback, a callback given as `code` (alone or
/// with `source`), a missing
/// symbol, a `kind` that is neither load nor store or an element type without callbacks.
[[nodiscard]] core::ObjectCode compile_fft_callback(const FFTCallback& callback, FFTCallbackKind kind, DataType element,
                                                    std::string arch = {});

}  // namespace gpumath
