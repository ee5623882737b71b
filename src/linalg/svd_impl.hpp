// SPDX-License-Identifier: Apache-2.0
// Private to src/linalg: what the SVD plans share. Batches of m × n matrices, the orientation
// cuSOLVER's routines decompose them in (m ≥ n: a wide A through Aᵀ), the outputs as a routine
// writes them (in the caller's memory or in workspace copied out), and typed wrappers of the
// routines that have no 64-bit entry point (gesvdj, gesvdjBatched, gesvdaStridedBatched).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/linalg/svd.hpp>

#include "linalg/cusolver.hpp"
#include "linalg/lanes.hpp"
#include "linalg/plan_state.hpp"

namespace gpumath::detail {

/// The matrix cuSOLVER decomposes, column-major with wm ≥ wn rows: A, or Aᵀ (`flip`) when A is
/// wide. Aᵀ = U'·S·V'ᴴ gives A = conj(V')·S·U'ᵀ: the routine's left vectors are Vᴴ transposed,
/// its right ones U conjugated (its Vᴴ, U transposed).
struct Orientation {
    bool flip = false;
    std::int64_t wm = 0, wn = 0;
};
[[nodiscard]] Orientation orientation_of(const MatrixBatch& b) noexcept;

/// `(batch..., rows, cols)` of `dtype`, row-major.
[[nodiscard]] TensorLayout batch_layout(const MatrixBatch& b, DataType dtype, std::int64_t rows, std::int64_t cols);
/// `(batch..., cols)` of `dtype`, row-major.
[[nodiscard]] TensorLayout batch_vector_layout(const MatrixBatch& b, DataType dtype, std::int64_t cols);

/// `(batch..., rows, cols)` column-major with leading dimension `ld`, `stride` elements between
/// matrices (the batch dimensions row-major over the matrices).
[[nodiscard]] TensorLayout column_major(DataType dtype, std::span<const std::int64_t> batch_shape, std::int64_t rows,
                                        std::int64_t cols, std::int64_t ld, std::int64_t stride);

/// One output of a routine: the caller's operand in the routine's orientation, `(batch..., rows,
/// cols)`, and where the routine writes its `routine_cols` columns (rows × routine_cols per
/// matrix, column-major): the operand itself when it can, else packed workspace whose first
/// `cols` columns are copied out.
struct Piece {
    TensorView target;  // empty for a scratch piece
    DataType dtype = DataType::f32;
    std::int64_t rows = 0, cols = 0, routine_cols = 0;
    bool direct = false;
    std::size_t bytes = 0;  // of workspace, when not direct
    std::byte* data = nullptr;
    std::int64_t ld = 1, stride = 0;  // elements

