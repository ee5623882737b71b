// SPDX-License-Identifier: Apache-2.0
// Eigh's ranges (EighRange::index and EighRange::value, cuSOLVER's Xsyevdx) and its jacobi_batched
// backend (syevjBatched / heevjBatched) on the GPU, against host references that do not use
// gpumath: eigenvalues from a host Jacobi iteration in double or from matrices of a known spectrum,
// ‖A·V − V·Λ‖/‖A‖ and the orthonormality of V, in row- and column-major, padded and strided
// layouts, every dtype, batches of several matrices, poisoned outputs; NaN past each count; capture
// and replay of jacobi_batched.
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

/// The eigenvalues of the Hermitian `a` (n × n) in ascending order, by cyclic Jacobi rotations in
/// double on the real symmetric matrix [[Re A, -Im A], [Im A, Re A]] of order 2n, whose spectrum is
/// A's with every eigenvalue twice (for a real A, on A itself).
std::vector<double> host_eigenvalues(const Matrix& a, std::int64_t n, bool complex) {
    const std::int64_t m = complex ? 2 * n : n;
    std::vector<double> s(std::size_t(m * m));
    const auto at = [&](std::int64_t i, std::int64_t j) -> double& { return s[std::size_t(i * m + j)]; };
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            const cd v = a[std::size_t(i * n + j)];
            at(i, j) = v.real();
            if (complex) {
                at(i + n, j + n) = v.real();
                at(i, j + n) = -v.imag();
                at(i + n, j) = v.imag();
            }
        }
    double norm = 0;
    for (const double v : s) norm += v * v;
    for (int sweep = 0; sweep < 100; ++sweep) {
        double off = 0;
        for (std::int64_t p = 0; p < m; ++p)
            for (std::int64_t q = p + 1; q < m; ++q) off += at(p, q) * at(p, q);
        if (off <= 1e-32 * norm) break;
        for (std::int64_t p = 0; p < m; ++p)
            for (std::int64_t q = p + 1; q < m; ++q) {
                if (at(p, q) == 0.0) continue;
                // The rotation that zeroes (p, q): A' = Jᵀ·A·J, J = [[c, s], [-s, c]] in rows/columns p, q.
                const double theta = (at(q, q) - at(p, p)) / (2.0 * at(p, q));
                const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1.0));
                const double c = 1.0 / std::sqrt(t * t + 1.0), sn = t * c;
                for (std::int64_t r = 0; r < m; ++r) {
                    const double rp = at(r, p), rq = at(r, q);
                    at(r, p) = c * rp - sn * rq;
                    at(r, q) = sn * rp + c * rq;
                }
                for (std::int64_t r = 0; r < m; ++r) {
                    const double pr = at(p, r), qr = at(q, r);
                    at(p, r) = c * pr - sn * qr;
                    at(q, r) = sn * pr + c * qr;
                }
            }
    }
    std::vector<double> all(static_cast<std::size_t>(m));
    for (std::int64_t i = 0; i < m; ++i) all[std::size_t(i)] = at(i, i);
    std::sort(all.begin(), all.end());
    if (!complex) return all;
    std::vector<double> values(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
        values[std::size_t(i)] = 0.5 * (all[std::size_t(2 * i)] + all[std::size_t(2 * i + 1)]);
    return values;
}

