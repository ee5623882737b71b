// SPDX-License-Identifier: Apache-2.0
// The parameters of linalg's kernels for small matrices (kernels/small_matrices.cu: one matrix per
// warp, n <= 32), read by the host compiler (src/linalg/small.cpp) and by NVRTC alike: one
// definition, plain types only.
#pragma once

#if defined(__CUDACC_RTC__)
#define GPUMATH_SMALL_HOST_DEVICE __host__ __device__
#else
#define GPUMATH_SMALL_HOST_DEVICE
#endif

namespace gpumath::kernels {

/// The largest order the small-matrix kernels take: one lane of a warp per row or column.
inline constexpr int small_max_n = 32;
/// Batch dimensions a batch may have (gpumath's tensors have at most 8 dimensions).
inline constexpr int small_max_batch_rank = 6;
/// Warps (matrices) per block at most.
inline constexpr int small_max_warps = 4;

/// The batch of n×n matrices: `count` matrices over the row-major batch shape `shape[0..rank)`.
struct SmallBatch {
    long long shape[small_max_batch_rank] = {};
    int rank = 0;
    int n = 0;
    long long count = 0;
};

/// One operand of the batch: element (i, j) of the matrix at batch index (b0, b1, ...) is at
/// `data + Σ b_d * batch[d] + i * row_stride + j * col_stride` (in elements). A vector operand
/// (eigenvalues) uses `col_stride` between its elements.
struct SmallOperand {
    void* data = nullptr;
    long long row_stride = 0;
    long long col_stride = 0;
    long long batch[small_max_batch_rank] = {};
};

/// small_cholesky: A = L·Lᴴ (`upper` 0, from and into the lower triangle) or A = Uᴴ·U (`upper` 1).
/// The other triangle of `factor` gets A's values. `info[b]`: 0, or the order of the first leading
/// minor that is not positive definite (the factorization stops there).
struct SmallCholeskyParams {
    SmallBatch batch;
    SmallOperand a;
    SmallOperand factor;
    int* info = nullptr;
    int upper = 0;
};

/// small_lu: P·A = L·U with partial pivoting, LAPACK's getrf: `lu` holds L (unit diagonal, not
/// stored) below the diagonal and U on and above it; `pivots[b * n + k]` the 1-based row swapped
/// with row k at step k; `info[b]` 0, or the 1-based index of U's first exactly zero diagonal
/// element.
struct SmallLUParams {
    SmallBatch batch;
    SmallOperand a;
    SmallOperand lu;
    int* pivots = nullptr;
    int* info = nullptr;
};

/// small_eigh: cyclic Jacobi on the Hermitian matrix whose `upper` (1) or lower (0) triangle `a`
/// holds. Eigenvalues ascending into `values` (real), eigenvectors as the columns of `vectors`
/// (skipped when its data is null). `info[b]`: 0, or the number of off-diagonal elements above the
/// threshold after `max_sweeps` sweeps.
struct SmallEighParams {
    SmallBatch batch;
    SmallOperand a;
    SmallOperand values;
    SmallOperand vectors;
    int* info = nullptr;
    int upper = 0;
    int max_sweeps = 0;
};

/// The kernels, as the host names their shared memory needs.
enum SmallKernel : int { small_kernel_cholesky = 0, small_kernel_lu = 1, small_kernel_eigh = 2 };

/// The leading dimension of a matrix in shared memory (odd for n even: fewer bank conflicts).
GPUMATH_SMALL_HOST_DEVICE constexpr int small_ld(int n) { return n | 1; }

/// Bytes of shared memory one warp takes for an n×n matrix of `element_bytes` elements: the
/// matrix (and, for eigh, the vectors, one rotation per pair and the eigenvalues' ranks), rounded
/// up to 16 bytes.
GPUMATH_SMALL_HOST_DEVICE constexpr long long small_warp_bytes(int kernel, int n, int element_bytes) {
    const long long matrix = (long long)n * small_ld(n) * element_bytes;
    const long long extra =
        kernel == small_kernel_eigh ? matrix + (long long)small_max_n * element_bytes + 3LL * small_max_n * 4 : 0;
    return (matrix + extra + 15) / 16 * 16;
}

}  // namespace gpumath::kernels
