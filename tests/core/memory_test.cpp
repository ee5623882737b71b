// SPDX-License-Identifier: Apache-2.0
// The alignment contract of MemoryResource, Buffer and Tensor::empty, with host memory behind the
// interface: validated before the resource is asked, honoured, passed back to deallocate, and a
// resource that ignores it is caught. Runs without a GPU (the device pool: runtime_test.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include <gpumath/core.hpp>
#include <gpumath/tensor.hpp>

#include "common/test_util.hpp"

using namespace gpumath;

namespace {

bool aligned(const void* p, std::size_t alignment) { return reinterpret_cast<std::uintptr_t>(p) % alignment == 0; }

// Host memory; `misalign` makes it ignore the requested alignment (a resource written before
// alignments existed), handing out a block 16 bytes past an aligned one.
class HostResource final : public core::MemoryResource {
public:
    explicit HostResource(bool misalign = false) : misalign_(misalign) {}
    [[nodiscard]] bool device_accessible() const noexcept override { return false; }
    [[nodiscard]] bool host_accessible() const noexcept override { return true; }
    int allocations = 0;
    int live = 0;
    std::size_t last_alignment = 0;
    std::size_t last_freed_alignment = 0;

protected:
    void* do_allocate(std::size_t bytes, core::StreamRef, std::size_t alignment) override {
        ++allocations;
        ++live;
        last_alignment = alignment;
        const std::size_t a = misalign_ ? 512 : alignment;
        auto* p = static_cast<char*>(std::aligned_alloc(a, (bytes + 16 + a - 1) / a * a));
        return misalign_ ? p + 16 : p;
    }
    void do_deallocate(void* ptr, std::size_t, core::StreamRef, std::size_t alignment) noexcept override {
        --live;
        last_freed_alignment = alignment;
        std::free(misalign_ ? static_cast<char*>(ptr) - 16 : ptr);  // NOLINT(cppcoreguidelines-no-malloc)
    }

private:
    bool misalign_;
};

// A resource that reports failure as std::pmr's null-returning resources do.
class NullResource final : public core::MemoryResource {
public:
    [[nodiscard]] bool device_accessible() const noexcept override { return false; }
    [[nodiscard]] bool host_accessible() const noexcept override { return true; }
    int frees = 0;

protected:
    void* do_allocate(std::size_t, core::StreamRef, std::size_t) override { return nullptr; }
    void do_deallocate(void*, std::size_t, core::StreamRef, std::size_t) noexcept override { ++frees; }
};

}  // namespace

TEST(MemoryResource, ANullBlockForNonZeroBytesIsAnAllocationFailure) {
    auto r = std::make_shared<NullResource>();
    try {
        (void)r->allocate(64);
        ADD_FAILURE() << "a null block was accepted";
    } catch (const CudaError& e) {
        EXPECT_EQ(e.status(), int(cudaErrorMemoryAllocation));
        EXPECT_EQ(e.api(), "MemoryResource::allocate");
        EXPECT_NE(std::string(e.what()).find("null pointer) for 64 bytes"), std::string::npos) << e.what();
    }
    EXPECT_EQ(r->allocate(0), nullptr);  // zero bytes are not asked for
    // Before: a Buffer of 64 bytes at address 0, and Tensor::empty blaming its own null data.
    EXPECT_THROW(core::Buffer(64, {}, r), CudaError);
    EXPECT_THROW((void)Tensor::empty(DataType::f32, {4}, {}, r), CudaError);
    EXPECT_EQ(r->frees, 0);
}

TEST(MemoryResource, DefaultAlignmentIs256AndIsPassedOn) {
    static_assert(core::MemoryResource::default_alignment == 256);
    HostResource r;
    void* p = r.allocate(100);
    EXPECT_EQ(r.last_alignment, 256u);
    EXPECT_TRUE(aligned(p, 256));
    r.deallocate(p, 100);
    EXPECT_EQ(r.last_freed_alignment, 256u);
    for (std::size_t a : {1u, 8u, 512u, 4096u, 65536u}) {
        void* q = r.allocate(3, {}, a);
        EXPECT_EQ(r.last_alignment, a);
        EXPECT_TRUE(aligned(q, a)) << a;
        r.deallocate(q, 3, {}, a);
        EXPECT_EQ(r.last_freed_alignment, a);
    }
    EXPECT_EQ(r.live, 0);
}

