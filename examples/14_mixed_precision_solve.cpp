// SPDX-License-Identifier: Apache-2.0
// A mixed-precision solve: a well-conditioned f64 system of 4096 unknowns solved by an LU in f16
// (on tensor cores) refined to double accuracy (linalg::refined_solve, cuSOLVER's IRSXgesv), and
// by a plain f64 LU (linalg::solve) for comparison: the refinement's iteration count, whether it
// fell back to a full-precision LU, both backward errors ‖A·x − b‖ / (‖A‖‖x‖) and both times.
// The refined solve blocks (cuSOLVER hands the iteration count back on the host).
//
// Without a GPU it validates the plan (no GPU work), says so, and exits with 77.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <random>
#include <vector>

#include <gpumath/core.hpp>
#include <gpumath/linalg.hpp>

namespace gm = gpumath;
namespace la = gpumath::linalg;

namespace {

/// ‖A·x − b‖₂ / (‖A‖_F ‖x‖₂) for row-major A, on the host.
double backward_error(const std::vector<double>& a, const std::vector<double>& x, const std::vector<double>& b,
                      std::int64_t n) {
    double rn = 0, an = 0, xn = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        double s = -b[std::size_t(i)];
        for (std::int64_t j = 0; j < n; ++j) {
            const double v = a[std::size_t(i * n + j)];
            s += v * x[std::size_t(j)];
            an += v * v;
        }
        rn += s * s;
        xn += x[std::size_t(i)] * x[std::size_t(i)];
    }
    return std::sqrt(rn) / (std::sqrt(an) * std::sqrt(xn));
}

/// Milliseconds `fn` takes until `stream` has run its work.
template <class F>
double timed_ms(const gm::core::Stream& stream, F&& fn) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    stream.synchronize();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main() try {
    constexpr std::int64_t n = 4096;
    const gm::TensorLayout system(gm::DataType::f64, {n, n});
    const gm::TensorLayout rhs(gm::DataType::f64, {n});
    // The plan validates its layouts and options with no GPU work.
    const la::RefinedSolve plan(system, rhs, {.lowest = la::LowestPrecision::f16});
    std::printf("%lld unknowns, LU in %s refined to f64 (%s refinement, at most %d iterations)\n", (long long)n,
                std::string(la::to_string(plan.options().lowest)).c_str(),
                std::string(la::to_string(plan.options().refinement)).c_str(), plan.options().max_iterations);
    if (gm::core::Device::count() == 0) {
        std::printf("solving needs a GPU, and this machine has no CUDA device\n");
        return 77;
    }

    // Entries uniform on [-1, 1] plus 2·sqrt(n) on the diagonal: condition number about 4.
    std::mt19937_64 rng(2024);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::vector<double> a(static_cast<std::size_t>(n * n)), b(static_cast<std::size_t>(n));
    for (auto& v : a) v = u(rng);
    for (std::int64_t i = 0; i < n; ++i) a[std::size_t(i * n + i)] += 2.0 * std::sqrt(double(n));
    for (auto& v : b) v = u(rng);
    gm::core::Stream stream;
    const gm::Tensor da = gm::Tensor::from_host(a, {n, n}, stream);
    const gm::Tensor db = gm::Tensor::from_host(b, {n}, stream);

    // Once each to plan and warm up, then timed.
    (void)la::refined_solve(da, db, {}, stream);
    (void)la::solve(da, db, {}, stream);
    la::RefinedSolveResult refined;
    la::SolveResult plain;
    const double refined_ms = timed_ms(stream, [&] { refined = la::refined_solve(da, db, {}, stream); });
    const double plain_ms = timed_ms(stream, [&] { plain = la::solve(da, db, {}, stream); });
    refined.check(stream);
    plain.check(stream);

    const la::RefinementStatus& status = refined.refinement[0];
    const double refined_error = backward_error(a, refined.x.to_host<double>(stream), b, n);
    const double plain_error = backward_error(a, plain.x.to_host<double>(stream), b, n);
    std::printf("refined solve: %s after %d iterations%s, backward error %.2e, %.2f ms\n",
                status.converged() ? "converged" : "did not converge", status.iterations,
                status.fell_back ? " (fell back to an f64 LU)" : "", refined_error, refined_ms);
    std::printf("f64 LU solve:  backward error %.2e, %.2f ms (%.2fx the refined solve's time)\n", plain_error, plain_ms,
                plain_ms / refined_ms);
    if (!(refined_error < 1e-13) || !(plain_error < 1e-13)) {
        std::printf("FAILED: a backward error beyond double precision's accuracy\n");
        return 1;
    }
    std::printf("OK\n");
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
}
