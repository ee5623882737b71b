// SPDX-License-Identifier: Apache-2.0
// LU's Backend::batched (cuBLAS getrfBatched and getrsBatched) on the GPU against host references
// that do not use gpumath: ‖P·A − L·U‖/‖A‖ from the factors and pivots, solve residuals
// ‖A·X − B‖/(‖A‖·‖X‖), in row- and column-major, padded, in-place and copied layouts, every dtype,
// batches of 64 matrices of n = 1, 5, 32 and 100, with poisoned outputs; agreement with `looped`;
// singular matrices reported through info; capture and replay.
#include <gpumath/linalg.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <gpumath/core/graph.hpp>
#include <gpumath/tensor.hpp>
#include <gpumath/tensor_ops.hpp>

#include "common/test_util.hpp"
#include "linalg/reference.hpp"

namespace gpumath::linalg {
namespace {

using namespace reference;  // NOLINT(google-build-using-namespace): the test's vocabulary

constexpr std::int64_t count = 64;

/// The plain transpose (no conjugation) of the n × n `a`.
Matrix transposed(const Matrix& a, std::int64_t n) {
    Matrix t(a.size());
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j) t[std::size_t(j * n + i)] = a[std::size_t(i * n + j)];
    return t;
}

/// ‖A·X − B‖/(‖A‖·‖X‖) for n × k X and B.
double residual(const Matrix& a, const Matrix& x, const Matrix& b, std::int64_t n, std::int64_t k) {
    const Matrix ax = product(a, x, n, k, n);
    Matrix d(ax.size());
    for (std::size_t i = 0; i < d.size(); ++i) d[i] = ax[i] - b[i];
    return frobenius(d) / (frobenius(a) * frobenius(x));
}

template <class T>
Matrix random_block(std::int64_t rows, std::int64_t cols, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> u(-1, 1);
    Matrix m(std::size_t(rows * cols));
    for (auto& v : m) v = is_complex<T> ? cd(u(rng), u(rng)) : cd(u(rng), 0);
    return m;
}

/// A well-conditioned matrix that needs pivoting: 2n added to the diagonal of a random matrix
/// (strictly diagonally dominant by columns), its rows then shuffled. Every pivot wins by a wide
/// margin, so every backend picks the same ones.
template <class T>
Matrix shuffled_dominant(std::int64_t n, std::mt19937_64& rng) {
    Matrix d = random_block<T>(n, n, rng);
    for (std::int64_t i = 0; i < n; ++i) d[std::size_t(i * n + i)] += cd(2.0 * double(n), 0);
    std::vector<std::int64_t> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    Matrix m(d.size());
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j) m[std::size_t(i * n + j)] = d[std::size_t(order[std::size_t(i)] * n + j)];
    return m;
}

/// Where A starts and where its factors go.
struct Case {
    const char* name;
    bool a_col;  // A column-major (else row-major)
    std::int64_t a_pad;
    bool in_place;  // the factors overwrite A
    bool lu_col;    // the factors' storage, when not in place
    std::int64_t lu_pad;
};

constexpr Case cases[] = {
    {"column-major in place", true, 0, true, true, 0},
    {"row-major into row-major", false, 0, false, false, 0},
    {"row-major into padded column-major", false, 0, false, true, 3},
    {"padded row-major in place", false, 2, true, false, 0},
    {"padded column-major into padded row-major", true, 1, false, false, 2},
};