/// A Hermitian matrix Q·diag(lambda)·Qᴴ with a random unitary (real: orthogonal) Q.
template <class T>
Matrix with_spectrum(const std::vector<double>& lambda, std::mt19937_64& rng) {
    const auto n = std::int64_t(lambda.size());
    std::uniform_real_distribution<double> u(-1, 1);
    Matrix q(std::size_t(n * n));
    for (auto& v : q) v = is_complex<T> ? cd(u(rng), u(rng)) : cd(u(rng), 0);
    for (std::int64_t j = 0; j < n; ++j) {  // Gram–Schmidt on the columns, twice for accuracy
        for (int pass = 0; pass < 2; ++pass)
            for (std::int64_t p = 0; p < j; ++p) {
                cd dot = 0;
                for (std::int64_t i = 0; i < n; ++i)
                    dot += std::conj(q[std::size_t(i * n + p)]) * q[std::size_t(i * n + j)];
                for (std::int64_t i = 0; i < n; ++i) q[std::size_t(i * n + j)] -= dot * q[std::size_t(i * n + p)];
            }
        double norm = 0;
        for (std::int64_t i = 0; i < n; ++i) norm += std::norm(q[std::size_t(i * n + j)]);
        for (std::int64_t i = 0; i < n; ++i) q[std::size_t(i * n + j)] /= std::sqrt(norm);
    }
    Matrix a(std::size_t(n * n));
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j <= i; ++j) {
            cd v = 0;
            for (std::int64_t p = 0; p < n; ++p)
                v += q[std::size_t(i * n + p)] * lambda[std::size_t(p)] * std::conj(q[std::size_t(j * n + p)]);
            if (i == j) v = cd(v.real(), 0);
            a[std::size_t(i * n + j)] = v;
            a[std::size_t(j * n + i)] = std::conj(v);
        }
    return a;
}

/// `ref` with the triangle that must not be read set to 1e30.
Matrix poisoned(Matrix m, std::int64_t n, Triangle tri) {
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j)
            if (tri == Triangle::lower ? j > i : j < i) m[std::size_t(i * n + j)] = cd(1e30, 0);
    return m;
}

/// Checks that the n × k columns `v` are eigenvectors of `a` for `lambda` (‖A·V − V·Λ‖/‖A‖) and
/// orthonormal (‖Vᴴ·V − I‖).
template <class T>
void check_vectors(const Matrix& a, const Matrix& v, const std::vector<double>& lambda, std::int64_t n, std::int64_t k,
                   const std::string& what) {
    const Matrix av = product(a, v, n, k, n);
    Matrix d(av.size());
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < k; ++j)
            d[std::size_t(i * k + j)] = av[std::size_t(i * k + j)] - v[std::size_t(i * k + j)] * lambda[std::size_t(j)];
    EXPECT_LE(frobenius(d) / std::max(frobenius(a), 1e-30), tolerance<T>(n)) << what << ": A·V − V·Λ";
    Matrix g(std::size_t(k * k));
    for (std::int64_t p = 0; p < k; ++p)
        for (std::int64_t q = 0; q < k; ++q) {
            cd s = 0;
            for (std::int64_t i = 0; i < n; ++i) s += std::conj(v[std::size_t(i * k + p)]) * v[std::size_t(i * k + q)];
            g[std::size_t(p * k + q)] = s - (p == q ? 1.0 : 0.0);
        }
    EXPECT_LE(frobenius(g), tolerance<T>(n)) << what << ": Vᴴ·V − I";
}

template <class T>
std::string label(const char* test, std::int64_t n, int layout, bool vectors) {
    return std::string(test) + " " + std::string(to_string(data_type_of<T>())) + " n " + std::to_string(n) +
           " layout " + std::to_string(layout) + (vectors ? " vectors" : " values");
}

// --- EighRange::index -----------------------------------------------------------------------

