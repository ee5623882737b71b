// SPDX-License-Identifier: Apache-2.0
// DLPack without a GPU: dtype mapping, every validation rule of TensorView::from_dlpack, ownership of
// adopted managed tensors (the deleter runs exactly once, also when from_dlpack throws, and an
// exception the deleter throws is logged, never the end of the process) and the
// metadata of to_dlpack. The tensors point at made-up addresses that are never dereferenced.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <gpumath/core/device.hpp>
#include <gpumath/dlpack.hpp>
#include <gpumath/tensor.hpp>

#include "common/test_util.hpp"
#include "dlpack_test_util.hpp"

using gpumath::DataType;
using gpumath::InvalidArgument;
using gpumath::NotSupported;
using gpumath::Tensor;
using gpumath::TensorView;
using gpumath::test::captured_log;
using gpumath::test::expect_throw_with;
using gpumath::test::fake_device_pointer;
using gpumath::test::FakeDLTensor;
using Producer = gpumath::test::FakeProducer<DLManagedTensor>;

namespace {

DLDataType dl_type(std::uint8_t code, std::uint8_t bits, std::uint16_t lanes = 1) {
    DLDataType t{};
    t.code = code;
    t.bits = bits;
    t.lanes = lanes;
    return t;
}

void expect_refused(const DLTensor& t, std::initializer_list<std::string> needles) {
    expect_throw_with<InvalidArgument>([&] { (void)TensorView::from_dlpack(t); }, needles);
}

}  // namespace

TEST(DLPackDataType, MapsEveryGpumathType) {
    const std::vector<std::pair<DLDataType, DataType>> pairs = {
        {dl_type(kDLFloat, 16), DataType::f16},   {dl_type(kDLBfloat, 16), DataType::bf16},
        {dl_type(kDLFloat, 32), DataType::f32},   {dl_type(kDLFloat, 64), DataType::f64},
        {dl_type(kDLComplex, 64), DataType::c32}, {dl_type(kDLComplex, 128), DataType::c64},
        {dl_type(10, 8), DataType::e4m3},         {dl_type(12, 8), DataType::e5m2},
        {dl_type(kDLInt, 8), DataType::i8},       {dl_type(kDLInt, 32), DataType::i32},
        {dl_type(kDLInt, 64), DataType::i64},
    };
    ASSERT_EQ(pairs.size(), std::size_t(gpumath::data_type_count));
    for (const auto& [dl, type] : pairs) {
        EXPECT_EQ(gpumath::to_data_type(dl), type) << gpumath::to_string(type);
        const DLDataType back = gpumath::to_dlpack(type);
        EXPECT_EQ(back.code, dl.code) << gpumath::to_string(type);
        EXPECT_EQ(back.bits, dl.bits) << gpumath::to_string(type);
        EXPECT_EQ(back.lanes, 1) << gpumath::to_string(type);
    }
    // Past the enumerators: no type a consumer would take, and to_data_type refuses it.
    const DLDataType none = gpumath::to_dlpack(static_cast<DataType>(200));
    EXPECT_EQ(none.bits, 0);
    EXPECT_EQ(none.lanes, 0);
    EXPECT_THROW((void)gpumath::to_data_type(none), InvalidArgument);
}

TEST(DLPackDataType, RefusesTypesGpumathLacks) {
    const auto refused = [](DLDataType t, std::initializer_list<std::string> needles) {
        expect_throw_with<InvalidArgument>([&] { (void)gpumath::to_data_type(t); }, needles);
    };
    refused(dl_type(6, 8), {"DLTensor.dtype", "kDLBool", "no boolean type"});
    refused(dl_type(kDLUInt, 8), {"DLTensor.dtype", "kDLUInt", "signed"});
    refused(dl_type(kDLUInt, 32), {"DLTensor.dtype", "kDLUInt"});
    refused(dl_type(kDLInt, 16), {"DLTensor.dtype", "kDLInt", "16 bits"});
    refused(dl_type(kDLInt, 128), {"DLTensor.dtype", "128 bits"});
    refused(dl_type(kDLFloat, 8), {"DLTensor.dtype", "kDLFloat", "8 bits"});
    refused(dl_type(kDLBfloat, 32), {"DLTensor.dtype", "kDLBfloat"});
    refused(dl_type(kDLComplex, 32), {"DLTensor.dtype", "kDLComplex"});
    refused(dl_type(kDLOpaqueHandle, 64), {"DLTensor.dtype", "kDLOpaqueHandle"});
    refused(dl_type(11, 8), {"DLTensor.dtype", "(11)"});  // kDLFloat8_e4m3fnuz: another e4m3
    refused(dl_type(kDLFloat, 32, 4), {"DLTensor.dtype.lanes", "4 lanes"});
    refused(dl_type(kDLFloat, 32, 0), {"DLTensor.dtype.lanes", "0 lanes"});
}

