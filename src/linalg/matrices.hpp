// SPDX-License-Identifier: Apache-2.0
// Private to src/linalg: batches of matrices as the plans see them, how an operand's matrices are
// stored (whether cuSOLVER can work on them where they are), and the checks of operands.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/linalg/options.hpp>

#include "linalg/kernels/linalg_params.hpp"

namespace gpumath::detail {

/// A batch of m×n matrices: A's layout checked at a plan's construction.
struct MatrixBatch {
    TensorLayout a;
    DataType dtype = DataType::f32;
    std::int64_t m = 0;  // rows
    std::int64_t n = 0;  // columns
    int batch_rank = 0;
    std::int64_t count = 0;  // matrices
    TensorLayout info;       // i32 of the batch shape, row-major

    [[nodiscard]] std::span<const std::int64_t> batch_shape() const { return a.shape().first(std::size_t(batch_rank)); }
};

/// `a` as a batch of matrices of f32, f64, c32 or c64: InvalidArgument for a rank below 2 (saying
/// that matrices are `(..., <form>)`), NotSupported for other dtypes, both naming `api`.
[[nodiscard]] MatrixBatch matrix_batch(const TensorLayout& a, const char* api, const char* form = "m, n");

/// A batch of n×n matrices: A's layout checked at a plan's construction.
struct SquareBatch {
    TensorLayout a;
    DataType dtype = DataType::f32;
    std::int64_t n = 0;
    int batch_rank = 0;
    std::int64_t count = 0;  // matrices
    TensorLayout info;       // i32 of the batch shape, row-major
};

/// `a` as a batch of square matrices of f32, f64, c32 or c64: InvalidArgument for a rank below 2
/// or non-square matrices, NotSupported for other dtypes, both naming `api`.
[[nodiscard]] SquareBatch square_batch(const TensorLayout& a, const char* api);

/// How an operand's matrices (its last two dimensions, rows × cols) are stored.
struct Storage {
    /// Unit stride along rows or columns, leading dimension at least the other extent, and one
    /// stride between matrices that keeps them apart: cuSOLVER can work on the matrices in place.
    bool direct = false;
    /// Unit stride along each row (row-major matrices); column-major when false.
    bool row_major = false;
    std::int64_t ld = 0;            // stride between columns (column-major) or rows (row-major)
    std::int64_t batch_stride = 0;  // between matrices
};

/// The storage of `layout`'s matrices (the last two dimensions; the rest are the batch).
[[nodiscard]] Storage storage_of(const TensorLayout& layout);

/// The one stride between the matrices of `layout`'s first `batch_rank` dimensions, if they have
/// one (extents of 1 are skipped; 0 for one matrix).
[[nodiscard]] std::optional<std::int64_t> uniform_batch_stride(const TensorLayout& layout, int batch_rank);

/// `view`'s matrices as the kernels address them.
[[nodiscard]] kernels::MatrixBatchParams matrix_params(const TensorView& view, std::int64_t count);

/// Column-major packed layout of `shape` (matrices n × k one after another), for workspace copies.
[[nodiscard]] TensorLayout packed_column_major(DataType dtype, std::span<const std::int64_t> shape);

/// InvalidArgument naming `name` and `api` unless `view` has `shape` and `dtype`, holds data when it
/// has elements, is aligned to its element, and (for a written operand) gives every element an
/// address of its own.
void check_operand(const TensorView& view, std::span<const std::int64_t> shape, DataType dtype, const char* name,
                   bool written, const char* api);

/// InvalidArgument naming `name` unless `view` is a contiguous (row-major) tensor of `expected`'s
/// shape and dtype (see check_operand).
void check_contiguous_operand(const TensorView& view, const TensorLayout& expected, const char* name, bool written,
                              const char* api);

/// InvalidArgument naming `name` unless `info` is a contiguous i32 tensor of `expected`'s shape.
void check_info_operand(const TensorView& info, const TensorLayout& expected, const char* name, const char* api);

/// Rows [row0, row0 + rows) and columns [col0, col0 + cols) of every matrix of `view` (its last two
/// dimensions), with `view`'s strides.
[[nodiscard]] TensorView sub_matrices(const TensorView& view, std::int64_t row0, std::int64_t rows, std::int64_t col0,
                                      std::int64_t cols);

/// The vectors `(..., m)` of `view` as m × 1 matrices `(..., m, 1)`.
[[nodiscard]] TensorView as_columns(const TensorView& view);

/// True when `a` and `b` are the same operand (same data, shape and strides).
[[nodiscard]] bool same_operand(const TensorView& a, const TensorView& b) noexcept;

/// InvalidArgument naming both unless the memory `a` and `b` span is disjoint (empty ones never
/// overlap).
void check_apart(const TensorView& a, const char* a_name, const TensorView& b, const char* b_name, const char* api);

/// InvalidArgument for a Triangle or Backend outside its enumerators, naming `field`. check_backend
/// also refuses, with NotSupported, a backend that one plan alone takes (jacobi and approximate:
/// linalg::SVD; jacobi_batched: linalg::Eigh) when `api`, the plan's name, is another plan's.
void check_triangle(linalg::Triangle t, const char* field, const char* api);
void check_backend(linalg::Backend b, const char* field, const char* api);

/// The right-hand sides of a solve: `b` and `x`, `(..., n, k)` or `(..., n)` of the batch's shape
/// and dtype, checked (InvalidArgument naming `api`), and how `x` is worked on.
struct RightHandSides {
    std::int64_t k = 1;          // columns (1 for `(..., n)`)
    Storage storage;             // x as n × k column-major matrices, when `temp` is false
    bool temp = false;           // x is worked on in a packed column-major workspace copy
    Storage packed;              // that copy's storage
    TensorLayout packed_layout;  // and its layout (b's shape)
};
/// `b`'s rules alone (for a call that allocates x after checking b).
void check_right_hand_side(const SquareBatch& batch, const TensorView& b, const char* api);
[[nodiscard]] RightHandSides right_hand_sides(const SquareBatch& batch, const TensorView& b, const TensorView& x,
                                              const char* api);

/// Fills the contiguous `view` (f32, f64, c32 or c64) with values uniform on [-1, 1] (real and
/// imaginary parts alike), for the matrices `automatic` measures on.
void fill_random(const TensorView& view, core::StreamRef stream);

/// Copies `in` to `out` (same shape and dtype, checked by the caller) on `stream`: nothing when
/// they are empty, one device copy when both have the same strides and are dense (no gaps, any
/// order: a column-major batch is one run of memory too), else gpumath::copy's kernels.
void copy_matrices(const TensorView& in, const TensorView& out, core::StreamRef stream);

/// True when `batch` leaves nothing for cuSOLVER to do: no matrices, or matrices of order 0, whose
/// `info` (checked, of the batch shape) is then set to 0 on `stream`.
[[nodiscard]] bool empty_batch_done(const SquareBatch& batch, const TensorView& info, core::StreamRef stream);

/// Grows every lane's host workspace in `host` to at least `bytes` (the caller holds its lock).
void grow_host_workspaces(std::vector<std::vector<std::byte>>& host, std::size_t bytes);

/// InvalidArgument naming `api` unless the current device is `planned`, the plan's.
void check_plan_device(int planned, const char* api);

/// True when `stream` is capturing a CUDA graph.
[[nodiscard]] bool capturing(core::StreamRef stream);

/// Bytes rounded up to the 256 bytes every workspace piece is aligned to.
[[nodiscard]] constexpr std::size_t aligned_bytes(std::size_t bytes) noexcept { return (bytes + 255) / 256 * 256; }

}  // namespace gpumath::detail
