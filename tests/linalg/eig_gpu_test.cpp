// SPDX-License-Identifier: Apache-2.0
// gpumath::linalg's general eigendecomposition (Eig, eig) and mixed-precision solve (RefinedSolve,
// refined_solve) on the GPU against host references that do not use gpumath: ‖A·V − V·Λ‖ and unit
// eigenvectors, every eigenvalue an eigenvalue of A (A − λI nearly singular, by inverse iteration
// on the host), their sum, sum of squares and product against trace(A), trace(A²) and det(A),
// conjugate pairs of real matrices; backward errors ‖A·x − b‖/(‖A‖‖x‖) and host solutions of the
// refined solve, its iteration counts and fallback, singular matrices through info; every dtype,
// row- and column-major, padded and strided operands, batches, poisoned outputs; capture refused.
#include <gpumath/linalg.hpp>

#include <algorithm>
#include <array>
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
using Complex = std::complex<typename Real<T>::type>;

/// Entries uniform on [-1, 1] (real and imaginary parts alike): a non-normal matrix whose real
/// instances have complex conjugate eigenvalue pairs.
template <class T>
Matrix random_matrix(std::int64_t n, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> u(-1, 1);
    Matrix m(std::size_t(n * n));
    for (auto& v : m) v = is_complex<T> ? cd(u(rng), u(rng)) : cd(u(rng), 0);
    return m;
}

/// Well conditioned: entries uniform on [-1, 1] plus n/2 + 4 on the diagonal.
template <class T>
Matrix dominant_matrix(std::int64_t n, std::mt19937_64& rng) {
    Matrix m = random_matrix<T>(n, rng);
    for (std::int64_t i = 0; i < n; ++i) m[std::size_t(i * n + i)] += cd(double(n) / 2 + 4, 0);
    return m;
}

/// Solves m·X = r (n × k, row-major) by Gaussian elimination with partial pivoting in double;
/// false when a pivot is exactly zero.
bool host_solve(Matrix m, Matrix& r, std::int64_t n, std::int64_t k) {
    for (std::int64_t c = 0; c < n; ++c) {
        std::int64_t p = c;
        for (std::int64_t i = c + 1; i < n; ++i)
            if (std::abs(m[std::size_t(i * n + c)]) > std::abs(m[std::size_t(p * n + c)])) p = i;
        if (m[std::size_t(p * n + c)] == cd(0)) return false;
        for (std::int64_t j = 0; j < n; ++j) std::swap(m[std::size_t(p * n + j)], m[std::size_t(c * n + j)]);
        for (std::int64_t j = 0; j < k; ++j) std::swap(r[std::size_t(p * k + j)], r[std::size_t(c * k + j)]);
        for (std::int64_t i = c + 1; i < n; ++i) {
            const cd f = m[std::size_t(i * n + c)] / m[std::size_t(c * n + c)];
            for (std::int64_t j = c; j < n; ++j) m[std::size_t(i * n + j)] -= f * m[std::size_t(c * n + j)];
            for (std::int64_t j = 0; j < k; ++j) r[std::size_t(i * k + j)] -= f * r[std::size_t(c * k + j)];
        }
    }
    for (std::int64_t i = n - 1; i >= 0; --i)
        for (std::int64_t j = 0; j < k; ++j) {
            cd s = r[std::size_t(i * k + j)];
            for (std::int64_t q = i + 1; q < n; ++q) s -= m[std::size_t(i * n + q)] * r[std::size_t(q * k + j)];
            r[std::size_t(i * k + j)] = s / m[std::size_t(i * n + i)];
        }
    return true;
}

