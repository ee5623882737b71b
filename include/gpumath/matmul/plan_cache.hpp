// SPDX-License-Identifier: Apache-2.0
// Controls of the plan cache behind the stateless gpumath::matmul().
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpumath {

/// The process-wide, thread-safe LRU cache of plans behind `gpumath::matmul()`. A plan is keyed by
/// device, layouts, dtypes, pointer alignment classes, options and epilog; a hit skips validation,
/// descriptor creation and cuBLASLt's heuristics.
class MatmulPlanCache {
public:
    /// Hit, miss and eviction counters plus the current size and capacity.
    struct Stats {
        std::uint64_t hits = 0;
        std::uint64_t misses = 0;
        std::uint64_t evictions = 0;
        std::size_t size = 0;
        std::size_t capacity = 0;
    };

    /// Capacity when the process starts.
    static constexpr std::size_t default_capacity = 512;

    /// Most plans kept.
    [[nodiscard]] static std::size_t capacity();
    /// Changes the capacity, evicting least recently used plans as needed; 0 keeps none (every
    /// call plans anew).
    static void set_capacity(std::size_t capacity);
    /// Drops every plan (plans in use by a running call stay alive until it returns). Counters stay.
    static void clear();
    /// The counters.
    [[nodiscard]] static Stats stats();
    /// Zeroes the hit, miss and eviction counters.
    static void reset_stats();
};

}  // namespace gpumath
