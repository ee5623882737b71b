// SPDX-License-Identifier: Apache-2.0
/// @file
/// A sparse direct solver on cuDSS: DirectSolver analyzes, factorizes and solves A·X = B for a
/// square CSR matrix, with refactorization for new values of the same pattern.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include <gpumath/core/stream.hpp>
#include <gpumath/sparse/matrix.hpp>
#include <gpumath/tensor.hpp>

namespace gpumath::detail {
struct DirectSolverImpl;
}  // namespace gpumath::detail

namespace gpumath::sparse {

/// What the solver may assume about A; it picks the factorization (LU, LDLᵀ, Cholesky).
enum class MatrixType : std::uint8_t {
    general,    ///< Any square matrix: LU with pivoting.
    symmetric,  ///< A = Aᵀ (indefinite allowed).
    hermitian,  ///< A = Aᴴ (for real values the same as symmetric).
    spd,        ///< Symmetric positive definite: Cholesky.
    hpd         ///< Hermitian positive definite (for real values the same as spd).
};

/// Number of MatrixType enumerators.
inline constexpr int matrix_type_count = 5;

/// The enumerator's name ("general", "symmetric", "hermitian", "spd", "hpd"), or "unknown".
[[nodiscard]] std::string_view to_string(MatrixType type) noexcept;

/// Which entries of A the CSR arrays hold. A symmetric or Hermitian matrix may store one triangle
/// (with the diagonal); a general one stores all of them.
enum class MatrixPart : std::uint8_t {
    full,   ///< Every entry of A.
    lower,  ///< The lower triangle and the diagonal; entries above it are ignored.
    upper   ///< The upper triangle and the diagonal; entries below it are ignored.
};

/// Number of MatrixPart enumerators.
inline constexpr int matrix_part_count = 3;

/// The enumerator's name ("full", "lower", "upper"), or "unknown".
[[nodiscard]] std::string_view to_string(MatrixPart part) noexcept;

/// How a DirectSolver treats its matrix and its solves.
struct DirectSolverOptions {
    /// What may be assumed about A.
    MatrixType type = MatrixType::general;
    /// Which entries the arrays hold: `full` for a general matrix; any for the others.
    MatrixPart part = MatrixPart::full;
    /// Steps of iterative refinement each solve adds (0 to 100; 0: none).
    int refinement_steps = 0;
};

/// A sparse direct solver on cuDSS for one square CSR matrix A of f32, f64, c32 or c64 values
/// with i32 indices. Move-only; a moved-from solver may only be destroyed or assigned to (its
/// methods throw InvalidArgument).
///
/// The solver keeps `a`'s view, not a copy: A's arrays (and those given to `refactorize`) must stay
/// alive and unchanged in pattern while the solver uses them. The device content of A is not
/// checked (use sparse::check first when it may be malformed).
///
/// Phases: `analyze` (reordering and symbolic factorization, partly on the host: it may block),
/// `factorize` (numeric), `solve` (any number of times, any number of right-hand sides), and
/// `refactorize` for new values of the same pattern. Every phase runs on the device current when
/// `analyze` ran (made current for each call) and on the caller's stream; factors live in memory
/// that cuDSS allocates. Calls on one solver are serialized by a lock. None of the phases may run
/// while the stream captures a CUDA graph: cuDSS does not document them as capturable (they
/// allocate and may synchronize), so each refuses a capturing stream with InvalidArgument.
///
/// A singular matrix, or one that is not positive definite where `spd`/`hpd` said it would be, is
/// not an error of the phase that meets it: cuDSS records it in the solver's `info`, read by the
/// blocking `info()` and `check()`.
///
/// cuDSS is not part of the CUDA toolkit. gpumath is built against its header when found
/// (cmake/gpumath-cudss.cmake) and loads the library at run time, from $GPUMATH_CUDSS_LIBRARY or
/// "libcudss.so.1" on the loader's path; without the library the first phase throws CudssError
/// saying how to install it.
class DirectSolver {
public:
    /// A solver of `a`, with no GPU work: every check the host can make. InvalidArgument for an
    /// empty view, a format other than CSR (convert with sparse::to_csr), a matrix that is not
    /// square, `part` other than `full` for a general matrix, negative or too many refinement steps,
    /// an enum value outside its enumerators; NotSupported for i64 indices, f16/bf16 values, a batch
    /// of value arrays, or a gpumath built without cuDSS's header (the message says how to get it).
    explicit DirectSolver(const MatrixView& a, const DirectSolverOptions& options = {});
    ~DirectSolver();
    /// Moves the solver; the moved-from solver is empty.
    DirectSolver(DirectSolver&&) noexcept;
    /// Releases this solver and takes the other's; the moved-from solver is empty.
    DirectSolver& operator=(DirectSolver&&) noexcept;
    DirectSolver(const DirectSolver&) = delete;
    DirectSolver& operator=(const DirectSolver&) = delete;