/// Checks that `w` are A's eigenvalues: each makes A − λI singular to working accuracy (one step
/// of inverse iteration from random vectors gives a residual of at most tol·‖A‖: λ is an exact
/// eigenvalue of a matrix that near A), and their sum, sum of squares and product are trace(A),
/// trace(A²) and det(A). For a real A, non-real eigenvalues come as conjugate pairs, the one with
/// the positive imaginary part first. Returns how many such pairs there are.
template <class T>
int check_values(const Matrix& a, const std::vector<cd>& w, std::int64_t n, const std::string& what) {
    const double tol = tolerance<T>(n), norm = std::max(frobenius(a), 1e-30);
    cd sum = 0, squares = 0, trace = 0, trace2 = 0, prod = 1;
    for (std::int64_t i = 0; i < n; ++i) {
        trace += a[std::size_t(i * n + i)];
        for (std::int64_t j = 0; j < n; ++j) trace2 += a[std::size_t(i * n + j)] * a[std::size_t(j * n + i)];
    }
    double bound = 0;  // Σ_j Π_{i≠j} |λ_i|: the product's sensitivity to each eigenvalue
    for (std::int64_t j = 0; j < n; ++j) {
        const cd l = w[std::size_t(j)];
        EXPECT_TRUE(std::isfinite(l.real()) && std::isfinite(l.imag())) << what << ": eigenvalue " << j << " " << l;
        sum += l;
        squares += l * l;
        prod *= l;
        double p = 1;
        for (std::int64_t i = 0; i < n; ++i)
            if (i != j) p *= std::abs(w[std::size_t(i)]);
        bound += p;
    }
    EXPECT_LE(std::abs(sum - trace), tol * norm * double(n)) << what << ": sum " << sum << " trace " << trace;
    EXPECT_LE(std::abs(squares - trace2), tol * norm * norm * double(n)) << what << ": sum of squares";
    const cd det = host_determinant(a, n);
    EXPECT_LE(std::abs(prod - det), 100 * tol * norm * bound + 1e-300)
        << what << ": product " << prod << " det " << det;
    std::mt19937_64 rng(12345);
    std::normal_distribution<double> g;
    for (std::int64_t j = 0; j < n; ++j) {
        Matrix m = a;
        for (std::int64_t i = 0; i < n; ++i) m[std::size_t(i * n + i)] -= w[std::size_t(j)];
        double largest = 0;  // ‖(A − λI)⁻¹ r‖ over three unit vectors r
        for (int t = 0; t < 3; ++t) {
            Matrix r(static_cast<std::size_t>(n));
            double rn = 0;
            for (auto& v : r) {
                v = cd(g(rng), g(rng));
                rn += std::norm(v);
            }
            for (auto& v : r) v /= std::sqrt(rn);
            if (!host_solve(m, r, n, 1)) {
                largest = std::numeric_limits<double>::infinity();
                break;
            }
            largest = std::max(largest, frobenius(r));
        }
        EXPECT_GE(largest * tol * norm, 1.0) << what << ": " << w[std::size_t(j)] << " is not an eigenvalue (residual "
                                             << 1 / largest << ", ‖A‖ " << norm << ")";
    }
    int pairs = 0;
    if (is_complex<T>) return pairs;
    for (std::int64_t j = 0; j < n;) {
        const cd l = w[std::size_t(j)];
        if (l.imag() == 0) {
            ++j;
            continue;
        }
        EXPECT_GT(l.imag(), 0) << what << ": eigenvalue " << j << " " << l << " opens a pair with Im < 0";
        if (j + 1 >= n) {
            ADD_FAILURE() << what << ": eigenvalue " << j << " " << l << " has no partner";
            break;
        }
        EXPECT_LE(std::abs(w[std::size_t(j + 1)] - std::conj(l)), tol * norm) << what << ": pair " << j;
        ++pairs;
        j += 2;
    }
    return pairs;
}

