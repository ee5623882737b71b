// SPDX-License-Identifier: Apache-2.0
/// @file
/// Sparse matrix × dense matrix on cuSPARSE: the SpMM plan, C = α·op(A)·B + β·C.
#pragma once

#include <cstddef>
#include <memory>

#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/sparse/matrix.hpp>
#include <gpumath/sparse/options.hpp>

namespace gpumath::detail {
struct SpMMImpl;
}  // namespace gpumath::detail

namespace gpumath::sparse {

/// A planned product C = α·op(A)·B + β·C of one sparse matrix A with dense matrices B and C of
/// fixed layouts. Move-only; a moved-from plan may only be destroyed or assigned to (its methods
/// throw InvalidArgument, its accessors report an empty plan).
///
/// B is `(k, n)` and C `(m, n)` with op(A) of `m × k`, each row-major (unit stride along the last
/// dimension) or column-major (unit stride along the one before), with any leading dimension.
/// Batches, as cuSPARSE runs them: C is `(batch, m, n)` with one stride between its matrices; B is
/// `(batch, k, n)` or one `(k, n)` matrix for all; A holds `batch` value arrays (MatrixView's 2-D
/// values) or one for all (CSR and COO only; CSC and BSR are NotSupported with a batch).
///
/// The constructor validates only (no CUDA call): InvalidArgument for an empty A, shapes that do
/// not agree, a B or C that is neither row- nor column-major, batch extents that do not agree, an
/// enum value outside its enumerators; NotSupported for dtypes cuSPARSE's SpMM does not take
/// (A, B and C of one dtype among f32, f64, c32 and c64; or A and B f16 or bf16 with C f32) and for
/// an algorithm the format does not have. `plan()` and `execute` behave as SpMV's (see SpMV),
/// cusparseSpMM_preprocess in `plan()` and cusparseSpMM in `execute`.
class SpMM {
public:
    /// Plans products of `a` with matrices laid out as `b` into matrices laid out as `c` (the
    /// strides are part of the plan). Keeps `a`'s pointers.
    SpMM(const MatrixView& a, const TensorLayout& b, const TensorLayout& c, const SpMMOptions& options = {});
    ~SpMM();
    /// Moves the plan; the moved-from plan is empty.
    SpMM(SpMM&&) noexcept;
    /// Releases this plan and takes the other's; the moved-from plan is empty.
    SpMM& operator=(SpMM&&) noexcept;
    SpMM(const SpMM&) = delete;
    SpMM& operator=(const SpMM&) = delete;

    /// Describes the operands, allocates the buffer, chooses the algorithm (measuring for
    /// `automatic`) and runs cusparseSpMM_preprocess on the current device; blocks until done
    /// (idempotent, thread-safe; implicit on the first execute). It reads A's arrays on a private
    /// stream: they must hold their values (synchronize the stream that wrote them); the implicit
    /// plan of a first execute waits for the work already on the execute's stream itself (unless
    /// that stream captures). CusparseError or CudaError.
    void plan();
    /// True once `plan()` has run (false when moved from).
    [[nodiscard]] bool planned() const noexcept;

    /// C = α·op(A)·B + β·C with the planned A, on `stream`. `b` and `c` have the planned layouts
    /// (strides included) and are aligned to their elements; `c` must not overlap `b` or A's arrays
    /// (InvalidArgument). α and β are real; with β = 0, C's old contents are not read.
    void execute(const TensorView& b, const TensorView& c, double alpha = 1.0, double beta = 0.0,
                 core::StreamRef stream = core::current_stream());
    /// The same with `a`, a matrix of the planned pattern (the same pattern arrays as the plan's)
    /// and other values of the same layout (InvalidArgument otherwise).
    void execute(const MatrixView& a, const TensorView& b, const TensorView& c, double alpha = 1.0, double beta = 0.0,
                 core::StreamRef stream = core::current_stream());

    /// The planned matrix (an empty view when moved from).
    [[nodiscard]] const MatrixView& matrix() const noexcept;
    /// The planned layout of B (a default TensorLayout when moved from).
    [[nodiscard]] const TensorLayout& b_layout() const noexcept;
    /// The planned layout of C (a default TensorLayout when moved from).
    [[nodiscard]] const TensorLayout& c_layout() const noexcept;
    /// The options the plan was made with (default SpMMOptions when moved from).
    [[nodiscard]] const SpMMOptions& options() const noexcept;
    /// The algorithm that runs: `options().algorithm` until planned, then the one chosen.
    [[nodiscard]] SpMMAlgorithm algorithm() const noexcept;
    /// Bytes of the plan's cuSPARSE buffer (0 before `plan()` or when moved from).
    [[nodiscard]] std::size_t buffer_size() const noexcept;

private:
    [[nodiscard]] gpumath::detail::SpMMImpl& impl(const char* api) const;
    std::unique_ptr<gpumath::detail::SpMMImpl> impl_;
};

}  // namespace gpumath::sparse
