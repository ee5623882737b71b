// SPDX-License-Identifier: Apache-2.0
// DLPack on a real GPU: gpumath tensors exported and adopted back with their data, the memory
// kept alive until the last deleter, device types of each memory resource, and a producer's
// cudaMalloc'ed tensor used by gpumath and freed by its own deleter exactly once.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <numeric>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include <gpumath/core.hpp>
#include <gpumath/dlpack.hpp>
#include <gpumath/tensor.hpp>

#include "common/recording_resource.hpp"
#include "common/test_util.hpp"

using namespace gpumath;

namespace {

// A producer outside gpumath: cudaMalloc'ed f32 memory and a deleter that frees it and counts.
struct CudaProducer {
    std::vector<std::int64_t> shape;
    DLManagedTensor managed{};
    int deletes = 0;

    CudaProducer(const std::vector<float>& values, std::vector<std::int64_t> extents) : shape(std::move(extents)) {
        void* data = nullptr;
        EXPECT_EQ(cudaMalloc(&data, values.size() * sizeof(float)), cudaSuccess);
        EXPECT_EQ(cudaMemcpy(data, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
        int device = 0;
        EXPECT_EQ(cudaGetDevice(&device), cudaSuccess);
        DLTensor& t = managed.dl_tensor;
        t.data = data;
        t.device.device_type = kDLCUDA;
        t.device.device_id = device;
        t.ndim = static_cast<int>(shape.size());
        t.dtype.code = kDLFloat;
        t.dtype.bits = 32;
        t.dtype.lanes = 1;
        t.shape = shape.data();
        managed.manager_ctx = this;
        managed.deleter = [](DLManagedTensor* self) {
            auto* p = static_cast<CudaProducer*>(self->manager_ctx);
            EXPECT_EQ(cudaFree(self->dl_tensor.data), cudaSuccess);
            ++p->deletes;
        };
    }
    CudaProducer(const CudaProducer&) = delete;
    CudaProducer& operator=(const CudaProducer&) = delete;
};

}  // namespace

TEST(DLPackGpu, ExportedTensorRoundTripsWithItsData) {
    GPUMATH_REQUIRE_GPU();
    std::vector<float> values(6 * 7);
    std::iota(values.begin(), values.end(), 1.0f);
    core::Stream stream;
    auto resource = std::make_shared<test::RecordingResource>();
    Tensor t = Tensor::from_host(values, {6, 7}, stream, resource);
    void* const data = t.data();

    DLManagedTensor* exported = std::move(t).to_dlpack();
    EXPECT_FALSE(t.has_data());  // NOLINT(bugprone-use-after-move): to_dlpack moves the tensor out
    EXPECT_EQ(exported->dl_tensor.device.device_type, kDLCUDA);
    EXPECT_EQ(exported->dl_tensor.device.device_id, core::Device::current().ordinal());
    EXPECT_EQ(exported->dl_tensor.data, data);
    EXPECT_EQ(resource->deallocations().size(), 0u);

    {
        const Tensor back = Tensor::from_dlpack(exported);
        EXPECT_EQ(back.data(), data);
        EXPECT_TRUE(back.buffer().empty());
        EXPECT_EQ(back.to_host<float>(stream), values);
        EXPECT_EQ(resource->deallocations().size(), 0u) << "the memory must live as long as the adopted tensor";
    }
    EXPECT_EQ(resource->deallocations().size(), 1u);
    stream.synchronize();
}

TEST(DLPackGpu, DeviceTypesOfGpumathsResources) {
    GPUMATH_REQUIRE_GPU();
    core::Stream stream;
    const int device = core::Device::current().ordinal();
    const auto export_of = [&](std::shared_ptr<core::MemoryResource> resource) {
        Tensor t = Tensor::empty(DataType::f64, {3, 2}, stream, std::move(resource));
        return std::move(t).to_dlpack();
    };
    DLManagedTensor* pooled = export_of(nullptr);
    EXPECT_EQ(pooled->dl_tensor.device.device_type, kDLCUDA);
    EXPECT_EQ(pooled->dl_tensor.device.device_id, device);
    EXPECT_EQ(pooled->dl_tensor.dtype.code, kDLFloat);
    EXPECT_EQ(pooled->dl_tensor.dtype.bits, 64);
    pooled->deleter(pooled);
    DLManagedTensor* pinned = export_of(core::PinnedMemoryResource::default_resource());
    EXPECT_EQ(pinned->dl_tensor.device.device_type, kDLCUDAHost);
    pinned->deleter(pinned);
    DLManagedTensor* managed = export_of(core::ManagedMemoryResource::default_resource());
    EXPECT_EQ(managed->dl_tensor.device.device_type, kDLCUDAManaged);
    managed->deleter(managed);
    stream.synchronize();
}

TEST(DLPackGpu, ProducerTensorIsUsedAndFreedOnce) {
    GPUMATH_REQUIRE_GPU();
    std::vector<float> values(4 * 8);
    std::iota(values.begin(), values.end(), -5.0f);
    CudaProducer producer(values, {4, 8});
    {
        Tensor t = Tensor::from_dlpack(&producer.managed);
        EXPECT_EQ(t.to_host<float>(), values);
        // gpumath reads and writes it as its own: copy into a gpumath tensor and back.
        core::Stream stream;
        Tensor copy = Tensor::empty(t.layout(), stream);
        detail::copy_async(copy.data(), t.data(), std::size_t(t.size()) * sizeof(float), stream);
        EXPECT_EQ(copy.to_host<float>(stream), values);
        Tensor moved = std::move(t);
        EXPECT_EQ(producer.deletes, 0);
        EXPECT_EQ(moved.to_host<float>(), values) << "the memory must stay alive after a move";
    }
    EXPECT_EQ(producer.deletes, 1);
}

TEST(DLPackGpu, ProducerTensorRefusedOnAnAbsentDevice) {
    GPUMATH_REQUIRE_GPU();
    CudaProducer producer(std::vector<float>(4, 1.0f), {4});
    producer.managed.dl_tensor.device.device_id = core::Device::count();
    test::expect_throw_with<InvalidArgument>([&] { (void)Tensor::from_dlpack(&producer.managed); },
                                             {"DLTensor.device.device_id", "not present"});
    EXPECT_EQ(producer.deletes, 1);
}

#if defined(GPUMATH_HAS_DLPACK_VERSIONED)
TEST(DLPackGpu, VersionedRoundTrip) {
    GPUMATH_REQUIRE_GPU();
    const std::vector<float> values = {1, 2, 3, 4, 5, 6};
    core::Stream stream;
    auto resource = std::make_shared<test::RecordingResource>();
    Tensor t = Tensor::from_host(values, {2, 3}, stream, resource);
    DLManagedTensorVersioned* exported = std::move(t).to_dlpack_versioned();
    EXPECT_EQ(exported->version.major, 1u);
    EXPECT_EQ(exported->dl_tensor.device.device_type, kDLCUDA);
    {
        const Tensor back = Tensor::from_dlpack(exported);
        EXPECT_EQ(back.to_host<float>(stream), values);
        EXPECT_EQ(resource->deallocations().size(), 0u);
    }
    EXPECT_EQ(resource->deallocations().size(), 1u);
    stream.synchronize();
}
#endif