TEST(DLPackView, RowMajorWhenStridesAreNull) {
    FakeDLTensor f;
    const TensorView v = TensorView::from_dlpack(f.tensor);
    EXPECT_EQ(v.data(), fake_device_pointer());
    EXPECT_EQ(v.dtype(), DataType::f32);
    ASSERT_EQ(v.rank(), 2);
    EXPECT_EQ(v.shape(0), 2);
    EXPECT_EQ(v.shape(1), 3);
    EXPECT_EQ(v.stride(0), 3);
    EXPECT_EQ(v.stride(1), 1);
}

TEST(DLPackView, StridesInElementsAndByteOffset) {
    FakeDLTensor f;
    f.strides = {1, 2};  // column-major (2, 3)
    DLTensor& t = f.sync();
    t.byte_offset = 64;
    t.dtype = dl_type(kDLBfloat, 16);
    const TensorView v = TensorView::from_dlpack(t);
    EXPECT_EQ(v.data(), static_cast<char*>(fake_device_pointer()) + 64);
    EXPECT_EQ(v.dtype(), DataType::bf16);
    EXPECT_EQ(v.stride(0), 1);
    EXPECT_EQ(v.stride(1), 2);
    EXPECT_FALSE(v.is_contiguous());
    // Broadcast (stride 0) dimensions are kept.
    f.strides = {0, 1};
    EXPECT_EQ(TensorView::from_dlpack(f.sync()).stride(0), 0);
}

TEST(DLPackView, ScalarsEmptyTensorsAndTheDeviceTypesAccepted) {
    FakeDLTensor f;
    f.shape.clear();
    DLTensor& t = f.reset();
    const TensorView scalar = TensorView::from_dlpack(t);
    EXPECT_EQ(scalar.rank(), 0);
    EXPECT_EQ(scalar.size(), 1);

    FakeDLTensor e;
    e.shape = {4, 0};
    DLTensor& empty = e.reset();
    empty.data = nullptr;
    const TensorView ev = TensorView::from_dlpack(empty);
    EXPECT_EQ(ev.size(), 0);
    EXPECT_EQ(ev.data(), nullptr);

    FakeDLTensor h;
    h.tensor.device.device_type = kDLCUDAHost;
    EXPECT_EQ(TensorView::from_dlpack(h.tensor).size(), 6);

    FakeDLTensor r;
    r.shape = {1, 2, 1, 2, 1, 2, 1, 2};
    EXPECT_EQ(TensorView::from_dlpack(r.reset()).rank(), gpumath::max_rank);
}

TEST(DLPackView, RefusesHostAndForeignDevices) {
    FakeDLTensor f;
    f.tensor.device.device_type = kDLCPU;
    expect_refused(f.tensor, {"TensorView::from_dlpack", "DLTensor.device.device_type", "kDLCPU", "copy"});
    f.tensor.device.device_type = kDLROCM;
    expect_refused(f.tensor, {"DLTensor.device.device_type", "kDLROCM", "(10)"});
    f.tensor.device.device_type = kDLOpenCL;
    expect_refused(f.tensor, {"DLTensor.device.device_type", "kDLOpenCL"});
    f.tensor.device.device_type = static_cast<DLDeviceType>(15);  // no CUDA type (kDLWebGPU in DLPack 1.x)
    expect_refused(f.tensor, {"DLTensor.device.device_type", "(15)"});
}

