// SPDX-License-Identifier: Apache-2.0
// Private to src/linalg: launches of linalg's own kernels (kernels/linalg_util.cu) through the core
// kernel loader.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <gpumath/core/program.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/types.hpp>

#include "linalg/kernels/linalg_params.hpp"

namespace gpumath::detail {

/// The text of kernels/linalg_util.cu, and the options it compiles with (its parameter header in
/// memory; `arch` left empty).
[[nodiscard]] std::string_view linalg_kernel_source();
[[nodiscard]] core::ProgramOptions linalg_kernel_options();
/// The name expressions of its kernels for every element type linalg takes.
[[nodiscard]] std::vector<std::string> linalg_kernel_names();

/// Zeroes the triangle strictly above (`upper`) or below the diagonal of every matrix of `m`
/// (elements of `type`) on `stream`.
void zero_triangle(const kernels::MatrixBatchParams& m, DataType type, bool upper, core::StreamRef stream);

/// `out[b] = base + b * stride_bytes` for b < count, on `stream`.
void batch_pointers(void* base, std::int64_t stride_bytes, std::int64_t count, void** out, core::StreamRef stream);

/// Adds `value` to the real part of every diagonal element of `m` (elements of `type`) on `stream`.
void add_diagonal(const kernels::MatrixBatchParams& m, DataType type, double value, core::StreamRef stream);

/// `count` 64-bit pivots at `in` to 32-bit ones at `out` (`narrow`), or back, on `stream`.
void convert_pivots(const void* in, void* out, std::int64_t count, bool narrow, core::StreamRef stream);

/// The determinant of every matrix of `lu` (LU factors of `type`) with 1-based 32-bit `pivots`
/// (`pivot_stride` apart) into `out` (`count` elements of `type`), on `stream`.
void determinants(const kernels::MatrixBatchParams& lu, DataType type, const int* pivots, std::int64_t pivot_stride,
                  void* out, core::StreamRef stream);

/// Sets every matrix of `m` (elements of `type`) to the identity, on `stream`.
void set_identity(const kernels::MatrixBatchParams& m, DataType type, core::StreamRef stream);

/// Conjugates every element of `m` (elements of `type`, c32 or c64; nothing for a real type) in
/// place, on `stream`.
void conjugate(const kernels::ConjugateParams& m, DataType type, core::StreamRef stream);

/// `info[b]` = the 1-based index of the first exact zero on the diagonal of matrix b of `m`
/// (elements of `type`), or 0, for every matrix, on `stream`.
void first_zero_diagonal(const kernels::ColumnMajorBatchParams& m, DataType type, int* info, core::StreamRef stream);

/// `out[b * m.cols + j]` = the 2-norm of rows [row0, m.rows) of column j of matrix b of `m`
/// (elements of `type`; `out` of its real type), on `stream`.
void column_norms(const kernels::ColumnMajorBatchParams& m, DataType type, std::int64_t row0, void* out,
                  core::StreamRef stream);

}  // namespace gpumath::detail
