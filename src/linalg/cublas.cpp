// SPDX-License-Identifier: Apache-2.0
// cuBLAS handles, statuses and the triangular solve (linalg/cublas.hpp).
#include "linalg/cublas.hpp"

#include <fmt/format.h>

#include <gpumath/error.hpp>
#include "detail/status.hpp"
#include "detail/handle_pool.hpp"

namespace gpumath::detail {

void check_blas(cublasStatus_t status, const char* api, std::string_view context) {
    if (status == CUBLAS_STATUS_SUCCESS) [[likely]]
        return;
    throw CublasError(status_message(api, cublasGetStatusName(status), int(status), context), int(status), api);
}

namespace {

using BlasHandles = StreamBound<cublasHandle_t>;

}  // namespace

BlasHandle::BlasHandle(int device, cudaStream_t stream) : device_(device) {
    BlasHandles taken = HandlePool<BlasHandles>::of(device).take("creating a cuBLAS handle", [&] {
        cublasHandle_t h = nullptr;
        check_blas(cublasCreate(&h), "cublasCreate", fmt::format("creating a cuBLAS handle on device {}", device));
        return BlasHandles{.handle = h};
    });
    handle_ = taken.handle;
    if (taken.stream != stream) {
        if (const cublasStatus_t s = cublasSetStream(handle_, stream); s != CUBLAS_STATUS_SUCCESS) {
            HandlePool<BlasHandles>::of(device_).give_back(taken);
            check_blas(s, "cublasSetStream", "setting a cuBLAS handle's stream");
        }
    }
    stream_ = stream;
}

BlasHandle::~BlasHandle() { HandlePool<BlasHandles>::of(device_).give_back({.handle = handle_, .stream = stream_}); }

void trsm(cublasHandle_t handle, DataType type, cublasSideMode_t side, cublasFillMode_t fill, cublasOperation_t op,
          int m, int n, const void* a, int lda, void* b, int ldb) {
    const cublasDiagType_t diag = CUBLAS_DIAG_NON_UNIT;
    cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
    const char* api = "cublasStrsm";
    switch (type) {
        case DataType::f64: {
            const double one = 1;
            api = "cublasDtrsm";
            s = cublasDtrsm(handle, side, fill, op, diag, m, n, &one, static_cast<const double*>(a), lda,
                            static_cast<double*>(b), ldb);
            break;
        }
        case DataType::c32: {
            const cuComplex one{1, 0};
            api = "cublasCtrsm";
            s = cublasCtrsm(handle, side, fill, op, diag, m, n, &one, static_cast<const cuComplex*>(a), lda,
                            static_cast<cuComplex*>(b), ldb);
            break;
        }
        case DataType::c64: {
            const cuDoubleComplex one{1, 0};
            api = "cublasZtrsm";
            s = cublasZtrsm(handle, side, fill, op, diag, m, n, &one, static_cast<const cuDoubleComplex*>(a), lda,
                            static_cast<cuDoubleComplex*>(b), ldb);
            break;
        }
        default: {
            const float one = 1;
            s = cublasStrsm(handle, side, fill, op, diag, m, n, &one, static_cast<const float*>(a), lda,
                            static_cast<float*>(b), ldb);
            break;
        }
    }
    check_blas(s, api, "a triangular solve with R");
}

}  // namespace gpumath::detail
