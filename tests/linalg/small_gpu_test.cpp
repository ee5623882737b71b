// SPDX-License-Identifier: Apache-2.0
// Backend::warp (gpumath's small-matrix kernels) on the GPU against host references that do not use
// gpumath: ‖A − L·Lᴴ‖/‖A‖, ‖P·A − L·U‖/‖A‖ with the pivots, ‖A·V − V·Λ‖/‖A‖ and ‖Vᴴ·V − I‖ with
// ascending values, for n in {1, 2, 3, 4, 7, 16, 31, 32}, every dtype, row- and column-major,
// padded and gapped operands, batch dimensions without one stride, poisoned outputs; the same
// results as the looped backend; indefinite and singular matrices through info; capture and replay.
#include <gpumath/linalg.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <fstream>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include <gpumath/core/device.hpp>
#include <gpumath/core/graph.hpp>
#include <gpumath/tensor.hpp>
#include <gpumath/tensor_ops.hpp>

#include "common/test_util.hpp"
#include "linalg/reference.hpp"

namespace gpumath::linalg {
namespace {

using namespace reference;  // NOLINT(google-build-using-namespace): the test's vocabulary

constexpr std::int64_t orders[] = {1, 2, 3, 4, 7, 16, 31, 32};
constexpr std::int64_t batch = 100;

Matrix difference(const Matrix& a, const Matrix& b) {
    Matrix d(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
    return d;
}

Matrix transpose(const Matrix& m, std::int64_t n) {
    Matrix t(m.size());
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j) t[std::size_t(j * n + i)] = m[std::size_t(i * n + j)];
    return t;
}

/// `m` with the triangle strictly above (`upper`) or below the diagonal set to zero.
Matrix without_triangle(Matrix m, std::int64_t n, bool upper) {
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j)
            if (upper ? j > i : j < i) m[std::size_t(i * n + j)] = 0;
    return m;
}

/// A well-conditioned matrix that needs pivoting: a diagonally dominant one with its rows permuted.
template <class T>
Matrix permuted_dominant(std::int64_t n, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> u(-1, 1);
    Matrix d(std::size_t(n * n));
    for (auto& v : d) v = is_complex<T> ? cd(u(rng), u(rng)) : cd(u(rng), 0);
    for (std::int64_t i = 0; i < n; ++i) d[std::size_t(i * n + i)] += cd(2.0 * double(n) * (u(rng) < 0 ? -1 : 1), 0);
    std::vector<std::int64_t> rows(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) rows[std::size_t(i)] = i;
    std::shuffle(rows.begin(), rows.end(), rng);
    Matrix a(d.size());
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j) a[std::size_t(i * n + j)] = d[std::size_t(rows[std::size_t(i)] * n + j)];
    return a;
}

template <class T>
void fill_batch(Batch<T>& m, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> u(-1, 1);
    for (std::int64_t b = 0; b < m.count; ++b)
        for (std::int64_t i = 0; i < m.rows; ++i)
            for (std::int64_t j = 0; j < m.cols; ++j) m.at(b, i, j) = from<T>(cd(u(rng), is_complex<T> ? u(rng) : 0));
}

// ---------------------------------------------------------------------------------------------
// Cholesky

