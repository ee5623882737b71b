// SPDX-License-Identifier: Apache-2.0
// Per-stream scratch areas shared by the math modules, and the areas captured graphs own.
#include "core/stream_workspace.hpp"

#include <map>
#include <new>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>

#include "detail/capture_mode.hpp"
#include "detail/device_registry.hpp"
#include "detail/log.hpp"
#include "detail/status.hpp"

namespace gpumath::detail {
namespace {

constexpr const char* k_api = "gpumath workspace";

// ---------------------------------------------------------------------------------------------
// Areas of captured work. A capture must not free or grow the capturing stream's area (a graph
// replayed later, on any stream, would share it with whatever runs then), and memory that outlives
// the graph's replays must not be freed while the graph exists. So each (capture, stream) pair gets
// an area of its own, allocated with cudaMalloc in relaxed capture mode (allowed during a capture,
// and not recorded into it) and tied to the graph with a CUDA user object: when the graph and
// every executable graph made from it are destroyed (and their launched work has finished), CUDA
// releases the object and the area becomes idle, to be reused by a later capture. Idle areas are
// freed by core::release_workspaces().

class CaptureAreas;

struct CaptureArea {
    CaptureAreas* owner = nullptr;
    void* data = nullptr;
    std::size_t bytes = 0;
    bool idle = false;
    unsigned long long capture = 0;
    cudaStream_t stream = nullptr;
};

class CaptureAreas {
public:
    explicit CaptureAreas(int device) : device_(device) {}

    void* acquire(std::size_t bytes, cudaStream_t stream, unsigned long long capture, cudaGraph_t graph) {
        const ActiveKey key{capture, stream};
        CaptureArea* area = nullptr;
        {
            std::lock_guard lock(mutex_);
            // Calls on one capturing stream are ordered in the graph: they share its area.
            if (auto it = active_.find(key); it != active_.end() && it->second->bytes >= bytes) return it->second->data;
            for (const auto& a : areas_)
                if (a->idle && a->bytes >= bytes && (area == nullptr || a->bytes < area->bytes)) area = a.get();
            if (area != nullptr) area->idle = false;
        }
        if (area == nullptr) area = allocate(bytes);
        {
            // Recorded before the graph can release it, so on_release finds what it must undo.
            std::lock_guard lock(mutex_);
            area->capture = capture;
            area->stream = stream;
            active_[key] = area;
        }
        // The graph owns one reference; the area is idle again when CUDA drops it.
        cudaUserObject_t object = nullptr;
        if (const cudaError_t s =
                cudaUserObjectCreate(&object, area, &CaptureAreas::on_release, 1, cudaUserObjectNoDestructorSync);
            s != cudaSuccess) {
            on_release(area);  // nothing owns it: idle again
            check(s, "cudaUserObjectCreate", "tying a workspace area to the graph being captured");
        }
        if (const cudaError_t s = cudaGraphRetainUserObject(graph, object, 1, cudaGraphUserObjectMove);
            s != cudaSuccess) {
            (void)cudaUserObjectRelease(object, 1);  // CUDA calls on_release: idle again
            check(s, "cudaGraphRetainUserObject", "tying a workspace area to the graph being captured");
        }
        return area->data;
    }

    /// Frees the idle areas. The caller has synchronized the device.
    void release_idle() {
        std::vector<std::unique_ptr<CaptureArea>> idle;
        {
            std::lock_guard lock(mutex_);
            for (auto it = areas_.begin(); it != areas_.end();) {
                if ((*it)->idle) {
                    idle.push_back(std::move(*it));
                    it = areas_.erase(it);
                } else {
                    ++it;
                }
            }
        }
        for (const auto& a : idle) (void)cudaFree(a->data);
    }

    CaptureAreaStats stats() {
        std::lock_guard lock(mutex_);
        CaptureAreaStats s;
        s.areas = areas_.size();
        for (const auto& a : areas_) {
            s.idle += a->idle ? 1 : 0;
            s.bytes += a->bytes;
        }
        return s;
    }

private:
    using ActiveKey = std::pair<unsigned long long, cudaStream_t>;

