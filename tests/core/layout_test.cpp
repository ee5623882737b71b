// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <complex>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <gpumath/cuda_types.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/tensor.hpp>
#include <gpumath/types.hpp>

#include "common/test_util.hpp"

using gpumath::DataType;
using gpumath::TensorLayout;
using gpumath::TensorView;
using gpumath::test::expect_throw_with;

TEST(DataType, SizesNamesAndMapping) {
    EXPECT_EQ(gpumath::size_of(DataType::f16), 2u);
    EXPECT_EQ(gpumath::size_of(DataType::bf16), 2u);
    EXPECT_EQ(gpumath::size_of(DataType::f32), 4u);
    EXPECT_EQ(gpumath::size_of(DataType::f64), 8u);
    EXPECT_EQ(gpumath::size_of(DataType::c32), 8u);
    EXPECT_EQ(gpumath::size_of(DataType::c64), 16u);
    EXPECT_EQ(gpumath::size_of(DataType::e4m3), 1u);
    EXPECT_EQ(gpumath::size_of(DataType::e5m2), 1u);
    EXPECT_EQ(gpumath::size_of(DataType::i8), 1u);
    EXPECT_EQ(gpumath::size_of(DataType::i32), 4u);
    EXPECT_EQ(gpumath::to_string(DataType::bf16), "bf16");
    EXPECT_EQ(gpumath::to_string(DataType::c64), "c64");
    EXPECT_EQ(gpumath::to_string(DataType::e4m3), "e4m3");
    static_assert(gpumath::data_type_of<float>() == DataType::f32);
    static_assert(gpumath::data_type_of<const double>() == DataType::f64);
    static_assert(gpumath::data_type_of<__half>() == DataType::f16);
    static_assert(gpumath::data_type_of<__nv_bfloat16>() == DataType::bf16);
    static_assert(gpumath::data_type_of<std::complex<float>>() == DataType::c32);
    static_assert(gpumath::data_type_of<cuComplex>() == DataType::c32);
    static_assert(gpumath::data_type_of<cuDoubleComplex>() == DataType::c64);
    static_assert(gpumath::data_type_of<std::complex<double>>() == DataType::c64);
    static_assert(gpumath::data_type_of<__nv_fp8_e4m3>() == DataType::e4m3);
    static_assert(gpumath::data_type_of<__nv_fp8_e5m2>() == DataType::e5m2);
    static_assert(gpumath::data_type_of<std::int8_t>() == DataType::i8);
    static_assert(gpumath::data_type_of<std::int32_t>() == DataType::i32);
    static_assert(gpumath::data_type_of<std::int64_t>() == DataType::i64);
    static_assert(!gpumath::is_element_type_v<unsigned>);
    static_assert(sizeof(__nv_fp8_e4m3) == 1 && sizeof(__half) == 2 && sizeof(cuDoubleComplex) == 16);
    EXPECT_EQ(gpumath::to_cuda(DataType::bf16), CUDA_R_16BF);
    EXPECT_EQ(gpumath::to_cuda(DataType::c32), CUDA_C_32F);
}

TEST(TensorLayout, RowMajorDefaults) {
    TensorLayout l(DataType::f32, {2, 3, 4});
    EXPECT_EQ(l.rank(), 3);
    EXPECT_EQ(l.size(), 24);
    EXPECT_EQ(l.stride(0), 12);
    EXPECT_EQ(l.stride(1), 4);
    EXPECT_EQ(l.stride(2), 1);
    EXPECT_EQ(l.stride(-1), 1);
    EXPECT_EQ(l.shape(-3), 2);
    EXPECT_TRUE(l.is_contiguous());
    EXPECT_EQ(l.span_elements(), 24);
    EXPECT_EQ(l.span_bytes(), 96);
    EXPECT_EQ(gpumath::to_string(l), "f32 (2, 3, 4) strides (12, 4, 1)");
}

