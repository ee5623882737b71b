// SPDX-License-Identifier: Apache-2.0
// detail::LruCache: hits, misses, eviction, capacity 0, and single-flight creation when many
// threads miss one key at once (on success and when the creation throws).
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "detail/lru_cache.hpp"

using gpumath::core::CacheStats;
using Cache = gpumath::detail::LruCache<int, std::string>;

namespace {

constexpr int k_threads = 16;

// Runs `body(i)` on k_threads threads released at once.
template <class F>
void run_together(F&& body) {
    std::barrier start(k_threads);
    std::vector<std::thread> threads;
    for (int i = 0; i < k_threads; ++i)
        threads.emplace_back([&, i] {
            start.arrive_and_wait();
            body(i);
        });
    for (auto& t : threads) t.join();
}

}  // namespace

TEST(LruCache, HitsMissesAndEviction) {
    Cache cache(2);
    int made = 0;
    const auto make = [&](int v) {
        return [&made, v] {
            ++made;
            return std::make_shared<std::string>(std::to_string(v));
        };
    };
    EXPECT_EQ(*cache.get_or_create(1, make(1)), "1");
    EXPECT_EQ(*cache.get_or_create(1, make(100)), "1");
    EXPECT_EQ(*cache.get_or_create(2, make(2)), "2");
    EXPECT_EQ(*cache.get_or_create(1, make(100)), "1");  // 1 is now the most recent
    EXPECT_EQ(*cache.get_or_create(3, make(3)), "3");    // evicts 2
    EXPECT_EQ(cache.find(2), nullptr);
    EXPECT_EQ(made, 3);
    const CacheStats s = cache.stats();
    EXPECT_EQ(s.hits, 2u);
    EXPECT_EQ(s.misses, 4u);  // three creations and the find
    EXPECT_EQ(s.evictions, 1u);
    EXPECT_EQ(s.waits, 0u);
    EXPECT_EQ(s.size, 2u);
    EXPECT_EQ(s.capacity, 2u);
}

TEST(LruCache, CapacityZeroKeepsNothing) {
    Cache cache(0);
    int made = 0;
    const auto make = [&] {
        ++made;
        return std::make_shared<std::string>("v");
    };
    (void)cache.get_or_create(7, make);
    (void)cache.get_or_create(7, make);
    EXPECT_EQ(made, 2);  // sequential calls each create
    EXPECT_EQ(cache.size(), 0u);
    EXPECT_EQ(cache.stats().misses, 2u);
}

TEST(LruCache, ConcurrentMissesOfOneKeyCreateOnce) {
    for (const std::size_t capacity : {std::size_t(8), std::size_t(0)}) {
        Cache cache(capacity);
        std::atomic<int> made{0};
        std::vector<std::shared_ptr<std::string>> got(k_threads);
        run_together([&](int i) {
            got[std::size_t(i)] = cache.get_or_create(42, [&] {
                ++made;
                std::this_thread::sleep_for(std::chrono::milliseconds(200));  // long enough for all to miss
                return std::make_shared<std::string>("value");
            });
        });
        // Before: every thread that missed ran make() (up to 16 calls).
        EXPECT_EQ(made.load(), 1) << "capacity " << capacity;
        for (const auto& g : got) {
            ASSERT_NE(g, nullptr);
            EXPECT_EQ(g.get(), got[0].get()) << "capacity " << capacity;  // the same object for everyone
        }
        const CacheStats s = cache.stats();
        EXPECT_EQ(s.misses, 1u);
        EXPECT_EQ(s.hits, std::uint64_t(k_threads - 1));   // waiters count as hits...
        EXPECT_EQ(s.waits, std::uint64_t(k_threads - 1));  // ...and as waits
        EXPECT_EQ(s.size, capacity == 0 ? 0u : 1u);
    }
}

TEST(LruCache, AFailedCreationReachesEveryWaiterAndIsNotStored) {
    Cache cache(8);
    std::atomic<int> made{0};
    std::atomic<int> errors{0};
    std::atomic<int> values{0};
    run_together([&](int) {
        try {
            (void)cache.get_or_create(5, [&]() -> std::shared_ptr<std::string> {
                ++made;
                std::this_thread::sleep_for(std::chrono::milliseconds(200));
                throw std::runtime_error("make failed");
            });
            ++values;
        } catch (const std::runtime_error& e) {
            if (std::string(e.what()) == "make failed") ++errors;
        }
    });
    EXPECT_EQ(made.load(), 1);
    EXPECT_EQ(errors.load(), k_threads);  // nobody hangs, nobody gets a value
    EXPECT_EQ(values.load(), 0);
    EXPECT_EQ(cache.size(), 0u);
    // The next call creates again and succeeds.
    EXPECT_EQ(*cache.get_or_create(5, [] { return std::make_shared<std::string>("ok"); }), "ok");
    EXPECT_EQ(cache.size(), 1u);
}

