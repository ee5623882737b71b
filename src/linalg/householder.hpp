// SPDX-License-Identifier: Apache-2.0
// Private to src/linalg: cuSOLVER's Householder routines on one column-major matrix, by dtype:
// Xgeqrf (64-bit API) factorizes, <t>orgqr / <t>ungqr forms Q, <t>ormqr / <t>unmqr applies it.
// The last two are legacy routines of int sizes: callers check that theirs fit (fits_int).
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>

#include "linalg/cusolver.hpp"

namespace gpumath::detail {

/// NotSupported naming `api` when `value` (what `what` says) is above INT_MAX, the limit of the
/// legacy routine `routine`.
void check_int_size(std::int64_t value, const char* what, const char* routine, const char* api);

/// Xgeqrf's device and host workspace for an m × n matrix of `type`, leading dimension `ld`.
void geqrf_workspace(const SolverHandle& h, DataType type, std::int64_t m, std::int64_t n, std::int64_t ld,
                     std::size_t& device_bytes, std::size_t& host_bytes);

/// A = Q·R in place (R on and above the diagonal, the reflectors below, `tau` min(m, n) scalars).
void geqrf(const SolverHandle& h, DataType type, std::int64_t m, std::int64_t n, void* a, std::int64_t ld, void* tau,
           void* device_work, std::size_t device_bytes, void* host_work, std::size_t host_bytes, int* info);

/// <t>orgqr / <t>ungqr's workspace in bytes for the first n columns of Q (m × m) from k reflectors.
[[nodiscard]] std::size_t orgqr_workspace(const SolverHandle& h, DataType type, int m, int n, int k, const void* a,
                                          int lda, const void* tau);

/// The first n columns of Q in place of the reflectors in `a`'s first k columns.
void orgqr(const SolverHandle& h, DataType type, int m, int n, int k, void* a, int lda, const void* tau, void* work,
           std::size_t work_bytes, int* info);

/// <t>ormqr / <t>unmqr's workspace in bytes for C (m × n) and the k reflectors in `a`.
[[nodiscard]] std::size_t ormqr_workspace(const SolverHandle& h, DataType type, cublasSideMode_t side,
                                          cublasOperation_t op, int m, int n, int k, const void* a, int lda,
                                          const void* tau, const void* c, int ldc);

/// C := op(Q)·C (left) or C·op(Q) (right) in place, Q from the k reflectors in `a`; `op` is
/// CUBLAS_OP_N or the adjoint (given as CUBLAS_OP_C; real dtypes take it as CUBLAS_OP_T).
void ormqr(const SolverHandle& h, DataType type, cublasSideMode_t side, cublasOperation_t op, int m, int n, int k,
           const void* a, int lda, const void* tau, void* c, int ldc, void* work, std::size_t work_bytes, int* info);

}  // namespace gpumath::detail
