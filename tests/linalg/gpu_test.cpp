// SPDX-License-Identifier: Apache-2.0
// gpumath::linalg on the GPU against host references that do not use gpumath: ‖A − L·Lᴴ‖/‖A‖,
// solve residuals, ‖A·V − V·Λ‖/‖A‖ and orthogonality of V, in every layout path (in place, row-
// and column-major, padded, strided through workspace), every backend, with poisoned outputs;
// matrices that are not positive definite reported through info; capture and replay; 8 threads on
// 4 streams.
#include <gpumath/linalg.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
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

template <class T>
void check_factor(const Matrix& a, Matrix f, std::int64_t n, Triangle t, const std::string& what, bool zeroed = false) {
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            if (t == Triangle::lower ? j > i : j < i) {
                // What the plans leave there is unspecified; the stateless call zeroes it.
                if (zeroed) {
                    ASSERT_EQ(f[std::size_t(i * n + j)], cd(0)) << what << ": (" << i << ", " << j << ") not zeroed";
                }
                f[std::size_t(i * n + j)] = 0;
            }
        }
    const Matrix r = t == Triangle::lower ? product(f, adjoint(f, n), n, n, n) : product(adjoint(f, n), f, n, n, n);
    Matrix d(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) d[i] = r[i] - a[i];
    EXPECT_LE(frobenius(d) / frobenius(a), tolerance<T>(n)) << what;
}

template <class T>
void cholesky_every_layout() {
    auto rng = test::rng_for_test();
    const std::int64_t count = 3;
    for (const std::int64_t n : {1, 7, 33})
        for (const Backend backend : {Backend::looped, Backend::batched, Backend::automatic})
            for (const Triangle tri : {Triangle::lower, Triangle::upper})
                for (int layout = 0; layout < 4; ++layout) {
                    const std::string what = "n " + std::to_string(n) + " backend " + std::string(to_string(backend)) +
                                             " " + std::string(to_string(tri)) + " layout " + std::to_string(layout);
                    // 0: row-major into a row-major factor; 1: column-major in place; 2: into a
                    // padded row-major factor; 3: into a factor with gaps (through workspace).
                    Batch<T> a = Batch<T>::make(count, n, n, layout == 1);
                    std::vector<Matrix> ref;
                    for (std::int64_t b = 0; b < count; ++b) {
                        ref.push_back(hermitian<T>(n, rng, true));
                        a.set(b, ref.back());
                    }
                    a.upload();
                    Batch<T> out = layout == 2   ? Batch<T>::make(count, n, n, false, 3)
                                   : layout == 3 ? Batch<T>::make(count, n, n, true, 0, 2)
                                                 : Batch<T>::make(count, n, n, false);
                    Batch<T>& factor = layout == 1 ? a : out;
                    Cholesky plan(a.view().layout(), {.triangle = tri, .backend = backend});
                    Tensor info = Tensor::empty(DataType::i32, {count});
                    fill(info, -7);  // poisoned
                    plan.factorize(a.view(), factor.view(), info);
                    factor.download();
                    EXPECT_EQ(infos(info), std::vector<int>(std::size_t(count), 0)) << what;
                    EXPECT_NE(plan.backend(), Backend::automatic) << what;
                    for (std::int64_t b = 0; b < count; ++b)
                        check_factor<T>(ref[std::size_t(b)], factor.get(b), n, tri, what);
                }
}

TEST(LinalgGpu, CholeskyFactorsInEveryLayoutAndBackendF32) {
    GPUMATH_REQUIRE_GPU();
    cholesky_every_layout<float>();
}
TEST(LinalgGpu, CholeskyFactorsInEveryLayoutAndBackendF64) {
    GPUMATH_REQUIRE_GPU();
    cholesky_every_layout<double>();
}
TEST(LinalgGpu, CholeskyFactorsInEveryLayoutAndBackendC32) {
    GPUMATH_REQUIRE_GPU();
    cholesky_every_layout<std::complex<float>>();
}
TEST(LinalgGpu, CholeskyFactorsInEveryLayoutAndBackendC64) {
    GPUMATH_REQUIRE_GPU();
    cholesky_every_layout<std::complex<double>>();
}

