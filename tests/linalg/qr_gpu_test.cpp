// SPDX-License-Identifier: Apache-2.0
// QR and least squares on the GPU against host references that do not use gpumath: ‖A − Q·R‖/‖A‖,
// ‖QᴴQ − I‖, R's zeros, apply_q against the explicit Q, least squares against the normal equations
// solved in double (and the least-norm solution for wide A), in every dtype and layout path
// (row- and column-major, padded, strided through workspace, in place), with poisoned outputs;
// rank deficiency reported through info; empty sizes; capture and replay.
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

const double nan_value = std::numeric_limits<double>::quiet_NaN();

/// A random rows × cols matrix (uniform on [-1, 1], complex parts alike), `weight` added to its
/// diagonal (comfortably full rank for weights near max(rows, cols) / 4).
template <class T>
Matrix random_matrix(std::int64_t rows, std::int64_t cols, std::mt19937_64& rng, double weight = 0) {
    std::uniform_real_distribution<double> u(-1, 1);
    Matrix m(std::size_t(rows * cols));
    for (auto& v : m) v = is_complex<T> ? cd(u(rng), u(rng)) : cd(u(rng), 0);
    for (std::int64_t i = 0; i < std::min(rows, cols); ++i) m[std::size_t(i * cols + i)] += weight;
    return m;
}

/// The rows × cols matrix `a`'s adjoint (cols × rows).
Matrix adjoint_of(const Matrix& a, std::int64_t rows, std::int64_t cols) {
    Matrix t(a.size());
    for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) t[std::size_t(j * rows + i)] = std::conj(a[std::size_t(i * cols + j)]);
    return t;
}

Matrix minus(const Matrix& a, const Matrix& b) {
    Matrix d(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
    return d;
}

/// ‖m − I‖ for an n × n matrix.
double distance_to_identity(Matrix m, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) m[std::size_t(i * n + i)] -= 1.0;
    return frobenius(m);
}

/// M⁻¹·B (M n × n, B n × p) by Gaussian elimination with partial pivoting, in double.
Matrix host_solve(Matrix m, Matrix b, std::int64_t n, std::int64_t p) {
    for (std::int64_t c = 0; c < n; ++c) {
        std::int64_t piv = c;
        for (std::int64_t r = c + 1; r < n; ++r)
            if (std::abs(m[std::size_t(r * n + c)]) > std::abs(m[std::size_t(piv * n + c)])) piv = r;
        for (std::int64_t j = 0; j < n; ++j) std::swap(m[std::size_t(piv * n + j)], m[std::size_t(c * n + j)]);
        for (std::int64_t j = 0; j < p; ++j) std::swap(b[std::size_t(piv * p + j)], b[std::size_t(c * p + j)]);
        for (std::int64_t r = c + 1; r < n; ++r) {
            const cd f = m[std::size_t(r * n + c)] / m[std::size_t(c * n + c)];
            for (std::int64_t j = c; j < n; ++j) m[std::size_t(r * n + j)] -= f * m[std::size_t(c * n + j)];
            for (std::int64_t j = 0; j < p; ++j) b[std::size_t(r * p + j)] -= f * b[std::size_t(c * p + j)];
        }
    }
    for (std::int64_t c = n - 1; c >= 0; --c)
        for (std::int64_t j = 0; j < p; ++j) {
            cd v = b[std::size_t(c * p + j)];
            for (std::int64_t k = c + 1; k < n; ++k) v -= m[std::size_t(c * n + k)] * b[std::size_t(k * p + j)];
            b[std::size_t(c * p + j)] = v / m[std::size_t(c * n + c)];
        }
    return b;
}

/// The least-squares (m >= n: (AᴴA)⁻¹AᴴB) or least-norm (m < n: Aᴴ(AAᴴ)⁻¹B) solution, in double.
Matrix host_lstsq(const Matrix& a, const Matrix& b, std::int64_t m, std::int64_t n, std::int64_t p) {
    const Matrix ah = adjoint_of(a, m, n);
    if (m >= n) return host_solve(product(ah, a, n, n, m), product(ah, b, n, p, m), n, p);
    return product(ah, host_solve(product(a, ah, m, m, n), b, m, p), n, p, m);
}

