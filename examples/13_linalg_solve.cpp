// SPDX-License-Identifier: Apache-2.0
// Dense linear algebra on cuSOLVER: a batch of 1-D Poisson systems solved through a Cholesky
// factorization, and the eigenvalues of the same matrices, checked against what the math says:
// the residual of every solve, and the known spectrum 2 - 2 cos(k pi / (n + 1)). The per-matrix
// status stays on the device until the one blocking check at the end. Last, a low-rank
// approximation by a truncated SVD of a Gaussian kernel matrix, its error checked.
//
// Without a GPU it validates the plans (no GPU work), says so, and exits with 77.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <numbers>
#include <vector>

#include <gpumath/core.hpp>
#include <gpumath/linalg.hpp>
#include <gpumath/tensor_ops.hpp>

namespace gm = gpumath;
namespace la = gpumath::linalg;

int main() try {
    constexpr std::int64_t batch = 16, n = 200, rhs = 3;
    // Plans validate their layouts and options with no GPU work.
    const gm::TensorLayout systems(gm::DataType::f64, {batch, n, n});
    la::Cholesky cholesky(systems);
    la::Eigh eigh(systems, {.vectors = false});
    std::printf("%lld systems of %lld unknowns: Cholesky info %s, eigenvalues %s\n", (long long)batch, (long long)n,
                gm::to_string(cholesky.info_layout()).c_str(), gm::to_string(eigh.values_layout()).c_str());
    if (gm::core::Device::count() == 0) {
        std::printf("solving needs a GPU, and this machine has no CUDA device\n");
        return 77;
    }

    // Matrix b is (2 + b/16) on the diagonal and -1 beside it: symmetric positive definite.
    std::vector<double> a(std::size_t(batch * n * n), 0.0), f(std::size_t(batch * n * rhs));
    for (std::int64_t b = 0; b < batch; ++b)
        for (std::int64_t i = 0; i < n; ++i) {
            double* row = &a[std::size_t((b * n + i) * n)];
            row[i] = 2.0 + double(b) / 16.0;
            if (i > 0) row[i - 1] = -1.0;
            if (i + 1 < n) row[i + 1] = -1.0;
            for (std::int64_t k = 0; k < rhs; ++k)
                f[std::size_t((b * n + i) * rhs + k)] = std::sin(double((k + 1) * (i + 1)) / double(n));
        }
    gm::core::Stream stream;
    const gm::Tensor da = gm::Tensor::from_host(a, {batch, n, n}, stream);
    const gm::Tensor df = gm::Tensor::from_host(f, {batch, n, rhs}, stream);

    // Factorize into a new tensor, solve for three right-hand sides, and take the eigenvalues.
    gm::Tensor factor = gm::Tensor::empty(systems, stream);
    gm::Tensor x = gm::Tensor::empty(df.view().layout(), stream);
    gm::Tensor info = gm::Tensor::empty(cholesky.info_layout(), stream);
    cholesky.factorize(da, factor, info, stream);
    cholesky.solve(factor, df, x, stream);
    const la::EighResult spectrum = la::eigh(da, {.vectors = false}, stream);
    la::check_info(info, "factorizing the Poisson systems", stream);  // the only wait on the GPU
    spectrum.check(stream);
    std::printf("backend chosen for the batch: %s\n", std::string(la::to_string(cholesky.backend())).c_str());

    // Residuals ||A x - f|| / ||f|| on the host.
    const std::vector<double> hx = x.to_host<double>(stream);
    double worst = 0;
    for (std::int64_t b = 0; b < batch; ++b) {
        double num = 0, den = 0;
        for (std::int64_t i = 0; i < n; ++i)
            for (std::int64_t k = 0; k < rhs; ++k) {
                double s = 0;
                for (std::int64_t j = std::max<std::int64_t>(0, i - 1); j <= std::min(n - 1, i + 1); ++j)
                    s += a[std::size_t((b * n + i) * n + j)] * hx[std::size_t((b * n + j) * rhs + k)];
                const double fi = f[std::size_t((b * n + i) * rhs + k)];
                num += (s - fi) * (s - fi);
                den += fi * fi;
            }
        worst = std::max(worst, std::sqrt(num / den));
    }
    // The eigenvalues of matrix b: 2 + b/16 - 2 cos(k pi / (n + 1)), k = 1..n, ascending.
    const std::vector<double> w = spectrum.values.to_host<double>(stream);
    double spectrum_error = 0;
    for (std::int64_t b = 0; b < batch; ++b)
        for (std::int64_t k = 1; k <= n; ++k) {
            const double exact = 2.0 + double(b) / 16.0 - 2.0 * std::cos(double(k) * std::numbers::pi / double(n + 1));
            spectrum_error = std::max(spectrum_error, std::abs(w[std::size_t(b * n + k - 1)] - exact));
        }
    std::printf("worst relative residual %.2e, worst eigenvalue error %.2e\n", worst, spectrum_error);
    if (worst > 1e-12 || spectrum_error > 1e-12) {
        std::printf("FAILED: beyond double precision's accuracy\n");
        return 1;
    }

    // A Gaussian kernel matrix exp(-(x - y)²) has singular values that decay faster than
    // geometrically: its rank-8 truncated SVD (randomized, cuSOLVER's gesvdr) reproduces it closely.
    constexpr std::int64_t rows = 600, cols = 400, rank = 8;
    std::vector<double> kernel(std::size_t(rows * cols));
    for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) {
            const double d = double(i) / rows - double(j) / cols;
            kernel[std::size_t(i * cols + j)] = std::exp(-d * d);
        }
    const gm::Tensor dk = gm::Tensor::from_host(kernel, {rows, cols}, stream);
    la::TruncatedSVD low_rank(dk.view().layout(), rank);
    gm::Tensor u = gm::Tensor::empty(low_rank.u_layout(), stream),
               s = gm::Tensor::empty(low_rank.values_layout(), stream);
    gm::Tensor vh = gm::Tensor::empty(low_rank.vh_layout(), stream),
               svd_info = gm::Tensor::empty(low_rank.info_layout(), stream);
    low_rank.execute(dk, u, s, vh, svd_info, stream);
    la::check_info(svd_info, "the truncated SVD", stream);
    const std::vector<double> hu = u.to_host<double>(stream), hs = s.to_host<double>(stream),
                              hv = vh.to_host<double>(stream);
    double diff = 0, norm = 0;
    for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) {
            double approx = 0;
            for (std::int64_t r = 0; r < rank; ++r)
                approx += hu[std::size_t(i * rank + r)] * hs[std::size_t(r)] * hv[std::size_t(r * cols + j)];
            const double exact = kernel[std::size_t(i * cols + j)];
            diff += (approx - exact) * (approx - exact);
            norm += exact * exact;
        }
    const double approximation_error = std::sqrt(diff / norm);
    std::printf(
        "rank-%lld approximation of a %lld x %lld kernel matrix: relative error %.2e (largest singular value %.3f)\n",
        (long long)rank, (long long)rows, (long long)cols, approximation_error, hs[0]);
    if (approximation_error > 1e-5) {
        std::printf("FAILED: the truncated SVD missed the kernel's low rank\n");
        return 1;
    }
    std::printf("OK\n");
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
}