template <class T>
void cholesky_solves() {
    auto rng = test::rng_for_test();
    const std::int64_t count = 4, n = 24;
    for (const bool factor_col : {false, true})
        for (const Triangle tri : {Triangle::lower, Triangle::upper})
            for (const std::int64_t k : {0, 1, 3})  // 0: b is (count, n)
                for (int layout = 0; layout < 3; ++layout) {
                    const std::string what = std::string(factor_col ? "column" : "row") + "-major factor " +
                                             std::string(to_string(tri)) + " k " + std::to_string(k) + " layout " +
                                             std::to_string(layout);
                    Batch<T> a = Batch<T>::make(count, n, n, factor_col);
                    std::vector<Matrix> ref;
                    for (std::int64_t b = 0; b < count; ++b) {
                        ref.push_back(hermitian<T>(n, rng, true));
                        a.set(b, ref.back());
                    }
                    a.upload();
                    Cholesky plan(a.view().layout(), {.triangle = tri});
                    Tensor info = Tensor::empty(DataType::i32, {count});
                    plan.factorize(a.view(), a.view(), info);
                    const std::int64_t cols = std::max<std::int64_t>(k, 1);
                    // 0: out of place, row-major; 1: in place, column-major; 2: into gaps.
                    Batch<T> bm = Batch<T>::make(count, n, cols, layout == 1);
                    std::vector<Matrix> rhs;
                    for (std::int64_t b = 0; b < count; ++b) {
                        Matrix m(std::size_t(n * cols));
                        std::uniform_real_distribution<double> u(-1, 1);
                        for (auto& v : m) v = is_complex<T> ? cd(u(rng), u(rng)) : cd(u(rng), 0);
                        rhs.push_back(m);
                        bm.set(b, m);
                    }
                    bm.upload();
                    Batch<T> xm = layout == 2 ? Batch<T>::make(count, n, cols, true, 0, 2)
                                              : Batch<T>::make(count, n, cols, false);
                    Batch<T>& x = layout == 1 ? bm : xm;
                    const TensorView bv = k == 0 ? bm.vector_view() : bm.view();
                    const TensorView xv = k == 0 ? x.vector_view() : x.view();
                    plan.solve(a.view(), bv, xv);
                    x.download();
                    EXPECT_EQ(infos(info), std::vector<int>(std::size_t(count), 0)) << what;
                    for (std::int64_t b = 0; b < count; ++b) {
                        const Matrix xs = x.get(b);
                        const Matrix ax = product(ref[std::size_t(b)], xs, n, cols, n);
                        Matrix d(ax.size());
                        for (std::size_t i = 0; i < d.size(); ++i) d[i] = ax[i] - rhs[std::size_t(b)][i];
                        EXPECT_LE(frobenius(d) / (frobenius(ref[std::size_t(b)]) * frobenius(xs)), tolerance<T>(n))
                            << what << " matrix " << b;
                    }
                }
}

TEST(LinalgGpu, CholeskySolvesF32) {
    GPUMATH_REQUIRE_GPU();
    cholesky_solves<float>();
}
TEST(LinalgGpu, CholeskySolvesC64) {
    GPUMATH_REQUIRE_GPU();
    cholesky_solves<std::complex<double>>();
}

TEST(LinalgGpu, AMatrixThatIsNotPositiveDefiniteIsReportedNotThrown) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const std::int64_t count = 4, n = 6;
    for (const Backend backend : {Backend::looped, Backend::batched}) {
        Batch<double> a = Batch<double>::make(count, n, n, false);
        for (std::int64_t b = 0; b < count; ++b) a.set(b, hermitian<double>(n, rng, true));
        for (std::int64_t i = 0; i < n; ++i)  // diagonal: the leading minor of order 4 is the first not positive
            for (std::int64_t j = 0; j < n; ++j) a.at(2, i, j) = i != j ? 0.0 : i < 3 ? 1.0 : -1.0;
        a.upload();
        const CholeskyResult r = cholesky(a.view(), {.backend = backend});
        const std::vector<int> info = infos(r.info);
        EXPECT_EQ(info[0], 0);
        EXPECT_EQ(info[1], 0);
        EXPECT_EQ(info[2], 4) << to_string(backend);
        EXPECT_EQ(info[3], 0);
        try {
            r.check();
            ADD_FAILURE() << "expected NumericalError";
        } catch (const NumericalError& e) {
            EXPECT_EQ(e.batch_index(), 2);
            EXPECT_EQ(e.info(), 4);
            EXPECT_NE(std::string(e.what()).find("matrix 2 of the batch is not positive definite"), std::string::npos)
                << e.what();
        }
    }
}

