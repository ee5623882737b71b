// SPDX-License-Identifier: Apache-2.0
// On a machine without a CUDA driver or device (as CI), every GPU entry point throws a CudaError
// that says so, and counting devices does not throw. On a GPU machine these tests skip.
#include <gtest/gtest.h>

#include <string>

#include <gpumath/core.hpp>
#include "core/driver_api.hpp"
#include <gpumath/tensor.hpp>

#include "common/test_util.hpp"

using namespace gpumath;

namespace {
template <class F>
void expect_no_device(F&& f) {
    try {
        f();
        ADD_FAILURE() << "expected CudaError, none thrown";
    } catch (const CudaError& e) {
        EXPECT_NE(std::string(e.what()).find("no CUDA driver/device"), std::string::npos) << e.what();
        EXPECT_NE(e.status(), 0);
        EXPECT_FALSE(e.api().empty());
    }
}
}  // namespace

class NoDriver : public ::testing::Test {
protected:
    void SetUp() override {
        if (test::has_gpu())
            GTEST_SKIP() << "a CUDA device is present: the no-driver behaviour cannot be observed here";
    }
};

TEST_F(NoDriver, CountIsZeroAndDoesNotThrow) {
    EXPECT_EQ(core::Device::count(), 0);
    EXPECT_EQ(core::Device::count(), 0);  // twice: no sticky state
}

TEST_F(NoDriver, EveryEntryPointSaysSo) {
    expect_no_device([] { (void)core::Device(0); });
    expect_no_device([] { (void)core::Device::current(); });
    expect_no_device([] { core::Stream s; });
    expect_no_device([] { core::Event e; });
    expect_no_device([] { core::Buffer b(16); });
    expect_no_device([] { core::DeviceMemoryResource pool; });
    expect_no_device([] { (void)core::DeviceMemoryResource::default_resource(); });
    expect_no_device([] { (void)Tensor::empty(DataType::f32, {4}); });
    expect_no_device([] { (void)detail::driver(); });
    EXPECT_EQ(detail::driver_if_available(), nullptr);
}

TEST_F(NoDriver, TheMessageNamesTheCauseAndWhatStillWorks) {
    // A user's first GPU call on a machine without a driver: not "CUDA driver version is
    // insufficient", which would send them to update a driver that is not there.
    test::expect_throw_with<CudaError>(
        [] { core::Stream s; }, {"no CUDA driver/device: no NVIDIA driver was found (libcuda.so.1 could not be loaded)",
                                 "install the NVIDIA driver", "still validates calls", "compiles with NVRTC",
                                 "links with nvJitLink", "creating a stream"});
}

TEST_F(NoDriver, ValidationStillRunsFirst) {
    // Bad input is reported as bad input, not as a missing device.
    EXPECT_THROW((void)TensorLayout(DataType::f32, {-2}), InvalidArgument);
    const std::vector<float> three(3, 1.0f);
    EXPECT_THROW((void)Tensor::from_host(three, {4}), InvalidArgument);
    EXPECT_THROW((void)core::Device(-1), InvalidArgument);  // wrong on any machine
}
