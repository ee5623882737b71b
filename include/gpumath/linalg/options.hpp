// SPDX-License-Identifier: Apache-2.0
/// @file
/// Options of gpumath's dense linear algebra (gpumath::linalg): which triangle is read, which
/// backend runs a batch, and where workspace comes from.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include <gpumath/core/memory.hpp>

/// Dense linear algebra on cuSOLVER: Cholesky, LU, QR, least squares, symmetric/Hermitian and
/// general eigendecompositions, SVD and mixed-precision solves as plans and stateless calls,
/// per-matrix `info` left on the device, batches run by measurement.
namespace gpumath::linalg {

/// The triangle of a symmetric or Hermitian matrix that is read (the other is never touched), and
/// the one a Cholesky factor is written to: `lower` means A = L·Lᴴ, `upper` A = Uᴴ·U.
enum class Triangle : std::uint8_t {
    lower,  ///< The lower triangle, diagonal included.
    upper   ///< The upper triangle, diagonal included.
};

/// Number of Triangle enumerators.
inline constexpr int triangle_count = 2;

/// How a batch of matrices is run.
enum class Backend : std::uint8_t {
    /// Chosen by measurement the first time a (operation, n, batch, dtype) is planned on a device
    /// and kept for the process (logged at info level); one matrix always runs `looped`.
    automatic,
    /// cuSOLVER's single-matrix routine once per matrix, the matrices spread over the caller's
    /// stream and up to four side streams forked from it and joined back.
    looped,
    /// The batched routine: cuSOLVER's potrfBatched (Cholesky), XsyevBatched (eigh), gesvdjBatched
    /// (SVD, m and n at most 32); cuBLAS's getrfBatched and getrsBatched (LU).
    batched,
    /// SVD only: cuSOLVER's one-sided Jacobi gesvdj once per matrix, spread like `looped`.
    jacobi,
    /// SVD only: cuSOLVER's gesvdaStridedBatched, an approximate SVD of tall matrices (the wide are
    /// decomposed through their transposes) whose accuracy degrades with the condition number; thin
    /// vectors or values only, with an optional rank (SVDOptions::rank).
    approximate,
    /// gpumath's own kernel, one matrix per warp, n ≤ 32 (Cholesky, LU, eigh by cyclic Jacobi; f32,
    /// f64, c32, c64): compiled at run time, works on the operands where they are (any strides, no
    /// copy, no workspace). NotSupported at plan construction for n > 32.
    warp,
    /// Eigh only: cuSOLVER's syevjBatched / heevjBatched (one-sided Jacobi, the whole batch in one
    /// call), n ≤ 32, all eigenvalues (EighRange::all) only. It only enqueues, so it may be captured.
    jacobi_batched
};

/// Number of Backend enumerators.
inline constexpr int backend_count = 7;

/// "lower" or "upper" ("?" for a value that is not an enumerator).
[[nodiscard]] constexpr std::string_view to_string(Triangle t) noexcept {
    switch (t) {
        case Triangle::lower:
            return "lower";
        case Triangle::upper:
            return "upper";
    }
    return "?";
}

/// "automatic", "looped", "batched", "jacobi", "approximate", "warp" or "jacobi_batched" ("?" for a
/// value that is not an enumerator).
[[nodiscard]] constexpr std::string_view to_string(Backend b) noexcept {
    switch (b) {
        case Backend::automatic:
            return "automatic";
        case Backend::looped:
            return "looped";
        case Backend::batched:
            return "batched";
        case Backend::jacobi:
            return "jacobi";
        case Backend::approximate:
            return "approximate";
        case Backend::warp:
            return "warp";
        case Backend::jacobi_batched:
            return "jacobi_batched";
    }
    return "?";
}

/// Options of a Cholesky factorization (Cholesky, cholesky).
struct CholeskyOptions {
    /// The triangle of A read, and the one the factor is written to (the other is set to zero).
    Triangle triangle = Triangle::lower;
    /// How a batch runs.
    Backend backend = Backend::automatic;
    /// Where workspace comes from (default: the device's memory pool), one area per stream.
    std::shared_ptr<core::MemoryResource> memory_resource = nullptr;
};

/// Options of an LU factorization with partial pivoting (LU, solve, inv, det).
struct LUOptions {
    /// How a batch runs: `looped`, `batched` (cuBLAS's getrfBatched and getrsBatched), `warp`
    /// (n ≤ 32), or `automatic`, which measures `looped`, `batched` and (n ≤ 32) `warp` for a batch
    /// of matrices of n ≤ 1024 and is `looped` otherwise.
    Backend backend = Backend::automatic;
    /// Where workspace comes from (default: the device's memory pool), one area per stream.
    std::shared_ptr<core::MemoryResource> memory_resource = nullptr;
};

/// Which eigenvalues (and eigenvectors) of a symmetric or Hermitian matrix are computed (Eigh,
/// eigh), as LAPACK's syevx: ranges run cuSOLVER's Xsyevdx once per matrix.
enum class EighRange : std::uint8_t {
    /// All n eigenvalues: values `(..., n)`, vectors `(..., n, n)`.
    all,
    /// The eigenvalues of ascending positions `first` to `last` (0-based, both included): values
    /// `(..., k)` and vectors `(..., n, k)`, k = last - first + 1.
    index,
    /// The eigenvalues in the half-open interval (low, high]: values `(..., n)` and vectors
    /// `(..., n, n)` whose first `count` entries (columns) hold them and the rest NaN; the count of
    /// each matrix is written to an i32 `counts` tensor of the batch shape.
    value
};

/// Number of EighRange enumerators.
inline constexpr int eigh_range_count = 3;

/// "all", "index" or "value" ("?" for a value that is not an enumerator).
[[nodiscard]] constexpr std::string_view to_string(EighRange r) noexcept {
    switch (r) {
        case EighRange::all:
            return "all";
        case EighRange::index:
            return "index";
        case EighRange::value:
            return "value";
    }
    return "?";
}

/// Options of a symmetric or Hermitian eigendecomposition (Eigh, eigh).
struct EighOptions {
    /// The triangle of A read.
    Triangle triangle = Triangle::lower;
    /// Compute the eigenvectors as well as the eigenvalues.
    bool vectors = true;
    /// How a batch runs: `looped` (syevd per matrix), `batched` (XsyevBatched), `warp` and
    /// `jacobi_batched` (n ≤ 32), or `automatic`, which measures them; a range other than `all`
    /// runs `looped` only (and `automatic` is `looped`).
    Backend backend = Backend::automatic;
    /// Which eigenvalues are computed: all, by index or by value.
    EighRange range = EighRange::all;
    /// EighRange::index: the 0-based position of the first (smallest) eigenvalue computed.
    std::int64_t first = 0;
    /// EighRange::index: the 0-based position of the last eigenvalue computed, first to n - 1.
    std::int64_t last = 0;
    /// EighRange::value: the interval's lower bound, excluded (may be -infinity).
    double low = 0.0;
    /// EighRange::value: the interval's upper bound, included (may be +infinity); above `low`.
    double high = 0.0;
    /// Where workspace comes from (default: the device's memory pool), one area per stream.
    std::shared_ptr<core::MemoryResource> memory_resource = nullptr;
};

/// Which eigenvectors a general eigendecomposition (Eig, eig) computes, and how they are stored.
/// cuSOLVER's Xgeev computes right eigenvectors only; the left eigenvectors of a real A are the
/// right eigenvectors of Aᵀ (`eig(a.transposed())`).
enum class EigVectors : std::uint8_t {
    /// Eigenvalues only.
    none,
    /// Right eigenvectors as complex columns (c32 for f32 and c32 matrices, c64 for f64 and c64),
    /// one per eigenvalue, each of Euclidean norm 1 with its largest component real. For a real
    /// matrix gpumath unpacks LAPACK's real packing (see `real_packed`) on the device.
    complex,
    /// Real matrices only: the right eigenvectors as cuSOLVER and LAPACK return them, in A's real
    /// dtype. A real eigenvalue w(j) has the real vector V(:, j); a complex pair w(j), w(j + 1) =
    /// conj(w(j)), with Im w(j) > 0 first, has the vectors V(:, j) ± i·V(:, j + 1).
    real_packed
};

/// Number of EigVectors enumerators.
inline constexpr int eig_vectors_count = 3;

/// "none", "complex" or "real_packed" ("?" for a value that is not an enumerator).
[[nodiscard]] constexpr std::string_view to_string(EigVectors v) noexcept {
    switch (v) {
        case EigVectors::none:
            return "none";
        case EigVectors::complex:
            return "complex";
        case EigVectors::real_packed:
            return "real_packed";
    }
    return "?";
}

/// What an SVD computes besides the singular values (SVD, svd).
enum class SVDJob : std::uint8_t {
    values,  ///< The singular values only.
    thin,    ///< With U `(..., m, k)` and Vᴴ `(..., k, n)`, k = min(m, n) (NumPy's full_matrices=False).
    full     ///< With U `(..., m, m)` and Vᴴ `(..., n, n)` (NumPy's full_matrices=True).
};

/// Number of SVDJob enumerators.
inline constexpr int svd_job_count = 3;

/// "values", "thin" or "full" ("?" for a value that is not an enumerator).
[[nodiscard]] constexpr std::string_view to_string(SVDJob j) noexcept {
    switch (j) {
        case SVDJob::values:
            return "values";
        case SVDJob::thin:
            return "thin";
        case SVDJob::full:
            return "full";
    }
    return "?";
}

/// Options of a general (non-symmetric) eigendecomposition (Eig, eig).
struct EigOptions {
    /// Which eigenvectors are computed and how they are stored.
    EigVectors vectors = EigVectors::complex;
    /// How a batch runs: `looped` (and `automatic`, which is `looped`: cuSOLVER has no batched
    /// Xgeev); `batched` is NotSupported.
    Backend backend = Backend::automatic;
    /// Where workspace comes from (default: the device's memory pool), one area per stream.
    std::shared_ptr<core::MemoryResource> memory_resource = nullptr;
};

/// Options of a singular value decomposition (SVD, svd).
struct SVDOptions {
    /// What is computed besides the singular values.
    SVDJob job = SVDJob::thin;
    /// How a batch runs: `looped` (cusolverDnXgesvd per matrix), `jacobi` (gesvdj per matrix),
    /// `batched` (gesvdjBatched, m and n at most 32), `approximate` (gesvdaStridedBatched), or
    /// `automatic`: the fastest exact one, measured.
    Backend backend = Backend::automatic;
    /// Backend::approximate only: how many singular values (and vectors) are computed, 1 to
    /// min(m, n); 0 means min(m, n).
    std::int64_t rank = 0;
    /// Where workspace comes from (default: the device's memory pool), one area per stream.
    std::shared_ptr<core::MemoryResource> memory_resource = nullptr;
};

/// The precision of the LU factorization inside a mixed-precision solve (RefinedSolve,
/// refined_solve): cuSOLVER factorizes in it (on tensor cores for f16, bf16 and tf32) and refines
/// the answer to the matrices' own precision. For complex matrices each names its complex
/// counterpart (f16 is cuSOLVER's CUSOLVER_C_16F, and so on).
enum class LowestPrecision : std::uint8_t {
    f16,   ///< IEEE half precision (11-bit significand, range ±65504).
    bf16,  ///< bfloat16 (8-bit significand, f32's range).
    tf32,  ///< TensorFloat-32 (11-bit significand, f32's range).
    f32,   ///< Single precision.
    f64    ///< Double precision: f64 and c64 matrices only (a plain LU with refinement).
};

/// Number of LowestPrecision enumerators.
inline constexpr int lowest_precision_count = 5;

/// "f16", "bf16", "tf32", "f32" or "f64" ("?" for a value that is not an enumerator).
[[nodiscard]] constexpr std::string_view to_string(LowestPrecision p) noexcept {
    switch (p) {
        case LowestPrecision::f16:
            return "f16";
        case LowestPrecision::bf16:
            return "bf16";
        case LowestPrecision::tf32:
            return "tf32";
        case LowestPrecision::f32:
            return "f32";
        case LowestPrecision::f64:
            return "f64";
    }
    return "?";
}

/// How a mixed-precision solve refines its answer (cuSOLVER's cusolverIRSRefinement_t).
enum class Refinement : std::uint8_t {
    /// `gmres` for one right-hand side, `classical` for more.
    automatic,
    /// Classical iterative refinement, as LAPACK's dsgesv.
    classical,
    /// GMRES preconditioned by the low-precision LU (one right-hand side only).
    gmres,
    /// Classical outer iterations, GMRES inner ones (one right-hand side only).
    classical_gmres,
    /// GMRES outer and inner iterations (one right-hand side only).
    gmres_gmres
};

/// Number of Refinement enumerators.
inline constexpr int refinement_count = 5;

/// "automatic", "classical", "gmres", "classical_gmres" or "gmres_gmres" ("?" otherwise).
[[nodiscard]] constexpr std::string_view to_string(Refinement r) noexcept {
    switch (r) {
        case Refinement::automatic:
            return "automatic";
        case Refinement::classical:
            return "classical";
        case Refinement::gmres:
            return "gmres";
        case Refinement::classical_gmres:
            return "classical_gmres";
        case Refinement::gmres_gmres:
            return "gmres_gmres";
    }
    return "?";
}

/// Options of a mixed-precision solve (RefinedSolve, refined_solve).
struct RefinedSolveOptions {
    /// The precision the LU factorization runs in. The default, f16, is the fastest on tensor
    /// cores and converges for well-conditioned matrices whose entries fit f16's range; bf16 and
    /// tf32 keep f32's range, f32 is the classic mixed-precision solve.
    LowestPrecision lowest = LowestPrecision::f16;
    /// How the answer is refined.
    Refinement refinement = Refinement::automatic;
    /// Most refinement iterations (outer and inner together), at least 1; cuSOLVER's default is 50.
    int max_iterations = 50;
    /// The refinement's stopping tolerance; 0 keeps cuSOLVER's default, LAPACK's test
    /// ‖r‖∞ < √n·‖x‖∞·‖A‖∞·ε of the matrices' own precision.
    double tolerance = 0.0;
    /// When the refinement does not converge, solve again by LU in the matrices' own precision
    /// (cuSOLVER's default); when false, x is what the refinement reached.
    bool fallback = true;
    /// Where workspace comes from (default: the device's memory pool), one area per stream.
    std::shared_ptr<core::MemoryResource> memory_resource = nullptr;
};

/// Options of a truncated randomized SVD (TruncatedSVD).
struct TruncatedSVDOptions {
    /// Extra random directions sampled beyond the rank k; -1 (default) takes min(10, min(m, n) - k).
    /// k + oversampling must not exceed min(m, n).
    std::int64_t oversampling = -1;
    /// Power iterations, 0 or more: more sharpen a slowly decaying spectrum, at one pass over A each.
    std::int64_t power_iterations = 2;
    /// Compute U and Vᴴ as well as the singular values.
    bool vectors = true;
    /// Where workspace comes from (default: the device's memory pool), one area per stream.
    std::shared_ptr<core::MemoryResource> memory_resource = nullptr;
};

}  // namespace gpumath::linalg
