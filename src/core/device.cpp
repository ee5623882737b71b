// SPDX-License-Identifier: Apache-2.0
#include <gpumath/core/device.hpp>

#include <memory>
#include <mutex>

#include <fmt/format.h>

#include "detail/status.hpp"

#include "detail/device_registry.hpp"

namespace gpumath::detail {

void check_device_ordinal(int device, const char* api) {
    if (device < 0 || device >= max_devices) [[unlikely]]
        throw_not_supported(
            fmt::format("device ordinal {} is outside 0..{}, the devices gpumath supports", device, max_devices - 1),
            api);
}

core::Device resolve_device(int device, const char* api) {
    if (device < -1)
        throw_invalid(
            fmt::format("device: {} given; pass a device ordinal (0, 1, ...) or -1 for the current device", device),
            api);
    return device == -1 ? core::Device::current() : core::Device(device);
}

int current_device() {
    int d = 0;
    gpumath::detail::check(cudaGetDevice(&d), "cudaGetDevice");
    return d;
}

DeviceGuard::DeviceGuard(int device) {
    int current = 0;
    gpumath::detail::check(cudaGetDevice(&current), "cudaGetDevice");
    if (current != device) {
        gpumath::detail::check(cudaSetDevice(device), "cudaSetDevice");
        previous_ = current;
    }
}

DeviceGuard::~DeviceGuard() {
    if (previous_ >= 0) (void)cudaSetDevice(previous_);
}

}  // namespace gpumath::detail
namespace gpumath::core {

namespace {

// Properties are immutable for the life of the process; read each device's once.
detail::DeviceRegistry<cudaDeviceProp>& property_cache() {
    static auto& cache = *new detail::DeviceRegistry<cudaDeviceProp>();
    return cache;
}

int device_count_or_throw() {
    int n = 0;
    gpumath::detail::check(cudaGetDeviceCount(&n), "cudaGetDeviceCount", "counting CUDA devices");
    return n;
}

}  // namespace

int Device::count() noexcept {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

Device Device::current() { return Device(gpumath::detail::current_device()); }

Device::Device(int ordinal) : ordinal_(ordinal) {
    if (ordinal < 0)  // wrong on any machine: said before asking the driver anything
        gpumath::detail::throw_invalid(fmt::format("ordinal: device {} requested; device ordinals start at 0", ordinal),
                                       "Device");
    const int n = device_count_or_throw();
    if (ordinal >= n)
        gpumath::detail::throw_invalid(
            fmt::format("ordinal: device {} requested, this machine has {} (valid: 0..{})", ordinal, n, n - 1),
            "Device");
}

const cudaDeviceProp& Device::properties() const {
    return property_cache().get(ordinal_, "Device::properties", [](int d) {
        auto props = std::make_unique<cudaDeviceProp>();
        gpumath::detail::check(cudaGetDeviceProperties(props.get(), d), "cudaGetDeviceProperties");
        return props.release();
    });
}

std::string Device::name() const { return properties().name; }

ComputeCapability Device::compute_capability() const {
    const cudaDeviceProp& p = properties();
    return {p.major, p.minor};
}

std::string Device::arch() const {
    const ComputeCapability cc = compute_capability();
    return fmt::format("sm_{}{}", cc.major, cc.minor);
}

int Device::multiprocessor_count() const { return properties().multiProcessorCount; }

std::size_t Device::total_memory() const { return properties().totalGlobalMem; }

void Device::set_current() const { gpumath::detail::check(cudaSetDevice(ordinal_), "cudaSetDevice"); }

void Device::synchronize() const {
    gpumath::detail::DeviceGuard guard(ordinal_);
    gpumath::detail::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

Stream Device::create_stream(const StreamOptions& options) const {
    gpumath::detail::DeviceGuard guard(ordinal_);
    return Stream(options);
}

Event Device::create_event(const EventOptions& options) const {
    gpumath::detail::DeviceGuard guard(ordinal_);
    return Event(options);
}

Buffer Device::allocate(std::size_t bytes, StreamRef stream, std::size_t alignment) const {
    return Buffer(bytes, stream, memory_resource(), alignment);
}

std::shared_ptr<MemoryResource> Device::memory_resource() const {
    return DeviceMemoryResource::default_resource(ordinal_);
}

}  // namespace gpumath::core
