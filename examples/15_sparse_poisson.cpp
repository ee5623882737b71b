// SPDX-License-Identifier: Apache-2.0
// A sparse direct solve on cuDSS: the 3-D Poisson problem -Δu = f on the unit cube with u = 0 on
// the boundary, discretized by the 7-point stencil on an n × n × n grid (n = 32 by default, or the
// first argument), assembled as CSR on the host, solved with sparse::DirectSolver, and checked by
// its residual ||b - A x|| / ||b|| and by the error against the exact solution
// u = sin(πx) sin(πy) sin(πz), which the discretization reproduces to O(h²).
//
// Without a GPU, or without cuDSS (not part of the CUDA toolkit), it says so and exits with 77.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <numbers>
#include <vector>

#include <gpumath/core.hpp>
#include <gpumath/sparse.hpp>

namespace gm = gpumath;
namespace sp = gpumath::sparse;

namespace {

struct Poisson {
    std::int64_t n = 0;  // unknowns
    std::vector<std::int32_t> offsets{0}, columns;
    std::vector<double> values, b, exact;
};

/// The 7-point Laplacian (6 on the diagonal, -1 to each neighbour inside the cube) and
/// b = h² f for the exact solution above.
Poisson assemble(int m) {
    Poisson p;
    p.n = std::int64_t(m) * m * m;
    const double h = 1.0 / (m + 1), pi = std::numbers::pi;
    auto index = [m](int i, int j, int k) { return std::int32_t((i * m + j) * m + k); };
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < m; ++j)
            for (int k = 0; k < m; ++k) {
                const int at[7][3] = {{i - 1, j, k}, {i, j - 1, k}, {i, j, k - 1}, {i, j, k},
                                      {i, j, k + 1}, {i, j + 1, k}, {i + 1, j, k}};
                for (const auto& c : at) {
                    if (c[0] < 0 || c[0] >= m || c[1] < 0 || c[1] >= m || c[2] < 0 || c[2] >= m) continue;
                    p.columns.push_back(index(c[0], c[1], c[2]));
                    p.values.push_back(c[0] == i && c[1] == j && c[2] == k ? 6.0 : -1.0);
                }
                p.offsets.push_back(std::int32_t(p.columns.size()));
                const double u = std::sin(pi * (i + 1) * h) * std::sin(pi * (j + 1) * h) * std::sin(pi * (k + 1) * h);
                p.exact.push_back(u);
                p.b.push_back(h * h * 3 * pi * pi * u);
            }
    return p;
}

/// r = b - A x on the host (the residual, from the solution copied back).
std::vector<double> host_residual(const Poisson& p, const std::vector<double>& x) {
    std::vector<double> r(p.b);
    for (std::int64_t i = 0; i < p.n; ++i)
        for (std::int32_t e = p.offsets[std::size_t(i)]; e < p.offsets[std::size_t(i) + 1]; ++e)
            r[std::size_t(i)] -= p.values[std::size_t(e)] * x[std::size_t(p.columns[std::size_t(e)])];
    return r;
}

/// r = b - A x on the device with sparse::spmv when this gpumath has it (found by argument-dependent
/// lookup on the MatrixView, so this compiles either way), else on the host.
template <class Matrix>
std::vector<double> residual(const Poisson& p, const Matrix& a, const gm::Tensor& x, gm::core::StreamRef stream) {
    if constexpr (requires(gm::Tensor & r) { spmv(a, x.view(), r.view(), -1.0, 1.0, {}, stream); }) {
        gm::Tensor r = gm::Tensor::from_host(p.b, {p.n}, stream);
        spmv(a, x.view(), r.view(), -1.0, 1.0, {}, stream);
        return r.to_host<double>(stream);
    } else {
        return host_residual(p, x.to_host<double>(stream));
    }
}

double norm(const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x * x;
    return std::sqrt(s);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) try {
    const int m = argc > 1 ? std::atoi(argv[1]) : 32;
    if (m < 2 || m > 200) {
        std::printf("usage: %s [grid points per side, 2 to 200; default 32]\n", argv[0]);
        return 2;
    }
    const Poisson p = assemble(m);
    std::printf("3-D Poisson on a %d³ grid: %lld unknowns, %zu stored entries\n", m, (long long)p.n, p.values.size());
    if (gm::core::Device::count() == 0) {
        std::printf("solving needs a GPU, and this machine has no CUDA device\n");
        return 77;
    }
    if (!sp::DirectSolver::supported()) {
        std::printf(
            "this gpumath was built without cuDSS's header, so it has no direct solver: run scripts/deps.sh "
            "(or `pip install nvidia-cudss-cu13` and configure with -DGPUMATH_CUDSS_ROOT=<its folder>)\n");
        return 77;
    }
    try {
        std::printf("cuDSS %d loaded\n", sp::DirectSolver::library_version());
    } catch (const gm::CudssError& e) {
        std::printf("cuDSS is needed for the solve: %s\n", e.what());
        return 77;
    }

    gm::core::Stream stream;
    const gm::Tensor offsets = gm::Tensor::from_host(p.offsets, {p.n + 1}, stream);
    const gm::Tensor columns = gm::Tensor::from_host(p.columns, {std::int64_t(p.columns.size())}, stream);
    const gm::Tensor values = gm::Tensor::from_host(p.values, {std::int64_t(p.values.size())}, stream);
    const gm::Tensor b = gm::Tensor::from_host(p.b, {p.n}, stream);
    gm::Tensor x = gm::Tensor::empty(gm::DataType::f64, {p.n}, stream);
    const sp::MatrixView a = sp::MatrixView::csr(p.n, p.n, offsets, columns, values);

    // The matrix is symmetric positive definite: a Cholesky factorization.
    sp::DirectSolver solver(a, {.type = sp::MatrixType::spd});
    auto t = std::chrono::steady_clock::now();
    solver.analyze(stream);
    stream.synchronize();
    const double analysis = seconds_since(t);
    t = std::chrono::steady_clock::now();
    solver.factorize(stream);
    solver.check(stream);  // waits, and throws NumericalError if the matrix were not positive definite
    const double factorization = seconds_since(t);
    t = std::chrono::steady_clock::now();
    solver.solve(b, x, stream);
    stream.synchronize();
    const double solve = seconds_since(t);
    std::printf("analysis %.1f ms, factorization %.1f ms, solve %.1f ms\n", analysis * 1e3, factorization * 1e3,
                solve * 1e3);

    const double relative_residual = norm(residual(p, a, x, stream)) / norm(p.b);
    const std::vector<double> hx = x.to_host<double>(stream);
    double error = 0;
    for (std::int64_t i = 0; i < p.n; ++i)
        error = std::max(error, std::abs(hx[std::size_t(i)] - p.exact[std::size_t(i)]));
    const double h = 1.0 / (m + 1);
    std::printf("relative residual %.2e; max error against the exact solution %.2e (h² = %.2e)\n", relative_residual,
                error, h * h);
    if (relative_residual > 1e-10 || error > 2 * h * h) {
        std::printf("FAILED: the solve is not accurate enough\n");
        return 1;
    }
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
}