template <class T>
void eigh_every_layout() {
    auto rng = test::rng_for_test();
    const std::int64_t count = 3;
    for (const std::int64_t n : {1, 5, 40})
        for (const Backend backend : {Backend::looped, Backend::batched, Backend::automatic})
            for (const bool vectors : {true, false})
                for (int layout = 0; layout < 3; ++layout) {
                    const std::string what = "n " + std::to_string(n) + " backend " + std::string(to_string(backend)) +
                                             (vectors ? " vectors" : " values") + " layout " + std::to_string(layout);
                    // 0: row-major A, row-major vectors (through workspace); 1: column-major A,
                    // vectors in place; 2: row-major A, padded column-major vectors.
                    Batch<T> a = Batch<T>::make(count, n, n, layout == 1);
                    std::vector<Matrix> ref;
                    const Triangle tri = layout == 2 ? Triangle::upper : Triangle::lower;
                    for (std::int64_t b = 0; b < count; ++b) {
                        ref.push_back(hermitian<T>(n, rng, false));
                        Matrix stored = ref.back();
                        // Poison the triangle that must not be read.
                        for (std::int64_t i = 0; i < n; ++i)
                            for (std::int64_t j = 0; j < n; ++j)
                                if (tri == Triangle::lower ? j > i : j < i)
                                    stored[std::size_t(i * n + j)] = cd(1e30, 0);
                        a.set(b, stored);
                    }
                    a.upload();
                    Batch<T> vm =
                        layout == 2 ? Batch<T>::make(count, n, n, true, 2) : Batch<T>::make(count, n, n, false);
                    Batch<T>& v = layout == 1 ? a : vm;
                    using R = typename Real<T>::type;
                    Batch<R> w = Batch<R>::make(count, n, 1, false);
                    Eigh plan(a.view().layout(), {.triangle = tri, .vectors = vectors, .backend = backend});
                    Tensor info = Tensor::empty(DataType::i32, {count});
                    fill(info, -7);
                    plan.execute(a.view(), w.vector_view(), vectors ? v.view() : TensorView(), info);
                    w.download();
                    EXPECT_EQ(infos(info), std::vector<int>(std::size_t(count), 0)) << what;
                    if (vectors) v.download();
                    for (std::int64_t b = 0; b < count; ++b) {
                        const Matrix& A = ref[std::size_t(b)];
                        std::vector<double> lambda(static_cast<std::size_t>(n));
                        for (std::int64_t i = 0; i < n; ++i) lambda[std::size_t(i)] = double(w.at(b, i, 0));
                        EXPECT_TRUE(std::is_sorted(lambda.begin(), lambda.end())) << what;
                        double trace = 0, sum = 0;
                        for (std::int64_t i = 0; i < n; ++i) {
                            trace += A[std::size_t(i * n + i)].real();
                            sum += lambda[std::size_t(i)];
                        }
                        EXPECT_NEAR(sum, trace, tolerance<T>(n) * frobenius(A) * double(n)) << what;
                        if (!vectors) continue;
                        const Matrix V = v.get(b);
                        const Matrix av = product(A, V, n, n, n);
                        Matrix d(av.size());
                        for (std::int64_t i = 0; i < n; ++i)
                            for (std::int64_t j = 0; j < n; ++j)
                                d[std::size_t(i * n + j)] =
                                    av[std::size_t(i * n + j)] - V[std::size_t(i * n + j)] * lambda[std::size_t(j)];
                        EXPECT_LE(frobenius(d) / std::max(frobenius(A), 1e-30), tolerance<T>(n)) << what;
                        Matrix g = product(adjoint(V, n), V, n, n, n);
                        for (std::int64_t i = 0; i < n; ++i) g[std::size_t(i * n + i)] -= 1.0;
                        EXPECT_LE(frobenius(g), tolerance<T>(n)) << what;
                    }
                }
}

