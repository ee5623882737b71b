// SPDX-License-Identifier: Apache-2.0
// Private: scratch memory kept per stream, so hot paths do not allocate on every call, and kept
// apart for work captured into CUDA graphs.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>

#include <gpumath/core/memory.hpp>
#include <gpumath/core/stream.hpp>

namespace gpumath::detail {

/// Grow-only scratch areas, one per stream (per thread for `cudaStreamPerThread`), from one memory
/// resource on one device. Work enqueued on one stream is ordered, so a stream's area serves every
/// call on that stream; growing frees the old area in stream order on the same stream. `acquire`
/// keeps the stream's entry locked for as long as the lease lives, so a concurrent caller on the
/// same stream cannot free the area (by growing it) before this caller has enqueued the work that
/// uses it. Thread-safe.
///
/// A gpumath `core::Stream` frees its areas in order on itself just before it is destroyed
/// (forget_stream), so a stream per request does not grow device memory and no area is ever freed
/// on a destroyed stream's handle. Areas of streams made outside gpumath stay until
/// core::release_workspaces() or, for a custom memory resource, until its last plan goes (then
/// freed in order on their streams, which must still exist).
///
/// A stream that is capturing a CUDA graph never touches its area: the captured work gets an area
/// of its own (one per capture and stream, see CaptureAreas in the .cpp), owned by the graph and
/// recycled when the graph and its executable graphs are destroyed. So a graph replayed on any
/// stream never shares scratch memory with eager work or with another graph.
class StreamWorkspace {
public:
    StreamWorkspace(int device, std::shared_ptr<core::MemoryResource> resource);
    ~StreamWorkspace() = default;
    StreamWorkspace(const StreamWorkspace&) = delete;
    StreamWorkspace& operator=(const StreamWorkspace&) = delete;
    StreamWorkspace(StreamWorkspace&&) = delete;
    StreamWorkspace& operator=(StreamWorkspace&&) = delete;

    /// An area and the lock that keeps it alive: hold it until the work using `data` is enqueued.
    struct Lease {
        std::unique_lock<std::mutex> lock;
        void* data = nullptr;  // null for 0 bytes
        // When `stream` is capturing (asked for more than 0 bytes): the graph that owns `data`
        // and its capture sequence, for what else the captured work must keep alive.
        cudaGraph_t graph = nullptr;
        unsigned long long capture = 0;
    };

    /// At least `bytes` usable by work enqueued on `stream` while the lease is held.
    [[nodiscard]] Lease acquire(std::size_t bytes, core::StreamRef stream);

    /// Frees `stream`'s area in order on `stream`, which still exists, after any lease on it ends.
    void forget(cudaStream_t stream) noexcept;

    /// Frees every area. The caller makes sure that nothing using them is in flight or being
    /// enqueued (core::release_workspaces synchronizes the device first).
    void release();

    /// How many streams have an entry; for tests.
    [[nodiscard]] std::size_t entries() {
        std::lock_guard lock(mutex_);
        return entries_.size();
    }

    /// The device the areas live on.
    [[nodiscard]] int device() const noexcept { return device_; }

private:
    struct Entry {
        std::mutex mutex;
        core::Buffer buffer;
        std::atomic<int> pending{0};  // acquires between the map lookup and locking `mutex`
    };
    // cudaStreamPerThread is one handle naming a different stream in every thread: its areas are
    // kept per thread (the thread id is the default one for every other handle).
    struct Key {
        cudaStream_t stream = nullptr;
        std::thread::id thread;
        friend bool operator==(const Key&, const Key&) = default;
    };
    struct KeyHash {
        std::size_t operator()(const Key& k) const noexcept {
            return std::hash<const void*>{}(static_cast<const void*>(k.stream)) ^
                   (std::hash<std::thread::id>{}(k.thread) << 1);
        }
    };
    std::mutex mutex_;
    int device_;
    std::shared_ptr<core::MemoryResource> resource_;
    std::unordered_map<Key, std::unique_ptr<Entry>, KeyHash> entries_;
};

/// The workspace of `device` for `resource`: one per (device, memory resource), shared by every
/// matmul and FFT plan that uses that pair. A null `resource` means the device's default pool,
/// whose workspace lives until the process exits; others live while a plan holds them.
[[nodiscard]] std::shared_ptr<StreamWorkspace> stream_workspace(int device,
                                                                const std::shared_ptr<core::MemoryResource>& resource);

/// Frees the areas of `stream`, a stream gpumath created and is about to destroy, in every
/// workspace, in order on `stream`. Called by core::Stream's destructor.
void forget_stream(cudaStream_t stream) noexcept;

/// The areas of `device`'s default memory pool (`stream_workspace(device, nullptr)`).
[[nodiscard]] StreamWorkspace& default_stream_workspace(int device);

/// True when `stream` is capturing a CUDA graph. CudaError when its capture was invalidated (the
/// capture has failed already; gpumath enqueues nothing on it).
[[nodiscard]] bool is_capturing(core::StreamRef stream, const char* api);

/// InvalidArgument when `stream` is capturing a CUDA graph: `what` says what cannot run inside a
/// capture and what to do instead. Nothing is enqueued.
void reject_capture(core::StreamRef stream, const char* api, std::string_view what);

/// Areas that captured graphs own, on `device`: how many exist and how many are idle (their graphs
/// destroyed), and their bytes. For tests and diagnostics.
struct CaptureAreaStats {
    std::size_t areas = 0;
    std::size_t idle = 0;
    std::size_t bytes = 0;
};
[[nodiscard]] CaptureAreaStats capture_area_stats(int device);

}  // namespace gpumath::detail