    CaptureArea* allocate(std::size_t bytes) {
        constexpr std::size_t granule = std::size_t(2) << 20;  // few distinct sizes, so areas get reused
        const std::size_t size = (bytes + granule - 1) / granule * granule;
        void* data = nullptr;
        cudaError_t s = cudaSuccess;
        {
            const RelaxedCaptureMode relaxed("allowing a workspace allocation during a capture");
            int current = -1;
            s = cudaGetDevice(&current);
            if (s == cudaSuccess && current != device_) s = cudaSetDevice(device_);
            if (s == cudaSuccess) s = cudaMalloc(&data, size);
            if (current >= 0 && current != device_) (void)cudaSetDevice(current);
        }
        check(s, "cudaMalloc", [&] {
            return fmt::format("allocating a {}-byte workspace area for work captured into a CUDA graph", size);
        });
        auto area = std::make_unique<CaptureArea>();
        area->owner = this;
        area->data = data;
        area->bytes = size;
        log(LogLevel::debug, "workspace area of {} bytes for captured work on device {}", size, device_);
        std::lock_guard lock(mutex_);
        areas_.push_back(std::move(area));
        return areas_.back().get();
    }

    // Runs on a CUDA-internal thread: no CUDA calls here.
    static void CUDART_CB on_release(void* p) {
        auto* area = static_cast<CaptureArea*>(p);
        CaptureAreas& self = *area->owner;
        std::lock_guard lock(self.mutex_);
        if (auto it = self.active_.find({area->capture, area->stream}); it != self.active_.end() && it->second == area)
            self.active_.erase(it);
        area->idle = true;
    }

