// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: the type table (inputs, compute types, results, cuBLASLt compute and scale
// types) and the types stage.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include <cublasLt.h>

#include "matmul/problem.hpp"

namespace gpumath::detail {

/// The CUDA C++ spelling of an element of `t` in run-time compiled kernels ("__half",
/// "__nv_bfloat16", "float"); null for the other types.
[[nodiscard]] const char* cuda_element_type(DataType t) noexcept;

/// One row of the type table: inputs of `input` computed with `compute`. An input's first row
/// is its `automatic` compute type; results[0] of that row is its default result type.
struct TypeRule {
    DataType input;
    ComputeType compute;
    cublasComputeType_t lt_compute;
    cudaDataType_t scale_type;  // of alpha and beta
    std::array<DataType, 5> results;
    std::uint8_t result_count;
};

namespace type_table {
using enum DataType;
using C = ComputeType;
// FP8 rows: an e5m2 result needs an e5m2 input (e4m3 x e4m3 products give no e5m2); see allowed_results.
inline constexpr TypeRule rows[] = {
    {f16, C::f32, CUBLAS_COMPUTE_32F, CUDA_R_32F, {f16, f32}, 2},
    {f16, C::f16, CUBLAS_COMPUTE_16F, CUDA_R_16F, {f16}, 1},
    {bf16, C::f32, CUBLAS_COMPUTE_32F, CUDA_R_32F, {bf16, f32}, 2},
    {f32, C::f32, CUBLAS_COMPUTE_32F, CUDA_R_32F, {f32}, 1},
    {f32, C::f32_fast_f16, CUBLAS_COMPUTE_32F_FAST_16F, CUDA_R_32F, {f32}, 1},
    {f32, C::f32_fast_bf16, CUBLAS_COMPUTE_32F_FAST_16BF, CUDA_R_32F, {f32}, 1},
    {f32, C::f32_fast_tf32, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, {f32}, 1},
    {c32, C::f32, CUBLAS_COMPUTE_32F, CUDA_C_32F, {c32}, 1},
    {c32, C::f32_fast_f16, CUBLAS_COMPUTE_32F_FAST_16F, CUDA_C_32F, {c32}, 1},
    {c32, C::f32_fast_bf16, CUBLAS_COMPUTE_32F_FAST_16BF, CUDA_C_32F, {c32}, 1},
    {c32, C::f32_fast_tf32, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_C_32F, {c32}, 1},
    {f64, C::f64, CUBLAS_COMPUTE_64F, CUDA_R_64F, {f64}, 1},
    {c64, C::f64, CUBLAS_COMPUTE_64F, CUDA_C_64F, {c64}, 1},
    {i8, C::i32, CUBLAS_COMPUTE_32I, CUDA_R_32I, {i32}, 1},
    {e4m3, C::f32, CUBLAS_COMPUTE_32F, CUDA_R_32F, {bf16, f16, f32, e4m3, e5m2}, 5},
    {e5m2, C::f32, CUBLAS_COMPUTE_32F, CUDA_R_32F, {bf16, f16, f32, e4m3, e5m2}, 5},
};
}  // namespace type_table

/// The rows of inputs of type `input` (empty for a type that is no matmul input).
[[nodiscard]] std::span<const TypeRule> type_rules(DataType input) noexcept;

/// The default result type of `input` inputs; nullopt for a type that is no matmul input.
[[nodiscard]] std::optional<DataType> default_result(DataType input) noexcept;

/// The bias type of products of `input` inputs with a `result` D when the call names no C or bias:
/// D's type, but for FP8 inputs bf16 (f16 with an f16 D), as cuBLASLt's FP8 table has it.
[[nodiscard]] DataType default_bias_type(DataType input, DataType result) noexcept;

/// The row of `input` computed with `compute` (which the types stage has checked).
[[nodiscard]] const TypeRule& type_rule(DataType input, ComputeType compute) noexcept;

/// Stage: inputs, compute type, result type, C and bias types (FP8's bf16/f16 rule) and fast
/// accumulation.
[[nodiscard]] ProblemTypes types_stage(const MatmulSignature& sig, const MatmulOptions& options, const char* api);

}  // namespace gpumath::detail
