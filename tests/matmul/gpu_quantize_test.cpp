// SPDX-License-Identifier: Apache-2.0
// FP8 quantization on a GPU against a host reference computed here, independently of the kernels:
// per scale block, amax = max |x| and scale = amax / (448 or 57344) in float (1 when that is 0),
// q = cuda_fp8.h's host conversion (round to nearest even, saturating) of x / scale in float. Data
// bytes, scales (the whole storage, block_128x128's zero padding included) and amax must be equal,
// not close. Inputs differ in magnitude per row, per row block, per column block and per batch, so
// a scale taken from the wrong block fails. Outputs given as views are poisoned (0xFF) first.
// Seeds are fixed: every run checks the same values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include <gpumath/core.hpp>
#include <gpumath/matmul.hpp>

#include "common/test_util.hpp"
#include "matmul/fp8_test_util.hpp"

using namespace gpumath;
using namespace gpumath::test::fp8;
using test::expect_throw_with;

namespace {

// ---- element encodings (host) ----

float round_to(DataType t, float v) {
    if (t == bf16) return __bfloat162float(__float2bfloat16_rn(v));
    if (t == f16) return __half2float(__float2half_rn(v));
    return v;
}

void encode(DataType t, float v, unsigned char* p) {
    if (t == bf16) {
        const __nv_bfloat16 h = __float2bfloat16_rn(v);
        std::memcpy(p, &h, 2);
    } else if (t == f16) {
        const __half h = __float2half_rn(v);
        std::memcpy(p, &h, 2);
    } else {
        std::memcpy(p, &v, 4);
    }
}

float decode(DataType t, const unsigned char* p) {
    if (t == bf16) {
        __nv_bfloat16 h;
        std::memcpy(&h, p, 2);
        return __bfloat162float(h);
    }
    if (t == f16) {
        __half h;
        std::memcpy(&h, p, 2);
        return __half2float(h);
    }
    float v;
    std::memcpy(&v, p, 4);
    return v;
}

__nv_fp8_interpretation_t kind(DataType fp8) { return fp8 == e4m3 ? __NV_E4M3 : __NV_E5M2; }
float fp8_max(DataType fp8) { return fp8 == e4m3 ? 448.0f : 57344.0f; }

float fp8_to_float(DataType fp8, unsigned char q) {
    const __half_raw h = __nv_cvt_fp8_to_halfraw(q, kind(fp8));
    return __half2float(__half(h));
}

// ---- the input: logical (B, R, C) values, exactly representable in its dtype ----

struct Input {
    DataType dtype = bf16;
    std::vector<std::int64_t> shape;  // (..., R, C)
    std::int64_t batches = 1, rows = 1, cols = 1;
    std::vector<float> v;  // row-major logical values
    [[nodiscard]] float at(std::int64_t b, std::int64_t r, std::int64_t c) const {
        return v[std::size_t((b * rows + r) * cols + c)];
    }
};

// Values uniform in (-1, 1) times 2^((r % 7) + (r / 128 + c / 128 + b) % 5): the magnitude changes
// per row, per 128-row block, per 128-column block and per batch. Row 3 and the tile of rows
// 128..255, columns 0..127 are zero (scale 1); x[0, 0, 1] is -0.
Input make_input(DataType t, std::vector<std::int64_t> shape, std::uint64_t seed) {
    Input x;
    x.dtype = t;
    x.shape = shape;
    x.cols = shape.back();
    x.rows = shape.size() >= 2 ? shape[shape.size() - 2] : 1;
    for (std::size_t i = 0; i + 2 < shape.size(); ++i) x.batches *= shape[i];
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    x.v.resize(std::size_t(x.batches * x.rows * x.cols));
    for (std::int64_t b = 0; b < x.batches; ++b)
        for (std::int64_t r = 0; r < x.rows; ++r)
            for (std::int64_t c = 0; c < x.cols; ++c) {
                const int e = int(r % 7 + (r / 128 + c / 128 + b) % 5);
                float val = std::ldexp(u(rng), e);
                if (r == 3 || (r >= 128 && r < 256 && c < 128)) val = 0.0f;
                if (b == 0 && r == 0 && c == 1) val = -0.0f;
                x.v[std::size_t((b * x.rows + r) * x.cols + c)] = round_to(t, val);
            }
    return x;
}

// A device copy of `x` with the given strides (row-major when empty) at `offset` bytes past a
// 256-byte boundary; bytes outside the view are 0xFF. Where strides make elements share memory
// (a row stride of 0), `x` becomes what the view reads.
struct DeviceInput {
    core::Buffer buffer;
    TensorView view;
};

DeviceInput upload(Input& x, std::vector<std::int64_t> strides = {}, std::size_t offset = 0) {
    const TensorLayout layout(x.dtype, x.shape, strides);
    const std::size_t es = size_of(x.dtype);
    std::vector<unsigned char> host(offset + std::size_t(layout.span_bytes()) + 16, 0xFF);
    const std::int64_t rs = layout.rank() >= 2 ? layout.stride(-2) : 0;
    const int batch_rank = layout.rank() - 2;
    auto at = [&](std::int64_t b, std::int64_t r, std::int64_t c) {
        std::int64_t rem = b, boff = 0;
        for (int i = batch_rank - 1; i >= 0; --i) {
            boff += (rem % layout.shape(i)) * layout.stride(i);
            rem /= layout.shape(i);
        }
        return host.data() + offset + std::size_t(boff + r * rs + c) * es;
    };
    for (std::int64_t b = 0; b < x.batches; ++b)
        for (std::int64_t r = 0; r < x.rows; ++r)
            for (std::int64_t c = 0; c < x.cols; ++c) encode(x.dtype, x.at(b, r, c), at(b, r, c));
    for (std::int64_t b = 0; b < x.batches; ++b)
        for (std::int64_t r = 0; r < x.rows; ++r)
            for (std::int64_t c = 0; c < x.cols; ++c)
                x.v[std::size_t((b * x.rows + r) * x.cols + c)] = decode(x.dtype, at(b, r, c));
    DeviceInput d{core::Buffer(host.size()), {}};
    d.buffer.copy_from(std::span<const unsigned char>(host));
    d.view = TensorView(static_cast<unsigned char*>(d.buffer.data()) + offset, layout);
    return d;
}

// ---- the reference ----

struct Expected {
    std::vector<unsigned char> data;  // dense row-major FP8 bytes
    std::vector<float> scales;        // the scales' whole storage, padding included
    float amax = 0.0f;
};

std::int64_t scale_storage(ScaleMode m, const Input& x) {
    const std::int64_t l = ceil_div(x.cols, 128), l4 = ceil_div(l, 4) * 4;
    switch (m) {
        case ScaleMode::tensor:
            return 1;
        case ScaleMode::outer_vector:
            return x.batches * x.rows;
        case ScaleMode::block_1x128:
            return x.batches * x.rows * l;
        case ScaleMode::block_128x128:
            return x.batches * ceil_div(x.rows, 128) * l4;
    }
    return 0;
}

// The scale of a block: amax / the FP8 maximum in float, 1 when that is 0.
float scale_of(float amax, DataType fp8) {
    const float s = amax / fp8_max(fp8);
    return s > 0.0f ? s : 1.0f;
}

Expected reference(const Input& x, ScaleMode mode, DataType fp8) {
    Expected e;
    e.data.resize(x.v.size());
    e.scales.assign(std::size_t(scale_storage(mode, x)), 0.0f);
    const TensorLayout sl = fp8_scale_layout(mode, TensorLayout(x.dtype, x.shape));
    const std::int64_t l = ceil_div(x.cols, 128);
    const int br = sl.rank() - (mode == ScaleMode::outer_vector ? 1 : 2);  // batch dims of the scales
    // Offset of batch b in the scales (batch dimensions are dense over the matrices).
    auto batch_offset = [&](std::int64_t b) { return br > 0 ? b * sl.stride(br - 1) : 0; };
    // The block of element (b, r, c): its scale's storage index.
    auto scale_index = [&](std::int64_t b, std::int64_t r, std::int64_t c) -> std::int64_t {
        switch (mode) {
            case ScaleMode::tensor:
                return 0;
            case ScaleMode::outer_vector:
                return batch_offset(b) + r;
            case ScaleMode::block_1x128:
                return batch_offset(b) + r * sl.stride(-2) + (c / 128) * sl.stride(-1);
            case ScaleMode::block_128x128:
                return batch_offset(b) + (r / 128) * sl.stride(-2) + (c / 128) * sl.stride(-1);
        }
        return 0;
    };
    std::vector<float> amax(e.scales.size(), 0.0f);
    for (std::int64_t b = 0; b < x.batches; ++b)
        for (std::int64_t r = 0; r < x.rows; ++r)
            for (std::int64_t c = 0; c < x.cols; ++c) {
                float& m = amax[std::size_t(scale_index(b, r, c))];
                m = std::max(m, std::fabs(x.at(b, r, c)));
                e.amax = std::max(e.amax, std::fabs(x.at(b, r, c)));
            }
    // Every block that exists gets a scale (an empty block's is 1); padding stays 0.
    for (std::int64_t b = 0; b < x.batches; ++b)
        for (std::int64_t r = 0; r < x.rows; ++r)
            for (std::int64_t k = 0; k < std::max<std::int64_t>(l, mode == ScaleMode::outer_vector ? 1 : 0); ++k) {
                const std::size_t i = std::size_t(scale_index(b, r, k * 128));
                e.scales[i] = scale_of(amax[i], fp8);
            }
    if (mode == ScaleMode::tensor) e.scales[0] = scale_of(e.amax, fp8);
    for (std::int64_t b = 0; b < x.batches; ++b)
        for (std::int64_t r = 0; r < x.rows; ++r)
            for (std::int64_t c = 0; c < x.cols; ++c) {
                const float s = e.scales[std::size_t(scale_index(b, r, c))];
                e.data[std::size_t((b * x.rows + r) * x.cols + c)] =
                    __nv_cvt_float_to_fp8(x.at(b, r, c) / s, __NV_SATFINITE, kind(fp8));
            }
    return e;
}

// ---- comparisons ----

std::vector<unsigned char> download(const void* p, std::size_t bytes, core::StreamRef stream = {}) {
    stream.synchronize();
    std::vector<unsigned char> out(bytes);
    if (bytes != 0) {
        EXPECT_EQ(cudaMemcpy(out.data(), p, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    }
    return out;
}

std::vector<float> download_floats(const void* p, std::size_t count, core::StreamRef stream = {}) {
    const std::vector<unsigned char> b = download(p, count * sizeof(float), stream);
    std::vector<float> out(count);
    if (count != 0) std::memcpy(out.data(), b.data(), b.size());
    return out;
}

void expect_bytes(const std::vector<unsigned char>& got, const std::vector<unsigned char>& want, const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    std::size_t bad = 0, first = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
        if (got[i] != want[i] && bad++ == 0) first = i;
    EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " bytes differ; first at " << first
                       << ": got 0x" << std::hex << int(got[first]) << ", want 0x" << int(want[first]);
}

void expect_floats(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    std::size_t bad = 0, first = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
        if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0 && bad++ == 0) first = i;
    EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " differ; first at " << first << ": got "
                       << got[first] << ", want " << want[first];
}

std::string describe(DataType t, DataType fp8, ScaleMode m, const std::vector<std::int64_t>& shape) {
    std::string s =
        std::string(to_string(t)) + " -> " + std::string(to_string(fp8)) + " " + std::string(to_string(m)) + " shape (";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + ")";
}

std::uint64_t seed_of(DataType t, DataType fp8, ScaleMode m, const std::vector<std::int64_t>& shape) {
    std::uint64_t s = 0x9e3779b97f4a7c15ULL * (int(t) + 1) + 0x632be59bd9b4e019ULL * (int(fp8) + 3) + int(m) * 7919;
    for (std::int64_t e : shape) s = s * 1000003 + std::uint64_t(e);
    return s;
}

// The allocating form, with amax: data, scales (whole storage), the view's layout and amax.
void check_allocating(DataType t, DataType fp8, ScaleMode m, const std::vector<std::int64_t>& shape,
                      core::StreamRef stream = {}) {
    SCOPED_TRACE(describe(t, fp8, m, shape));
    Input x = make_input(t, shape, seed_of(t, fp8, m, shape));
    const DeviceInput dx = upload(x);
    const Expected want = reference(x, m, fp8);
    const QuantizedFP8 q = quantize_fp8(dx.view, m, {.dtype = fp8, .amax = true}, stream);
    EXPECT_EQ(q.mode, m);
    EXPECT_EQ(q.data.dtype(), fp8);
    EXPECT_TRUE(std::equal(q.data.shape().begin(), q.data.shape().end(), shape.begin(), shape.end()));
    EXPECT_EQ(q.scales_view.layout(), fp8_scale_layout(m, q.data.layout()));
    EXPECT_EQ(q.scales_view.data(), q.scales.data());
    EXPECT_EQ(std::size_t(q.scales.size()), want.scales.size());
    expect_bytes(download(q.data.data(), want.data.size(), stream), want.data, "data");
    expect_floats(download_floats(q.scales.data(), want.scales.size(), stream), want.scales, "scales");
    expect_floats(download_floats(q.amax.data(), 1, stream), {want.amax}, "amax");
}

// The form with outputs: x with `strides`, outputs poisoned, the scales 16 bytes past a 256-byte
// boundary, amax optional.
void check_into(DataType t, DataType fp8, ScaleMode m, const std::vector<std::int64_t>& shape,
                std::vector<std::int64_t> strides, bool with_amax, core::StreamRef stream = {}) {
    SCOPED_TRACE(describe(t, fp8, m, shape) + " into views, x strides given: " + std::to_string(!strides.empty()));
    Input x = make_input(t, shape, seed_of(t, fp8, m, shape) + 1);
    const DeviceInput dx = upload(x, strides, 32);
    const Expected want = reference(x, m, fp8);
    core::Buffer data(std::max<std::size_t>(want.data.size(), 1)), scales(want.scales.size() * 4 + 16), amax(4);
    EXPECT_EQ(cudaMemset(data.data(), 0xFF, data.size_bytes()), cudaSuccess);
    EXPECT_EQ(cudaMemset(scales.data(), 0xFF, scales.size_bytes()), cudaSuccess);
    EXPECT_EQ(cudaMemset(amax.data(), 0xFF, 4), cudaSuccess);
    unsigned char* scales_at = static_cast<unsigned char*>(scales.data()) + 16;
    const TensorView data_view(data.data(), fp8, shape);
    const TensorView scales_view(scales_at, fp8_scale_layout(m, data_view));
    quantize_fp8(dx.view, m, data_view, scales_view, with_amax ? amax.data_as<float>() : nullptr, stream);
    expect_bytes(download(data.data(), want.data.size(), stream), want.data, "data");
    expect_floats(download_floats(scales_at, want.scales.size(), stream), want.scales, "scales");
    // The 16 bytes before the scales are untouched.
    expect_bytes(download(scales.data(), 16, stream), std::vector<unsigned char>(16, 0xFF), "bytes before the scales");
    if (with_amax) expect_floats(download_floats(amax.data(), 1, stream), {want.amax}, "amax");
    else expect_bytes(download(amax.data(), 4, stream), std::vector<unsigned char>(4, 0xFF), "amax not asked for");
}

}  // namespace

// Every mode, both FP8 types, every input type; R and C not multiples of 128 (and C not a multiple
// of 8: the element-wise kernels) and both multiples (the 16-byte kernels).
TEST(QuantizeGpu, EveryModeTypeAndFp8Type) {
    GPUMATH_REQUIRE_GPU();
    for (DataType t : {bf16, f16, f32})
        for (DataType fp8 : {e4m3, e5m2})
            for (ScaleMode m : all_modes)
                for (const auto& shape : {std::vector<std::int64_t>{200, 300}, std::vector<std::int64_t>{256, 1024}})
                    check_allocating(t, fp8, m, shape);
}

TEST(QuantizeGpu, ShapesNotMultiplesOf128) {
    GPUMATH_REQUIRE_GPU();
    core::Stream stream;
    for (ScaleMode m : all_modes) {
        for (const auto& shape : {std::vector<std::int64_t>{1, 1}, std::vector<std::int64_t>{129, 136},
                                  std::vector<std::int64_t>{300, 392}, std::vector<std::int64_t>{77, 1000}})
            check_allocating(bf16, e4m3, m, shape, stream);
        check_allocating(f32, e5m2, m, {130, 129}, stream);
    }
    // A tensor-mode vector.
    check_allocating(bf16, e4m3, ScaleMode::tensor, {1000}, stream);
}

TEST(QuantizeGpu, Batched) {
    GPUMATH_REQUIRE_GPU();
    for (ScaleMode m : all_modes) {
        check_allocating(bf16, e4m3, m, {2, 3, 130, 260});
        check_allocating(bf16, e5m2, m, {3, 64, 256});
        check_allocating(f32, e4m3, m, {2, 1, 200, 384});
    }
}

// Rows longer than one sweep of the outer_vector kernel (re-read from L2), with 16-byte loads and
// without.
TEST(QuantizeGpu, LongRows) {
    GPUMATH_REQUIRE_GPU();
    for (ScaleMode m : all_modes) {
        check_allocating(bf16, e4m3, m, {3, 8320});
        check_allocating(f16, e5m2, m, {3, 8321});
        check_allocating(f32, e4m3, m, {2, 20000});
    }
}

// The form with outputs: dense x, strided rows (16-byte aligned and not), padded batch strides,
// poisoned outputs, with and without amax.
TEST(QuantizeGpu, IntoViewsWithStridedRows) {
    GPUMATH_REQUIRE_GPU();
    core::Stream stream;
    for (ScaleMode m : all_modes) {
        check_into(bf16, e4m3, m, {200, 384}, {}, true, stream);
        check_into(bf16, e4m3, m, {200, 384}, {400, 1}, true, stream);
        check_into(bf16, e5m2, m, {200, 384}, {391, 1}, false, stream);
        check_into(f16, e4m3, m, {2, 100, 384}, {100 * 400 + 8, 400, 1}, true, stream);
        check_into(f32, e5m2, m, {2, 3, 130, 256}, {3 * 140 * 300, 140 * 300, 300, 1}, true, stream);
        check_into(bf16, e4m3, m, {64, 256}, {0, 1}, true, stream);  // every row the same one
    }
}

TEST(QuantizeGpu, EmptyTensors) {
    GPUMATH_REQUIRE_GPU();
    // No elements: every scale that exists is 1, amax is 0.
    for (ScaleMode m : all_modes) {
        check_allocating(bf16, e4m3, m, {4, 0});
        check_allocating(bf16, e4m3, m, {0, 300});
        check_allocating(f32, e5m2, m, {2, 0, 128});
    }
    check_allocating(f32, e4m3, ScaleMode::tensor, {0});
}

// dequantize_fp8 equals q * scale in float rounded to the result type, and is within half an FP8
// step of x: 2^-4 relative for e4m3's normal values, 2^-3 for e5m2's, plus half the smallest
// subnormal step times the scale (2^-10 and 2^-17), plus the result type's own rounding.
TEST(QuantizeGpu, DequantizeInvertsWithinHalfAnFp8Step) {
    GPUMATH_REQUIRE_GPU();
    for (DataType fp8 : {e4m3, e5m2})
        for (ScaleMode m : all_modes)
            for (DataType result : {bf16, f16, f32})
                for (const auto& shape :
                     {std::vector<std::int64_t>{200, 300}, std::vector<std::int64_t>{2, 130, 256}}) {
                    SCOPED_TRACE(describe(bf16, fp8, m, shape) + " dequantized to " + std::string(to_string(result)));
                    Input x = make_input(bf16, shape, seed_of(bf16, fp8, m, shape) + 2);
                    const DeviceInput dx = upload(x);
                    const Expected e = reference(x, m, fp8);
                    const QuantizedFP8 q = quantize_fp8(dx.view, m, {.dtype = fp8});
                    const Tensor d = dequantize_fp8(q.data, q.scales_view, m, result);
                    ASSERT_EQ(d.dtype(), result);
                    ASSERT_TRUE(std::equal(d.shape().begin(), d.shape().end(), shape.begin(), shape.end()));
                    const std::vector<unsigned char> got = download(d.data(), x.v.size() * size_of(result));
                    const TensorLayout sl = fp8_scale_layout(m, q.data.layout());
                    const double rel = fp8 == e4m3 ? 0x1p-4 : 0x1p-3;
                    const double sub = fp8 == e4m3 ? 0x1p-10 : 0x1p-17;
                    const double out_rel = result == bf16 ? 0x1p-8 : result == f16 ? 0x1p-11 : 0x1p-23;
                    std::size_t bad_exact = 0, bad_bound = 0;
                    for (std::int64_t b = 0; b < x.batches; ++b)
                        for (std::int64_t r = 0; r < x.rows; ++r)
                            for (std::int64_t c = 0; c < x.cols; ++c) {
                                const std::size_t i = std::size_t((b * x.rows + r) * x.cols + c);
                                std::int64_t si = 0;
                                if (m == ScaleMode::outer_vector) si = b * x.rows + r;
                                if (m == ScaleMode::block_1x128)
                                    si = (sl.rank() > 2 ? b * sl.stride(0) : 0) + r + (c / 128) * sl.stride(-1);
                                if (m == ScaleMode::block_128x128)
                                    si = (sl.rank() > 2 ? b * sl.stride(0) : 0) + (r / 128) * sl.stride(-2) + c / 128;
                                const float s = e.scales[std::size_t(si)];
                                const float want = round_to(result, fp8_to_float(fp8, e.data[i]) * s);
                                const float v = decode(result, got.data() + i * size_of(result));
                                if (std::memcmp(&v, &want, 4) != 0) ++bad_exact;
                                const double xv = x.v[i];
                                const double bound = (rel + out_rel + 0x1p-20) * std::fabs(xv) + sub * s +
                                                     (result == f16 ? 0x1p-25 : 0.0);
                                if (std::fabs(double(v) - xv) > bound) ++bad_bound;
                            }
                    EXPECT_EQ(bad_exact, 0u) << "elements differing from q * scale";
                    EXPECT_EQ(bad_bound, 0u) << "elements further from x than half an FP8 step";
                }
}

TEST(QuantizeGpu, DequantizeStridedData) {
    GPUMATH_REQUIRE_GPU();
    Input x = make_input(f16, {100, 256}, 17);
    const DeviceInput dx = upload(x);
    const QuantizedFP8 q = quantize_fp8(dx.view, ScaleMode::block_1x128, {.dtype = e5m2});
    const Tensor dense = dequantize_fp8(q.data, q.scales_view, ScaleMode::block_1x128, f32);
    // The same data at a row stride of 300 bytes.
    core::Buffer padded(100 * 300);
    for (int r = 0; r < 100; ++r)
        ASSERT_EQ(cudaMemcpy(static_cast<unsigned char*>(padded.data()) + r * 300,
                             static_cast<const unsigned char*>(q.data.data()) + r * 256, 256, cudaMemcpyDeviceToDevice),
                  cudaSuccess);
    const TensorView strided(padded.data(), e5m2, {100, 256}, {300, 1});
    const Tensor from_strided = dequantize_fp8(strided, q.scales_view, ScaleMode::block_1x128, f32);
    expect_floats(from_strided.to_host<float>(), dense.to_host<float>(), "dequantized strided data");
}

// The form with outputs captured into a CUDA graph: replays write the bytes the eager call wrote,
// every time (tensor mode's memset and three kernels included).
TEST(QuantizeGpu, GraphCaptureReplaysTheEagerResult) {
    GPUMATH_REQUIRE_GPU();
    core::Stream stream;
    for (ScaleMode m : all_modes) {
        SCOPED_TRACE(std::string(to_string(m)));
        Input x = make_input(bf16, {2, 200, 384}, 99 + int(m));
        const DeviceInput dx = upload(x);
        const TensorLayout sl = fp8_scale_layout(m, dx.view);
        const std::size_t scale_bytes = std::size_t(scale_storage(m, x)) * 4;
        core::Buffer d0(x.v.size()), s0(scale_bytes), a0(4), d1(x.v.size()), s1(scale_bytes), a1(4);
        // Captured first: the first call of the process may compile and load the kernels.
        core::Graph g = core::Graph::capture(stream, [&](core::StreamRef s) {
            quantize_fp8(dx.view, m, TensorView(d1.data(), e4m3, x.shape), TensorView(s1.data(), sl),
                         a1.data_as<float>(), s);
        });
        quantize_fp8(dx.view, m, TensorView(d0.data(), e4m3, x.shape), TensorView(s0.data(), sl), a0.data_as<float>(),
                     stream);
        const std::vector<unsigned char> eager = download(d0.data(), x.v.size(), stream);
        const std::vector<unsigned char> eager_scales = download(s0.data(), scale_bytes, stream);
        const std::vector<unsigned char> eager_amax = download(a0.data(), 4, stream);
        expect_bytes(eager, reference(x, m, e4m3).data, "eager data");
        for (int replay = 0; replay < 2; ++replay) {
            EXPECT_EQ(cudaMemsetAsync(d1.data(), 0xFF, d1.size_bytes(), stream.handle()), cudaSuccess);
            EXPECT_EQ(cudaMemsetAsync(s1.data(), 0xFF, s1.size_bytes(), stream.handle()), cudaSuccess);
            EXPECT_EQ(cudaMemsetAsync(a1.data(), 0xFF, 4, stream.handle()), cudaSuccess);
            g.launch(stream);
            expect_bytes(download(d1.data(), x.v.size(), stream), eager, "replayed data");
            expect_bytes(download(s1.data(), scale_bytes, stream), eager_scales, "replayed scales");
            expect_bytes(download(a1.data(), 4, stream), eager_amax, "replayed amax");
        }
    }
}

TEST(QuantizeGpu, AllocatingFormsRefuseCapture) {
    GPUMATH_REQUIRE_GPU();
    core::Stream stream;
    Input x = make_input(bf16, {128, 256}, 5);
    const DeviceInput dx = upload(x);
    const QuantizedFP8 q = quantize_fp8(dx.view, ScaleMode::block_1x128, {}, stream);
    core::Buffer d(x.v.size()), s(std::size_t(q.scales.size()) * 4);
    core::Graph g = core::Graph::capture(stream, [&](core::StreamRef cs) {
        expect_throw_with<InvalidArgument>([&] { (void)quantize_fp8(dx.view, ScaleMode::block_1x128, {}, cs); },
                                           {"quantize_fp8", "stream: it is capturing", "the form with outputs"});
        expect_throw_with<InvalidArgument>(
            [&] { (void)dequantize_fp8(q.data, q.scales_view, ScaleMode::block_1x128, f32, cs); },
            {"dequantize_fp8", "capturing"});
        // Bad input is reported as such, before the capture is looked at.
        expect_throw_with<InvalidArgument>(
            [&] { (void)quantize_fp8(dx.view, ScaleMode::block_1x128, {.dtype = f16}, cs); }, {"options.dtype"});
        // The capture is still valid.
        quantize_fp8(dx.view, ScaleMode::block_1x128, TensorView(d.data(), e4m3, {128, 256}),
                     TensorView(s.data(), q.scales_view.layout()), nullptr, cs);
    });
    g.launch(stream);
    expect_bytes(download(d.data(), x.v.size(), stream), download(q.data.data(), x.v.size(), stream), "data");
}
