// SPDX-License-Identifier: Apache-2.0
/// @file
/// Sparse matrix × dense vector on cuSPARSE: the SpMV plan, y = α·op(A)·x + β·y.
#pragma once

#include <cstddef>
#include <memory>

#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/sparse/matrix.hpp>
#include <gpumath/sparse/options.hpp>

namespace gpumath::detail {
struct SpMVImpl;
}  // namespace gpumath::detail

namespace gpumath::sparse {

/// A planned product y = α·op(A)·x + β·y of one sparse matrix A (its pattern and value arrays) with
/// dense vectors of fixed layouts. Move-only; a moved-from plan may only be destroyed or assigned to
/// (its methods throw InvalidArgument, its accessors report an empty plan).
///
/// The constructor validates only (no CUDA call): InvalidArgument for an empty A, shapes that do
/// not agree (op(A)'s rows = y's size, op(A)'s columns = x's size), x and y not 1-D, an enum value
/// outside its enumerators; NotSupported for dtypes cuSPARSE's SpMV does not take and for a batch
/// of matrices (use SpMM with one column). The dtypes: A, x and y of one dtype among f32, f64, c32
/// and c64 (the compute type); A and x f16 (or bf16) with y of theirs or f32, computed in f32 (an
/// f16 A with f32 vectors is refused, as cuSPARSE refuses it); A f32 with x and y f64 or c32; A f64
/// with x and y c64.
///
/// `plan()` makes the cuSPARSE descriptors on the current device, sizes and allocates the plan's
/// buffer and runs cusparseSpMV_preprocess with it. It reads A's pattern, and for
/// SpMVAlgorithm::automatic runs products with A, on a private stream: A's arrays must hold a valid
/// matrix by then. An explicit `plan()` orders itself after nothing (synchronize the stream that
/// wrote A's arrays first); the plan an `execute` makes implicitly first waits for the work already
/// enqueued on the execute's stream (unless that stream captures a graph, when A's arrays must hold
/// their values before the capture began).
///
/// `execute` enqueues cusparseSpMV on the caller's stream, never allocates or synchronizes, and may
/// be captured into a CUDA graph once the plan is planned. cuSPARSE requires the buffer given to
/// preprocess for every product with the matrix, so the plan's buffer serves all its executions:
/// executions of one plan on different streams must be ordered by the caller (events), or use one
/// plan per stream (the stateless spmv does).
class SpMV {
public:
    /// Plans products of `a` with vectors laid out as `x` (op(A)'s columns) into vectors laid out as
    /// `y` (op(A)'s rows). Keeps `a`'s pointers: its arrays must outlive the plan's use of them.
    SpMV(const MatrixView& a, const TensorLayout& x, const TensorLayout& y, const SpMVOptions& options = {});
    ~SpMV();
    /// Moves the plan; the moved-from plan is empty.
    SpMV(SpMV&&) noexcept;
    /// Releases this plan and takes the other's; the moved-from plan is empty.
    SpMV& operator=(SpMV&&) noexcept;
    SpMV(const SpMV&) = delete;
    SpMV& operator=(const SpMV&) = delete;

    /// Describes A, x and y to cuSPARSE, allocates the buffer, chooses the algorithm (measuring for
    /// `automatic`) and runs cusparseSpMV_preprocess on the current device now; blocks until done
    /// (idempotent, thread-safe; implicit on the first execute). CusparseError or CudaError on
    /// failure, among them cuSPARSE refusing the algorithm for this matrix and operation.
    void plan();
    /// True once `plan()` has run (false when moved from).
    [[nodiscard]] bool planned() const noexcept;

    /// y = α·op(A)·x + β·y with the planned A, on `stream`. `x` and `y` have the planned layouts
    /// (1-D, unit stride, aligned to their elements); `y` must not overlap `x` or A's arrays
    /// (InvalidArgument). α and β are real; with β = 0, y's old contents are not read.
    void execute(const TensorView& x, const TensorView& y, double alpha = 1.0, double beta = 0.0,
                 core::StreamRef stream = core::current_stream());
    /// The same with `a`, a matrix of the planned pattern (the same pattern arrays as the plan's)
    /// and other values of the same layout (InvalidArgument otherwise).
    void execute(const MatrixView& a, const TensorView& x, const TensorView& y, double alpha = 1.0, double beta = 0.0,
                 core::StreamRef stream = core::current_stream());

    /// The planned matrix (an empty view when moved from).
    [[nodiscard]] const MatrixView& matrix() const noexcept;
    /// The planned layout of x (a default TensorLayout when moved from).
    [[nodiscard]] const TensorLayout& x_layout() const noexcept;
    /// The planned layout of y (a default TensorLayout when moved from).
    [[nodiscard]] const TensorLayout& y_layout() const noexcept;
    /// The options the plan was made with (default SpMVOptions when moved from).
    [[nodiscard]] const SpMVOptions& options() const noexcept;
    /// The algorithm that runs: `options().algorithm` until planned, then the one chosen (never
    /// `automatic` once planned).
    [[nodiscard]] SpMVAlgorithm algorithm() const noexcept;
    /// Bytes of the plan's cuSPARSE buffer (0 before `plan()` or when moved from).
    [[nodiscard]] std::size_t buffer_size() const noexcept;

private:
    [[nodiscard]] gpumath::detail::SpMVImpl& impl(const char* api) const;
    std::unique_ptr<gpumath::detail::SpMVImpl> impl_;
};

}  // namespace gpumath::sparse
