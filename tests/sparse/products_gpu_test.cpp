// SPDX-License-Identifier: Apache-2.0
// SpGEMM, SDDMM and the triangular solves on the GPU against host references that do not use
// gpumath: dense products of the CSR operands, SDDMM sums entry by entry, residuals of the solves;
// f32, f64, c32 and c64, i32 and i64 indices where cuSPARSE takes them, matrices with empty rows and
// one dense row, poisoned outputs, new values with the same patterns, capture and replay, and a
// triangle with a zero on its diagonal (what cuSPARSE does with it).
#include <gpumath/sparse.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <iostream>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include <gpumath/core/graph.hpp>
#include <gpumath/tensor.hpp>

#include "common/test_util.hpp"

namespace gpumath::sparse {
namespace {

using cd = std::complex<double>;
using Dense = std::vector<cd>;  // row-major

template <class T>
constexpr bool is_complex_v = std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

template <class T>
double tolerance() {
    return std::is_same_v<T, float> || std::is_same_v<T, std::complex<float>> ? 2e-4 : 1e-11;
}

template <class T>
T to_t(cd v) {
    if constexpr (is_complex_v<T>) return T(v);
    else return T(v.real());
}

template <class T>
std::vector<T> download(const TensorView& v, core::StreamRef stream) {
    std::vector<T> host(std::size_t(v.size()));
    if (!host.empty()) {
        EXPECT_EQ(
            cudaMemcpyAsync(host.data(), v.data(), host.size() * sizeof(T), cudaMemcpyDeviceToHost, stream.handle()),
            cudaSuccess);
    }
    stream.synchronize();
    return host;
}

template <class T>
void upload_into(const TensorView& v, const std::vector<T>& host, core::StreamRef stream) {
    ASSERT_EQ(std::size_t(v.size()), host.size());
    if (!host.empty()) {
        ASSERT_EQ(
            cudaMemcpyAsync(v.data(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, stream.handle()),
            cudaSuccess);
    }
    stream.synchronize();
}

/// A CSR pattern on the host, columns sorted within each row.
struct Pattern {
    std::int64_t rows = 0, cols = 0;
    std::vector<std::int64_t> offsets, indices;
    [[nodiscard]] std::int64_t nnz() const { return std::int64_t(indices.size()); }
};

/// Random entries with probability `density`, every third row empty, `dense_row` (if in range)
/// full, and the diagonal stored when `diagonal`.
Pattern random_pattern(std::int64_t rows, std::int64_t cols, double density, std::mt19937_64& rng,
                       std::int64_t dense_row = -1, bool diagonal = false) {
    std::bernoulli_distribution keep(density);
    Pattern p{.rows = rows, .cols = cols, .offsets = {0}, .indices = {}};
    for (std::int64_t i = 0; i < rows; ++i) {
        for (std::int64_t j = 0; j < cols; ++j) {
            const bool on_diagonal = diagonal && i == j;
            const bool empty_row = !diagonal && i % 3 == 1;
            if (on_diagonal || i == dense_row || (!empty_row && keep(rng))) p.indices.push_back(j);
        }
        p.offsets.push_back(p.nnz());
    }
    return p;
}

template <class T>
std::vector<T> random_values(std::int64_t n, std::mt19937_64& rng, double scale = 1.0) {
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<T> v(static_cast<std::size_t>(n));
    for (auto& x : v) x = to_t<T>(cd(u(rng), is_complex_v<T> ? u(rng) : 0.0) * scale);
    return v;
}

template <class T>
Dense to_dense(const Pattern& p, const std::vector<T>& values) {
    Dense d(std::size_t(p.rows * p.cols));
    for (std::int64_t i = 0; i < p.rows; ++i)
        for (std::int64_t e = p.offsets[std::size_t(i)]; e < p.offsets[std::size_t(i + 1)]; ++e)
            d[std::size_t(i * p.cols + p.indices[std::size_t(e)])] += cd(values[std::size_t(e)]);
    return d;
}

Dense multiply(const Dense& a, const Dense& b, std::int64_t m, std::int64_t k, std::int64_t n) {
    Dense c(std::size_t(m * n));
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t l = 0; l < k; ++l)
            for (std::int64_t j = 0; j < n; ++j)
                c[std::size_t(i * n + j)] += a[std::size_t(i * k + l)] * b[std::size_t(l * n + j)];
    return c;
}

/// Entries of A·B's pattern (a product of two stored entries, whatever their values).
std::int64_t symbolic_nnz(const Pattern& a, const Pattern& b) {
    std::int64_t count = 0;
    for (std::int64_t i = 0; i < a.rows; ++i) {
        std::set<std::int64_t> cols;
        for (std::int64_t e = a.offsets[std::size_t(i)]; e < a.offsets[std::size_t(i + 1)]; ++e) {
            const std::int64_t l = a.indices[std::size_t(e)];
            for (std::int64_t f = b.offsets[std::size_t(l)]; f < b.offsets[std::size_t(l + 1)]; ++f)
                cols.insert(b.indices[std::size_t(f)]);
        }
        count += std::int64_t(cols.size());
    }
    return count;
}

/// A CSR matrix in device memory, owning its arrays.
template <class T, class I>
struct DeviceCsr {
    Tensor offsets, indices, values;
    MatrixView view;

