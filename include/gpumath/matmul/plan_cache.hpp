// SPDX-License-Identifier: Apache-2.0
/// @file
/// Controls of the plan cache behind the stateless gpumath::matmul().
#pragma once

#include <cstddef>

#include <gpumath/core/cache.hpp>

namespace gpumath {

/// The process-wide, thread-safe LRU cache of plans behind `gpumath::matmul()`, reached through
/// `matmul_plan_cache()`. A plan is keyed by device, layouts, dtypes, pointer alignment classes,
/// options and epilog; a hit skips validation, descriptor creation and cuBLASLt's heuristics.
/// Counters as core::CacheStats (the disk counters stay zero).
class MatmulPlanCache final : public detail::PlanCacheControl {
public:
    /// Capacity when the process starts, in plans.
    static constexpr std::size_t default_capacity = 512;

    MatmulPlanCache(const MatmulPlanCache&) = delete;
    MatmulPlanCache& operator=(const MatmulPlanCache&) = delete;
    MatmulPlanCache(MatmulPlanCache&&) = delete;
    MatmulPlanCache& operator=(MatmulPlanCache&&) = delete;

private:
    friend MatmulPlanCache& matmul_plan_cache();
    MatmulPlanCache();
    ~MatmulPlanCache() = default;
};

/// The process-wide matmul plan cache.
[[nodiscard]] MatmulPlanCache& matmul_plan_cache();

}  // namespace gpumath
