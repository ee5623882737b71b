// SPDX-License-Identifier: Apache-2.0
// gpumath::linalg's SVD on the GPU against host references that do not use gpumath: singular
// values from a one-sided Jacobi SVD in double written here, ‖A − U·S·Vᴴ‖/‖A‖, ‖UᴴU − I‖ and
// ‖VᴴV − I‖, for tall, square and wide matrices, every dtype, job and backend, row- and
// column-major and strided operands, poisoned (NaN) outputs; the rank-k approximation of gesvda
// and gesvdr against Eckart–Young on a matrix of known low rank plus noise; capture and replay.
#include <gpumath/linalg.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
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

/// rows × cols, row-major, entries uniform on [-1, 1] (real and imaginary parts).
template <class T>
Matrix random_matrix(std::int64_t rows, std::int64_t cols, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> u(-1, 1);
    Matrix m(std::size_t(rows * cols));
    for (auto& v : m) v = is_complex<T> ? cd(u(rng), u(rng)) : cd(u(rng), 0);
    return m;
}

/// The conjugate transpose of a rows × cols matrix.
Matrix adjoint_of(const Matrix& a, std::int64_t rows, std::int64_t cols) {
    Matrix t(a.size());
    for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) t[std::size_t(j * rows + i)] = std::conj(a[std::size_t(i * cols + j)]);
    return t;
}

/// The singular values of a rows × cols matrix, descending: one-sided (Hestenes) Jacobi on the
/// columns of A (or Aᴴ when wide) in double until every pair is orthogonal to 1e-15.
std::vector<double> host_singular_values(const Matrix& a, std::int64_t rows, std::int64_t cols) {
    const bool wide = rows < cols;
    const std::int64_t r = wide ? cols : rows, c = wide ? rows : cols;
    std::vector<std::vector<cd>> col(static_cast<std::size_t>(c), std::vector<cd>(static_cast<std::size_t>(r)));
    for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) {
            const cd v = a[std::size_t(i * cols + j)];
            if (wide) col[std::size_t(i)][std::size_t(j)] = std::conj(v);
            else col[std::size_t(j)][std::size_t(i)] = v;
        }
    for (int sweep = 0; sweep < 80; ++sweep) {
        double off = 0;
        for (std::int64_t p = 0; p < c; ++p)
            for (std::int64_t q = p + 1; q < c; ++q) {
                auto& x = col[std::size_t(p)];
                auto& y = col[std::size_t(q)];
                double alpha = 0, beta = 0;
                cd gamma = 0;
                for (std::int64_t i = 0; i < r; ++i) {
                    alpha += std::norm(x[std::size_t(i)]);
                    beta += std::norm(y[std::size_t(i)]);
                    gamma += std::conj(x[std::size_t(i)]) * y[std::size_t(i)];
                }
                const double g = std::abs(gamma);
                if (g == 0 || g <= 1e-15 * std::sqrt(alpha * beta)) continue;
                off = std::max(off, g / std::sqrt(alpha * beta));
                // y·conj(phase) makes xᴴy real; then a real rotation zeroes it.
                const cd phase = gamma / g;
                const double zeta = (beta - alpha) / (2 * g);
                const double t = (zeta >= 0 ? 1.0 : -1.0) / (std::abs(zeta) + std::sqrt(1 + zeta * zeta));
                const double cs = 1 / std::sqrt(1 + t * t), sn = cs * t;
                for (std::int64_t i = 0; i < r; ++i) {
                    const cd xi = x[std::size_t(i)], yi = y[std::size_t(i)] * std::conj(phase);
                    x[std::size_t(i)] = cs * xi - sn * yi;
                    y[std::size_t(i)] = sn * xi + cs * yi;
                }
            }
        if (off < 1e-15) break;
    }
    std::vector<double> s(static_cast<std::size_t>(c));
    for (std::int64_t j = 0; j < c; ++j) {
        double n2 = 0;
        for (const cd& v : col[std::size_t(j)]) n2 += std::norm(v);
        s[std::size_t(j)] = std::sqrt(n2);
    }
    std::sort(s.begin(), s.end(), std::greater<>());
    return s;
}