/// ‖A·V − V·diag(w)‖ / (‖A‖‖V‖) and every column of unit norm.
template <class T>
void check_vectors(const Matrix& a, const Matrix& v, const std::vector<cd>& w, std::int64_t n,
                   const std::string& what) {
    const double tol = tolerance<T>(n);
    const Matrix av = product(a, v, n, n, n);
    Matrix d(av.size());
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j)
            d[std::size_t(i * n + j)] = av[std::size_t(i * n + j)] - v[std::size_t(i * n + j)] * w[std::size_t(j)];
    EXPECT_LE(frobenius(d) / (std::max(frobenius(a), 1e-30) * std::max(frobenius(v), 1e-30)), tol) << what;
    for (std::int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (std::int64_t i = 0; i < n; ++i) s += std::norm(v[std::size_t(i * n + j)]);
        EXPECT_NEAR(std::sqrt(s), 1.0, tol) << what << ": column " << j;
    }
}

/// The complex vectors of LAPACK's real packing (as documented for EigVectors::real_packed).
Matrix unpacked(const Matrix& p, const std::vector<cd>& w, std::int64_t n) {
    Matrix v(p.size());
    for (std::int64_t j = 0; j < n; ++j) {
        const bool first = w[std::size_t(j)].imag() > 0 && j + 1 < n;
        const bool second = w[std::size_t(j)].imag() < 0 && j > 0;
        for (std::int64_t i = 0; i < n; ++i) {
            const double re = p[std::size_t(i * n + j)].real();
            if (first) v[std::size_t(i * n + j)] = cd(re, p[std::size_t(i * n + j + 1)].real());
            else if (second) v[std::size_t(i * n + j)] = cd(p[std::size_t(i * n + j - 1)].real(), -re);
            else v[std::size_t(i * n + j)] = cd(re, 0);
        }
    }
    return v;
}

/// Vectors: 0 row-major, 1 column-major, 2 column-major padded, 3 column-major with gaps.
template <class T>
Batch<T> vector_batch(std::int64_t count, std::int64_t n, int layout) {
    switch (layout) {
        case 0:
            return Batch<T>::make(count, n, n, false);
        case 1:
            return Batch<T>::make(count, n, n, true);
        case 2:
            return Batch<T>::make(count, n, n, true, 2);
        default:
            return Batch<T>::make(count, n, n, true, 0, 2);
    }
}

template <class T>
void eig_every_layout() {
    using C = Complex<T>;
    auto rng = test::rng_for_test();
    const std::int64_t count = 3;
    std::vector<EigVectors> modes{EigVectors::complex, EigVectors::none};
    if constexpr (!is_complex<T>) modes.push_back(EigVectors::real_packed);
    int pairs = 0;
    for (const std::int64_t n : {1, 6, 40})
        for (const EigVectors mode : modes)
            for (int layout = 0; layout < 4; ++layout) {
                const std::string what = "n " + std::to_string(n) + " vectors " + std::string(to_string(mode)) +
                                         " layout " + std::to_string(layout);
                // A: row-major (0), column-major (1, 3), row-major padded (2); values contiguous,
                // or two apart (2: through workspace).
                Batch<T> a =
                    layout == 2 ? Batch<T>::make(count, n, n, false, 1) : Batch<T>::make(count, n, n, layout != 0);
                std::vector<Matrix> ref;
                for (std::int64_t b = 0; b < count; ++b) {
                    ref.push_back(random_matrix<T>(n, rng));
                    a.set(b, ref.back());
                }
                a.upload();
                const std::vector<T> a_before = a.host;
                Batch<C> w =
                    layout == 2 ? Batch<C>::make(count, n, 1, false, 0, 2) : Batch<C>::make(count, n, 1, false);
                Batch<C> vc = vector_batch<C>(count, n, layout);  // poisoned (NaN) by Batch
                Batch<T> vp = vector_batch<T>(count, n, layout);
                Eig plan(a.view().layout(), {.vectors = mode});
                Tensor info = Tensor::empty(DataType::i32, {count});
                fill(info, -7);
                const TensorView vectors = mode == EigVectors::none      ? TensorView()
                                           : mode == EigVectors::complex ? vc.view()
                                                                         : vp.view();
                try {
                    plan.execute(a.view(), w.vector_view(), vectors, info);
                } catch (const std::exception& e) {
                    FAIL() << what << ": " << e.what();
                }
                EXPECT_TRUE(plan.planned()) << what;
                w.download();
                if (mode == EigVectors::complex) vc.download();
                if (mode == EigVectors::real_packed) vp.download();
                a.download();
                EXPECT_EQ(infos(info), std::vector<int>(std::size_t(count), 0)) << what;
                for (std::size_t i = 0; i < a.host.size(); ++i)
                    if (!std::isnan(std::abs(cd(a_before[i])))) {
                        ASSERT_EQ(cd(a.host[i]), cd(a_before[i])) << what << ": A was written at " << i;
                    }
                for (std::int64_t b = 0; b < count; ++b) {
                    const std::string at = what + " matrix " + std::to_string(b);
                    std::vector<cd> values(static_cast<std::size_t>(n));
                    for (std::int64_t i = 0; i < n; ++i) values[std::size_t(i)] = cd(w.at(b, i, 0));
                    pairs += check_values<T>(ref[std::size_t(b)], values, n, at);
                    if (mode == EigVectors::complex) check_vectors<T>(ref[std::size_t(b)], vc.get(b), values, n, at);
                    if (mode == EigVectors::real_packed)
                        check_vectors<T>(ref[std::size_t(b)], unpacked(vp.get(b), values, n), values, n, at);
                }
            }
    if constexpr (!is_complex<T>) {
        EXPECT_GT(pairs, 0) << "no complex conjugate pair met";
    }
}