template <class T>
void cholesky_small() {
    auto rng = test::rng_for_test();
    for (const std::int64_t n : orders)
        for (const Triangle tri : {Triangle::lower, Triangle::upper})
            for (int layout = 0; layout < 3; ++layout) {
                const std::string what =
                    "n " + std::to_string(n) + " " + std::string(to_string(tri)) + " layout " + std::to_string(layout);
                SCOPED_TRACE(what);
                const bool upper = tri == Triangle::upper;
                // 0: row-major A into a row-major factor; 1: column-major, in place; 2: row-major A
                // into a padded column-major factor with gaps between elements.
                Batch<T> a = Batch<T>::make(batch, n, n, layout == 1);
                std::vector<Matrix> ref;
                for (std::int64_t b = 0; b < batch; ++b) {
                    ref.push_back(hermitian<T>(n, rng, true));
                    a.set(b, ref.back());
                }
                a.upload();
                Batch<T> out =
                    layout == 2 ? Batch<T>::make(batch, n, n, true, 3, 2) : Batch<T>::make(batch, n, n, false);
                Batch<T>& factor = layout == 1 ? a : out;
                // The looped backend on the same input, for comparison (before a is overwritten).
                Batch<T> looped = Batch<T>::make(batch, n, n, false);
                Cholesky reference_plan(a.view().layout(), {.triangle = tri, .backend = Backend::looped});
                Tensor looped_info = Tensor::empty(DataType::i32, {batch});
                reference_plan.factorize(a.view(), looped.view(), looped_info);
                Cholesky plan(a.view().layout(), {.triangle = tri, .backend = Backend::warp});
                Tensor info = Tensor::empty(DataType::i32, {batch});
                fill(info, -7);  // poisoned
                plan.factorize(a.view(), factor.view(), info);
                factor.download();
                looped.download();
                ASSERT_EQ(infos(info), std::vector<int>(std::size_t(batch), 0));
                EXPECT_EQ(plan.backend(), Backend::warp);
                for (std::int64_t b = 0; b < batch; ++b) {
                    const Matrix& am = ref[std::size_t(b)];
                    const Matrix f = factor.get(b);
                    // The other triangle holds A's values: those stored there, or (where the kernel
                    // reads A transposed) the conjugates of their mirror images, which a Hermitian A
                    // made in floating point matches only to rounding.
                    for (std::int64_t i = 0; i < n; ++i)
                        for (std::int64_t j = 0; j < n; ++j) {
                            if (upper ? j < i : j > i) {
                                const auto got = f[std::size_t(i * n + j)];
                                const auto stored = cd(from<T>(am[std::size_t(i * n + j)]));
                                const auto mirrored = std::conj(cd(from<T>(am[std::size_t(j * n + i)])));
                                ASSERT_TRUE(got == stored || got == mirrored)
                                    << "matrix " << b << " (" << i << ", " << j << "): " << got << " is neither "
                                    << stored << " nor " << mirrored;
                            }
                        }
                    const Matrix t = without_triangle(f, n, !upper);
                    const Matrix r = upper ? product(adjoint(t, n), t, n, n, n) : product(t, adjoint(t, n), n, n, n);
                    ASSERT_LE(frobenius(difference(r, am)) / frobenius(am), tolerance<T>(n)) << "matrix " << b;
                    const Matrix l = without_triangle(looped.get(b), n, !upper);
                    ASSERT_LE(frobenius(difference(t, l)) / frobenius(l), tolerance<T>(n)) << "vs looped, matrix " << b;
                }
            }
}

TEST(LinalgSmallGpu, CholeskyF32) {
    GPUMATH_REQUIRE_GPU();
    cholesky_small<float>();
}
TEST(LinalgSmallGpu, CholeskyF64) {
    GPUMATH_REQUIRE_GPU();
    cholesky_small<double>();
}
TEST(LinalgSmallGpu, CholeskyC32) {
    GPUMATH_REQUIRE_GPU();
    cholesky_small<std::complex<float>>();
}
TEST(LinalgSmallGpu, CholeskyC64) {
    GPUMATH_REQUIRE_GPU();
    cholesky_small<std::complex<double>>();
}

