// SPDX-License-Identifier: Apache-2.0
// FP8 quantization without a GPU: the scale layouts of every mode, every check of quantize_fp8 and
// dequantize_fp8 (bad input is rejected before any CUDA call, naming the operand), and the
// generated kernels compiling with NVRTC. Pointers here are fake device addresses, never
// dereferenced: every call is invalid, except in ValidCallsReachTheDevice, which runs only where
// there is no device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <gpumath/core/device.hpp>
#include <gpumath/matmul.hpp>

#include "common/test_util.hpp"
#include "matmul/fp8_test_util.hpp"
#include "matmul/quantize_source.hpp"

#ifndef GPUMATH_TEST_ARCH
#define GPUMATH_TEST_ARCH "sm_90"
#endif

using namespace gpumath;
using namespace gpumath::test::fp8;
using test::expect_throw_with;

namespace {

// Distinct, 256-byte aligned fake device addresses, 16 MiB apart.
void* addr(int slot, std::uintptr_t offset = 0) {
    return reinterpret_cast<void*>((std::uintptr_t(slot) + 1) * (std::uintptr_t(1) << 24) + offset);
}

TensorView v(int slot, DataType t, std::initializer_list<std::int64_t> shape,
             std::initializer_list<std::int64_t> strides = {}, std::uintptr_t offset = 0) {
    return TensorView(addr(slot, offset), t, shape, strides);
}

std::vector<std::int64_t> vec(std::span<const std::int64_t> s) { return {s.begin(), s.end()}; }

void expect_layout(const TensorLayout& l, std::vector<std::int64_t> shape, std::vector<std::int64_t> strides) {
    EXPECT_EQ(l.dtype(), f32);
    EXPECT_EQ(vec(l.shape()), shape) << to_string(l);
    EXPECT_EQ(vec(l.strides()), strides) << to_string(l);
}

// A valid call: x bf16 (256, 384) in slot 0, data in slot 1, scales in slot 2, amax in slot 3.
struct Call {
    ScaleMode mode = ScaleMode::block_1x128;
    TensorView x = v(0, bf16, {256, 384});
    TensorView data = v(1, e4m3, {256, 384});
    TensorView scales{};
    float* amax = static_cast<float*>(addr(3));

    explicit Call(ScaleMode m = ScaleMode::block_1x128) : mode(m) {
        scales = TensorView(addr(2), fp8_scale_layout(m, x));
    }
    void run() const { quantize_fp8(x, mode, data, scales, amax); }
};

}  // namespace

// ---- fp8_scale_layout ---------------------------------------------------------------------------

TEST(QuantizeLayout, Tensor) {
    expect_layout(fp8_scale_layout(ScaleMode::tensor, TensorLayout(bf16, {200, 300})), {}, {});
    expect_layout(fp8_scale_layout(ScaleMode::tensor, TensorLayout(f32, {7})), {}, {});
    expect_layout(fp8_scale_layout(ScaleMode::tensor, TensorLayout(e4m3, {2, 3, 4})), {}, {});
}

TEST(QuantizeLayout, OuterVector) {
    expect_layout(fp8_scale_layout(ScaleMode::outer_vector, TensorLayout(bf16, {200, 300})), {200}, {1});
    expect_layout(fp8_scale_layout(ScaleMode::outer_vector, TensorLayout(bf16, {3, 5, 300})), {3, 5}, {5, 1});
    expect_layout(fp8_scale_layout(ScaleMode::outer_vector, TensorLayout(f16, {2, 3, 7, 1})), {2, 3, 7}, {21, 7, 1});
}

TEST(QuantizeLayout, Block1x128IsRowsFastest) {
    // K a multiple of 128, K not a multiple, K below 128; R not a multiple of 128.
    expect_layout(fp8_scale_layout(ScaleMode::block_1x128, TensorLayout(bf16, {256, 512})), {256, 4}, {1, 256});
    expect_layout(fp8_scale_layout(ScaleMode::block_1x128, TensorLayout(bf16, {200, 300})), {200, 3}, {1, 200});
    expect_layout(fp8_scale_layout(ScaleMode::block_1x128, TensorLayout(bf16, {5, 129})), {5, 2}, {1, 5});
    expect_layout(fp8_scale_layout(ScaleMode::block_1x128, TensorLayout(bf16, {5, 100})), {5, 1}, {1, 5});
    // Batches are dense over the (R, L) matrices.
    expect_layout(fp8_scale_layout(ScaleMode::block_1x128, TensorLayout(f32, {2, 3, 200, 300})), {2, 3, 200, 3},
                  {1800, 600, 1, 200});
}