/// ‖X·Xᴴ − I‖ for the rows of a rows × cols matrix.
double rows_off_orthonormal(const Matrix& x, std::int64_t rows, std::int64_t cols) {
    Matrix g = product(x, adjoint_of(x, rows, cols), rows, rows, cols);
    for (std::int64_t i = 0; i < rows; ++i) g[std::size_t(i * rows + i)] -= 1.0;
    return frobenius(g);
}

/// What one decomposition must satisfy: `u` m × ku, `s` k values (k ≤ min(m, n)), `vh` kv × n.
/// With k < min(m, n) (a rank-k result), A − U·S·Vᴴ is the best rank-k residual (Eckart–Young).
struct Expect {
    double tol;             // relative to ‖A‖ and s[0]
    double residual_slack;  // absolute, for the rank-k residual
};

void check_decomposition(const Matrix& a, std::int64_t m, std::int64_t n, const Matrix* u, std::int64_t ku,
                         const std::vector<double>& s, const Matrix* vh, std::int64_t kv, const Expect& e,
                         const std::string& what) {
    const std::int64_t k = std::int64_t(s.size());
    const std::vector<double> ref = host_singular_values(a, m, n);
    for (std::int64_t i = 0; i < k; ++i) {
        ASSERT_FALSE(std::isnan(s[std::size_t(i)])) << what << ": s[" << i << "] still poisoned";
        EXPECT_GE(s[std::size_t(i)], 0.0) << what;
        if (i > 0) {
            EXPECT_LE(s[std::size_t(i)], s[std::size_t(i - 1)] * (1 + e.tol)) << what << ": not descending";
        }
        EXPECT_NEAR(s[std::size_t(i)], ref[std::size_t(i)], e.tol * ref[0] + e.residual_slack)
            << what << ": s[" << i << "]";
    }
    if (u == nullptr) return;
    // U·diag(S)·Vᴴ from the first k columns of U and rows of Vᴴ.
    Matrix us(std::size_t(m * k)), vk(std::size_t(k * n));
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < k; ++j)
            us[std::size_t(i * k + j)] = (*u)[std::size_t(i * ku + j)] * s[std::size_t(j)];
    std::copy(vh->begin(), vh->begin() + k * n, vk.begin());
    const Matrix r = product(us, vk, m, n, k);
    Matrix d(a.size());
    for (std::size_t i = 0; i < d.size(); ++i) d[i] = r[i] - a[i];
    double tail = 0;  // the best rank-k residual
    for (std::size_t i = std::size_t(k); i < ref.size(); ++i) tail += ref[i] * ref[i];
    EXPECT_NEAR(frobenius(d), std::sqrt(tail), e.tol * frobenius(a) + e.residual_slack) << what << ": A - U S Vh";
    EXPECT_LE(rows_off_orthonormal(adjoint_of(*u, m, ku), ku, m), e.tol * double(ku)) << what << ": U^H U - I";
    EXPECT_LE(rows_off_orthonormal(*vh, kv, n), e.tol * double(kv)) << what << ": V^H V - I";
}

template <class T>
using RealOf = typename Real<T>::type;