TEST(LinalgGpu, EighInEveryLayoutAndBackendF32) {
    GPUMATH_REQUIRE_GPU();
    eigh_every_layout<float>();
}
TEST(LinalgGpu, EighInEveryLayoutAndBackendF64) {
    GPUMATH_REQUIRE_GPU();
    eigh_every_layout<double>();
}
TEST(LinalgGpu, EighInEveryLayoutAndBackendC32) {
    GPUMATH_REQUIRE_GPU();
    eigh_every_layout<std::complex<float>>();
}
TEST(LinalgGpu, EighInEveryLayoutAndBackendC64) {
    GPUMATH_REQUIRE_GPU();
    eigh_every_layout<std::complex<double>>();
}

template <class T>
void lu_solves() {
    auto rng = test::rng_for_test();
    const std::int64_t count = 3;
    for (const std::int64_t n : {1, 9, 40})
        for (const bool col : {false, true})
            for (const std::int64_t k : {0, 2})
                for (const bool in_place : {false, true}) {
                    const std::string what = "n " + std::to_string(n) + (col ? " column" : " row") + "-major k " +
                                             std::to_string(k) + (in_place ? " in place" : "");
                    Batch<T> a = Batch<T>::make(count, n, n, col);
                    std::vector<Matrix> ref;
                    for (std::int64_t b = 0; b < count; ++b) {
                        ref.push_back(general<T>(n, rng));
                        a.set(b, ref.back());
                    }
                    a.upload();
                    Batch<T> out = Batch<T>::make(count, n, n, col, 2);  // padded
                    Batch<T>& lu = in_place ? a : out;
                    LU plan(a.view().layout());
                    Tensor pivots = Tensor::empty(plan.pivots_layout());
                    Tensor info = Tensor::empty(plan.info_layout());
                    fill(info, -7);
                    fill(pivots, -7);
                    plan.factorize(a.view(), lu.view(), pivots, info);
                    const std::int64_t cols = std::max<std::int64_t>(k, 1);
                    Batch<T> bm = Batch<T>::make(count, n, cols, false);
                    std::vector<Matrix> rhs;
                    for (std::int64_t b = 0; b < count; ++b) {
                        Matrix m(std::size_t(n * cols));
                        std::uniform_real_distribution<double> u(-1, 1);
                        for (auto& v : m) v = is_complex<T> ? cd(u(rng), u(rng)) : cd(u(rng), 0);
                        rhs.push_back(m);
                        bm.set(b, m);
                    }
                    bm.upload();
                    Batch<T> x = Batch<T>::make(count, n, cols, true);
                    plan.solve(lu.view(), pivots, k == 0 ? bm.vector_view() : bm.view(),
                               k == 0 ? x.vector_view() : x.view());
                    x.download();
                    EXPECT_EQ(infos(info), std::vector<int>(std::size_t(count), 0)) << what;
                    const std::vector<int> piv = pivots.to_host<int>();
                    for (const int p : piv) EXPECT_TRUE(p >= 1 && p <= n) << what << ": pivot " << p;
                    for (std::int64_t b = 0; b < count; ++b) {
                        const Matrix xs = x.get(b);
                        const Matrix ax = product(ref[std::size_t(b)], xs, n, cols, n);
                        Matrix d(ax.size());
                        for (std::size_t i = 0; i < d.size(); ++i) d[i] = ax[i] - rhs[std::size_t(b)][i];
                        EXPECT_LE(frobenius(d) / (frobenius(ref[std::size_t(b)]) * frobenius(xs)), tolerance<T>(n))
                            << what << " matrix " << b;
                    }
                    if (!col) continue;
                    // P·A = L·U from the column-major factors and the pivots.
                    lu.download();
                    for (std::int64_t b = 0; b < count; ++b) {
                        const Matrix f = lu.get(b);
                        Matrix L(std::size_t(n * n)), U(std::size_t(n * n));
                        for (std::int64_t i = 0; i < n; ++i)
                            for (std::int64_t j = 0; j < n; ++j) {
                                if (j < i) L[std::size_t(i * n + j)] = f[std::size_t(i * n + j)];
                                else U[std::size_t(i * n + j)] = f[std::size_t(i * n + j)];
                            }
                        for (std::int64_t i = 0; i < n; ++i) L[std::size_t(i * n + i)] = 1;
                        Matrix pa = ref[std::size_t(b)];
                        for (std::int64_t i = 0; i < n; ++i) {
                            const std::int64_t p = piv[std::size_t(b * n + i)] - 1;
                            for (std::int64_t j = 0; j < n; ++j)
                                std::swap(pa[std::size_t(i * n + j)], pa[std::size_t(p * n + j)]);
                        }
                        const Matrix lu_product = product(L, U, n, n, n);
                        Matrix d(pa.size());
                        for (std::size_t i = 0; i < d.size(); ++i) d[i] = lu_product[i] - pa[i];
                        EXPECT_LE(frobenius(d) / frobenius(pa), tolerance<T>(n)) << what << " P·A = L·U";
                    }
                }
}