/// The upper trapezoid of the first `rows` rows of the m × n factor `f` (zeros below the diagonal).
Matrix upper_rows(const Matrix& f, std::int64_t rows, std::int64_t n) {
    Matrix r(std::size_t(rows * n));
    for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = i; j < n; ++j) r[std::size_t(i * n + j)] = f[std::size_t(i * n + j)];
    return r;
}

/// A layout path of an output: 0 row-major, 1 column-major, 2 padded column-major, 3 with gaps
/// between elements (through workspace).
template <class T>
Batch<T> output(std::int64_t count, std::int64_t rows, std::int64_t cols, int layout) {
    switch (layout) {
        case 1:
            return Batch<T>::make(count, rows, cols, true);
        case 2:
            return Batch<T>::make(count, rows, cols, true, 3);
        case 3:
            return Batch<T>::make(count, rows, cols, true, 0, 2);
        default:
            return Batch<T>::make(count, rows, cols, false);
    }
}

struct Shape {
    std::int64_t count, m, n;
};
const std::vector<Shape> shapes = {{3, 40, 17}, {2, 17, 17}, {3, 9, 30}, {1, 1, 5}, {2, 6, 1}};

std::string describe(const Shape& s) {
    return std::to_string(s.count) + " x " + std::to_string(s.m) + "x" + std::to_string(s.n);
}

template <class T>
void factors_in_every_layout() {
    auto rng = test::rng_for_test();
    for (const Shape& s : shapes)
        for (const QRMode mode : {QRMode::reduced, QRMode::complete})
            for (int layout = 0; layout < 4; ++layout) {
                const std::int64_t count = s.count, m = s.m, n = s.n, k = std::min(m, n);
                const std::string what =
                    describe(s) + " " + std::string(to_string(mode)) + " layout " + std::to_string(layout);
                // Layout 1 factorizes a column-major A in place; the others into a factor of their own.
                Batch<T> a = Batch<T>::make(count, m, n, layout == 1);
                std::vector<Matrix> ref;
                for (std::int64_t b = 0; b < count; ++b) {
                    ref.push_back(random_matrix<T>(m, n, rng));
                    a.set(b, ref.back());
                }
                a.upload();
                Batch<T> out = output<T>(count, m, n, layout);
                Batch<T>& f = layout == 1 ? a : out;
                QR plan(a.view().layout(), {.mode = mode});
                Tensor tau = Tensor::empty(plan.tau_layout());
                fill(tau, nan_value);
                plan.factorize(a.view(), f.view(), tau);
                const std::int64_t qc = mode == QRMode::complete ? m : k;
                Batch<T> q = output<T>(count, m, qc, layout);
                plan.form_q(f.view(), tau, q.view());
                f.download();
                q.download();
                for (const T& t : tau.to_host<T>()) EXPECT_TRUE(std::isfinite(std::abs(cd(t)))) << what << ": tau";
                for (std::int64_t b = 0; b < count; ++b) {
                    const Matrix Q = q.get(b);
                    const Matrix R = upper_rows(f.get(b), qc, n);  // rows past k of a complete R are zero
                    const Matrix A = ref[std::size_t(b)];
                    EXPECT_LE(frobenius(minus(product(Q, R, m, n, qc), A)) / frobenius(A), tolerance<T>(m))
                        << what << " matrix " << b << ": A = Q·R";
                    EXPECT_LE(distance_to_identity(product(adjoint_of(Q, m, qc), Q, qc, qc, m), qc), tolerance<T>(m))
                        << what << " matrix " << b << ": QᴴQ = I";
                }
            }
}

TEST(QRGpu, FactorsInEveryLayoutF32) {
    GPUMATH_REQUIRE_GPU();
    factors_in_every_layout<float>();
}
TEST(QRGpu, FactorsInEveryLayoutF64) {
    GPUMATH_REQUIRE_GPU();
    factors_in_every_layout<double>();
}
TEST(QRGpu, FactorsInEveryLayoutC32) {
    GPUMATH_REQUIRE_GPU();
    factors_in_every_layout<std::complex<float>>();
}
TEST(QRGpu, FactorsInEveryLayoutC64) {
    GPUMATH_REQUIRE_GPU();
    factors_in_every_layout<std::complex<double>>();
}

