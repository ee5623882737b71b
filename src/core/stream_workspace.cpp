// SPDX-License-Identifier: Apache-2.0
// Per-stream scratch areas shared by the math modules.
#include <gpumath/detail/stream_workspace.hpp>

#include <array>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/detail/status.hpp>

#include "detail/log.hpp"

namespace gpumath::detail {

StreamWorkspace::Lease StreamWorkspace::acquire(std::size_t bytes, core::StreamRef stream) {
    Entry* entry = nullptr;
    {
        std::lock_guard lock(mutex_);
        const cudaStream_t h = stream.handle();
        std::unique_ptr<Entry>& slot =
            entries_[Key{h, h == cudaStreamPerThread ? std::this_thread::get_id() : std::thread::id{}}];
        if (!slot) slot = std::make_unique<Entry>();
        entry = slot.get();  // entries are never removed while the workspace lives
    }
    Lease lease{std::unique_lock(entry->mutex), nullptr};
    if (bytes == 0) return lease;
    if (entry->buffer.size_bytes() < bytes) {
        entry->buffer.reset(stream);
        entry->buffer = core::Buffer(bytes, stream, resource_);
        log(LogLevel::debug, "workspace for stream {} grown to {} bytes", static_cast<void*>(stream.handle()), bytes);
    }
    lease.data = entry->buffer.data();
    return lease;
}

void StreamWorkspace::release() {
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
    std::array<StreamWorkspace*, max_devices> workspaces{};
};

// Never destroyed: plans in the (also never destroyed) plan caches may use them during exit.
DefaultWorkspaces& default_workspaces() {
    static auto* w = new DefaultWorkspaces();
    return *w;
}

}  // namespace

StreamWorkspace& default_stream_workspace(int device) {
    if (device < 0 || device >= max_devices)
        throw_not_supported(fmt::format("device ordinal {} exceeds the {} devices gpumath supports", device,
                                        max_devices),
                            "gpumath workspace");
    DefaultWorkspaces& d = default_workspaces();
    std::call_once(d.once[std::size_t(device)], [&] {
        d.workspaces[std::size_t(device)] = new StreamWorkspace(core::DeviceMemoryResource::default_resource(device));
    });
    return *d.workspaces[std::size_t(device)];
}

void release_default_stream_workspaces() {
    DefaultWorkspaces& d = default_workspaces();
    for (int i = 0; i < max_devices; ++i) {
        StreamWorkspace* w = d.workspaces[std::size_t(i)];
        if (w == nullptr) continue;
        core::Device(i).synchronize();
        w->release();
    }
}

}  // namespace gpumath::detail
