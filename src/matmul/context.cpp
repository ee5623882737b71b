// SPDX-License-Identifier: Apache-2.0
// Per-device cuBLASLt state: one handle and the device's identity.
// Created lazily and thread-safely; deliberately never destroyed, so no static destructor runs
// after the CUDA runtime has shut down.
#include "matmul/internal.hpp"

#include <array>
#include <mutex>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/detail/status.hpp>

namespace gpumath::detail {
namespace {

constexpr int max_devices = 64;

struct DeviceContext {
    cublasLtHandle_t handle = nullptr;
    DeviceIdentity identity;
};

struct Contexts {
    std::array<std::once_flag, max_devices> once;
    std::array<DeviceContext, max_devices> context;
};

Contexts& contexts() {
    static auto* c = new Contexts();  // never destroyed (see above)
    return *c;
}

DeviceContext& context(int device) {
    if (device < 0 || device >= max_devices)
        throw_not_supported(fmt::format("device ordinal {} exceeds the {} devices gpumath's matmul supports", device,
                                        max_devices),
                            "matmul");
    Contexts& all = contexts();
    DeviceContext& ctx = all.context[std::size_t(device)];
    std::call_once(all.once[std::size_t(device)], [&] {
        DeviceGuard guard(device);
        cublasLtHandle_t h = nullptr;
        check_cublas(int(cublasLtCreate(&h)), "cublasLtCreate",
                     [&] { return fmt::format("creating the cuBLASLt handle of device {}", device); });
        core::Device dev(device);
        const cudaDeviceProp& props = dev.properties();
        ctx.identity.name = props.name;
        ctx.identity.cc_major = props.major;
        ctx.identity.cc_minor = props.minor;
        ctx.identity.l2_bytes = props.l2CacheSize;
        ctx.identity.lt_version = cublasLtGetVersion();
        ctx.handle = h;
    });
    return ctx;
}

}  // namespace

cublasLtHandle_t lt_handle(int device) { return context(device).handle; }

const DeviceIdentity& device_identity(int device) { return context(device).identity; }

int matmul_current_device() {
    int d = 0;
    check(cudaGetDevice(&d), "cudaGetDevice", "finding the current device for a matmul");
    return d;
}

}  // namespace gpumath::detail