    DeviceCsr(const Pattern& p, const std::vector<T>& v, core::StreamRef stream) {
        const std::vector<I> o(p.offsets.begin(), p.offsets.end()), ix(p.indices.begin(), p.indices.end());
        offsets = Tensor::from_host(o, {p.rows + 1}, stream);
        indices = Tensor::from_host(ix, {p.nnz()}, stream);
        values = Tensor::from_host(v, {p.nnz()}, stream);
        view = MatrixView::csr(p.rows, p.cols, offsets, indices, values);
        stream.synchronize();
    }
};

/// C downloaded and made dense, after checking its offsets and sorted, in-range columns.
template <class T>
Dense download_csr(const MatrixView& c, core::StreamRef stream) {
    std::vector<std::int64_t> offsets, indices;
    if (c.index_type() == DataType::i32) {
        const auto o = download<std::int32_t>(c.offsets(), stream);
        const auto ix = download<std::int32_t>(c.indices(), stream);
        offsets.assign(o.begin(), o.end());
        indices.assign(ix.begin(), ix.end());
    } else {
        offsets = download<std::int64_t>(c.offsets(), stream);
        indices = download<std::int64_t>(c.indices(), stream);
    }
    EXPECT_EQ(offsets.front(), 0);
    EXPECT_EQ(offsets.back(), c.stored());
    for (std::int64_t i = 0; i < c.rows(); ++i) {
        EXPECT_LE(offsets[std::size_t(i)], offsets[std::size_t(i + 1)]);
        for (std::int64_t e = offsets[std::size_t(i)]; e < offsets[std::size_t(i + 1)]; ++e) {
            EXPECT_GE(indices[std::size_t(e)], 0);
            EXPECT_LT(indices[std::size_t(e)], c.cols());
            if (e > offsets[std::size_t(i)]) {
                EXPECT_LT(indices[std::size_t(e - 1)], indices[std::size_t(e)]);
            }
        }
    }
    const Pattern p{.rows = c.rows(), .cols = c.cols(), .offsets = offsets, .indices = indices};
    return to_dense(p, download<T>(c.values(), stream));
}

// ---------------------------------------------------------------------------------------------
// SpGEMM

template <class T>
void check_spgemm() {
    SCOPED_TRACE(to_string(data_type_of<T>()));
    auto rng = test::rng_for_test();
    const core::Stream stream;
    const std::int64_t m = 37, k = 23, n = 31;
    const Pattern pa = random_pattern(m, k, 0.15, rng, 4), pb = random_pattern(k, n, 0.15, rng, 2);
    std::vector<T> va = random_values<T>(pa.nnz(), rng), vb = random_values<T>(pb.nnz(), rng);
    const DeviceCsr<T, std::int32_t> a(pa, va, stream), b(pb, vb, stream);

    SpGEMM plan(a.view, b.view);
    plan.plan(stream);
    EXPECT_TRUE(plan.planned());
    EXPECT_EQ(plan.nnz(), symbolic_nnz(pa, pb));
    const MatrixView& c = plan.result();
    EXPECT_EQ(c.rows(), m);
    EXPECT_EQ(c.cols(), n);
    EXPECT_EQ(c.value_type(), data_type_of<T>());
    upload_into(c.values(), std::vector<T>(std::size_t(c.stored()), to_t<T>(cd(std::nan(""), 0))), stream);
    plan.execute(stream);
    stream.synchronize();
    EXPECT_LT(test::relative_error(download_csr<T>(c, stream), multiply(to_dense(pa, va), to_dense(pb, vb), m, k, n)),
              tolerance<T>());

    // New values, same patterns, through a captured graph.
    core::Graph graph = core::Graph::capture(stream, [&](core::StreamRef) { plan.execute(stream); });
    for (int round = 0; round < 2; ++round) {
        va = random_values<T>(pa.nnz(), rng);
        vb = random_values<T>(pb.nnz(), rng);
        upload_into(a.values, va, stream);
        upload_into(b.values, vb, stream);
        upload_into(c.values(), std::vector<T>(std::size_t(c.stored()), to_t<T>(cd(std::nan(""), 0))), stream);
        graph.launch(stream);
        stream.synchronize();
        EXPECT_LT(
            test::relative_error(download_csr<T>(c, stream), multiply(to_dense(pa, va), to_dense(pb, vb), m, k, n)),
            tolerance<T>());
    }

    // The stateless call.
    const Matrix s = spgemm(a.view, b.view, stream);
    EXPECT_EQ(s.view().stored(), symbolic_nnz(pa, pb));
    EXPECT_LT(
        test::relative_error(download_csr<T>(s.view(), stream), multiply(to_dense(pa, va), to_dense(pb, vb), m, k, n)),
        tolerance<T>());
}

TEST(SparseProductsGpu, SpGEMMAgainstDenseProducts) {
    GPUMATH_REQUIRE_GPU();
    check_spgemm<float>();
    check_spgemm<double>();
    check_spgemm<std::complex<float>>();
    check_spgemm<std::complex<double>>();
}

TEST(SparseProductsGpu, SpGEMMOfMatricesWithoutEntries) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const core::Stream stream;
    const Pattern pa{.rows = 5, .cols = 4, .offsets = std::vector<std::int64_t>(6, 0), .indices = {}};
    const Pattern pb = random_pattern(4, 3, 0.5, rng, 0);
    const DeviceCsr<double, std::int32_t> a(pa, {}, stream), b(pb, random_values<double>(pb.nnz(), rng), stream);
    const Matrix c = spgemm(a.view, b.view, stream);
    EXPECT_EQ(c.view().stored(), 0);
    EXPECT_EQ(download<std::int32_t>(c.view().offsets(), stream), std::vector<std::int32_t>(6, 0));
}

// ---------------------------------------------------------------------------------------------
// SDDMM

/// A dense rows × cols operand, row-major or column-major, with its host copy (row-major).
template <class T>
struct DenseOperand {
    Tensor storage;
    TensorView view;
    Dense host;
};

template <class T>
DenseOperand<T> dense_operand(std::int64_t rows, std::int64_t cols, bool row_major, std::mt19937_64& rng,
                              core::StreamRef stream) {
    const std::vector<T> v = random_values<T>(rows * cols, rng);
    DenseOperand<T> d;
    d.host.resize(v.size());
    if (row_major) {
        for (std::size_t i = 0; i < v.size(); ++i) d.host[i] = cd(v[i]);
        d.storage = Tensor::from_host(v, {rows, cols}, stream);
        d.view = TensorView(d.storage.data(), data_type_of<T>(), {rows, cols});
    } else {  // v holds the columns one after another
        for (std::int64_t i = 0; i < rows; ++i)
            for (std::int64_t j = 0; j < cols; ++j)
                d.host[std::size_t(i * cols + j)] = cd(v[std::size_t(j * rows + i)]);
        d.storage = Tensor::from_host(v, {cols, rows}, stream);
        d.view = TensorView(d.storage.data(), data_type_of<T>(), {rows, cols}, {1, rows});
    }
    stream.synchronize();
    return d;
}

/// op(X)(i, j) of a rows × cols host matrix.
cd at(const Dense& x, std::int64_t cols, bool transposed, std::int64_t i, std::int64_t j) {
    return transposed ? x[std::size_t(j * cols + i)] : x[std::size_t(i * cols + j)];
}

template <class T, class I>
void check_sddmm(bool a_row_major, bool b_row_major, Operation op_a, Operation op_b) {
    SCOPED_TRACE(testing::Message() << to_string(data_type_of<T>()) << " i" << sizeof(I) * 8 << " a "
                                    << (a_row_major ? "row" : "col") << " b " << (b_row_major ? "row" : "col")
                                    << " op_a " << to_string(op_a) << " op_b " << to_string(op_b));
    auto rng = test::rng_for_test();
    const core::Stream stream;
    const std::int64_t m = 29, k = 11, n = 19;
    const bool ta = op_a == Operation::transpose, tb = op_b == Operation::transpose;
    const DenseOperand<T> a = dense_operand<T>(ta ? k : m, ta ? m : k, a_row_major, rng, stream);
    const DenseOperand<T> b = dense_operand<T>(tb ? n : k, tb ? k : n, b_row_major, rng, stream);
    const Pattern pc = random_pattern(m, n, 0.2, rng, 3);
    std::vector<T> vc = random_values<T>(pc.nnz(), rng);
    const DeviceCsr<T, I> c(pc, vc, stream);

    SDDMM plan(a.view, b.view, c.view, {.op_a = op_a, .op_b = op_b});
    plan.plan(stream);
    const cd alpha = is_complex_v<T> ? cd(0.75, -0.5) : cd(0.75, 0);
    const cd beta = is_complex_v<T> ? cd(-1.25, 0.25) : cd(-1.25, 0);
    auto expected = [&](const std::vector<T>& before, cd with_beta) {
        Dense e(before.size());
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t s = pc.offsets[std::size_t(i)]; s < pc.offsets[std::size_t(i + 1)]; ++s) {
                const std::int64_t j = pc.indices[std::size_t(s)];
                cd sum = 0;
                for (std::int64_t l = 0; l < k; ++l)
                    sum += at(a.host, ta ? m : k, ta, i, l) * at(b.host, tb ? k : n, tb, l, j);
                e[std::size_t(s)] = alpha * sum + with_beta * cd(before[std::size_t(s)]);
            }
        return e;
    };
    plan.execute(alpha, beta, stream);
    std::vector<T> got = download<T>(c.values, stream);
    EXPECT_LT(test::relative_error(got, expected(vc, beta)), tolerance<T>());

