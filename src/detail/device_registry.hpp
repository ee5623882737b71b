// SPDX-License-Identifier: Apache-2.0
// Private: per-device state that lives until the process exits (property caches, default memory
// pools, workspaces, cuBLASLt handles). One type, so each of them gets the same guarantees.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <mutex>

#include <gpumath/core/device.hpp>

namespace gpumath::detail {

/// The most devices gpumath keeps per-device state for (runtime ordinals 0..max_devices-1).
inline constexpr int max_devices = 64;

/// NotSupported naming `api` unless 0 <= device < max_devices.
void check_device_ordinal(int device, const char* api);

/// A public API's `device` argument: -1 is the current device; below -1 is InvalidArgument naming
/// `api` (before any CUDA call), past the last device InvalidArgument from core::Device; CudaError
/// without a driver/device.
[[nodiscard]] core::Device resolve_device(int device, const char* api);

/// One lazily created `T` per device ordinal. `get` creates a device's value on first use, exactly
/// once even when threads race (a creation that throws is retried by the next caller), and then
/// costs one atomic load. Values are never destroyed, and neither is a registry: declare one as
/// `static auto& r = *new DeviceRegistry<T>();`, so that no static destructor runs after the CUDA
/// runtime has shut down and so that CUDA callbacks (graph user objects) may still reach the state.
template <class T>
class DeviceRegistry {
public:
    DeviceRegistry() = default;
    DeviceRegistry(const DeviceRegistry&) = delete;
    DeviceRegistry& operator=(const DeviceRegistry&) = delete;
    DeviceRegistry(DeviceRegistry&&) = delete;
    DeviceRegistry& operator=(DeviceRegistry&&) = delete;
    // Leaves the values alive (see above).
    ~DeviceRegistry() = default;

    /// The value of `device`, created by `make(device)` (returning `T*`, owned from then on) on
    /// first use. NotSupported naming `api` for an ordinal outside 0..max_devices-1.
    template <class Make>
    [[nodiscard]] T& get(int device, const char* api, Make&& make) {
        check_device_ordinal(device, api);
        Slot& slot = slots_[std::size_t(device)];
        if (T* value = slot.value.load(std::memory_order_acquire)) [[likely]]
            return *value;
        std::call_once(slot.once, [&] { slot.value.store(make(device), std::memory_order_release); });
        return *slot.value.load(std::memory_order_acquire);
    }

    /// The value of `device` if it has been created, else nullptr. Never creates one.
    [[nodiscard]] T* find(int device) const noexcept {
        if (device < 0 || device >= max_devices) return nullptr;
        return slots_[std::size_t(device)].value.load(std::memory_order_acquire);
    }

    /// Calls `f(device, value)` for every device whose value exists, in ordinal order.
    template <class F>
    void for_each(F&& f) const {
        for (int d = 0; d < max_devices; ++d)
            if (T* value = find(d)) f(d, *value);
    }

private:
    struct Slot {
        std::once_flag once;
        std::atomic<T*> value{nullptr};
    };
    std::array<Slot, max_devices> slots_;
};

}  // namespace gpumath::detail