template <class T>
void factorize_and_solve(std::int64_t n) {
    auto rng = test::rng_for_test();
    for (const Case& c : cases) {
        const std::string what = "n " + std::to_string(n) + " " + c.name;
        Batch<T> a = Batch<T>::make(count, n, n, c.a_col, c.a_pad);
        std::vector<Matrix> ref;
        for (std::int64_t b = 0; b < count; ++b) {
            ref.push_back(general<T>(n, rng));
            a.set(b, ref.back());
        }
        a.upload();
        Batch<T> out = Batch<T>::make(count, n, n, c.lu_col, c.lu_pad);  // poisoned (NaN)
        Batch<T>& lu = c.in_place ? a : out;
        const bool lu_col = c.in_place ? c.a_col : c.lu_col;
        LU plan(a.view().layout(), {.backend = Backend::batched});
        Tensor pivots = Tensor::empty(plan.pivots_layout());
        Tensor info = Tensor::empty(plan.info_layout());
        fill(pivots, -7);
        fill(info, -7);
        plan.factorize(a.view(), lu.view(), pivots, info);
        EXPECT_EQ(plan.backend(), Backend::batched) << what;
        EXPECT_GT(plan.workspace_size(), 0U) << what;
        EXPECT_EQ(infos(info), std::vector<int>(std::size_t(count), 0)) << what;
        lu.download();
        const std::vector<int> piv = pivots.to_host<int>();
        // A column-major lu holds A's factors; a row-major one Aᵀ's (its memory read column-major).
        for (std::int64_t b = 0; b < count; ++b) {
            const Matrix f = lu_col ? lu.get(b) : transposed(lu.get(b), n);
            const Matrix m = lu_col ? ref[std::size_t(b)] : transposed(ref[std::size_t(b)], n);
            EXPECT_LE(factor_error(m, f, piv.data() + b * n, n), tolerance<T>(n)) << what << " P·A = L·U, matrix " << b;
        }

        // Three right-hand sides from row-major B into X (padded column-major, in place, or
        // row-major, through workspace), then one vector solved in place.
        const std::int64_t k = 3;
        const bool x_col = c.lu_pad != 2;
        Batch<T> bm = Batch<T>::make(count, n, k, false);
        std::vector<Matrix> rhs;
        for (std::int64_t b = 0; b < count; ++b) {
            rhs.push_back(random_block<T>(n, k, rng));
            bm.set(b, rhs.back());
        }
        bm.upload();
        Batch<T> x = Batch<T>::make(count, n, k, x_col, x_col ? 1 : 0);  // poisoned
        plan.solve(lu.view(), pivots, bm.view(), x.view());
        x.download();
        Batch<T> v = Batch<T>::make(count, n, 1, false);
        std::vector<Matrix> vecs;
        for (std::int64_t b = 0; b < count; ++b) {
            vecs.push_back(random_block<T>(n, 1, rng));
            v.set(b, vecs.back());
        }
        v.upload();
        plan.solve(lu.view(), pivots, v.vector_view(), v.vector_view());
        v.download();
        for (std::int64_t b = 0; b < count; ++b) {
            EXPECT_LE(residual(ref[std::size_t(b)], x.get(b), rhs[std::size_t(b)], n, k), tolerance<T>(n))
                << what << " solve, matrix " << b;
            EXPECT_LE(residual(ref[std::size_t(b)], v.get(b), vecs[std::size_t(b)], n, 1), tolerance<T>(n))
                << what << " vector solve in place, matrix " << b;
        }
    }
}

template <class T>
void factorize_and_solve_every_n() {
    for (const std::int64_t n : {1, 5, 32, 100}) factorize_and_solve<T>(n);
}

TEST(LUBatchedGpu, FactorizesAndSolvesInEveryLayoutF32) {
    GPUMATH_REQUIRE_GPU();
    factorize_and_solve_every_n<float>();
}
TEST(LUBatchedGpu, FactorizesAndSolvesInEveryLayoutF64) {
    GPUMATH_REQUIRE_GPU();
    factorize_and_solve_every_n<double>();
}
TEST(LUBatchedGpu, FactorizesAndSolvesInEveryLayoutC32) {
    GPUMATH_REQUIRE_GPU();
    factorize_and_solve_every_n<std::complex<float>>();
}
TEST(LUBatchedGpu, FactorizesAndSolvesInEveryLayoutC64) {
    GPUMATH_REQUIRE_GPU();
    factorize_and_solve_every_n<std::complex<double>>();
}

/// Factors, pivots, info and solutions of one backend on the column-major matrices `ref`.
template <class T>
struct Outcome {
    Batch<T> lu;
    std::vector<int> pivots;
    std::vector<int> info;
    Batch<T> x;
    Backend backend = Backend::automatic;
};

template <class T>
Outcome<T> run_backend(Backend backend, const std::vector<Matrix>& ref, const std::vector<Matrix>& rhs,
                       std::int64_t n) {
    Outcome<T> o{Batch<T>::make(count, n, n, true), {}, {}, Batch<T>::make(count, n, 1, true), backend};
    for (std::int64_t b = 0; b < count; ++b) {
        o.lu.set(b, ref[std::size_t(b)]);
        o.x.set(b, rhs[std::size_t(b)]);
    }
    o.lu.upload();
    o.x.upload();
    LU plan(o.lu.view().layout(), {.backend = backend});
    Tensor pivots = Tensor::empty(plan.pivots_layout());
    Tensor info = Tensor::empty(plan.info_layout());
    fill(pivots, -7);
    fill(info, -7);
    plan.factorize(o.lu.view(), o.lu.view(), pivots, info);
    plan.solve(o.lu.view(), pivots, o.x.view(), o.x.view());
    o.lu.download();
    o.x.download();
    o.pivots = pivots.to_host<int>();
    o.info = infos(info);
    o.backend = plan.backend();
    return o;
}