TEST(DLPackView, RefusesDeviceTypesPastTheEnumerators) {
    // A C producer may write any int32 into device_type, which DLPack 0.6's DLDeviceType cannot hold
    // in C++: gpumath reads the field's bits (reading 1000 through the enum was a UBSan report).
    for (const std::int32_t type : {1000, -1, INT32_MIN}) {
        FakeDLTensor f;
        std::memcpy(&f.tensor.device.device_type, &type, sizeof type);
        std::string value = "(";  // built in steps: GCC 12's -Wrestrict misfires on "(" + std::string
        value += std::to_string(type);
        value += ")";
        expect_refused(f.tensor, {"DLTensor.device.device_type", value, "not CUDA memory"});
        Producer p;
        std::memcpy(&p.fake.tensor.device.device_type, &type, sizeof type);
        expect_throw_with<InvalidArgument>([&] { (void)Tensor::from_dlpack(p.refresh()); },
                                           {"Tensor::from_dlpack", "DLTensor.device.device_type"});
        EXPECT_EQ(p.deletes, 1);
    }
}

TEST(DLPackView, RefusesDevicesGpumathCannotUse) {
    FakeDLTensor f;
    f.tensor.device.device_id = -1;
    expect_refused(f.tensor, {"DLTensor.device.device_id", "-1", "negative"});
    f.tensor.device.device_type = kDLCUDA;
    expect_refused(f.tensor, {"DLTensor.device.device_id", "-1"});
    // One past the last device: absent on every machine (all of them on one without a GPU).
    const int count = gpumath::core::Device::count();
    f.tensor.device.device_id = count;
    expect_refused(f.tensor, {"DLTensor.device.device_id", "CUDA device " + std::to_string(count), "not present"});
}

TEST(DLPackView, RefusesBadRanksAndShapes) {
    FakeDLTensor f;
    f.tensor.ndim = -1;
    expect_refused(f.tensor, {"DLTensor.ndim", "-1"});
    f.tensor.ndim = gpumath::max_rank + 1;
    expect_refused(f.tensor, {"DLTensor.ndim", "9 dimensions", "0 to 8"});
    f.reset().shape = nullptr;
    expect_refused(f.tensor, {"DLTensor.shape", "null"});
    f.shape = {2, -3};
    expect_refused(f.reset(), {"DLTensor.shape[1]", "-3", "negative"});
}

TEST(DLPackView, RefusesNegativeStrides) {
    FakeDLTensor f;
    f.strides = {3, -1};
    expect_refused(f.sync(), {"DLTensor.strides[1]", "-1", "negative"});
    f.strides = {-3, 1};
    expect_refused(f.sync(), {"DLTensor.strides[0]", "-3"});
}

TEST(DLPackView, RefusesStridesThatOverflow) {
    FakeDLTensor f;
    f.strides = {std::int64_t{1} << 62, 1};
    expect_refused(f.sync(), {"strides", "int64"});
    // Named for the DLTensor and the function that read it, not for TensorLayout.
    try {
        (void)TensorView::from_dlpack(f.sync());
        ADD_FAILURE() << "accepted";
    } catch (const InvalidArgument& e) {
        EXPECT_EQ(e.api(), "TensorView::from_dlpack");
        EXPECT_NE(std::string(e.what()).find("DLTensor.strides:"), std::string::npos) << e.what();
    }
    f.strides = {};
    f.shape = {INT64_MAX, 2};
    expect_refused(f.reset(), {"TensorView::from_dlpack", "DLTensor.shape:", "more elements than fit in int64"});
}

TEST(DLPackView, RefusesMissingAndMisalignedData) {
    FakeDLTensor f;
    f.tensor.data = nullptr;
    expect_refused(f.tensor, {"DLTensor.data", "null", "(2, 3)"});
    f.reset().byte_offset = 2;
    expect_refused(f.tensor, {"DLTensor.byte_offset", "not aligned", "4-byte"});
    f.tensor.dtype = dl_type(kDLComplex, 128);
    f.tensor.byte_offset = 8;
    expect_refused(f.tensor, {"DLTensor.byte_offset", "16-byte", "c64"});
    f.tensor.byte_offset = UINT64_MAX - 3;
    expect_refused(f.tensor, {"DLTensor.byte_offset", "overflows"});
    // An offset past PTRDIFF_MAX that stays below the top of the address space is added as an
    // address (as a pointer index it was a UBSan report).
    f.tensor.dtype = dl_type(kDLFloat, 32);
    f.tensor.byte_offset = std::uint64_t{1} << 63;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(TensorView::from_dlpack(f.tensor).data()),
              reinterpret_cast<std::uintptr_t>(fake_device_pointer()) + (std::uintptr_t{1} << 63));
    // The tensor's last byte past the top of the address space.
    f.tensor.byte_offset = UINT64_MAX - reinterpret_cast<std::uintptr_t>(fake_device_pointer()) - 15;
    expect_refused(f.tensor, {"DLTensor.byte_offset", "24 bytes", "past the end of the address space"});
    f.tensor.dtype = dl_type(kDLComplex, 128);
    // An offset aligned to the element is fine.
    f.tensor.byte_offset = 32;
    EXPECT_EQ(TensorView::from_dlpack(f.tensor).data(), static_cast<char*>(fake_device_pointer()) + 32);
}

