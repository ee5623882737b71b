// SPDX-License-Identifier: Apache-2.0
// Private to src/linalg: the Eigh plan's state. eigh.cpp runs all eigenvalues (syevd per matrix,
// XsyevBatched, syevjBatched or the warp kernel); eigh_range.cpp runs a range (Xsyevdx per matrix).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include <cusolverDn.h>

#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/linalg/options.hpp>

#include "linalg/cusolver.hpp"
#include "linalg/matrices.hpp"
#include "linalg/plan_state.hpp"

namespace gpumath::detail {

struct EighImpl final : PlanState {
    SquareBatch batch;
    linalg::EighOptions options;
    std::int64_t k = 0;           // eigenvalues computed per matrix: n, or last - first + 1 for an index range
    TensorLayout values_layout;   // (..., k) of the real dtype, row-major
    TensorLayout vectors_layout;  // (..., n, k) of A's dtype, row-major
    linalg::Backend backend = linalg::Backend::automatic;
    std::size_t single_bytes = 0, single_host = 0;    // Xsyevd (Xsyevdx for a range) per matrix, ld n
    std::size_t batched_bytes = 0, batched_host = 0;  // XsyevBatched for the whole batch
    std::size_t jacobi_bytes = 0;                     // syevjBatched for the whole batch
    int jacobi_lwork = 0;                             // the same in elements, as syevjBatched takes it
    syevjInfo_t jacobi_params = nullptr;              // made when jacobi_batched may run
    std::array<double, 2> bounds{};                   // (low, high] of a value range, f64
    std::array<float, 2> bounds32{};                  // and f32

    EighImpl() = default;
    ~EighImpl() override;
    EighImpl(const EighImpl&) = delete;
    EighImpl& operator=(const EighImpl&) = delete;
    EighImpl(EighImpl&&) = delete;
    EighImpl& operator=(EighImpl&&) = delete;

    [[nodiscard]] cusolverEigMode_t jobz() const noexcept {
        return options.vectors ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
    }

    void plan_locked() override;
    void run(linalg::Backend with, const TensorView& a, const TensorView& values, const TensorView& vectors,
             const TensorView& info, core::StreamRef stream);
    void execute(const char* api, const TensorView& a, const TensorView& values, const TensorView& vectors,
                 const TensorView& info, const TensorView& counts, core::StreamRef stream);

    // eigh_range.cpp
    /// Checks `options`' range against the batch (InvalidArgument / NotSupported naming `api`) and
    /// sets k, the layouts and the bounds.
    void set_range(const char* api);
    /// Xsyevdx's workspace for one matrix of leading dimension `ld`.
    void size_range(const SolverHandle& h, std::int64_t ld, std::size_t& device_bytes, std::size_t& host_bytes);
    /// The range's eigenvalues of every matrix, one Xsyevdx each on `stream` (blocks on the host);
    /// `counts`, when given, receives how many each matrix has.
    void run_range(const TensorView& a, const TensorView& values, const TensorView& vectors, const TensorView& info,
                   const TensorView& counts, core::StreamRef stream);
};

}  // namespace gpumath::detail
