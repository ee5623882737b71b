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

namespace gpumath::detail {

struct LUImpl {
    SquareBatch batch;
    linalg::LUOptions options;
    TensorLayout pivots_layout;  // i32 (..., n)
    std::atomic<bool> planned{false};
    std::mutex mutex;       // planning
    std::mutex host_mutex;  // the host workspaces while a call enqueues (planning measures through it)
    int device = -1;
    std::size_t device_bytes = 0;  // Xgetrf's device workspace per matrix in flight, leading dimension n
    std::size_t host_bytes = 0;
    std::vector<std::vector<std::byte>> host;  // per lane
    std::shared_ptr<StreamWorkspace> workspace;

    /// Plans on the current device (under `mutex`).
    void plan_locked();
    /// Plans if needed; InvalidArgument naming `api` when another device is current.
    void ensure_planned(const char* api);
    /// The factorization of checked operands: `lu` stored as `s` (direct), 32-bit `pivots`.
    void factorize(const TensorView& a, const TensorView& lu, const Storage& s, int* pivots, int* info,
                   core::StreamRef stream);
};

}  // namespace gpumath::detail