TEST(QuantizeLayout, Block128x128IsPaddedRows) {
    // L4 = L rounded up to 4; R and K not multiples of 128.
    expect_layout(fp8_scale_layout(ScaleMode::block_128x128, TensorLayout(bf16, {256, 512})), {2, 4}, {4, 1});
    expect_layout(fp8_scale_layout(ScaleMode::block_128x128, TensorLayout(bf16, {200, 300})), {2, 3}, {4, 1});
    expect_layout(fp8_scale_layout(ScaleMode::block_128x128, TensorLayout(bf16, {129, 640})), {2, 5}, {8, 1});
    expect_layout(fp8_scale_layout(ScaleMode::block_128x128, TensorLayout(bf16, {1, 1})), {1, 1}, {4, 1});
    // Batches step over the padded matrices: ceil(R / 128) * L4 floats each.
    expect_layout(fp8_scale_layout(ScaleMode::block_128x128, TensorLayout(bf16, {2, 3, 200, 300})), {2, 3, 2, 3},
                  {24, 8, 4, 1});
}

TEST(QuantizeLayout, EmptyExtents) {
    expect_layout(fp8_scale_layout(ScaleMode::block_1x128, TensorLayout(bf16, {0, 300})), {0, 3}, {1, 0});
    expect_layout(fp8_scale_layout(ScaleMode::block_128x128, TensorLayout(bf16, {7, 0})), {1, 0}, {0, 1});
    expect_layout(fp8_scale_layout(ScaleMode::outer_vector, TensorLayout(bf16, {7, 0})), {7}, {1});
}

TEST(QuantizeLayout, RankTooLow) {
    for (ScaleMode m : {ScaleMode::outer_vector, ScaleMode::block_1x128, ScaleMode::block_128x128})
        expect_throw_with<InvalidArgument>([&] { (void)fp8_scale_layout(m, TensorLayout(bf16, {300})); },
                                           {"fp8_scale_layout", "x: rank 1", std::string(to_string(m)), "(1, C)"});
    expect_throw_with<InvalidArgument>([&] { (void)fp8_scale_layout(ScaleMode::tensor, TensorLayout()); },
                                       {"x: rank 0", "(1,)"});
}

TEST(QuantizeLayout, ModeOutOfRange) {
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)fp8_scale_layout(static_cast<ScaleMode>(9), TensorLayout(bf16, {4, 4}));
        },
        {"fp8_scale_layout", "mode: 9 is not a ScaleMode", "tensor, outer_vector, block_1x128, block_128x128"});
}

TEST(QuantizeLayout, PaddedScalesPastInt64) {
    // block_128x128 pads each matrix's scales to L4 = 4 floats: 2^61 (1, 1) matrices have 2^63
    // scales, past int64 (the product of the batch strides overflowed, a UBSan report). Refused
    // for their bytes, as any scale layout too large.
    constexpr std::int64_t big = std::int64_t(1) << 61;
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)fp8_scale_layout(ScaleMode::block_128x128, TensorLayout(f16, {big, 1, 1}));
        },
        {"int64"});
    // A leading batch dimension of 1: the overflow came one stride earlier.
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)dequantize_fp8(v(1, e4m3, {1, 2 * big, 1, 1}), v(2, f32, {}), ScaleMode::block_128x128);
        },
        {"int64"});
}

TEST(QuantizeLayout, BlockCountsNearInt64Max) {
    // ceil(K / 128) computed as (K + 127) / 128 overflowed for K near INT64_MAX (a UBSan report).
    constexpr std::int64_t blocks = INT64_MAX / 128 + 1;  // 2^56
    expect_layout(fp8_scale_layout(ScaleMode::block_1x128, TensorLayout(e4m3, {1, INT64_MAX})), {1, blocks}, {1, 1});
    expect_layout(fp8_scale_layout(ScaleMode::block_128x128, TensorLayout(e4m3, {INT64_MAX, 1})), {blocks, 1}, {4, 1});
    expect_layout(fp8_scale_layout(ScaleMode::block_128x128, TensorLayout(e4m3, {1, INT64_MAX})), {1, blocks},
                  {blocks, 1});
}