    int device_;
    std::mutex mutex_;
    std::vector<std::unique_ptr<CaptureArea>> areas_;
    std::map<ActiveKey, CaptureArea*> active_;
};

// Per device, never destroyed: graphs (and so CUDA's release callbacks) may outlive everything.
struct DeviceWorkspaces {
    StreamWorkspace default_workspace;
    CaptureAreas capture_areas;
};

DeviceRegistry<DeviceWorkspaces>& device_workspaces() {
    static auto& d = *new DeviceRegistry<DeviceWorkspaces>();
    return d;
}

DeviceWorkspaces& workspaces_of(int device) {
    return device_workspaces().get(device, k_api, [](int d) {
        return new DeviceWorkspaces{StreamWorkspace(d, core::DeviceMemoryResource::default_resource(d)),
                                    CaptureAreas(d)};
    });
}

// The workspaces of custom memory resources, by device and resource; never destroyed.
struct SharedWorkspaces {
    std::mutex mutex;
    std::map<std::pair<int, core::MemoryResource*>, std::weak_ptr<StreamWorkspace>> map;
};

SharedWorkspaces& shared_workspaces() {
    static auto* s = new SharedWorkspaces();
    return *s;
}

}  // namespace

StreamWorkspace::StreamWorkspace(int device, std::shared_ptr<core::MemoryResource> resource)
    : device_(device), resource_(std::move(resource)) {
    check_device_ordinal(device, k_api);
}

StreamWorkspace::Lease StreamWorkspace::acquire(std::size_t bytes, core::StreamRef stream) {
    if (bytes == 0) return {};
    const cudaStream_t h = stream.handle();
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    unsigned long long capture = 0;
    cudaGraph_t graph = nullptr;
    check(cudaStreamGetCaptureInfo(h, &status, &capture, &graph), "cudaStreamGetCaptureInfo",
          "asking whether the stream is capturing a CUDA graph");
    if (status != cudaStreamCaptureStatusNone) [[unlikely]] {
        if (status != cudaStreamCaptureStatusActive)
            throw_cuda(cudaErrorStreamCaptureInvalidated, "gpumath workspace",
                       "the stream's capture was invalidated by an earlier error; end the capture and start again");
        return {{}, workspaces_of(device_).capture_areas.acquire(bytes, h, capture, graph), graph, capture};
    }
    Entry* entry = nullptr;
    {
        std::lock_guard lock(mutex_);
        std::unique_ptr<Entry>& slot =
            entries_[Key{h, h == cudaStreamPerThread ? std::this_thread::get_id() : std::thread::id{}}];
        if (!slot) slot = std::make_unique<Entry>();
        entry = slot.get();
        entry->pending.fetch_add(1, std::memory_order_relaxed);  // forget() leaves it in place until locked
    }
    Lease lease{std::unique_lock(entry->mutex), nullptr};
    entry->pending.fetch_sub(1, std::memory_order_release);
    if (entry->buffer.size_bytes() < bytes) {
        entry->buffer.reset(stream);
        entry->buffer = core::Buffer(bytes, stream, resource_);
        log(LogLevel::debug, "workspace for stream {} grown to {} bytes", static_cast<void*>(h), bytes);
    }
    lease.data = entry->buffer.data();
    return lease;
}

void StreamWorkspace::forget(cudaStream_t stream) noexcept {
    std::unique_ptr<Entry> owned;
    Entry* entry = nullptr;
    {
        std::lock_guard lock(mutex_);
        const auto it = entries_.find(Key{stream, std::thread::id{}});
        if (it == entries_.end()) return;
        entry = it->second.get();
        // An acquire between its lookup and its lock keeps the pointer: the entry stays, emptied.
        if (entry->pending.load(std::memory_order_acquire) == 0) {
            owned = std::move(it->second);
            entries_.erase(it);
        }
    }
    std::lock_guard entry_lock(entry->mutex);  // a lease on the stream ends first
    entry->buffer.reset(core::StreamRef(stream));
}

void StreamWorkspace::release() {
    std::lock_guard lock(mutex_);
    for (auto& [stream, entry] : entries_) {
        std::lock_guard entry_lock(entry->mutex);
        // The caller synchronized; the stream the area was allocated on may no longer exist.
        entry->buffer.reset(core::StreamRef{});
    }
}

std::shared_ptr<StreamWorkspace> stream_workspace(int device, const std::shared_ptr<core::MemoryResource>& resource) {
    if (!resource) return {std::shared_ptr<StreamWorkspace>(), &default_stream_workspace(device)};  // not owned
    check_device_ordinal(device, k_api);
    SharedWorkspaces& shared = shared_workspaces();
    std::lock_guard lock(shared.mutex);
    std::weak_ptr<StreamWorkspace>& slot = shared.map[{device, resource.get()}];
    if (std::shared_ptr<StreamWorkspace> w = slot.lock()) return w;
    // A workspace holds its resource, so an expired entry's address may be reused by a new
    // resource: drop expired entries as new ones are made.
    std::erase_if(shared.map, [](const auto& e) { return e.second.expired(); });
    auto w = std::make_shared<StreamWorkspace>(device, resource);
    shared.map[{device, resource.get()}] = w;
    return w;
}

StreamWorkspace& default_stream_workspace(int device) { return workspaces_of(device).default_workspace; }

void forget_stream(cudaStream_t stream) noexcept {
    if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) return;
    device_workspaces().for_each([&](int, DeviceWorkspaces& d) { d.default_workspace.forget(stream); });
    std::vector<std::shared_ptr<StreamWorkspace>> custom;
    try {
        SharedWorkspaces& shared = shared_workspaces();
        std::lock_guard lock(shared.mutex);
        for (const auto& [key, weak] : shared.map)
            if (std::shared_ptr<StreamWorkspace> w = weak.lock()) custom.push_back(std::move(w));
    } catch (const std::bad_alloc&) {
        // The areas found so far are freed; the others go with their plans' last one, as for a
        // stream made outside gpumath.
    }
    for (const std::shared_ptr<StreamWorkspace>& w : custom) w->forget(stream);
}

bool is_capturing(core::StreamRef stream, const char* api) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    check(cudaStreamIsCapturing(stream.handle(), &status), "cudaStreamIsCapturing",
          "asking whether the stream is capturing a CUDA graph");
    if (status == cudaStreamCaptureStatusInvalidated)
        throw_cuda(cudaErrorStreamCaptureInvalidated, api,
                   "the stream's capture was invalidated by an earlier error; end the capture and start again");
    return status == cudaStreamCaptureStatusActive;
}

void reject_capture(core::StreamRef stream, const char* api, std::string_view what) {
    if (is_capturing(stream, api)) [[unlikely]]
        throw_invalid(fmt::format("stream: it is capturing a CUDA graph; {}", what), api);
}

CaptureAreaStats capture_area_stats(int device) { return workspaces_of(device).capture_areas.stats(); }

}  // namespace gpumath::detail

namespace gpumath::core {

// Declared in memory.hpp, with the memory resources the areas come from.
void release_workspaces() {
    detail::device_workspaces().for_each([](int device, detail::DeviceWorkspaces& d) {
        Device(device).synchronize();
        d.default_workspace.release();
        d.capture_areas.release_idle();
    });
}

}  // namespace gpumath::core
