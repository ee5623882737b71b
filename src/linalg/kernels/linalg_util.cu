// SPDX-License-Identifier: Apache-2.0
// linalg's own small kernels around cuSOLVER's routines: zeroing the triangle a Cholesky factor
// leaves untouched, the pointer arrays of cuSOLVER's batched routines, and the diagonal shift that
// makes the matrices `automatic` measures on positive definite. Instantiated by name expression
// per element size (zero_triangle<4|8|16>) or element type (add_diagonal<float|double, complex>).
#include "linalg_params.hpp"

namespace gpumath::kernels {

/// An element of 4, 8 or 16 bytes, written as zeros.
template <int Bytes>
struct Raw;
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

template <int Bytes>
__device__ __forceinline__ Raw<Bytes>& at(const MatrixBatchParams& m, long long b, long long i, long long j) {
    return static_cast<Raw<Bytes>*>(m.data)[b * m.batch_stride + i * m.row_stride + j * m.col_stride];
}

/// One thread per element of a matrix (x), matrices over y (grid-stride).
template <int Bytes>
__global__ void __launch_bounds__(256) zero_triangle(TriangleParams p) {
    const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= p.m.n * p.m.n) return;
    const long long i = e % p.m.n, j = e / p.m.n;
    if (p.upper ? j <= i : j >= i) return;
    for (long long b = blockIdx.y; b < p.m.count; b += gridDim.y) at<Bytes>(p.m, b, i, j) = Raw<Bytes>{};
}

__global__ void __launch_bounds__(256) batch_pointers(BatchPointerParams p) {
    for (long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x; b < p.count;
         b += (long long)gridDim.x * blockDim.x)
        p.out[b] = p.base + b * p.stride_bytes;
}

/// One thread per diagonal element (x), matrices over y. `Complex` elements are pairs of `Real`.
template <class Real, bool Complex>
__global__ void __launch_bounds__(256) add_diagonal(DiagonalParams p) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.m.n) return;
    const int width = Complex ? 2 : 1;
    Real* data = static_cast<Real*>(p.m.data);
    for (long long b = blockIdx.y; b < p.m.count; b += gridDim.y)
        data[width * (b * p.m.batch_stride + i * (p.m.row_stride + p.m.col_stride))] += Real(p.value);
}

}  // namespace gpumath::kernels