TEST(QuantizeValidation, DequantizeBlockCountNearInt64Max) {
    // The geometry's ceil(C / 128) overflowed for C = INT64_MAX (a UBSan report). The checks now
    // pass; without a device the call then fails on its first CUDA call, with one the f32 result
    // of INT64_MAX elements is refused for its bytes.
    const auto call = [&] { (void)dequantize_fp8(v(1, e4m3, {1, INT64_MAX}), v(2, f32, {}), ScaleMode::tensor); };
    if (test::has_gpu()) expect_throw_with<InvalidArgument>(call, {"int64"});
    else expect_throw_with<CudaError>(call, {"no CUDA driver/device"});
}

TEST(QuantizeValidation, ScalesPastInt64NameTheTensor) {
    // FP8 data (2^63 - 1, 1) has one-byte elements, its outer_vector or block_1x128 scales one f32
    // per row: past int64 bytes. dequantize_fp8 (which has no grid to check first) and
    // fp8_scale_layout threw "TensorLayout: shape: (9223372036854775807,) of f32 needs more bytes
    // than fit in int64", naming neither the tensor nor its scales.
    const TensorView data = v(1, e4m3, {INT64_MAX, 1});
    for (ScaleMode m : {ScaleMode::outer_vector, ScaleMode::block_1x128}) {
        SCOPED_TRACE(std::string(to_string(m)));
        expect_throw_with<InvalidArgument>([&] { (void)dequantize_fp8(data, v(2, f32, {}), m); },
                                           {"dequantize_fp8", "data:", "(9223372036854775807, 1)", "int64"});
        expect_throw_with<InvalidArgument>([&] { (void)fp8_scale_layout(m, data); },
                                           {"fp8_scale_layout", "x:", "scales", "int64"});
    }
    // An empty tensor's scales too (a scale per row of no columns).
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)fp8_scale_layout(ScaleMode::outer_vector, TensorLayout(e4m3, {INT64_MAX, 0}));
        },
        {"fp8_scale_layout", "x:", "int64"});
}

TEST(QuantizeValidation, DequantizeBatchStrideNearInt64Max) {
    // FP8 data (2, 1, 1) whose batch stride is 3 * 2^61 bytes: the geometry's next outer stride,
    // 2 * 3 * 2^61, overflowed int64 (signed overflow) before the scales were checked.
    const std::int64_t stride = std::int64_t(3) << 61;
    const TensorView data = v(1, e4m3, {2, 1, 1}, {stride, 1, 1});
    const TensorView wrong_scales = v(2, f32, {2});
    expect_throw_with<InvalidArgument>([&] { (void)dequantize_fp8(data, wrong_scales, ScaleMode::tensor); },
                                       {"dequantize_fp8", "scales:"});
    // Batch dimensions past the overflow are still checked against it.
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)dequantize_fp8(v(1, e4m3, {2, 2, 1, 1}, {1, stride, 1, 1}), v(2, f32, {}), ScaleMode::tensor);
        },
        {"dequantize_fp8", "data:", "not one strided sequence"});
}

// ---- quantize_fp8 with outputs --------------------------------------------------------------------

