// SPDX-License-Identifier: Apache-2.0
// The element-type and kernel-argument customization points, in a translation unit that has only
// the light headers: CUDA's element types are declared by <gpumath/types.hpp>, not defined.
#include <gtest/gtest.h>

#include <cstdint>
#include <type_traits>

#include <gpumath/core/launch.hpp>
#include <gpumath/tensor.hpp>
#include <gpumath/types.hpp>

#include "common/test_util.hpp"

#if defined(__CUDA_FP16_H__) || defined(__CUDA_BF16_H__) || defined(__CUDA_FP8_H__) || defined(CU_COMPLEX_H_)
#error "tensor.hpp and core/launch.hpp must not include CUDA's element-type headers"
#endif

namespace {

using gpumath::DataType;
using gpumath::TensorView;

/// A type of the user's own with the bytes of an f16.
struct UserHalf {
    std::uint16_t bits;
};

/// A handle the user passes to kernels as its device pointer.
struct UserHandle {
    void* device_pointer;
    int owner;
};

// An address that is never dereferenced (views and argument packing only carry it).
template <class T>
T* fake_pointer(std::uintptr_t address = 0x10000) {
    return reinterpret_cast<T*>(address);
}

}  // namespace

template <>
struct gpumath::DataTypeTraits<UserHalf> : std::integral_constant<DataType, DataType::f16> {};

template <>
struct gpumath::core::KernelArgument<UserHandle> {
    using type = void*;
    static void* get(const UserHandle& h) noexcept { return h.device_pointer; }
};

TEST(ElementTypes, CudaTypesMapWithoutTheirDefinitions) {
    static_assert(gpumath::data_type_of<__half>() == DataType::f16);
    static_assert(gpumath::data_type_of<const __nv_bfloat16>() == DataType::bf16);
    static_assert(gpumath::data_type_of<__nv_fp8_e4m3>() == DataType::e4m3);
    static_assert(gpumath::data_type_of<__nv_fp8_e5m2>() == DataType::e5m2);
    static_assert(gpumath::data_type_of<float2>() == DataType::c32);   // cuComplex
    static_assert(gpumath::data_type_of<double2>() == DataType::c64);  // cuDoubleComplex
    static_assert(gpumath::is_element_type_v<volatile const __half>);
    static_assert(!gpumath::is_element_type_v<unsigned> && !gpumath::is_element_type_v<char>);
    static_assert(!gpumath::is_element_type_v<__half*> && !gpumath::is_element_type_v<float&>);

    __half* p = fake_pointer<__half>();
    const TensorView v(p, {2, 3});
    EXPECT_EQ(v.dtype(), DataType::f16);
    EXPECT_EQ(v.data(), static_cast<void*>(p));
    EXPECT_EQ(v.span_bytes(), 12);
    EXPECT_EQ(v.data_as<__half>(), p);

    const auto* q = fake_pointer<const __nv_fp8_e5m2>();
    const std::int64_t shape[] = {4, 8};
    const std::int64_t strides[] = {16, 1};
    const TensorView w(q, shape, strides);
    EXPECT_EQ(w.dtype(), DataType::e5m2);
    EXPECT_EQ(w.span_bytes(), 3 * 16 + 8);
}

TEST(ElementTypes, UserSpecializationReachesTensorView) {
    static_assert(gpumath::data_type_of<UserHalf>() == DataType::f16);
    static_assert(gpumath::is_element_type_v<const UserHalf>);

    UserHalf* p = fake_pointer<UserHalf>();
    const TensorView v(p, {5});
    EXPECT_EQ(v.dtype(), DataType::f16);
    EXPECT_EQ(v.span_bytes(), 10);
    EXPECT_EQ(v.data_as<UserHalf>(), p);
    EXPECT_EQ(static_cast<void*>(v.data_as<__half>()), static_cast<void*>(p));  // both are f16
    gpumath::test::expect_throw_with<gpumath::InvalidArgument>([&] { (void)v.data_as<float>(); }, {"f32", "f16"});
}

TEST(KernelArguments, VocabularyTypesPassTheirDevicePointer) {
    using gpumath::core::KernelArgument;
    static_assert(std::is_same_v<KernelArgument<TensorView>::type, void*>);
    static_assert(std::is_same_v<KernelArgument<gpumath::Tensor>::type, void*>);
    static_assert(std::is_same_v<KernelArgument<gpumath::core::Buffer>::type, void*>);
    static_assert(std::is_same_v<KernelArgument<std::nullptr_t>::type, void*>);
    static_assert(std::is_same_v<KernelArgument<float>::type, float>);

    float* p = fake_pointer<float>(0x20000);
    EXPECT_EQ(KernelArgument<TensorView>::get(TensorView(p, {3, 3})), static_cast<void*>(p));
    EXPECT_EQ(KernelArgument<gpumath::Tensor>::get(gpumath::Tensor()), nullptr);
    EXPECT_EQ(KernelArgument<gpumath::core::Buffer>::get(gpumath::core::Buffer()), nullptr);
    EXPECT_EQ(KernelArgument<std::nullptr_t>::get(nullptr), nullptr);
    EXPECT_EQ(KernelArgument<double>::get(2.5), 2.5);
}

TEST(KernelArguments, UserSpecializationDecidesWhatTheKernelReceives) {
    using gpumath::core::KernelArgument;
    int* p = fake_pointer<int>(0x30000);
    EXPECT_EQ(KernelArgument<UserHandle>::get(UserHandle{p, 7}), static_cast<void*>(p));

    // The sizes launch() compares with the kernel's parameters are those of what is passed.
    const auto& infos = gpumath::detail::arg_infos<UserHandle, TensorView, gpumath::Tensor, float, std::int16_t>;
    EXPECT_EQ(infos[0].size, sizeof(void*));  // not sizeof(UserHandle)
    EXPECT_EQ(infos[1].size, sizeof(void*));  // not the whole view
    EXPECT_EQ(infos[2].size, sizeof(void*));
    EXPECT_EQ(infos[3].size, 4U);
    EXPECT_EQ(infos[4].size, 2U);
    EXPECT_EQ(infos[5].size, 0U);  // terminator
    static_assert(sizeof(UserHandle) > sizeof(void*) && sizeof(TensorView) > sizeof(void*));
}
