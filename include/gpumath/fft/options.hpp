// SPDX-License-Identifier: Apache-2.0
/// @file
/// Options of gpumath's FFTs: direction, kind, axes, normalization, callbacks.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <gpumath/core/memory.hpp>
#include <gpumath/core/object_code.hpp>
#include <gpumath/layout.hpp>

namespace gpumath {

/// Direction of a transform: `forward` computes X[k] = sum x[j] e^{-2 pi i jk/n}, `inverse` uses
/// e^{+2 pi i jk/n}. Real-to-complex transforms run forward, complex-to-real inverse.
enum class Direction : std::uint8_t {
    forward,  ///< Exponent sign -1: X[k] = sum x[j] e^{-2 pi i jk/n}.
    inverse   ///< Exponent sign +1 (scaled as the Normalization says).
};

/// Which transform a plan computes. `automatic` picks c2c for complex input and r2c for real input
/// (f32, f64, f16, bf16), and c2r for c32/c64 input when an FFT is constructed with an explicit
/// f32/f64 output layout; otherwise c2r must be asked for (or use `irfft`).
enum class FFTKind : std::uint8_t {
    automatic,  ///< c2c for complex input, r2c for real input; c2r as described above.
    c2c,        ///< Complex to complex, of the input's dtype (c32 or c64), either direction.
    r2c,        ///< Real to complex, forward only: the halved axis keeps n/2 + 1 outputs.
    c2r         ///< Complex to real, inverse only: the halved axis has n/2 + 1 inputs.
};

/// Scaling of results, with NumPy's meaning (n = product of the transform lengths; for c2r the
/// output lengths): `backward` leaves forward transforms unscaled and divides inverse ones by n
/// (so `ifft(fft(x)) == x`); `forward` divides forward transforms by n; `ortho` scales both
/// directions by 1/sqrt(n); `none` never scales.
enum class Normalization : std::uint8_t {
    backward,  ///< Forward unscaled, inverse divided by n (NumPy's default).
    forward,   ///< Forward divided by n, inverse unscaled.
    ortho,     ///< Both directions scaled by 1/sqrt(n).
    none       ///< Never scaled.
};

/// Where user load/store callbacks run. `fused`: inside cuFFT's kernels (cuFFT JIT/LTO callbacks);
/// `separate`: in an elementwise kernel that gpumath generates from the same source and runs
/// before/after the transform; `automatic`: gpumath times both when it plans and keeps the faster,
/// and uses `separate` whenever cuFFT refuses the fused plan.
enum class CallbackMode : std::uint8_t {
    automatic,  ///< Both timed when planning and the faster kept; `separate` if cuFFT refuses.
    fused,      ///< Inside cuFFT's kernels (JIT/LTO callbacks).
    separate    ///< In elementwise kernels gpumath generates, before and after the transform.
};

/// Name of a Direction ("forward", "inverse").
[[nodiscard]] constexpr std::string_view to_string(Direction d) noexcept {
    return d == Direction::forward ? "forward" : "inverse";
}
/// Name of an FFTKind ("automatic", "c2c", "r2c", "c2r").
[[nodiscard]] constexpr std::string_view to_string(FFTKind k) noexcept {
    switch (k) {
        case FFTKind::automatic:
            return "automatic";
        case FFTKind::c2c:
            return "c2c";
        case FFTKind::r2c:
            return "r2c";
        case FFTKind::c2r:
            return "c2r";
    }
    return "unknown";
}
/// Name of a Normalization ("backward", "forward", "ortho", "none").
[[nodiscard]] constexpr std::string_view to_string(Normalization n) noexcept {
    switch (n) {
        case Normalization::backward:
            return "backward";
        case Normalization::forward:
            return "forward";
        case Normalization::ortho:
            return "ortho";
        case Normalization::none:
            return "none";
    }
    return "unknown";
}
/// Name of a CallbackMode ("automatic", "fused", "separate").
[[nodiscard]] constexpr std::string_view to_string(CallbackMode m) noexcept {
    switch (m) {
        case CallbackMode::automatic:
            return "automatic";
        case CallbackMode::fused:
            return "fused";
        case CallbackMode::separate:
            return "separate";
    }
    return "unknown";
}

/// The axes an FFT transforms, stored inline (no heap). Negative values count from the end.
/// Empty (the default) means the last axis, as NumPy's `fft`. Holds up to `max_rank` values so
/// that a request for too many axes reaches validation (which allows 1 to 3).
class FFTAxes {
public:
    /// No axes given: the transform runs over the last axis.
    constexpr FFTAxes() noexcept = default;
    /// The given axes, in order (the last one is the halved axis of r2c/c2r). More than
    /// `max_rank` values throw InvalidArgument.
    FFTAxes(std::initializer_list<int> axes) { assign(std::span<const int>(axes.begin(), axes.size())); }
    /// The given axes, in order.
    explicit FFTAxes(std::span<const int> axes) { assign(axes); }

    /// Number of axes given (0: the default, the last axis).
    [[nodiscard]] constexpr int size() const noexcept { return size_; }
    /// True when no axes were given.
    [[nodiscard]] constexpr bool empty() const noexcept { return size_ == 0; }
    /// Axis `i` as given (may be negative). Unchecked: `i` in [0, size()).
    [[nodiscard]] constexpr int operator[](int i) const noexcept { return axes_[std::size_t(i)]; }
    /// The first axis, for range-for loops.
    [[nodiscard]] constexpr const int* begin() const noexcept { return axes_.data(); }
    /// One past the last axis.
    [[nodiscard]] constexpr const int* end() const noexcept { return axes_.data() + size_; }