    /// Reordering and symbolic factorization of A's pattern on the current device, on `stream`
    /// (may block while cuDSS works on the host). Loads cuDSS on first use (CudssError when it
    /// cannot). Idempotent; implicit in the first `factorize`.
    void analyze(core::StreamRef stream = core::current_stream());
    /// True once `analyze` has run (false when moved from).
    [[nodiscard]] bool analyzed() const noexcept;

    /// Numeric factorization of A's current values, on `stream` (analyzes first when needed).
    /// Clears the info of an earlier factorization.
    void factorize(core::StreamRef stream = core::current_stream());

    /// Factorizes new `values` of the same pattern, reusing the analysis: `values` has the dtype
    /// and shape of A's values (InvalidArgument otherwise, or when it overlaps A's index arrays).
    /// The solver keeps the new values in place of the old ones. Runs a plain factorization when
    /// none has run yet.
    void refactorize(const TensorView& values, core::StreamRef stream = core::current_stream());

    /// Solves A·X = B with the last factorization, on `stream`: `b` and `x` hold A's dtype, of shape
    /// (n) with unit stride, or (n, k) column-major (unit stride along rows, a column stride of at
    /// least n). They must not overlap each other or A's arrays. InvalidArgument for other shapes,
    /// dtypes or layouts, overlapping operands, or a solver not yet factorized.
    void solve(const TensorView& b, const TensorView& x, core::StreamRef stream = core::current_stream());

    /// cuDSS's status of the last phase: 0, or positive when a factorization met a zero pivot or a
    /// matrix that is not positive definite. Waits for `stream`. 0 before any factorization.
    [[nodiscard]] int info(core::StreamRef stream = core::current_stream()) const;
    /// Throws NumericalError (with info()) when info() is not 0, naming what was attempted.
    /// Waits for `stream`.
    void check(core::StreamRef stream = core::current_stream()) const;

    /// The matrix the solver factorizes (an empty view when moved from).
    [[nodiscard]] const MatrixView& matrix() const noexcept;
    /// The options the solver was made with (defaults when moved from).
    [[nodiscard]] const DirectSolverOptions& options() const noexcept;

    /// True when gpumath was built with cuDSS's header, so that DirectSolver can be constructed.
    /// Says nothing about the library, which is loaded at run time.
    [[nodiscard]] static bool supported() noexcept;
    /// The version of the cuDSS library gpumath loads (major · 10000 + minor · 100 + patch),
    /// loading it now. NotSupported when built without cuDSS's header; CudssError naming the file,
    /// the reason and how to install cuDSS when it cannot be loaded.
    [[nodiscard]] static int library_version();

private:
    [[nodiscard]] gpumath::detail::DirectSolverImpl& impl(const char* api) const;
    std::unique_ptr<gpumath::detail::DirectSolverImpl> impl_;
};

}  // namespace gpumath::sparse
