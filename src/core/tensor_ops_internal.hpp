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

namespace gpumath::detail {

/// The kernels of kernels/tensor_ops.cu.
enum class TensorKernel { fill_flat, fill_strided, convert_flat, affine_flat, convert_strided, transpose };

/// The name expression of a kernel instantiation ("gpumath::kernels::convert_flat<float, __half, 8>");
/// `in` is ignored by the fills, `vector` by the strided kernels and the transpose.
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

/// Writes `value` to every element of `out` (checked) on `stream`.
void fill_view(const TensorView& out, std::complex<double> value, core::StreamRef stream);

/// Converts `in` into `out` (checked) on `stream`: a device copy for contiguous operands of one
/// type, else gpumath's kernels.
void convert_view(const TensorView& in, const TensorView& out, core::StreamRef stream);

/// out[i] = scale * in[i] + shift for `count` contiguous real elements (`in` may be `out`), converted
/// to `out_type` as `cast` converts, on `stream`.
void affine_flat(const void* in, DataType in_type, void* out, DataType out_type, std::int64_t count, double scale,
                 double shift, core::StreamRef stream);

}  // namespace gpumath::detail
