// SPDX-License-Identifier: Apache-2.0
/// @file
/// Controls of the plan cache behind fft/ifft/rfft/irfft.
#pragma once

#include <cstddef>

#include <gpumath/core/cache.hpp>

namespace gpumath {

namespace detail {

/// The controls of gpumath's FFT plan caches, `fft_plan_cache()` and `dist::fft_plan_cache()`:
/// one implementation, which forwards to the cache's store inside the library. Not used directly:
/// each cache's own class derives from it and names its default capacity.
class FFTPlanCacheControl : public core::CacheControl {
public:
    /// Most plans kept. 0 disables caching: every call plans anew.
    [[nodiscard]] std::size_t capacity() const override;
    /// Changes the capacity, dropping the least recently used plans as needed.
    void set_capacity(std::size_t plans) override;
    /// Drops every plan (plans still executing elsewhere finish first; cuFFT frees them).
    void clear() override;
    /// Hit, miss, eviction and wait counters, size and capacity.
    [[nodiscard]] core::CacheStats stats() const override;
    /// Zeroes the counters.
    void reset_stats() override;

    FFTPlanCacheControl(const FFTPlanCacheControl&) = delete;
    FFTPlanCacheControl& operator=(const FFTPlanCacheControl&) = delete;
    FFTPlanCacheControl(FFTPlanCacheControl&&) = delete;
    FFTPlanCacheControl& operator=(FFTPlanCacheControl&&) = delete;

protected:
    /// Controls of `store`, which lives as long as the process.
    explicit FFTPlanCacheControl(core::CacheControl& store) noexcept : store_(&store) {}
    ~FFTPlanCacheControl() = default;

private:
    core::CacheControl* store_;
};

}  // namespace detail

/// The process-wide, thread-safe LRU cache of FFT plans used by fft/ifft/rfft/irfft, reached
/// through `fft_plan_cache()`. Keys are the device, input and output layouts, kind and options
/// (callbacks by content and user_info); the stream is not part of the key: a plan serves every
/// stream, its executions serialized for the few microseconds of enqueueing, each stream with its
/// own work area. Counters as core::CacheStats (the disk counters stay zero). The work areas plans
/// share are freed by core::release_workspaces(). The controls (`capacity`, `set_capacity`,
/// `clear`, `stats`, `reset_stats`) are those of every FFT plan cache (detail::FFTPlanCacheControl).
class FFTPlanCache final : public detail::FFTPlanCacheControl {
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
