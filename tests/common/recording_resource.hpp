// SPDX-License-Identifier: Apache-2.0
// A memory resource for GPU tests: the device's default pool, recording the stream of every
// allocation and deallocation (thread-safe), so a test can check when and on which stream gpumath
// frees what it leased.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <cuda_runtime_api.h>

#include <gpumath/core/memory.hpp>

namespace gpumath::test {

class RecordingResource final : public core::MemoryResource {
public:
    [[nodiscard]] bool device_accessible() const noexcept override { return true; }
    [[nodiscard]] bool host_accessible() const noexcept override { return false; }

    /// The streams of the allocations and deallocations so far, in order.
    [[nodiscard]] std::vector<cudaStream_t> allocations() const {
        std::lock_guard lock(mutex_);
        return allocations_;
    }
    [[nodiscard]] std::vector<cudaStream_t> deallocations() const {
        std::lock_guard lock(mutex_);
        return deallocations_;
    }
    /// Blocks allocated and not yet deallocated.
    [[nodiscard]] std::ptrdiff_t live() const {
        std::lock_guard lock(mutex_);
        return std::ptrdiff_t(allocations_.size()) - std::ptrdiff_t(deallocations_.size());
    }

protected:
    void* do_allocate(std::size_t bytes, core::StreamRef stream, std::size_t alignment) override {
        void* p = pool_->allocate(bytes, stream, alignment);
        std::lock_guard lock(mutex_);
        allocations_.push_back(stream.handle());
        return p;
    }
    void do_deallocate(void* ptr, std::size_t bytes, core::StreamRef stream, std::size_t alignment) noexcept override {
        {
            std::lock_guard lock(mutex_);
            deallocations_.push_back(stream.handle());
        }
        pool_->deallocate(ptr, bytes, stream, alignment);
    }

private:
    std::shared_ptr<core::DeviceMemoryResource> pool_ = core::DeviceMemoryResource::default_resource();
    mutable std::mutex mutex_;
    std::vector<cudaStream_t> allocations_, deallocations_;
};

}  // namespace gpumath::test
