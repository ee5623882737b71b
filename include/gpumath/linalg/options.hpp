// SPDX-License-Identifier: Apache-2.0
/// @file
/// Options of gpumath's dense linear algebra (gpumath::linalg): which triangle is read, which
/// backend runs a batch, and where workspace comes from.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include <gpumath/core/memory.hpp>

/// Dense linear algebra on cuSOLVER: Cholesky, LU and symmetric/Hermitian eigendecompositions as
/// plans and stateless calls, per-matrix `info` left on the device, batches run by measurement.
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
    /// cuSOLVER's batched routine: potrfBatched (Cholesky), XsyevBatched (eigh). Not offered for LU
    /// yet (NotSupported).
    batched,
    /// gpumath's own kernel, one matrix per warp, n ≤ 32 (Cholesky, LU, eigh by cyclic Jacobi; f32,
    /// f64, c32, c64): compiled at run time, works on the operands where they are (any strides, no
    /// copy, no workspace). NotSupported at plan construction for n > 32.
    warp
};

/// Number of Backend enumerators.
inline constexpr int backend_count = 4;

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

/// "automatic", "looped", "batched" or "warp" ("?" for a value that is not an enumerator).
[[nodiscard]] constexpr std::string_view to_string(Backend b) noexcept {
    switch (b) {
        case Backend::automatic:
            return "automatic";
        case Backend::looped:
            return "looped";
        case Backend::batched:
            return "batched";
        case Backend::warp:
            return "warp";
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
    /// How a batch runs: `looped`, `warp` (n ≤ 32), or `automatic`, which measures the two for a
    /// batch of matrices of n ≤ 32 and is `looped` otherwise; `batched` is NotSupported.
    Backend backend = Backend::automatic;
    /// Where workspace comes from (default: the device's memory pool), one area per stream.
    std::shared_ptr<core::MemoryResource> memory_resource = nullptr;
};

/// Options of a symmetric or Hermitian eigendecomposition (Eigh, eigh).
struct EighOptions {
    /// The triangle of A read.
    Triangle triangle = Triangle::lower;
    /// Compute the eigenvectors as well as the eigenvalues.
    bool vectors = true;
    /// How a batch runs.
    Backend backend = Backend::automatic;
    /// Where workspace comes from (default: the device's memory pool), one area per stream.
    std::shared_ptr<core::MemoryResource> memory_resource = nullptr;
};

}  // namespace gpumath::linalg
