// SPDX-License-Identifier: Apache-2.0
// The parameters of sparse's content check (kernels/check.cu), read by the host compiler
// (src/sparse/check.cpp) and by NVRTC alike: one definition, plain types only.
#pragma once

namespace gpumath::kernels {

/// What is wrong with an entry; with its position it is one 64-bit code, position * 8 + kind, so
/// that one atomicMin per array keeps the first bad entry (and, at one position, the lowest kind).
enum SparseCheckKind {
    sparse_offset_first = 0,     ///< offsets[0] != 0
    sparse_offset_decrease = 1,  ///< offsets[i] < offsets[i - 1]
    sparse_offset_last = 2,      ///< offsets[major] != stored entries
    sparse_index_range = 3,      ///< an index outside [0, extent)
    sparse_index_order = 4       ///< an index not greater than the previous one of its row (column)
};

/// The slots of the result buffer (unsigned long long each, all ones when nothing is wrong).
enum SparseCheckSlot { sparse_slot_offsets = 0, sparse_slot_rows = 1, sparse_slot_indices = 2, sparse_slot_count = 3 };

/// check<Index>: one matrix pattern. For CSR, CSC and BSR `offsets` has `major + 1` entries and
/// `rows` is null; for COO `offsets` is null and `rows` (row indices) has `stored` entries in
/// [0, major). `indices` has `stored` entries in [0, minor).
struct SparseCheckParams {
    const void* offsets = nullptr;
    const void* rows = nullptr;
    const void* indices = nullptr;
    long long major = 0;
    long long minor = 0;
    long long stored = 0;
    int sorted = 1;
    unsigned long long* result = nullptr;
};

}  // namespace gpumath::kernels