    /// Equal when the same axes are given in the same order (so {-1} differs from the default).
    friend constexpr bool operator==(const FFTAxes& a, const FFTAxes& b) noexcept {
        if (a.size_ != b.size_) return false;
        for (int i = 0; i < a.size_; ++i)
            if (a.axes_[std::size_t(i)] != b.axes_[std::size_t(i)]) return false;
        return true;
    }

private:
    void assign(std::span<const int> axes) {
        if (axes.size() > std::size_t(max_rank)) throw_too_many(axes.size());
        for (std::size_t i = 0; i < axes.size(); ++i) axes_[i] = axes[i];
        size_ = static_cast<std::int8_t>(axes.size());
    }
    [[noreturn]] static void throw_too_many(std::size_t count);

    std::array<int, max_rank> axes_{};
    std::int8_t size_ = 0;
};

/// A user load (prolog) or store (epilog) callback for an FFT.
///
/// Either CUDA C++ `source` defining an ordinary `__device__` function named `symbol` with cuFFT's
/// LTO callback signature, or `code`: LTO-IR (e.g. from `compile_fft_callback` or nvcc `-dlto`)
/// holding `symbol` with C++ linkage. Setting both is InvalidArgument. Whether the source declares the function `extern
/// "C"` or not does not matter. The source may `#include <cufftXt.h>` or use `cufftComplex`, `cufftReal`,
/// `cufftDoubleComplex`, `cufftDoubleReal` directly: gpumath provides them. Signatures
/// (T = cufftComplex, cufftDoubleComplex, cufftReal or cufftDoubleReal, the element type the
/// transform reads or writes):
///
///     __device__ T    load (void* data_in,  unsigned long long offset, void* user_info, void* shared);
///     __device__ void store(void* data_out, unsigned long long offset, T element, void* user_info, void* shared);
///
/// `offset` is the element offset (in elements of the operand's own type) from the operand's data
/// pointer, as laid out by its strides; `shared` is always null. `user_info` is passed through
/// unchanged; it is part of a plan (a different pointer makes a different plan).
///
/// Callbacks need f32/c32/f64/c64 data (cuFFT has no half-precision callbacks).
struct FFTCallback {
    /// CUDA C++ source defining `symbol`. Leave empty when `code` is set (giving both is
    /// InvalidArgument).
    std::string source{};
    /// Name of the load/store function (may be qualified, e.g. "filters::window").
    std::string symbol{};
    /// Pointer handed to the callback on every call (device-accessible memory, or null). Set
    /// without a callback (no source or code), it is InvalidArgument.
    void* user_info = nullptr;
    /// LTO-IR holding `symbol` (C++ linkage, unqualified or namespace-qualified), given instead of
    /// `source` (giving both is InvalidArgument). Code of another type (PTX, cubin, fatbin) is
    /// InvalidArgument when the FFT is constructed: cuFFT links callbacks as LTO-IR only.
    core::ObjectCode code{};

    /// True when no callback is set (no source and no code).
    [[nodiscard]] bool empty() const noexcept { return source.empty() && code.empty(); }
};

/// Options of an FFT plan or an `fft`/`ifft`/`rfft`/`irfft` call. An aggregate: use designated
/// initializers, e.g. `{.axes = {0, 2}, .normalization = Normalization::ortho}`. An enum field
/// holding a value that is none of its enumerators is InvalidArgument naming the field.
struct FFTOptions {
    /// 1 to 3 axes to transform, at any positions; the transform is batched over the others.
    /// Default: the last axis. For r2c/c2r the last listed axis is the halved one.
    FFTAxes axes{};
    /// The transform kind. The free functions set it (fft/ifft: c2c, rfft: r2c, irfft: c2r); a
    /// value that contradicts the function is InvalidArgument.
    FFTKind kind = FFTKind::automatic;
    /// c2r only: the output length n along the last transform axis, whose input extent must be
    /// n/2 + 1. 0 (default) means 2 * (m - 1) for an input extent m, as NumPy's irfft; an `out`
    /// view's shape also fixes it.
    std::int64_t last_axis_size = 0;
    /// Scaling of results (default: `backward`, so the inverse divides by n).
    Normalization normalization = Normalization::backward;
    /// Plan an in-place transform (c2c only): the output layout is the input layout and `execute`
    /// takes the same view twice. Any c2c call whose `out` is `in` runs in place as well.
    bool inplace = false;
    /// c2r only: let cuFFT overwrite the input (it does for complex-to-real transforms). By default
    /// gpumath copies the input to workspace first so the caller's data is preserved.
    bool overwrite_input = false;
    /// Load callback applied to every input element the transform reads.
    FFTCallback prolog{};
    /// Store callback applied to every output element the transform writes.
    FFTCallback epilog{};
    /// Where the callbacks run (see CallbackMode). With `fused` and no epilog, the normalization
    /// scale is also fused into a generated store callback.
    CallbackMode callback_mode = CallbackMode::automatic;
    /// Where workspace and results come from (default: the device's stream-ordered pool).
    std::shared_ptr<core::MemoryResource> memory_resource = nullptr;
};

}  // namespace gpumath