/// One plan on one layout: 0 row-major A and outputs, 1 column-major A and outputs (written in
/// place where the routine's orientation allows), 2 padded A and outputs with gaps (through
/// workspace).
template <class T>
void svd_case_body(std::int64_t m, std::int64_t n, SVDJob job, Backend backend, std::int64_t rank, int layout,
                   std::mt19937_64& rng) {
    const std::int64_t count = 3, full_k = std::min(m, n), k = rank != 0 ? rank : full_k;
    const bool vectors = job != SVDJob::values, full = job == SVDJob::full;
    const std::int64_t ku = full ? m : k, kv = full ? n : k;
    const std::string what = std::to_string(m) + "x" + std::to_string(n) + " " + std::string(to_string(job)) + " " +
                             std::string(to_string(backend)) + " rank " + std::to_string(rank) + " layout " +
                             std::to_string(layout);
    Batch<T> a = Batch<T>::make(count, m, n, layout == 1, layout == 2 ? 3 : 0);
    std::vector<Matrix> ref;
    for (std::int64_t b = 0; b < count; ++b) {
        ref.push_back(random_matrix<T>(m, n, rng));
        a.set(b, ref.back());
    }
    a.upload();
    Batch<T> u = Batch<T>::make(count, m, ku, layout == 1, 0, layout == 2 ? 2 : 1);
    Batch<T> vh = Batch<T>::make(count, kv, n, layout == 1, 0, layout == 2 ? 2 : 1);
    Batch<RealOf<T>> s = Batch<RealOf<T>>::make(count, k, 1, false, 0, layout == 2 ? 2 : 1);
    SVD plan(a.view().layout(), {.job = job, .backend = backend, .rank = rank});
    Tensor info = Tensor::empty(DataType::i32, {count});
    fill(info, -7);
    plan.execute(a.view(), vectors ? u.view() : TensorView(), s.vector_view(), vectors ? vh.view() : TensorView(),
                 info);
    s.download();
    if (vectors) {
        u.download();
        vh.download();
    }
    EXPECT_EQ(infos(info), std::vector<int>(std::size_t(count), 0)) << what;
    EXPECT_NE(plan.backend(), Backend::automatic) << what;
    const bool approximate = backend == Backend::approximate;
    const Expect e{.tol = tolerance<T>(std::max(m, n)) * (approximate ? 10 : 1), .residual_slack = 0};
    for (std::int64_t b = 0; b < count; ++b) {
        std::vector<double> sv(static_cast<std::size_t>(k));
        for (std::int64_t i = 0; i < k; ++i) sv[std::size_t(i)] = double(s.at(b, i, 0));
        const Matrix um = vectors ? u.get(b) : Matrix(), vm = vectors ? vh.get(b) : Matrix();
        check_decomposition(ref[std::size_t(b)], m, n, vectors ? &um : nullptr, ku, sv, vectors ? &vm : nullptr, kv, e,
                            what + " matrix " + std::to_string(b));
    }
}

/// One case, with the case named when a call throws (a library error says which call failed, not
/// which case reached it).
template <class T>
void svd_case(std::int64_t m, std::int64_t n, SVDJob job, Backend backend, std::int64_t rank, int layout,
              std::mt19937_64& rng) {
    try {
        svd_case_body<T>(m, n, job, backend, rank, layout, rng);
    } catch (const std::exception& e) {
        FAIL() << m << "x" << n << " " << to_string(job) << " " << to_string(backend) << " rank " << rank << " layout "
               << layout << ": " << e.what();
    }
}

template <class T>
void svd_every_layout() {
    auto rng = test::rng_for_test();
    const std::vector<std::pair<std::int64_t, std::int64_t>> small{{9, 5}, {5, 9}, {7, 7}, {1, 4}};
    const std::vector<std::pair<std::int64_t, std::int64_t>> larger{{40, 24}, {24, 40}};
    for (const SVDJob job : {SVDJob::values, SVDJob::thin, SVDJob::full})
        for (int layout = 0; layout < 3; ++layout) {
            for (const auto& [m, n] : small)
                for (const Backend b : {Backend::looped, Backend::jacobi, Backend::batched, Backend::automatic})
                    svd_case<T>(m, n, job, b, 0, layout, rng);
            for (const auto& [m, n] : larger)
                for (const Backend b : {Backend::looped, Backend::jacobi, Backend::automatic})
                    svd_case<T>(m, n, job, b, 0, layout, rng);
            if (job == SVDJob::full) continue;
            // gesvda on well-conditioned (tall or wide by more than 3) matrices, all of them and rank 5.
            for (const auto& [m, n] : {std::pair<std::int64_t, std::int64_t>{40, 12}, {12, 40}})
                for (const std::int64_t rank : {0, 5}) svd_case<T>(m, n, job, Backend::approximate, rank, layout, rng);
        }
}

