// SPDX-License-Identifier: Apache-2.0
// The parameters of linalg's own kernels (kernels/linalg_util.cu), read by the host compiler
// (src/linalg/kernels.cpp) and by NVRTC alike: one definition, plain types only.
#pragma once

namespace gpumath::kernels {

/// A batch of `count` n×n matrices: element (i, j) of matrix b at
/// `data + b * batch_stride + i * row_stride + j * col_stride` (in elements).
struct MatrixBatchParams {
    void* data = nullptr;
    long long n = 0;
    long long row_stride = 0;
    long long col_stride = 0;
    long long count = 0;
    long long batch_stride = 0;
};

/// zero_triangle: sets the triangle strictly above the diagonal (`upper` 1) or strictly below it
/// (`upper` 0) to zero.
struct TriangleParams {
    MatrixBatchParams m;
    int upper = 0;
};

/// batch_pointers: `out[b] = base + b * stride_bytes` for b < count.
struct BatchPointerParams {
    char* base = nullptr;
    long long stride_bytes = 0;
    long long count = 0;
    void** out = nullptr;
};

/// add_diagonal: adds `value` to the real part of every diagonal element.
struct DiagonalParams {
    MatrixBatchParams m;
    double value = 0.0;
};

/// pivots_narrow / pivots_widen: cuSOLVER's 64-bit pivots to the caller's 32-bit ones and back.
struct PivotParams {
    const void* in = nullptr;
    void* out = nullptr;
    long long count = 0;
};

/// determinant: out[b] = det of matrix b from its LU factors (U on and above the diagonal) and
/// 1-based pivots (`n` per matrix, `pivot_stride` apart).
struct DeterminantParams {
    MatrixBatchParams m;
    const int* pivots = nullptr;
    long long pivot_stride = 0;
    void* out = nullptr;
};

/// identity: every matrix set to the identity.
struct IdentityParams {
    MatrixBatchParams m;
};

/// conjugate: negates the imaginary part of every element of `count` rows × cols matrices, element
/// (i, j) of matrix b at `data + b * batch_stride + i * row_stride + j * col_stride` (in elements).
struct ConjugateParams {
    void* data = nullptr;
    long long rows = 0;
    long long cols = 0;
    long long row_stride = 0;
    long long col_stride = 0;
    long long count = 0;
    long long batch_stride = 0;
};

/// A batch of `count` column-major matrices, rows × cols: element (i, j) of matrix b at
/// `data + b * batch_stride + i + j * ld` (in elements).
struct ColumnMajorBatchParams {
    void* data = nullptr;
    long long rows = 0;
    long long cols = 0;
    long long ld = 0;
    long long count = 0;
    long long batch_stride = 0;
};

/// first_zero_diagonal: info[b] = the 1-based index of the first exact zero on the diagonal of
/// matrix b (its min(rows, cols) elements), or 0.
struct ZeroDiagonalParams {
    ColumnMajorBatchParams m;
    int* info = nullptr;
};

/// column_norms: out[b * cols + j] = the 2-norm of rows [row0, rows) of column j of matrix b, in
/// the real type of the elements.
struct ColumnNormParams {
    ColumnMajorBatchParams m;
    long long row0 = 0;
    void* out = nullptr;
};

}  // namespace gpumath::kernels
