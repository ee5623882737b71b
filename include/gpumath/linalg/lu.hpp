// SPDX-License-Identifier: Apache-2.0
/// @file
/// LU factorization with partial pivoting and solves on cuSOLVER: the stateful LU plan.
#pragma once

#include <cstddef>
#include <memory>

#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/linalg/options.hpp>

namespace gpumath::detail {
struct LUImpl;
}  // namespace gpumath::detail

namespace gpumath::linalg {

/// A planned LU factorization with partial pivoting, P·A = L·U (L unit lower triangular), of square
/// matrices of one layout, with solves by the factors. Move-only; a moved-from plan may only be
/// destroyed or assigned to (its methods throw InvalidArgument, its accessors report an empty plan).
///
/// The layout is `(..., n, n)` of f32, f64, c32 or c64, any leading batch dimensions, any strides.
/// The constructor validates only (no GPU work); `plan()` sizes the workspace on the current device.
/// `factorize` and `solve` enqueue on the caller's stream, never synchronize, and may be captured
/// into a CUDA graph once planned. A singular matrix is not an error there: its `info` entry says
/// so (see check_info). Backend::batched runs cuBLAS's getrfBatched and getrsBatched (in place,
/// through device arrays of the matrices' addresses); its pivots, factors and info are the same as
/// the other backends', so factors of one backend may be solved by a plan of another.
///
/// The factors are stored as cuSOLVER stores them, in the factor's own memory order: for a
/// column-major `lu` they are A's; for a row-major `lu` (a row-major A is Aᵀ in column-major order)
/// they are Aᵀ's, and `solve` solves with the transpose, so no copy is made either way. Pass
/// `solve` the factor and pivots as `factorize` wrote them.
class LU {
public:
    /// Plans the factorization of matrices laid out as `a`. InvalidArgument for a rank below 2,
    /// non-square matrices, an enum value outside its enumerators; NotSupported for other dtypes,
    /// for Backend::batched with n or the number of matrices above INT_MAX (cuBLAS's int sizes) and
    /// for Backend::warp with n > 32.
    explicit LU(const TensorLayout& a, const LUOptions& options = {});
    ~LU();
    /// Moves the plan; the moved-from plan is empty.
    LU(LU&&) noexcept;
    /// Releases this plan and takes the other's; the moved-from plan is empty.
    LU& operator=(LU&&) noexcept;
    LU(const LU&) = delete;
    LU& operator=(const LU&) = delete;

    /// Sizes the workspace on the current device now and, for Backend::automatic, more than one
    /// matrix and n ≤ 1024, measures `looped`, `batched` and (n ≤ 32) `warp` once per (n, batch,
    /// dtype, device) (it then blocks on a private stream); idempotent, thread-safe, implicit on the
    /// first factorize.
    /// CusolverError or CudaError on failure.
    void plan();
    /// True once `plan()` has run (false when moved from).
    [[nodiscard]] bool planned() const noexcept;

    /// Factorizes `a` into `lu` on `stream`. `lu` has `a`'s shape and dtype, unit stride along its
    /// rows or its columns and one stride between matrices (InvalidArgument otherwise), and may be
    /// `a` itself (in place); otherwise it must not overlap `a`, and `a` is copied to it first.
    /// `pivots` is a contiguous i32 tensor `(..., n)` (`pivots_layout()`): 1-based row
    /// interchanges, as LAPACK writes them. `info` is a contiguous i32 tensor of the batch shape
    /// (`info_layout()`): 0, or the 1-based index of the first zero on U's diagonal (singular).
    /// Backend::batched takes `lu`'s leading dimension as an int: NotSupported above INT_MAX (under
    /// `automatic` such a call runs looped).
    void factorize(const TensorView& a, const TensorView& lu, const TensorView& pivots, const TensorView& info,
                   core::StreamRef stream = core::current_stream());

    /// Solves A·X = B by the factors `factorize` wrote: `b` is `(..., n, k)` or `(..., n)` with the
    /// planned batch shape and dtype; `x` of the same shape and dtype (any strides) may be `b`
    /// itself, otherwise must not overlap `b`, `lu` or `pivots`. In place when `x` has unit stride
    /// along its columns (n) and one stride between matrices; otherwise through workspace copies.
    /// Backend::batched takes k and the leading dimensions of `lu` and `x` as ints: NotSupported
    /// above INT_MAX (under `automatic` such a call runs looped).
    void solve(const TensorView& lu, const TensorView& pivots, const TensorView& b, const TensorView& x,
               core::StreamRef stream = core::current_stream());

    /// The planned layout of A (a default TensorLayout when moved from).
    [[nodiscard]] const TensorLayout& layout() const noexcept;
    /// The layout `pivots` must have: i32 `(..., n)`.
    [[nodiscard]] const TensorLayout& pivots_layout() const noexcept;
    /// The layout `info` must have: i32 of A's batch shape (rank 0 for one matrix).
    [[nodiscard]] const TensorLayout& info_layout() const noexcept;
    /// The options the plan was made with (default LUOptions when moved from).
    [[nodiscard]] const LUOptions& options() const noexcept;
    /// The backend that runs the batch: `options().backend` until planned, then the one chosen.
    [[nodiscard]] Backend backend() const noexcept;
    /// Bytes of workspace one factorization takes at most (0 before `plan()` or when moved from).
    [[nodiscard]] std::size_t workspace_size() const noexcept;

private:
    [[nodiscard]] gpumath::detail::LUImpl& impl(const char* api) const;
    std::unique_ptr<gpumath::detail::LUImpl> impl_;
};

}  // namespace gpumath::linalg
