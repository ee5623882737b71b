// SPDX-License-Identifier: Apache-2.0
// Private: a thread-safe LRU map of shared values, used by the plan and compile caches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace gpumath::detail {

/// Hit/miss/eviction counters of a cache.
struct CacheStats {
    std::uint64_t hits = 0;
    std::uint64_t misses = 0;
    std::uint64_t evictions = 0;
    std::size_t size = 0;
    std::size_t capacity = 0;
};

/// Thread-safe LRU map from Key to std::shared_ptr<Value>. Values are shared so that an entry
/// evicted while a caller still uses it stays alive until that caller lets go. Creation runs
/// outside the lock (plans can take milliseconds); when two threads miss the same key at once,
/// the first insertion wins and both get it.
template <class Key, class Value, class Hash = std::hash<Key>, class Equal = std::equal_to<Key>>
class LruCache {
public:
    explicit LruCache(std::size_t capacity) : capacity_(capacity) {}

    /// The value for `key`, created by `make()` (returning std::shared_ptr<Value>) on a miss.
    /// With capacity 0 nothing is kept: every call creates.
    template <class Make>
    std::shared_ptr<Value> get_or_create(const Key& key, Make&& make) {
        {
            std::lock_guard lock(mutex_);
            if (auto it = index_.find(key); it != index_.end()) {
                ++stats_.hits;
                order_.splice(order_.begin(), order_, it->second);
                return it->second->second;
            }
            ++stats_.misses;
        }
        std::shared_ptr<Value> created = make();
        std::lock_guard lock(mutex_);
        if (capacity_ == 0) return created;
        if (auto it = index_.find(key); it != index_.end()) return it->second->second;
        order_.emplace_front(key, created);
        index_.emplace(key, order_.begin());
        evict_to(capacity_);
        return created;
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
        std::lock_guard lock(mutex_);
        if (capacity_ == 0) return;
        if (auto it = index_.find(key); it != index_.end()) {
            it->second->second = std::move(value);
            order_.splice(order_.begin(), order_, it->second);
            return;
        }
        order_.emplace_front(key, std::move(value));
        index_.emplace(key, order_.begin());
        evict_to(capacity_);
    }

    /// Drops every entry (values still held by callers stay alive). Counters are kept.
    void clear() {
        std::lock_guard lock(mutex_);
        index_.clear();
        order_.clear();
    }

    /// Changes the capacity, evicting least recently used entries as needed.
    void set_capacity(std::size_t capacity) {
        std::lock_guard lock(mutex_);
        capacity_ = capacity;
        evict_to(capacity_);
    }

    [[nodiscard]] std::size_t capacity() const {
        std::lock_guard lock(mutex_);
        return capacity_;
    }
    [[nodiscard]] std::size_t size() const {
        std::lock_guard lock(mutex_);
        return index_.size();
    }
    [[nodiscard]] CacheStats stats() const {
        std::lock_guard lock(mutex_);
        CacheStats s = stats_;
        s.size = index_.size();
        s.capacity = capacity_;
        return s;
    }
    /// Zeroes the hit/miss/eviction counters.
    void reset_stats() {
        std::lock_guard lock(mutex_);
        stats_ = {};
    }

private:
    void evict_to(std::size_t n) {
        while (index_.size() > n) {
            index_.erase(order_.back().first);
            order_.pop_back();
            ++stats_.evictions;
        }
    }

    mutable std::mutex mutex_;
    std::size_t capacity_;
    std::list<std::pair<Key, std::shared_ptr<Value>>> order_;
    std::unordered_map<Key, typename decltype(order_)::iterator, Hash, Equal> index_;
    CacheStats stats_;
};

/// Combines `value`'s hash into `seed` (boost-style mixing).
inline void hash_combine(std::size_t& seed, std::size_t value) noexcept {
    seed ^= value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}

}  // namespace gpumath::detail