TEST(EigGpu, EveryLayoutAndVectorFormF32) {
    GPUMATH_REQUIRE_GPU();
    eig_every_layout<float>();
}
TEST(EigGpu, EveryLayoutAndVectorFormF64) {
    GPUMATH_REQUIRE_GPU();
    eig_every_layout<double>();
}
TEST(EigGpu, EveryLayoutAndVectorFormC32) {
    GPUMATH_REQUIRE_GPU();
    eig_every_layout<std::complex<float>>();
}
TEST(EigGpu, EveryLayoutAndVectorFormC64) {
    GPUMATH_REQUIRE_GPU();
    eig_every_layout<std::complex<double>>();
}

bool by_parts(const cd& x, const cd& y) { return x.real() != y.real() ? x.real() < y.real() : x.imag() < y.imag(); }

/// Block diagonal [[1, -2], [2, 1]] (1 ± 2i), [3], [[0, -1], [1, 0]] (± i), its rows and columns
/// permuted alike: known complex conjugate pairs.
template <class T>
void known_pairs() {
    const std::int64_t n = 5;
    Matrix block(std::size_t(n * n));
    const auto set = [&](std::int64_t i, std::int64_t j, double v) { block[std::size_t(i * n + j)] = v; };
    set(0, 0, 1);
    set(0, 1, -2);
    set(1, 0, 2);
    set(1, 1, 1);
    set(2, 2, 3);
    set(3, 4, -1);
    set(4, 3, 1);
    const std::array<std::int64_t, 5> perm{3, 0, 4, 1, 2};
    Matrix a(block.size());
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j)
            a[std::size_t(i * n + j)] = block[std::size_t(perm[std::size_t(i)] * n + perm[std::size_t(j)])];
    std::vector<T> host;
    for (const cd& v : a) host.push_back(from<T>(v));
    const Tensor da = Tensor::from_host(host, {n, n});
    const EigResult r = eig(da);
    r.check();
    const std::vector<Complex<T>> hw = r.values.to_host<Complex<T>>(), hv = r.vectors.to_host<Complex<T>>();
    std::vector<cd> w(hw.begin(), hw.end());
    Matrix v(hv.begin(), hv.end());
    EXPECT_EQ(check_values<T>(a, w, n, "known pairs"), 2);
    check_vectors<T>(a, v, w, n, "known pairs");
    std::vector<cd> sorted = w, expected = {cd(1, 2), cd(1, -2), cd(3, 0), cd(0, 1), cd(0, -1)};
    std::sort(sorted.begin(), sorted.end(), by_parts);
    std::sort(expected.begin(), expected.end(), by_parts);
    for (std::size_t i = 0; i < expected.size(); ++i)
        EXPECT_LE(std::abs(sorted[i] - expected[i]), tolerance<T>(n)) << "eigenvalue " << i;
    // The packed form of the same vectors, through a plan.
    Eig plan(da.view().layout(), {.vectors = EigVectors::real_packed});
    Tensor values = Tensor::empty(plan.values_layout());
    Tensor packed = Tensor::empty(plan.vectors_layout());
    Tensor info = Tensor::empty(plan.info_layout());
    plan.execute(da, values, packed, info);
    check_info(info, "known pairs, packed");
    const std::vector<T> hp = packed.to_host<T>();
    const std::vector<Complex<T>> hw2 = values.to_host<Complex<T>>();
    std::vector<cd> w2(hw2.begin(), hw2.end());
    check_vectors<T>(a, unpacked(Matrix(hp.begin(), hp.end()), w2, n), w2, n, "known pairs, packed");
}

