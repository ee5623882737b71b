// SPDX-License-Identifier: Apache-2.0
// Backend::batched for LU: cuBLAS's getrfBatched and getrsBatched over device pointer arrays.
#include <fmt/format.h>

#include "detail/status.hpp"
#include "linalg/cublas.hpp"
#include "linalg/lu_impl.hpp"

namespace gpumath::detail {
namespace {

template <class E>
E* const* as(void* const* ptrs) {
    return reinterpret_cast<E* const*>(ptrs);
}

template <class E>
const E* const* as_const(const void* const* ptrs) {
    return reinterpret_cast<const E* const*>(ptrs);
}

}  // namespace

void getrf_batched(int device, DataType type, int n, void* const* matrices, int ld, int* pivots, int* info, int count,
                   core::StreamRef stream) {
    const BlasHandle h(device, stream.handle());
    cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
    const char* api = "cublasSgetrfBatched";
    switch (type) {
        case DataType::f64:
            api = "cublasDgetrfBatched";
            s = cublasDgetrfBatched(h.get(), n, as<double>(matrices), ld, pivots, info, count);
            break;
        case DataType::c32:
            api = "cublasCgetrfBatched";
            s = cublasCgetrfBatched(h.get(), n, as<cuComplex>(matrices), ld, pivots, info, count);
            break;
        case DataType::c64:
            api = "cublasZgetrfBatched";
            s = cublasZgetrfBatched(h.get(), n, as<cuDoubleComplex>(matrices), ld, pivots, info, count);
            break;
        default:
            s = cublasSgetrfBatched(h.get(), n, as<float>(matrices), ld, pivots, info, count);
            break;
    }
    check_blas(s, api, "a batched LU factorization");
}

void getrs_batched(int device, DataType type, cublasOperation_t op, int n, int k, const void* const* factors, int ld,
                   const int* pivots, void* const* rhs, int ldb, int count, core::StreamRef stream) {
    const BlasHandle h(device, stream.handle());
    // getrsBatched's info is a host int: cuBLAS checks the arguments when called and writes it
    // then (the solve itself is stream work), so reading it right away waits for nothing.
    int info = 0;
    cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
    const char* api = "cublasSgetrsBatched";
    switch (type) {
        case DataType::f64:
            api = "cublasDgetrsBatched";
            s = cublasDgetrsBatched(h.get(), op, n, k, as_const<double>(factors), ld, pivots, as<double>(rhs), ldb,
                                    &info, count);
            break;
        case DataType::c32:
            api = "cublasCgetrsBatched";
            s = cublasCgetrsBatched(h.get(), op, n, k, as_const<cuComplex>(factors), ld, pivots, as<cuComplex>(rhs),
                                    ldb, &info, count);
            break;
        case DataType::c64:
            api = "cublasZgetrsBatched";
            s = cublasZgetrsBatched(h.get(), op, n, k, as_const<cuDoubleComplex>(factors), ld, pivots,
                                    as<cuDoubleComplex>(rhs), ldb, &info, count);
            break;
        default:
            s = cublasSgetrsBatched(h.get(), op, n, k, as_const<float>(factors), ld, pivots, as<float>(rhs), ldb, &info,
                                    count);
            break;
    }
    if (info < 0)
        throw_invalid(fmt::format("{} refused its argument {} (n {}, k {}, lda {}, ldb {}, batch {})", api, -info, n, k,
                                  ld, ldb, count),
                      "linalg::LU::solve");
    check_blas(s, api, "a batched LU solve");
}

}  // namespace gpumath::detail