template <class T>
void stateless_modes() {
    auto rng = test::rng_for_test();
    for (const auto& [m, n] : std::vector<std::pair<std::int64_t, std::int64_t>>{{11, 6}, {6, 6}, {4, 9}}) {
        const std::int64_t batch = 2 * 3, k = std::min(m, n);
        std::vector<Matrix> ref;
        std::vector<T> host;
        for (std::int64_t b = 0; b < batch; ++b) {
            ref.push_back(random_matrix<T>(m, n, rng));
            for (const cd& v : ref.back()) host.push_back(from<T>(v));
        }
        const Tensor a = Tensor::from_host(host, {2, 3, m, n});
        for (const QRMode mode : {QRMode::reduced, QRMode::complete, QRMode::r}) {
            const std::string what = std::to_string(m) + "x" + std::to_string(n) + " " + std::string(to_string(mode));
            const QRResult r = qr(a, {.mode = mode});
            const std::int64_t qc = mode == QRMode::complete ? m : k;
            const std::int64_t rr = mode == QRMode::complete ? m : k;
            ASSERT_EQ(r.r.rank(), 4) << what;
            EXPECT_EQ(r.r.shape(2), rr) << what;
            EXPECT_EQ(r.r.shape(3), n) << what;
            EXPECT_TRUE(r.r.view().is_contiguous()) << what;
            if (mode == QRMode::r) {
                EXPECT_EQ(r.q.size(), 0) << what;
            } else {
                ASSERT_EQ(r.q.rank(), 4) << what;
                EXPECT_EQ(r.q.shape(2), m) << what;
                EXPECT_EQ(r.q.shape(3), qc) << what;
            }
            const std::vector<T> hr = r.r.to_host<T>();
            const std::vector<T> hq = mode == QRMode::r ? std::vector<T>() : r.q.to_host<T>();
            for (std::int64_t b = 0; b < batch; ++b) {
                Matrix R(std::size_t(rr * n)), Q(std::size_t(m * qc));
                for (std::int64_t i = 0; i < rr * n; ++i) R[std::size_t(i)] = cd(hr[std::size_t(b * rr * n + i)]);
                for (std::int64_t i = 0; i < rr; ++i)
                    for (std::int64_t j = 0; j < std::min(i, n); ++j)
                        ASSERT_EQ(R[std::size_t(i * n + j)], cd(0)) << what << ": R(" << i << ", " << j << ")";
                const Matrix A = ref[std::size_t(b)];
                // RᴴR = AᴴA whatever Q is: R alone is checked in every mode.
                const Matrix ah = adjoint_of(A, m, n);
                EXPECT_LE(frobenius(minus(product(adjoint_of(R, rr, n), R, n, n, rr), product(ah, A, n, n, m))) /
                              (frobenius(A) * frobenius(A)),
                          tolerance<T>(m))
                    << what << ": RᴴR = AᴴA";
                if (mode == QRMode::r) continue;
                for (std::int64_t i = 0; i < m * qc; ++i) Q[std::size_t(i)] = cd(hq[std::size_t(b * m * qc + i)]);
                EXPECT_LE(frobenius(minus(product(Q, R, m, n, qc), A)) / frobenius(A), tolerance<T>(m))
                    << what << ": A = Q·R";
                EXPECT_LE(distance_to_identity(product(adjoint_of(Q, m, qc), Q, qc, qc, m), qc), tolerance<T>(m))
                    << what << ": QᴴQ = I";
            }
        }
    }
}

TEST(QRGpu, StatelessModesF32) {
    GPUMATH_REQUIRE_GPU();
    stateless_modes<float>();
}
TEST(QRGpu, StatelessModesC64) {
    GPUMATH_REQUIRE_GPU();
    stateless_modes<std::complex<double>>();
}

