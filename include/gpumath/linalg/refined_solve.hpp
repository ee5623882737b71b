// SPDX-License-Identifier: Apache-2.0
/// @file
/// Mixed-precision linear solves on cuSOLVER's iterative-refinement solver (IRS): the stateful
/// RefinedSolve plan and the stateless refined_solve.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/linalg/options.hpp>
#include <gpumath/tensor.hpp>

namespace gpumath::detail {
struct RefinedSolveImpl;
}  // namespace gpumath::detail

namespace gpumath::linalg {

/// What the iterative refinement did for one matrix of a mixed-precision solve.
struct RefinementStatus {
    /// cuSOLVER's niters: when 0 or more, the refinement converged in that many iterations; when
    /// negative, it stopped without converging, the value being cuSOLVER's reason (for instance
    /// the iteration limit reached, or an overflow converting A to the lowest precision).
    int iterations = 0;
    /// The refinement did not converge and the system was solved again by LU in the matrices'
    /// own precision (`options.fallback`): x then has that LU's accuracy.
    bool fell_back = false;
    /// True when the refinement converged (`iterations` >= 0).
    [[nodiscard]] bool converged() const noexcept { return iterations >= 0; }
};

/// A planned mixed-precision solve A·X = B of square matrices and right-hand sides of one layout:
/// cuSOLVER's cusolverDnIRSXgesv factorizes A by LU in `options.lowest` (f16 by default, on tensor
/// cores) and refines X iteratively to the accuracy of A's own precision, falling back to a
/// full-precision LU when the refinement does not converge (unless told not to). Move-only; a
/// moved-from plan may only be destroyed or assigned to (its methods throw InvalidArgument, its
/// accessors report an empty plan).
///
/// A is `(..., n, n)` of f32, f64, c32 or c64 and B `(..., n, k)` or `(..., n)` of the same batch
/// shape and dtype, any strides. The constructor validates only (no GPU work); `plan()` sizes the
/// workspace on the current device.
///
/// **`execute` blocks.** cuSOLVER returns each matrix's iteration count on the host, so it waits
/// for the GPU inside: the calling thread waits for each matrix in turn (the matrices run one after
/// another on the caller's stream), and a capturing stream is refused with NotSupported before any
/// work. A singular matrix is not an error there: its `info` entry says so (see check_info).
class RefinedSolve {
public:
    /// Plans the solve of matrices laid out as `a` against right-hand sides laid out as `b`.
    /// InvalidArgument for a rank below 2, non-square matrices, a `b` whose shape or dtype does not
    /// match, an enum value outside its enumerators, `max_iterations` below 1, a negative or
    /// non-finite `tolerance`; NotSupported for other dtypes, `LowestPrecision::f64` with f32 or
    /// c32 matrices, a GMRES refinement with more than one right-hand side, and n or k above
    /// 2³¹ − 1 (cuSOLVER's IRS takes 32-bit sizes).
    RefinedSolve(const TensorLayout& a, const TensorLayout& b, const RefinedSolveOptions& options = {});
    ~RefinedSolve();
    /// Moves the plan; the moved-from plan is empty.
    RefinedSolve(RefinedSolve&&) noexcept;
    /// Releases this plan and takes the other's; the moved-from plan is empty.
    RefinedSolve& operator=(RefinedSolve&&) noexcept;
    RefinedSolve(const RefinedSolve&) = delete;
    RefinedSolve& operator=(const RefinedSolve&) = delete;

    /// Sets cuSOLVER's solver parameters and sizes the workspace on the current device now
    /// (idempotent, thread-safe; implicit on the first execute). CusolverError or CudaError on
    /// failure.
    void plan();
    /// True once `plan()` has run (false when moved from).
    [[nodiscard]] bool planned() const noexcept;

    /// Solves A·X = B for every matrix on `stream` and returns, per matrix (row-major over the
    /// batch), what the refinement did. `a` and `b` have the planned shapes and dtype and are left
    /// untouched; `x` has `b`'s shape and dtype, any strides, and must not overlap `a`, `b` or
    /// `info` (nor be `b`: cuSOLVER reads B while it writes X). `info` is a contiguous i32 tensor
    /// of the batch shape (`info_layout()`): 0, or the 1-based index of the first zero pivot (A
    /// singular). A is copied to a column-major workspace (cuSOLVER overwrites it with its
    /// factors when it falls back); `b` and `x` are used in place when column-major (unit stride
    /// down their columns, one stride between matrices), else through workspace.
    /// Blocks until every matrix's solve has run (a copy of x out of workspace is still enqueued
    /// on `stream` after that). NotSupported when `stream` is capturing a CUDA graph.
    std::vector<RefinementStatus> execute(const TensorView& a, const TensorView& b, const TensorView& x,
                                          const TensorView& info, core::StreamRef stream = core::current_stream());

    /// The planned layout of A (a default TensorLayout when moved from).
    [[nodiscard]] const TensorLayout& layout() const noexcept;
    /// The planned layout of B (shape and dtype; strides free).
    [[nodiscard]] const TensorLayout& rhs_layout() const noexcept;
    /// The layout `info` must have: i32 of A's batch shape (rank 0 for one matrix).
    [[nodiscard]] const TensorLayout& info_layout() const noexcept;
    /// The options the plan was made with (default RefinedSolveOptions when moved from).
    [[nodiscard]] const RefinedSolveOptions& options() const noexcept;
    /// Bytes of device workspace one execution takes at most (0 before `plan()` or when moved
    /// from): A's copy, B's and X's copies, and cuSOLVER's own workspace.
    [[nodiscard]] std::size_t workspace_size() const noexcept;

private:
    [[nodiscard]] gpumath::detail::RefinedSolveImpl& impl(const char* api) const;
    std::unique_ptr<gpumath::detail::RefinedSolveImpl> impl_;
};

/// The solution of a mixed-precision solve with each matrix's status.
struct RefinedSolveResult {
    /// X, row-major, of B's shape and dtype.
    Tensor x;
    /// i32 of A's batch shape: 0, or the 1-based index of the first zero pivot (A singular).
    Tensor info;
    /// What the refinement did for each matrix (row-major over the batch).
    std::vector<RefinementStatus> refinement;
    /// `check_info(info, "linalg::refined_solve", stream)`: blocks, throws NumericalError on a
    /// failure.
    void check(core::StreamRef stream = core::current_stream()) const;
};

/// The solution of A·X = B for each matrix of `a` (`(..., n, n)`) and `b` (`(..., n, k)` or
/// `(..., n)`) by LU in `options.lowest` refined to A's own precision (see RefinedSolve), in new
/// tensors allocated on `stream`, through the plan cache. Blocks (see RefinedSolve::execute);
/// refuses a capturing stream (NotSupported). Does not check `info`: call the result's `check()`.
/// InvalidArgument / NotSupported as RefinedSolve, before any CUDA call.
[[nodiscard]] RefinedSolveResult refined_solve(const TensorView& a, const TensorView& b,
                                               const RefinedSolveOptions& options = {},
                                               core::StreamRef stream = core::current_stream());

}  // namespace gpumath::linalg
