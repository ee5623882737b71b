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
class MatmulPlanCache final : public core::CacheControl {
public:
    /// Capacity when the process starts, in plans.
    static constexpr std::size_t default_capacity = 512;

    /// Most plans kept.
    [[nodiscard]] std::size_t capacity() const override;
    /// Changes the capacity, evicting least recently used plans as needed; 0 keeps none (every
    /// call plans anew).
    void set_capacity(std::size_t plans) override;
    /// Drops every plan (plans in use by a running call stay alive until it returns). Counters stay.
    void clear() override;
    /// Hit, miss, eviction and wait counters, size and capacity.
    [[nodiscard]] core::CacheStats stats() const override;
    /// Zeroes the counters.
    void reset_stats() override;

    MatmulPlanCache(const MatmulPlanCache&) = delete;
    MatmulPlanCache& operator=(const MatmulPlanCache&) = delete;
    MatmulPlanCache(MatmulPlanCache&&) = delete;
    MatmulPlanCache& operator=(MatmulPlanCache&&) = delete;

private:
    friend MatmulPlanCache& matmul_plan_cache();
    MatmulPlanCache() = default;
    ~MatmulPlanCache() = default;
};

/// The process-wide matmul plan cache.
[[nodiscard]] MatmulPlanCache& matmul_plan_cache();

}  // namespace gpumath