TEST(LinalgGpu, LUSolvesF32) {
    GPUMATH_REQUIRE_GPU();
    lu_solves<float>();
}
TEST(LinalgGpu, LUSolvesF64) {
    GPUMATH_REQUIRE_GPU();
    lu_solves<double>();
}
TEST(LinalgGpu, LUSolvesC32) {
    GPUMATH_REQUIRE_GPU();
    lu_solves<std::complex<float>>();
}
TEST(LinalgGpu, LUSolvesC64) {
    GPUMATH_REQUIRE_GPU();
    lu_solves<std::complex<double>>();
}

template <class T>
void inverses_and_determinants() {
    auto rng = test::rng_for_test();
    const std::int64_t count = 4;
    for (const std::int64_t n : {1, 3, 8, 30}) {
        std::vector<T> host;
        std::vector<Matrix> ref;
        for (std::int64_t b = 0; b < count; ++b) {
            ref.push_back(general<T>(n, rng));
            for (const cd& v : ref.back()) host.push_back(from<T>(v));
        }
        const Tensor a = Tensor::from_host(host, {count, n, n});
        const InverseResult r = inv(a);
        r.check();
        const Tensor d = det(a);
        const std::vector<T> hi = r.inverse.to_host<T>(), hd = d.to_host<T>();
        const SolveResult s = solve(a, a);  // A⁻¹·A = I
        s.check();
        const std::vector<T> hs = s.x.to_host<T>();
        for (std::int64_t b = 0; b < count; ++b) {
            Matrix m(std::size_t(n * n)), y(std::size_t(n * n));
            for (std::int64_t i = 0; i < n * n; ++i) {
                m[std::size_t(i)] = cd(hi[std::size_t(b * n * n + i)]);
                y[std::size_t(i)] = cd(hs[std::size_t(b * n * n + i)]);
            }
            Matrix g = product(ref[std::size_t(b)], m, n, n, n);
            for (std::int64_t i = 0; i < n; ++i) {
                g[std::size_t(i * n + i)] -= 1.0;
                y[std::size_t(i * n + i)] -= 1.0;
            }
            EXPECT_LE(frobenius(g), tolerance<T>(n) * frobenius(ref[std::size_t(b)]) * frobenius(m)) << "n " << n;
            EXPECT_LE(frobenius(y), tolerance<T>(n) * frobenius(ref[std::size_t(b)]) * double(n)) << "solve n " << n;
            const cd expected = host_determinant(ref[std::size_t(b)], n);
            EXPECT_LE(std::abs(cd(hd[std::size_t(b)]) - expected), tolerance<T>(n) * std::abs(expected))
                << "det n " << n;
        }
    }
}

