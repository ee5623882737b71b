// SPDX-License-Identifier: Apache-2.0
// Per-stream work areas and the built-in elementwise pass kernels of FFTs.
#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include <gpumath/core/device.hpp>
#include <gpumath/detail/status.hpp>

#include "detail/log.hpp"
#include "fft/internal.hpp"

namespace gpumath::detail {

static_assert(sizeof(FftPass) == 208, "FftPass must match the gm_fft_pass struct of the generated kernels");

FftWorkspace::Lease FftWorkspace::acquire(std::size_t bytes, core::StreamRef stream) {
    Entry* entry = nullptr;
    {
        std::lock_guard lock(mutex_);
        auto& slot = entries_[stream.handle()];
        if (!slot) slot = std::make_unique<Entry>();
        entry = slot.get();
    }
    Lease lease{std::unique_lock(entry->mutex), nullptr};
    if (bytes == 0) return lease;
    if (entry->buffer.size_bytes() < bytes) {
        entry->buffer.reset(stream);
        entry->buffer = core::Buffer(bytes, stream, resource_);
        detail::log(LogLevel::debug, "fft: work area for stream {} grown to {} bytes",
                    static_cast<void*>(stream.handle()), bytes);
    }
    lease.data = entry->buffer.data();
    return lease;
}

void FftWorkspace::release() {
    std::lock_guard lock(mutex_);
    for (auto& [stream, entry] : entries_) {
        std::lock_guard entry_lock(entry->mutex);
        // The caller synchronized; the stream the area was allocated on may no longer exist.
        entry->buffer.reset(core::StreamRef{});
    }
}

namespace {

constexpr int max_devices = 64;

struct DefaultWorkspaces {
    std::array<std::once_flag, max_devices> once;
    std::array<FftWorkspace*, max_devices> workspaces{};
};

// Never destroyed: plans in the (also never destroyed) plan cache may use them during exit.
DefaultWorkspaces& default_workspaces() {
    static auto* w = new DefaultWorkspaces();
    return *w;
}

}  // namespace

FftWorkspace& default_fft_workspace(int device) {
    if (device < 0 || device >= max_devices)
        throw_not_supported(fmt::format("device ordinal {} exceeds {}", device, max_devices), "gpumath::FFT");
    DefaultWorkspaces& d = default_workspaces();
    std::call_once(d.once[std::size_t(device)], [&] {
        d.workspaces[std::size_t(device)] = new FftWorkspace(core::DeviceMemoryResource::default_resource(device));
    });
    return *d.workspaces[std::size_t(device)];
}

void release_default_fft_workspaces() {
    DefaultWorkspaces& d = default_workspaces();
    for (int i = 0; i < max_devices; ++i) {
        FftWorkspace* w = d.workspaces[std::size_t(i)];
        if (w == nullptr) continue;
        core::Device(i).synchronize();
        w->release();
    }
}

core::Kernel builtin_pass_kernel(DataType element, bool pairs, int device, const std::string& arch) {
    using Key = std::tuple<int, DataType, bool>;
    static std::mutex mutex;
    static auto* kernels = new std::map<Key, core::Kernel>();
    const Key key{device, element, pairs};
    {
        std::lock_guard lock(mutex);
        if (auto it = kernels->find(key); it != kernels->end()) return it->second;
    }
    FftPassSpec spec;
    spec.element = element;
    spec.pairs = pairs;
    const core::ObjectCode code = compile_with_context(fft_pass_source(spec), core::CodeType::cubin, arch, "fft_pass",
                                                       nullptr, FFTCallbackKind::load, element);
    core::Kernel kernel = core::Module(code).kernel(fft_pass_kernel_name, device);
    std::lock_guard lock(mutex);
    return kernels->emplace(key, std::move(kernel)).first->second;
}

void launch_pass(const core::Kernel& kernel, core::StreamRef stream, const void* src, void* dst, const FftPass& pass,
                 double scale, bool single, void* info) {
    if (pass.total == 0) return;
    constexpr std::int64_t block = 256;
    const std::int64_t sms = std::max(kernel.state().multiprocessor_count, 1);
    const std::int64_t grid = std::clamp<std::int64_t>((pass.total + block - 1) / block, 1, sms * 32);
    const core::LaunchConfig config{.grid = grid, .block = block};
    if (single)
        core::launch(stream, config, kernel, src, dst, pass, static_cast<float>(scale), info);
    else
        core::launch(stream, config, kernel, src, dst, pass, scale, info);
}

}  // namespace gpumath::detail
