// SPDX-License-Identifier: Apache-2.0
/// @file
/// Options of the sparse products: which cuSPARSE algorithm runs a SpMV or an SpMM, how the sparse
/// operand is read, and where the plan's buffer comes from.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include <gpumath/core/memory.hpp>
#include <gpumath/sparse/operation.hpp>

namespace gpumath::sparse {

/// The cuSPARSE algorithm of a SpMV (y = α·op(A)·x + β·y). The numbered algorithms name the
/// format's own: alg1 is CUSPARSE_SPMV_CSR_ALG1 for CSR and CSC, CUSPARSE_SPMV_COO_ALG1 for COO and
/// CUSPARSE_SPMV_BSR_ALG1 for BSR; alg2 is CSR_ALG2 or COO_ALG2 (deterministic: the same result on
/// every run), and has no BSR counterpart.
enum class SpMVAlgorithm : std::uint8_t {
    /// The fastest of the format's numbered algorithms, measured once per (format, operation,
    /// rows, cols, nnz, dtypes, device) when a plan is planned and kept for the process (logged at
    /// info level). BSR has one algorithm, which is taken without measuring.
    automatic,
    /// CUSPARSE_SPMV_ALG_DEFAULT: cuSPARSE's own choice.
    library_default,
    /// The format's first algorithm (see the enum's description).
    alg1,
    /// The format's second algorithm, deterministic (CSR, CSC and COO only).
    alg2
};

/// Number of SpMVAlgorithm enumerators.
inline constexpr int spmv_algorithm_count = 4;

/// The cuSPARSE algorithm of an SpMM (C = α·op(A)·B + β·C). The numbered algorithms name the
/// format's own: for CSR and CSC alg1, alg2 and alg3 are CUSPARSE_SPMM_CSR_ALG1, ALG2 and ALG3; for
/// COO alg1 to alg4 are CUSPARSE_SPMM_COO_ALG1 to ALG4; for BSR alg1 is CUSPARSE_SPMM_BSR_ALG1.
/// cuSPARSE restricts some of them further (layouts, operations, batches); such a plan fails in
/// `plan()` with CusparseError.
enum class SpMMAlgorithm : std::uint8_t {
    /// The fastest of the format's numbered algorithms that cuSPARSE accepts for the plan, measured
    /// once per (format, operation, shapes, layouts, dtypes, device) when planning and kept for the
    /// process (logged at info level).
    automatic,
    /// CUSPARSE_SPMM_ALG_DEFAULT: cuSPARSE's own choice.
    library_default,
    /// The format's first algorithm.
    alg1,
    /// The format's second algorithm (CSR, CSC, COO).
    alg2,
    /// The format's third algorithm (CSR, CSC, COO).
    alg3,
    /// The format's fourth algorithm (COO only).
    alg4
};

/// Number of SpMMAlgorithm enumerators.
inline constexpr int spmm_algorithm_count = 6;

/// "automatic", "library_default", "alg1" or "alg2" ("unknown" for a value that is not an
/// enumerator).
[[nodiscard]] constexpr std::string_view to_string(SpMVAlgorithm a) noexcept {
    switch (a) {
        case SpMVAlgorithm::automatic:
            return "automatic";
        case SpMVAlgorithm::library_default:
            return "library_default";
        case SpMVAlgorithm::alg1:
            return "alg1";
        case SpMVAlgorithm::alg2:
            return "alg2";
    }
    return "unknown";
}

/// "automatic", "library_default", "alg1", "alg2", "alg3" or "alg4" ("unknown" for a value that is
/// not an enumerator).
[[nodiscard]] constexpr std::string_view to_string(SpMMAlgorithm a) noexcept {
    switch (a) {
        case SpMMAlgorithm::automatic:
            return "automatic";
        case SpMMAlgorithm::library_default:
            return "library_default";
        case SpMMAlgorithm::alg1:
            return "alg1";
        case SpMMAlgorithm::alg2:
            return "alg2";
        case SpMMAlgorithm::alg3:
            return "alg3";
        case SpMMAlgorithm::alg4:
            return "alg4";
    }
    return "unknown";
}

/// Options of a SpMV (SpMV, spmv).
struct SpMVOptions {
    /// op(A): A, Aᵀ or Aᴴ.
    Operation op = Operation::none;
    /// The cuSPARSE algorithm.
    SpMVAlgorithm algorithm = SpMVAlgorithm::automatic;
    /// Where the plan's buffer comes from (default: the device's memory pool).
    std::shared_ptr<core::MemoryResource> memory_resource = nullptr;
};

/// Options of an SpMM (SpMM, spmm).
struct SpMMOptions {
    /// op(A): A, Aᵀ or Aᴴ.
    Operation op = Operation::none;
    /// The cuSPARSE algorithm.
    SpMMAlgorithm algorithm = SpMMAlgorithm::automatic;
    /// Where the plan's buffer comes from (default: the device's memory pool).
    std::shared_ptr<core::MemoryResource> memory_resource = nullptr;
};

}  // namespace gpumath::sparse
