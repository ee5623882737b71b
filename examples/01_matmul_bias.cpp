// SPDX-License-Identifier: Apache-2.0
// Matrix multiplication with a fused bias: the C++ version of nvmath-python's Matmul example.
// A (1024 x 512) @ B (512 x 1024) + bias in f32 with the f32_fast_f16 compute type (f16 tensor
// cores, f32 accumulation), planned once and executed, checked against a CPU reference.
//
// The bias follows NumPy broadcasting of `A @ B + bias`: shape (N,) adds one value per column,
// (M, 1) one per row (that needs a column-major D, shown at the end), (M, N) the whole matrix.
//
// Without a GPU it still builds and validates the plan's problem, says so, and exits with 77.
#include <cmath>
#include <cstdio>
#include <exception>
#include <random>
#include <vector>

#include <gpumath/core.hpp>
#include <gpumath/matmul.hpp>

using gpumath::DataType;
using gpumath::Epilog;
using gpumath::TensorLayout;
namespace core = gpumath::core;

namespace {

std::vector<float> random_values(std::size_t n, std::mt19937& rng) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

/// Largest |got - want| / max|want| over the matrix, with `want` computed in double.
double check(const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& bias,
             const std::vector<float>& d, std::int64_t m, std::int64_t k, std::int64_t n, bool per_row,
             bool d_col_major) {
    double worst = 0, scale = 0;
    std::vector<double> row(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < m; ++i) {
        std::fill(row.begin(), row.end(), 0.0);
        for (std::int64_t p = 0; p < k; ++p) {
            const double x = a[std::size_t(i * k + p)];
            for (std::int64_t j = 0; j < n; ++j) row[std::size_t(j)] += x * b[std::size_t(p * n + j)];
        }
        for (std::int64_t j = 0; j < n; ++j) {
            const double want = row[std::size_t(j)] + bias[std::size_t(per_row ? i : j)];
            const double got = d[std::size_t(d_col_major ? j * m + i : i * n + j)];
            worst = std::max(worst, std::abs(got - want));
            scale = std::max(scale, std::abs(want));
        }
    }
    return worst / scale;
}

}  // namespace

int main() try {
    constexpr std::int64_t m = 1024, k = 512, n = 1024;
    // Describe and validate the problem: no GPU needed yet.
    gpumath::Matmul mm(TensorLayout(DataType::f32, {m, k}), TensorLayout(DataType::f32, {k, n}),
                       {.compute_type = gpumath::ComputeType::f32_fast_f16, .epilog = Epilog::bias});
    std::printf("D = A @ B + bias: M=%lld K=%lld N=%lld, f32 operands, compute type %s, epilog %s\n",
                static_cast<long long>(mm.m()), static_cast<long long>(mm.k()), static_cast<long long>(mm.n()),
                std::string(to_string(mm.compute_type())).c_str(), std::string(to_string(mm.options().epilog)).c_str());
    if (core::Device::count() == 0) {
        std::printf("validated the problem; running it needs a GPU, and this machine has no CUDA device\n");
        return 77;
    }

    std::mt19937 rng(2024);
    const auto a_host = random_values(std::size_t(m * k), rng);
    const auto b_host = random_values(std::size_t(k * n), rng);
    const auto bias_host = random_values(std::size_t(n), rng);
    core::Stream stream;
    const auto a = gpumath::Tensor::from_host(a_host, {m, k}, stream);
    const auto b = gpumath::Tensor::from_host(b_host, {k, n}, stream);
    const auto bias = gpumath::Tensor::from_host(bias_host, {n}, stream);

    mm.plan();
    const gpumath::AlgorithmInfo& algo = mm.algorithm();
    std::printf("cuBLASLt algorithm %d, tile %s, stages %s, split-K %d, workspace %zu bytes\n", algo.id,
                algo.tile.c_str(), algo.stages.c_str(), algo.split_k, algo.workspace_bytes);

    gpumath::Tensor d = mm.execute(a, b, {.bias = bias}, stream);
    const std::vector<float> d_host = d.to_host<float>(stream);
    std::printf("D[0, 0:4] = %.5f %.5f %.5f %.5f\n", double(d_host[0]), double(d_host[1]), double(d_host[2]),
                double(d_host[3]));
    // f32_fast_f16 rounds the inputs to f16: expect errors around 1e-3 of the result's scale.
    const double err = check(a_host, b_host, bias_host, d_host, m, k, n, false, false);
    std::printf("per-column bias (N,): max error %.2e of max |D| against a double-precision CPU reference\n", err);

    // One value per row: bias (M, 1) into a column-major D (strides (1, M)), with the stateless call.
    const auto row_bias_host = random_values(std::size_t(m), rng);
    const auto row_bias = gpumath::Tensor::from_host(row_bias_host, {m, 1}, stream);
    core::Buffer d_col(std::size_t(m * n) * sizeof(float), stream);
    const gpumath::TensorView d_col_view(d_col.data(), DataType::f32, {m, n}, {1, m});
    gpumath::matmul(a, b, d_col_view, {.bias = row_bias},
                    {.compute_type = gpumath::ComputeType::f32_fast_f16, .epilog = Epilog::bias}, stream);
    const double err_row = check(a_host, b_host, row_bias_host, d_col.to_host<float>(stream), m, k, n, true, true);
    std::printf("per-row bias (M, 1), column-major D: max error %.2e\n", err_row);

    const bool ok = err < 5e-3 && err_row < 5e-3;
    std::printf("%s\n", ok ? "results match the reference" : "RESULTS DIFFER FROM THE REFERENCE");
    return ok ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "01_matmul_bias: %s\n", e.what());
    return 1;
}
