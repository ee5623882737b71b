// SPDX-License-Identifier: Apache-2.0
// Private: a thread-safe LRU map of shared values, used by the plan and compile caches.
#pragma once

#include <cstddef>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <iterator>
#include <utility>

#include <gpumath/core/cache.hpp>

namespace gpumath::detail {

/// Thread-safe LRU map from Key to std::shared_ptr<Value>. Values are shared so that an entry
/// evicted while a caller still uses it stays alive until that caller lets go. Its counters are the
/// public core::CacheStats (hits, misses, evictions, waits, size, capacity; the disk counters are
/// left to the compile cache), so the caches hand them out as they are.
///
/// `get_or_create` is single-flight: creation runs outside the lock (plans and compiles take
/// milliseconds), and threads that miss a key another thread is creating wait for that creation
/// and get its value (counted as hits and as waits) instead of creating their own. When creation
/// throws, every thread waiting for it gets the same exception and nothing is stored; later calls
/// create again.
template <class Key, class Value, class Hash = std::hash<Key>, class Equal = std::equal_to<Key>>
class LruCache {
public:
    explicit LruCache(std::size_t capacity) : capacity_(capacity) {}

    /// The value for `key`, created by `make()` (returning std::shared_ptr<Value>) on a miss; see
    /// the class comment for concurrent misses and exceptions. A hit takes the lock once and
    /// allocates nothing. With capacity 0 nothing is kept: every call creates, except that calls
    /// overlapping another's creation of the same key share its result.
    template <class Make>
    std::shared_ptr<Value> get_or_create(const Key& key, Make&& make) {
        return get_or_create(key, std::forward<Make>(make), [] {});
    }

    /// The same, calling `admit()` first when this call would create the value (neither cached nor
    /// being created by another thread). An exception from `admit` reaches this caller alone:
    /// nothing is registered, so threads missing the same key meanwhile are not handed it (use it
    /// for conditions of the caller, such as "this stream may not plan now").
    template <class Make, class Admit>
    std::shared_ptr<Value> get_or_create(const Key& key, Make&& make, Admit&& admit) {
        std::shared_ptr<Flight> flight;
        bool admitted = false;
        std::unique_lock lock(mutex_);
        for (;;) {
            if (auto it = index_.find(key); it != index_.end()) {
                ++stats_.hits;
                order_.splice(order_.begin(), order_, it->second);
                return it->second->second;
            }
            if (auto it = pending_.find(key); it != pending_.end()) {
                const std::shared_ptr<Flight> other = it->second;  // keeps it alive past its erasure
                ++stats_.hits;
                ++stats_.waits;
                other->done_cv.wait(lock, [&] { return other->done; });
                if (other->error) std::rethrow_exception(other->error);
                return other->value;
            }
            if (admitted) break;
            lock.unlock();
            admit();  // may throw: nothing is registered yet
            admitted = true;
            lock.lock();  // look again: another thread may have cached or started it meanwhile
        }
        ++stats_.misses;
        flight = std::make_shared<Flight>();
        pending_.emplace(key, flight);
        lock.unlock();
        std::shared_ptr<Value> created;
        try {
            created = make();
        } catch (...) {
            finish(key, *flight, nullptr, std::current_exception());
            throw;
        }
        return finish(key, *flight, std::move(created), nullptr);
    }

    /// The value for `key` or nullptr, counting a hit or a miss.
    std::shared_ptr<Value> find(const Key& key) {
        std::lock_guard lock(mutex_);
        if (auto it = index_.find(key); it != index_.end()) {
            ++stats_.hits;
            order_.splice(order_.begin(), order_, it->second);
            return it->second->second;
        }
        ++stats_.misses;
        return nullptr;
    }

    /// Inserts or replaces the value for `key`.
    void put(const Key& key, std::shared_ptr<Value> value) {
        Entries dropped;  // these two are destroyed after the lock is released
        std::shared_ptr<Value> replaced;
        std::lock_guard lock(mutex_);
        if (capacity_ == 0) return;
        if (auto it = index_.find(key); it != index_.end()) {
            replaced = std::exchange(it->second->second, std::move(value));
            order_.splice(order_.begin(), order_, it->second);
            return;
        }
        order_.emplace_front(key, std::move(value));
        index_.emplace(key, order_.begin());
        evict_to(capacity_, dropped);
    }

