// SPDX-License-Identifier: Apache-2.0
// Private to src/linalg: cuSOLVER handles (a per-device pool, one handle per concurrent caller),
// status checks, and the mapping of gpumath's dtypes to cuSOLVER's.
#pragma once

#include <climits>
#include <cstdint>
#include <string_view>

#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#include <gpumath/linalg/options.hpp>
#include <gpumath/types.hpp>

namespace gpumath::detail {

/// Throws CusolverError naming cuSOLVER's status, `api` and `context`.
[[noreturn]] void throw_cusolver(int status, const char* api, std::string_view context);

/// True when `v` fits the int sizes of cuSOLVER's legacy routines and cuBLAS's batched ones.
[[nodiscard]] constexpr bool fits_int(std::int64_t v) noexcept { return v <= INT_MAX; }

/// Throws CusolverError unless `status` is CUSOLVER_STATUS_SUCCESS.
inline void check_cusolver(cusolverStatus_t status, const char* api, std::string_view context) {
    if (status != CUSOLVER_STATUS_SUCCESS) [[unlikely]]
        throw_cusolver(int(status), api, context);
}

/// The name of a cusolverStatus_t ("CUSOLVER_STATUS_INVALID_VALUE"), "CUSOLVER_STATUS_<n>" past the
/// ones CUDA 13.0 defines.
[[nodiscard]] std::string_view cusolver_status_name(int status) noexcept;

/// The real dtype of `t` (f32 for f32 and c32, f64 for f64 and c64).
[[nodiscard]] DataType real_of(DataType t) noexcept;

/// cuSOLVER's fill mode for `t`, flipped when the matrix is stored row-major (a row-major A is Aᵀ
/// in column-major order, whose lower triangle is A's upper one).
[[nodiscard]] cublasFillMode_t fill_mode(linalg::Triangle t, bool row_major) noexcept;

/// A cuSOLVER handle of `device` set to `stream`, with default 64-bit API parameters, taken from the
/// device's pool for the lease and given back afterwards. Handles are made on demand (in relaxed
/// capture mode: a caller's capture may be under way) and never destroyed (work may be in flight at
/// exit). The device must be current.
class SolverHandle {
public:
    SolverHandle(int device, cudaStream_t stream);
    ~SolverHandle();
    SolverHandle(const SolverHandle&) = delete;
    SolverHandle& operator=(const SolverHandle&) = delete;
    SolverHandle(SolverHandle&&) = delete;
    SolverHandle& operator=(SolverHandle&&) = delete;

    [[nodiscard]] cusolverDnHandle_t get() const noexcept { return handle_; }
    [[nodiscard]] cusolverDnParams_t params() const noexcept { return params_; }
    /// Sets the handle's stream (for work spread over side streams); skipped when it has it.
    void set_stream(cudaStream_t stream);

private:
    int device_;
    cusolverDnHandle_t handle_ = nullptr;
    cusolverDnParams_t params_ = nullptr;
    cudaStream_t stream_ = nullptr;  // the stream set on the handle
};

}  // namespace gpumath::detail