TEST(QuantizeValidation, ValidCallsReachTheDevice) {
    // Each baseline passes every check, so the tests below fail for the reason they name. Without a
    // device the call then fails on its first CUDA call; with one it would run on fake pointers.
    if (test::has_gpu()) GTEST_SKIP() << "the fake pointers of these calls must not reach a real device";
    for (ScaleMode m : all_modes) {
        SCOPED_TRACE(std::string(to_string(m)));
        Call c(m);
        expect_throw_with<CudaError>([&] { c.run(); }, {"no CUDA driver/device"});
        c.amax = nullptr;
        expect_throw_with<CudaError>([&] { c.run(); }, {"no CUDA driver/device"});
        // Any row stride; batch dimensions that collapse to one stride; x f16 and f32; e5m2 data.
        c.x = v(0, f16, {256, 384}, {1000, 1});
        c.data = v(1, e5m2, {256, 384});
        expect_throw_with<CudaError>([&] { c.run(); }, {"no CUDA driver/device"});
        c.x = v(0, f32, {2, 3, 256, 384}, {3 * 300000, 300000, 400, 1});
        c.data = v(1, e4m3, {2, 3, 256, 384});
        c.scales = TensorView(addr(2), fp8_scale_layout(m, c.x));
        expect_throw_with<CudaError>([&] { c.run(); }, {"no CUDA driver/device"});
        expect_throw_with<CudaError>([&] { (void)quantize_fp8(c.x, m); }, {"no CUDA driver/device"});
        expect_throw_with<CudaError>([&] { (void)dequantize_fp8(c.data, c.scales, m); }, {"no CUDA driver/device"});
    }
    // The tensor mode's one scale needs only 4-byte alignment.
    Call t(ScaleMode::tensor);
    t.scales = TensorView(addr(2, 4), f32, {});
    expect_throw_with<CudaError>([&] { t.run(); }, {"no CUDA driver/device"});
}

TEST(QuantizeValidation, InputType) {
    for (DataType t : {DataType::f64, e4m3, DataType::i8, DataType::c32}) {
        Call c;
        c.x = v(0, t, {256, 384});
        expect_throw_with<InvalidArgument>([&] { c.run(); }, {"quantize_fp8", "x:", "bf16, f16 or f32"});
        expect_throw_with<InvalidArgument>([&] { (void)quantize_fp8(c.x, c.mode); }, {"x:", "bf16, f16 or f32"});
    }
}

TEST(QuantizeValidation, ModeOutOfRange) {
    Call c;
    c.mode = static_cast<ScaleMode>(4);
    expect_throw_with<InvalidArgument>([&] { c.run(); }, {"quantize_fp8", "mode: 4 is not a ScaleMode"});
    expect_throw_with<InvalidArgument>([&] { (void)quantize_fp8(c.x, static_cast<ScaleMode>(200)); },
                                       {"mode: 200 is not a ScaleMode"});
}

TEST(QuantizeValidation, RankTooLow) {
    for (ScaleMode m : {ScaleMode::outer_vector, ScaleMode::block_1x128, ScaleMode::block_128x128}) {
        Call c(m);
        c.x = v(0, bf16, {384});
        c.data = v(1, e4m3, {384});
        expect_throw_with<InvalidArgument>([&] { c.run(); }, {"x: rank 1", "(1, C)"});
    }
}

TEST(QuantizeValidation, LastDimensionMustBeContiguous) {
    for (ScaleMode m : all_modes) {
        Call c(m);
        c.x = v(0, bf16, {256, 384}, {1, 256});  // column-major
        expect_throw_with<InvalidArgument>([&] { c.run(); }, {"x: stride 256 along its last dimension", "contiguous"});
        expect_throw_with<InvalidArgument>([&] { (void)quantize_fp8(c.x, m); }, {"x: stride 256"});
    }
}

TEST(QuantizeValidation, BatchDimensionsMustBeOneStride) {
    Call c;
    c.x = v(0, bf16, {2, 3, 64, 128}, {100000, 64 * 128, 128, 1});
    c.data = v(1, e4m3, {2, 3, 64, 128});
    c.scales = TensorView(addr(2), fp8_scale_layout(c.mode, c.x));
    expect_throw_with<InvalidArgument>([&] { c.run(); },
                                       {"x: its batch dimensions", "not one strided sequence", "each batch"});
}

TEST(QuantizeValidation, InputMisaligned) {
    Call c;
    c.x = v(0, bf16, {256, 384}, {}, 1);
    expect_throw_with<InvalidArgument>([&] { c.run(); }, {"x: data pointer", "not aligned to the 2-byte size"});
}

TEST(QuantizeValidation, DataType) {
    Call c;
    c.data = v(1, f16, {256, 384});
    expect_throw_with<InvalidArgument>([&] { c.run(); }, {"data: f16", "e4m3 or e5m2"});
}