TEST(LinalgSmallGpu, AnIndefiniteMatrixIsReportedAsTheLoopedBackendReportsIt) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const std::int64_t count = 5, n = 6;
    for (const Triangle tri : {Triangle::lower, Triangle::upper}) {
        Batch<double> a = Batch<double>::make(count, n, n, false);
        for (std::int64_t b = 0; b < count; ++b) a.set(b, hermitian<double>(n, rng, true));
        for (std::int64_t i = 0; i < n; ++i)  // the leading minor of order 4 is the first not positive
            for (std::int64_t j = 0; j < n; ++j) a.at(2, i, j) = i != j ? 0.0 : i < 3 ? 1.0 : -1.0;
        for (std::int64_t i = 0; i < n; ++i)  // A(0, 0) = 0
            for (std::int64_t j = 0; j < n; ++j) a.at(4, i, j) = i == j && i > 0 ? 2.0 : 0.0;
        a.upload();
        const CholeskyResult warp = cholesky(a.view(), {.triangle = tri, .backend = Backend::warp});
        const CholeskyResult looped = cholesky(a.view(), {.triangle = tri, .backend = Backend::looped});
        EXPECT_EQ(infos(warp.info), (std::vector<int>{0, 0, 4, 0, 1})) << to_string(tri);
        EXPECT_EQ(infos(warp.info), infos(looped.info)) << to_string(tri);
        try {
            warp.check();
            ADD_FAILURE() << "expected NumericalError";
        } catch (const NumericalError& e) {
            EXPECT_EQ(e.batch_index(), 2);
            EXPECT_EQ(e.info(), 4);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// LU

template <class T>
void lu_small() {
    auto rng = test::rng_for_test();
    for (const std::int64_t n : orders)
        for (int layout = 0; layout < 3; ++layout) {
            const std::string what = "n " + std::to_string(n) + " layout " + std::to_string(layout);
            SCOPED_TRACE(what);
            // 0: row-major A into a row-major lu (Aᵀ's factors); 1: column-major, in place; 2:
            // row-major A into a padded column-major lu (A's factors).
            Batch<T> a = Batch<T>::make(batch, n, n, layout == 1);
            std::vector<Matrix> ref;
            for (std::int64_t b = 0; b < batch; ++b) {
                ref.push_back(permuted_dominant<T>(n, rng));
                a.set(b, ref.back());
            }
            a.upload();
            Batch<T> out = layout == 2 ? Batch<T>::make(batch, n, n, true, 3) : Batch<T>::make(batch, n, n, false);
            Batch<T>& lu = layout == 1 ? a : out;
            const bool column_major = layout != 0;
            Batch<T> rhs = Batch<T>::make(batch, n, 2, false);
            fill_batch(rhs, rng);
            rhs.upload();
            // The looped backend's solution of the same systems.
            LU reference_plan(a.view().layout(), {.backend = Backend::looped});
            Batch<T> looped_lu = Batch<T>::make(batch, n, n, column_major);
            Tensor looped_pivots = Tensor::empty(reference_plan.pivots_layout());
            Tensor looped_info = Tensor::empty(reference_plan.info_layout());
            Batch<T> looped_x = Batch<T>::make(batch, n, 2, true);
            reference_plan.factorize(a.view(), looped_lu.view(), looped_pivots, looped_info);
            reference_plan.solve(looped_lu.view(), looped_pivots, rhs.view(), looped_x.view());

            LU plan(a.view().layout(), {.backend = Backend::warp});
            Tensor pivots = Tensor::empty(plan.pivots_layout());
            Tensor info = Tensor::empty(plan.info_layout());
            fill(info, -7);
            fill(pivots, -7);
            plan.factorize(a.view(), lu.view(), pivots, info);
            Batch<T> x = Batch<T>::make(batch, n, 2, true);
            plan.solve(lu.view(), pivots, rhs.view(), x.view());
            lu.download();
            x.download();
            looped_x.download();
            ASSERT_EQ(infos(info), std::vector<int>(std::size_t(batch), 0));
            EXPECT_EQ(plan.backend(), Backend::warp);
            const std::vector<int> piv = pivots.to_host<int>();
            for (std::int64_t b = 0; b < batch; ++b) {
                // The matrix factorized is lu's memory seen column-major: A, or Aᵀ for a row-major lu.
                const Matrix m = column_major ? ref[std::size_t(b)] : transpose(ref[std::size_t(b)], n);
                const Matrix f = column_major ? lu.get(b) : transpose(lu.get(b), n);
                // Infinite when a pivot lies outside [k + 1, n].
                ASSERT_LE(factor_error(m, f, piv.data() + b * n, n), tolerance<T>(n)) << "P·A = L·U, matrix " << b;
                const Matrix xs = x.get(b), xl = looped_x.get(b);
                const Matrix ax = product(ref[std::size_t(b)], xs, n, 2, n);
                ASSERT_LE(frobenius(difference(ax, rhs.get(b))) / (frobenius(ref[std::size_t(b)]) * frobenius(xs)),
                          tolerance<T>(n))
                    << "solve, matrix " << b;
                ASSERT_LE(frobenius(difference(xs, xl)) / frobenius(xl), 10 * tolerance<T>(n))
                    << "vs looped, matrix " << b;
            }
        }
}

TEST(LinalgSmallGpu, LUF32) {
    GPUMATH_REQUIRE_GPU();
    lu_small<float>();
}
TEST(LinalgSmallGpu, LUF64) {
    GPUMATH_REQUIRE_GPU();
    lu_small<double>();
}
TEST(LinalgSmallGpu, LUC32) {
    GPUMATH_REQUIRE_GPU();
    lu_small<std::complex<float>>();
}
TEST(LinalgSmallGpu, LUC64) {
    GPUMATH_REQUIRE_GPU();
    lu_small<std::complex<double>>();
}

TEST(LinalgSmallGpu, ASavedChoiceThePlanCannotRunIsMeasuredAgain) {
    GPUMATH_REQUIRE_GPU();
    // A hand-edited choices file names warp (n <= 32 only) and SVD's jacobi for plans of n = 40:
    // automatic must not run them, and the factors must be right.
    const std::int64_t n = 40, count = 6;
    std::string model = core::Device::current().properties().name;
    std::replace(model.begin(), model.end(), ' ', '_');
    const std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("gpumath_linalg_bad_choices_" + std::to_string(::getpid()));
    {
        std::ofstream out(path);
        out << "# gpumath linalg backend choices 1\n"
            << model << "\tcholesky\tf64\t" << n << '\t' << count << "\twarp\n"
            << model << "\tlu\tf64\t" << n << '\t' << count << "\tjacobi\n";
    }
    EXPECT_EQ(load_backend_choices(path.string()), 2U);
    std::filesystem::remove(path);
    auto rng = test::rng_for_test();
    std::vector<double> host;
    for (std::int64_t b = 0; b < count; ++b) {
        const Matrix m = hermitian<double>(n, rng, true);
        for (const cd& v : m) host.push_back(v.real());
    }
    const Tensor a = Tensor::from_host(host, {count, n, n});
    Cholesky plan(a.view().layout());
    plan.plan();
    EXPECT_NE(plan.backend(), Backend::warp);
    const CholeskyResult r = cholesky(a);
    r.check();
    const std::vector<double> l = r.factor.to_host<double>();
    for (std::int64_t b = 0; b < count; ++b) {
        Matrix f(std::size_t(n * n)), ref(std::size_t(n * n));
        for (std::size_t i = 0; i < f.size(); ++i) {
            f[i] = l[std::size_t(b * n * n) + i];
            ref[i] = host[std::size_t(b * n * n) + i];
        }
        const Matrix d = difference(product(f, adjoint(f, n), n, n, n), ref);
        EXPECT_LE(frobenius(d) / frobenius(ref), tolerance<double>(n)) << "matrix " << b;
    }
    LU lu(a.view().layout());
    lu.plan();
    EXPECT_NE(lu.backend(), Backend::jacobi);
}

TEST(LinalgSmallGpu, ASingularMatrixIsReportedAsTheLoopedBackendReportsIt) {
    GPUMATH_REQUIRE_GPU();
    const std::int64_t n = 4;
    // 0 invertible; 1 two equal rows; 2 zero; 3 first column zero.
    const std::vector<double> host = {2, 1, 0, 0, 1, 3, 1, 0, 0, 1, 4, 1, 0, 0, 1, 5,  //
                                      1, 2, 3, 4, 1, 2, 3, 4, 0, 1, 0, 1, 2, 0, 1, 0,  //
                                      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  //
                                      0, 1, 2, 3, 0, 4, 5, 6, 0, 7, 8, 1, 0, 2, 3, 4};
    const Tensor a = Tensor::from_host(host, {4, n, n});
    const Tensor b = Tensor::from_host(std::vector<double>(16, 1.0), {4, n});
    const SolveResult warp = solve(a, b, {.backend = Backend::warp});
    const SolveResult looped = solve(a, b, {.backend = Backend::looped});
    const std::vector<int> info = infos(warp.info);
    EXPECT_EQ(info[0], 0);
    EXPECT_GT(info[1], 0);
    EXPECT_EQ(info[2], 1);
    // Row-major A is factorized as Aᵀ (docs/linalg.md), whose zero row is eliminated last: both
    // backends report the singularity, at the same step.
    EXPECT_GT(info[3], 0);
    EXPECT_EQ(info, infos(looped.info));
    const std::vector<double> d = det(a, {.backend = Backend::warp}).to_host<double>();
    const std::vector<double> dl = det(a, {.backend = Backend::looped}).to_host<double>();
    EXPECT_NEAR(d[0], dl[0], 1e-12 * std::abs(dl[0]));
    EXPECT_EQ(d[1], 0.0);
    EXPECT_EQ(d[2], 0.0);
    EXPECT_EQ(d[3], 0.0);
    try {
        warp.check();
        ADD_FAILURE() << "expected NumericalError";
    } catch (const NumericalError& e) {
        EXPECT_EQ(e.batch_index(), 1);
    }
}

// ---------------------------------------------------------------------------------------------
// Eigh

template <class T>
void check_eigen(const Matrix& a, const std::vector<double>& lambda, const Matrix* v, std::int64_t n,
                 const std::string& what) {
    ASSERT_TRUE(std::is_sorted(lambda.begin(), lambda.end())) << what;
    const double norm = std::max(frobenius(a), 1e-30);
    double trace = 0, sum = 0;
    for (std::int64_t i = 0; i < n; ++i) {
        trace += a[std::size_t(i * n + i)].real();
        sum += lambda[std::size_t(i)];
    }
    ASSERT_NEAR(sum, trace, tolerance<T>(n) * norm * double(n)) << what;
    if (v == nullptr) return;
    const Matrix av = product(a, *v, n, n, n);
    Matrix d(av.size());
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j)
            d[std::size_t(i * n + j)] =
                av[std::size_t(i * n + j)] - (*v)[std::size_t(i * n + j)] * lambda[std::size_t(j)];
    ASSERT_LE(frobenius(d) / norm, tolerance<T>(n)) << what << ": A·V − V·Λ";
    Matrix g = product(adjoint(*v, n), *v, n, n, n);
    for (std::int64_t i = 0; i < n; ++i) g[std::size_t(i * n + i)] -= 1.0;
    ASSERT_LE(frobenius(g), tolerance<T>(n)) << what << ": Vᴴ·V − I";
}

template <class T>
void eigh_small() {
    using R = typename Real<T>::type;
    auto rng = test::rng_for_test();
    for (const std::int64_t n : orders)
        for (int layout = 0; layout < 4; ++layout) {
            const std::string what = "n " + std::to_string(n) + " layout " + std::to_string(layout);
            SCOPED_TRACE(what);
            // 0: row-major A, row-major vectors; 1: column-major A, vectors in place; 2: row-major
            // A (upper), padded column-major vectors with gaps; 3: values only.
            const bool vectors = layout != 3;
            const Triangle tri = layout == 2 ? Triangle::upper : Triangle::lower;
            Batch<T> a = Batch<T>::make(batch, n, n, layout == 1);
            std::vector<Matrix> ref;
            for (std::int64_t b = 0; b < batch; ++b) {
                ref.push_back(hermitian<T>(n, rng, false));
                Matrix stored = ref.back();
                for (std::int64_t i = 0; i < n; ++i)  // poison the triangle that must not be read
                    for (std::int64_t j = 0; j < n; ++j)
                        if (tri == Triangle::lower ? j > i : j < i) stored[std::size_t(i * n + j)] = cd(1e30, 0);
                a.set(b, stored);
            }
            a.upload();
            // The looped backend's values of the same matrices.
            Batch<R> looped_w = Batch<R>::make(batch, n, 1, false);
            Tensor looped_info = Tensor::empty(DataType::i32, {batch});
            Eigh reference_plan(a.view().layout(), {.triangle = tri, .vectors = false, .backend = Backend::looped});
            reference_plan.execute(a.view(), looped_w.vector_view(), TensorView(), looped_info);
            looped_w.download();

            Batch<T> vm = layout == 2 ? Batch<T>::make(batch, n, n, true, 2, 2) : Batch<T>::make(batch, n, n, false);
            Batch<T>& v = layout == 1 ? a : vm;
            Batch<R> w = Batch<R>::make(batch, n, 1, false, 1);  // padded: values a stride apart
            Eigh plan(a.view().layout(), {.triangle = tri, .vectors = vectors, .backend = Backend::warp});
            Tensor info = Tensor::empty(DataType::i32, {batch});
            fill(info, -7);
            plan.execute(a.view(), w.vector_view(), vectors ? v.view() : TensorView(), info);
            w.download();
            if (vectors) v.download();
            ASSERT_EQ(infos(info), std::vector<int>(std::size_t(batch), 0));
            ASSERT_EQ(infos(looped_info), std::vector<int>(std::size_t(batch), 0));
            for (std::int64_t b = 0; b < batch; ++b) {
                std::vector<double> lambda(static_cast<std::size_t>(n));
                for (std::int64_t i = 0; i < n; ++i) {
                    lambda[std::size_t(i)] = double(w.at(b, i, 0));
                    ASSERT_LE(std::abs(lambda[std::size_t(i)] - double(looped_w.at(b, i, 0))),
                              tolerance<T>(n) * frobenius(ref[std::size_t(b)]))
                        << "vs looped, matrix " << b << " value " << i;
                }
                const Matrix vs = vectors ? v.get(b) : Matrix();
                check_eigen<T>(ref[std::size_t(b)], lambda, vectors ? &vs : nullptr, n, "matrix " + std::to_string(b));
            }
        }
}

TEST(LinalgSmallGpu, EighF32) {
    GPUMATH_REQUIRE_GPU();
    eigh_small<float>();
}
TEST(LinalgSmallGpu, EighF64) {
    GPUMATH_REQUIRE_GPU();
    eigh_small<double>();
}
TEST(LinalgSmallGpu, EighC32) {
    GPUMATH_REQUIRE_GPU();
    eigh_small<std::complex<float>>();
}
TEST(LinalgSmallGpu, EighC64) {
    GPUMATH_REQUIRE_GPU();
    eigh_small<std::complex<double>>();
}

TEST(LinalgSmallGpu, EighOfMatricesWithRepeatedEigenvaluesAndOfNaNs) {
    GPUMATH_REQUIRE_GPU();
    const std::int64_t n = 8;
    // 0: the identity; 1: zero; 2: ones (eigenvalues 0 ×7 and 8); 3: NaN in A(3, 1).
    Batch<double> a = Batch<double>::make(4, n, n, false);
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            a.at(0, i, j) = i == j ? 1.0 : 0.0;
            a.at(1, i, j) = 0.0;
            a.at(2, i, j) = 1.0;
            a.at(3, i, j) = i == j ? 2.0 : 0.5;
        }
    a.at(3, 3, 1) = std::nan("");
    a.upload();
    const EighResult r = eigh(a.view(), {.backend = Backend::warp});
    const std::vector<int> info = infos(r.info);
    EXPECT_EQ(info[0], 0);
    EXPECT_EQ(info[1], 0);
    EXPECT_EQ(info[2], 0);
    EXPECT_GT(info[3], 0) << "NaN is not converged";
    const std::vector<double> w = r.values.to_host<double>();
    const std::vector<double> v = r.vectors.to_host<double>();
    for (std::int64_t b = 0; b < 3; ++b) {
        Matrix m(std::size_t(n * n)), vs(std::size_t(n * n));
        std::vector<double> lambda(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n * n; ++i) {
            m[std::size_t(i)] = a.host[std::size_t(b * n * n + i)];
            vs[std::size_t(i)] = v[std::size_t(b * n * n + i)];
        }
        for (std::int64_t i = 0; i < n; ++i) lambda[std::size_t(i)] = w[std::size_t(b * n + i)];
        check_eigen<double>(m, lambda, &vs, n, "matrix " + std::to_string(b));
    }
    EXPECT_NEAR(w[2 * n + n - 1], 8.0, 1e-13);
    EXPECT_NEAR(w[2 * n], 0.0, 1e-13);
}

