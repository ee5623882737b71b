// SPDX-License-Identifier: Apache-2.0
// Private to src/linalg: Backend::warp, gpumath's own kernels for small matrices (n <= 32, one
// matrix per warp, kernels/small_matrices.cu) compiled at run time through the core loader. They
// read and write the callers' operands in place, whatever their strides: no workspace, no copies,
// no synchronization, capturable.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <gpumath/core/program.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/types.hpp>

#include "linalg/matrices.hpp"

namespace gpumath::detail {

/// The operations the small-matrix kernels run.
enum class SmallOp : std::uint8_t { cholesky, lu, eigh };

/// True when Backend::warp runs `op` on n×n matrices of `type`: n at most 32, f32, f64, c32 or c64.
[[nodiscard]] bool small_kernel_supported(SmallOp op, DataType type, std::int64_t n) noexcept;

/// NotSupported naming `api` unless Backend::warp runs `op` on `batch` (for a plan asked for it).
void check_small_backend(SmallOp op, const SquareBatch& batch, const char* api);

/// The text of kernels/small_matrices.cu, the options it compiles with (its parameter header in
/// memory; `arch` left empty) and the name expressions of its kernels for every element type.
[[nodiscard]] std::string_view small_kernel_source();
[[nodiscard]] core::ProgramOptions small_kernel_options();
[[nodiscard]] std::vector<std::string> small_kernel_names();

/// Factorizes every matrix of `a` into `factor` (the same shape and dtype; may be `a`) on `stream`:
/// the factor in the lower (`upper` false) or upper triangle, A's values in the other; `info` the
/// contiguous i32 status of each matrix (potrf's).
void small_cholesky(const SquareBatch& batch, const TensorView& a, const TensorView& factor, int* info, bool upper,
                    core::StreamRef stream);

/// LU with partial pivoting of every matrix of `a` into `lu` (may be `a`) on `stream`, as getrf:
/// `pivots` contiguous i32 (count × n, 1-based), `info` contiguous i32 (count).
void small_lu(const SquareBatch& batch, const TensorView& a, const TensorView& lu, int* pivots, int* info,
              core::StreamRef stream);

/// The eigenvalues (ascending, into `values`, `(..., n)` real) and, unless `vectors` is empty, the
/// eigenvectors (columns of `vectors`, may be `a`) of every Hermitian matrix whose `upper` or lower
/// triangle `a` holds, on `stream`; `info` contiguous i32.
void small_eigh(const SquareBatch& batch, const TensorView& a, const TensorView& values, const TensorView& vectors,
                int* info, bool upper, core::StreamRef stream);

}  // namespace gpumath::detail