    /// The address of matrix `b`.
    [[nodiscard]] std::byte* at(std::int64_t b) const noexcept {
        return data + b * stride * std::int64_t(size_of(dtype));
    }
};

/// The piece of `target` for a routine that writes `routine_cols` columns per matrix; written in
/// place only when `allow_direct` and the target is column-major with leading dimension `rows`
/// (and `packed`, for the batched routines).
[[nodiscard]] Piece make_piece(const TensorView& target, const MatrixBatch& b, std::int64_t routine_cols, bool packed,
                               bool allow_direct);
/// Workspace of rows × cols matrices of `dtype` a routine writes but nobody reads.
[[nodiscard]] Piece scratch_piece(DataType dtype, const MatrixBatch& b, std::int64_t rows, std::int64_t cols);
/// Points a piece that is not direct at `cursor`, which moves past it.
void bind(Piece& piece, std::byte*& cursor) noexcept;
/// Conjugates what the routine wrote (when `conj`) and copies its first `cols` columns out (when
/// not direct).
void finish(const Piece& piece, const MatrixBatch& b, bool conj, core::StreamRef stream);
/// The values `s` (batch..., k) as the row matrices (batch..., 1, k) a piece takes.
[[nodiscard]] TensorView values_as_rows(const TensorView& s);

/// Checks shared by the plans' execute: shapes, dtypes, alignment and disjointness of every
/// operand, `u` and `vh` empty when `vectors` is false.
void check_svd_operands(const TensorView& a, const TensorView& u, const TensorView& s, const TensorView& vh,
                        const TensorView& info, const MatrixBatch& b, const TensorLayout& u_layout,
                        const TensorLayout& s_layout, const TensorLayout& vh_layout, bool vectors, const char* api);
/// True when the batch leaves nothing for cuSOLVER: no matrices, or min(m, n) = 0; `info` is
/// then set to 0 and, with `full`, U and Vᴴ to the identity (NumPy's answer), on `stream`.
[[nodiscard]] bool empty_svd_done(const MatrixBatch& b, const TensorView& u, const TensorView& vh, bool full,
                                  const TensorView& info, core::StreamRef stream);

// gesvdj, gesvdjBatched and gesvdaStridedBatched for `t` (lwork in elements of `t`).
cusolverStatus_t gesvdj_size(cusolverDnHandle_t h, DataType t, cusolverEigMode_t jobz, int econ, int m, int n, int lda,
                             int ldu, int ldv, int* lwork, gesvdjInfo_t params);
cusolverStatus_t gesvdj(cusolverDnHandle_t h, DataType t, cusolverEigMode_t jobz, int econ, int m, int n, void* a,
                        int lda, void* s, void* u, int ldu, void* v, int ldv, void* work, int lwork, int* info,
                        gesvdjInfo_t params);
cusolverStatus_t gesvdj_batched_size(cusolverDnHandle_t h, DataType t, cusolverEigMode_t jobz, int m, int n, int lda,
                                     int ldu, int ldv, int* lwork, gesvdjInfo_t params, int count);
cusolverStatus_t gesvdj_batched(cusolverDnHandle_t h, DataType t, cusolverEigMode_t jobz, int m, int n, void* a,
                                int lda, void* s, void* u, int ldu, void* v, int ldv, void* work, int lwork, int* info,
                                gesvdjInfo_t params, int count);
/// The strides of gesvdaStridedBatched's operands (elements).
struct GesvdaStrides {
    long long a = 0, s = 0, u = 0, v = 0;
};
cusolverStatus_t gesvda_size(cusolverDnHandle_t h, DataType t, cusolverEigMode_t jobz, int rank, int m, int n, int lda,
                             int ldu, int ldv, const GesvdaStrides& strides, int* lwork, int count);
cusolverStatus_t gesvda(cusolverDnHandle_t h, DataType t, cusolverEigMode_t jobz, int rank, int m, int n, const void* a,
                        int lda, void* s, void* u, int ldu, void* v, int ldv, const GesvdaStrides& strides, void* work,
                        int lwork, int* info, double* residuals, int count);

struct SVDImpl final : PlanState {
    MatrixBatch batch;
    linalg::SVDOptions options;
    Orientation orient;
    std::int64_t k = 0;  // singular values per matrix
    TensorLayout s_layout, u_layout, vh_layout;
    linalg::Backend backend = linalg::Backend::automatic;
    std::size_t gesvd_bytes = 0, gesvd_host = 0;  // Xgesvd per matrix
    std::size_t jacobi_bytes = 0;                 // gesvdj per matrix (+ scratch U, V)
    std::size_t batched_bytes = 0;                // gesvdjBatched for the batch (+ scratch)
    // gesvdj and gesvdjBatched write V (an identity to start from) and may touch U even without
    // vectors: a values-only plan gives them scratch matrices after their workspace. The solver's
    // own part of jacobi_bytes and batched_bytes (what lwork says):
    std::size_t jacobi_solver_bytes = 0, batched_solver_bytes = 0, approximate_solver_bytes = 0;
    std::size_t approximate_bytes = 0;                           // gesvdaStridedBatched for the batch
    std::array<gesvdjInfo_t, Lanes::max_lanes> jacobi_params{};  // one per lane

    SVDImpl() = default;
    ~SVDImpl() override;
    SVDImpl(const SVDImpl&) = delete;
    SVDImpl& operator=(const SVDImpl&) = delete;
    SVDImpl(SVDImpl&&) = delete;
    SVDImpl& operator=(SVDImpl&&) = delete;

    [[nodiscard]] bool vectors() const noexcept { return options.job != linalg::SVDJob::values; }
    [[nodiscard]] bool full() const noexcept { return options.job == linalg::SVDJob::full; }
    /// Whether gesvdjBatched takes the batch (m and n at most 32, the batch in int).
    [[nodiscard]] bool batched_fits() const noexcept;

    void plan_locked() override;
    void size_routines();
    void choose_backend();
    /// The decomposition of the checked operands with `with` (planned).
    void run(linalg::Backend with, const TensorView& a, const TensorView& u, const TensorView& s, const TensorView& vh,
             const TensorView& info, core::StreamRef stream);
    void call_routine(linalg::Backend with, std::byte* a, std::int64_t lda, std::int64_t a_stride, const Piece& sp,
                      const Piece* up, const Piece* vp, std::byte* ws, std::size_t per_lane, int* info,
                      core::StreamRef stream);
};

struct TruncatedSVDImpl final : PlanState {
    MatrixBatch batch;
    linalg::TruncatedSVDOptions options;
    Orientation orient;
    std::int64_t k = 0, p = 0;
    TensorLayout s_layout, u_layout, vh_layout;
    std::size_t device_bytes = 0, host_bytes = 0;  // Xgesvdr per matrix

    void plan_locked() override;
    void run(const TensorView& a, const TensorView& u, const TensorView& s, const TensorView& vh,
             const TensorView& info, core::StreamRef stream);
};

}  // namespace gpumath::detail
