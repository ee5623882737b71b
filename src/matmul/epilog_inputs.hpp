// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: the epilog's inputs and outputs (bias, aux, bias gradient) against D.
#pragma once

#include <cstdint>

#include "matmul/problem.hpp"

namespace gpumath::detail {

/// How a bias of some shape broadcasts against D.
struct BiasShape {
    bool per_col = false;                       // (N,) / (1, N): one value per column of D
    bool per_row = false;                       // (M, 1): one value per row
    bool full = false;                          // (M, N)
    std::int64_t p = 1, q = 1, ps = 0, qs = 0;  // trailing extents and strides (rank 1 padded to (1, N))
};

/// The bias of a problem: its layout (the caller's, or the default of planning from layouts) and
/// shape. `present` is false when the epilog takes no bias.
struct BiasInput {
    bool present = false;
    TensorLayout layout;
    BiasShape shape;
};

/// Stage: the bias against D (shape, dtype, batch).
[[nodiscard]] BiasInput bias_stage(const MatmulSignature& sig, const TensorLayout& d, const ProblemShape& shape,
                                   const ProblemTypes& types, Epilog epilog, const char* api);

/// Stage, after the arrangement: the bias vector's packing and batch stride, the aux (ReLU bit mask
/// or GELU input, laid out over D as cuBLASLt sees it) and the bias gradient. Fills P.inputs and the
/// epilog strides of P.lt.
void epilog_vectors_stage(const MatmulSignature& sig, const BiasInput& bias, MatmulProblem& P);

}  // namespace gpumath::detail
