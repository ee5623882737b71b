// SPDX-License-Identifier: Apache-2.0
/// @file
/// Sparse triangular solves on cuSPARSE: op(A)·x = α·b for one right-hand side (SpSV) or
/// op(A)·X = α·B for a dense matrix of them (SpSM), analysed once and solved many times.
#pragma once

#include <complex>
#include <cstdint>
#include <memory>
#include <string_view>

#include <gpumath/core/memory.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/sparse/matrix.hpp>
#include <gpumath/sparse/operation.hpp>

namespace gpumath::detail {
struct TriangularSolveImpl;
}  // namespace gpumath::detail

namespace gpumath::sparse {

/// Which triangle of A a triangular solve reads; entries stored in the other one are ignored.
enum class Triangle : std::uint8_t {
    lower,  ///< A's diagonal and the entries below it.
    upper   ///< A's diagonal and the entries above it.
};

/// Number of Triangle enumerators.
inline constexpr int triangle_count = 2;

/// The enumerator's name ("lower", "upper"), or "unknown".
[[nodiscard]] std::string_view to_string(Triangle triangle) noexcept;

/// What a triangular solve takes for A's diagonal.
enum class Diagonal : std::uint8_t {
    non_unit,  ///< The stored diagonal entries (a missing one is a zero).
    unit       ///< Ones, whatever A stores on its diagonal.
};

/// Number of Diagonal enumerators.
inline constexpr int diagonal_count = 2;

/// The enumerator's name ("non_unit", "unit"), or "unknown".
[[nodiscard]] std::string_view to_string(Diagonal diagonal) noexcept;

/// Options of a TriangularSolve plan.
struct TriangularSolveOptions {
    /// The triangle of A that is read.
    Triangle triangle = Triangle::lower;
    /// Unit or stored diagonal.
    Diagonal diagonal = Diagonal::non_unit;
    /// Solve with A, Aᵀ or Aᴴ.
    Operation op = Operation::none;
    /// Where cuSPARSE's analysis buffer is allocated (null: the current device's pool).
    std::shared_ptr<core::MemoryResource> memory_resource = nullptr;
};

/// A planned sparse triangular solve op(A)·x = α·b: cuSPARSE's SpSV when the right-hand sides are
/// a vector `(n)`, SpSM when they are a dense matrix `(n, k)` (k right-hand sides, row- or
/// column-major).
///
/// Rules, checked by the constructor before any CUDA call (InvalidArgument): A is a non-empty
/// square CSR or COO view of one matrix (convert other formats with sparse::to_csr), i32 or i64
/// indices, values f32, f64, c32 or c64; the right-hand-side layout has A's value dtype and is
/// `(n)` contiguous or `(n, k)` row- or column-major; the options' enums are in range.
///
/// `plan(stream)` runs cuSPARSE's analysis of A on `stream` (blocking) and keeps its buffer: it
/// reads A's values as they are then. `solve(b, x, alpha, stream)` then solves as often as asked; it
/// allocates nothing and never synchronizes, so it may be captured into a CUDA graph once planned.
/// After writing new values into A's arrays (same pattern), call `update_values(stream)`.
///
/// A zero on the used diagonal (stored as 0, or not stored, with Diagonal::non_unit) makes the
/// system singular. cuSPARSE's generic SpSV and SpSM do not report it (the legacy zero-pivot query
/// has no generic counterpart): the solve completes and x holds infinities or NaNs from the division
/// by zero. Check x, or A's diagonal beforehand, where that can happen.
///
/// The plan reads A's arrays where they were when it was made: they must outlive it. Calls on one
/// plan are serialized on the host; its work must not run on two streams at once (its analysis
/// buffer is shared): order them or make a plan per stream. Destroy a plan once its work has
/// finished. Move-only; a moved-from plan throws InvalidArgument from its methods.
class TriangularSolve {
public:
    /// Checks A, the right-hand sides' layout `b` and the options (see the class). No GPU work.
    TriangularSolve(const MatrixView& a, const TensorLayout& b, const TriangularSolveOptions& options = {});
    ~TriangularSolve();
    /// Moves the plan; the moved-from plan is empty.
    TriangularSolve(TriangularSolve&&) noexcept;
    /// Releases this plan and takes the other's; the moved-from plan is empty.
    TriangularSolve& operator=(TriangularSolve&&) noexcept;
    TriangularSolve(const TriangularSolve&) = delete;
    TriangularSolve& operator=(const TriangularSolve&) = delete;

    /// Runs the analysis on `stream` (blocking, idempotent, thread-safe); refused (InvalidArgument)
    /// while `stream` captures a CUDA graph. CusparseError, CudaError.
    void plan(core::StreamRef stream = core::current_stream());
    /// True once `plan()` has run (false when moved from).
    [[nodiscard]] bool planned() const noexcept;

    /// Solves op(A)·x = α·b on `stream` (plans first when not planned, outside a capture). `b` and
    /// `x` have the planned layout's shape and dtype, vectors contiguous, matrices row- or
    /// column-major with the planned layout's strides; `x` must not overlap `b` or A's arrays.
    /// InvalidArgument for those, for an `alpha` with an imaginary part in a real dtype, and on a
    /// device other than the plan's. CusparseError.
    void solve(const TensorView& b, const TensorView& x, std::complex<double> alpha = 1.0,
               core::StreamRef stream = core::current_stream());

    /// Tells cuSPARSE that A's values (same arrays, same pattern) have changed, on `stream`, so the
    /// next solves use them without a new analysis (plans first when not planned). cuSPARSE does
    /// not document this step as capturable: call it outside a capture. CusparseError.
    void update_values(core::StreamRef stream = core::current_stream());

    /// The right-hand sides' layout the plan was made for (a default TensorLayout when moved from).
    [[nodiscard]] const TensorLayout& layout() const noexcept;
    /// The options the plan was made with (default TriangularSolveOptions when moved from).
    [[nodiscard]] const TriangularSolveOptions& options() const noexcept;

private:
    [[nodiscard]] gpumath::detail::TriangularSolveImpl& impl(const char* api) const;
    std::unique_ptr<gpumath::detail::TriangularSolveImpl> impl_;
};

}  // namespace gpumath::sparse