TEST(EigGpu, RealMatricesWithKnownConjugatePairsF32) {
    GPUMATH_REQUIRE_GPU();
    known_pairs<float>();
}
TEST(EigGpu, RealMatricesWithKnownConjugatePairsF64) {
    GPUMATH_REQUIRE_GPU();
    known_pairs<double>();
}

TEST(EigGpu, TheStatelessCallTakesAnyBatchShape) {
    GPUMATH_REQUIRE_GPU();
    using T = std::complex<double>;
    auto rng = test::rng_for_test();
    const std::int64_t n = 12;
    std::vector<Matrix> ref;
    std::vector<T> host;
    for (int b = 0; b < 6; ++b) {
        ref.push_back(random_matrix<T>(n, rng));
        for (const cd& v : ref.back()) host.push_back(v);
    }
    const Tensor a = Tensor::from_host(host, {2, 3, n, n});
    for (const EigVectors mode : {EigVectors::complex, EigVectors::none}) {
        const EigResult r = eig(a, {.vectors = mode});
        r.check();
        ASSERT_EQ(r.values.view().rank(), 3);
        EXPECT_EQ(r.values.view().dtype(), DataType::c64);
        EXPECT_EQ(r.info.view().rank(), 2);
        EXPECT_EQ(r.vectors.data() == nullptr, mode == EigVectors::none);
        const std::vector<T> hw = r.values.to_host<T>();
        std::vector<T> hv;
        if (mode == EigVectors::complex) hv = r.vectors.to_host<T>();
        for (std::int64_t b = 0; b < 6; ++b) {
            const std::vector<cd> w(hw.begin() + b * n, hw.begin() + (b + 1) * n);
            check_values<T>(ref[std::size_t(b)], w, n, "stateless");
            if (mode == EigVectors::complex)
                check_vectors<T>(ref[std::size_t(b)], Matrix(hv.begin() + b * n * n, hv.begin() + (b + 1) * n * n), w,
                                 n, "stateless");
        }
    }
}

/// ‖A·X − B‖ / (‖A‖‖X‖) of n × k right-hand sides.
double backward_error(const Matrix& a, const Matrix& x, const Matrix& b, std::int64_t n, std::int64_t k) {
    const Matrix ax = product(a, x, n, k, n);
    Matrix d(ax.size());
    for (std::size_t i = 0; i < d.size(); ++i) d[i] = ax[i] - b[i];
    return frobenius(d) / (frobenius(a) * std::max(frobenius(x), 1e-300));
}

