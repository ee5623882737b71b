// SPDX-License-Identifier: Apache-2.0
/// @file
/// What gpumath's process-wide caches have in common: one counters struct and one control
/// interface, implemented by the matmul and FFT plan caches and the compile cache.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpumath::core {

/// Counters of one of gpumath's caches (`matmul_plan_cache()`, `fft_plan_cache()`,
/// `core::compile_cache()`). One struct serves all three: the disk counters belong to the compile
/// cache and stay zero for the plan caches, which keep nothing on disk. Lookups are counted since
/// the process started or the last `reset_stats()`; `hits + misses` is the number of lookups.
struct CacheStats {
    /// Lookups answered from memory, `waits` included.
    std::uint64_t hits = 0;
    /// Lookups not found in memory, which created the entry (built a plan; for the compile cache,
    /// read it from disk or ran NVRTC), failed creations included. For the compile cache
    /// `misses - disk_hits` is the number of compiles.
    std::uint64_t misses = 0;
    /// Entries dropped to respect the capacity.
    std::uint64_t evictions = 0;
    /// Hits that waited for another thread's creation of the same entry instead of creating it again.
    std::uint64_t waits = 0;
    /// Entries held in memory now.
    std::size_t size = 0;
    /// Most entries held in memory.
    std::size_t capacity = 0;
    /// Compile cache: misses answered from the disk cache (0 for the plan caches).
    std::uint64_t disk_hits = 0;
    /// Compile cache: entries written to disk (0 for the plan caches).
    std::uint64_t disk_writes = 0;
    /// Compile cache: disk entries ignored (corrupt, foreign, not a regular file), then rewritten (0 for the plan
    /// caches).
    std::uint64_t disk_rejected = 0;
};

/// The controls every gpumath cache offers: an in-memory LRU map of shared entries with a capacity,
/// counters, and clearing. The three caches are process-wide singletons reached the same way,
/// `matmul_plan_cache()`, `fft_plan_cache()` and `core::compile_cache()`, each returning its own
/// type derived from this one (the compile cache adds its disk controls), so code that only clears
/// or sizes caches can treat them alike. Thread-safe. Entries are shared: one dropped by `clear()`,
/// eviction or a smaller capacity stays alive while a running call still uses it.
class CacheControl {
public:
    /// Most entries kept in memory.
    [[nodiscard]] virtual std::size_t capacity() const = 0;
    /// Changes the capacity, evicting least recently used entries as needed; 0 keeps nothing (every
    /// lookup creates its entry anew, though threads missing the same entry at once share one creation).
    virtual void set_capacity(std::size_t entries) = 0;
    /// Drops every entry in memory. The counters stay.
    virtual void clear() = 0;
    /// The counters, with the current size and capacity.
    [[nodiscard]] virtual CacheStats stats() const = 0;
    /// Zeroes the counters (size and capacity are not counters).
    virtual void reset_stats() = 0;

    CacheControl(const CacheControl&) = delete;
    CacheControl& operator=(const CacheControl&) = delete;
    CacheControl(CacheControl&&) = delete;
    CacheControl& operator=(CacheControl&&) = delete;

protected:
    /// For the caches' own types.
    CacheControl() = default;
    /// The caches are never destroyed through this type (they live until the process exits).
    ~CacheControl() = default;
};

}  // namespace gpumath::core

namespace gpumath::detail {

/// The controls of gpumath's plan caches (`matmul_plan_cache()`, `fft_plan_cache()`,
/// `linalg::linalg_plan_cache()`, `dist::fft_plan_cache()`): one implementation, which forwards to
/// the cache's store inside the library. Not used directly: each cache's own class derives from it
/// and names its default capacity.
class PlanCacheControl : public core::CacheControl {
public:
    /// Most plans kept. 0 disables caching: every call plans anew.
    [[nodiscard]] std::size_t capacity() const override;
    /// Changes the capacity, dropping the least recently used plans as needed.
    void set_capacity(std::size_t plans) override;
    /// Drops every plan (plans in use by a running call stay alive until it returns). Counters stay.
    void clear() override;
    /// Hit, miss, eviction and wait counters, size and capacity.
    [[nodiscard]] core::CacheStats stats() const override;
    /// Zeroes the counters.
    void reset_stats() override;

    PlanCacheControl(const PlanCacheControl&) = delete;
    PlanCacheControl& operator=(const PlanCacheControl&) = delete;
    PlanCacheControl(PlanCacheControl&&) = delete;
    PlanCacheControl& operator=(PlanCacheControl&&) = delete;

protected:
    /// Controls of `store`, which lives as long as the process.
    explicit PlanCacheControl(core::CacheControl& store) noexcept : store_(&store) {}
    ~PlanCacheControl() = default;

private:
    core::CacheControl* store_;
};

}  // namespace gpumath::detail
