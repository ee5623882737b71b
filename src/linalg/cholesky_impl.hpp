// SPDX-License-Identifier: Apache-2.0
// Private to src/linalg: the state of a Cholesky plan.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <gpumath/linalg/cholesky.hpp>

#include "core/stream_workspace.hpp"
#include "linalg/matrices.hpp"
#include "linalg/plan_state.hpp"

namespace gpumath::detail {

struct CholeskyImpl final : PlanState {
    SquareBatch batch;
    linalg::CholeskyOptions options;
    linalg::Backend backend = linalg::Backend::automatic;  // the chosen one once planned
    std::size_t device_bytes = 0;                          // Xpotrf's device workspace per matrix in flight, ld n
    std::size_t host_bytes = 0;                            // and host workspace

    void plan_locked() override;
    /// The factorization of the checked operands with `backend` (planned).
    void factorize(linalg::Backend with, const TensorView& a, const TensorView& factor, const TensorView& info,
                   core::StreamRef stream);
};

}  // namespace gpumath::detail