    /// Drops every entry (values still held by callers stay alive). Counters are kept. The values
    /// are destroyed after the lock is released, as are evicted ones everywhere: a value's
    /// destructor (a plan's: cuBLASLt or cuFFT teardown, a device synchronization) never holds up
    /// other callers, nor calls back into the cache under its lock.
    void clear() {
        Entries dropped;
        std::lock_guard lock(mutex_);
        index_.clear();
        dropped.swap(order_);
    }

    /// Changes the capacity, evicting least recently used entries as needed.
    void set_capacity(std::size_t capacity) {
        Entries dropped;
        std::lock_guard lock(mutex_);
        capacity_ = capacity;
        evict_to(capacity_, dropped);
    }

    [[nodiscard]] std::size_t capacity() const {
        std::lock_guard lock(mutex_);
        return capacity_;
    }
    [[nodiscard]] std::size_t size() const {
        std::lock_guard lock(mutex_);
        return index_.size();
    }
    [[nodiscard]] core::CacheStats stats() const {
        std::lock_guard lock(mutex_);
        core::CacheStats s = stats_;
        s.size = index_.size();
        s.capacity = capacity_;
        return s;
    }
    /// Zeroes the hit/miss/eviction/wait counters.
    void reset_stats() {
        std::lock_guard lock(mutex_);
        stats_ = {};
    }

private:
    // One creation in progress; waiters hold it until they have read the outcome.
    struct Flight {
        std::condition_variable done_cv;
        bool done = false;
        std::shared_ptr<Value> value;
        std::exception_ptr error;
    };

    // Publishes a creation's outcome: stores the value (unless the capacity is 0; a value put()
    // meanwhile wins), wakes the waiters and returns what they get.
    std::shared_ptr<Value> finish(const Key& key, Flight& flight, std::shared_ptr<Value> created,
                                  const std::exception_ptr& error) {
        Entries dropped;  // these two are destroyed after the lock is released
        std::shared_ptr<Value> discarded;
        {
            std::lock_guard lock(mutex_);
            if (!error && capacity_ != 0) {
                if (auto it = index_.find(key); it != index_.end()) {
                    discarded = std::exchange(created, it->second->second);  // a value put() meanwhile wins
                } else {
                    // Out of memory while storing leaves the value uncached, never the waiters hung.
                    try {
                        order_.emplace_front(key, created);
                        try {
                            index_.emplace(key, order_.begin());
                        } catch (...) {
                            order_.pop_front();
                            throw;
                        }
                        evict_to(capacity_, dropped);
                    } catch (...) {  // NOLINT(bugprone-empty-catch): the value is still returned
                    }
                }
            }
            flight.value = created;
            flight.error = error;
            flight.done = true;
            pending_.erase(key);
        }
        flight.done_cv.notify_all();
        return created;
    }

    using Entries = std::list<std::pair<Key, std::shared_ptr<Value>>>;

    // Evicts down to `n` entries, moving them to `dropped` for the caller to destroy after
    // unlocking (a splice: no allocation, no throw).
    void evict_to(std::size_t n, Entries& dropped) {
        while (index_.size() > n) {
            index_.erase(order_.back().first);
            dropped.splice(dropped.end(), order_, std::prev(order_.end()));
            ++stats_.evictions;
        }
    }

    mutable std::mutex mutex_;
    std::size_t capacity_;
    Entries order_;
    std::unordered_map<Key, typename decltype(order_)::iterator, Hash, Equal> index_;
    std::unordered_map<Key, std::shared_ptr<Flight>, Hash, Equal> pending_;  // creations in progress
    core::CacheStats stats_;  // size and capacity are filled in by stats()
};

/// Combines `value`'s hash into `seed` (boost-style mixing).
inline void hash_combine(std::size_t& seed, std::size_t value) noexcept {
    seed ^= value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}

/// An LruCache that is also the core::CacheControl the public plan cache classes
/// (detail::PlanCacheControl, <gpumath/core/cache.hpp>) forward to.
template <class Key, class Value, class Hash = std::hash<Key>, class Equal = std::equal_to<Key>>
class ControlledLruCache : public LruCache<Key, Value, Hash, Equal>, public core::CacheControl {
    using Base = LruCache<Key, Value, Hash, Equal>;

public:
    explicit ControlledLruCache(std::size_t capacity) : Base(capacity) {}
    [[nodiscard]] std::size_t capacity() const override { return Base::capacity(); }
    void set_capacity(std::size_t entries) override { Base::set_capacity(entries); }
    void clear() override { Base::clear(); }
    [[nodiscard]] core::CacheStats stats() const override { return Base::stats(); }
    void reset_stats() override { Base::reset_stats(); }
};

}  // namespace gpumath::detail