TEST(QuantizeValidation, DataShape) {
    Call c;
    c.data = v(1, e4m3, {256, 383});
    expect_throw_with<InvalidArgument>([&] { c.run(); }, {"data: shape (256, 383) differs from x's (256, 384)"});
    c.data = v(1, e4m3, {1, 256, 384});
    expect_throw_with<InvalidArgument>([&] { c.run(); }, {"data: shape (1, 256, 384)"});
}

TEST(QuantizeValidation, DataMustBeDense) {
    Call c;
    c.data = v(1, e4m3, {256, 384}, {400, 1});
    expect_throw_with<InvalidArgument>([&] { c.run(); }, {"data: strides (400, 1)", "dense row-major"});
    c.data = v(1, e4m3, {256, 384}, {1, 256});
    expect_throw_with<InvalidArgument>([&] { c.run(); }, {"data: strides (1, 256)"});
}

TEST(QuantizeValidation, ScalesLayout) {
    Call c;  // block_1x128 scales are (256, 3) with strides (1, 256)
    c.scales = v(2, f32, {256, 3});
    expect_throw_with<InvalidArgument>([&] { c.run(); },
                                       {"scales: f32 (256, 3) strides (3, 1)", "expected f32 (256, 3) strides (1, 256)",
                                        "fp8_scale_layout(ScaleMode::block_1x128, x)"});
    c.scales = TensorView(addr(2), f16, {256, 3}, {1, 256});
    expect_throw_with<InvalidArgument>([&] { c.run(); }, {"scales: f16 (256, 3)"});
    Call t(ScaleMode::block_128x128);  // (2, 3) with strides (4, 1)
    t.scales = v(2, f32, {2, 3});
    expect_throw_with<InvalidArgument>([&] { t.run(); }, {"scales:", "expected f32 (2, 3) strides (4, 1)"});
    Call o(ScaleMode::outer_vector);
    o.scales = v(2, f32, {384});
    expect_throw_with<InvalidArgument>([&] { o.run(); }, {"scales:", "expected f32 (256,) strides (1,)"});
    Call s(ScaleMode::tensor);
    s.scales = v(2, f32, {1});
    expect_throw_with<InvalidArgument>([&] { s.run(); }, {"scales:", "tensor scales"});
}

TEST(QuantizeValidation, ScalesAlignment) {
    for (ScaleMode m : {ScaleMode::outer_vector, ScaleMode::block_1x128, ScaleMode::block_128x128}) {
        Call c(m);
        c.scales = TensorView(addr(2, 8), fp8_scale_layout(m, c.x));
        expect_throw_with<InvalidArgument>([&] { c.run(); }, {"scales: pointer", "16-byte aligned"});
    }
    Call t(ScaleMode::tensor);
    t.scales = TensorView(addr(2, 2), f32, {});
    expect_throw_with<InvalidArgument>([&] { t.run(); }, {"scales: pointer", "4 bytes"});
}

TEST(QuantizeValidation, AmaxAlignment) {
    Call c;
    c.amax = static_cast<float*>(addr(3, 2));
    expect_throw_with<InvalidArgument>([&] { c.run(); }, {"amax: pointer", "4 bytes"});
}

TEST(QuantizeValidation, Overlaps) {
    {
        Call c;
        c.data = TensorView(addr(0, 16), e4m3, {256, 384});
        expect_throw_with<InvalidArgument>([&] { c.run(); }, {"data: its memory overlaps x's"});
    }
    {
        Call c;
        c.scales = TensorView(addr(0, 4096), fp8_scale_layout(c.mode, c.x));
        expect_throw_with<InvalidArgument>([&] { c.run(); }, {"scales:", "overlap x's memory"});
    }
    {
        Call c;
        c.amax = static_cast<float*>(addr(0, 64));
        expect_throw_with<InvalidArgument>([&] { c.run(); }, {"amax: it points into x's memory"});
    }
    {
        Call c;
        c.scales = TensorView(addr(1, 1024), fp8_scale_layout(c.mode, c.x));
        expect_throw_with<InvalidArgument>([&] { c.run(); }, {"scales:", "overlap data's memory"});
    }
    {
        Call c;
        c.amax = static_cast<float*>(addr(1, 4));
        expect_throw_with<InvalidArgument>([&] { c.run(); }, {"amax: it points into data's memory"});
    }
    {
        Call c;
        c.amax = static_cast<float*>(addr(2, 4));
        expect_throw_with<InvalidArgument>([&] { c.run(); }, {"amax: it points into the scales' memory"});
    }
    {
        // block_128x128 of x (200, 300): the view spans 7 floats, the scales occupy 8 (the last
        // row's padding included, which quantize_fp8 writes).
        Call c(ScaleMode::block_128x128);
        c.x = v(0, bf16, {200, 300});
        c.data = v(1, e4m3, {200, 300});
        c.scales = TensorView(addr(2), fp8_scale_layout(c.mode, c.x));
        ASSERT_EQ(c.scales.span_elements(), 7);
        c.amax = static_cast<float*>(addr(2, 7 * sizeof(float)));
        expect_throw_with<InvalidArgument>([&] { c.run(); }, {"amax: it points into the scales' memory"});
    }
}

