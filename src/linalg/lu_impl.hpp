// SPDX-License-Identifier: Apache-2.0
// Private to src/linalg: the state of an LU plan (used by the plan and the stateless solve, inv
// and det).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

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
};

}  // namespace gpumath::detail
