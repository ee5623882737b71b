// SPDX-License-Identifier: Apache-2.0
// Private to src/linalg: cuBLAS handles (a per-device pool, like cuSOLVER's), status checks and the
// triangular solve that least squares ends with (cuSOLVER has none).
#pragma once

#include <string_view>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <gpumath/types.hpp>

namespace gpumath::detail {

/// Throws CublasError naming cuBLAS's status, `api` and `context` unless `status` is
/// CUBLAS_STATUS_SUCCESS. (detail::check_cublas is gpumath::matmul's, which names statuses through
/// cuBLASLt; linalg links cuBLAS alone.)
void check_blas(cublasStatus_t status, const char* api, std::string_view context);

/// A cuBLAS handle of `device` set to `stream`, taken from the device's pool for the lease and
/// given back afterwards; made on demand and never destroyed. The device must be current.
class BlasHandle {
public:
    BlasHandle(int device, cudaStream_t stream);
    ~BlasHandle();
    BlasHandle(const BlasHandle&) = delete;
    BlasHandle& operator=(const BlasHandle&) = delete;
    BlasHandle(BlasHandle&&) = delete;
    BlasHandle& operator=(BlasHandle&&) = delete;

    [[nodiscard]] cublasHandle_t get() const noexcept { return handle_; }

private:
    int device_;
    cublasHandle_t handle_ = nullptr;
    cudaStream_t stream_ = nullptr;  // the stream set on the handle
};

/// B := op(A)⁻¹·B (CUBLAS_SIDE_LEFT, B m × n) or B·op(A)⁻¹ (right) for a triangular A of `type`
/// (f32, f64, c32, c64), column-major, by cublas<t>trsm: a non-unit diagonal, alpha 1. Throws
/// CublasError.
void trsm(cublasHandle_t handle, DataType type, cublasSideMode_t side, cublasFillMode_t fill, cublasOperation_t op,
          int m, int n, const void* a, int lda, void* b, int ldb);

}  // namespace gpumath::detail