TEST(TensorLayout, ScalarEmptyAndMaxRank) {
    TensorLayout scalar;
    EXPECT_EQ(scalar.rank(), 0);
    EXPECT_EQ(scalar.size(), 1);
    EXPECT_EQ(scalar.span_elements(), 1);
    TensorLayout empty(DataType::f16, {3, 0, 5});
    EXPECT_EQ(empty.size(), 0);
    EXPECT_EQ(empty.span_bytes(), 0);
    // The strides of an empty layout are not bounded: 127 * 2^61 before the empty dimension once
    // overflowed in span_elements (a UBSan report from the validation fuzz).
    const TensorLayout huge_stride(DataType::f32, {128, 0}, {std::int64_t(1) << 61, 1});
    EXPECT_EQ(huge_stride.span_elements(), 0);
    EXPECT_EQ(huge_stride.span_bytes(), 0);
    // No element, so no order to break: contiguous whatever the strides (as NumPy and PyTorch say).
    EXPECT_TRUE(empty.is_contiguous());
    EXPECT_TRUE(TensorLayout(DataType::f32, {2, 0}).is_contiguous());  // strides (1, 1)
    EXPECT_TRUE(huge_stride.is_contiguous());
    EXPECT_FALSE(TensorLayout(DataType::f32, {2, 3}, {1, 2}).is_contiguous());
    TensorLayout r8(DataType::i8, {1, 2, 1, 2, 1, 2, 1, 2});
    EXPECT_EQ(r8.rank(), 8);
    EXPECT_EQ(r8.stride(0), 16);
    static_assert(sizeof(TensorLayout) <= 2 * 8 * 8 + 8, "layouts are stored inline");
}

TEST(TensorLayout, ExplicitStridesTransposeAndBroadcast) {
    TensorLayout t(DataType::f64, {3, 5}, {1, 3});  // column-major 3x5
    EXPECT_FALSE(t.is_contiguous());
    EXPECT_EQ(t.span_elements(), 15);
    TensorLayout b(DataType::f32, {4, 3, 5}, {0, 5, 1});  // broadcast batch
    EXPECT_EQ(b.size(), 60);
    EXPECT_EQ(b.span_elements(), 15);
    EXPECT_EQ(t, TensorLayout(DataType::f64, {3, 5}, {1, 3}));
    EXPECT_FALSE(t == TensorLayout(DataType::f32, {3, 5}, {1, 3}));
    EXPECT_EQ(t.transposed(), TensorLayout(DataType::f64, {5, 3}, {3, 1}));
    // Below rank 2 there is nothing to swap: the message names the rank.
    expect_throw_with<gpumath::InvalidArgument>([] { (void)TensorLayout(DataType::f32, {4}).transposed(); },
                                                {"TensorLayout::transposed: rank: 1;", "rank >= 2"});
    expect_throw_with<gpumath::InvalidArgument>([] { (void)TensorLayout().transposed(); },
                                                {"TensorLayout::transposed: rank: 0;"});
}

TEST(TensorLayout, RejectsBadShapesAndStrides) {
    expect_throw_with<gpumath::InvalidArgument>(
        [] {
            TensorLayout(DataType::f32, {2, -3});
        },
        {"shape", "-3", "dimension 1", ">= 0"});
    expect_throw_with<gpumath::InvalidArgument>(
        [] {
            TensorLayout(DataType::f32, {1, 1, 1, 1, 1, 1, 1, 1, 1});
        },
        {"rank 9", "at most 8"});
    expect_throw_with<gpumath::InvalidArgument>(
        [] {
            TensorLayout(DataType::f32, {2, 3}, {1});
        },
        {"strides", "1 values", "rank 2"});
    expect_throw_with<gpumath::InvalidArgument>(
        [] {
            TensorLayout(DataType::f32, {2, 3}, {3, -1});
        },
        {"strides", "-1", "negative"});
    expect_throw_with<gpumath::InvalidArgument>(
        [] {
            TensorLayout(DataType::f32, {INT64_C(1) << 40, INT64_C(1) << 40});
        },
        {"shape", "int64"});
    expect_throw_with<gpumath::InvalidArgument>([] { TensorLayout(DataType::c64, {INT64_C(1) << 60}); },
                                                {"bytes", "int64"});
    expect_throw_with<gpumath::InvalidArgument>(
        [] {
            TensorLayout(DataType::f32, {4, 4}, {INT64_C(1) << 62, 1});
        },
        {"strides", "int64"});
    // A dimension of extent 1 never steps, but its stride in bytes must still fit (batch strides
    // of a batch of one become byte offsets); within that, any stride is fine there.
    expect_throw_with<gpumath::InvalidArgument>(
        [] {
            TensorLayout(DataType::f32, {1, 1, 1}, {INT64_MAX, INT64_MAX, INT64_MAX});
        },
        {"strides", "dimension 0", "int64"});
    EXPECT_NO_THROW(TensorLayout(DataType::f32, {1, 3}, {INT64_MAX / 4, 1}));
}

