// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: the cublas backend of grouped products, cuBLAS's
// cublasGemmGroupedBatchedEx: every group's product in one call, from the arrangement of each
// group's cuBLASLt plan (the same operand order, transposes and leading dimensions).
#pragma once

#include <memory>
#include <span>
#include <string>

#include <gpumath/core/object_code.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/types.hpp>

#include "matmul/internal.hpp"

namespace gpumath::detail {

struct GroupOperands;

/// Why cublasGemmGroupedBatchedEx cannot run a product planned as `P` (empty when it can): it has
/// no epilogs, no C, no batch and no FP8, takes f16, bf16 and f32 inputs each into its own type,
/// and a 32-bit float compute type.
[[nodiscard]] std::string cublas_grouped_refusal(const MatmulProblem& P);
/// cublas_grouped_refusal(P).empty(), without building a message (for every automatic call).
[[nodiscard]] bool cublas_grouped_runs(const MatmulProblem& P) noexcept;

/// Makes the cublas backend's per-device state (cuBLAS handle, pointer kernel) if not made yet.
void prepare_cublas(int device);

/// The kernel that writes cuBLAS's arrays of device pointers, compiled for `arch` ("sm_90").
[[nodiscard]] core::ObjectCode compile_pointer_kernel(const std::string& arch);

/// Largest group count of one cublasGemmGroupedBatchedEx call gpumath makes (more groups take
/// several calls).
inline constexpr std::size_t cublas_groups_per_call = 128;

/// The products of `groups` (their plans in `plans`, each accepted by cublas_grouped_refusal) with
/// cublasGemmGroupedBatchedEx on `stream`: the device arrays of pointers it needs are written by a
/// run-time compiled kernel from its launch parameters (so a capture records them), into the
/// stream's workspace next to cuBLAS's own. Host-side sizes; nothing allocated while capturing.
void enqueue_cublas(std::span<const GroupOperands> groups, std::span<const std::shared_ptr<MatmulPlan>> plans,
                    const Scalar& alpha, core::StreamRef stream, int device);

}  // namespace gpumath::detail
