// SPDX-License-Identifier: Apache-2.0
#include <gpumath/core/device.hpp>

#include <array>
#include <memory>
#include <mutex>

#include <fmt/format.h>

#include <gpumath/detail/status.hpp>

namespace gpumath::core {
}  // namespace gpumath::core
namespace gpumath::detail {

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
struct PropertyCache {
    static constexpr int capacity = 64;
    std::array<std::once_flag, capacity> once;
    std::array<cudaDeviceProp, capacity> props{};
};

PropertyCache& property_cache() {
    static PropertyCache cache;
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
    const int n = device_count_or_throw();
    if (ordinal < 0 || ordinal >= n)
        gpumath::detail::throw_invalid(
            fmt::format("ordinal: device {} requested, this machine has {} (valid: 0..{})", ordinal, n, n - 1), "Device");
}

const cudaDeviceProp& Device::properties() const {
    PropertyCache& cache = property_cache();
    if (ordinal_ >= PropertyCache::capacity)
        gpumath::detail::throw_not_supported(fmt::format("device ordinal {} exceeds {}", ordinal_, PropertyCache::capacity),
                                             "Device::properties");
    std::call_once(cache.once[std::size_t(ordinal_)], [&] {
        gpumath::detail::check(cudaGetDeviceProperties(&cache.props[std::size_t(ordinal_)], ordinal_),
                               "cudaGetDeviceProperties");
    });
    return cache.props[std::size_t(ordinal_)];
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

Buffer Device::allocate(std::size_t bytes, StreamRef stream) const { return Buffer(bytes, stream, memory_resource()); }

std::shared_ptr<MemoryResource> Device::memory_resource() const {
    return DeviceMemoryResource::default_resource(ordinal_);
}

}  // namespace gpumath::core
