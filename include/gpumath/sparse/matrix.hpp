// SPDX-License-Identifier: Apache-2.0
/// @file
/// The sparse vocabulary: the storage formats (Format), a sparse matrix seen in memory it does not
/// own (MatrixView) and one that owns its arrays (Matrix).
#pragma once

#include <cstdint>
#include <string_view>

#include <gpumath/core/memory.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/tensor.hpp>

namespace gpumath::sparse {

/// How a sparse matrix is stored. Indices are 0-based everywhere.
enum class Format : std::uint8_t {
    csr,  ///< Compressed sparse rows: row offsets (rows + 1), column indices and values (nnz each).
    csc,  ///< Compressed sparse columns: column offsets (cols + 1), row indices and values (nnz each).
    coo,  ///< Coordinates: row indices, column indices and values (nnz each), sorted by row.
    bsr   ///< Block sparse rows: CSR over dense square blocks (block-row offsets, block-column indices,
          ///< and each block's values).
};

/// Number of Format enumerators.
inline constexpr int format_count = 4;

/// The enumerator's name ("csr", "csc", "coo", "bsr"), or "unknown".
[[nodiscard]] std::string_view to_string(Format format) noexcept;

/// How the values of one BSR block are ordered.
enum class BlockOrder : std::uint8_t {
    row_major,    ///< Each block's rows one after another (cuSPARSE's CUSPARSE_DIRECTION_ROW).
    column_major  ///< Each block's columns one after another (CUSPARSE_DIRECTION_COLUMN).
};

/// Number of BlockOrder enumerators.
inline constexpr int block_order_count = 2;

/// The enumerator's name ("row_major", "column_major"), or "unknown".
[[nodiscard]] std::string_view to_string(BlockOrder order) noexcept;

/// A sparse matrix in device memory that the view does not own: its format, its shape, and its
/// arrays as TensorViews. Cheap to copy. The factories check everything the host can see before any
/// CUDA call and throw InvalidArgument naming the array and what is allowed:
/// - every index and offset array is a contiguous 1-D tensor of i32 or i64, all of one dtype (with
///   i32, rows, columns and nnz must fit in int32);
/// - the offsets hold (major extent + 1) entries (rows + 1 for CSR, cols + 1 for CSC, block rows + 1
///   for BSR), every index array nnz entries (blocks for BSR);
/// - the values are a contiguous tensor of nnz entries (BSR: nnz · block · block), or of shape
///   (batch, nnz) for a batch of matrices sharing one pattern;
/// - values are floating-point or complex (what an operation accepts is checked by the operation);
/// - each array is aligned to its element size and no two arrays overlap.
/// What lives in device memory (offsets monotone, indices in range, sorted) is checked only by
/// sparse::check or by an operation asked to validate.
class MatrixView {
public:
    /// An empty view (no format, 0 × 0, no arrays); operations refuse it.
    MatrixView() = default;

    /// A CSR matrix: `row_offsets` (rows + 1), `col_indices` (nnz) and `values` (nnz, or batch × nnz).
    [[nodiscard]] static MatrixView csr(std::int64_t rows, std::int64_t cols, const TensorView& row_offsets,
                                        const TensorView& col_indices, const TensorView& values);
    /// A CSC matrix: `col_offsets` (cols + 1), `row_indices` (nnz) and `values` (nnz, or batch × nnz).
    [[nodiscard]] static MatrixView csc(std::int64_t rows, std::int64_t cols, const TensorView& col_offsets,
                                        const TensorView& row_indices, const TensorView& values);
    /// A COO matrix: `row_indices`, `col_indices` (nnz each) and `values` (nnz, or batch × nnz).
    [[nodiscard]] static MatrixView coo(std::int64_t rows, std::int64_t cols, const TensorView& row_indices,
                                        const TensorView& col_indices, const TensorView& values);
    /// A BSR matrix of `block` × `block` blocks (`rows` and `cols` multiples of `block`):
    /// `block_row_offsets` (rows / block + 1), `block_col_indices` (one per stored block) and
    /// `values` (blocks · block · block in `order`, or batch × that).
    [[nodiscard]] static MatrixView bsr(std::int64_t rows, std::int64_t cols, std::int64_t block,
                                        const TensorView& block_row_offsets, const TensorView& block_col_indices,
                                        const TensorView& values, BlockOrder order = BlockOrder::row_major);