template <class T>
void apply_q_matches_the_explicit_q() {
    auto rng = test::rng_for_test();
    const std::int64_t p = 4;
    for (const auto& [count, m, n] : std::vector<std::array<std::int64_t, 3>>{{3, 12, 7}, {2, 5, 9}})
        for (const bool factor_col : {false, true}) {
            Batch<T> a = Batch<T>::make(count, m, n, factor_col);
            for (std::int64_t b = 0; b < count; ++b) a.set(b, random_matrix<T>(m, n, rng));
            a.upload();
            QR plan(a.view().layout(), {.mode = QRMode::complete});
            Tensor tau = Tensor::empty(plan.tau_layout());
            plan.factorize(a.view(), a.view(), tau);  // in place, in a's own order
            Batch<T> q = Batch<T>::make(count, m, m, false);
            plan.form_q(a.view(), tau, q.view());
            q.download();
            for (const Side side : {Side::left, Side::right})
                for (const bool adjoint : {false, true})
                    for (int layout = 0; layout < 5; ++layout) {
                        // 0 row-major out of place, 1 column-major, 2 padded column-major, 3 gaps,
                        // 4 in place (row-major); and a vector c on the left.
                        const bool vector = side == Side::left && layout == 0 && adjoint;
                        const std::int64_t rows = side == Side::left ? m : p, cols = side == Side::left ? p : m;
                        const std::int64_t c_cols = vector ? 1 : cols;
                        const std::string what = std::to_string(m) + "x" + std::to_string(n) +
                                                 (factor_col ? " column" : " row") + "-major factor, " +
                                                 std::string(to_string(side)) + (adjoint ? " Qᴴ" : " Q") + " layout " +
                                                 std::to_string(layout) + (vector ? " vector" : "");
                        Batch<T> c = Batch<T>::make(count, rows, c_cols, false);
                        std::vector<Matrix> cs;
                        for (std::int64_t b = 0; b < count; ++b) {
                            cs.push_back(random_matrix<T>(rows, c_cols, rng));
                            c.set(b, cs.back());
                        }
                        c.upload();
                        Batch<T> o = output<T>(count, rows, c_cols, layout == 4 ? 0 : layout);
                        Batch<T>& out = layout == 4 ? c : o;
                        plan.apply_q(a.view(), tau, vector ? c.vector_view() : c.view(),
                                     vector ? out.vector_view() : out.view(), {.side = side, .adjoint = adjoint});
                        out.download();
                        for (std::int64_t b = 0; b < count; ++b) {
                            const Matrix Q = q.get(b);
                            const Matrix op = adjoint ? adjoint_of(Q, m, m) : Q;
                            const Matrix expected = side == Side::left ? product(op, cs[std::size_t(b)], m, c_cols, m)
                                                                       : product(cs[std::size_t(b)], op, p, m, m);
                            EXPECT_LE(frobenius(minus(out.get(b), expected)) / frobenius(expected), tolerance<T>(m))
                                << what << " matrix " << b;
                        }
                    }
        }
}

TEST(QRGpu, ApplyQMatchesTheExplicitQF32) {
    GPUMATH_REQUIRE_GPU();
    apply_q_matches_the_explicit_q<float>();
}
TEST(QRGpu, ApplyQMatchesTheExplicitQF64) {
    GPUMATH_REQUIRE_GPU();
    apply_q_matches_the_explicit_q<double>();
}
TEST(QRGpu, ApplyQMatchesTheExplicitQC32) {
    GPUMATH_REQUIRE_GPU();
    apply_q_matches_the_explicit_q<std::complex<float>>();
}
TEST(QRGpu, ApplyQMatchesTheExplicitQC64) {
    GPUMATH_REQUIRE_GPU();
    apply_q_matches_the_explicit_q<std::complex<double>>();
}

