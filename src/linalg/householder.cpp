// SPDX-License-Identifier: Apache-2.0
// cuSOLVER's Householder routines by dtype (linalg/householder.hpp).
#include "linalg/householder.hpp"

#include <algorithm>
#include <type_traits>

#include <fmt/format.h>

#include "detail/status.hpp"

namespace gpumath::detail {
namespace {

/// The element type of `type` as cuSOLVER's typed routines take it.
template <class F>
decltype(auto) typed(DataType type, F&& f) {
    switch (type) {
        case DataType::f64:
            return f(static_cast<double*>(nullptr));
        case DataType::c32:
            return f(static_cast<cuComplex*>(nullptr));
        case DataType::c64:
            return f(static_cast<cuDoubleComplex*>(nullptr));
        default:
            return f(static_cast<float*>(nullptr));
    }
}

/// A workspace of `bytes` in elements of `type`, as the legacy routines' int lwork.
int lwork_of(DataType type, std::size_t bytes) {
    return int(std::min<std::size_t>(bytes / size_of(type), std::size_t(INT_MAX)));
}

/// The adjoint as the routine of `type` wants it: CUBLAS_OP_T for real dtypes.
cublasOperation_t adjoint_for(DataType type, cublasOperation_t op) {
    const bool complex = type == DataType::c32 || type == DataType::c64;
    return op == CUBLAS_OP_N ? op : complex ? CUBLAS_OP_C : CUBLAS_OP_T;
}

const char* orgqr_name(DataType type) {
    switch (type) {
        case DataType::f64:
            return "cusolverDnDorgqr";
        case DataType::c32:
            return "cusolverDnCungqr";
        case DataType::c64:
            return "cusolverDnZungqr";
        default:
            return "cusolverDnSorgqr";
    }
}

const char* ormqr_name(DataType type) {
    switch (type) {
        case DataType::f64:
            return "cusolverDnDormqr";
        case DataType::c32:
            return "cusolverDnCunmqr";
        case DataType::c64:
            return "cusolverDnZunmqr";
        default:
            return "cusolverDnSormqr";
    }
}

}  // namespace

void check_int_size(std::int64_t value, const char* what, const char* routine, const char* api) {
    if (!fits_int(value))
        throw_not_supported(
            fmt::format("{} is {}, above INT_MAX ({}): {} takes int sizes", what, value, INT_MAX, routine), api);
}

void geqrf_workspace(const SolverHandle& h, DataType type, std::int64_t m, std::int64_t n, std::int64_t ld,
                     std::size_t& device_bytes, std::size_t& host_bytes) {
    const cudaDataType t = to_cuda(type);
    check_cusolver(cusolverDnXgeqrf_bufferSize(h.get(), h.params(), m, n, t, nullptr, ld, t, nullptr, t, &device_bytes,
                                               &host_bytes),
                   "cusolverDnXgeqrf_bufferSize", "sizing a QR factorization");
}

void geqrf(const SolverHandle& h, DataType type, std::int64_t m, std::int64_t n, void* a, std::int64_t ld, void* tau,
           void* device_work, std::size_t device_bytes, void* host_work, std::size_t host_bytes, int* info) {
    const cudaDataType t = to_cuda(type);
    check_cusolver(cusolverDnXgeqrf(h.get(), h.params(), m, n, t, a, ld, t, tau, t, device_work, device_bytes,
                                    host_work, host_bytes, info),
                   "cusolverDnXgeqrf", "a QR factorization");
}

std::size_t orgqr_workspace(const SolverHandle& h, DataType type, int m, int n, int k, const void* a, int lda,
                            const void* tau) {
    int lwork = 0;
    const cusolverStatus_t s = typed(type, [&]<class T>(T*) {
        const auto* at = static_cast<const T*>(a);
        const auto* tt = static_cast<const T*>(tau);
        if constexpr (std::is_same_v<T, float>)
            return cusolverDnSorgqr_bufferSize(h.get(), m, n, k, at, lda, tt, &lwork);
        else if constexpr (std::is_same_v<T, double>)
            return cusolverDnDorgqr_bufferSize(h.get(), m, n, k, at, lda, tt, &lwork);
        else if constexpr (std::is_same_v<T, cuComplex>)
            return cusolverDnCungqr_bufferSize(h.get(), m, n, k, at, lda, tt, &lwork);
        else return cusolverDnZungqr_bufferSize(h.get(), m, n, k, at, lda, tt, &lwork);
    });
    check_cusolver(s, "cusolverDn<t>orgqr_bufferSize", "sizing the forming of Q");
    return std::size_t(lwork) * size_of(type);
}

void orgqr(const SolverHandle& h, DataType type, int m, int n, int k, void* a, int lda, const void* tau, void* work,
           std::size_t work_bytes, int* info) {
    const int lwork = lwork_of(type, work_bytes);
    const cusolverStatus_t s = typed(type, [&]<class T>(T*) {
        auto* at = static_cast<T*>(a);
        const auto* tt = static_cast<const T*>(tau);
        auto* wt = static_cast<T*>(work);
        if constexpr (std::is_same_v<T, float>) return cusolverDnSorgqr(h.get(), m, n, k, at, lda, tt, wt, lwork, info);
        else if constexpr (std::is_same_v<T, double>)
            return cusolverDnDorgqr(h.get(), m, n, k, at, lda, tt, wt, lwork, info);
        else if constexpr (std::is_same_v<T, cuComplex>)
            return cusolverDnCungqr(h.get(), m, n, k, at, lda, tt, wt, lwork, info);
        else return cusolverDnZungqr(h.get(), m, n, k, at, lda, tt, wt, lwork, info);
    });
    check_cusolver(s, orgqr_name(type), "forming Q");
}

std::size_t ormqr_workspace(const SolverHandle& h, DataType type, cublasSideMode_t side, cublasOperation_t op, int m,
                            int n, int k, const void* a, int lda, const void* tau, const void* c, int ldc) {
    int lwork = 0;
    const cublasOperation_t o = adjoint_for(type, op);
    const cusolverStatus_t s = typed(type, [&]<class T>(T*) {
        const auto* at = static_cast<const T*>(a);
        const auto* tt = static_cast<const T*>(tau);
        const auto* ct = static_cast<const T*>(c);
        if constexpr (std::is_same_v<T, float>)
            return cusolverDnSormqr_bufferSize(h.get(), side, o, m, n, k, at, lda, tt, ct, ldc, &lwork);
        else if constexpr (std::is_same_v<T, double>)
            return cusolverDnDormqr_bufferSize(h.get(), side, o, m, n, k, at, lda, tt, ct, ldc, &lwork);
        else if constexpr (std::is_same_v<T, cuComplex>)
            return cusolverDnCunmqr_bufferSize(h.get(), side, o, m, n, k, at, lda, tt, ct, ldc, &lwork);
        else return cusolverDnZunmqr_bufferSize(h.get(), side, o, m, n, k, at, lda, tt, ct, ldc, &lwork);
    });
    check_cusolver(s, "cusolverDn<t>ormqr_bufferSize", "sizing the application of Q");
    return std::size_t(lwork) * size_of(type);
}

void ormqr(const SolverHandle& h, DataType type, cublasSideMode_t side, cublasOperation_t op, int m, int n, int k,
           const void* a, int lda, const void* tau, void* c, int ldc, void* work, std::size_t work_bytes, int* info) {
    const int lwork = lwork_of(type, work_bytes);
    const cublasOperation_t o = adjoint_for(type, op);
    const cusolverStatus_t s = typed(type, [&]<class T>(T*) {
        const auto* at = static_cast<const T*>(a);
        const auto* tt = static_cast<const T*>(tau);
        auto* ct = static_cast<T*>(c);
        auto* wt = static_cast<T*>(work);
        if constexpr (std::is_same_v<T, float>)
            return cusolverDnSormqr(h.get(), side, o, m, n, k, at, lda, tt, ct, ldc, wt, lwork, info);
        else if constexpr (std::is_same_v<T, double>)
            return cusolverDnDormqr(h.get(), side, o, m, n, k, at, lda, tt, ct, ldc, wt, lwork, info);
        else if constexpr (std::is_same_v<T, cuComplex>)
            return cusolverDnCunmqr(h.get(), side, o, m, n, k, at, lda, tt, ct, ldc, wt, lwork, info);
        else return cusolverDnZunmqr(h.get(), side, o, m, n, k, at, lda, tt, ct, ldc, wt, lwork, info);
    });
    check_cusolver(s, ormqr_name(type), "applying Q");
}

}  // namespace gpumath::detail
