// SPDX-License-Identifier: Apache-2.0
// FP8 quantization against the memory system: quantize_fp8 (the form with outputs) of a bf16
// (8192, 7168) tensor to e4m3 in each scale mode, timed in interleaved samples against a
// device-to-device cudaMemcpyAsync that reads and writes as many bytes (x read once, data and
// scales written once: tensor mode reads x twice and is charged the same bytes), on the same
// stream in the same process. Each mode's result is checked (dequantized, within half an e4m3 step
// of x) before it is timed. Also the host cost of one call on a small tensor.
//
//   bench_quantize [--quick] [--json PATH] [name filters...]
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_bf16.h>

#include <gpumath/core.hpp>
#include <gpumath/matmul.hpp>

#include "harness.hpp"

using namespace gpumath;
using bench::Row;

namespace {

/// bf16 values uniform in (-1, 1) times 2^(row % 7), so that rows and blocks have different scales.
std::vector<float> make_input(std::int64_t rows, std::int64_t cols, std::vector<__nv_bfloat16>& encoded) {
    std::vector<float> v(std::size_t(rows * cols));
    encoded.resize(v.size());
    std::uint64_t s = 0x243f6a8885a308d3ULL;
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            const float u = float(double(s >> 11) * 0x1.0p-52 - 1.0);
            const std::size_t i = std::size_t(r * cols + c);
            encoded[i] = __float2bfloat16_rn(std::ldexp(u, int(r % 7)));
            v[i] = __bfloat162float(encoded[i]);
        }
    return v;
}

/// f32 elements the scales of `mode` occupy for x.
std::int64_t scale_floats(ScaleMode mode, const TensorLayout& x) {
    return mode == ScaleMode::tensor ? 1 : std::max<std::int64_t>(fp8_scale_layout(mode, x).span_elements(), 1) + 4;
}

/// True when dequantizing the result gives back x within half an e4m3 step (2^-4 relative, plus
/// half the smallest subnormal step times the scale, plus f32 rounding).
bool result_is_right(const TensorView& data, const TensorView& scales, ScaleMode mode, const std::vector<float>& x,
                     core::StreamRef stream) {
    const Tensor d = dequantize_fp8(data, scales, mode, DataType::f32, stream);
    const std::vector<float> got = d.to_host<float>(stream);
    // The largest scale bounds the absolute subnormal term: x is at most 64 in magnitude here.
    const double sub = 0x1p-10 * 64.0 / 448.0;
    std::size_t bad = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
        if (!(std::fabs(double(got[i]) - x[i]) <= (0x1p-4 + 0x1p-20) * std::fabs(x[i]) + sub)) ++bad;
    if (bad != 0)
        std::fprintf(stderr, "bench_quantize: %zu of %zu elements wrong in %s\n", bad, x.size(),
                     std::string(to_string(mode)).c_str());
    return bad == 0;
}

}  // namespace

int main(int argc, char** argv) {
    bench::require_gpu("bench_quantize");
    bench::Reporter report("bench_quantize", argc, argv);
    bench::print_environment("bench_quantize");
    core::Stream stream;
    const cudaStream_t s = stream.handle();
    const bool quick = report.quick();
    const std::int64_t rows = quick ? 2048 : 8192, cols = 7168;
    const int pairs = quick ? 11 : 41, per_sample = quick ? 4 : 10;
    std::printf(
        "x bf16 (%lld, %lld) to e4m3; raw = cudaMemcpyAsync D2D of half the bytes quantize reads and writes "
        "(a copy reads and writes each byte); interleaved samples of %d calls\n",
        static_cast<long long>(rows), static_cast<long long>(cols), per_sample);

    std::vector<__nv_bfloat16> encoded;
    const std::vector<float> x_host = make_input(rows, cols, encoded);
    core::Buffer x(encoded.size() * 2, stream), data(encoded.size(), stream);
    x.copy_from(std::span<const __nv_bfloat16>(encoded), stream);
    const TensorView xv(x.data(), DataType::bf16, {rows, cols});
    const TensorView dv(data.data(), DataType::e4m3, {rows, cols});
    core::Buffer amax(256, stream);
    int failures = 0;

    struct Case {
        ScaleMode mode;
        bool amax;
    };
    for (const Case c : {Case{ScaleMode::block_1x128, false}, Case{ScaleMode::block_1x128, true},
                         Case{ScaleMode::block_128x128, false}, Case{ScaleMode::outer_vector, false},
                         Case{ScaleMode::tensor, false}}) {
        const std::string group = "quantize bf16 " + std::to_string(rows) + "x" + std::to_string(cols) + " " +
                                  std::string(to_string(c.mode)) + (c.amax ? " +amax" : "");
        if (!report.selected(group)) continue;
        const TensorLayout sl = fp8_scale_layout(c.mode, xv);
        core::Buffer scales(std::size_t(scale_floats(c.mode, xv)) * 4, stream);
        const TensorView sv(scales.data(), sl);
        float* amax_ptr = c.amax ? amax.data_as<float>() : nullptr;
        auto quantize = [&](int) { quantize_fp8(xv, c.mode, dv, sv, amax_ptr, stream); };
        quantize(0);
        if (!result_is_right(dv, sv, c.mode, x_host, stream)) {
            ++failures;
            continue;
        }
        // Bytes a quantization must move: x read once, data and scales written once.
        const double bytes = double(rows * cols) * 3.0 + double(sl.span_elements()) * 4.0;
        const auto copy_bytes = std::size_t(bytes / 2.0);
        core::Buffer src(copy_bytes, stream), dst(copy_bytes, stream);
        bench::cuda_check(cudaMemsetAsync(src.data(), 1, copy_bytes, s), "memset");
        auto copy = [&](int) {
            bench::cuda_check(cudaMemcpyAsync(dst.data(), src.data(), copy_bytes, cudaMemcpyDeviceToDevice, s),
                              "memcpy");
        };
        bench::burn(s, quantize, quick ? 0.2 : 1.0);
        const bench::PairedMs t = bench::paired_gpu_ms(s, quantize, copy, 5, pairs, per_sample);
        const double gbs = bytes / (t.a * 1e-3) / 1e9, copy_gbs = 2.0 * double(copy_bytes) / (t.b * 1e-3) / 1e9;
        char note[160];
        std::snprintf(note, sizeof note, "%.1f us vs copy %.1f us (%.1f MB moved)", t.a * 1e3, t.b * 1e3, bytes / 1e6);
        report.add({group, "raw cudaMemcpyAsync", "GB/s", copy_gbs, 0, "same bytes read+written"});
        report.add({group, "gpumath quantize_fp8", "GB/s", gbs, 1.0 / t.ratio, note});
    }

    // Host cost of one call (the kernels cached), on a tensor small enough that the GPU keeps up.
    const std::string group = "quantize bf16 128x1024 block_1x128 host time";
    if (report.selected(group)) {
        const TensorView small_x(x.data(), DataType::bf16, {128, 1024});
        const TensorView small_d(data.data(), DataType::e4m3, {128, 1024});
        core::Buffer scales(std::size_t(scale_floats(ScaleMode::block_1x128, small_x)) * 4, stream);
        const TensorView sv(scales.data(), fp8_scale_layout(ScaleMode::block_1x128, small_x));
        const double us = bench::host_us(
            s, [&](int) { quantize_fp8(small_x, ScaleMode::block_1x128, small_d, sv, nullptr, stream); }, 128,
            quick ? 11 : 51);
        report.add({group, "gpumath quantize_fp8", "us/call", us, 0, "checks, cached kernel lookup, one launch"});
    }
    return failures == 0 ? 0 : 1;
}
