// SPDX-License-Identifier: Apache-2.0
/// @file
/// Controls of the plan cache behind fft/ifft/rfft/irfft.
#pragma once

#include <cstddef>

#include <gpumath/core/cache.hpp>

namespace gpumath {

/// The process-wide, thread-safe LRU cache of FFT plans used by fft/ifft/rfft/irfft, reached
/// through `fft_plan_cache()`. Keys are the device, input and output layouts, kind and options
/// (callbacks by content and user_info); the stream is not part of the key: a plan serves every
/// stream, its executions serialized for the few microseconds of enqueueing, each stream with its
/// own work area. Counters as core::CacheStats (the disk counters stay zero). The work areas plans
/// share are freed by core::release_workspaces(). The controls (`capacity`, `set_capacity`,
/// `clear`, `stats`, `reset_stats`) are those of every plan cache (detail::PlanCacheControl).
class FFTPlanCache final : public detail::PlanCacheControl {
public:
    /// Capacity when the process starts, in plans.
    static constexpr std::size_t default_capacity = 32;

    FFTPlanCache(const FFTPlanCache&) = delete;
    FFTPlanCache& operator=(const FFTPlanCache&) = delete;
    FFTPlanCache(FFTPlanCache&&) = delete;
    FFTPlanCache& operator=(FFTPlanCache&&) = delete;

private:
    friend FFTPlanCache& fft_plan_cache();
    FFTPlanCache();
    ~FFTPlanCache() = default;
};

/// The process-wide FFT plan cache.
[[nodiscard]] FFTPlanCache& fft_plan_cache();

}  // namespace gpumath
