// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: the arrangement of a problem on cuBLASLt (swap, operations, leading
// dimensions, batch strides, C, the cuBLASLt epilogue).
#pragma once

#include "matmul/epilog_inputs.hpp"
#include "matmul/problem.hpp"

namespace gpumath::detail {

/// Stage: swap (D row-major) or not (D column-major), as the epilog inputs need; cuBLASLt's A, B,
/// C and D with their operations, leading dimensions and batch strides; a full bias as C. Fills
/// P.lt (but its epilogue) and P.inputs.c_from_bias. P.signature.d is the concrete D.
void arrangement_stage(const MatmulSignature& sig, const BiasInput& bias, MatmulProblem& P);

/// Stage, last: cuBLASLt's epilogue (bgrada/bgradb follow the swap) and the layouts that its
/// bias-gradient epilogues need.
void lt_epilog_stage(MatmulProblem& P);

}  // namespace gpumath::detail