template <class T>
void index_ranges() {
    using R = typename Real<T>::type;
    auto rng = test::rng_for_test();
    for (const std::int64_t count : {1, 3})
        for (const std::int64_t n : {1, 6, 20}) {
            std::vector<std::pair<std::int64_t, std::int64_t>> ranges{{0, 0}, {n - 1, n - 1}, {0, n - 1}};
            if (n >= 3) ranges.emplace_back(1, n - 2);
            for (const auto& [first, last] : ranges)
                for (const bool vectors : {true, false})
                    for (int layout = 0; layout < 3; ++layout) {
                        const std::int64_t k = last - first + 1;
                        const std::string what = label<T>("index", n, layout, vectors) + " count " +
                                                 std::to_string(count) + " range " + std::to_string(first) + ".." +
                                                 std::to_string(last);
                        // 0: row-major A and V, packed values; 1: column-major A, column-major
                        // padded V, values with a stride of 2; 2: row-major A with a padded row,
                        // column-major V.
                        const Triangle tri = layout == 1 ? Triangle::upper : Triangle::lower;
                        Batch<T> a = Batch<T>::make(count, n, n, layout == 1, layout == 2 ? 3 : 0);
                        std::vector<Matrix> ref;
                        std::vector<std::vector<double>> spectra;
                        for (std::int64_t b = 0; b < count; ++b) {
                            ref.push_back(hermitian<T>(n, rng, false));
                            spectra.push_back(host_eigenvalues(ref.back(), n, is_complex<T>));
                            a.set(b, poisoned(ref.back(), n, tri));
                        }
                        a.upload();
                        Batch<T> v = Batch<T>::make(count, n, k, layout != 0, layout == 1 ? 2 : 0);
                        Batch<R> w = Batch<R>::make(count, k, 1, false, layout == 1 ? 1 : 0);  // NaN-poisoned
                        const Backend backend = layout == 2 ? Backend::automatic : Backend::looped;
                        Eigh plan(a.view().layout(), {.triangle = tri,
                                                      .vectors = vectors,
                                                      .backend = backend,
                                                      .range = EighRange::index,
                                                      .first = first,
                                                      .last = last});
                        ASSERT_EQ(plan.values_layout(), TensorLayout(data_type_of<R>(), {count, k})) << what;
                        ASSERT_EQ(plan.vectors_layout(), TensorLayout(data_type_of<T>(), {count, n, k})) << what;
                        Tensor info = Tensor::empty(DataType::i32, {count});
                        fill(info, -7);
                        plan.execute(a.view(), w.vector_view(), vectors ? v.view() : TensorView(), info);
                        EXPECT_EQ(plan.backend(), Backend::looped) << what;
                        EXPECT_EQ(infos(info), std::vector<int>(std::size_t(count), 0)) << what;
                        w.download();
                        if (vectors) v.download();
                        for (std::int64_t b = 0; b < count; ++b) {
                            const Matrix& A = ref[std::size_t(b)];
                            const double scale = std::max(frobenius(A), 1.0);
                            std::vector<double> lambda(static_cast<std::size_t>(k));
                            for (std::int64_t j = 0; j < k; ++j) {
                                lambda[std::size_t(j)] = double(w.at(b, j, 0));
                                EXPECT_NEAR(lambda[std::size_t(j)], spectra[std::size_t(b)][std::size_t(first + j)],
                                            tolerance<T>(n) * scale)
                                    << what << " matrix " << b << " value " << j;
                            }
                            if (vectors) check_vectors<T>(A, v.get(b), lambda, n, k, what);
                        }
                    }
        }
}

TEST(LinalgEighRangeGpu, IndexRangesF32) {
    GPUMATH_REQUIRE_GPU();
    index_ranges<float>();
}
TEST(LinalgEighRangeGpu, IndexRangesF64) {
    GPUMATH_REQUIRE_GPU();
    index_ranges<double>();
}
TEST(LinalgEighRangeGpu, IndexRangesC32) {
    GPUMATH_REQUIRE_GPU();
    index_ranges<std::complex<float>>();
}
TEST(LinalgEighRangeGpu, IndexRangesC64) {
    GPUMATH_REQUIRE_GPU();
    index_ranges<std::complex<double>>();
}

// --- EighRange::value -----------------------------------------------------------------------

/// The spectrum of matrix b of a value-range test: n values spaced b + 1 apart, shifted by 0.1·b,
/// none within 0.3 of the bounds -1.55 and 2.45 (for b < 3), so each matrix has its own count.
std::vector<double> spaced_spectrum(std::int64_t n, std::int64_t b) {
    std::vector<double> lambda(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) lambda[std::size_t(i)] = double(i - n / 2) * double(b + 1) + 0.1 * double(b);
    return lambda;
}