template <class T>
void refined_solves() {
    auto rng = test::rng_for_test();
    const std::int64_t count = 2;
    std::vector<LowestPrecision> lowest{LowestPrecision::f16, LowestPrecision::bf16, LowestPrecision::tf32,
                                        LowestPrecision::f32};
    if constexpr (std::is_same_v<typename Real<T>::type, double>) lowest.push_back(LowestPrecision::f64);
    for (const LowestPrecision p : lowest)
        for (const std::int64_t n : {3, 37, 200})
            for (const std::int64_t k : {0, 1, 3})  // 0: b is (count, n)
                for (int layout = 0; layout < 3; ++layout) {
                    const std::string what = std::string("lowest ") + std::string(to_string(p)) + " n " +
                                             std::to_string(n) + " k " + std::to_string(k) + " layout " +
                                             std::to_string(layout);
                    const std::int64_t cols = std::max<std::int64_t>(k, 1);
                    // 0: A, b and x row-major (through workspace); 1: all column-major (in place);
                    // 2: A row-major padded, b column-major padded, x with gaps.
                    Batch<T> a =
                        layout == 2 ? Batch<T>::make(count, n, n, false, 2) : Batch<T>::make(count, n, n, layout == 1);
                    Batch<T> bm = layout == 2 ? Batch<T>::make(count, n, cols, true, 3)
                                              : Batch<T>::make(count, n, cols, layout == 1);
                    Batch<T> x = layout == 2 ? Batch<T>::make(count, n, cols, true, 0, 2)
                                             : Batch<T>::make(count, n, cols, layout == 1);
                    std::vector<Matrix> ref, rhs;
                    for (std::int64_t b = 0; b < count; ++b) {
                        ref.push_back(dominant_matrix<T>(n, rng));
                        a.set(b, ref.back());
                        Matrix m(std::size_t(n * cols));
                        std::uniform_real_distribution<double> u(-1, 1);
                        for (auto& v : m) v = is_complex<T> ? cd(u(rng), u(rng)) : cd(u(rng), 0);
                        rhs.push_back(m);
                        bm.set(b, m);
                    }
                    a.upload();
                    bm.upload();
                    const std::vector<T> b_before = bm.host;
                    const TensorView bv = k == 0 ? bm.vector_view() : bm.view();
                    const TensorView xv = k == 0 ? x.vector_view() : x.view();
                    RefinedSolve plan(a.view().layout(), bv.layout(), {.lowest = p});
                    Tensor info = Tensor::empty(plan.info_layout());
                    fill(info, -7);
                    const std::vector<RefinementStatus> st = plan.execute(a.view(), bv, xv, info);
                    x.download();
                    bm.download();
                    EXPECT_EQ(infos(info), std::vector<int>(std::size_t(count), 0)) << what;
                    ASSERT_EQ(st.size(), std::size_t(count)) << what;
                    for (std::size_t i = 0; i < bm.host.size(); ++i)
                        if (!std::isnan(std::abs(cd(b_before[i])))) {
                            ASSERT_EQ(cd(bm.host[i]), cd(b_before[i])) << what << ": b was written at " << i;
                        }
                    for (std::int64_t b = 0; b < count; ++b) {
                        const std::string at = what + " matrix " + std::to_string(b);
                        EXPECT_TRUE(st[std::size_t(b)].converged())
                            << at << ": niters " << st[std::size_t(b)].iterations;
                        EXPECT_GE(st[std::size_t(b)].iterations, 0) << at;
                        EXPECT_FALSE(st[std::size_t(b)].fell_back) << at;
                        const Matrix xs = x.get(b);
                        EXPECT_LE(backward_error(ref[std::size_t(b)], xs, rhs[std::size_t(b)], n, cols),
                                  tolerance<T>(n))
                            << at;
                        Matrix expected = rhs[std::size_t(b)];
                        ASSERT_TRUE(host_solve(ref[std::size_t(b)], expected, n, cols));
                        Matrix d(xs.size());
                        for (std::size_t i = 0; i < d.size(); ++i) d[i] = xs[i] - expected[i];
                        EXPECT_LE(frobenius(d) / frobenius(expected), 10 * tolerance<T>(n))
                            << at << ": against the host";
                    }
                }
}