TEST(SvdGpu, EveryJobLayoutAndBackendF32) {
    GPUMATH_REQUIRE_GPU();
    svd_every_layout<float>();
}
TEST(SvdGpu, EveryJobLayoutAndBackendF64) {
    GPUMATH_REQUIRE_GPU();
    svd_every_layout<double>();
}
TEST(SvdGpu, EveryJobLayoutAndBackendC32) {
    GPUMATH_REQUIRE_GPU();
    svd_every_layout<std::complex<float>>();
}
TEST(SvdGpu, EveryJobLayoutAndBackendC64) {
    GPUMATH_REQUIRE_GPU();
    svd_every_layout<std::complex<double>>();
}

template <class T>
void stateless_svd() {
    auto rng = test::rng_for_test();
    const std::int64_t count = 2;
    for (const auto& [m, n] : {std::pair<std::int64_t, std::int64_t>{30, 11}, {11, 30}})
        for (const SVDJob job : {SVDJob::values, SVDJob::thin, SVDJob::full}) {
            std::vector<T> host;
            std::vector<Matrix> ref;
            for (std::int64_t b = 0; b < count; ++b) {
                ref.push_back(random_matrix<T>(m, n, rng));
                for (const cd& v : ref.back()) host.push_back(from<T>(v));
            }
            const Tensor a = Tensor::from_host(host, {count, m, n});
            const SVDResult r = svd(a, {.job = job});
            r.check();
            const std::int64_t k = std::min(m, n), ku = job == SVDJob::full ? m : k, kv = job == SVDJob::full ? n : k;
            const std::vector<RealOf<T>> hs = r.s.to_host<RealOf<T>>();
            std::vector<T> hu, hv;
            if (job != SVDJob::values) {
                hu = r.u.to_host<T>();
                hv = r.vh.to_host<T>();
            } else {
                EXPECT_EQ(r.u.data(), nullptr);
            }
            for (std::int64_t b = 0; b < count; ++b) {
                std::vector<double> sv(hs.begin() + b * k, hs.begin() + (b + 1) * k);
                Matrix um(std::size_t(m * ku)), vm(std::size_t(kv * n));
                if (job != SVDJob::values) {
                    for (std::size_t i = 0; i < um.size(); ++i) um[i] = cd(hu[std::size_t(b * m * ku) + i]);
                    for (std::size_t i = 0; i < vm.size(); ++i) vm[i] = cd(hv[std::size_t(b * kv * n) + i]);
                }
                check_decomposition(ref[std::size_t(b)], m, n, job != SVDJob::values ? &um : nullptr, ku, sv,
                                    job != SVDJob::values ? &vm : nullptr, kv,
                                    {.tol = tolerance<T>(std::max(m, n)), .residual_slack = 0},
                                    "stateless " + std::string(to_string(job)));
            }
        }
}

TEST(SvdGpu, StatelessSvdF32) {
    GPUMATH_REQUIRE_GPU();
    stateless_svd<float>();
}
TEST(SvdGpu, StatelessSvdC64) {
    GPUMATH_REQUIRE_GPU();
    stateless_svd<std::complex<double>>();
}

/// A = X·Yᴴ + ε·N: rank r plus noise of norm about ε(√m + √n).
template <class T>
Matrix low_rank(std::int64_t m, std::int64_t n, std::int64_t r, double eps, std::mt19937_64& rng) {
    const Matrix x = random_matrix<T>(m, r, rng), y = random_matrix<T>(n, r, rng);
    Matrix a = product(x, adjoint_of(y, n, r), m, n, r);
    const Matrix noise = random_matrix<T>(m, n, rng);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] += eps * noise[i];
    return a;
}

