// SPDX-License-Identifier: Apache-2.0
// Per-device cuBLASLt state: one handle and the device's identity.
// Created lazily and thread-safely; deliberately never destroyed, so no static destructor runs
// after the CUDA runtime has shut down.
#include "matmul/internal.hpp"

#include <memory>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include "detail/status.hpp"

#include "detail/device_registry.hpp"
#include "detail/capture_mode.hpp"

namespace gpumath::detail {
namespace {

struct DeviceContext {
    cublasLtHandle_t handle = nullptr;
    DeviceIdentity identity;
};

DeviceContext& context(int device) {
    static auto& contexts = *new DeviceRegistry<DeviceContext>();  // never destroyed (see above)
    return contexts.get(device, "matmul", [](int d) {
        DeviceGuard guard(d);
        auto ctx = std::make_unique<DeviceContext>();
        const cudaDeviceProp& props = core::Device(d).properties();
        ctx->identity.name = props.name;
        ctx->identity.cc_major = props.major;
        ctx->identity.cc_minor = props.minor;
        ctx->identity.l2_bytes = props.l2CacheSize;
        ctx->identity.lt_version = cublasLtGetVersion();
        // The first plan may be made while the caller's stream captures.
        const RelaxedCaptureMode relaxed("creating the cuBLASLt handle");
        check_cublas(int(cublasLtCreate(&ctx->handle)), "cublasLtCreate",
                     [&] { return fmt::format("creating the cuBLASLt handle of device {}", d); });
        return ctx.release();
    });
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