/// Checks one least-squares solution `x` (n × p) of A·X ≈ B against the host's, and its residuals.
template <class T>
void check_solution(const Matrix& A, const Matrix& B, const Matrix& X, const std::vector<double>& residuals,
                    std::int64_t m, std::int64_t n, std::int64_t p, const std::string& what) {
    const Matrix expected = host_lstsq(A, B, m, n, p);
    const Matrix r = minus(product(A, X, m, p, n), B);
    const double na = frobenius(A), nx = std::max(frobenius(X), 1e-300);
    if (m >= n) {
        // The residual is orthogonal to A's columns.
        EXPECT_LE(frobenius(product(adjoint_of(A, m, n), r, n, p, m)) / (na * na * nx), tolerance<T>(m))
            << what << ": Aᴴ(A·X − B)";
    } else {
        EXPECT_LE(frobenius(r) / (na * nx), tolerance<T>(n)) << what << ": A·X = B";
    }
    EXPECT_LE(frobenius(minus(X, expected)) / frobenius(expected), 4 * tolerance<T>(std::max(m, n)))
        << what << ": X against the normal equations in double";
    const Matrix r_expected = minus(product(A, expected, m, p, n), B);
    for (std::int64_t j = 0; j < p; ++j) {
        double norm = 0, bn = 0;
        for (std::int64_t i = 0; i < m; ++i) {
            norm += std::norm(r_expected[std::size_t(i * p + j)]);
            bn += std::norm(B[std::size_t(i * p + j)]);
        }
        if (m <= n) {
            EXPECT_EQ(residuals[std::size_t(j)], 0.0) << what << ": residual " << j;
        } else {
            EXPECT_NEAR(residuals[std::size_t(j)], std::sqrt(norm), tolerance<T>(m) * std::sqrt(bn))
                << what << ": residual " << j;
        }
    }
}

template <class T>
void least_squares() {
    auto rng = test::rng_for_test();
    using R = typename Real<T>::type;
    for (const auto& [count, m, n] :
         std::vector<std::array<std::int64_t, 3>>{{3, 30, 12}, {2, 16, 16}, {2, 8, 20}, {2, 7, 1}, {1, 1, 4}})
        for (const std::int64_t k : {0, 3})  // 0: b is (count, m)
            for (int layout = 0; layout < 4; ++layout) {
                const std::int64_t p = std::max<std::int64_t>(k, 1);
                const std::string what = std::to_string(count) + " x " + std::to_string(m) + "x" + std::to_string(n) +
                                         " p " + std::to_string(k) + " layout " + std::to_string(layout);
                // A and B in the layout too (row-major, column-major, padded, with gaps).
                Batch<T> a = output<T>(count, m, n, layout);
                Batch<T> bm = output<T>(count, m, p, 3 - layout);
                std::vector<Matrix> as, bs;
                const double weight = double(std::max(m, n)) / 4;
                for (std::int64_t b = 0; b < count; ++b) {
                    as.push_back(random_matrix<T>(m, n, rng, weight));
                    bs.push_back(random_matrix<T>(m, p, rng));
                    a.set(b, as.back());
                    bm.set(b, bs.back());
                }
                a.upload();
                bm.upload();
                Batch<T> x = output<T>(count, n, p, layout);
                Batch<R> res = Batch<R>::make(count, p, 1, false);  // contiguous (count, p)
                LeastSquares plan(a.view().layout());
                Tensor info = Tensor::empty(plan.info_layout());
                fill(info, -7);
                const TensorView rv =
                    k == 0 ? TensorView(res.storage.data(), TensorLayout(res.view().dtype(), {count}))
                           : TensorView(res.storage.data(), TensorLayout(res.view().dtype(), {count, p}));
                plan.execute(a.view(), k == 0 ? bm.vector_view() : bm.view(), k == 0 ? x.vector_view() : x.view(), rv,
                             info);
                x.download();
                res.download();
                EXPECT_EQ(infos(info), std::vector<int>(std::size_t(count), 0)) << what;
                for (std::int64_t b = 0; b < count; ++b) {
                    std::vector<double> norms;
                    for (std::int64_t j = 0; j < p; ++j) norms.push_back(double(res.at(b, j, 0)));
                    check_solution<T>(as[std::size_t(b)], bs[std::size_t(b)], x.get(b), norms, m, n, p,
                                      what + " matrix " + std::to_string(b));
                }
            }
}

TEST(QRGpu, LeastSquaresF32) {
    GPUMATH_REQUIRE_GPU();
    least_squares<float>();
}
TEST(QRGpu, LeastSquaresF64) {
    GPUMATH_REQUIRE_GPU();
    least_squares<double>();
}
TEST(QRGpu, LeastSquaresC32) {
    GPUMATH_REQUIRE_GPU();
    least_squares<std::complex<float>>();
}
TEST(QRGpu, LeastSquaresC64) {
    GPUMATH_REQUIRE_GPU();
    least_squares<std::complex<double>>();
}