TEST(QuantizeValidation, NullPointersOfNonEmptyTensors) {
    // A view of a non-empty tensor cannot hold a null pointer, so every operand of quantize_fp8 has
    // memory.
    expect_throw_with<InvalidArgument>([&] { (void)TensorView(nullptr, e4m3, {256, 384}); }, {"null"});
    expect_throw_with<InvalidArgument>([&] { (void)TensorView(static_cast<float*>(nullptr), {256, 3}); }, {"null"});
    // Except a default-constructed view: rank 0, one f32 element at a null pointer, which is the
    // tensor mode's scale layout. It passed as the scales, and the kernels wrote (or read) the
    // scale at address 0.
    Call c(ScaleMode::tensor);
    c.scales = TensorView{};
    expect_throw_with<InvalidArgument>([&] { c.run(); }, {"quantize_fp8", "scales: null data pointer for 1 element"});
    expect_throw_with<InvalidArgument>([&] { (void)dequantize_fp8(c.data, TensorView{}, ScaleMode::tensor); },
                                       {"dequantize_fp8", "scales: null data pointer"});
}

TEST(QuantizeValidation, OperandsPastEndOfAddressSpace) {
    // Memory that runs past the end of the address space: its byte range wrapped around to low
    // addresses, so the overlap checks saw nothing and the call went on to the GPU.
    const auto top = [](std::uintptr_t below) { return reinterpret_cast<void*>(~std::uintptr_t(0) - below + 1); };
    Call c(ScaleMode::tensor);
    c.data = TensorView(top(256), e4m3, {256, 384});
    expect_throw_with<InvalidArgument>([&] { c.run(); }, {"data:", "98304 bytes", "end of the address space"});
    c = Call(ScaleMode::tensor);
    c.x = TensorView(top(256), bf16, {256, 384});
    expect_throw_with<InvalidArgument>([&] { c.run(); }, {"x:", "end of the address space"});
    c = Call(ScaleMode::tensor);
    c.amax = static_cast<float*>(top(4));
    expect_throw_with<InvalidArgument>([&] { c.run(); }, {"amax:", "end of the address space"});
    // block_128x128 scales whose view fits but whose padded storage (what quantize_fp8 writes) does not.
    Call p(ScaleMode::block_128x128);
    p.x = v(0, bf16, {256, 128});
    p.data = v(1, e4m3, {256, 128});
    const TensorLayout scales = fp8_scale_layout(ScaleMode::block_128x128, p.x);  // (2, 1), rows of 4
    ASSERT_EQ(scales.span_bytes(), 20);
    p.scales = TensorView(top(32), scales);
    expect_throw_with<InvalidArgument>([&] { p.run(); }, {"scales:", "32 bytes", "end of the address space"});
}

TEST(QuantizeValidation, MovedFromTensors) {
    // A moved-from Tensor is an empty f32 (0,) view with no memory: rejected as x, data or scales
    // with the operand named, never dereferenced.
    Tensor a;
    Tensor moved = std::move(a);
    Call c;
    expect_throw_with<InvalidArgument>([&] { quantize_fp8(a, c.mode, c.data, c.scales); }, {"x: rank 1"});
    expect_throw_with<InvalidArgument>([&] { quantize_fp8(c.x, c.mode, a, c.scales); }, {"data: f32"});
    expect_throw_with<InvalidArgument>([&] { quantize_fp8(c.x, c.mode, c.data, a); }, {"scales: f32 (0,)"});
    expect_throw_with<InvalidArgument>([&] { (void)quantize_fp8(a, c.mode); }, {"x: rank 1"});
    expect_throw_with<InvalidArgument>([&] { (void)dequantize_fp8(a, c.scales, c.mode); }, {"data: f32 is not FP8"});
}