// ---------------------------------------------------------------------------------------------
// Batches, stateless calls, automatic, capture

/// (3, 4) matrices whose batch dimensions have no one stride: groups of 4 with a gap after each.
template <class T>
struct Grouped {
    static constexpr std::int64_t groups = 3, per_group = 4, count = groups * per_group;
    std::int64_t n;
    std::vector<T> host;
    Tensor storage;
    explicit Grouped(std::int64_t n_)
        : n(n_), host(std::size_t(groups * (per_group + 1) * n_ * n_), from<T>(cd(std::nan(""), 0))) {
        storage = Tensor::from_host(host, {std::int64_t(host.size())});
    }
    [[nodiscard]] TensorView view(bool column_major) const {
        const std::int64_t nn = n * n;
        return {storage.data(),
                data_type_of<T>(),
                {groups, per_group, n, n},
                {(per_group + 1) * nn, nn, column_major ? 1 : n, column_major ? n : 1}};
    }
    std::size_t offset(std::int64_t b) const {
        return std::size_t((b / per_group * (per_group + 1) + b % per_group) * n * n);
    }
};

TEST(LinalgSmallGpu, BatchDimensionsWithoutOneStrideAreReadAndWrittenWhereTheyAre) {
    GPUMATH_REQUIRE_GPU();
    using T = std::complex<double>;
    auto rng = test::rng_for_test();
    const std::int64_t n = 5;
    Grouped<T> a(n);
    std::vector<Matrix> ref;
    for (std::int64_t b = 0; b < Grouped<T>::count; ++b) {
        ref.push_back(hermitian<T>(n, rng, true));
        for (std::int64_t i = 0; i < n; ++i)
            for (std::int64_t j = 0; j < n; ++j)
                a.host[a.offset(b) + std::size_t(i * n + j)] = ref.back()[std::size_t(i * n + j)];
    }
    a.storage = Tensor::from_host(a.host, {std::int64_t(a.host.size())});
    const TensorView av = a.view(false);
    // Cholesky into a column-major view of the same kind; eigh into grouped vectors.
    Grouped<T> f(n), v(n);
    Tensor info = Tensor::empty(DataType::i32, {Grouped<T>::groups, Grouped<T>::per_group});
    Cholesky chol(av.layout(), {.backend = Backend::warp});
    chol.factorize(av, f.view(true), info);
    EXPECT_EQ(infos(info), std::vector<int>(std::size_t(Grouped<T>::count), 0));
    Tensor w = Tensor::empty(DataType::f64, {Grouped<T>::groups, Grouped<T>::per_group, n});
    Eigh eig(av.layout(), {.backend = Backend::warp});
    eig.execute(av, w, v.view(true), info);
    EXPECT_EQ(infos(info), std::vector<int>(std::size_t(Grouped<T>::count), 0));
    LU lu(av.layout(), {.backend = Backend::warp});
    Tensor factors = Tensor::empty(data_type_of<T>(), {Grouped<T>::groups, Grouped<T>::per_group, n, n});
    Tensor pivots = Tensor::empty(lu.pivots_layout());
    lu.factorize(av, factors, pivots, info);
    EXPECT_EQ(infos(info), std::vector<int>(std::size_t(Grouped<T>::count), 0));
    f.host = f.storage.to_host<T>();
    v.host = v.storage.to_host<T>();
    const std::vector<double> wh = w.to_host<double>();
    const std::vector<T> fh = factors.to_host<T>();
    const std::vector<int> ph = pivots.to_host<int>();
    for (std::int64_t b = 0; b < Grouped<T>::count; ++b) {
        const Matrix& am = ref[std::size_t(b)];
        Matrix l(std::size_t(n * n)), vs(std::size_t(n * n)), lr(std::size_t(n * n));
        std::vector<double> lambda(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) {
            lambda[std::size_t(i)] = wh[std::size_t(b * n + i)];
            for (std::int64_t j = 0; j < n; ++j) {  // column-major views: (i, j) at j * n + i
                l[std::size_t(i * n + j)] = j <= i ? cd(f.host[f.offset(b) + std::size_t(j * n + i)]) : cd(0);
                vs[std::size_t(i * n + j)] = v.host[v.offset(b) + std::size_t(j * n + i)];
                lr[std::size_t(i * n + j)] = fh[std::size_t(b * n * n + i * n + j)];
            }
        }
        EXPECT_LE(frobenius(difference(product(l, adjoint(l, n), n, n, n), am)) / frobenius(am), tolerance<T>(n))
            << "cholesky " << b;
        check_eigen<T>(am, lambda, &vs, n, "eigh " + std::to_string(b));
        // factors is row-major: Aᵀ's factors, P·Aᵀ = L·U.
        const Matrix ft = transpose(lr, n);
        Matrix lower(std::size_t(n * n)), upper(std::size_t(n * n));
        for (std::int64_t i = 0; i < n; ++i)
            for (std::int64_t j = 0; j < n; ++j) {
                if (j < i) lower[std::size_t(i * n + j)] = ft[std::size_t(i * n + j)];
                else upper[std::size_t(i * n + j)] = ft[std::size_t(i * n + j)];
            }
        for (std::int64_t i = 0; i < n; ++i) lower[std::size_t(i * n + i)] = 1;
        Matrix pm = transpose(am, n);
        for (std::int64_t k = 0; k < n; ++k) {
            const std::int64_t p = ph[std::size_t(b * n + k)] - 1;
            for (std::int64_t j = 0; j < n; ++j) std::swap(pm[std::size_t(k * n + j)], pm[std::size_t(p * n + j)]);
        }
        EXPECT_LE(frobenius(difference(product(lower, upper, n, n, n), pm)) / frobenius(pm), tolerance<T>(n))
            << "lu " << b;
    }
}