template <class T>
void value_ranges() {
    using R = typename Real<T>::type;
    auto rng = test::rng_for_test();
    const std::int64_t count = 3;
    const double low = -1.55, high = 2.45;
    for (const std::int64_t n : {1, 8, 17})
        for (const bool vectors : {true, false})
            for (int layout = 0; layout < 3; ++layout) {
                const std::string what = label<T>("value", n, layout, vectors);
                // 0: row-major A and V (through workspace), packed values; 1: column-major A
                // decomposed in place (vectors = a), packed values; 2: row-major A, padded
                // column-major V and values with a stride of 3 (through workspace).
                const Triangle tri = layout == 2 ? Triangle::upper : Triangle::lower;
                Batch<T> a = Batch<T>::make(count, n, n, layout == 1);
                std::vector<Matrix> ref;
                std::vector<std::vector<double>> expected;
                for (std::int64_t b = 0; b < count; ++b) {
                    const std::vector<double> lambda = spaced_spectrum(n, b);
                    ref.push_back(with_spectrum<T>(lambda, rng));
                    std::vector<double> inside;
                    for (const double l : lambda)
                        if (l > low && l <= high) inside.push_back(l);
                    expected.push_back(inside);
                    a.set(b, poisoned(ref.back(), n, tri));
                }
                a.upload();
                Batch<T> vm = Batch<T>::make(count, n, n, layout == 2, layout == 2 ? 2 : 0);
                Batch<T>& v = layout == 1 ? a : vm;
                Batch<R> w = Batch<R>::make(count, n, 1, false, layout == 2 ? 2 : 0);
                // Poisoned with a number: NaN past the counts must be written.
                fill(w.storage, 7.0);
                if (layout != 1) fill(vm.storage, 7.0);
                Eigh plan(a.view().layout(),
                          {.triangle = tri, .vectors = vectors, .range = EighRange::value, .low = low, .high = high});
                Tensor info = Tensor::empty(DataType::i32, {count});
                Tensor counts = Tensor::empty(DataType::i32, {count});
                fill(info, -7);
                fill(counts, -7);
                plan.execute(a.view(), w.vector_view(), vectors ? v.view() : TensorView(), info, counts);
                EXPECT_EQ(infos(info), std::vector<int>(std::size_t(count), 0)) << what;
                const std::vector<int> found = counts.to_host<int>();
                w.download();
                if (vectors) v.download();
                for (std::int64_t b = 0; b < count; ++b) {
                    const auto& want = expected[std::size_t(b)];
                    const auto c = std::int64_t(want.size());
                    ASSERT_EQ(found[std::size_t(b)], int(c)) << what << " matrix " << b;
                    const double scale = std::max(frobenius(ref[std::size_t(b)]), 1.0);
                    for (std::int64_t j = 0; j < c; ++j)
                        EXPECT_NEAR(double(w.at(b, j, 0)), want[std::size_t(j)], tolerance<T>(n) * scale)
                            << what << " matrix " << b << " value " << j;
                    for (std::int64_t j = c; j < n; ++j)
                        EXPECT_TRUE(std::isnan(double(w.at(b, j, 0)))) << what << " matrix " << b << " value " << j;
                    if (!vectors) continue;
                    const Matrix all = v.get(b);
                    Matrix kept(std::size_t(n * c));
                    for (std::int64_t i = 0; i < n; ++i)
                        for (std::int64_t j = 0; j < n; ++j) {
                            const cd x = all[std::size_t(i * n + j)];
                            if (j < c) {
                                kept[std::size_t(i * c + j)] = x;
                            } else {
                                EXPECT_TRUE(std::isnan(x.real()))
                                    << what << " matrix " << b << " (" << i << ", " << j << ")";
                                if (is_complex<T>) {
                                    EXPECT_TRUE(std::isnan(x.imag())) << what;
                                }
                            }
                        }
                    if (c > 0) check_vectors<T>(ref[std::size_t(b)], kept, want, n, c, what);
                }
            }
}

TEST(LinalgEighRangeGpu, ValueRangesF32) {
    GPUMATH_REQUIRE_GPU();
    value_ranges<float>();
}
TEST(LinalgEighRangeGpu, ValueRangesF64) {
    GPUMATH_REQUIRE_GPU();
    value_ranges<double>();
}
TEST(LinalgEighRangeGpu, ValueRangesC32) {
    GPUMATH_REQUIRE_GPU();
    value_ranges<std::complex<float>>();
}
TEST(LinalgEighRangeGpu, ValueRangesC64) {
    GPUMATH_REQUIRE_GPU();
    value_ranges<std::complex<double>>();
}

