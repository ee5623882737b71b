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

namespace gpumath::detail {

struct CholeskyImpl {
    SquareBatch batch;
    linalg::CholeskyOptions options;
    linalg::Backend backend = linalg::Backend::automatic;  // the chosen one once planned
    std::atomic<bool> planned{false};
    std::mutex mutex;       // planning
    std::mutex host_mutex;  // the host workspaces while a call enqueues (planning measures through it)
    int device = -1;
    std::size_t device_bytes = 0;              // Xpotrf's device workspace per matrix in flight, leading dimension n
    std::size_t host_bytes = 0;                // and host workspace
    std::vector<std::vector<std::byte>> host;  // per lane
    std::shared_ptr<StreamWorkspace> workspace;

    /// Plans on the current device (under `mutex`).
    void plan_locked();
    /// The factorization of the checked operands with `backend` (planned).
    void factorize(linalg::Backend with, const TensorView& a, const TensorView& factor, const TensorView& info,
                   core::StreamRef stream);
};

}  // namespace gpumath::detail
