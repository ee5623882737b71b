// SPDX-License-Identifier: Apache-2.0
/// @file
/// Everyday tensor work on the GPU: filling (fill, zeros, ones, full), converting between element
/// types (cast), strided copies (copy, contiguous, transpose) and random tensors from Philox4x32-10
/// (random::uniform, normal, lognormal). Each runs on the caller's stream with gpumath's own
/// run-time compiled kernels (or the driver's memset), never synchronizes, and may be captured into
/// a CUDA graph; the allocating forms allocate from the stream-ordered pool and are refused while the
/// stream captures. Printing tensors: <gpumath/tensor_io.hpp>.
#pragma once

#include <complex>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>

#include <gpumath/core/memory.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/tensor.hpp>
#include <gpumath/types.hpp>

namespace gpumath {

/// Writes `value` to every element of `out` (any dtype, any non-overlapping strides), converted
/// as `cast` converts: rounded to nearest for floating types, FP8 saturated to its largest finite
/// value, integers rounded toward zero and saturated (NaN gives 0), the imaginary part kept for
/// complex types and dropped for real ones. InvalidArgument, before any GPU work, for a view whose
/// elements overlap (a stride of 0 on an extent above 1, say).
void fill(const TensorView& out, std::complex<double> value, core::StreamRef stream = core::current_stream());

/// A new row-major tensor of `shape` holding `value` everywhere (see `fill`).
[[nodiscard]] Tensor full(DataType dtype, std::span<const std::int64_t> shape, std::complex<double> value,
                          core::StreamRef stream = core::current_stream(),
                          std::shared_ptr<core::MemoryResource> resource = nullptr);
/// `full` with a brace-list shape: `full(DataType::bf16, {4, 8}, 0.5)`.
[[nodiscard]] inline Tensor full(DataType dtype, std::initializer_list<std::int64_t> shape, std::complex<double> value,
                                 core::StreamRef stream = core::current_stream(),
                                 std::shared_ptr<core::MemoryResource> resource = nullptr) {
    return full(dtype, std::span<const std::int64_t>(shape.begin(), shape.size()), value, stream, std::move(resource));
}
/// A new row-major tensor of zeros.
[[nodiscard]] inline Tensor zeros(DataType dtype, std::initializer_list<std::int64_t> shape,
                                  core::StreamRef stream = core::current_stream(),
                                  std::shared_ptr<core::MemoryResource> resource = nullptr) {
    return full(dtype, shape, 0.0, stream, std::move(resource));
}
/// A new row-major tensor of ones.
[[nodiscard]] inline Tensor ones(DataType dtype, std::initializer_list<std::int64_t> shape,
                                 core::StreamRef stream = core::current_stream(),
                                 std::shared_ptr<core::MemoryResource> resource = nullptr) {
    return full(dtype, shape, 1.0, stream, std::move(resource));
}

/// Converts every element of `in` into `out`: same shape, any two dtypes, any strides on either
/// side. Rounding is to nearest (even); a cast to e4m3 or e5m2 saturates: values beyond the
/// largest finite one (448, 57344), infinities included, become it, and NaN stays NaN (the rule
/// FP8 training uses, not the IEEE overflow to infinity); a cast to i8 or i32 rounds toward zero,
/// saturates to the type's range and turns NaN into 0; a real value becomes a complex one with a
/// zero imaginary part, and a complex value becomes a real one by its real part (as NumPy's
/// `astype` does). InvalidArgument, before any GPU work, for shapes that differ, operands whose
/// memory overlaps, or an output whose elements overlap.
void cast(const TensorView& in, const TensorView& out, core::StreamRef stream = core::current_stream());
/// A new row-major tensor of dtype `to` holding `in` converted (see the other overload).
[[nodiscard]] Tensor cast(const TensorView& in, DataType to, core::StreamRef stream = core::current_stream(),
                          std::shared_ptr<core::MemoryResource> resource = nullptr);

/// Copies `in` into `out`, element by element: same dtype (`cast` converts), same shape, any
/// strides on either side, so it makes a view contiguous (`out` row-major), gathers a slice or
/// writes one, or transposes any two axes (`in.transposed(i, j)`). Contiguous copies are one
/// device-to-device copy; the rest run gpumath's kernels. InvalidArgument as `cast`, and for
/// dtypes that differ.
void copy(const TensorView& in, const TensorView& out, core::StreamRef stream = core::current_stream());
/// A new row-major tensor holding a copy of `in` (of any strides).
[[nodiscard]] Tensor contiguous(const TensorView& in, core::StreamRef stream = core::current_stream(),
                                std::shared_ptr<core::MemoryResource> resource = nullptr);
/// A new row-major tensor holding `in` with axes `axis0` and `axis1` swapped (negative axes count
/// from the end): `contiguous(in.transposed(axis0, axis1))`.
[[nodiscard]] Tensor transpose(const TensorView& in, int axis0 = -2, int axis1 = -1,
                               core::StreamRef stream = core::current_stream(),
                               std::shared_ptr<core::MemoryResource> resource = nullptr);

/// Random tensors from the Philox4x32-10 counter-based generator (the algorithm of cuRAND's
/// PHILOX4_32_10), computed by gpumath's kernel from each value's seed and index alone. A tensor is
/// the function of its seed, its offset and its size: the same call gives the same values on any
/// run and GPU, and a long sequence can be made in pieces, a piece of n values after an offset of k
/// continuing where a piece of k values ended, at any k (offsets count values, one per element).
/// docs/tensors.md gives the exact mapping from Philox words to values.
namespace random {

/// Where a random tensor's values come from.
struct RandomOptions {
    /// The generator's seed.
    std::uint64_t seed = 0;
    /// How many values of the sequence of `seed` to skip first.
    std::uint64_t offset = 0;
};

/// Fills `out` (f16, bf16, f32 or f64; contiguous) with values uniform on (0, 1] (24 random bits in
/// f32, 53 in f64), scaled to (`low`, `high`]. f16 and bf16 are drawn in f32 and rounded.
/// InvalidArgument for another dtype, a view that is not contiguous, `low` > `high`, a bound that is
/// not finite, or an offset whose values would run past the sequence's 2^64.
void uniform(const TensorView& out, double low = 0.0, double high = 1.0, const RandomOptions& options = {},
             core::StreamRef stream = core::current_stream());
/// Fills `out` with normally distributed values of mean `mean` and standard deviation `stddev`
/// (`stddev` >= 0, both finite). Same dtypes and rules as `uniform`.
void normal(const TensorView& out, double mean = 0.0, double stddev = 1.0, const RandomOptions& options = {},
            core::StreamRef stream = core::current_stream());
/// Fills `out` with log-normally distributed values: exp of a normal of `mean` and `stddev`.
void lognormal(const TensorView& out, double mean = 0.0, double stddev = 1.0, const RandomOptions& options = {},
               core::StreamRef stream = core::current_stream());

/// A new row-major tensor of uniform values (see the filling overload).
[[nodiscard]] Tensor uniform(DataType dtype, std::initializer_list<std::int64_t> shape, double low = 0.0,
                             double high = 1.0, const RandomOptions& options = {},
                             core::StreamRef stream = core::current_stream());
/// A new row-major tensor of normal values.
[[nodiscard]] Tensor normal(DataType dtype, std::initializer_list<std::int64_t> shape, double mean = 0.0,
                            double stddev = 1.0, const RandomOptions& options = {},
                            core::StreamRef stream = core::current_stream());
/// A new row-major tensor of log-normal values.
[[nodiscard]] Tensor lognormal(DataType dtype, std::initializer_list<std::int64_t> shape, double mean = 0.0,
                               double stddev = 1.0, const RandomOptions& options = {},
                               core::StreamRef stream = core::current_stream());

}  // namespace random

}  // namespace gpumath