TEST(RefinedSolveGpu, EveryPrecisionAndLayoutF64) {
    GPUMATH_REQUIRE_GPU();
    refined_solves<double>();
}
TEST(RefinedSolveGpu, EveryPrecisionAndLayoutF32) {
    GPUMATH_REQUIRE_GPU();
    refined_solves<float>();
}
TEST(RefinedSolveGpu, EveryPrecisionAndLayoutC64) {
    GPUMATH_REQUIRE_GPU();
    refined_solves<std::complex<double>>();
}
TEST(RefinedSolveGpu, EveryPrecisionAndLayoutC32) {
    GPUMATH_REQUIRE_GPU();
    refined_solves<std::complex<float>>();
}

/// One refinement iteration from an f16 LU cannot reach double accuracy: the solve falls back to
/// a double LU (or, without fallback, returns what it reached).
TEST(RefinedSolveGpu, OneIterationFallsBackToFullPrecision) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const std::int64_t count = 2, n = 200;
    std::vector<double> host;
    std::vector<Matrix> ref;
    Matrix rhs(std::size_t(count * n));
    for (std::int64_t b = 0; b < count; ++b) {
        ref.push_back(dominant_matrix<double>(n, rng));
        for (const cd& v : ref.back()) host.push_back(v.real());
    }
    std::vector<double> hb;
    for (std::int64_t i = 0; i < count * n; ++i) {
        hb.push_back(std::sin(double(i) + 1));
        rhs[std::size_t(i)] = hb.back();
    }
    const Tensor a = Tensor::from_host(host, {count, n, n});
    const Tensor b = Tensor::from_host(hb, {count, n});
    for (const bool fallback : {true, false}) {
        const RefinedSolveResult r = refined_solve(a, b,
                                                   {.lowest = LowestPrecision::f16,
                                                    .refinement = Refinement::classical,
                                                    .max_iterations = 1,
                                                    .fallback = fallback});
        r.check();
        const std::vector<double> hx = r.x.to_host<double>();
        ASSERT_EQ(r.refinement.size(), std::size_t(count));
        for (std::int64_t m = 0; m < count; ++m) {
            const RefinementStatus& s = r.refinement[std::size_t(m)];
            EXPECT_LT(s.iterations, 0) << "fallback " << fallback << " matrix " << m;
            EXPECT_FALSE(s.converged());
            EXPECT_EQ(s.fell_back, fallback);
            const Matrix x(hx.begin() + m * n, hx.begin() + (m + 1) * n);
            const Matrix bm(rhs.begin() + m * n, rhs.begin() + (m + 1) * n);
            const double e = backward_error(ref[std::size_t(m)], x, bm, n, 1);
            if (fallback) {
                EXPECT_LE(e, tolerance<double>(n)) << "matrix " << m;
            } else {
                EXPECT_LE(e, 1e-2) << "matrix " << m << ": not even the low-precision answer";
            }
        }
    }
}

