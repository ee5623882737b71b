// SPDX-License-Identifier: Apache-2.0
// Private to src/linalg: what every linalg plan keeps beside its own sizes. A plan is planned once
// (thread-safe, on first use or by plan()), on one device, with a host workspace per lane and the
// stream-ordered device workspace of its memory resource.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <gpumath/core/memory.hpp>

#include "core/stream_workspace.hpp"

namespace gpumath::detail {

struct PlanState {
    std::atomic<bool> planned{false};
    std::mutex mutex;       // planning
    std::mutex host_mutex;  // the host workspaces while a call enqueues (planning measures through it)
    int device = -1;
    std::vector<std::vector<std::byte>> host;  // per lane
    std::shared_ptr<StreamWorkspace> workspace;

    PlanState() = default;
    virtual ~PlanState() = default;
    PlanState(const PlanState&) = delete;
    PlanState& operator=(const PlanState&) = delete;
    PlanState(PlanState&&) = delete;
    PlanState& operator=(PlanState&&) = delete;

    /// Plans on the current device unless planned (idempotent, thread-safe).
    void plan();
    /// Plans if needed; InvalidArgument naming `api` when another device is current.
    void ensure_planned(const char* api);

protected:
    /// Takes the current device and `resource`'s workspace: the first step of every plan_locked.
    void start_planning(const std::shared_ptr<core::MemoryResource>& resource);
    /// Gives each lane `bytes` of host workspace.
    void size_host(std::size_t bytes);
    /// The plan's own sizes and choices, under `mutex` (once).
    virtual void plan_locked() = 0;
};

}  // namespace gpumath::detail
