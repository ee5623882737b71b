// SPDX-License-Identifier: Apache-2.0
/// @file
/// How a sparse operation reads its sparse operand: as it is, transposed or conjugate-transposed.
#pragma once

#include <cstdint>
#include <string_view>

/// Sparse matrices on cuSPARSE and cuDSS: CSR, CSC, COO and BSR views and owning matrices, their
/// checks and conversions, products and triangular solves as plans, and a direct solver.
namespace gpumath::sparse {

/// op(A) of a sparse product or solve.
enum class Operation : std::uint8_t {
    none,                ///< A itself.
    transpose,           ///< Aᵀ.
    conjugate_transpose  ///< Aᴴ (Aᵀ for real values).
};

/// Number of Operation enumerators.
inline constexpr int operation_count = 3;

/// The enumerator's name ("none", "transpose", "conjugate_transpose"), or "unknown".
[[nodiscard]] constexpr std::string_view to_string(Operation op) noexcept {
    switch (op) {
        case Operation::none:
            return "none";
        case Operation::transpose:
            return "transpose";
        case Operation::conjugate_transpose:
            return "conjugate_transpose";
    }
    return "unknown";
}

}  // namespace gpumath::sparse