TEST(DLPackView, ReportsTheDeviceBeforeTheDtype) {
    // The checks run in a fixed order: device, dtype, shape and strides, data, device presence.
    FakeDLTensor f;
    f.tensor.device.device_type = kDLCPU;
    f.tensor.dtype = dl_type(6, 8);
    expect_refused(f.tensor, {"DLTensor.device.device_type"});
    f.tensor.device.device_type = kDLCUDAManaged;
    f.tensor.ndim = -1;
    expect_refused(f.tensor, {"DLTensor.dtype"});
}

TEST(DLPackTensor, AdoptsAndCallsTheDeleterOnceWhenDestroyed) {
    Producer p;
    {
        Tensor t = Tensor::from_dlpack(p.refresh());
        EXPECT_EQ(p.deletes, 0);
        EXPECT_TRUE(t.has_data());
        EXPECT_EQ(t.data(), fake_device_pointer());
        EXPECT_EQ(t.dtype(), DataType::f32);
        EXPECT_EQ(t.shape(1), 3);
        EXPECT_TRUE(t.buffer().empty()) << "adopted memory is the producer's, not a gpumath Buffer";
    }
    EXPECT_EQ(p.deletes, 1);
}

TEST(DLPackTensor, MovesKeepOneOwner) {
    Producer p;
    {
        Tensor a = Tensor::from_dlpack(p.refresh());
        Tensor b(std::move(a));
        EXPECT_FALSE(a.has_data());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
        EXPECT_EQ(b.data(), fake_device_pointer());
        Tensor c;
        c = std::move(b);
        EXPECT_EQ(p.deletes, 0);
        EXPECT_EQ(c.data(), fake_device_pointer());
    }
    EXPECT_EQ(p.deletes, 1);

    // Assigning over an adopted tensor releases it at once.
    Producer first, second;
    Tensor t = Tensor::from_dlpack(first.refresh());
    t = Tensor::from_dlpack(second.refresh());
    EXPECT_EQ(first.deletes, 1);
    EXPECT_EQ(second.deletes, 0);
    t = Tensor();
    EXPECT_EQ(second.deletes, 1);
}

TEST(DLPackTensor, CallsTheDeleterOnceWhenValidationThrows) {
    const auto refused = [](Producer& p, std::initializer_list<std::string> needles) {
        expect_throw_with<InvalidArgument>([&] { (void)Tensor::from_dlpack(p.refresh()); }, needles);
        EXPECT_EQ(p.deletes, 1);
    };
    Producer cpu;
    cpu.fake.tensor.device.device_type = kDLCPU;
    refused(cpu, {"Tensor::from_dlpack", "DLTensor.device.device_type", "kDLCPU"});
    Producer boolean;
    boolean.fake.tensor.dtype = dl_type(6, 8);
    refused(boolean, {"DLTensor.dtype", "kDLBool"});
    Producer lanes;
    lanes.fake.tensor.dtype.lanes = 2;
    refused(lanes, {"DLTensor.dtype.lanes"});
    Producer negative;
    negative.fake.strides = {3, -1};
    refused(negative, {"DLTensor.strides[1]"});
    Producer absent;
    absent.fake.tensor.device.device_type = kDLCUDA;
    absent.fake.tensor.device.device_id = gpumath::core::Device::count();
    refused(absent, {"DLTensor.device.device_id", "not present"});
    Producer null_data;
    null_data.fake.tensor.data = nullptr;
    refused(null_data, {"DLTensor.data"});
}

TEST(DLPackTensor, NullManagedTensorsAndDeleters) {
    expect_throw_with<InvalidArgument>([] { (void)Tensor::from_dlpack(static_cast<DLManagedTensor*>(nullptr)); },
                                       {"Tensor::from_dlpack", "managed", "null"});
    // A producer may give no deleter; nothing is called then.
    Producer p;
    p.managed.deleter = nullptr;
    { const Tensor t = Tensor::from_dlpack(p.refresh()); }
    p.fake.tensor.device.device_type = kDLCPU;
    EXPECT_THROW((void)Tensor::from_dlpack(p.refresh()), InvalidArgument);
    EXPECT_EQ(p.deletes, 0);
}

