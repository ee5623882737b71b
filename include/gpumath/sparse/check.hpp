// SPDX-License-Identifier: Apache-2.0
/// @file
/// The device-side check of a sparse matrix's content: offsets, index ranges and order.
#pragma once

#include <gpumath/core/stream.hpp>
#include <gpumath/sparse/matrix.hpp>

namespace gpumath::sparse {

/// What sparse::check asks of the indices beyond their range.
struct CheckOptions {
    /// Indices strictly increasing within each row (CSR, BSR, COO) or column (CSC): unsorted
    /// indices and duplicates are bad entries. Off: only ranges and offsets are checked.
    bool sorted = true;
};

/// Checks the content of `matrix` in device memory with one kernel on `stream` and throws
/// InvalidSparseData for the first bad entry: the offsets first (offsets[0] != 0, an offset
/// smaller than the one before it, the last offset != the number of stored entries), then COO's
/// row indices (outside [0, rows), or smaller than the one before), then the indices (outside the
/// minor extent, or, with `options.sorted`, not greater than the previous index of the same row or
/// column). `array()` names the array ("row_offsets", "col_indices", "block_col_indices", ...) and
/// `position()` the first bad entry in it. Values are not read.
///
/// Blocking: the result reaches the host, so the call synchronizes `stream` (InvalidArgument while
/// `stream` captures a graph). Cost: one pass over the index arrays (O(nnz log rows) work, a read
/// of every index once), a 24-byte buffer, a launch and a synchronization: call it once per
/// pattern, not before every product. InvalidArgument for an empty view; CudaError.
void check(const MatrixView& matrix, CheckOptions options = {}, core::StreamRef stream = core::current_stream());

}  // namespace gpumath::sparse
