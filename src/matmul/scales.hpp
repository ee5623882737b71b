// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: the finer FP8 scale modes (ScaleMode): the scale tensors' layouts, their
// validation and what they change in the arrangement (scale modes, swapped with the operands, and
// the per-product loop of batched problems).
#pragma once

#include <cstdint>
#include <span>

#include <gpumath/layout.hpp>
#include <gpumath/matmul/options.hpp>

#include "matmul/problem.hpp"

namespace gpumath::detail {

/// The f32 scale layout of `mode` for an operand seen as (*batch, rows, k) with its scale blocks
/// along k (operand a: rows = M; operand b: rows = N, the layout then transposed). Rank 0 for
/// `tensor`. The one source of the layouts that docs/matmul.md tables and quantize_fp8 writes.
[[nodiscard]] TensorLayout scale_layout(ScaleMode mode, std::span<const std::int64_t> batch, std::int64_t rows,
                                        std::int64_t k);

/// The scale layout an operand's scale tensor must have: `operand` is the user's a (..., M, K) or,
/// with `is_b`, b (..., K, N).
[[nodiscard]] TensorLayout expected_scale_layout(ScaleMode mode, const TensorLayout& operand, bool is_b);

/// cuBLASLt's cublasLtMatmulMatrixScale_t for a mode.
[[nodiscard]] std::int32_t lt_scale_mode(ScaleMode mode) noexcept;

/// Stage, after the arrangement and the epilog vectors: the scale modes and tensors checked against
/// the problem (FP8 inputs, the pairs, results and epilogs cuBLASLt takes with them, each tensor's
/// shape, strides and alignment); fills P.scales, P.lt's scale modes and, for a batched problem with
/// finer modes, P.lt.loop.
void scale_stage(const MatmulSignature& sig, MatmulProblem& P);

}  // namespace gpumath::detail