TEST(LinalgSmallGpu, StatelessCallsAndAutomaticOnTheWarpBackend) {
    GPUMATH_REQUIRE_GPU();
    using T = float;
    auto rng = test::rng_for_test();
    const std::int64_t count = 64;
    for (const std::int64_t n : {3, 12, 32}) {
        SCOPED_TRACE("n " + std::to_string(n));
        std::vector<T> host;
        std::vector<Matrix> ref;
        for (std::int64_t b = 0; b < count; ++b) {
            ref.push_back(hermitian<T>(n, rng, true));
            for (const cd& x : ref.back()) host.push_back(from<T>(x));
        }
        const Tensor a = Tensor::from_host(host, {count, n, n});
        for (const Backend backend : {Backend::warp, Backend::automatic}) {
            const CholeskyResult c = cholesky(a, {.backend = backend});
            const EighResult e = eigh(a, {.backend = backend});
            const InverseResult iv = inv(a, {.backend = backend});
            c.check();
            e.check();
            iv.check();
            const std::vector<T> fh = c.factor.to_host<T>(), wh = e.values.to_host<T>(), vh = e.vectors.to_host<T>();
            const std::vector<T> ih = iv.inverse.to_host<T>();
            for (std::int64_t b = 0; b < count; ++b) {
                Matrix l(std::size_t(n * n)), vs(std::size_t(n * n)), inverse(std::size_t(n * n));
                std::vector<double> lambda(static_cast<std::size_t>(n));
                for (std::int64_t i = 0; i < n * n; ++i) {
                    l[std::size_t(i)] = fh[std::size_t(b * n * n + i)];
                    vs[std::size_t(i)] = vh[std::size_t(b * n * n + i)];
                    inverse[std::size_t(i)] = ih[std::size_t(b * n * n + i)];
                }
                for (std::int64_t i = 0; i < n; ++i) lambda[std::size_t(i)] = wh[std::size_t(b * n + i)];
                const Matrix& am = ref[std::size_t(b)];
                ASSERT_EQ(without_triangle(l, n, true), l) << "the stateless call zeroes the upper triangle";
                ASSERT_LE(frobenius(difference(product(l, adjoint(l, n), n, n, n), am)) / frobenius(am),
                          tolerance<T>(n));
                check_eigen<T>(am, lambda, &vs, n, "eigh " + std::to_string(b));
                Matrix g = product(am, inverse, n, n, n);
                for (std::int64_t i = 0; i < n; ++i) g[std::size_t(i * n + i)] -= 1.0;
                ASSERT_LE(frobenius(g), tolerance<T>(n) * frobenius(am) * frobenius(inverse));
            }
        }
        // Automatic measures the warp backend among the others and keeps one.
        Cholesky chol(a.view().layout());
        Eigh eig(a.view().layout());
        LU lu(a.view().layout());
        chol.plan();
        eig.plan();
        lu.plan();
        EXPECT_NE(chol.backend(), Backend::automatic);
        EXPECT_NE(eig.backend(), Backend::automatic);
        EXPECT_TRUE(lu.backend() == Backend::looped || lu.backend() == Backend::warp) << to_string(lu.backend());
    }
}

