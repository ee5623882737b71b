// SPDX-License-Identifier: Apache-2.0
// A bf16 MLP layer, y = GELU(x @ W + b), fused into one cuBLASLt call, with autotuning: every
// candidate algorithm of the heuristic is timed on the real operands and the fastest is kept and
// saved to a tuning file that a later run (or another process) loads instead of re-tuning.
//
// Without a GPU it validates the problem, says so, and exits with 77.
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <cuda_bf16.h>

#include <gpumath/core.hpp>
#include <gpumath/matmul.hpp>

using gpumath::DataType;
using gpumath::Epilog;
using gpumath::TensorLayout;
namespace core = gpumath::core;

namespace {

std::vector<__nv_bfloat16> random_bf16(std::size_t n, std::mt19937& rng) {
    std::uniform_real_distribution<float> dist(-0.5f, 0.5f);
    std::vector<__nv_bfloat16> v(n);
    for (auto& x : v) x = __float2bfloat16(dist(rng));
    return v;
}

double gelu(double x) { return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }

}  // namespace

int main() try {
    constexpr std::int64_t tokens = 2048, in = 1024, out = 4096;
    const gpumath::MatmulOptions options{.epilog = Epilog::gelu_bias};
    gpumath::Matmul layer(TensorLayout(DataType::bf16, {tokens, in}), TensorLayout(DataType::bf16, {in, out}), options);
    std::printf("y = GELU(x @ W + b): x (%lld, %lld) bf16, W (%lld, %lld) bf16, b (%lld,), y bf16\n",
                static_cast<long long>(tokens), static_cast<long long>(in), static_cast<long long>(in),
                static_cast<long long>(out), static_cast<long long>(out));
    if (core::Device::count() == 0) {
        std::printf("validated the problem; running it needs a GPU, and this machine has no CUDA device\n");
        return 77;
    }

    std::mt19937 rng(7);
    const auto x_host = random_bf16(std::size_t(tokens * in), rng);
    const auto w_host = random_bf16(std::size_t(in * out), rng);
    const auto b_host = random_bf16(std::size_t(out), rng);
    core::Stream stream;
    const auto x = gpumath::Tensor::from_host(x_host, {tokens, in}, stream);
    const auto w = gpumath::Tensor::from_host(w_host, {in, out}, stream);
    const auto b = gpumath::Tensor::from_host(b_host, {out}, stream);
    auto y = gpumath::Tensor::empty(DataType::bf16, {tokens, out}, stream);

    const std::string tuning = (std::filesystem::temp_directory_path() / "gpumath-example-tuning.txt").string();
    if (layer.load_tuning(tuning)) {
        std::printf("loaded the tuned algorithm from %s\n", tuning.c_str());
    } else {
        const auto& ranked = layer.autotune(x, w, y, {.bias = b}, stream, 10);
        std::printf("autotuned %zu candidates (median of 10 runs each, L2 flushed):\n", ranked.size());
        const double flops = 2.0 * double(tokens) * double(in) * double(out);
        for (const auto& a : ranked)
            std::printf("  algorithm %3d tile %-8s stages %-7s split-K %d: %.4f ms (%.0f TFLOP/s)\n", a.id,
                        a.tile.c_str(), a.stages.c_str(), a.split_k, a.time_ms,
                        a.time_ms > 0 ? flops / (a.time_ms * 1e9) : 0.0);
        layer.save_tuning(tuning);
        std::printf("saved to %s\n", tuning.c_str());
    }
    layer.execute(x, w, y, {.bias = b}, stream);
    const auto y_host = y.to_host<__nv_bfloat16>(stream);

    // Check a sample of rows against a double-precision reference.
    double worst = 0;
    for (std::int64_t i = 0; i < tokens; i += 97) {
        for (std::int64_t j = 0; j < out; ++j) {
            double acc = __bfloat162float(b_host[std::size_t(j)]);
            for (std::int64_t p = 0; p < in; ++p)
                acc += double(__bfloat162float(x_host[std::size_t(i * in + p)])) *
                       double(__bfloat162float(w_host[std::size_t(p * out + j)]));
            const double want = gelu(acc);
            const double got = __bfloat162float(y_host[std::size_t(i * out + j)]);
            worst = std::max(worst, std::abs(got - want) / std::max(1.0, std::abs(want)));
        }
    }
    std::printf("sampled rows: max error %.2e (bf16 output)\n", worst);
    const bool ok = worst < 2e-2;
    std::printf("%s\n", ok ? "results match the reference" : "RESULTS DIFFER FROM THE REFERENCE");
    return ok ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "05_matmul_bf16_gelu_autotune: %s\n", e.what());
    return 1;
}
