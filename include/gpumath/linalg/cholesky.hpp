// SPDX-License-Identifier: Apache-2.0
/// @file
/// Cholesky factorization and solves on cuSOLVER: the stateful Cholesky plan.
#pragma once

#include <cstddef>
#include <memory>

#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/linalg/options.hpp>

namespace gpumath::detail {
struct CholeskyImpl;
}  // namespace gpumath::detail

namespace gpumath::linalg {

/// A planned Cholesky factorization of symmetric (Hermitian) positive definite matrices of one
/// layout: A = L·Lᴴ (Triangle::lower) or A = Uᴴ·U (Triangle::upper), with solves by the factor.
/// Move-only; a moved-from plan may only be destroyed or assigned to (its methods throw
/// InvalidArgument, its accessors report an empty plan).
///
/// The layout is `(..., n, n)` of f32, f64, c32 or c64, any leading batch dimensions, any strides.
/// The constructor validates only (InvalidArgument / NotSupported, no GPU work). `plan()` sizes the
/// workspace on the current device and, for Backend::automatic and more than one matrix, measures
/// the backends once per (n, batch, dtype, device) (it then blocks on a private stream).
///
/// `factorize` and `solve` enqueue on the caller's stream, never synchronize, and may be captured
/// into a CUDA graph once planned. A matrix that is not positive definite is not an error there:
/// its `info` entry says so (see check_info).
class Cholesky {
public:
    /// Plans the factorization of matrices laid out as `a`. InvalidArgument for a rank below 2,
    /// non-square matrices, an enum value outside its enumerators; NotSupported for other dtypes.
    explicit Cholesky(const TensorLayout& a, const CholeskyOptions& options = {});
    ~Cholesky();
    /// Moves the plan; the moved-from plan is empty.
    Cholesky(Cholesky&&) noexcept;
    /// Releases this plan and takes the other's; the moved-from plan is empty.
    Cholesky& operator=(Cholesky&&) noexcept;
    Cholesky(const Cholesky&) = delete;
    Cholesky& operator=(const Cholesky&) = delete;

    /// Sizes the workspace and chooses the backend on the current device now (idempotent,
    /// thread-safe; implicit on the first factorize). CusolverError or CudaError on failure.
    void plan();
    /// True once `plan()` has run (false when moved from).
    [[nodiscard]] bool planned() const noexcept;

    /// Factorizes `a` into `factor` on `stream`: the factor in the planned triangle; what the other
    /// triangle holds afterwards is unspecified (the single-matrix routine and the warp kernel leave
    /// A's values there, the batched one overwrites them; the stateless `cholesky` zeroes it). `factor` has `a`'s
    /// shape and dtype with any strides, and may be `a` itself (in place, exactly cuSOLVER's in-place potrf);
    /// otherwise it must not overlap `a` (InvalidArgument) and `a` is copied to it first (the warp backend reads `a`
    /// and writes `factor` without a copy). `info` is a contiguous i32 tensor of the batch shape
    /// (`info_layout()`), written for every matrix: 0, or the order of the leading minor that is not positive definite.
    /// Without a copy when `factor` has unit stride along rows or columns and one stride between matrices; otherwise
    /// through a workspace copy.
    void factorize(const TensorView& a, const TensorView& factor, const TensorView& info,
                   core::StreamRef stream = core::current_stream());

    /// Solves A·X = B by a factor `factorize` wrote: `b` is `(..., n, k)` or `(..., n)` with the
    /// planned batch shape and dtype, `x` of the same shape and dtype (any strides) may be `b`
    /// itself, otherwise must not overlap `b` or `factor`. Without a copy when `x` has unit stride
    /// along its columns (n) and one stride between matrices, and `factor` is column-major, or
    /// row-major of a real dtype; otherwise through workspace copies.
    void solve(const TensorView& factor, const TensorView& b, const TensorView& x,
               core::StreamRef stream = core::current_stream());

    /// The planned layout of A (a default TensorLayout when moved from).
    [[nodiscard]] const TensorLayout& layout() const noexcept;
    /// The layout `factorize`'s `info` must have: i32 of A's batch shape (rank 0 for one matrix).
    [[nodiscard]] const TensorLayout& info_layout() const noexcept;
    /// The options the plan was made with (default CholeskyOptions when moved from).
    [[nodiscard]] const CholeskyOptions& options() const noexcept;
    /// The backend that runs the batch: `options().backend` until planned, then the one chosen.
    [[nodiscard]] Backend backend() const noexcept;
    /// Bytes of workspace one factorization takes at most (0 before `plan()` or when moved from).
    [[nodiscard]] std::size_t workspace_size() const noexcept;

private:
    [[nodiscard]] gpumath::detail::CholeskyImpl& impl(const char* api) const;
    std::unique_ptr<gpumath::detail::CholeskyImpl> impl_;
};

}  // namespace gpumath::linalg
