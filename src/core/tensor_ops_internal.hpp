// SPDX-License-Identifier: Apache-2.0
// Private to src/core: the checks and kernel launches behind the tensor utilities, shared by
// tensor_ops.cpp, random.cpp and tensor_io.cpp.
#pragma once

#include <complex>
#include <cstdint>
#include <string>

#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>

#include "core/kernel_loader.hpp"
#include "core/kernels/tensor_ops_params.hpp"

namespace gpumath::detail {

/// The kernels of kernels/tensor_ops.cu.
enum class TensorKernel { fill_flat, fill_strided, convert_flat, convert_strided, transpose, random_flat };

/// The name expression of a kernel instantiation ("gpumath::kernels::convert_flat<float, __half, 8>");
/// `in` is ignored by the fills and random_flat, `vector` by the strided kernels and the transpose;
/// random_flat takes its distribution (kernels::RandomDistribution) in `vector`.
[[nodiscard]] std::string tensor_kernel_name(TensorKernel kernel, DataType in, DataType out, int vector);

/// The text of those kernels (kernels/tensor_ops.cu) and the options they compile with (their
/// parameter header among the in-memory headers).
[[nodiscard]] std::string_view tensor_kernels_source();
[[nodiscard]] core::ProgramOptions tensor_kernels_options();

/// Empty when every element of `layout` has an address of its own, else why not (a stride of 0
/// over an extent above 1, strides that step inside each other). Conservative: layouts that
/// interleave without sharing an address are refused too.
[[nodiscard]] std::string self_overlap(const TensorLayout& layout);

/// InvalidArgument naming `name` unless every element of `out` has an address of its own.
void check_written(const TensorView& out, const char* name, const char* api);

/// InvalidArgument unless `in` may be read into `out`: check_written(out), equal shapes, and memory
/// of the two that does not overlap.
void check_pair(const TensorView& in, const TensorView& out, const char* api);

/// True when a fill of `out` is one contiguous run (the driver's memset or fill_flat), false when it
/// needs the strided kernel.
[[nodiscard]] bool fills_flat(const TensorLayout& out);

/// True when uniform values on [low, high] computed in f32 (one fused multiply-add) equal those of
/// the documented f64 arithmetic rounded to f32: low, high and high - low are f32 values and the
/// f64 multiply-add is exact. random_flat then draws f16, bf16 and f32 in f32.
[[nodiscard]] bool uniform_exact_in_f32(double low, double high);

/// Writes `value` to every element of `out` (checked) on `stream`.
void fill_view(const TensorView& out, std::complex<double> value, core::StreamRef stream);

/// Converts `in` into `out` (checked) on `stream`: a device copy for contiguous operands of one
/// type, else gpumath's kernels.
void convert_view(const TensorView& in, const TensorView& out, core::StreamRef stream);

/// Values `offset` to `offset + count - 1` of the Philox4x32-10 sequence of `seed` in `distribution`
/// (parameters `a`, `b` as kernels::RandomParams says) into `count`
/// contiguous elements of `type` (f16, bf16, f32 or f64) at `out`, on `stream`. Unchecked: the
/// caller has checked the tensor and that offset + count + 4 stays below 2^64 (random.cpp).
void random_flat(void* out, DataType type, std::int64_t count, kernels::RandomDistribution distribution,
                 std::uint64_t seed, std::uint64_t offset, double a, double b, core::StreamRef stream);

}  // namespace gpumath::detail
