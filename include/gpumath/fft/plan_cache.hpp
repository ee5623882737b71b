// SPDX-License-Identifier: Apache-2.0
// Controls of the plan cache behind fft/ifft/rfft/irfft.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpumath {

/// Counters of the FFT plan cache.
struct FFTPlanCacheStats {
    std::uint64_t hits = 0;       ///< calls that found their plan
    std::uint64_t misses = 0;     ///< calls that created a plan
    std::uint64_t evictions = 0;  ///< plans dropped to respect the capacity
    std::size_t size = 0;         ///< plans held now
    std::size_t capacity = 0;     ///< most plans held
};

/// The process-wide, thread-safe LRU cache of FFT plans used by fft/ifft/rfft/irfft. Keys are the
/// device, input and output layouts, kind and options (callbacks by content and user_info); the
/// stream is not part of the key: a plan serves every stream, its executions serialized for the
/// few microseconds of enqueueing, each stream with its own work area.
class FFTPlanCache {
public:
    /// Most plans kept (default 32). 0 disables caching: every call plans anew.
    [[nodiscard]] std::size_t capacity() const;
    /// Changes the capacity, dropping the least recently used plans as needed.
    void set_capacity(std::size_t plans);
    /// Drops every plan (plans still executing elsewhere finish first; cuFFT frees them).
    void clear();
    /// Hit/miss/eviction counters and size.
    [[nodiscard]] FFTPlanCacheStats stats() const;
    /// Zeroes the counters.
    void reset_stats();
    /// Frees the per-stream work areas that FFT and matmul plans without a memory resource of
    /// their own share (they grow again on demand). Blocking: synchronizes every device that has
    /// one first; no other thread may be issuing gpumath work meanwhile.
    void release_workspaces();

    FFTPlanCache(const FFTPlanCache&) = delete;
    FFTPlanCache& operator=(const FFTPlanCache&) = delete;
    FFTPlanCache(FFTPlanCache&&) = delete;
    FFTPlanCache& operator=(FFTPlanCache&&) = delete;
    ~FFTPlanCache() = default;

private:
    friend FFTPlanCache& fft_plan_cache();
    FFTPlanCache() = default;
};

/// The process-wide FFT plan cache.
[[nodiscard]] FFTPlanCache& fft_plan_cache();

}  // namespace gpumath