TEST(LinalgEighRangeGpu, AnIntervalWithNoEigenvalueGivesCountsOf0AndNaN) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const std::int64_t count = 2, n = 6;
    Batch<double> a = Batch<double>::make(count, n, n, false);
    for (std::int64_t b = 0; b < count; ++b) a.set(b, with_spectrum<double>(spaced_spectrum(n, b), rng));
    a.upload();
    Batch<double> v = Batch<double>::make(count, n, n, false);
    Batch<double> w = Batch<double>::make(count, n, 1, false);
    fill(v.storage, 7.0);
    fill(w.storage, 7.0);
    Eigh plan(a.view().layout(), {.range = EighRange::value, .low = 100.0, .high = 200.0});
    Tensor info = Tensor::empty(DataType::i32, {count});
    Tensor counts = Tensor::empty(DataType::i32, {count});
    fill(counts, -7);
    plan.execute(a.view(), w.vector_view(), v.view(), info, counts);
    EXPECT_EQ(infos(info), std::vector<int>(std::size_t(count), 0));
    EXPECT_EQ(counts.to_host<int>(), std::vector<int>(std::size_t(count), 0));
    w.download();
    v.download();
    for (std::int64_t b = 0; b < count; ++b)
        for (std::int64_t i = 0; i < n; ++i) {
            EXPECT_TRUE(std::isnan(w.at(b, i, 0))) << b << " " << i;
            for (std::int64_t j = 0; j < n; ++j) EXPECT_TRUE(std::isnan(v.at(b, i, j))) << b << " " << i << " " << j;
        }
    // The stateless call carries the counts.
    const EighResult r = eigh(a.view(), {.vectors = false, .range = EighRange::value, .low = 100.0, .high = 200.0});
    r.check();
    EXPECT_EQ(r.counts.to_host<int>(), std::vector<int>(std::size_t(count), 0));
    EXPECT_FALSE(r.vectors.has_data());
}

TEST(LinalgEighRangeGpu, StatelessEighTakesRanges) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const std::int64_t count = 3, n = 8;
    Batch<std::complex<double>> a = Batch<std::complex<double>>::make(count, n, n, false);
    std::vector<Matrix> ref;
    for (std::int64_t b = 0; b < count; ++b) {
        ref.push_back(with_spectrum<std::complex<double>>(spaced_spectrum(n, b), rng));
        a.set(b, ref.back());
    }
    a.upload();
    const EighResult index = eigh(a.view(), {.range = EighRange::index, .first = 2, .last = 4});
    index.check();
    EXPECT_FALSE(index.counts.has_data());
    ASSERT_EQ(index.values.layout(), TensorLayout(DataType::f64, {count, 3}));
    ASSERT_EQ(index.vectors.layout(), TensorLayout(DataType::c64, {count, n, 3}));
    const std::vector<double> values = index.values.to_host<double>();
    const std::vector<std::complex<double>> vectors = index.vectors.to_host<std::complex<double>>();
    for (std::int64_t b = 0; b < count; ++b) {
        const std::vector<double> lambda = spaced_spectrum(n, b);
        std::vector<double> got(3);
        Matrix v(std::size_t(n * 3));
        for (std::int64_t j = 0; j < 3; ++j) {
            got[std::size_t(j)] = values[std::size_t(b * 3 + j)];
            EXPECT_NEAR(got[std::size_t(j)], lambda[std::size_t(2 + j)], 1e-10 * double(n) * double(b + 1));
        }
        for (std::int64_t i = 0; i < n * 3; ++i) v[std::size_t(i)] = vectors[std::size_t(b * n * 3 + i)];
        check_vectors<std::complex<double>>(ref[std::size_t(b)], v, got, n, 3, "stateless index");
    }
    const EighResult value = eigh(a.view(), {.range = EighRange::value, .low = -1.55, .high = 2.45});
    value.check();
    EXPECT_EQ(value.counts.to_host<int>(), (std::vector<int>{4, 2, 1}));
}

