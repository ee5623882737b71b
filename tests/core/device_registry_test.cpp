// SPDX-License-Identifier: Apache-2.0
// detail::DeviceRegistry, the one home of gpumath's per-device state (property cache, default
// pools, workspaces, cuBLASLt handles): created once per device under races, retried after a
// failed creation, bounded ordinals. Runs without a GPU.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gpumath/error.hpp>

#include "detail/device_registry.hpp"

using namespace gpumath;

namespace {
struct Value {
    int device = -1;
    int serial = 0;
};
}  // namespace

TEST(DeviceRegistry, CreatesEachDeviceOnceUnderRaces) {
    auto& registry = *new detail::DeviceRegistry<Value>();  // never destroyed, as in the library
    std::atomic<int> creations{0};
    std::vector<std::thread> threads;
    std::vector<Value*> seen(16, nullptr);
    for (int t = 0; t < 16; ++t)
        threads.emplace_back([&, t] {
            seen[std::size_t(t)] = &registry.get(t % 2 == 0 ? 3 : 5, "test", [&](int d) {
                std::this_thread::yield();
                return new Value{d, ++creations};
            });
        });
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(creations.load(), 2);
    for (int t = 0; t < 16; ++t) {
        EXPECT_EQ(seen[std::size_t(t)], registry.find(t % 2 == 0 ? 3 : 5));
        EXPECT_EQ(seen[std::size_t(t)]->device, t % 2 == 0 ? 3 : 5);
    }
    EXPECT_EQ(registry.find(0), nullptr);  // find never creates
    std::vector<int> devices;
    registry.for_each([&](int d, Value& v) {
        EXPECT_EQ(v.device, d);
        devices.push_back(d);
    });
    EXPECT_EQ(devices, (std::vector<int>{3, 5}));
}

TEST(DeviceRegistry, AFailedCreationIsRetriedByTheNextCaller) {
    auto& registry = *new detail::DeviceRegistry<Value>();
    EXPECT_THROW((void)registry.get(1, "test", [](int) -> Value* { throw std::runtime_error("no device yet"); }),
                 std::runtime_error);
    EXPECT_EQ(registry.find(1), nullptr);
    EXPECT_EQ(registry.get(1, "test", [](int d) { return new Value{d, 7}; }).serial, 7);
    EXPECT_EQ(registry.get(1, "test", [](int d) { return new Value{d, 8}; }).serial, 7);  // created once
}

TEST(DeviceRegistry, OrdinalsOutsideTheSupportedRangeAreNotSupported) {
    auto& registry = *new detail::DeviceRegistry<Value>();
    int calls = 0;
    const auto make = [&](int d) {
        ++calls;
        return new Value{d, 0};
    };
    try {
        (void)registry.get(detail::max_devices, "Device::properties", make);
        FAIL() << "no throw";
    } catch (const NotSupported& e) {
        EXPECT_STREQ(e.what(), "Device::properties: device ordinal 64 is outside 0..63, the devices gpumath supports");
    }
    EXPECT_THROW((void)registry.get(-1, "matmul", make), NotSupported);
    EXPECT_EQ(calls, 0);
    EXPECT_EQ(registry.find(-1), nullptr);
    EXPECT_EQ(registry.find(detail::max_devices), nullptr);
    EXPECT_EQ(registry.get(detail::max_devices - 1, "test", make).device, detail::max_devices - 1);
}