template <class T>
void truncated_recovers_the_top_values() {
    auto rng = test::rng_for_test();
    const std::int64_t count = 2, r = 4;
    const double eps = 1e-5;
    for (const auto& [m, n] : {std::pair<std::int64_t, std::int64_t>{60, 40}, {40, 60}})
        for (const bool col : {false, true})
            for (const bool vectors : {true, false}) {
                const std::string what = std::to_string(m) + "x" + std::to_string(n) + (col ? " column" : " row") +
                                         "-major" + (vectors ? "" : " values");
                Batch<T> a = Batch<T>::make(count, m, n, col);
                std::vector<Matrix> ref;
                for (std::int64_t b = 0; b < count; ++b) {
                    ref.push_back(low_rank<T>(m, n, r, eps, rng));
                    a.set(b, ref.back());
                }
                a.upload();
                TruncatedSVD plan(a.view().layout(), r, {.vectors = vectors});
                Batch<T> u = Batch<T>::make(count, m, r, !col);
                Batch<T> vh = Batch<T>::make(count, r, n, col, 1);
                Batch<RealOf<T>> s = Batch<RealOf<T>>::make(count, r, 1, false);
                Tensor info = Tensor::empty(DataType::i32, {count});
                fill(info, -7);
                plan.execute(a.view(), vectors ? u.view() : TensorView(), s.vector_view(),
                             vectors ? vh.view() : TensorView(), info);
                s.download();
                if (vectors) {
                    u.download();
                    vh.download();
                }
                EXPECT_EQ(infos(info), std::vector<int>(std::size_t(count), 0)) << what;
                const double noise = eps * (std::sqrt(double(m)) + std::sqrt(double(n)));
                for (std::int64_t b = 0; b < count; ++b) {
                    std::vector<double> sv(static_cast<std::size_t>(r));
                    for (std::int64_t i = 0; i < r; ++i) sv[std::size_t(i)] = double(s.at(b, i, 0));
                    const Matrix um = vectors ? u.get(b) : Matrix(), vm = vectors ? vh.get(b) : Matrix();
                    check_decomposition(ref[std::size_t(b)], m, n, vectors ? &um : nullptr, r, sv,
                                        vectors ? &vm : nullptr, r,
                                        {.tol = tolerance<T>(std::max(m, n)), .residual_slack = 4 * noise}, what);
                }
            }
}

TEST(SvdGpu, TruncatedRecoversTheTopValuesF32) {
    GPUMATH_REQUIRE_GPU();
    truncated_recovers_the_top_values<float>();
}
TEST(SvdGpu, TruncatedRecoversTheTopValuesF64) {
    GPUMATH_REQUIRE_GPU();
    truncated_recovers_the_top_values<double>();
}
TEST(SvdGpu, TruncatedRecoversTheTopValuesC32) {
    GPUMATH_REQUIRE_GPU();
    truncated_recovers_the_top_values<std::complex<float>>();
}
TEST(SvdGpu, TruncatedRecoversTheTopValuesC64) {
    GPUMATH_REQUIRE_GPU();
    truncated_recovers_the_top_values<std::complex<double>>();
}