TEST(LinalgEighRangeGpu, RangesRefuseACapturingStream) {
    GPUMATH_REQUIRE_GPU();
    const std::int64_t count = 2, n = 4;
    Batch<float> a = Batch<float>::make(count, n, n, false);
    a.upload();
    Batch<float> w = Batch<float>::make(count, 2, 1, false);
    Tensor info = Tensor::empty(DataType::i32, {count});
    Eigh plan(a.view().layout(), {.vectors = false, .range = EighRange::index, .first = 0, .last = 1});
    plan.plan();
    const core::Stream stream;
    test::expect_throw_with<NotSupported>(
        [&] {
            core::Graph g = core::Graph::capture(
                stream, [&](core::StreamRef) { plan.execute(a.view(), w.vector_view(), TensorView(), info, stream); });
        },
        {"linalg::Eigh::execute", "capturing", "Xsyevdx"});
}

// --- Backend::jacobi_batched ----------------------------------------------------------------

template <class T>
void jacobi_batched() {
    using R = typename Real<T>::type;
    auto rng = test::rng_for_test();
    for (const std::int64_t count : {1, 4})
        for (const std::int64_t n : {3, 16, 32})
            for (const bool vectors : {true, false})
                for (int layout = 0; layout < 3; ++layout) {
                    const std::string what =
                        label<T>("jacobi_batched", n, layout, vectors) + " count " + std::to_string(count);
                    // 0: row-major A and V (through workspace); 1: column-major A decomposed in
                    // place (vectors = a); 2: row-major A, padded column-major V and values with a
                    // stride of 2 (through workspace).
                    const Triangle tri = layout == 2 ? Triangle::upper : Triangle::lower;
                    Batch<T> a = Batch<T>::make(count, n, n, layout == 1);
                    std::vector<Matrix> ref;
                    std::vector<std::vector<double>> spectra;
                    for (std::int64_t b = 0; b < count; ++b) {
                        ref.push_back(hermitian<T>(n, rng, false));
                        spectra.push_back(host_eigenvalues(ref.back(), n, is_complex<T>));
                        a.set(b, poisoned(ref.back(), n, tri));
                    }
                    a.upload();
                    Batch<T> vm = Batch<T>::make(count, n, n, layout == 2, layout == 2 ? 2 : 0);
                    Batch<T>& v = layout == 1 ? a : vm;
                    Batch<R> w = Batch<R>::make(count, n, 1, false, layout == 2 ? 1 : 0);
                    Eigh plan(a.view().layout(),
                              {.triangle = tri, .vectors = vectors, .backend = Backend::jacobi_batched});
                    Tensor info = Tensor::empty(DataType::i32, {count});
                    fill(info, -7);
                    plan.execute(a.view(), w.vector_view(), vectors ? v.view() : TensorView(), info);
                    EXPECT_EQ(plan.backend(), Backend::jacobi_batched) << what;
                    EXPECT_EQ(infos(info), std::vector<int>(std::size_t(count), 0)) << what;
                    w.download();
                    if (vectors) v.download();
                    for (std::int64_t b = 0; b < count; ++b) {
                        const Matrix& A = ref[std::size_t(b)];
                        std::vector<double> lambda(static_cast<std::size_t>(n));
                        for (std::int64_t j = 0; j < n; ++j) {
                            lambda[std::size_t(j)] = double(w.at(b, j, 0));
                            EXPECT_NEAR(lambda[std::size_t(j)], spectra[std::size_t(b)][std::size_t(j)],
                                        tolerance<T>(n) * std::max(frobenius(A), 1.0))
                                << what << " matrix " << b << " value " << j;
                        }
                        if (vectors) check_vectors<T>(A, v.get(b), lambda, n, n, what);
                    }
                }
}

TEST(LinalgEighRangeGpu, JacobiBatchedF32) {
    GPUMATH_REQUIRE_GPU();
    jacobi_batched<float>();
}
TEST(LinalgEighRangeGpu, JacobiBatchedF64) {
    GPUMATH_REQUIRE_GPU();
    jacobi_batched<double>();
}
TEST(LinalgEighRangeGpu, JacobiBatchedC32) {
    GPUMATH_REQUIRE_GPU();
    jacobi_batched<std::complex<float>>();
}
TEST(LinalgEighRangeGpu, JacobiBatchedC64) {
    GPUMATH_REQUIRE_GPU();
    jacobi_batched<std::complex<double>>();
}