TEST(LinalgGpu, InverseAndDeterminantF32) {
    GPUMATH_REQUIRE_GPU();
    inverses_and_determinants<float>();
}
TEST(LinalgGpu, InverseAndDeterminantC64) {
    GPUMATH_REQUIRE_GPU();
    inverses_and_determinants<std::complex<double>>();
}

TEST(LinalgGpu, ASingularMatrixIsReportedNotThrown) {
    GPUMATH_REQUIRE_GPU();
    const std::int64_t n = 4;
    // Matrix 1 has two equal rows: U(3, 3) or an earlier pivot is exactly zero.
    std::vector<double> host = {2, 1, 0, 0, 1, 3, 1, 0, 0, 1, 4, 1, 0, 0, 1, 5,  //
                                1, 2, 3, 4, 1, 2, 3, 4, 0, 1, 0, 1, 2, 0, 1, 0};
    const Tensor a = Tensor::from_host(host, {2, n, n});
    const Tensor b = Tensor::from_host(std::vector<double>(8, 1.0), {2, n});
    const SolveResult s = solve(a, b);
    const std::vector<int> info = s.info.to_host<int>();
    EXPECT_EQ(info[0], 0);
    EXPECT_GT(info[1], 0);
    try {
        s.check();
        ADD_FAILURE() << "expected NumericalError";
    } catch (const NumericalError& e) {
        EXPECT_EQ(e.batch_index(), 1);
        EXPECT_EQ(e.info(), info[1]);
        EXPECT_NE(std::string(e.what()).find("singular"), std::string::npos) << e.what();
    }
    const std::vector<double> d = det(a).to_host<double>();
    EXPECT_NEAR(d[0], host_determinant(Matrix(host.begin(), host.begin() + 16), n).real(), 1e-10);
    EXPECT_EQ(d[1], 0.0);
}

TEST(LinalgGpu, PlansReplayFromACapturedGraph) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const std::int64_t count = 5, n = 16;
    for (const Backend backend : {Backend::looped, Backend::batched}) {
        Batch<float> a = Batch<float>::make(count, n, n, false);
        a.upload();
        Batch<float> f = Batch<float>::make(count, n, n, true, 0, 2);  // through workspace
        Batch<float> w = Batch<float>::make(count, n, 1, false);
        Batch<float> v = Batch<float>::make(count, n, n, false);
        Tensor info = Tensor::empty(DataType::i32, {count});
        Tensor info2 = Tensor::empty(DataType::i32, {count});
        const core::Stream stream;
        Cholesky chol(a.view().layout(), {.backend = backend});
        Eigh eig(a.view().layout(), {.backend = Backend::batched});
        LU lu(a.view().layout());
        chol.plan();
        eig.plan();
        lu.plan();
        Batch<float> factors = Batch<float>::make(count, n, n, false);
        Batch<float> x = Batch<float>::make(count, n, 1, false);
        Batch<float> rhs = Batch<float>::make(count, n, 1, false);
        for (std::int64_t b = 0; b < count; ++b)
            for (std::int64_t i = 0; i < n; ++i) rhs.at(b, i, 0) = float(i + 1);
        rhs.upload();
        Tensor pivots = Tensor::empty(lu.pivots_layout());
        Tensor info3 = Tensor::empty(lu.info_layout());
        core::Graph graph = core::Graph::capture(stream, [&](core::StreamRef) {
            chol.factorize(a.view(), f.view(), info, stream);
            eig.execute(a.view(), w.vector_view(), v.view(), info2, stream);
            lu.factorize(a.view(), factors.view(), pivots, info3, stream);
            lu.solve(factors.view(), pivots, rhs.vector_view(), x.vector_view(), stream);
        });
        // syevd (the looped eigh) cannot be captured: refused before any work.
        Eigh looped(a.view().layout(), {.backend = Backend::looped});
        looped.plan();
        test::expect_throw_with<NotSupported>(
            [&] {
                core::Graph g = core::Graph::capture(stream, [&](core::StreamRef) {
                    looped.execute(a.view(), w.vector_view(), v.view(), info2, stream);
                });
            },
            {"linalg::Eigh::execute", "capturing", "Backend::batched"});
        for (int round = 0; round < 2; ++round) {
            std::vector<Matrix> ref;
            for (std::int64_t b = 0; b < count; ++b) {
                ref.push_back(hermitian<float>(n, rng, true));
                a.set(b, ref.back());
            }
            // New values into the captured buffer.
            copy(Tensor::from_host(a.host, {std::int64_t(a.host.size())}), a.storage, stream);
            graph.launch(stream);
            stream.synchronize();
            f.download();
            w.download();
            x.download();
            EXPECT_EQ(info3.to_host<int>(), std::vector<int>(std::size_t(count), 0));
            for (std::int64_t b = 0; b < count; ++b) {
                const Matrix ax = product(ref[std::size_t(b)], x.get(b), n, 1, n);
                for (std::int64_t i = 0; i < n; ++i)
                    EXPECT_NEAR(ax[std::size_t(i)].real(), double(i + 1), 1e-3 * double(n)) << "replayed LU solve";
            }
            EXPECT_EQ(info.to_host<int>(), std::vector<int>(std::size_t(count), 0));
            EXPECT_EQ(info2.to_host<int>(), std::vector<int>(std::size_t(count), 0));
            for (std::int64_t b = 0; b < count; ++b) {
                check_factor<float>(ref[std::size_t(b)], f.get(b), n, Triangle::lower, "replay");
                double trace = 0, sum = 0;
                for (std::int64_t i = 0; i < n; ++i) {
                    trace += ref[std::size_t(b)][std::size_t(i * n + i)].real();
                    sum += double(w.at(b, i, 0));
                }
                EXPECT_NEAR(sum, trace, 1e-3 * trace);
            }
        }
    }
}