TEST(MemoryResource, AlignmentsThatAreNotPowersOfTwoAreRefusedFirst) {
    HostResource r;
    for (std::size_t a : {0u, 3u, 48u, 384u, 1000u}) {
        test::expect_throw_with<InvalidArgument>([&] { (void)r.allocate(64, {}, a); },
                                                 {"MemoryResource::allocate", "is not a power of two"});
        EXPECT_THROW((void)r.allocate(0, {}, a), InvalidArgument);  // also for zero bytes
    }
    EXPECT_EQ(r.allocations, 0);
    EXPECT_EQ(r.allocate(0, {}, 64), nullptr);
}

TEST(MemoryResource, ABlockLessAlignedThanAskedIsGivenBackAndNotSupported) {
    HostResource r(/*misalign=*/true);
    test::expect_throw_with<NotSupported>(
        [&] { (void)r.allocate(64, {}, 256); },
        {"MemoryResource::allocate", "256 bytes were requested", "returned a block aligned to 16 bytes"});
    EXPECT_EQ(r.allocations, 1);
    EXPECT_EQ(r.live, 0);  // deallocated, with the alignment it was asked for
    EXPECT_EQ(r.last_freed_alignment, 256u);
    void* p = r.allocate(64, {}, 16);  // what it does honour
    EXPECT_TRUE(aligned(p, 16));
    r.deallocate(p, 64, {}, 16);
}

TEST(Buffer, AlignmentReachesTheResourceAndTheFree) {
    auto r = std::make_shared<HostResource>();
    {
        core::Buffer b(1000, {}, r, 4096);
        EXPECT_EQ(b.alignment(), 4096u);
        EXPECT_TRUE(aligned(b.data(), 4096));
        EXPECT_EQ(r->last_alignment, 4096u);
        core::Buffer moved = std::move(b);
        EXPECT_EQ(moved.alignment(), 4096u);
    }
    EXPECT_EQ(r->live, 0);
    EXPECT_EQ(r->last_freed_alignment, 4096u);
    EXPECT_EQ(core::Buffer(8, {}, r).alignment(), core::MemoryResource::default_alignment);
    // Refused before the default pool (which would need a device) is looked up.
    EXPECT_THROW(core::Buffer(8, {}, nullptr, 24), InvalidArgument);
}

TEST(Tensor, EmptyTakesAnAlignment) {
    auto r = std::make_shared<HostResource>();
    Tensor t = Tensor::empty(DataType::f32, {3, 5}, {}, r, 1024);
    EXPECT_TRUE(aligned(t.data(), 1024));
    EXPECT_EQ(t.buffer().alignment(), 1024u);
    EXPECT_EQ(r->last_alignment, 1024u);
    EXPECT_THROW((void)Tensor::empty(DataType::f32, {3}, {}, r, 100), InvalidArgument);
}

TEST(Tensor, EmptyTensorsOfEveryShapeAreRowMajor) {
    auto r = std::make_shared<HostResource>();
    // gpumath's own layouts of no element: an extent 0 anywhere, not only first.
    for (const std::vector<std::int64_t>& shape : {std::vector<std::int64_t>{0, 2}, {2, 0}, {3, 0, 5}, {0}}) {
        Tensor t = Tensor::empty(DataType::f32, shape, {}, r);
        EXPECT_TRUE(t.layout().is_contiguous()) << gpumath::to_string(t.layout());
        EXPECT_TRUE(t.to_host<float>().empty()) << gpumath::to_string(t.layout());
    }
    EXPECT_TRUE(Tensor::from_host(std::vector<float>{}, {3, 0}, {}, r).to_host<float>().empty());
}

TEST(DeviceMemoryResource, DevicesBelowMinusOneAreRefusedOnAnyMachine) {
    // -1 means the current device; -7 meant it too, silently.
    test::expect_throw_with<InvalidArgument>([] { core::DeviceMemoryResource pool(-7); },
                                             {"DeviceMemoryResource", "device: -7", "-1 for the current device"});
    test::expect_throw_with<InvalidArgument>([] { (void)core::DeviceMemoryResource::default_resource(-2); },
                                             {"DeviceMemoryResource::default_resource", "device: -2"});
}