TEST(TensorLayout, SpanInBytesFitsInInt64) {
    // The last addressed element plus one, times the element size, must fit: span_bytes() and
    // span_elements() compute (last + 1) * elem (they overflowed, a UBSan report).
    constexpr std::int64_t max = INT64_MAX;
    expect_throw_with<gpumath::InvalidArgument>(
        [] {
            TensorLayout(DataType::f32, {2, 1}, {INT64_MAX / 4, 1});
        },
        {"TensorLayout", "strides", "int64"});
    expect_throw_with<gpumath::InvalidArgument>([] { TensorLayout(DataType::i8, {2}, {INT64_MAX}); },
                                                {"strides", "int64"});
    // The largest layouts that fit are still accepted, and their spans are exact.
    const TensorLayout f32_max(DataType::f32, {2, 1}, {max / 4 - 1, 1});
    EXPECT_EQ(f32_max.span_elements(), max / 4);
    EXPECT_EQ(f32_max.span_bytes(), max / 4 * 4);
    const TensorLayout i8_max(DataType::i8, {2}, {max - 1});
    EXPECT_EQ(i8_max.span_elements(), max);
    EXPECT_EQ(i8_max.span_bytes(), max);
}

TEST(TensorLayout, RejectsDataTypesOutsideTheEnum) {
    EXPECT_TRUE(gpumath::is_valid(DataType::i32));
    EXPECT_FALSE(gpumath::is_valid(static_cast<DataType>(gpumath::data_type_count)));
    for (int value : {gpumath::data_type_count, 200, 255}) {
        const auto bad = static_cast<DataType>(value);
        expect_throw_with<gpumath::InvalidArgument>(
            [&] {
                TensorLayout(bad, {2, 2});
            },
            {"dtype", std::to_string(value), "not a DataType"});
        expect_throw_with<gpumath::InvalidArgument>([&] { TensorLayout(bad, std::span<const std::int64_t>{}); },
                                                    {"dtype", std::to_string(value)});
        std::vector<char> host(16);
        expect_throw_with<gpumath::InvalidArgument>([&] { TensorView(host.data(), bad, {2}); },
                                                    {"dtype", std::to_string(value)});
    }
}

TEST(TensorView, TypedAndUntyped) {
    std::vector<float> host(12, 1.0f);
    TensorView v(host.data(), {3, 4});
    EXPECT_EQ(v.dtype(), DataType::f32);
    EXPECT_EQ(v.data(), host.data());
    EXPECT_EQ(v.data_as<float>(), host.data());
    const TensorLayout& as_layout = v;
    EXPECT_EQ(as_layout.shape(1), 4);
    const std::vector<double> cd(6, 2.0);
    TensorView c(cd.data(), {2, 3}, {1, 2});
    EXPECT_EQ(c.dtype(), DataType::f64);
    EXPECT_EQ(c.stride(1), 2);
    TensorView u(static_cast<void*>(host.data()), DataType::bf16, {24});
    EXPECT_EQ(u.dtype(), DataType::bf16);
    expect_throw_with<gpumath::InvalidArgument>([&] { (void)v.data_as<double>(); }, {"f32", "f64"});
    expect_throw_with<gpumath::InvalidArgument>(
        [] {
            TensorView(static_cast<float*>(nullptr), {2, 2});
        },
        {"data", "null", "(2, 2)"});
    TensorView empty_ok(static_cast<float*>(nullptr), {0, 4});
    EXPECT_EQ(empty_ok.size(), 0);
}

TEST(Tensor, HostCountAndTypeChecksComeBeforeGpuWork) {
    const std::vector<float> six(6, 1.0f);
    // Both checks run before any allocation, so they behave the same with or without a GPU.
    expect_throw_with<gpumath::InvalidArgument>(
        [&] {
            (void)gpumath::Tensor::from_host(six, {2, 4});
        },
        {"6 host elements", "(2, 4)", "8"});
}

TEST(Tensor, DefaultAndMovedFromTensorsAreEmpty) {
    gpumath::Tensor t;
    EXPECT_EQ(t.size(), 0);
    EXPECT_FALSE(t.has_data());
    EXPECT_EQ(t.rank(), 1);
    gpumath::Tensor u(std::move(t));
    EXPECT_EQ(u.size(), 0);
    EXPECT_EQ(t.size(), 0);  // NOLINT(bugprone-use-after-move): moved-from state is specified
}