TEST(LinalgGpu, EightThreadsOnFourStreams) {
    GPUMATH_REQUIRE_GPU();
    const std::int64_t count = 6, n = 20;
    std::vector<core::Stream> streams(4);
    std::vector<core::StreamRef> refs(streams.begin(), streams.end());
    const auto errors = test::run_on_threads(8, refs, [&](int t, core::StreamRef s) {
        std::mt19937_64 rng(std::uint64_t(t) * 7919U + 1U);
        for (int rep = 0; rep < 3; ++rep) {
            std::vector<double> host(std::size_t(count * n * n));
            std::vector<Matrix> ref;
            for (std::int64_t b = 0; b < count; ++b) {
                ref.push_back(hermitian<double>(n, rng, true));
                for (std::int64_t i = 0; i < n * n; ++i)
                    host[std::size_t(b * n * n + i)] = ref.back()[std::size_t(i)].real();
            }
            const Tensor a = Tensor::from_host(host, {count, n, n}, s);
            const CholeskyResult c = cholesky(a, {}, s);
            const EighResult e = eigh(a, {.vectors = false}, s);
            c.check(s);
            e.check(s);
            const std::vector<double> l = c.factor.to_host<double>(s);
            const std::vector<double> w = e.values.to_host<double>(s);
            for (std::int64_t b = 0; b < count; ++b) {
                Matrix f(std::size_t(n * n));
                for (std::int64_t i = 0; i < n * n; ++i) f[std::size_t(i)] = l[std::size_t(b * n * n + i)];
                const Matrix r = product(f, adjoint(f, n), n, n, n);
                Matrix d(r.size());
                for (std::size_t i = 0; i < d.size(); ++i) d[i] = r[i] - ref[std::size_t(b)][i];
                if (frobenius(d) / frobenius(ref[std::size_t(b)]) > tolerance<double>(n))
                    throw std::runtime_error("thread " + std::to_string(t) + ": wrong factor");
                double trace = 0, sum = 0;
                for (std::int64_t i = 0; i < n; ++i) {
                    trace += ref[std::size_t(b)][std::size_t(i * n + i)].real();
                    sum += w[std::size_t(b * n + i)];
                }
                if (std::abs(sum - trace) > 1e-9 * trace)
                    throw std::runtime_error("thread " + std::to_string(t) + ": wrong eigenvalues");
            }
        }
    });
    for (const std::string& e : errors) EXPECT_EQ(e, "");
}

}  // namespace
}  // namespace gpumath::linalg