// ---- the allocating quantize_fp8 -------------------------------------------------------------------

TEST(QuantizeValidation, OptionsDtype) {
    const TensorView x = v(0, bf16, {256, 384});
    for (DataType t : {bf16, f32, DataType::i8})
        expect_throw_with<InvalidArgument>([&] { (void)quantize_fp8(x, ScaleMode::block_1x128, {.dtype = t}); },
                                           {"options.dtype:", "not an FP8 type", "DataType::e4m3"});
    expect_throw_with<InvalidArgument>(
        [&] { (void)quantize_fp8(x, ScaleMode::block_1x128, {.dtype = static_cast<DataType>(42)}); },
        {"options.dtype: 42 is not a DataType"});
}

TEST(QuantizeValidation, GridTooLarge) {
    // One block per row: 2^31 rows cannot be launched. Checked before any CUDA call.
    const TensorView x = v(0, bf16, {std::int64_t(1) << 31, 1});
    expect_throw_with<NotSupported>([&] { (void)quantize_fp8(x, ScaleMode::outer_vector); },
                                    {"quantize_fp8", "2^31 - 1", "in parts"});
}

TEST(QuantizeValidation, GridTooLargeBeforeTheOutputs) {
    // 2^59 (1, 1) matrices: block_128x128's padded scales take 2^61 floats, whose 2^63 bytes
    // overflowed int64 in the overlap check of the outputs (a UBSan report). The grid is refused
    // first, and it bounds the scales.
    constexpr std::int64_t batches = std::int64_t(1) << 59;
    const TensorView x = v(0, f16, {batches, 1, 1});
    const TensorView scales(addr(2), fp8_scale_layout(ScaleMode::block_128x128, x));
    expect_throw_with<NotSupported>(
        [&] {
            quantize_fp8(x, ScaleMode::block_128x128, v(1, e4m3, {batches, 1, 1}), scales);
        },
        {"quantize_fp8", "x:", "2^31 - 1"});
}

// ---- dequantize_fp8 --------------------------------------------------------------------------------

TEST(DequantizeValidation, DataType) {
    const TensorView scales(addr(2), fp8_scale_layout(ScaleMode::block_1x128, TensorLayout(bf16, {256, 384})));
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)dequantize_fp8(v(1, bf16, {256, 384}), scales, ScaleMode::block_1x128);
        },
        {"dequantize_fp8", "data: bf16 is not FP8"});
}

TEST(DequantizeValidation, ScalesLayout) {
    const TensorView data = v(1, e4m3, {256, 384});
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)dequantize_fp8(data, v(2, f32, {256, 3}), ScaleMode::block_1x128);
        },
        {"scales:", "expected f32 (256, 3) strides (1, 256)", "fp8_scale_layout(ScaleMode::block_1x128, data)"});
    expect_throw_with<InvalidArgument>([&] { (void)dequantize_fp8(data, v(2, f32, {256}), ScaleMode::tensor); },
                                       {"scales:", "expected f32 ()"});
    expect_throw_with<InvalidArgument>(
        [&] { (void)dequantize_fp8(data, TensorView(addr(2, 2), f32, {}), ScaleMode::tensor); },
        {"scales: pointer", "4 bytes"});
}

TEST(DequantizeValidation, ResultType) {
    const TensorView data = v(1, e5m2, {256, 384});
    const TensorView scales(addr(2), fp8_scale_layout(ScaleMode::outer_vector, data));
    expect_throw_with<InvalidArgument>([&] { (void)dequantize_fp8(data, scales, ScaleMode::outer_vector, e4m3); },
                                       {"result_type: e4m3", "bf16, f16 or f32"});
    expect_throw_with<InvalidArgument>(
        [&] { (void)dequantize_fp8(data, scales, ScaleMode::outer_vector, static_cast<DataType>(77)); },
        {"result_type: 77 is not a DataType"});
}

