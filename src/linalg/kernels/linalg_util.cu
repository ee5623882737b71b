// SPDX-License-Identifier: Apache-2.0
// linalg's own small kernels around cuSOLVER's routines: zeroing the triangle a Cholesky factor
// leaves untouched, the pointer arrays of cuSOLVER's batched routines, and the diagonal shift that
// makes the matrices `automatic` measures on positive definite, pivot conversions, determinants
// from LU factors and identity matrices, and around QR: the rank check of R's diagonal, the
// residual norms of least squares and the conjugation of a copied matrix. Instantiated by name
// expression per element size (zero_triangle<4|8|16>) or element type (add_diagonal<Real, Complex>,
// determinant<Real, Complex>, identity<Real, Complex>, first_zero_diagonal<Real, Complex>,
// column_norms<Real, Complex>, conjugate<Real>).
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

__global__ void __launch_bounds__(256) pivots_narrow(PivotParams p) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < p.count;
         i += (long long)gridDim.x * blockDim.x)
        static_cast<int*>(p.out)[i] = int(static_cast<const long long*>(p.in)[i]);
}

__global__ void __launch_bounds__(256) pivots_widen(PivotParams p) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < p.count;
         i += (long long)gridDim.x * blockDim.x)
        static_cast<long long*>(p.out)[i] = static_cast<const int*>(p.in)[i];
}

/// One thread per matrix: the product of U's diagonal, negated once per row interchange. A
/// singular matrix (a zero on U's diagonal) gives 0; the product is not rescaled, so it overflows
/// where the determinant does.
template <class Real, bool Complex>
__global__ void __launch_bounds__(256) determinant(DeterminantParams p) {
    const long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= p.m.count) return;
    const int width = Complex ? 2 : 1;
    const Real* data = static_cast<const Real*>(p.m.data) + width * b * p.m.batch_stride;
    const int* pivots = p.pivots + b * p.pivot_stride;
    Real re = 1, im = 0;
    for (long long i = 0; i < p.m.n; ++i) {
        const Real* d = data + width * i * (p.m.row_stride + p.m.col_stride);
        const Real dr = d[0], di = Complex ? d[1] : Real(0);
        const Real r = re * dr - im * di;
        im = re * di + im * dr;
        re = r;
        if (pivots[i] != i + 1) {
            re = -re;
            im = -im;
        }
    }
    Real* out = static_cast<Real*>(p.out) + width * b;
    out[0] = re;
    if (Complex) out[1] = im;
}

/// One thread per element of a matrix (x), matrices over y.
template <class Real, bool Complex>
__global__ void __launch_bounds__(256) identity(IdentityParams p) {
    const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= p.m.n * p.m.n) return;
    const long long i = e % p.m.n, j = e / p.m.n;
    const int width = Complex ? 2 : 1;
    for (long long b = blockIdx.y; b < p.m.count; b += gridDim.y) {
        Real* at =
            static_cast<Real*>(p.m.data) + width * (b * p.m.batch_stride + i * p.m.row_stride + j * p.m.col_stride);
        at[0] = i == j ? Real(1) : Real(0);
        if (Complex) at[1] = Real(0);
    }
}

/// One thread per element of a matrix (x), matrices over y (grid-stride); complex elements only.
template <class Real>
__global__ void __launch_bounds__(256) conjugate(ConjugateParams p) {
    const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= p.rows * p.cols) return;
    const long long i = e % p.rows, j = e / p.rows;
    for (long long b = blockIdx.y; b < p.count; b += gridDim.y) {
        Real* at = static_cast<Real*>(p.data) + 2 * (b * p.batch_stride + i * p.row_stride + j * p.col_stride);
        at[1] = -at[1];
    }
}

/// One block per matrix (grid-stride over x): its threads look at the diagonal together and keep
/// the first zero.
template <class Real, bool Complex>
__global__ void __launch_bounds__(256) first_zero_diagonal(ZeroDiagonalParams p) {
    __shared__ long long first;
    const long long k = p.m.rows < p.m.cols ? p.m.rows : p.m.cols;
    const int width = Complex ? 2 : 1;
    for (long long b = blockIdx.x; b < p.m.count; b += gridDim.x) {
        if (threadIdx.x == 0) first = k;
        __syncthreads();
        const Real* data = static_cast<const Real*>(p.m.data) + width * b * p.m.batch_stride;
        for (long long i = threadIdx.x; i < k; i += blockDim.x) {
            const Real* d = data + width * i * (p.m.ld + 1);
            if (d[0] == Real(0) && (!Complex || d[Complex ? 1 : 0] == Real(0)))
                atomicMin(reinterpret_cast<unsigned long long*>(&first), (unsigned long long)i);
        }
        __syncthreads();
        if (threadIdx.x == 0) p.info[b] = first == k ? 0 : int(first + 1);
        __syncthreads();
    }
}

/// One block per column (x) of a matrix (y, grid-stride), its threads summing squares in double.
template <class Real, bool Complex>
__global__ void __launch_bounds__(256) column_norms(ColumnNormParams p) {
    __shared__ double partial[256];
    const long long j = blockIdx.x;
    const int width = Complex ? 2 : 1;
    for (long long b = blockIdx.y; b < p.m.count; b += gridDim.y) {
        const Real* column = static_cast<const Real*>(p.m.data) + width * (b * p.m.batch_stride + j * p.m.ld);
        double sum = 0;
        for (long long i = p.row0 + threadIdx.x; i < p.m.rows; i += blockDim.x) {
            const double re = double(column[width * i]);
            sum += re * re;
            if (Complex) {
                const double im = double(column[width * i + (Complex ? 1 : 0)]);
                sum += im * im;
            }
        }
        partial[threadIdx.x] = sum;
        __syncthreads();
        for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
            if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
            __syncthreads();
        }
        if (threadIdx.x == 0) static_cast<Real*>(p.out)[b * p.m.cols + j] = Real(sqrt(partial[0]));
        __syncthreads();
    }
}

}  // namespace gpumath::kernels