TEST(QRGpu, StatelessLstsqOnABatchOfTwoDimensions) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const std::int64_t m = 20, n = 6, p = 2;
    std::vector<Matrix> as, bs;
    std::vector<double> ha, hb;
    for (int b = 0; b < 6; ++b) {
        as.push_back(random_matrix<double>(m, n, rng, 5));
        bs.push_back(random_matrix<double>(m, p, rng));
        for (const cd& v : as.back()) ha.push_back(v.real());
        for (const cd& v : bs.back()) hb.push_back(v.real());
    }
    const LstsqResult r = lstsq(Tensor::from_host(ha, {2, 3, m, n}), Tensor::from_host(hb, {2, 3, m, p}));
    r.check();
    ASSERT_EQ(r.x.rank(), 4);
    EXPECT_EQ(r.x.shape(2), n);
    EXPECT_EQ(r.residuals.rank(), 3);
    EXPECT_EQ(r.residuals.dtype(), DataType::f64);
    const std::vector<double> hx = r.x.to_host<double>(), hr = r.residuals.to_host<double>();
    for (int b = 0; b < 6; ++b) {
        Matrix X(std::size_t(n * p));
        for (std::int64_t i = 0; i < n * p; ++i) X[std::size_t(i)] = hx[std::size_t(b * n * p + i)];
        check_solution<double>(as[std::size_t(b)], bs[std::size_t(b)], X,
                               std::vector<double>(hr.begin() + b * p, hr.begin() + (b + 1) * p), m, n, p,
                               "matrix " + std::to_string(b));
    }
}

TEST(QRGpu, RankDeficiencyIsReportedNotThrown) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    for (const auto& [m, n] : std::vector<std::pair<std::int64_t, std::int64_t>>{{8, 4}, {3, 7}}) {
        const std::int64_t count = 3;
        std::vector<double> ha, hb;
        for (std::int64_t b = 0; b < count; ++b) {
            Matrix A = random_matrix<double>(m, n, rng, 2);
            // Matrix 1: column 2 (tall) or row 1 (wide) is zero, so R(3, 3) or R(2, 2) is exactly zero.
            if (b == 1)
                for (std::int64_t i = 0; i < m; ++i)
                    for (std::int64_t j = 0; j < n; ++j)
                        if (m > n ? j == 2 : i == 1) A[std::size_t(i * n + j)] = 0;
            for (const cd& v : A) ha.push_back(v.real());
            for (std::int64_t i = 0; i < m; ++i) hb.push_back(1.0);
        }
        const LstsqResult r = lstsq(Tensor::from_host(ha, {count, m, n}), Tensor::from_host(hb, {count, m}));
        const int expected = m > n ? 3 : 2;
        EXPECT_EQ(infos(r.info), (std::vector<int>{0, expected, 0})) << m << "x" << n;
        try {
            r.check();
            ADD_FAILURE() << "expected NumericalError";
        } catch (const NumericalError& e) {
            EXPECT_EQ(e.batch_index(), 1);
            EXPECT_EQ(e.info(), expected);
            EXPECT_NE(std::string(e.what()).find("linalg::lstsq: matrix 1 of the batch is rank deficient"),
                      std::string::npos)
                << e.what();
        }
    }
}

TEST(QRGpu, EmptySizesAreSolvedToo) {
    GPUMATH_REQUIRE_GPU();
    // n = 0: X is empty and the residual is ‖b‖; m = 0: X = 0, the least-norm solution.
    const Tensor b = Tensor::from_host(std::vector<double>{3, 4, 0, 5, 12, 0}, {2, 3});
    const LstsqResult none = lstsq(Tensor::empty(DataType::f64, {2, 3, 0}), b);
    none.check();
    EXPECT_EQ(none.x.shape(1), 0);
    EXPECT_EQ(none.residuals.to_host<double>(), (std::vector<double>{5, 13}));
    const LstsqResult zero = lstsq(Tensor::empty(DataType::f64, {2, 0, 3}), Tensor::empty(DataType::f64, {2, 0}));
    zero.check();
    EXPECT_EQ(zero.x.to_host<double>(), std::vector<double>(6, 0.0));
    EXPECT_EQ(zero.residuals.to_host<double>(), std::vector<double>(2, 0.0));
    // Q of no reflectors is the identity; R of no rows or columns is empty.
    const QRResult q = qr(Tensor::empty(DataType::f32, {2, 3, 0}), {.mode = QRMode::complete});
    EXPECT_EQ(q.q.to_host<float>(), (std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1}));
    EXPECT_EQ(q.r.size(), 0);
    EXPECT_EQ(qr(Tensor::empty(DataType::c32, {0, 4, 3})).q.size(), 0);
}

