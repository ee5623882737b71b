// SPDX-License-Identifier: Apache-2.0
// cuSOLVER handles, statuses and types (linalg/cusolver.hpp).
#include "linalg/cusolver.hpp"

#include <utility>

#include <fmt/format.h>

#include <gpumath/error.hpp>
#include "detail/status.hpp"
#include "detail/handle_pool.hpp"

namespace gpumath::detail {
namespace {

using SolverHandles = StreamBound<std::pair<cusolverDnHandle_t, cusolverDnParams_t>>;

/// A new cuSOLVER handle of `device` (current) with default parameters, on the null stream.
SolverHandles make_solver_handle(int device) {
    cusolverDnHandle_t handle = nullptr;
    check_cusolver(cusolverDnCreate(&handle), "cusolverDnCreate",
                   fmt::format("creating a cuSOLVER handle on device {}", device));
    cusolverDnParams_t params = nullptr;
    if (const cusolverStatus_t s = cusolverDnCreateParams(&params); s != CUSOLVER_STATUS_SUCCESS) {
        (void)cusolverDnDestroy(handle);
        check_cusolver(s, "cusolverDnCreateParams", "creating cuSOLVER's parameters");
    }
    return {.handle = {handle, params}};
}

}  // namespace

void throw_cusolver(int status, const char* api, std::string_view context) {
    throw CusolverError(status_message(api, cusolver_status_name(status), status, context), status, api);
}

std::string_view cusolver_status_name(int status) noexcept {
    switch (status) {
        case CUSOLVER_STATUS_SUCCESS:
            return "CUSOLVER_STATUS_SUCCESS";
        case CUSOLVER_STATUS_NOT_INITIALIZED:
            return "CUSOLVER_STATUS_NOT_INITIALIZED";
        case CUSOLVER_STATUS_ALLOC_FAILED:
            return "CUSOLVER_STATUS_ALLOC_FAILED";
        case CUSOLVER_STATUS_INVALID_VALUE:
            return "CUSOLVER_STATUS_INVALID_VALUE";
        case CUSOLVER_STATUS_ARCH_MISMATCH:
            return "CUSOLVER_STATUS_ARCH_MISMATCH";
        case CUSOLVER_STATUS_MAPPING_ERROR:
            return "CUSOLVER_STATUS_MAPPING_ERROR";
        case CUSOLVER_STATUS_EXECUTION_FAILED:
            return "CUSOLVER_STATUS_EXECUTION_FAILED";
        case CUSOLVER_STATUS_INTERNAL_ERROR:
            return "CUSOLVER_STATUS_INTERNAL_ERROR";
        case CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED:
            return "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED";
        case CUSOLVER_STATUS_NOT_SUPPORTED:
            return "CUSOLVER_STATUS_NOT_SUPPORTED";
        case CUSOLVER_STATUS_ZERO_PIVOT:
            return "CUSOLVER_STATUS_ZERO_PIVOT";
        case CUSOLVER_STATUS_INVALID_LICENSE:
            return "CUSOLVER_STATUS_INVALID_LICENSE";
        case CUSOLVER_STATUS_INVALID_WORKSPACE:
            return "CUSOLVER_STATUS_INVALID_WORKSPACE";
        default:
            return "CUSOLVER_STATUS_UNKNOWN";
    }
}

DataType real_of(DataType t) noexcept {
    return t == DataType::f64 || t == DataType::c64 ? DataType::f64 : DataType::f32;
}

cublasFillMode_t fill_mode(linalg::Triangle t, bool row_major) noexcept {
    const bool lower = (t == linalg::Triangle::lower) != row_major;
    return lower ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
}

SolverHandle::SolverHandle(int device, cudaStream_t stream) : device_(device) {
    const SolverHandles taken = HandlePool<SolverHandles>::of(device).take("creating a cuSOLVER handle",
                                                                           [&] { return make_solver_handle(device); });
    std::tie(handle_, params_) = taken.handle;
    stream_ = taken.stream;
    try {
        set_stream(stream);
    } catch (...) {
        HandlePool<SolverHandles>::of(device_).give_back({.handle = {handle_, params_}, .stream = stream_});
        throw;
    }
}

SolverHandle::~SolverHandle() {
    HandlePool<SolverHandles>::of(device_).give_back({.handle = {handle_, params_}, .stream = stream_});
}

void SolverHandle::set_stream(cudaStream_t stream) {
    if (stream == stream_) return;
    check_cusolver(cusolverDnSetStream(handle_, stream), "cusolverDnSetStream", "setting a cuSOLVER handle's stream");
    stream_ = stream;
}

}  // namespace gpumath::detail