    // Replayed from a graph on fresh C values; beta 0 ignores what C held.
    core::Graph graph = core::Graph::capture(stream, [&](core::StreamRef) { plan.execute(alpha, 0.0, stream); });
    vc = random_values<T>(pc.nnz(), rng, 1e6);
    upload_into(c.values, vc, stream);
    graph.launch(stream);
    got = download<T>(c.values, stream);
    // The reference with β = 0 itself: adding β·C (C ~ 1e6) and taking it off again would leave
    // rounding of eps·|β|·1e6 ≈ 3e-10 in a reference of size ~1 (the 2e-11..4e-11 "errors" seen).
    EXPECT_LT(test::relative_error(got, expected(vc, 0.0)), tolerance<T>());
}

TEST(SparseProductsGpu, SDDMMAgainstSampledSums) {
    GPUMATH_REQUIRE_GPU();
    check_sddmm<float, std::int32_t>(true, true, Operation::none, Operation::none);
    check_sddmm<double, std::int64_t>(true, true, Operation::none, Operation::none);
    check_sddmm<std::complex<float>, std::int32_t>(true, true, Operation::none, Operation::none);
    check_sddmm<std::complex<double>, std::int32_t>(true, true, Operation::none, Operation::none);
    check_sddmm<float, std::int32_t>(false, false, Operation::none, Operation::none);
    check_sddmm<double, std::int32_t>(true, false, Operation::transpose, Operation::none);
    check_sddmm<std::complex<double>, std::int64_t>(false, true, Operation::none, Operation::transpose);
}