TEST(QRGpu, PlansReplayFromACapturedGraph) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const std::int64_t count = 4, m = 12, n = 5, p = 2;
    Batch<float> a = Batch<float>::make(count, m, n, false);
    Batch<float> f = Batch<float>::make(count, m, n, true);
    Batch<float> c = Batch<float>::make(count, m, p, false);
    Batch<float> qc = Batch<float>::make(count, m, p, false);
    Batch<float> b = Batch<float>::make(count, m, p, false);
    Batch<float> x = Batch<float>::make(count, n, p, true);
    a.upload();
    c.upload();
    b.upload();
    const core::Stream stream;
    QR plan(a.view().layout());
    LeastSquares ls(a.view().layout());
    plan.plan();
    ls.plan();
    Tensor tau = Tensor::empty(plan.tau_layout(), stream);
    Tensor info = Tensor::empty(ls.info_layout(), stream);
    Tensor res = Tensor::empty(DataType::f32, {count, p}, stream);
    core::Graph graph = core::Graph::capture(stream, [&](core::StreamRef) {
        plan.factorize(a.view(), f.view(), tau, stream);
        plan.apply_q(f.view(), tau, c.view(), qc.view(), {.adjoint = true}, stream);
        ls.execute(a.view(), b.view(), x.view(), res, info, stream);
    });
    for (int round = 0; round < 2; ++round) {
        std::vector<Matrix> as, bs, cs;
        for (std::int64_t i = 0; i < count; ++i) {
            as.push_back(random_matrix<float>(m, n, rng, 3));
            bs.push_back(random_matrix<float>(m, p, rng));
            cs.push_back(random_matrix<float>(m, p, rng));
            a.set(i, as.back());
            b.set(i, bs.back());
            c.set(i, cs.back());
        }
        // New values into the captured buffers.
        copy(Tensor::from_host(a.host, {std::int64_t(a.host.size())}), a.storage, stream);
        copy(Tensor::from_host(b.host, {std::int64_t(b.host.size())}), b.storage, stream);
        copy(Tensor::from_host(c.host, {std::int64_t(c.host.size())}), c.storage, stream);
        graph.launch(stream);
        stream.synchronize();
        f.download();
        qc.download();
        x.download();
        EXPECT_EQ(info.to_host<int>(), std::vector<int>(std::size_t(count), 0));
        const std::vector<float> hr = res.to_host<float>();
        for (std::int64_t i = 0; i < count; ++i) {
            // Q is unitary: QᴴC keeps C's norm.
            const Matrix A = as[std::size_t(i)];
            const Matrix qhc = qc.get(i);
            EXPECT_NEAR(frobenius(qhc), frobenius(cs[std::size_t(i)]), 1e-4 * frobenius(cs[std::size_t(i)]))
                << "round " << round;
            const Matrix R = upper_rows(f.get(i), n, n);
            // RᴴR = AᴴA: the replayed factorization is of the new A.
            EXPECT_LE(
                frobenius(minus(product(adjoint_of(R, n, n), R, n, n, n), product(adjoint_of(A, m, n), A, n, n, m))) /
                    (frobenius(A) * frobenius(A)),
                tolerance<float>(m))
                << "round " << round;
            check_solution<float>(A, bs[std::size_t(i)], x.get(i),
                                  std::vector<double>(hr.begin() + i * p, hr.begin() + (i + 1) * p), m, n, p,
                                  "replayed, round " + std::to_string(round));
        }
    }
}

}  // namespace
}  // namespace gpumath::linalg