TEST(DequantizeValidation, ModeAndLayout) {
    const TensorView data = v(1, e4m3, {256, 384});
    const TensorView scales(addr(2), fp8_scale_layout(ScaleMode::outer_vector, data));
    expect_throw_with<InvalidArgument>([&] { (void)dequantize_fp8(data, scales, static_cast<ScaleMode>(5)); },
                                       {"mode: 5 is not a ScaleMode"});
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)dequantize_fp8(v(1, e4m3, {256, 384}, {1, 256}), scales, ScaleMode::outer_vector);
        },
        {"data: stride 256 along its last dimension"});
    expect_throw_with<InvalidArgument>([&] { (void)dequantize_fp8(v(1, e4m3, {384}), scales, ScaleMode::block_1x128); },
                                       {"data: rank 1"});
}

// ---- the kernels -----------------------------------------------------------------------------------

TEST(QuantizeKernels, CompileWithNvrtc) {
    // Every element type's code path and both FP8 types, for the test architecture; NVRTC needs no
    // device. Every kernel the launches look up is in the cubin.
    const std::vector<std::string> expected = {
        detail::quantize_kernel::amax_v,   detail::quantize_kernel::amax_s,   detail::quantize_kernel::tensor_v,
        detail::quantize_kernel::tensor_s, detail::quantize_kernel::finalize, detail::quantize_kernel::rows_v,
        detail::quantize_kernel::rows_s,   detail::quantize_kernel::blocks_v, detail::quantize_kernel::blocks_s,
        detail::quantize_kernel::tiles_v,  detail::quantize_kernel::tiles_s,  detail::quantize_kernel::dequantize};
    for (auto [element, fp8] : {std::pair{bf16, e4m3}, std::pair{f16, e5m2}, std::pair{f32, e4m3}}) {
        SCOPED_TRACE(std::string(to_string(element)) + " -> " + std::string(to_string(fp8)));
        const core::ObjectCode code = detail::compile_quantize_kernels(element, fp8, GPUMATH_TEST_ARCH);
        EXPECT_EQ(code.type(), core::CodeType::cubin);
        EXPECT_EQ(code.arch(), GPUMATH_TEST_ARCH);
        std::vector<std::string> names = code.kernel_names();
        for (const std::string& k : expected) EXPECT_NE(std::find(names.begin(), names.end(), k), names.end()) << k;
    }
}

TEST(QuantizeKernels, ProgramVariants) {
    // One text (the embedded kernels/quantize.cu), one set of macros per pair.
    EXPECT_NE(detail::quantize_source().find("#include <cuda_fp8.h>"), std::string_view::npos);
    EXPECT_NE(detail::quantize_source().find("src/matmul/kernels/quantize.cu"), std::string_view::npos);
    const core::ProgramOptions f32_e5m2 = detail::quantize_options(f32, e5m2);
    EXPECT_EQ(f32_e5m2.defines.at("GM_FP8_KIND"), "__NV_E5M2");
    EXPECT_EQ(f32_e5m2.defines.at("GM_FP8_MAX"), "57344.0f");
    EXPECT_EQ(f32_e5m2.defines.at("GM_IN_TYPE"), "float");
    EXPECT_EQ(f32_e5m2.headers.count("quantize_params.hpp"), 1u);
    EXPECT_EQ(detail::quantize_options(bf16, e4m3).defines.at("GM_FP8_MAX"), "448.0f");
    // Each pair has a program of its own, made once.
    EXPECT_EQ(&detail::quantize_program(bf16, e4m3), &detail::quantize_program(bf16, e4m3));
    EXPECT_NE(&detail::quantize_program(bf16, e4m3), &detail::quantize_program(bf16, e5m2));
    EXPECT_NE(&detail::quantize_program(f16, e4m3), &detail::quantize_program(bf16, e4m3));
    EXPECT_EQ(detail::quantize_program(f32, e5m2).options().defines, f32_e5m2.defines);
    expect_throw_with<InvalidArgument>([] { (void)detail::quantize_options(DataType::f64, e4m3); }, {"f64"});
    expect_throw_with<InvalidArgument>([] { (void)detail::quantize_options(bf16, f16); }, {"not an FP8 type"});
    expect_throw_with<InvalidArgument>([] { (void)detail::quantize_program(bf16, f16); }, {"not an FP8 type"});
}
