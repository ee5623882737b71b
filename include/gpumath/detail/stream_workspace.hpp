// SPDX-License-Identifier: Apache-2.0
// Private: scratch memory kept per stream, so hot paths do not allocate on every call.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <gpumath/core/memory.hpp>
#include <gpumath/core/stream.hpp>

namespace gpumath::detail {

/// Grow-only scratch areas, one per stream (per thread for `cudaStreamPerThread`), from one memory
/// resource. Work enqueued on one stream
/// is ordered, so a stream's area serves every call on that stream; growing frees the old area in
/// stream order on the same stream. `acquire` keeps the stream's entry locked for as long as the
/// lease lives, so a concurrent caller on the same stream cannot free the area (by growing it)
/// before this caller has enqueued the work that uses it. Thread-safe.
class StreamWorkspace {
public:
    explicit StreamWorkspace(std::shared_ptr<core::MemoryResource> resource = nullptr)
        : resource_(std::move(resource)) {}

    /// An area and the lock that keeps it alive: hold it until the work using `data` is enqueued.
    struct Lease {
        std::unique_lock<std::mutex> lock;
        void* data = nullptr;  // null for 0 bytes
    };

    /// At least `bytes` usable by work enqueued on `stream` while the lease is held.
    [[nodiscard]] Lease acquire(std::size_t bytes, core::StreamRef stream);

    /// Frees every area. The caller makes sure that nothing using them is in flight or being
    /// enqueued (release_default_stream_workspaces synchronizes the device first).
    void release();

private:
    struct Entry {
        std::mutex mutex;
        core::Buffer buffer;
    };
    // cudaStreamPerThread is one handle naming a different stream in every thread: its areas are
    // kept per thread (the thread id is the default one for every other handle).
    struct Key {
        cudaStream_t stream;
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
    std::shared_ptr<core::MemoryResource> resource_;
    std::unordered_map<Key, std::unique_ptr<Entry>, KeyHash> entries_;
};

/// The areas of `device`'s default memory pool, shared by every matmul and FFT that has no memory
/// resource of its own; alive until the process exits.
[[nodiscard]] StreamWorkspace& default_stream_workspace(int device);

/// Synchronizes each device that has default areas and frees them (they grow again on demand).
void release_default_stream_workspaces();

}  // namespace gpumath::detail