// ---------------------------------------------------------------------------------------------
// Triangular solves

/// A square pattern with its diagonal stored and entries in both triangles; values of modest size
/// off the diagonal and of modulus in [1, 2] on it, so each triangle is well conditioned.
template <class T>
std::vector<T> triangular_values(const Pattern& p, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<T> v(std::size_t(p.nnz()));
    const double off = 0.5 / std::max<double>(1.0, double(p.nnz()) / double(p.rows));
    for (std::int64_t i = 0; i < p.rows; ++i)
        for (std::int64_t e = p.offsets[std::size_t(i)]; e < p.offsets[std::size_t(i + 1)]; ++e) {
            const cd r(u(rng), is_complex_v<T> ? u(rng) : 0.0);
            v[std::size_t(e)] =
                to_t<T>(p.indices[std::size_t(e)] == i ? (r.real() < 0 ? -1.5 : 1.5) + 0.5 * r : off * r);
        }
    return v;
}

/// op(the triangle of A that the options read), dense.
template <class T>
Dense triangle_operator(const Pattern& p, const std::vector<T>& v, const TriangularSolveOptions& o) {
    const std::int64_t n = p.rows;
    Dense t(std::size_t(n * n));
    for (std::int64_t i = 0; i < n; ++i) {
        for (std::int64_t e = p.offsets[std::size_t(i)]; e < p.offsets[std::size_t(i + 1)]; ++e) {
            const std::int64_t j = p.indices[std::size_t(e)];
            const bool used = o.triangle == Triangle::lower ? j < i : j > i;
            if (used || (j == i && o.diagonal == Diagonal::non_unit)) t[std::size_t(i * n + j)] = cd(v[std::size_t(e)]);
        }
        if (o.diagonal == Diagonal::unit) t[std::size_t(i * n + i)] = 1.0;
    }
    if (o.op == Operation::none) return t;
    Dense r(t.size());
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            const cd x = t[std::size_t(j * n + i)];
            r[std::size_t(i * n + j)] = o.op == Operation::conjugate_transpose ? std::conj(x) : x;
        }
    return r;
}

