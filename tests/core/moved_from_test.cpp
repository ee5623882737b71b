// SPDX-License-Identifier: Apache-2.0
// Moved-from runtime objects that can be made without a GPU (Stream adopting a handle, Buffer and
// Tensor from a host memory resource): methods throw InvalidArgument or act as on an empty object,
// before any CUDA call; noexcept accessors return null/empty. Event needs a GPU: runtime_test.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include <gpumath/core.hpp>
#include <gpumath/tensor.hpp>

#include "common/test_util.hpp"

using namespace gpumath;

namespace {

// Host memory behind the MemoryResource interface, counting what is still allocated.
class HostResource final : public core::MemoryResource {
public:
    [[nodiscard]] bool device_accessible() const noexcept override { return false; }
    [[nodiscard]] bool host_accessible() const noexcept override { return true; }
    int live = 0;

protected:
    void* do_allocate(std::size_t bytes, core::StreamRef, std::size_t alignment) override {
        ++live;
        return std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
    }
    void do_deallocate(void* ptr, std::size_t, core::StreamRef, std::size_t) noexcept override {
        --live;
        std::free(ptr);  // NOLINT(cppcoreguidelines-no-malloc)
    }
};

}  // namespace

TEST(MovedFrom, Stream) {
    // A handle no CUDA call will see: the test releases it before the Stream could destroy it.
    const auto fake = reinterpret_cast<cudaStream_t>(std::uintptr_t(0x5eed));  // NOLINT(performance-no-int-to-ptr)
    core::Stream a = core::Stream::adopt(fake);
    core::Stream b = std::move(a);
    EXPECT_EQ(b.handle(), fake);
    // NOLINTBEGIN(bugprone-use-after-move): the moved-from state is what is tested
    EXPECT_EQ(a.handle(), nullptr);
    EXPECT_FALSE(a);
    EXPECT_TRUE(b);
    // Before: these acted on the default stream (CudaError without a GPU, silently wrong with one).
    const std::initializer_list<std::string> moved = {"this Stream is empty (moved from or released)"};
    test::expect_throw_with<InvalidArgument>([&] { a.synchronize(); }, {"Stream::synchronize: this Stream is empty"});
    test::expect_throw_with<InvalidArgument>([&] { (void)a.ready(); }, moved);
    test::expect_throw_with<InvalidArgument>([&] { (void)a.priority(); }, moved);
    test::expect_throw_with<InvalidArgument>([&] { (void)a.record(); }, moved);
    test::expect_throw_with<InvalidArgument>([&] { a.wait(core::StreamRef(fake)); }, {"Stream::wait", "empty"});
    // NOLINTEND(bugprone-use-after-move)
    // Released: empty as well.
    EXPECT_EQ(b.release(), fake);
    test::expect_throw_with<InvalidArgument>([&] { b.synchronize(); }, moved);
}

TEST(MovedFrom, Buffer) {
    auto host = std::make_shared<HostResource>();
    {
        core::Buffer a(64, {}, host);
        ASSERT_NE(a.data(), nullptr);
        core::Buffer b = std::move(a);
        EXPECT_EQ(b.size_bytes(), 64u);
        // NOLINTBEGIN(bugprone-use-after-move): the moved-from state is what is tested
        EXPECT_TRUE(a.empty());
        EXPECT_EQ(a.data(), nullptr);
        EXPECT_EQ(a.size_bytes(), 0u);
        EXPECT_TRUE(a.to_host<float>().empty());  // no copy, no synchronize
        const std::vector<float> sixteen(16, 1.0f);
        test::expect_throw_with<InvalidArgument>([&] { a.copy_from(std::span<const float>(sixteen)); },
                                                 {"Buffer::copy_from", "destination holds 0 bytes", "source 64 bytes"});
        test::expect_throw_with<InvalidArgument>([&] { (void)a.view<float>({4}); }, {"data: null pointer", "(4,)"});
        a.reset();  // no double free
        // NOLINTEND(bugprone-use-after-move)
        EXPECT_EQ(host->live, 1);
    }
    EXPECT_EQ(host->live, 0);
}

TEST(MovedFrom, Tensor) {
    auto host = std::make_shared<HostResource>();
    {
        Tensor a = Tensor::empty(DataType::f32, {2, 3}, {}, host);
        Tensor b = std::move(a);
        EXPECT_EQ(b.size(), 6);
        EXPECT_TRUE(b.has_data());
        // NOLINTBEGIN(bugprone-use-after-move): the moved-from state is what is tested
        EXPECT_FALSE(a.has_data());
        EXPECT_EQ(a.data(), nullptr);
        EXPECT_EQ(a.size(), 0);
        EXPECT_TRUE(a.to_host<float>().empty());
        // NOLINTEND(bugprone-use-after-move)
        EXPECT_EQ(host->live, 1);
    }
    EXPECT_EQ(host->live, 0);
}