template <class T>
void batched_replays_from_a_captured_graph() {
    auto rng = test::rng_for_test();
    const std::int64_t count = 6, m = 12, n = 20;
    Batch<T> a = Batch<T>::make(count, m, n, false);
    a.upload();
    Batch<T> u = Batch<T>::make(count, m, m, false);
    Batch<T> vh = Batch<T>::make(count, m, n, true, 1);  // through workspace
    Batch<RealOf<T>> s = Batch<RealOf<T>>::make(count, m, 1, false);
    Tensor info = Tensor::empty(DataType::i32, {count});
    const core::Stream stream;
    SVD plan(a.view().layout(), {.backend = Backend::batched});
    plan.plan();
    core::Graph graph = core::Graph::capture(
        stream, [&](core::StreamRef) { plan.execute(a.view(), u.view(), s.vector_view(), vh.view(), info, stream); });
    // The other backends and TruncatedSVD refuse a capture before any work.
    for (const Backend b : {Backend::looped, Backend::jacobi, Backend::approximate}) {
        SVD other(a.view().layout(), {.backend = b});
        other.plan();
        test::expect_throw_with<NotSupported>(
            [&] {
                core::Graph g = core::Graph::capture(stream, [&](core::StreamRef) {
                    other.execute(a.view(), u.view(), s.vector_view(), vh.view(), info, stream);
                });
            },
            {"linalg::SVD::execute", "capturing", std::string(to_string(b)), "Backend::batched"});
    }
    TruncatedSVD truncated(a.view().layout(), 3);
    truncated.plan();
    Tensor tu = Tensor::empty(truncated.u_layout()), ts = Tensor::empty(truncated.values_layout()),
           tv = Tensor::empty(truncated.vh_layout());
    test::expect_throw_with<NotSupported>(
        [&] {
            core::Graph g = core::Graph::capture(
                stream, [&](core::StreamRef) { truncated.execute(a.view(), tu, ts, tv, info, stream); });
        },
        {"linalg::TruncatedSVD::execute", "capturing"});
    for (int round = 0; round < 2; ++round) {
        std::vector<Matrix> ref;
        for (std::int64_t b = 0; b < count; ++b) {
            ref.push_back(random_matrix<T>(m, n, rng));
            a.set(b, ref.back());
        }
        copy(Tensor::from_host(a.host, {std::int64_t(a.host.size())}), a.storage, stream);  // into the captured buffer
        fill(info, -7, stream);
        graph.launch(stream);
        stream.synchronize();
        u.download();
        vh.download();
        s.download();
        EXPECT_EQ(infos(info), std::vector<int>(std::size_t(count), 0)) << "round " << round;
        for (std::int64_t b = 0; b < count; ++b) {
            std::vector<double> sv(static_cast<std::size_t>(m));
            for (std::int64_t i = 0; i < m; ++i) sv[std::size_t(i)] = double(s.at(b, i, 0));
            const Matrix um = u.get(b), vm = vh.get(b);
            check_decomposition(ref[std::size_t(b)], m, n, &um, m, sv, &vm, m,
                                {.tol = tolerance<T>(n), .residual_slack = 0}, "replay " + std::to_string(round));
        }
    }
}

TEST(SvdGpu, BatchedReplaysFromACapturedGraphF32) {
    GPUMATH_REQUIRE_GPU();
    batched_replays_from_a_captured_graph<float>();
}
TEST(SvdGpu, BatchedReplaysFromACapturedGraphC64) {
    GPUMATH_REQUIRE_GPU();
    batched_replays_from_a_captured_graph<std::complex<double>>();
}

TEST(SvdGpu, EmptyMatricesGiveIdentityVectors) {
    GPUMATH_REQUIRE_GPU();
    const SVDResult r = svd(Tensor::empty(DataType::f64, {2, 3, 0}), {.job = SVDJob::full});
    r.check();
    EXPECT_EQ(r.s.size(), 0);
    const std::vector<double> u = r.u.to_host<double>();
    ASSERT_EQ(u.size(), 18U);
    for (std::int64_t b = 0; b < 2; ++b)
        for (std::int64_t i = 0; i < 3; ++i)
            for (std::int64_t j = 0; j < 3; ++j) EXPECT_EQ(u[std::size_t(b * 9 + i * 3 + j)], i == j ? 1.0 : 0.0);
}

}  // namespace
}  // namespace gpumath::linalg
