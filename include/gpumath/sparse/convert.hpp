// SPDX-License-Identifier: Apache-2.0
/// @file
/// Making sparse matrices: from host triplets, from a dense tensor, and from one format to another
/// (CSR ↔ CSC, COO, BSR), and a sparse matrix written out dense.
#pragma once

#include <cstdint>
#include <span>

#include <gpumath/core/stream.hpp>
#include <gpumath/sparse/matrix.hpp>
#include <gpumath/tensor.hpp>
#include <gpumath/types.hpp>

namespace gpumath::sparse {

/// A matrix of `format` assembled on the host from triplets (row_idx[i], col_idx[i], values[i]) and
/// uploaded on `stream`: entries sorted (row-major for CSR and COO, column-major for CSC,
/// block-row-major for BSR with `block` × `block` blocks stored row-major, absent positions of a
/// block zero), duplicates summed, `index_type` (i32 or i64) indices. `values` points to
/// `value_count` elements of `value_type` (f32, f64, c32 or c64), one per triplet. The host arrays
/// may be reused on return. Costs a host sort (n log n) and a copy of each array; does not
/// synchronize. InvalidArgument, before any CUDA call, for an index outside the matrix (naming the
/// triplet's position), arrays of different lengths, a bad dtype, format or block, or sizes that
/// do not fit `index_type`; CudaError.
[[nodiscard]] Matrix from_triplets(std::int64_t rows, std::int64_t cols, std::span<const std::int64_t> row_idx,
                                   std::span<const std::int64_t> col_idx, const void* values, DataType value_type,
                                   std::int64_t value_count, Format format = Format::csr,
                                   DataType index_type = DataType::i32, core::StreamRef stream = core::current_stream(),
                                   std::int64_t block = 1);

/// from_triplets with typed values (float, double, std::complex<float>, std::complex<double>).
template <class T>
[[nodiscard]] Matrix from_triplets(std::int64_t rows, std::int64_t cols, std::span<const std::int64_t> row_idx,
                                   std::span<const std::int64_t> col_idx, std::span<const T> values,
                                   Format format = Format::csr, DataType index_type = DataType::i32,
                                   core::StreamRef stream = core::current_stream(), std::int64_t block = 1) {
    return from_triplets(rows, cols, row_idx, col_idx, values.data(), data_type_of<T>(),
                         static_cast<std::int64_t>(values.size()), format, index_type, stream, block);
}

/// The nonzeros of `dense` (a 2-D tensor of f32, f64, c32 or c64, row-major or column-major: one
/// of its two strides 1) as a CSR matrix with `index_type` indices, on `stream`, through cuSPARSE's
/// dense-to-sparse conversion. Blocking: the count of nonzeros reaches the host once, so the call
/// synchronizes `stream` (InvalidArgument while it captures a graph). InvalidArgument, before any
/// CUDA call, for another rank, dtype or layout; CusparseError, CudaError.
[[nodiscard]] Matrix from_dense(const TensorView& dense, DataType index_type = DataType::i32,
                                core::StreamRef stream = core::current_stream());

/// Writes `matrix` (CSR, CSC, COO or BSR; one matrix, not a batch) into `out`, a 2-D tensor of its
/// rows × cols and value dtype, row-major or column-major (one of its strides 1), zeros where
/// nothing is stored, on `stream`. CSR, CSC and COO go through cuSPARSE's sparse-to-dense and do
/// not synchronize; when cuSPARSE asks for no workspace the call can be captured in a graph. BSR is
/// written by gpumath's own kernel (no workspace, capturable). `matrix`'s pattern must be valid
/// (see check). InvalidArgument, before any CUDA call, for an empty view, a batch, a shape, dtype
/// or layout of `out` that does not match, or `out` overlapping one of the matrix's arrays;
/// CusparseError, CudaError.
void to_dense(const MatrixView& matrix, const TensorView& out, core::StreamRef stream = core::current_stream());

/// `matrix` as a new CSR matrix with the same index and value dtypes, on `stream`. From CSR: a
/// copy. From CSC: cuSPARSE's csr2cscEx2 (i32 indices only: NotSupported for i64). From COO (rows
/// sorted): the row offsets computed on the device, indices and values copied. From BSR: cuSPARSE's
/// bsr2csr (i32, f32/f64/c32/c64). Does not synchronize. One matrix only (InvalidArgument for a
/// batch or an empty view); CusparseError, CudaError.
[[nodiscard]] Matrix to_csr(const MatrixView& matrix, core::StreamRef stream = core::current_stream());

/// `matrix` (CSR or CSC) as a new CSC matrix, through cuSPARSE's csr2cscEx2 (i32 indices only:
/// NotSupported for i64; f32, f64, c32, c64 values). Other formats go through to_csr first.
/// Does not synchronize. InvalidArgument for a batch or an empty view; CusparseError, CudaError.
[[nodiscard]] Matrix to_csc(const MatrixView& matrix, core::StreamRef stream = core::current_stream());

/// `matrix` as a new COO matrix (sorted by row), on `stream`: from CSR the row of each entry is
/// expanded on the device (cuSPARSE's csr2coo for i32, gpumath's kernel for i64); other formats go
/// through to_csr first. Does not synchronize. InvalidArgument for a batch or an empty view;
/// CusparseError, CudaError.
[[nodiscard]] Matrix to_coo(const MatrixView& matrix, core::StreamRef stream = core::current_stream());

/// `matrix` as a new BSR matrix of `block` × `block` blocks (row-major inside a block; `block`
/// divides rows and cols), through cuSPARSE's csr2bsr (i32 indices, f32/f64/c32/c64 values;
/// NotSupported for i64); other formats go through to_csr first. Blocking: the count of blocks
/// reaches the host, so the call synchronizes `stream` (InvalidArgument while it captures).
/// InvalidArgument for a batch, an empty view or a bad block; CusparseError, CudaError.
[[nodiscard]] Matrix to_bsr(const MatrixView& matrix, std::int64_t block,
                            core::StreamRef stream = core::current_stream());

}  // namespace gpumath::sparse