    /// True for a default-constructed view.
    [[nodiscard]] bool empty() const noexcept { return !made_; }
    /// The storage format.
    [[nodiscard]] Format format() const noexcept { return format_; }
    /// Rows of the matrix.
    [[nodiscard]] std::int64_t rows() const noexcept { return rows_; }
    /// Columns of the matrix.
    [[nodiscard]] std::int64_t cols() const noexcept { return cols_; }
    /// Stored entries per matrix: nnz for CSR, CSC and COO; blocks · block · block for BSR.
    [[nodiscard]] std::int64_t nnz() const noexcept;
    /// Stored blocks for BSR (the length of its index array); nnz for the other formats.
    [[nodiscard]] std::int64_t stored() const noexcept { return indices_.size(); }
    /// The block size of BSR; 1 for the other formats.
    [[nodiscard]] std::int64_t block() const noexcept { return block_; }
    /// The order of the values inside a BSR block (row_major for the other formats).
    [[nodiscard]] BlockOrder block_order() const noexcept { return order_; }
    /// Matrices sharing the pattern: the values' leading extent when they are 2-D, else 1.
    [[nodiscard]] std::int64_t batch() const noexcept { return values_.rank() == 2 ? values_.shape(0) : 1; }
    /// The values' dtype.
    [[nodiscard]] DataType value_type() const noexcept { return values_.dtype(); }
    /// The dtype of the index and offset arrays: i32 or i64.
    [[nodiscard]] DataType index_type() const noexcept { return indices_.dtype(); }

    /// CSR row offsets, CSC column offsets, BSR block-row offsets; an empty view for COO.
    [[nodiscard]] const TensorView& offsets() const noexcept { return offsets_; }
    /// CSR and BSR column (block-column) indices, CSC row indices, COO column indices.
    [[nodiscard]] const TensorView& indices() const noexcept { return indices_; }
    /// COO row indices; an empty view for the other formats.
    [[nodiscard]] const TensorView& row_indices() const noexcept { return rows_of_coo_; }
    /// The values: nnz entries, or (batch, nnz).
    [[nodiscard]] const TensorView& values() const noexcept { return values_; }

    /// The same pattern with other values (same dtype and shape as values(); InvalidArgument
    /// otherwise or when they overlap an index array).
    [[nodiscard]] MatrixView with_values(const TensorView& values) const;

private:
    Format format_ = Format::csr;
    BlockOrder order_ = BlockOrder::row_major;
    bool made_ = false;
    std::int64_t rows_ = 0, cols_ = 0, block_ = 1;
    TensorView offsets_, indices_, rows_of_coo_, values_;
};

/// A sparse matrix that owns its device arrays (allocated in stream order from a memory resource),
/// with a MatrixView of them. Move-only; a moved-from Matrix holds an empty view.
class Matrix {
public:
    /// An empty matrix (an empty view).
    Matrix() = default;
    ~Matrix();
    /// Moves the arrays; the moved-from matrix is empty.
    Matrix(Matrix&&) noexcept;
    /// Releases this matrix's arrays and takes the other's.
    Matrix& operator=(Matrix&&) noexcept;
    Matrix(const Matrix&) = delete;
    Matrix& operator=(const Matrix&) = delete;

    /// Uninitialized arrays for a matrix of `format` with `stored` entries (blocks for BSR) of
    /// `value_type`, `index_type` indices and `batch` value arrays, allocated on `stream`.
    [[nodiscard]] static Matrix allocate(Format format, std::int64_t rows, std::int64_t cols, std::int64_t stored,
                                         DataType value_type, DataType index_type = DataType::i32,
                                         core::StreamRef stream = core::current_stream(), std::int64_t block = 1,
                                         std::int64_t batch = 1);

    /// The matrix as a view of its arrays.
    [[nodiscard]] const MatrixView& view() const noexcept { return view_; }
    /// Shorthand for view().
    operator const MatrixView&() const noexcept { return view_; }  // NOLINT(google-explicit-constructor)

private:
    MatrixView view_;
    Tensor offsets_, indices_, rows_of_coo_, values_;
};

}  // namespace gpumath::sparse
