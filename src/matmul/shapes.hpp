// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: matrices and batches of layouts, the shape stage and the D of a problem.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "matmul/problem.hpp"

namespace gpumath::detail {

/// ceil(x / m) for x >= 0 and m > 0, without the overflow of (x + m - 1) / m near INT64_MAX.
constexpr std::int64_t ceil_div(std::int64_t x, std::int64_t m) { return x / m + (x % m != 0); }
constexpr std::int64_t round_up(std::int64_t x, std::int64_t m) { return ceil_div(x, m) * m; }

/// The last two dimensions of a layout.
struct Matrix {
    std::int64_t rows, cols, rs, cs;
};
[[nodiscard]] inline Matrix matrix_of(const TensorLayout& l) {
    return {l.shape(-2), l.shape(-1), l.stride(-2), l.stride(-1)};
}

/// Rows [first, first + rows) of the rank-2 view `v`, with its strides (a group's rows of a
/// grouped call's A and D, a block of rows of a product run in row parts).
[[nodiscard]] inline TensorView rows_of(const TensorView& v, std::int64_t first, std::int64_t rows) {
    const std::int64_t shape[] = {rows, v.shape(1)}, strides[] = {v.stride(0), v.stride(1)};
    return {static_cast<const unsigned char*>(v.data()) + first * v.stride(0) * std::int64_t(size_of(v.dtype())),
            v.dtype(), shape, strides};
}

/// X (rows x cols, strides rs, cs) as a column-major matrix, when expressible.
[[nodiscard]] std::optional<LtMatrix> col_major(std::int64_t rows, std::int64_t cols, std::int64_t rs, std::int64_t cs);

/// True when the batch dimensions of `l` (all but the last `matrix_rank`) broadcast to `full`.
[[nodiscard]] bool batch_broadcasts(const TensorLayout& l, const BatchShape& full, int matrix_rank);

/// The single batch stride of `l` over `full` (0 = broadcast), or nullopt when the batch
/// dimensions are not one strided sequence.
[[nodiscard]] std::optional<std::int64_t> single_batch_stride(const TensorLayout& l, const BatchShape& full,
                                                              int matrix_rank);

/// The same, NotSupported naming `name` when there is none.
[[nodiscard]] std::int64_t batch_stride_of(const TensorLayout& l, const BatchShape& full, int matrix_rank,
                                           const char* name, const char* api);

/// A dense row-major layout (*batch, rows, cols), or (*batch, length) when cols < 0.
[[nodiscard]] TensorLayout dense(DataType t, const BatchShape& batch, std::int64_t rows, std::int64_t cols);

/// The layout of (*batch, rows, cols) whose matrices start `matrix_stride` apart, with the given
/// strides for the last two dimensions.
[[nodiscard]] TensorLayout strided(DataType t, const BatchShape& batch, std::int64_t rows, std::int64_t cols,
                                   std::int64_t rs, std::int64_t cs, std::int64_t matrix_stride);

/// The extents of a's and b's batch dimensions that do not broadcast.
struct BatchClash {
    std::int64_t a = 1, b = 1;
};

/// NumPy broadcasting of the batch dimensions of a and b; nullopt (and the clash) when they do not
/// broadcast.
[[nodiscard]] std::optional<BatchShape> broadcast_batch(const TensorLayout& a, const TensorLayout& b,
                                                        BatchClash* clash);

/// InvalidArgument naming a and b when D, (*batch, m, n) of `t`, has more elements or bytes than fit
/// in int64.
void check_result_size(DataType t, const BatchShape& batch, std::int64_t m, std::int64_t n, const TensorLayout& a,
                       const TensorLayout& b, const char* api);

/// The D of a call without a d view: dense (*batch, M, N), row-major unless c is given and can only
/// be read with a column-major D (cuBLASLt reads C and writes D along one unit-stride dimension);
/// then column-major.
[[nodiscard]] TensorLayout default_result_layout(DataType t, const BatchShape& batch, std::int64_t m, std::int64_t n,
                                                 const TensorLayout* c);

/// Stage: ranks, K, emptiness and the broadcast batch of a and b.
[[nodiscard]] ProblemShape shape_stage(const TensorLayout& a, const TensorLayout& b, const char* api);

/// Stage: D (the given one checked, or the default) and the user's c against it. Returns D.
[[nodiscard]] TensorLayout result_stage(const MatmulSignature& sig, const ProblemShape& shape,
                                        const ProblemTypes& types, const char* api);

}  // namespace gpumath::detail
