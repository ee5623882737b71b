// SPDX-License-Identifier: Apache-2.0
// DLPack 1.x's DLManagedTensorVersioned, without a GPU: adoption, ownership (a deleter that throws
// included), version and flag checks, and export. Built against a dlpack 1.x header (tests/core/CMakeLists.txt says
// where it comes from); the library itself may have been built against an older one, since these overloads are inline.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <gpumath/dlpack.hpp>
#include <gpumath/tensor.hpp>

#include "common/test_util.hpp"
#include "dlpack_test_util.hpp"

#if !defined(GPUMATH_HAS_DLPACK_VERSIONED)
#error "this test needs a DLPack 1.x header, which has DLManagedTensorVersioned"
#endif

using gpumath::DataType;
using gpumath::InvalidArgument;
using gpumath::Tensor;
using gpumath::test::captured_log;
using gpumath::test::expect_throw_with;
using gpumath::test::fake_device_pointer;

namespace {

struct Producer : gpumath::test::FakeProducer<DLManagedTensorVersioned> {
    Producer() { managed.version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION}; }
};

}  // namespace

TEST(DLPackVersioned, AdoptsAndCallsTheDeleterOnce) {
    Producer p;
    {
        Tensor t = Tensor::from_dlpack(p.refresh());
        EXPECT_EQ(t.data(), fake_device_pointer());
        EXPECT_EQ(t.shape(0), 2);
        Tensor moved(std::move(t));
        Tensor assigned;
        assigned = std::move(moved);
        EXPECT_EQ(p.deletes, 0);
        EXPECT_EQ(assigned.data(), fake_device_pointer());
    }
    EXPECT_EQ(p.deletes, 1);
}

TEST(DLPackVersioned, CallsTheDeleterOnceWhenValidationThrows) {
    Producer cpu;
    cpu.fake.tensor.device.device_type = kDLCPU;
    expect_throw_with<InvalidArgument>([&] { (void)Tensor::from_dlpack(cpu.refresh()); },
                                       {"Tensor::from_dlpack", "DLTensor.device.device_type", "kDLCPU"});
    EXPECT_EQ(cpu.deletes, 1);

    Producer strided;
    strided.fake.strides = {-3, 1};
    expect_throw_with<InvalidArgument>([&] { (void)Tensor::from_dlpack(strided.refresh()); }, {"DLTensor.strides[0]"});
    EXPECT_EQ(strided.deletes, 1);
}

TEST(DLPackVersioned, RefusesOtherMajorVersionsWithoutReadingTheTensor) {
    Producer p;
    p.refresh();
    p.managed.version.major = 2;
    p.managed.dl_tensor.ndim = -7;  // would be reported if it were read
    expect_throw_with<InvalidArgument>([&] { (void)Tensor::from_dlpack(&p.managed); },
                                       {"DLManagedTensorVersioned.version", "DLPack 2.", "major version 1"});
    EXPECT_EQ(p.deletes, 1);

    Producer old;
    old.refresh();
    old.managed.version = {0, 8};
    expect_throw_with<InvalidArgument>([&] { (void)Tensor::from_dlpack(&old.managed); },
                                       {"DLManagedTensorVersioned.version", "0.8"});
    EXPECT_EQ(old.deletes, 1);
}

TEST(DLPackVersioned, RefusesReadOnlyTensorsAndAcceptsOtherFlags) {
    Producer ro;
    ro.refresh();
    ro.managed.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
    expect_throw_with<InvalidArgument>([&] { (void)Tensor::from_dlpack(&ro.managed); },
                                       {"DLManagedTensorVersioned.flags", "read-only", "TensorView::from_dlpack"});
    EXPECT_EQ(ro.deletes, 1);
    // The view path reads it.
    EXPECT_EQ(gpumath::TensorView::from_dlpack(ro.managed.dl_tensor).data(), fake_device_pointer());

    Producer copied;
    copied.refresh();
    copied.managed.flags = DLPACK_FLAG_BITMASK_IS_COPIED;
    { const Tensor t = Tensor::from_dlpack(&copied.managed); }
    EXPECT_EQ(copied.deletes, 1);
}

