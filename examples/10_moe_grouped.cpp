// SPDX-License-Identifier: Apache-2.0
// A mixture-of-experts layer: 4096 tokens routed at random to 8 experts, each expert's tokens
// multiplied by that expert's weights, y_g = GELU(x_g @ W_g + b_g), in bf16, with one grouped
// product. The tokens are sorted by expert (as a router's permutation leaves them), so the layer is
// one A (tokens, K), weights (8, K, N) and one D (tokens, N) plus the tokens per expert.
//
// The grouped product is checked against one matmul() call per expert on the same buffers (the
// same cuBLASLt plans, so the same bits), then run again with the tokens per expert in device
// memory (gpumath's grouped kernel: no host synchronization, capturable) and compared again.
//
// Without a GPU it still builds and validates the grouped problem, says so, and exits with 77.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <random>
#include <vector>

#include <cuda_bf16.h>

#include <gpumath/core.hpp>
#include <gpumath/matmul.hpp>

using gpumath::DataType;
using gpumath::Epilog;
using gpumath::TensorLayout;
using gpumath::TensorView;
namespace core = gpumath::core;

namespace {

std::vector<__nv_bfloat16> random_bf16(std::size_t n, std::mt19937& rng, float scale) {
    std::uniform_real_distribution<float> dist(-scale, scale);
    std::vector<__nv_bfloat16> v(n);
    for (auto& x : v) x = __float2bfloat16(dist(rng));
    return v;
}

/// Rows [row, row + m) of a row-major (rows, cols) bf16 view.
TensorView rows_of(const TensorView& x, std::int64_t row, std::int64_t m) {
    auto* p = static_cast<__nv_bfloat16*>(x.data()) + row * x.stride(0);
    return TensorView(p, {m, x.shape(1)});
}

/// Largest |got - want| over the largest |want|.
double difference(const std::vector<__nv_bfloat16>& got, const std::vector<__nv_bfloat16>& want) {
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        const double w = __bfloat162float(want[i]);
        worst = std::max(worst, std::abs(double(__bfloat162float(got[i])) - w));
        scale = std::max(scale, std::abs(w));
    }
    return worst / scale;
}

}  // namespace

int main() try {
    constexpr std::int64_t tokens = 4096, experts = 8, k = 1024, n = 2048;
    std::mt19937 rng(2026);
    // Random routing: each token to one expert; the tokens per expert are uneven.
    std::vector<std::int64_t> per_expert(experts, 0);
    std::uniform_int_distribution<int> route(0, int(experts) - 1);
    for (std::int64_t t = 0; t < tokens; ++t) ++per_expert[std::size_t(route(rng))];
    std::printf("MoE layer: %lld tokens, %lld experts, K=%lld N=%lld, bf16, epilog gelu_bias\ntokens per expert:",
                static_cast<long long>(tokens), static_cast<long long>(experts), static_cast<long long>(k),
                static_cast<long long>(n));
    for (std::int64_t m : per_expert) std::printf(" %lld", static_cast<long long>(m));
    std::printf("\n");

    // Describe and validate the grouped problem: no GPU needed yet.
    const gpumath::MatmulOptions options{.epilog = Epilog::gelu_bias};
    gpumath::GroupedMatmul layer(TensorLayout(DataType::bf16, {tokens, k}),
                                 TensorLayout(DataType::bf16, {experts, k, n}), per_expert, options);
    std::printf("grouped product: G=%lld, backend %s\n", static_cast<long long>(layer.group_count()),
                std::string(to_string(layer.backend())).c_str());
    if (core::Device::count() == 0) {
        std::printf("validated the problem; running it needs a GPU, and this machine has no CUDA device\n");
        return 77;
    }

    core::Stream stream;
    // The tokens, already sorted by expert (the router's permutation), the weights and the biases.
    const auto x = gpumath::Tensor::from_host(random_bf16(std::size_t(tokens * k), rng, 1.0f), {tokens, k}, stream);
    const auto w =
        gpumath::Tensor::from_host(random_bf16(std::size_t(experts * k * n), rng, 0.05f), {experts, k, n}, stream);
    const auto b = gpumath::Tensor::from_host(random_bf16(std::size_t(experts * n), rng, 0.5f), {experts, n}, stream);
    auto y = gpumath::Tensor::empty(DataType::bf16, {tokens, n}, stream);
    auto y_ref = gpumath::Tensor::empty(DataType::bf16, {tokens, n}, stream);

    layer.plan();
    layer.execute(x, w, y, per_expert, {.bias = b.view()}, stream);

    // The same layer as one matmul() per expert.
    std::int64_t row = 0;
    for (std::int64_t g = 0; g < experts; ++g) {
        const std::int64_t m = per_expert[std::size_t(g)];
        if (m == 0) continue;
        const TensorView w_g(static_cast<__nv_bfloat16*>(w.data()) + g * k * n, {k, n});
        const TensorView b_g(static_cast<__nv_bfloat16*>(b.data()) + g * n, {n});
        gpumath::matmul(rows_of(x.view(), row, m), w_g, rows_of(y_ref.view(), row, m), {.bias = b_g}, options, stream);
        row += m;
    }
    const auto got = y.to_host<__nv_bfloat16>(stream);
    const auto want = y_ref.to_host<__nv_bfloat16>(stream);
    const bool same_bits = std::memcmp(got.data(), want.data(), got.size() * sizeof(__nv_bfloat16)) == 0;
    const double err = difference(got, want);
    std::printf("host sizes (loop of cuBLASLt products): %s per-expert matmul() (max difference %.2e)\n",
                same_bits ? "bitwise equal to" : "differs from", err);

    // The tokens per expert in device memory, as a router kernel would leave them.
    std::vector<std::int32_t> sizes32(per_expert.begin(), per_expert.end());
    const auto sizes = gpumath::Tensor::from_host(sizes32, {experts}, stream);
    auto y_dev = gpumath::Tensor::empty(DataType::bf16, {tokens, n}, stream);
    layer.execute(x, w, y_dev, gpumath::DeviceGroupSizes{.sizes = sizes.view(), .max_total_rows = tokens},
                  {.bias = b.view()}, stream);
    // f32 accumulation in another order, rounded to bf16: expect differences of bf16's precision.
    const double err_dev = difference(y_dev.to_host<__nv_bfloat16>(stream), want);
    std::printf("device sizes (grouped kernel): max difference %.2e of max |y| from per-expert matmul()\n", err_dev);

    const bool ok = err < 1e-2 && err_dev < 2e-2;
    std::printf("%s\n", ok ? "results match" : "RESULTS DIFFER");
    return ok ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "10_moe_grouped: %s\n", e.what());
    return 1;
}