TEST(RefinedSolveGpu, ASingularMatrixIsReportedNotThrown) {
    GPUMATH_REQUIRE_GPU();
    const std::int64_t n = 4;
    // Matrix 1 has a zero row: whether LU runs on A or on Aᵀ (row-major storage), elimination keeps
    // those zeros exact, so a pivot comes out exactly zero in any precision.
    const std::vector<double> host = {4, 1, 0, 0, 1, 5, 1, 0, 0, 1, 6, 1, 0, 0, 1, 7,  //
                                      1, 2, 3, 4, 0, 0, 0, 0, 0, 1, 0, 1, 2, 0, 1, 0};
    const Tensor a = Tensor::from_host(host, {2, n, n});
    const Tensor b = Tensor::from_host(std::vector<double>(8, 1.0), {2, n});
    const RefinedSolveResult r = refined_solve(a, b);
    const std::vector<int> info = r.info.to_host<int>();
    ASSERT_EQ(r.refinement.size(), 2U);
    EXPECT_EQ(info[0], 0);
    EXPECT_GT(info[1], 0) << "refinement of the singular matrix: " << r.refinement[1].iterations << " iterations, "
                          << (r.refinement[1].fell_back ? "fell back" : "did not fall back");
    EXPECT_TRUE(r.refinement[0].converged());
    const std::vector<double> hx = r.x.to_host<double>();
    const Matrix a0(host.begin(), host.begin() + 16);
    EXPECT_LE(backward_error(a0, Matrix(hx.begin(), hx.begin() + 4), Matrix(4, cd(1)), n, 1), tolerance<double>(n));
    try {
        r.check();
        ADD_FAILURE() << "expected NumericalError";
    } catch (const NumericalError& e) {
        EXPECT_EQ(e.batch_index(), 1);
        EXPECT_EQ(e.info(), info[1]);
        EXPECT_NE(std::string(e.what()).find("singular"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("linalg::refined_solve"), std::string::npos) << e.what();
    }
}

TEST(RefinedSolveGpu, CapturingStreamsAreRefusedBeforeAnyWork) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const std::int64_t count = 3, n = 16;
    Batch<double> a = Batch<double>::make(count, n, n, false);
    std::vector<Matrix> ref;
    for (std::int64_t b = 0; b < count; ++b) {
        ref.push_back(dominant_matrix<double>(n, rng));
        a.set(b, ref.back());
    }
    a.upload();
    Batch<double> bm = Batch<double>::make(count, n, 1, false);
    for (std::int64_t b = 0; b < count; ++b)
        for (std::int64_t i = 0; i < n; ++i) bm.at(b, i, 0) = double(i + 1);
    bm.upload();
    Batch<double> x = Batch<double>::make(count, n, 1, false);
    Batch<std::complex<double>> w = Batch<std::complex<double>>::make(count, n, 1, false);
    Batch<std::complex<double>> v = Batch<std::complex<double>>::make(count, n, n, false);
    Tensor info = Tensor::empty(DataType::i32, {count});
    const core::Stream stream;
    Eig eig_plan(a.view().layout());
    RefinedSolve solve_plan(a.view().layout(), bm.vector_view().layout());
    eig_plan.plan();
    solve_plan.plan();
    test::expect_throw_with<NotSupported>(
        [&] {
            core::Graph g = core::Graph::capture(
                stream, [&](core::StreamRef) { eig_plan.execute(a.view(), w.vector_view(), v.view(), info, stream); });
        },
        {"linalg::Eig::execute", "capturing", "Xgeev"});
    test::expect_throw_with<NotSupported>(
        [&] {
            core::Graph g = core::Graph::capture(stream, [&](core::StreamRef) {
                (void)solve_plan.execute(a.view(), bm.vector_view(), x.vector_view(), info, stream);
            });
        },
        {"linalg::RefinedSolve::execute", "capturing", "IRSXgesv", "on the host"});
    // The stream works on afterwards.
    fill(info, -7, stream);
    const std::vector<RefinementStatus> st =
        solve_plan.execute(a.view(), bm.vector_view(), x.vector_view(), info, stream);
    stream.synchronize();
    x.download();
    EXPECT_EQ(info.to_host<int>(stream), std::vector<int>(std::size_t(count), 0));
    for (std::int64_t b = 0; b < count; ++b) {
        EXPECT_TRUE(st[std::size_t(b)].converged());
        EXPECT_LE(backward_error(ref[std::size_t(b)], x.get(b), bm.get(b), n, 1), tolerance<double>(n));
    }
    fill(info, -7, stream);
    eig_plan.execute(a.view(), w.vector_view(), v.view(), info, stream);
    stream.synchronize();
    w.download();
    v.download();
    EXPECT_EQ(info.to_host<int>(stream), std::vector<int>(std::size_t(count), 0));
    for (std::int64_t b = 0; b < count; ++b) {
        std::vector<cd> values(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) values[std::size_t(i)] = w.at(b, i, 0);
        check_values<double>(ref[std::size_t(b)], values, n, "after refusal");
        check_vectors<double>(ref[std::size_t(b)], v.get(b), values, n, "after refusal");
    }
}

}  // namespace
}  // namespace gpumath::linalg