TEST(DLPackVersioned, ADeleterThatThrowsRunsOnceAndIsLoggedOnEitherPath) {
    Producer kept;
    kept.throws = gpumath::test::DeleterThrows::std_exception;
    std::string log = captured_log([&] { const Tensor t = Tensor::from_dlpack(kept.refresh()); });
    EXPECT_EQ(kept.deletes, 1);
    EXPECT_NE(log.find("gpumath [error] DLPack: the producer's deleter"), std::string::npos) << log;
    EXPECT_NE(log.find(gpumath::test::deleter_error), std::string::npos) << log;

    // Refused for its flags, before the tensor is read: the InvalidArgument still reaches the caller.
    Producer read_only;
    read_only.throws = gpumath::test::DeleterThrows::std_exception;
    read_only.refresh();
    read_only.managed.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
    log = captured_log([&] {
        expect_throw_with<InvalidArgument>([&] { (void)Tensor::from_dlpack(&read_only.managed); },
                                           {"DLManagedTensorVersioned.flags", "read-only"});
    });
    EXPECT_EQ(read_only.deletes, 1);
    EXPECT_NE(log.find(gpumath::test::deleter_error), std::string::npos) << log;

    Producer odd;
    odd.throws = gpumath::test::DeleterThrows::non_std;
    odd.refresh();
    odd.managed.version.major = 2;
    log = captured_log([&] {
        expect_throw_with<InvalidArgument>([&] { (void)Tensor::from_dlpack(&odd.managed); },
                                           {"DLManagedTensorVersioned.version"});
    });
    EXPECT_EQ(odd.deletes, 1);
    EXPECT_NE(log.find("not a std::exception"), std::string::npos) << log;
}

TEST(DLPackVersioned, NullManagedTensor) {
    expect_throw_with<InvalidArgument>(
        [] { (void)Tensor::from_dlpack(static_cast<DLManagedTensorVersioned*>(nullptr)); }, {"managed", "null"});
}

TEST(DLPackVersioned, ExportRoundTrip) {
    Producer p;
    p.fake.shape = {3, 4};
    p.fake.strides = {1, 3};
    p.fake.reset().dtype = gpumath::to_dlpack(DataType::e4m3);
    Tensor t = Tensor::from_dlpack(p.refresh());

    DLManagedTensorVersioned* exported = std::move(t).to_dlpack_versioned();
    ASSERT_NE(exported, nullptr);
    EXPECT_FALSE(t.has_data());  // NOLINT(bugprone-use-after-move): to_dlpack_versioned moves the tensor out
    EXPECT_EQ(exported->version.major, std::uint32_t(DLPACK_MAJOR_VERSION));
    EXPECT_EQ(exported->version.minor, std::uint32_t(DLPACK_MINOR_VERSION));
    EXPECT_EQ(exported->flags, 0u);
    const DLTensor& dl = exported->dl_tensor;
    EXPECT_EQ(dl.data, fake_device_pointer());
    EXPECT_EQ(dl.device.device_type, kDLCUDAManaged);
    EXPECT_EQ(dl.dtype.code, kDLFloat8_e4m3fn);
    EXPECT_EQ(dl.dtype.bits, 8);
    ASSERT_EQ(dl.ndim, 2);
    EXPECT_EQ(std::vector<std::int64_t>(dl.shape, dl.shape + 2), (std::vector<std::int64_t>{3, 4}));
    EXPECT_EQ(std::vector<std::int64_t>(dl.strides, dl.strides + 2), (std::vector<std::int64_t>{1, 3}));
    {
        const Tensor again = Tensor::from_dlpack(exported);
        EXPECT_EQ(again.dtype(), DataType::e4m3);
        EXPECT_EQ(again.view().stride(1), 3);
        EXPECT_EQ(p.deletes, 0);
    }
    EXPECT_EQ(p.deletes, 1);

    // The exported deleter called directly releases the producer too.
    Producer q;
    DLManagedTensorVersioned* e = Tensor::from_dlpack(q.refresh()).to_dlpack_versioned();
    EXPECT_EQ(q.deletes, 0);
    e->deleter(e);
    EXPECT_EQ(q.deletes, 1);
}

TEST(DLPackVersioned, MixedWithTheLegacyStruct) {
    // A legacy tensor exported as a versioned one, and the reverse.
    gpumath::test::FakeProducer<DLManagedTensor> legacy;
    DLManagedTensorVersioned* v = Tensor::from_dlpack(legacy.refresh()).to_dlpack_versioned();
    DLManagedTensor* back = Tensor::from_dlpack(v).to_dlpack();
    EXPECT_EQ(back->dl_tensor.data, fake_device_pointer());
    EXPECT_EQ(legacy.deletes, 0);
    back->deleter(back);
    EXPECT_EQ(legacy.deletes, 1);
}
