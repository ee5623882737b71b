// SPDX-License-Identifier: Apache-2.0
// Private: scratch memory kept per stream, so hot paths do not allocate on every call.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>

#include <gpumath/core/memory.hpp>
#include <gpumath/core/stream.hpp>

namespace gpumath::detail {

/// Grow-only scratch buffers, one per stream, from one memory resource. Work enqueued on one
/// stream is ordered, so a stream's buffer can be reused by every call on that stream; growing
/// frees the old buffer in stream order on the same stream. Thread-safe.
class StreamWorkspace {
public:
    explicit StreamWorkspace(std::shared_ptr<core::MemoryResource> resource = nullptr)
        : resource_(std::move(resource)) {}

    /// At least `bytes` of scratch usable by work enqueued on `stream` (nullptr when bytes == 0).
    void* get(std::size_t bytes, core::StreamRef stream) {
        if (bytes == 0) return nullptr;
        std::lock_guard lock(mutex_);
        core::Buffer& b = buffers_[stream.handle()];
        if (b.size_bytes() < bytes) {
            b.reset(stream);
            b = core::Buffer(bytes, stream, resource_);
        }
        return b.data();
    }

    /// Frees every buffer, each ordered on its own stream.
    void clear() {
        std::lock_guard lock(mutex_);
        buffers_.clear();
    }

private:
    std::mutex mutex_;
    std::shared_ptr<core::MemoryResource> resource_;
    std::unordered_map<cudaStream_t, core::Buffer> buffers_;
};

}  // namespace gpumath::detail
