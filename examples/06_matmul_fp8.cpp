// SPDX-License-Identifier: Apache-2.0
// FP8 matrix multiplication with per-tensor scales (compute capability >= 8.9): quantize A and B
// to e4m3 with a scale each, multiply on FP8 tensor cores with the scales undone on the fly
// (D = scale_a * scale_b * A8 @ B8), into bf16; then into e4m3 with an output scale and the
// amax of the result, as FP8 training recipes use.
//
// cuBLASLt's FP8 rules: M, N, K multiples of 16 and, on Ada/Hopper, K contiguous in both inputs
// ("TN"): A row-major and B column-major. gpumath arranges the rest (a row-major D is computed as
// D^T = B^T A^T) and says which rule a problem breaks.
//
// Without a suitable GPU it validates the problem, says so, and exits with 77.
#include <cmath>
#include <cstdio>
#include <exception>
#include <random>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <gpumath/core.hpp>
#include <gpumath/matmul.hpp>

using gpumath::DataType;
using gpumath::TensorLayout;
namespace core = gpumath::core;

int main() try {
    constexpr std::int64_t m = 512, k = 1024, n = 256;
    const TensorLayout a_layout(DataType::e4m3, {m, k});          // row-major: K contiguous
    const TensorLayout b_layout(DataType::e4m3, {k, n}, {1, k});  // column-major: K contiguous
    gpumath::Matmul mm(a_layout, b_layout, {.result_type = DataType::bf16});
    std::printf("FP8 e4m3: A (%lld, %lld) row-major, B (%lld, %lld) column-major -> D bf16\n",
                static_cast<long long>(m), static_cast<long long>(k), static_cast<long long>(k),
                static_cast<long long>(n));
    if (core::Device::count() == 0) {
        std::printf(
            "validated the problem; running it needs a GPU of compute capability >= 8.9, and this machine "
            "has no CUDA device\n");
        return 77;
    }
    const auto cc = core::Device::current().compute_capability();
    if (cc < core::ComputeCapability{8, 9}) {
        std::printf("FP8 needs compute capability >= 8.9; this GPU is %d.%d\n", cc.major, cc.minor);
        return 77;
    }

    // Data in [-3, 3) quantized with scales that map it onto e4m3's range (max 448).
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
    std::vector<float> a(std::size_t(m * k)), b(std::size_t(k * n));
    for (float& x : a) x = dist(rng);
    for (float& x : b) x = dist(rng);
    const float scale_a = 3.0f / 448.0f, scale_b = 3.0f / 448.0f;
    std::vector<__nv_fp8_e4m3> a8(a.size()), b8(b.size());
    std::vector<double> aq(a.size()), bq(b.size());  // the quantized values, as the GPU sees them
    for (std::size_t i = 0; i < a.size(); ++i) {
        a8[i] = __nv_fp8_e4m3(a[i] / scale_a);
        aq[i] = double(float(a8[i])) * scale_a;
    }
    for (std::int64_t p = 0; p < k; ++p)  // B column-major: element (p, j) at j * k + p
        for (std::int64_t j = 0; j < n; ++j) {
            const std::size_t src = std::size_t(p * n + j), dst = std::size_t(j * k + p);
            b8[dst] = __nv_fp8_e4m3(b[src] / scale_b);
            bq[src] = double(float(b8[dst])) * scale_b;
        }

    core::Stream stream;
    core::Buffer a_dev = core::Buffer::from_host(a8, stream), b_dev = core::Buffer::from_host(b8, stream);
    const gpumath::TensorView av(a_dev.data(), a_layout), bv(b_dev.data(), b_layout);
    // Scales live on the device (so a training loop can update them without a host round trip),
    // each in its own 16-byte slot: a, b, d and the amax output.
    const std::vector<float> scales_host = {scale_a, 0, 0, 0, scale_b, 0, 0, 0, 1.0f / 16.0f, 0, 0, 0, 0.0f, 0, 0, 0};
    core::Buffer scales = core::Buffer::from_host(scales_host, stream);
    const float* s = scales.data_as<float>();
    const float* s_a = s;
    const float* s_b = s + 4;
    const float* s_d = s + 8;
    float* amax_d = scales.data_as<float>() + 12;

    gpumath::Tensor d = mm.execute(av, bv, {.scales = {.a = s_a, .b = s_b}}, stream);
    const auto d_host = d.to_host<__nv_bfloat16>(stream);

    // e4m3 output: D8 = scale_d * (scale_a scale_b A8 @ B8), amax = max |D| before scale_d.
    core::Buffer d8_dev(std::size_t(m * n), stream);
    const gpumath::TensorView d8v(d8_dev.data(), DataType::e4m3, {m, n});
    gpumath::matmul(av, bv, d8v, {.scales = {.a = s_a, .b = s_b, .d = s_d, .amax_d = amax_d}}, {}, stream);
    const auto d8_host = d8_dev.to_host<__nv_fp8_e4m3>(stream);
    const float amax = scales.to_host<float>(stream)[12];

    double worst = 0, worst8 = 0, scale = 0, max_abs = 0;
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            double want = 0;
            for (std::int64_t p = 0; p < k; ++p) want += aq[std::size_t(i * k + p)] * bq[std::size_t(p * n + j)];
            const std::size_t o = std::size_t(i * n + j);
            worst = std::max(worst, std::abs(double(__bfloat162float(d_host[o])) - want));
            worst8 = std::max(worst8, std::abs(double(float(d8_host[o])) * 16.0 - want));
            scale = std::max(scale, std::abs(want));
            max_abs = std::max(max_abs, std::abs(want));
        }
    std::printf("bf16 result: max error %.2e of max |D| = %.3f\n", worst / scale, scale);
    std::printf("e4m3 result (scale 1/16): max error %.2e of max |D|; amax reported %.3f, reference %.3f\n",
                worst8 / scale, double(amax), max_abs);
    const bool ok = worst / scale < 1e-2 && worst8 / scale < 7e-2 && std::abs(amax - max_abs) < 0.01 * max_abs;
    std::printf("%s\n", ok ? "results match the reference" : "RESULTS DIFFER FROM THE REFERENCE");
    return ok ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "06_matmul_fp8: %s\n", e.what());
    return 1;
}