TEST(LruCache, DifferentKeysCreateInParallel) {
    Cache cache(64);
    std::atomic<int> inside{0};
    std::atomic<int> most{0};
    run_together([&](int i) {
        (void)cache.get_or_create(i, [&] {
            const int now = ++inside;
            int seen = most.load();
            while (now > seen && !most.compare_exchange_weak(seen, now)) {}
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            --inside;
            return std::make_shared<std::string>("x");
        });
    });
    EXPECT_GT(most.load(), 1);  // creation runs outside the lock
    EXPECT_EQ(cache.stats().misses, std::uint64_t(k_threads));
    EXPECT_EQ(cache.stats().waits, 0u);
}

// An admission check that fails concerns its caller alone: it runs only for a caller that would
// create, before anything is registered, so other threads never receive its exception.
TEST(LruCache, AFailedAdmissionReachesOnlyItsCaller) {
    Cache cache(8);
    std::atomic<int> makes{0};
    auto refuse = [] { throw std::runtime_error("this caller may not create now"); };
    // No one is creating key 1: the admission runs and throws, make() never runs, nothing is left
    // pending, and the next caller creates normally.
    EXPECT_THROW((void)cache.get_or_create(
                     1,
                     [&] {
                         ++makes;
                         return std::make_shared<std::string>("x");
                     },
                     refuse),
                 std::runtime_error);
    EXPECT_EQ(makes.load(), 0);
    EXPECT_EQ(*cache.get_or_create(1,
                                   [&] {
                                       ++makes;
                                       return std::make_shared<std::string>("one");
                                   }),
              "one");
    EXPECT_EQ(makes.load(), 1);
    // A cached key never asks for admission.
    EXPECT_EQ(*cache.get_or_create(
                  1,
                  [&] {
                      ++makes;
                      return std::make_shared<std::string>("y");
                  },
                  refuse),
              "one");

    // While thread A creates key 2 slowly, a caller whose admission would fail waits for A's value
    // instead (it does not create, so it is not asked).
    std::atomic<bool> started{false};
    std::thread a([&] {
        (void)cache.get_or_create(2, [&] {
            started = true;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            return std::make_shared<std::string>("two");
        });
    });
    while (!started) std::this_thread::yield();
    EXPECT_EQ(*cache.get_or_create(
                  2,
                  [&] {
                      ++makes;
                      return std::make_shared<std::string>("z");
                  },
                  refuse),
              "two");
    a.join();
    EXPECT_EQ(makes.load(), 1);
    EXPECT_EQ(cache.stats().waits, 1u);
}

namespace {

// A value whose destructor asks its cache for its size: under the cache's lock that deadlocked
// (and a plan's destructor, tearing down cuFFT or synchronizing the device, held up every caller).
struct AsksTheCache {
    gpumath::detail::LruCache<int, AsksTheCache>* cache = nullptr;
    std::atomic<int>* destroyed = nullptr;
    ~AsksTheCache() {
        (void)cache->size();
        ++*destroyed;
    }
};

}  // namespace

TEST(LruCache, ValuesAreDestroyedOutsideTheLock) {
    using Asking = gpumath::detail::LruCache<int, AsksTheCache>;
    std::atomic<int> destroyed{0};
    std::atomic<bool> finished{false};
    std::thread worker([&] {
        Asking cache(2);
        const auto make = [&] {
            auto v = std::make_shared<AsksTheCache>();
            v->cache = &cache;
            v->destroyed = &destroyed;
            return v;
        };
        for (int k = 0; k < 4; ++k) (void)cache.get_or_create(k, make);  // two evicted by creation
        cache.put(9, make());
        cache.put(9, make());  // replaced
        // A value put() while the same key is being created wins; the created one is dropped.
        (void)cache.get_or_create(5, [&] {
            cache.put(5, make());
            return make();
        });
        cache.set_capacity(1);
        cache.clear();  // empty now: destroying the cache destroys no value
        finished = true;
    });
    for (int i = 0; i < 200 && !finished; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!finished) {
        worker.detach();
        FAIL() << "a value's destructor waited for the cache's lock";
    }
    worker.join();
    EXPECT_EQ(destroyed.load(), 8) << "every value made was destroyed";
}