TEST(LinalgSmallGpu, WarpPlansReplayFromACapturedGraph) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const std::int64_t count = 37, n = 7;
    Batch<double> a = Batch<double>::make(count, n, n, false);
    a.upload();
    Batch<double> f = Batch<double>::make(count, n, n, true, 0, 2);  // gaps: written where it is
    Batch<double> w = Batch<double>::make(count, n, 1, false);
    Batch<double> v = Batch<double>::make(count, n, n, false);
    Batch<double> factors = Batch<double>::make(count, n, n, true);
    Batch<double> x = Batch<double>::make(count, n, 1, false);
    Batch<double> rhs = Batch<double>::make(count, n, 1, false);
    for (std::int64_t b = 0; b < count; ++b)
        for (std::int64_t i = 0; i < n; ++i) rhs.at(b, i, 0) = double(i + 1);
    rhs.upload();
    Tensor info1 = Tensor::empty(DataType::i32, {count});
    Tensor info2 = Tensor::empty(DataType::i32, {count});
    Tensor info3 = Tensor::empty(DataType::i32, {count});
    const core::Stream stream;
    Cholesky chol(a.view().layout(), {.triangle = Triangle::upper, .backend = Backend::warp});
    Eigh eig(a.view().layout(), {.backend = Backend::warp});
    LU lu(a.view().layout(), {.backend = Backend::warp});
    Tensor pivots = Tensor::empty(lu.pivots_layout());
    const auto work = [&] {
        chol.factorize(a.view(), f.view(), info1, stream);
        eig.execute(a.view(), w.vector_view(), v.view(), info2, stream);
        lu.factorize(a.view(), factors.view(), pivots, info3, stream);
        lu.solve(factors.view(), pivots, rhs.vector_view(), x.vector_view(), stream);
    };
    chol.plan();
    eig.plan();
    lu.plan();
    work();  // before the capture: the kernels' first use compiles them
    stream.synchronize();
    core::Graph graph = core::Graph::capture(stream, [&](core::StreamRef) { work(); });
    for (int round = 0; round < 2; ++round) {
        std::vector<Matrix> ref;
        for (std::int64_t b = 0; b < count; ++b) {
            ref.push_back(hermitian<double>(n, rng, true));
            a.set(b, ref.back());
        }
        copy(Tensor::from_host(a.host, {std::int64_t(a.host.size())}), a.storage, stream);  // new values
        graph.launch(stream);
        stream.synchronize();
        f.download();
        w.download();
        v.download();
        x.download();
        EXPECT_EQ(infos(info1), std::vector<int>(std::size_t(count), 0));
        EXPECT_EQ(infos(info2), std::vector<int>(std::size_t(count), 0));
        EXPECT_EQ(infos(info3), std::vector<int>(std::size_t(count), 0));
        for (std::int64_t b = 0; b < count; ++b) {
            const Matrix& am = ref[std::size_t(b)];
            const Matrix u = without_triangle(f.get(b), n, false);
            EXPECT_LE(frobenius(difference(product(adjoint(u, n), u, n, n, n), am)) / frobenius(am),
                      tolerance<double>(n))
                << "replayed Cholesky, round " << round;
            std::vector<double> lambda(static_cast<std::size_t>(n));
            for (std::int64_t i = 0; i < n; ++i) lambda[std::size_t(i)] = w.at(b, i, 0);
            const Matrix vs = v.get(b);
            check_eigen<double>(am, lambda, &vs, n, "replayed eigh, round " + std::to_string(round));
            const Matrix ax = product(am, x.get(b), n, 1, n);
            for (std::int64_t i = 0; i < n; ++i)
                EXPECT_NEAR(ax[std::size_t(i)].real(), double(i + 1), 1e-10 * double(n)) << "replayed LU solve";
        }
    }
}

}  // namespace
}  // namespace gpumath::linalg