TEST(LinalgEighRangeGpu, JacobiBatchedReplaysFromACapturedGraph) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const std::int64_t count = 6, n = 12;
    using T = std::complex<float>;
    Batch<T> a = Batch<T>::make(count, n, n, false);
    a.upload();
    Batch<T> v = Batch<T>::make(count, n, n, false);  // row-major: through workspace
    Batch<float> w = Batch<float>::make(count, n, 1, false);
    Tensor info = Tensor::empty(DataType::i32, {count});
    Eigh plan(a.view().layout(), {.backend = Backend::jacobi_batched});
    plan.plan();
    const core::Stream stream;
    core::Graph graph = core::Graph::capture(
        stream, [&](core::StreamRef) { plan.execute(a.view(), w.vector_view(), v.view(), info, stream); });
    for (int round = 0; round < 2; ++round) {
        std::vector<Matrix> ref;
        for (std::int64_t b = 0; b < count; ++b) {
            ref.push_back(hermitian<T>(n, rng, false));
            a.set(b, ref.back());
        }
        // New matrices into the captured buffer, poisoned outputs.
        copy(Tensor::from_host(a.host, {std::int64_t(a.host.size())}), a.storage, stream);
        fill(w.storage, std::numeric_limits<double>::quiet_NaN(), stream);
        fill(v.storage, std::complex<double>(std::nan(""), std::nan("")), stream);
        fill(info, -7, stream);
        graph.launch(stream);
        stream.synchronize();
        w.download();
        v.download();
        EXPECT_EQ(infos(info), std::vector<int>(std::size_t(count), 0)) << "round " << round;
        for (std::int64_t b = 0; b < count; ++b) {
            const std::vector<double> spectrum = host_eigenvalues(ref[std::size_t(b)], n, true);
            std::vector<double> lambda(static_cast<std::size_t>(n));
            for (std::int64_t j = 0; j < n; ++j) {
                lambda[std::size_t(j)] = double(w.at(b, j, 0));
                EXPECT_NEAR(lambda[std::size_t(j)], spectrum[std::size_t(j)],
                            tolerance<T>(n) * frobenius(ref[std::size_t(b)]))
                    << "round " << round << " matrix " << b;
            }
            check_vectors<T>(ref[std::size_t(b)], v.get(b), lambda, n, n, "replay");
        }
    }
}

TEST(LinalgEighRangeGpu, AutomaticMeasuresJacobiBatchedBesideTheOthers) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const std::int64_t count = 64, n = 8;
    Batch<double> a = Batch<double>::make(count, n, n, false);
    std::vector<Matrix> ref;
    for (std::int64_t b = 0; b < count; ++b) {
        ref.push_back(hermitian<double>(n, rng, false));
        a.set(b, ref.back());
    }
    a.upload();
    Eigh plan(a.view().layout(), {.vectors = false});
    plan.plan();
    const Backend chosen = plan.backend();
    EXPECT_TRUE(chosen == Backend::looped || chosen == Backend::batched || chosen == Backend::warp ||
                chosen == Backend::jacobi_batched)
        << to_string(chosen);
    Batch<double> w = Batch<double>::make(count, n, 1, false);
    Tensor info = Tensor::empty(DataType::i32, {count});
    plan.execute(a.view(), w.vector_view(), TensorView(), info);
    EXPECT_EQ(infos(info), std::vector<int>(std::size_t(count), 0));
    w.download();
    for (std::int64_t b = 0; b < count; ++b) {
        const std::vector<double> spectrum = host_eigenvalues(ref[std::size_t(b)], n, false);
        for (std::int64_t j = 0; j < n; ++j)
            EXPECT_NEAR(w.at(b, j, 0), spectrum[std::size_t(j)], tolerance<double>(n) * frobenius(ref[std::size_t(b)]))
                << to_string(chosen) << " matrix " << b;
    }
}

}  // namespace
}  // namespace gpumath::linalg