double difference(const Matrix& got, const Matrix& want) {
    Matrix d(want.size());
    for (std::size_t i = 0; i < d.size(); ++i) d[i] = got[i] - want[i];
    return frobenius(d) / frobenius(want);
}

template <class T>
void agrees_with_looped() {
    auto rng = test::rng_for_test();
    for (const std::int64_t n : {1, 5, 32, 100}) {
        const std::string what = "n " + std::to_string(n);
        std::vector<Matrix> ref, rhs;
        for (std::int64_t b = 0; b < count; ++b) {
            ref.push_back(shuffled_dominant<T>(n, rng));
            rhs.push_back(random_block<T>(n, 1, rng));
        }
        Outcome<T> looped = run_backend<T>(Backend::looped, ref, rhs, n);
        Outcome<T> batched = run_backend<T>(Backend::batched, ref, rhs, n);
        Outcome<T> chosen = run_backend<T>(Backend::automatic, ref, rhs, n);
        const std::vector<int> zeros(std::size_t(count), 0);
        EXPECT_EQ(looped.info, zeros) << what;
        EXPECT_EQ(batched.info, zeros) << what;
        EXPECT_EQ(chosen.info, zeros) << what;
        EXPECT_EQ(batched.pivots, looped.pivots) << what;
        EXPECT_TRUE(chosen.backend == Backend::looped || chosen.backend == Backend::batched ||
                    chosen.backend == Backend::warp)
            << what << ": automatic chose " << to_string(chosen.backend);
        for (std::int64_t b = 0; b < count; ++b) {
            EXPECT_LE(difference(batched.lu.get(b), looped.lu.get(b)), tolerance<T>(n)) << what << " factors " << b;
            EXPECT_LE(difference(batched.x.get(b), looped.x.get(b)), tolerance<T>(n)) << what << " solution " << b;
            EXPECT_LE(difference(chosen.x.get(b), looped.x.get(b)), tolerance<T>(n)) << what << " automatic " << b;
            EXPECT_LE(residual(ref[std::size_t(b)], batched.x.get(b), rhs[std::size_t(b)], n, 1), tolerance<T>(n))
                << what << " residual " << b;
        }
    }
}

TEST(LUBatchedGpu, AgreesWithLoopedF32) {
    GPUMATH_REQUIRE_GPU();
    agrees_with_looped<float>();
}
TEST(LUBatchedGpu, AgreesWithLoopedF64) {
    GPUMATH_REQUIRE_GPU();
    agrees_with_looped<double>();
}
TEST(LUBatchedGpu, AgreesWithLoopedC32) {
    GPUMATH_REQUIRE_GPU();
    agrees_with_looped<std::complex<float>>();
}
TEST(LUBatchedGpu, AgreesWithLoopedC64) {
    GPUMATH_REQUIRE_GPU();
    agrees_with_looped<std::complex<double>>();
}

/// Every fourth matrix (1, 5, 9, ...) with its last column zero: U(n, n) is exactly zero, the
/// only zero pivot, so info is n there and 0 elsewhere, for both backends.
template <class T>
void singular_matrices_through_info() {
    auto rng = test::rng_for_test();
    for (const std::int64_t n : {1, 5, 32, 100}) {
        const std::string what = "n " + std::to_string(n);
        std::vector<Matrix> ref, rhs;
        std::vector<int> expected;
        for (std::int64_t b = 0; b < count; ++b) {
            Matrix m = general<T>(n, rng);
            const bool singular = b % 4 == 1;
            if (singular)
                for (std::int64_t i = 0; i < n; ++i) m[std::size_t(i * n + n - 1)] = 0;
            ref.push_back(m);
            rhs.push_back(random_block<T>(n, 1, rng));
            expected.push_back(singular ? int(n) : 0);
        }
        EXPECT_EQ(run_backend<T>(Backend::batched, ref, rhs, n).info, expected) << what << " batched";
        EXPECT_EQ(run_backend<T>(Backend::looped, ref, rhs, n).info, expected) << what << " looped";
        // The stateless solve on the batched backend says which matrix, without throwing at the call.
        std::vector<T> host;
        for (const Matrix& m : ref)
            for (const cd& e : m) host.push_back(from<T>(e));
        const Tensor a = Tensor::from_host(host, {count, n, n});
        const Tensor b = Tensor::from_host(std::vector<T>(std::size_t(count * n), from<T>(cd(1, 0))), {count, n});
        const SolveResult s = solve(a, b, {.backend = Backend::batched});
        EXPECT_EQ(infos(s.info), expected) << what << " solve";
        try {
            s.check();
            ADD_FAILURE() << what << ": expected NumericalError";
        } catch (const NumericalError& e) {
            EXPECT_EQ(e.batch_index(), 1) << what;
            EXPECT_EQ(e.info(), int(n)) << what;
        }
    }
}