TEST(DLPackTensor, ADeleterThatThrowsRunsOnceAndIsLoggedWhenTheLastOwnerGoes) {
    Producer p;
    p.throws = gpumath::test::DeleterThrows::std_exception;
    const std::string log = captured_log([&] {
        Tensor t = Tensor::from_dlpack(p.refresh());
        EXPECT_EQ(p.deletes, 0);
        Tensor moved(std::move(t));
        EXPECT_EQ(p.deletes, 0);
    });
    EXPECT_EQ(p.deletes, 1);
    EXPECT_NE(log.find("gpumath [error] DLPack: the producer's deleter"), std::string::npos) << log;
    EXPECT_NE(log.find(std::string("(") + gpumath::test::deleter_error + ")"), std::string::npos) << log;

    // Through an export: the consumer's deleter releases the last owner.
    Producer exported_p;
    exported_p.throws = gpumath::test::DeleterThrows::std_exception;
    DLManagedTensor* exported = Tensor::from_dlpack(exported_p.refresh()).to_dlpack();
    const std::string export_log = captured_log([&] { exported->deleter(exported); });
    EXPECT_EQ(exported_p.deletes, 1);
    EXPECT_NE(export_log.find(gpumath::test::deleter_error), std::string::npos) << export_log;
}

TEST(DLPackTensor, ADeleterThatThrowsOnTheRefusalPathLeavesTheCallerTheInvalidArgument) {
    Producer p;
    p.throws = gpumath::test::DeleterThrows::std_exception;
    p.fake.tensor.dtype = dl_type(kDLUInt, 8);
    const std::string log = captured_log([&] {
        expect_throw_with<InvalidArgument>([&] { (void)Tensor::from_dlpack(p.refresh()); },
                                           {"Tensor::from_dlpack", "DLTensor.dtype", "kDLUInt", "signed"});
    });
    EXPECT_EQ(p.deletes, 1);
    EXPECT_NE(log.find("DLPack: the producer's deleter"), std::string::npos) << log;
    EXPECT_NE(log.find(gpumath::test::deleter_error), std::string::npos) << log;
}

TEST(DLPackTensor, ADeleterThatThrowsSomethingElseThanAnExceptionIsContainedToo) {
    Producer p;
    p.throws = gpumath::test::DeleterThrows::non_std;
    std::string log = captured_log([&] { const Tensor t = Tensor::from_dlpack(p.refresh()); });
    EXPECT_EQ(p.deletes, 1);
    EXPECT_NE(log.find("DLPack: the producer's deleter of an adopted tensor threw an exception that is not a "
                       "std::exception"),
              std::string::npos)
        << log;

    Producer refused;
    refused.throws = gpumath::test::DeleterThrows::non_std;
    refused.fake.tensor.device.device_type = kDLCPU;
    log = captured_log(
        [&] { expect_throw_with<InvalidArgument>([&] { (void)Tensor::from_dlpack(refused.refresh()); }, {"kDLCPU"}); });
    EXPECT_EQ(refused.deletes, 1);
    EXPECT_NE(log.find("not a std::exception"), std::string::npos) << log;
}

TEST(DLPackTensor, ToHostRefusesStridedAdoptedTensorsBeforeCopying) {
    Producer p;
    p.fake.strides = {1, 2};
    const Tensor t = Tensor::from_dlpack(p.refresh());
    expect_throw_with<InvalidArgument>([&] { (void)t.to_host<float>(); },
                                       {"Tensor::to_host: layout: ", "strides (1, 2)", "not row-major"});
    expect_throw_with<InvalidArgument>([&] { (void)t.to_host<double>(); }, {"Tensor::to_host", "f32"});
}

// An adopted tensor may claim more elements than any host holds: to_host refuses it before it
// allocates the host vector (whose allocation would throw std::bad_alloc or abort under a sanitizer).
TEST(DLPackTensor, ToHostRefusesTensorsLargerThanTheHostsMemoryBeforeAllocating) {
    Producer p;
    p.fake.shape = {std::int64_t(1) << 50};
    p.fake.reset();
    const Tensor t = Tensor::from_dlpack(p.refresh());
    expect_throw_with<NotSupported>(
        [&] { (void)t.to_host<float>(); },
        {"Tensor::to_host: size: ", "1125899906842624 elements of 4 bytes", "host's memory"});
}

