// SPDX-License-Identifier: Apache-2.0
// Workspaces are shared per (device, memory resource): plans with the same resource on the same
// device use one set of per-stream areas, whatever their number. Host-side bookkeeping only, so
// these run without a GPU (the areas themselves are never allocated here).
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#include <gpumath/core/memory.hpp>
#include <gpumath/error.hpp>
#include "core/stream_workspace.hpp"

namespace {

// A resource that is never asked for memory in these tests.
class HostResource final : public gpumath::core::MemoryResource {
public:
    [[nodiscard]] bool device_accessible() const noexcept override { return false; }
    [[nodiscard]] bool host_accessible() const noexcept override { return true; }

protected:
    void* do_allocate(std::size_t bytes, gpumath::core::StreamRef, std::size_t alignment) override {
        return std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
    }
    void do_deallocate(void* p, std::size_t, gpumath::core::StreamRef, std::size_t) noexcept override { std::free(p); }
};

}  // namespace

TEST(StreamWorkspaceRegistry, OnePerDeviceAndResource) {
    using gpumath::detail::stream_workspace;
    auto r1 = std::make_shared<HostResource>();
    auto r2 = std::make_shared<HostResource>();
    auto w1 = stream_workspace(0, r1);
    EXPECT_EQ(stream_workspace(0, r1), w1) << "a second plan with the same resource shares the workspace";
    EXPECT_NE(stream_workspace(0, r2), w1);
    EXPECT_NE(stream_workspace(1, r1), w1) << "another device has its own";
    EXPECT_EQ(w1->device(), 0);
    // The workspace holds its resource, and goes away with the last plan that holds it.
    EXPECT_EQ(r1.use_count(), 2);
    const std::weak_ptr<gpumath::detail::StreamWorkspace> weak = w1;
    w1.reset();
    EXPECT_TRUE(weak.expired());
    EXPECT_EQ(r1.use_count(), 1);
    const auto again = stream_workspace(0, r1);
    EXPECT_EQ(again->device(), 0);
    EXPECT_EQ(r1.use_count(), 2);
}

TEST(StreamWorkspaceRegistry, DeviceOrdinalsOutOfRange) {
    auto r = std::make_shared<HostResource>();
    EXPECT_THROW((void)gpumath::detail::stream_workspace(-1, r), gpumath::NotSupported);
    EXPECT_THROW((void)gpumath::detail::stream_workspace(64, r), gpumath::NotSupported);
}
