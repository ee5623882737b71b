// SPDX-License-Identifier: Apache-2.0
// sparse's conversion kernels where cuSPARSE has none (64-bit indices, BSR to dense): CSR row
// offsets to COO row indices and back, and BSR values scattered into a dense matrix. Instantiated
// by name expression: expand_rows<int|long long>, compress_rows<int|long long>,
// bsr_to_dense<int|long long, 2|4|8|16>.
#include "convert_params.hpp"

namespace gpumath::kernels {

/// The number of entries of the sorted a[0, n) that are < k (or <= k with `upper`).
template <class Index>
__device__ long long bound(const Index* a, long long n, long long k, bool upper) {
    long long lo = 0, hi = n;
    while (lo < hi) {
        const long long mid = lo + (hi - lo) / 2;
        const long long v = a[mid];
        if (upper ? v <= k : v < k) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

template <class Index>
__global__ void __launch_bounds__(256) expand_rows(SparseRowsParams p) {
    const Index* offsets = static_cast<const Index*>(p.offsets);
    Index* rows = static_cast<Index*>(p.rows);
    for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < p.stored;
         k += (long long)gridDim.x * blockDim.x)
        rows[k] = Index(bound(offsets, p.major + 1, k, true) - 1);
}

template <class Index>
__global__ void __launch_bounds__(256) compress_rows(SparseRowsParams p) {
    Index* offsets = static_cast<Index*>(p.offsets);
    const Index* rows = static_cast<const Index*>(p.rows);
    for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r <= p.major;
         r += (long long)gridDim.x * blockDim.x)
        offsets[r] = Index(bound(rows, p.stored, r, false));
}

template <int Bytes>
struct Raw;
template <>
struct Raw<2> {
    unsigned short v;
};
template <>
struct Raw<4> {
    float v;
};
template <>
struct Raw<8> {
    double v;
};
template <>
struct Raw<16> {
    double v[2];
};

template <class Index, int Bytes>
__global__ void __launch_bounds__(256) bsr_to_dense(SparseBsrDenseParams p) {
    const Index* offsets = static_cast<const Index*>(p.offsets);
    const Index* indices = static_cast<const Index*>(p.indices);
    const Raw<Bytes>* values = static_cast<const Raw<Bytes>*>(p.values);
    Raw<Bytes>* out = static_cast<Raw<Bytes>*>(p.out);
    const long long per_block = p.block * p.block;
    for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < p.blocks * per_block;
         v += (long long)gridDim.x * blockDim.x) {
        const long long k = v / per_block, w = v % per_block;
        const long long block_row = bound(offsets, p.block_rows + 1, k, true) - 1;
        const long long block_col = indices[k];
        const long long i = p.column_major ? w % p.block : w / p.block;
        const long long j = p.column_major ? w / p.block : w % p.block;
        out[(block_row * p.block + i) * p.row_stride + (block_col * p.block + j) * p.col_stride] = values[v];
    }
}

}  // namespace gpumath::kernels
