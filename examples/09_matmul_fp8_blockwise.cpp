// SPDX-License-Identifier: Apache-2.0
// Block-scaled FP8 on Hopper, the recipe of DeepSeek-V3: bf16 activations x (M, K) and weights
// W (N, K) are quantized to e4m3 with one f32 scale per 1x128 slice of x and per 128x128 block of
// W (quantize_fp8, one run-time compiled kernel each), multiplied on FP8 tensor cores with the
// scales applied inside the product (cuBLASLt's VEC128 / BLK128x128 scale modes), into bf16:
// y = x W^T. The result is checked against the bf16 product in double precision.
//
// b = W^T is W's memory seen as a column-major (K, N) matrix (`transposed()`), as FP8 products on
// Hopper need (K contiguous in both inputs); its scales are transposed the same way.
//
// Without a Hopper GPU (compute capability 9.x) it validates the problem, says so, and exits 77.
#include <cmath>
#include <cstdio>
#include <exception>
#include <random>
#include <vector>

#include <cuda_bf16.h>

#include <gpumath/core.hpp>
#include <gpumath/matmul.hpp>

using gpumath::DataType;
using gpumath::ScaleMode;
using gpumath::TensorLayout;
namespace core = gpumath::core;

int main() try {
    constexpr std::int64_t m = 512, n = 1024, k = 2048;
    std::printf("y = x W^T: x (%lld, %lld) bf16, W (%lld, %lld) bf16 -> e4m3 with 1x128 / 128x128 scales -> y bf16\n",
                static_cast<long long>(m), static_cast<long long>(k), static_cast<long long>(n),
                static_cast<long long>(k));
    // The layouts of the scale tensors: x's (M, K/128) with M running fastest, W's (N/128, K/128).
    const TensorLayout x_scales =
        gpumath::fp8_scale_layout(ScaleMode::block_1x128, TensorLayout(DataType::bf16, {m, k}));
    const TensorLayout w_scales =
        gpumath::fp8_scale_layout(ScaleMode::block_128x128, TensorLayout(DataType::bf16, {n, k}));
    std::printf("scale tensors: x %s, W %s\n", gpumath::to_string(x_scales).c_str(),
                gpumath::to_string(w_scales).c_str());
    if (core::Device::count() == 0) {
        std::printf("needs a GPU of compute capability 9.x (Hopper); this machine has no CUDA device\n");
        return 77;
    }
    const auto cc = core::Device::current().compute_capability();
    if (cc.major != 9) {
        std::printf("block-scaled FP8 runs on compute capability 9.x (Hopper); this GPU is %d.%d\n", cc.major,
                    cc.minor);
        return 77;
    }

    // Activations whose rows differ in magnitude by up to 2^6, as real activations do (outliers):
    // per-row blocks keep each row's precision.
    std::mt19937 rng(9);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<__nv_bfloat16> x(std::size_t(m * k)), w(std::size_t(n * k));
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t p = 0; p < k; ++p)
            x[std::size_t(i * k + p)] = __float2bfloat16(dist(rng) * std::ldexp(1.0f, int(i % 7) - 3));
    for (auto& v : w) v = __float2bfloat16(dist(rng) * 0.05f);

    core::Stream stream;
    core::Buffer x_dev = core::Buffer::from_host(x, stream), w_dev = core::Buffer::from_host(w, stream);
    const gpumath::TensorView xv(x_dev.data(), DataType::bf16, {m, k}), wv(w_dev.data(), DataType::bf16, {n, k});

    const gpumath::QuantizedFP8 qx = gpumath::quantize_fp8(xv, ScaleMode::block_1x128, {}, stream);
    const gpumath::QuantizedFP8 qw = gpumath::quantize_fp8(wv, ScaleMode::block_128x128, {}, stream);
    gpumath::Tensor y = gpumath::matmul(qx.data, qw.data.view().transposed(),
                                        {.scales = {.a_mode = ScaleMode::block_1x128,
                                                    .b_mode = ScaleMode::block_128x128,
                                                    .a_tensor = qx.scales_view,
                                                    .b_tensor = qw.scales_view.transposed()}},
                                        {}, stream);
    const auto y_host = y.to_host<__nv_bfloat16>(stream);

    // The bf16 product in double, and the error of the FP8 one relative to its norm.
    double err2 = 0, ref2 = 0;
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            double want = 0;
            for (std::int64_t p = 0; p < k; ++p)
                want += double(__bfloat162float(x[std::size_t(i * k + p)])) *
                        double(__bfloat162float(w[std::size_t(j * k + p)]));
            const double got = double(__bfloat162float(y_host[std::size_t(i * n + j)]));
            err2 += (got - want) * (got - want);
            ref2 += want * want;
        }
    const double rel = std::sqrt(err2 / ref2);
    // e4m3 keeps 3 mantissa bits: each input within 2^-4 relative, products of random signs ~3%.
    std::printf("FP8 block-scaled vs bf16 product: relative error %.3e (FP8 tolerance 6e-2)\n", rel);
    const bool ok = rel < 6e-2;
    std::printf("%s\n", ok ? "results match the bf16 product within FP8 tolerance" : "RESULTS DIFFER");
    return ok ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "09_matmul_fp8_blockwise: %s\n", e.what());
    return 1;
}
