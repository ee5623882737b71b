// SPDX-License-Identifier: Apache-2.0
#include "linalg/plan_state.hpp"

#include <gpumath/core/device.hpp>

#include "detail/status.hpp"
#include "linalg/lanes.hpp"
#include "linalg/matrices.hpp"

namespace gpumath::detail {

void PlanState::plan() {
    if (planned.load(std::memory_order_acquire)) return;
    std::lock_guard lock(mutex);
    if (planned.load(std::memory_order_relaxed)) return;
    plan_locked();
    planned.store(true, std::memory_order_release);
}

void PlanState::ensure_planned(const char* api) {
    plan();
    check_plan_device(device, api);
}

void PlanState::start_planning(const std::shared_ptr<core::MemoryResource>& resource) {
    device = current_device();
    workspace = stream_workspace(device, resource);
}

void PlanState::size_host(std::size_t bytes) {
    host.assign(std::size_t(Lanes::max_lanes), std::vector<std::byte>(bytes));
}

}  // namespace gpumath::detail
