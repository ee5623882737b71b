// SPDX-License-Identifier: Apache-2.0
// Private to src/linalg: the state of an LU plan (used by the plan and the stateless solve, inv
// and det), and cuBLAS's batched LU routines that Backend::batched runs.
#pragma once

#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <cublas_v2.h>

#include <gpumath/core/stream.hpp>
#include <gpumath/linalg/lu.hpp>

#include "core/stream_workspace.hpp"
#include "linalg/matrices.hpp"
#include "linalg/plan_state.hpp"

namespace gpumath::detail {

struct LUImpl final : PlanState {
    SquareBatch batch;
    linalg::LUOptions options;
    TensorLayout pivots_layout;                            // i32 (..., n)
    linalg::Backend backend = linalg::Backend::automatic;  // the chosen one once planned
    std::size_t device_bytes = 0;  // Xgetrf's device workspace per matrix in flight, leading dimension n
    std::size_t host_bytes = 0;

    void plan_locked() override;
    /// The factorization of checked operands with `with` (planned): `lu` stored as `s` (direct),
    /// 32-bit `pivots`.
    void factorize(linalg::Backend with, const TensorView& a, const TensorView& lu, const Storage& s, int* pivots,
                   int* info, core::StreamRef stream);
    /// The solve of checked operands with `with` (planned, looped or batched): factors `lu` stored
    /// as `fs` (direct), 32-bit `pivots`, right-hand sides `b` into `x` as `r` says.
    void solve(linalg::Backend with, const TensorView& lu, const Storage& fs, const int* pivots, const TensorView& b,
               const TensorView& x, const RightHandSides& r, core::StreamRef stream);
};

/// cublas<t>getrfBatched of `type` (f32, f64, c32, c64) on `stream`: the `count` column-major n×n
/// matrices whose addresses are the device array `matrices`, leading dimension `ld`, factorized in
/// place with 1-based pivots (`n` per matrix, one after another) and one info per matrix, both on
/// the device. CublasError on failure.
void getrf_batched(int device, DataType type, int n, void* const* matrices, int ld, int* pivots, int* info, int count,
                   core::StreamRef stream);

/// cublas<t>getrsBatched on `stream`: op(A)·X = B for the factors getrf_batched wrote (the device
/// arrays `factors` and `rhs` hold each matrix's address; B is n × k, leading dimension `ldb`,
/// overwritten by X). cuBLAS reports refused arguments through a host int at the call, checked
/// here (InvalidArgument), without waiting for the GPU. CublasError on failure.
void getrs_batched(int device, DataType type, cublasOperation_t op, int n, int k, const void* const* factors, int ld,
                   const int* pivots, void* const* rhs, int ldb, int count, core::StreamRef stream);

}  // namespace gpumath::detail
