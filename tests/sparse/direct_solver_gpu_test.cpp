// SPDX-License-Identifier: Apache-2.0
// sparse::DirectSolver on a GPU with cuDSS: solves of SPD (full and one triangle), general real and
// complex systems, several right-hand sides in a padded column-major block, refactorization with
// new values, and a singular and an indefinite matrix reported through info/check (never a crash).
// Every solution is checked by its residual ||A x - b|| / (||A|| ||x|| + ||b||), computed on the
// host from the CSR arrays, independently of gpumath. Skips with the reason when there is no GPU
// or cuDSS cannot be loaded.
#include <gpumath/sparse.hpp>

#include <cuda_runtime_api.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <vector>

#include "common/test_util.hpp"

namespace gpumath::sparse {
namespace {

template <class T>
struct HostCsr {
    std::int64_t n = 0;
    std::vector<std::int32_t> offsets{0}, columns;
    std::vector<T> values;
};

/// The 5-point Laplacian of an m × m grid plus `shift` on the diagonal: SPD for shift >= 0.
/// `part` keeps one triangle (with the diagonal) or all of it.
template <class T>
HostCsr<T> laplacian(int m, double shift, MatrixPart part = MatrixPart::full) {
    HostCsr<T> a;
    a.n = std::int64_t(m) * m;
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < m; ++j) {
            const int row = i * m + j;
            const int neighbours[5] = {row - m, row - 1, row, row + 1, row + m};
            const bool exists[5] = {i > 0, j > 0, true, j + 1 < m, i + 1 < m};
            for (int e = 0; e < 5; ++e) {
                const int col = neighbours[e];
                if (!exists[e]) continue;
                if (part == MatrixPart::lower && col > row) continue;
                if (part == MatrixPart::upper && col < row) continue;
                a.columns.push_back(col);
                a.values.push_back(col == row ? T(4.0 + shift) : T(-1.0));
            }
            a.offsets.push_back(std::int32_t(a.columns.size()));
        }
    return a;
}

/// A nonsymmetric matrix with a random pattern (about `per_row` entries a row) and random values,
/// made diagonally dominant so that it is well conditioned.
template <class T>
HostCsr<T> random_general(std::int64_t n, int per_row, std::mt19937_64& rng) {
    HostCsr<T> a;
    a.n = n;
    std::uniform_int_distribution<std::int64_t> pick(0, n - 1);
    for (std::int64_t r = 0; r < n; ++r) {
        std::vector<std::int32_t> cols{std::int32_t(r)};
        for (int k = 0; k < per_row; ++k) cols.push_back(std::int32_t(pick(rng)));
        std::sort(cols.begin(), cols.end());
        cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
        const std::vector<T> v = test::random_vector<T>(cols.size(), rng);
        for (std::size_t k = 0; k < cols.size(); ++k) {
            a.columns.push_back(cols[k]);
            a.values.push_back(cols[k] == r ? v[k] + T(static_cast<decltype(std::abs(T{}))>(per_row + 2)) : v[k]);
        }
        a.offsets.push_back(std::int32_t(a.columns.size()));
    }
    return a;
}

/// Expands a stored triangle to the full symmetric matrix, for the host product.
template <class T>
HostCsr<T> symmetric_full(const HostCsr<T>& t) {
    std::vector<std::vector<std::pair<std::int32_t, T>>> rows(std::size_t(t.n));
    for (std::int64_t r = 0; r < t.n; ++r)
        for (std::int32_t k = t.offsets[std::size_t(r)]; k < t.offsets[std::size_t(r) + 1]; ++k) {
            const std::int32_t c = t.columns[std::size_t(k)];
            rows[std::size_t(r)].emplace_back(c, t.values[std::size_t(k)]);
            if (c != r) rows[std::size_t(c)].emplace_back(std::int32_t(r), t.values[std::size_t(k)]);
        }
    HostCsr<T> a;
    a.n = t.n;
    for (auto& row : rows) {
        std::sort(row.begin(), row.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
        for (const auto& [c, v] : row) {
            a.columns.push_back(c);
            a.values.push_back(v);
        }
        a.offsets.push_back(std::int32_t(a.columns.size()));
    }
    return a;
}

/// max over columns of ||A x - b|| / (||A||_F ||x|| + ||b||), x and b column-major with leading
/// dimension ld.
template <class T>
double residual(const HostCsr<T>& a, const std::vector<T>& x, const std::vector<T>& b, std::int64_t k,
                std::int64_t ld) {
    double a_norm = 0;
    for (const T& v : a.values) a_norm += std::norm(std::complex<double>(v));
    a_norm = std::sqrt(a_norm);
    double worst = 0;
    for (std::int64_t c = 0; c < k; ++c) {
        double r2 = 0, x2 = 0, b2 = 0;
        for (std::int64_t i = 0; i < a.n; ++i) {
            std::complex<double> sum = 0;
            for (std::int32_t e = a.offsets[std::size_t(i)]; e < a.offsets[std::size_t(i) + 1]; ++e)
                sum += std::complex<double>(a.values[std::size_t(e)]) *
                       std::complex<double>(x[std::size_t(c * ld + a.columns[std::size_t(e)])]);
            const std::complex<double> bi(b[std::size_t(c * ld + i)]);
            r2 += std::norm(sum - bi);
            x2 += std::norm(std::complex<double>(x[std::size_t(c * ld + i)]));
            b2 += std::norm(bi);
        }
        worst = std::max(worst, std::sqrt(r2) / (a_norm * std::sqrt(x2) + std::sqrt(b2)));
    }
    return worst;
}

template <class T>
double tolerance() {
    using Real = decltype(std::abs(T{}));
    return 100 * double(std::numeric_limits<Real>::epsilon());
}

/// The matrix on the device, with a view of it.
template <class T>
struct DeviceCsr {
    Tensor offsets, columns, values;
    MatrixView view;
    DeviceCsr(const HostCsr<T>& a, core::StreamRef s)
        : offsets(Tensor::from_host(a.offsets, {std::int64_t(a.offsets.size())}, s)),
          columns(Tensor::from_host(a.columns, {std::int64_t(a.columns.size())}, s)),
          values(Tensor::from_host(a.values, {std::int64_t(a.values.size())}, s)),
          view(MatrixView::csr(a.n, a.n, offsets, columns, values)) {}
};

class SparseDirectSolverGpu : public ::testing::Test {
protected:
    void SetUp() override {
        GPUMATH_REQUIRE_GPU();
        if (!DirectSolver::supported()) GTEST_SKIP() << "gpumath was built without cuDSS's header cudss.h";
        try {
            (void)DirectSolver::library_version();
        } catch (const CudssError& e) {
            GTEST_SKIP() << "cuDSS cannot be loaded: " << e.what();
        }
        owned.emplace();
        stream = *owned;
    }
    std::mt19937_64 rng = test::rng_for_test();
    std::optional<core::Stream> owned;  // made once the test knows there is a GPU
    core::StreamRef stream;
};

/// Solves a·x = b for `k` right-hand sides held column-major with leading dimension ld = n + pad,
/// and returns the residual. `reference` is the full matrix the host multiplies by.
template <class T>
double solve_and_measure(DirectSolver& solver, const HostCsr<T>& reference, std::int64_t k, std::int64_t pad,
                         std::mt19937_64& rng, core::StreamRef s) {
    const std::int64_t n = reference.n, ld = n + pad;
    const std::vector<T> b = test::random_vector<T>(std::size_t(k * ld), rng);
    const Tensor db = Tensor::from_host(b, {k, ld}, s);
    // The solution starts poisoned: NaN everywhere, padding included.
    std::vector<T> poison(std::size_t(k * ld), T(std::numeric_limits<double>::quiet_NaN()));
    const Tensor dx = Tensor::from_host(poison, {k, ld}, s);
    const TensorView bv = k == 1 && pad == 0 ? TensorView(db.data(), data_type_of<T>(), {n})
                                             : TensorView(db.data(), data_type_of<T>(), {n, k}, {1, ld});
    const TensorView xv = k == 1 && pad == 0 ? TensorView(dx.data(), data_type_of<T>(), {n})
                                             : TensorView(dx.data(), data_type_of<T>(), {n, k}, {1, ld});
    solver.solve(bv, xv, s);
    const std::vector<T> x = dx.to_host<T>(s);
    return residual(reference, x, b, k, ld);
}

TEST_F(SparseDirectSolverGpu, SpdLaplacianFullAndOneTriangle) {
    const HostCsr<double> full = laplacian<double>(16, 0.0);
    for (MatrixPart part : {MatrixPart::full, MatrixPart::lower, MatrixPart::upper}) {
        const HostCsr<double> stored = laplacian<double>(16, 0.0, part);
        const DeviceCsr<double> a(stored, stream);
        DirectSolver solver(a.view, {.type = MatrixType::spd, .part = part});
        solver.analyze(stream);
        EXPECT_TRUE(solver.analyzed());
        solver.factorize(stream);
        solver.check(stream);
        EXPECT_EQ(solver.info(stream), 0);
        EXPECT_LT(solve_and_measure(solver, full, 1, 0, rng, stream), tolerance<double>()) << to_string(part);
    }
    // Symmetric (indefinite allowed) on the same matrix.
    const HostCsr<double> lower = laplacian<double>(16, 0.0, MatrixPart::lower);
    const DeviceCsr<double> a(lower, stream);
    DirectSolver solver(a.view, {.type = MatrixType::symmetric, .part = MatrixPart::lower});
    solver.factorize(stream);  // analyzes first
    solver.check(stream);
    EXPECT_LT(solve_and_measure(solver, symmetric_full(lower), 2, 3, rng, stream), tolerance<double>());
}

template <class T>
void general_case(std::mt19937_64& rng, core::StreamRef stream) {
    const HostCsr<T> h = random_general<T>(300, 6, rng);
    const DeviceCsr<T> a(h, stream);
    DirectSolver solver(a.view, {.refinement_steps = 1});
    solver.factorize(stream);
    solver.check(stream);
    EXPECT_LT(solve_and_measure(solver, h, 1, 0, rng, stream), tolerance<T>());
    EXPECT_LT(solve_and_measure(solver, h, 5, 7, rng, stream), tolerance<T>());  // several right-hand sides
}

TEST_F(SparseDirectSolverGpu, GeneralF32) { general_case<float>(rng, stream); }
TEST_F(SparseDirectSolverGpu, GeneralF64) { general_case<double>(rng, stream); }
TEST_F(SparseDirectSolverGpu, GeneralC32) { general_case<std::complex<float>>(rng, stream); }
TEST_F(SparseDirectSolverGpu, GeneralC64) { general_case<std::complex<double>>(rng, stream); }

TEST_F(SparseDirectSolverGpu, RefactorizeWithNewValues) {
    HostCsr<double> h = random_general<double>(200, 5, rng);
    const DeviceCsr<double> a(h, stream);
    DirectSolver solver(a.view);
    solver.factorize(stream);
    EXPECT_LT(solve_and_measure(solver, h, 1, 0, rng, stream), tolerance<double>());
    // New values of the same pattern in a new array: the old solution no longer solves it.
    for (double& v : h.values) v = v * 0.5 + 0.25;
    for (std::int64_t r = 0; r < h.n; ++r)
        for (std::int32_t e = h.offsets[std::size_t(r)]; e < h.offsets[std::size_t(r) + 1]; ++e)
            if (h.columns[std::size_t(e)] == r) h.values[std::size_t(e)] += 10.0;
    const Tensor next = Tensor::from_host(h.values, {std::int64_t(h.values.size())}, stream);
    solver.refactorize(next, stream);
    solver.check(stream);
    EXPECT_EQ(solver.matrix().values().data(), next.data());
    EXPECT_LT(solve_and_measure(solver, h, 3, 0, rng, stream), tolerance<double>());
    // factorize() again on the same values gives the same answers.
    solver.factorize(stream);
    EXPECT_LT(solve_and_measure(solver, h, 1, 0, rng, stream), tolerance<double>());
}

TEST_F(SparseDirectSolverGpu, SingularMatrixIsReportedNotThrownByFactorize) {
    // Row 3 holds only an explicit zero on the diagonal: singular.
    HostCsr<double> h = laplacian<double>(4, 1.0);
    for (std::int32_t e = h.offsets[3]; e < h.offsets[4]; ++e) h.values[std::size_t(e)] = 0.0;
    for (std::int64_t r = 0; r < h.n; ++r)
        for (std::int32_t e = h.offsets[std::size_t(r)]; e < h.offsets[std::size_t(r) + 1]; ++e)
            if (h.columns[std::size_t(e)] == 3) h.values[std::size_t(e)] = 0.0;
    const DeviceCsr<double> a(h, stream);
    DirectSolver solver(a.view);
    EXPECT_NO_THROW(solver.factorize(stream));
    EXPECT_NE(solver.info(stream), 0);
    try {
        solver.check(stream);
        ADD_FAILURE() << "a singular matrix passed check()";
    } catch (const NumericalError& e) {
        EXPECT_NE(e.info(), 0);
        EXPECT_EQ(e.api(), "sparse::DirectSolver::check");
        EXPECT_NE(std::string(e.what()).find("singular"), std::string::npos) << e.what();
    }
}

TEST_F(SparseDirectSolverGpu, IndefiniteMatrixFailsSpd) {
    const HostCsr<double> h = laplacian<double>(6, -8.0);  // diagonal -4: negative definite
    const DeviceCsr<double> a(h, stream);
    DirectSolver solver(a.view, {.type = MatrixType::spd});
    EXPECT_NO_THROW(solver.factorize(stream));
    EXPECT_THROW(solver.check(stream), NumericalError);
    // The same values as a general matrix solve fine: a new factorization clears the info.
    DirectSolver general(a.view);
    general.factorize(stream);
    general.check(stream);
    EXPECT_LT(solve_and_measure(general, h, 1, 0, rng, stream), tolerance<double>());
}

TEST_F(SparseDirectSolverGpu, RefusesACapturingStream) {
    const HostCsr<double> h = laplacian<double>(4, 0.0);
    const DeviceCsr<double> a(h, stream);
    DirectSolver solver(a.view, {.type = MatrixType::spd});
    solver.factorize(stream);
    const Tensor b = Tensor::from_host(std::vector<double>(16, 1.0), {16}, stream);
    const Tensor x = Tensor::empty(DataType::f64, {16}, stream);
    stream.synchronize();
    ASSERT_EQ(cudaStreamBeginCapture(stream.handle(), cudaStreamCaptureModeThreadLocal), cudaSuccess);
    test::expect_throw_with<InvalidArgument>([&] { solver.solve(b, x, stream); },
                                             {"sparse::DirectSolver::solve", "capturing", "outside the capture"});
    test::expect_throw_with<InvalidArgument>([&] { solver.factorize(stream); }, {"capturing"});
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamEndCapture(stream.handle(), &graph), cudaSuccess);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    // Still usable after the refusals.
    solver.solve(b, x, stream);
    const std::vector<double> xs = x.to_host<double>(stream);
    EXPECT_LT(residual(h, xs, std::vector<double>(16, 1.0), 1, 16), tolerance<double>());
}

}  // namespace
}  // namespace gpumath::sparse