/// ‖M·X − α·B‖ / ‖α·B‖ for right-hand sides stored in `layout` (element (i, c) at
/// i·stride(0) + c·stride(1)).
template <class T>
double residual(const Dense& mat, std::int64_t n, const std::vector<T>& x, const std::vector<T>& b,
                const TensorLayout& layout, cd alpha) {
    const std::int64_t k = layout.rank() == 1 ? 1 : layout.shape(1);
    const std::int64_t rs = layout.stride(0), cs = layout.rank() == 1 ? 0 : layout.stride(1);
    Dense lhs(std::size_t(n * k)), rhs(std::size_t(n * k));
    for (std::int64_t c = 0; c < k; ++c)
        for (std::int64_t i = 0; i < n; ++i) {
            cd s = 0;
            for (std::int64_t j = 0; j < n; ++j) s += mat[std::size_t(i * n + j)] * cd(x[std::size_t(j * rs + c * cs)]);
            lhs[std::size_t(c * n + i)] = s;
            rhs[std::size_t(c * n + i)] = alpha * cd(b[std::size_t(i * rs + c * cs)]);
        }
    return test::relative_error(lhs, rhs);
}

template <class T, class I>
void check_triangular(const TriangularSolveOptions& options, std::int64_t k, bool row_major) {
    SCOPED_TRACE(testing::Message() << to_string(data_type_of<T>()) << " i" << sizeof(I) * 8 << " "
                                    << to_string(options.triangle) << " " << to_string(options.diagonal) << " op "
                                    << to_string(options.op) << " k " << k << (row_major ? " row" : " col"));
    auto rng = test::rng_for_test();
    const core::Stream stream;
    const std::int64_t n = 41;
    const Pattern pa = random_pattern(n, n, 0.12, rng, 7, true);
    std::vector<T> va = triangular_values<T>(pa, rng);
    const DeviceCsr<T, I> a(pa, va, stream);
    const TensorLayout layout = k == 0      ? TensorLayout(data_type_of<T>(), {n})
                                : row_major ? TensorLayout(data_type_of<T>(), {n, k})
                                            : TensorLayout(data_type_of<T>(), {n, k}, {1, n});
    const std::int64_t count = k == 0 ? n : n * k;
    std::vector<T> hb = random_values<T>(count, rng);
    const Tensor b = Tensor::from_host(hb, {count}, stream);
    const Tensor x =
        Tensor::from_host(std::vector<T>(std::size_t(count), to_t<T>(cd(std::nan(""), 0))), {count}, stream);
    const TensorView bv(b.data(), layout), xv(x.data(), layout);

    TriangularSolve plan(a.view, layout, options);
    plan.plan(stream);
    const cd alpha = is_complex_v<T> ? cd(2.0, 0.5) : cd(2.0, 0);
    plan.solve(bv, xv, alpha, stream);
    EXPECT_LT(residual(triangle_operator(pa, va, options), n, download<T>(x, stream), hb, layout, alpha),
              tolerance<T>() * 10);

    // Many solves from one graph, with new right-hand sides in the captured buffer.
    core::Graph graph = core::Graph::capture(stream, [&](core::StreamRef) { plan.solve(bv, xv, alpha, stream); });
    hb = random_values<T>(count, rng);
    upload_into(b, hb, stream);
    graph.launch(stream);
    stream.synchronize();
    EXPECT_LT(residual(triangle_operator(pa, va, options), n, download<T>(x, stream), hb, layout, alpha),
              tolerance<T>() * 10);

    // New values of A, same pattern.
    va = triangular_values<T>(pa, rng);
    upload_into(a.values, va, stream);
    plan.update_values(stream);
    plan.solve(bv, xv, 1.0, stream);
    EXPECT_LT(residual(triangle_operator(pa, va, options), n, download<T>(x, stream), hb, layout, 1.0),
              tolerance<T>() * 10);
}

