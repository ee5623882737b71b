// SPDX-License-Identifier: Apache-2.0
/// @file
/// Stateless sparse products: spmv and spmm on plans kept in a per-process cache.
/// The other stateless calls, sddmm, triangular_solve and spsolve, make a plan for the call; spgemm
/// is declared with its plan in spgemm.hpp.
#pragma once

#include <complex>
#include <cstddef>

#include <gpumath/core/cache.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/sparse/matrix.hpp>
#include <gpumath/sparse/direct_solver.hpp>
#include <gpumath/sparse/options.hpp>
#include <gpumath/sparse/sddmm.hpp>
#include <gpumath/sparse/spgemm.hpp>
#include <gpumath/sparse/triangular.hpp>
#include <gpumath/tensor.hpp>

namespace gpumath::sparse {

/// y = A·x on `stream` (see the full overload).
void spmv(const MatrixView& a, const TensorView& x, const TensorView& y,
          core::StreamRef stream = core::current_stream());

/// y = α·op(A)·x + β·y on `stream` through a cached SpMV plan. The plan is kept under A's pattern
/// (its array pointers, sizes and dtypes), x's and y's layouts, the options, the device and the
/// stream, so repeated calls with the same pattern plan once (the first call blocks while planning,
/// see SpMV::plan) and later ones only enqueue; a call with new values of a cached pattern runs
/// with those values. The same rules and errors as SpMV's constructor and execute. Capturable once
/// the plan is cached (a first call inside a capture plans on a private stream, outside it).
void spmv(const MatrixView& a, const TensorView& x, const TensorView& y, double alpha, double beta,
          const SpMVOptions& options = {}, core::StreamRef stream = core::current_stream());

/// C = A·B on `stream` (see the full overload).
void spmm(const MatrixView& a, const TensorView& b, const TensorView& c,
          core::StreamRef stream = core::current_stream());

/// C = α·op(A)·B + β·C on `stream` through a cached SpMM plan, kept as spmv's (B's and C's layouts,
/// strides included, in the key). The same rules and errors as SpMM's constructor and execute.
void spmm(const MatrixView& a, const TensorView& b, const TensorView& c, double alpha, double beta,
          const SpMMOptions& options = {}, core::StreamRef stream = core::current_stream());

/// C = α·(op(A)·op(B)) ∘ spy(C) + β·C on `stream`: every entry (i, j) that the CSR matrix C stores
/// becomes α·Σₗ op(A)(i, l)·op(B)(l, j) + β·C(i, j); C's pattern is unchanged. The rules and errors
/// of SDDMM's constructor and execute (A and B dense 2-D, row- or column-major, C's value dtype,
/// shapes that agree, no overlap with C's arrays, op none or transpose, no imaginary scalar in a real
/// dtype), checked before any CUDA call and naming "sparse::sddmm".
///
/// Costs: a fresh SDDMM plan per call (no cache: the plan reads the arrays it was made with), so
/// every call sizes cuSPARSE's buffer, preprocesses and then waits for `stream` before the plan and
/// its buffer go: the call blocks until C is computed and cannot be captured into a CUDA graph
/// (InvalidArgument while `stream` captures). For repeated products on the same arrays, keep an
/// SDDMM plan: its execute only enqueues and may be captured.
void sddmm(const TensorView& a, const TensorView& b, const MatrixView& c, std::complex<double> alpha = 1.0,
           std::complex<double> beta = 0.0, const SDDMMOptions& options = {},
           core::StreamRef stream = core::current_stream());

/// x = op(A)⁻¹·b on `stream`, the triangle and diagonal of A that `options` name: one right-hand
/// side when `b` is a vector `(n)`, k of them when it is a matrix `(n, k)` (row- or column-major).
/// `x` has b's shape, dtype and strides, and overlaps neither `b` nor A's arrays. The rules and
/// errors of TriangularSolve's constructor and solve, checked before any CUDA call and naming
/// "sparse::triangular_solve". A zero on the used diagonal is not reported (x holds infinities or
/// NaNs), as for TriangularSolve.
///
/// Costs: cuSPARSE's analysis reads A's values, so no analysis is reused across calls: every call
/// makes a fresh TriangularSolve (analysis, then the solve) and waits for `stream` before the plan's
/// buffer goes. The call blocks until x is computed and cannot be captured (InvalidArgument while
/// `stream` captures). For many solves with one matrix, keep a TriangularSolve (and call its
/// update_values after changing A's values).
void triangular_solve(const MatrixView& a, const TensorView& b, const TensorView& x,
                      const TriangularSolveOptions& options = {}, core::StreamRef stream = core::current_stream());

/// x = A⁻¹·b on `stream` through a DirectSolver (cuDSS) made for the call: analysis, numeric
/// factorization, a check of cuDSS's info, and the solve. `b` holds A's dtype, of shape (n) or
/// (n, k), any strides (copied into a column-major block first when cuDSS cannot read it as it is).
/// Returns a new tensor of b's shape and dtype, row-major as every Tensor (for k > 1 the solution is
/// computed column-major and copied into it), allocated on `stream`.
///
/// The rules and errors of DirectSolver's constructor and solve (square CSR, i32 indices, f32, f64,
/// c32 or c64 values, one matrix, options in range), checked before any CUDA call and naming
/// "sparse::spsolve"; NotSupported when gpumath was built without cuDSS's header cudss.h, CudssError
/// when the library cannot be loaded. NumericalError (with cuDSS's info) when the matrix is
/// singular, or not positive definite where `options.type` said spd or hpd.
///
/// Costs: blocking. The analysis works partly on the host, the info check waits for `stream`, and
/// the call waits for the solve before the solver goes; it cannot be captured (InvalidArgument while
/// `stream` captures). Nothing is cached. For repeated solves with one matrix (or new values of one
/// pattern), keep a DirectSolver: analyze and factorize once, then solve (or refactorize) as often as
/// needed.
[[nodiscard]] Tensor spsolve(const MatrixView& a, const TensorView& b, const DirectSolverOptions& options = {},
                             core::StreamRef stream = core::current_stream());

/// The process-wide, thread-safe LRU cache of the plans behind spmv and spmm, reached through
/// `sparse_plan_cache()`. A plan is keyed as spmv describes.
class SparsePlanCache final : public gpumath::detail::PlanCacheControl {
public:
    /// Capacity when the process starts, in plans.
    static constexpr std::size_t default_capacity = 64;

    SparsePlanCache(const SparsePlanCache&) = delete;
    SparsePlanCache& operator=(const SparsePlanCache&) = delete;
    SparsePlanCache(SparsePlanCache&&) = delete;
    SparsePlanCache& operator=(SparsePlanCache&&) = delete;

private:
    friend SparsePlanCache& sparse_plan_cache();
    SparsePlanCache();
    ~SparsePlanCache() = default;
};

/// The process-wide sparse plan cache.
[[nodiscard]] SparsePlanCache& sparse_plan_cache();

}  // namespace gpumath::sparse
