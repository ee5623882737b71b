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

}  // namespace gpumath::detail