TEST(SparseProductsGpu, SpSVResiduals) {
    GPUMATH_REQUIRE_GPU();
    check_triangular<float, std::int32_t>({}, 0, true);
    check_triangular<double, std::int64_t>({.triangle = Triangle::upper}, 0, true);
    check_triangular<std::complex<float>, std::int32_t>({.diagonal = Diagonal::unit}, 0, true);
    check_triangular<std::complex<double>, std::int32_t>({.op = Operation::conjugate_transpose}, 0, true);
    check_triangular<double, std::int32_t>({.triangle = Triangle::upper, .op = Operation::transpose}, 0, true);
}

TEST(SparseProductsGpu, SpSMResiduals) {
    GPUMATH_REQUIRE_GPU();
    check_triangular<float, std::int32_t>({}, 5, true);
    check_triangular<double, std::int32_t>({}, 5, false);
    check_triangular<std::complex<float>, std::int64_t>({.triangle = Triangle::upper}, 3, true);
    check_triangular<std::complex<double>, std::int32_t>({.diagonal = Diagonal::unit, .op = Operation::transpose}, 4,
                                                         false);
}

// A zero on the diagonal (stored as 0, or not stored): cuSPARSE's generic API reports nothing; the
// solve must complete without an exception or a fault. What x holds is printed for the record.
TEST(SparseProductsGpu, SingularTriangleIsNotACrash) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const core::Stream stream;
    const std::int64_t n = 16;
    for (const bool structural : {false, true}) {
        Pattern p = random_pattern(n, n, 0.2, rng, -1, true);
        std::vector<double> v = triangular_values<double>(p, rng);
        if (structural) {  // drop row 5's diagonal entry
            std::vector<std::int64_t> indices;
            std::vector<double> values;
            std::vector<std::int64_t> offsets{0};
            for (std::int64_t i = 0; i < n; ++i) {
                for (std::int64_t e = p.offsets[std::size_t(i)]; e < p.offsets[std::size_t(i + 1)]; ++e)
                    if (!(i == 5 && p.indices[std::size_t(e)] == 5)) {
                        indices.push_back(p.indices[std::size_t(e)]);
                        values.push_back(v[std::size_t(e)]);
                    }
                offsets.push_back(std::int64_t(indices.size()));
            }
            p.offsets = offsets;
            p.indices = indices;
            v = values;
        } else {
            for (std::int64_t e = p.offsets[5]; e < p.offsets[6]; ++e)
                if (p.indices[std::size_t(e)] == 5) v[std::size_t(e)] = 0.0;
        }
        const DeviceCsr<double, std::int32_t> a(p, v, stream);
        const Tensor b = Tensor::from_host(std::vector<double>(std::size_t(n), 1.0), {n}, stream);
        const Tensor x = Tensor::empty(DataType::f64, {n}, stream);
        TriangularSolve plan(a.view, TensorLayout(DataType::f64, {n}));
        EXPECT_NO_THROW(plan.plan(stream));
        EXPECT_NO_THROW(plan.solve(b, x, 1.0, stream));
        EXPECT_NO_THROW(stream.synchronize());
        const std::vector<double> h = download<double>(x, stream);
        const auto non_finite = std::count_if(h.begin(), h.end(), [](double d) { return !std::isfinite(d); });
        std::cout << (structural ? "structural" : "numerical") << " zero at row 5: x[4] = " << h[4]
                  << ", x[5] = " << h[5] << ", non-finite entries: " << non_finite << " of " << n << '\n';
        EXPECT_TRUE(std::isfinite(h[4]));  // rows before the zero are solved normally
    }
}

}  // namespace
}  // namespace gpumath::sparse