TEST(LUBatchedGpu, SingularMatricesAreReportedThroughInfoF32) {
    GPUMATH_REQUIRE_GPU();
    singular_matrices_through_info<float>();
}
TEST(LUBatchedGpu, SingularMatricesAreReportedThroughInfoF64) {
    GPUMATH_REQUIRE_GPU();
    singular_matrices_through_info<double>();
}
TEST(LUBatchedGpu, SingularMatricesAreReportedThroughInfoC32) {
    GPUMATH_REQUIRE_GPU();
    singular_matrices_through_info<std::complex<float>>();
}
TEST(LUBatchedGpu, SingularMatricesAreReportedThroughInfoC64) {
    GPUMATH_REQUIRE_GPU();
    singular_matrices_through_info<std::complex<double>>();
}

template <class T>
void replays_from_a_captured_graph() {
    auto rng = test::rng_for_test();
    const std::int64_t n = 32, k = 2;
    const core::Stream stream;
    // Row-major A into padded column-major factors (a copy), row-major B and X (through workspace).
    Batch<T> a = Batch<T>::make(count, n, n, false);
    a.upload();
    Batch<T> lu = Batch<T>::make(count, n, n, true, 2);
    Batch<T> bm = Batch<T>::make(count, n, k, false);
    std::vector<Matrix> rhs;
    for (std::int64_t b = 0; b < count; ++b) {
        rhs.push_back(random_block<T>(n, k, rng));
        bm.set(b, rhs.back());
    }
    bm.upload();
    Batch<T> x = Batch<T>::make(count, n, k, false);
    LU plan(a.view().layout(), {.backend = Backend::batched});
    plan.plan();
    Tensor pivots = Tensor::empty(plan.pivots_layout());
    Tensor info = Tensor::empty(plan.info_layout());
    // One run first, so that cuBLAS's kernels are loaded before the capture (CUDA loads modules
    // lazily); the capture itself allocates nothing (the workspace of captured work is the graph's).
    plan.factorize(a.view(), lu.view(), pivots, info, stream);
    plan.solve(lu.view(), pivots, bm.view(), x.view(), stream);
    stream.synchronize();
    core::Graph graph = core::Graph::capture(stream, [&](core::StreamRef) {
        plan.factorize(a.view(), lu.view(), pivots, info, stream);
        plan.solve(lu.view(), pivots, bm.view(), x.view(), stream);
    });
    for (int round = 0; round < 2; ++round) {
        const std::string what = "round " + std::to_string(round);
        std::vector<Matrix> ref;
        for (std::int64_t b = 0; b < count; ++b) {
            ref.push_back(general<T>(n, rng));
            a.set(b, ref.back());
        }
        // New values into the captured buffers; the outputs poisoned again.
        copy(Tensor::from_host(a.host, {std::int64_t(a.host.size())}), a.storage, stream);
        fill(x.storage, std::complex<double>(std::nan(""), 0), stream);
        fill(info, -7, stream);
        graph.launch(stream);
        stream.synchronize();
        lu.download();
        x.download();
        EXPECT_EQ(infos(info), std::vector<int>(std::size_t(count), 0)) << what;
        const std::vector<int> piv = pivots.to_host<int>();
        for (std::int64_t b = 0; b < count; ++b) {
            EXPECT_LE(factor_error(ref[std::size_t(b)], lu.get(b), piv.data() + b * n, n), tolerance<T>(n))
                << what << " P·A = L·U, matrix " << b;
            EXPECT_LE(residual(ref[std::size_t(b)], x.get(b), rhs[std::size_t(b)], n, k), tolerance<T>(n))
                << what << " solve, matrix " << b;
        }
    }
}

TEST(LUBatchedGpu, ReplaysFromACapturedGraphF32) {
    GPUMATH_REQUIRE_GPU();
    replays_from_a_captured_graph<float>();
}
TEST(LUBatchedGpu, ReplaysFromACapturedGraphC64) {
    GPUMATH_REQUIRE_GPU();
    replays_from_a_captured_graph<std::complex<double>>();
}

}  // namespace
}  // namespace gpumath::linalg