TEST(DLPackExport, AdoptedTensorRoundTripsWithItsMetadata) {
    Producer p;
    p.fake.shape = {4, 5, 6};
    p.fake.strides = {1, 4, 20};
    DLTensor& src = p.fake.reset();
    src.device.device_type = kDLCUDAHost;
    src.byte_offset = 128;
    src.dtype = dl_type(kDLComplex, 64);
    Tensor t = Tensor::from_dlpack(p.refresh());

    DLManagedTensor* exported = std::move(t).to_dlpack();
    ASSERT_NE(exported, nullptr);
    EXPECT_FALSE(t.has_data());  // NOLINT(bugprone-use-after-move): to_dlpack moves the tensor out
    const DLTensor& dl = exported->dl_tensor;
    EXPECT_EQ(dl.device.device_type, kDLCUDAHost);
    EXPECT_EQ(dl.device.device_id, 0);
    EXPECT_EQ(dl.data, static_cast<char*>(fake_device_pointer()) + 128);
    EXPECT_EQ(dl.byte_offset, 0u);
    EXPECT_EQ(dl.dtype.code, kDLComplex);
    EXPECT_EQ(dl.dtype.bits, 64);
    EXPECT_EQ(dl.dtype.lanes, 1);
    ASSERT_EQ(dl.ndim, 3);
    EXPECT_EQ(std::vector<std::int64_t>(dl.shape, dl.shape + 3), (std::vector<std::int64_t>{4, 5, 6}));
    ASSERT_NE(dl.strides, nullptr);
    EXPECT_EQ(std::vector<std::int64_t>(dl.strides, dl.strides + 3), (std::vector<std::int64_t>{1, 4, 20}));

    // The DLTensor reads back as the same view, and adopting the export again keeps one chain of
    // owners: the producer's deleter runs once, when the last of them goes.
    const TensorView v = TensorView::from_dlpack(dl);
    EXPECT_EQ(v.data(), dl.data);
    EXPECT_EQ(v.layout(), gpumath::TensorLayout(DataType::c32, {4, 5, 6}, {1, 4, 20}));
    {
        const Tensor again = Tensor::from_dlpack(exported);
        EXPECT_EQ(again.data(), dl.data);
        EXPECT_EQ(p.deletes, 0);
    }
    EXPECT_EQ(p.deletes, 1);
}

TEST(DLPackExport, DeleterOfTheExportReleasesTheProducer) {
    Producer p;
    p.fake.tensor.device.device_type = kDLCUDAManaged;
    p.fake.tensor.device.device_id = 3;
    Tensor t = Tensor::from_dlpack(p.refresh());
    DLManagedTensor* exported = std::move(t).to_dlpack();
    EXPECT_EQ(exported->dl_tensor.device.device_type, kDLCUDAManaged);
    EXPECT_EQ(exported->dl_tensor.device.device_id, 3);
    EXPECT_EQ(p.deletes, 0);
    exported->deleter(exported);
    EXPECT_EQ(p.deletes, 1);
}

TEST(DLPackExport, EveryDtypeAndAnEmptyTensor) {
    for (int i = 0; i < gpumath::data_type_count; ++i) {
        const auto type = static_cast<DataType>(i);
        Producer p;
        p.fake.tensor.dtype = gpumath::to_dlpack(type);
        Tensor t = Tensor::from_dlpack(p.refresh());
        EXPECT_EQ(t.dtype(), type);
        DLManagedTensor* exported = std::move(t).to_dlpack();
        EXPECT_EQ(gpumath::to_data_type(exported->dl_tensor.dtype), type);
        exported->deleter(exported);
        EXPECT_EQ(p.deletes, 1);
    }
    // A tensor without memory exports as an empty kDLCUDA tensor, without asking the runtime.
    DLManagedTensor* empty = Tensor().to_dlpack();
    EXPECT_EQ(empty->dl_tensor.device.device_type, kDLCUDA);
    EXPECT_EQ(empty->dl_tensor.data, nullptr);
    ASSERT_EQ(empty->dl_tensor.ndim, 1);
    EXPECT_EQ(empty->dl_tensor.shape[0], 0);
    empty->deleter(empty);
}
