// SPDX-License-Identifier: Apache-2.0
// The parameters of sparse's conversion kernels (kernels/convert.cu), read by the host compiler
// (src/sparse/convert.cpp) and by NVRTC alike: one definition, plain types only.
#pragma once

namespace gpumath::kernels {

/// expand_rows<Index>: rows[k] = the row r with offsets[r] <= k < offsets[r + 1], for k < stored
/// (CSR row offsets to COO row indices). compress_rows<Index>: offsets[r] = the first k with
/// rows[k] >= r, for r <= major (sorted COO row indices to CSR row offsets).
struct SparseRowsParams {
    void* offsets = nullptr;
    void* rows = nullptr;
    long long major = 0;
    long long stored = 0;
};

/// bsr_to_dense<Index, Bytes>: scatters every value of a BSR matrix (`block` × `block` blocks,
/// `column_major` order inside a block) into a dense matrix already zeroed, element (i, j) at
/// `out + i * row_stride + j * col_stride` (in elements of `Bytes` bytes).
struct SparseBsrDenseParams {
    const void* offsets = nullptr;
    const void* indices = nullptr;
    const void* values = nullptr;
    void* out = nullptr;
    long long block_rows = 0;
    long long blocks = 0;
    long long block = 1;
    int column_major = 0;
    long long row_stride = 0;
    long long col_stride = 0;
};

}  // namespace gpumath::kernels
