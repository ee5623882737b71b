// SPDX-License-Identifier: Apache-2.0
/// @file
/// CUDA devices: Device (properties, current device, its streams, events and memory) and
/// ComputeCapability.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include <cuda_runtime_api.h>

#include <gpumath/core/event.hpp>
#include <gpumath/core/memory.hpp>
#include <gpumath/core/stream.hpp>

namespace gpumath::core {

/// A compute capability, e.g. {9, 0} for Hopper.
struct ComputeCapability {
    /// The major version (9 for Hopper).
    int major = 0;
    /// The minor version.
    int minor = 0;
    /// major * 10 + minor, e.g. 90.
    [[nodiscard]] constexpr int value() const noexcept { return major * 10 + minor; }
    /// Ordered by major, then minor version: `cc >= ComputeCapability{9, 0}`.
    friend constexpr auto operator<=>(const ComputeCapability&, const ComputeCapability&) = default;
};

/// A CUDA device. Cheap to copy (holds the ordinal); properties are read once per process.
class Device {
public:
    /// Number of CUDA devices; 0 when there is no driver or no device. Never throws.
    [[nodiscard]] static int count() noexcept;
    /// The device current to the calling thread. Throws CudaError when no driver/device.
    [[nodiscard]] static Device current();

    /// Device `ordinal`. InvalidArgument for a negative ordinal (before any CUDA call) or one past
    /// the machine's devices; CudaError when there is no driver/device.
    explicit Device(int ordinal);

    /// The device's ordinal, as CUDA numbers devices (0 to `count() - 1`).
    [[nodiscard]] int ordinal() const noexcept { return ordinal_; }
    /// Marketing name, e.g. "NVIDIA H200".
    [[nodiscard]] std::string name() const;
    /// The compute capability, e.g. {9, 0}. Throws CudaError when the properties cannot be read.
    [[nodiscard]] ComputeCapability compute_capability() const;
    /// The NVRTC/nvJitLink architecture name, e.g. "sm_90".
    [[nodiscard]] std::string arch() const;
    /// Number of streaming multiprocessors (SMs). Throws CudaError when the properties cannot be
    /// read.
    [[nodiscard]] int multiprocessor_count() const;
    /// Global memory in bytes.
    [[nodiscard]] std::size_t total_memory() const;
    /// All properties (read once per process and device).
    [[nodiscard]] const cudaDeviceProp& properties() const;

    /// Makes this device current to the calling thread.
    void set_current() const;
    /// Blocks until all work on the device has finished.
    void synchronize() const;
    /// Creates a stream on this device.
    [[nodiscard]] Stream create_stream(const StreamOptions& options = {}) const;
    /// Creates an event on this device.
    [[nodiscard]] Event create_event(const EventOptions& options = {}) const;
    /// Allocates `bytes` aligned to `alignment` (a power of two) from this device's default pool,
    /// ordered on `stream`.
    [[nodiscard]] Buffer allocate(std::size_t bytes, StreamRef stream = core::current_stream(),
                                  std::size_t alignment = MemoryResource::default_alignment) const;
    /// This device's default memory resource (a stream-ordered pool).
    [[nodiscard]] std::shared_ptr<MemoryResource> memory_resource() const;

    /// The same device: equal ordinals.
    friend bool operator==(const Device& a, const Device& b) noexcept { return a.ordinal_ == b.ordinal_; }

private:
    int ordinal_ = 0;
};

}  // namespace gpumath::core

namespace gpumath::detail {
/// Runs `f` with `device` current, restoring the previous current device afterwards.
class DeviceGuard {
public:
    explicit DeviceGuard(int device);
    ~DeviceGuard();
    DeviceGuard(const DeviceGuard&) = delete;
    DeviceGuard& operator=(const DeviceGuard&) = delete;
    DeviceGuard(DeviceGuard&&) = delete;
    DeviceGuard& operator=(DeviceGuard&&) = delete;

private:
    int previous_ = -1;
};
/// The current device's ordinal. Throws CudaError when no driver/device.
[[nodiscard]] int current_device();
}  // namespace gpumath::detail
