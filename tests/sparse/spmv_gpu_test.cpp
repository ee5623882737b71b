// SPDX-License-Identifier: Apache-2.0
// SpMV and SpMM plans and the stateless spmv and spmm on the GPU, against a host CSR reference
// written here (no gpumath in it): every format (CSR, CSC, COO, BSR), i32 and i64 indices, f32,
// f64, c32 and c64 values, the three operations, α and β, batches, new values of a planned
// pattern, capture and replay, and the automatic algorithm choice. Generated matrices: a 27-point
// 3-D Laplacian, a power-law graph with empty rows, a matrix with one dense row.
#include <gpumath/sparse.hpp>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <cuda_fp16.h>

#include <gpumath/core/graph.hpp>
#include <gpumath/tensor.hpp>
#include <gpumath/tensor_ops.hpp>

#include "common/test_util.hpp"

namespace gpumath::sparse {
namespace {

using cd = std::complex<double>;

// ---------------------------------------------------------------------------------------------
// The host reference: a CSR matrix of complex<double> values and the products on it.

struct HostCsr {
    std::int64_t rows = 0, cols = 0;
    std::vector<std::int64_t> offsets, indices;
    std::vector<cd> values;
    [[nodiscard]] std::int64_t nnz() const { return std::int64_t(indices.size()); }
};

/// Random values in [-1, 1] (imaginary parts too when `complex`).
cd random_value(std::mt19937_64& rng, bool complex) {
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    return complex ? cd(u(rng), u(rng)) : cd(u(rng), 0.0);
}

/// The 27-point Laplacian of an n × n × n grid: 26 on the diagonal, -1 for each neighbour.
HostCsr laplacian27(std::int64_t n) {
    HostCsr a;
    a.rows = a.cols = n * n * n;
    a.offsets.push_back(0);
    for (std::int64_t z = 0; z < n; ++z)
        for (std::int64_t y = 0; y < n; ++y)
            for (std::int64_t x = 0; x < n; ++x) {
                for (std::int64_t dz = -1; dz <= 1; ++dz)
                    for (std::int64_t dy = -1; dy <= 1; ++dy)
                        for (std::int64_t dx = -1; dx <= 1; ++dx) {
                            const std::int64_t xx = x + dx, yy = y + dy, zz = z + dz;
                            if (xx < 0 || yy < 0 || zz < 0 || xx >= n || yy >= n || zz >= n) continue;
                            a.indices.push_back((zz * n + yy) * n + xx);
                            a.values.emplace_back(dx == 0 && dy == 0 && dz == 0 ? 26.0 : -1.0, 0.0);
                        }
                a.offsets.push_back(a.nnz());
            }
    return a;
}

/// A power-law graph: row lengths from a Zipf-like law, some rows empty, row `dense_row` full.
HostCsr power_law(std::int64_t rows, std::int64_t cols, std::mt19937_64& rng, bool complex,
                  std::int64_t dense_row = -1) {
    HostCsr a;
    a.rows = rows;
    a.cols = cols;
    a.offsets.push_back(0);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::uniform_int_distribution<std::int64_t> col(0, cols - 1);
    for (std::int64_t r = 0; r < rows; ++r) {
        std::vector<std::int64_t> cs;
        if (r == dense_row) {
            for (std::int64_t c = 0; c < cols; ++c) cs.push_back(c);
        } else if (u(rng) > 0.2) {  // about a fifth of the rows are empty
            const auto len = std::int64_t(std::min<double>(double(cols), 1.0 / std::pow(u(rng) + 1e-3, 0.9)));
            for (std::int64_t k = 0; k < len; ++k) cs.push_back(col(rng));
            std::sort(cs.begin(), cs.end());
            cs.erase(std::unique(cs.begin(), cs.end()), cs.end());
        }
        for (const std::int64_t c : cs) {
            a.indices.push_back(c);
            a.values.push_back(random_value(rng, complex));
        }
        a.offsets.push_back(a.nnz());
    }
    return a;
}

/// y = α·op(A)·x + β·y0.
std::vector<cd> reference_spmv(const HostCsr& a, Operation op, const std::vector<cd>& x, const std::vector<cd>& y0,
                               cd alpha, cd beta) {
    const std::int64_t m = op == Operation::none ? a.rows : a.cols;
    std::vector<cd> acc(std::size_t(m), cd(0.0, 0.0));
    for (std::int64_t r = 0; r < a.rows; ++r)
        for (std::int64_t k = a.offsets[std::size_t(r)]; k < a.offsets[std::size_t(r) + 1]; ++k) {
            const std::int64_t c = a.indices[std::size_t(k)];
            const cd v = a.values[std::size_t(k)];
            if (op == Operation::none) acc[std::size_t(r)] += v * x[std::size_t(c)];
            else if (op == Operation::transpose) acc[std::size_t(c)] += v * x[std::size_t(r)];
            else acc[std::size_t(c)] += std::conj(v) * x[std::size_t(r)];
        }
    std::vector<cd> y(static_cast<std::size_t>(m));
    for (std::size_t i = 0; i < y.size(); ++i)
        y[i] = alpha * acc[i] + (beta == cd(0.0, 0.0) ? cd(0.0, 0.0) : beta * y0[i]);
    return y;
}

/// The scale the error of row i is measured against: Σ|a_ij·x_j| + |β·y0_i|, and at least 1.
std::vector<double> row_scales(const HostCsr& a, Operation op, const std::vector<cd>& x, const std::vector<cd>& y0,
                               cd alpha, cd beta) {
    const std::int64_t m = op == Operation::none ? a.rows : a.cols;
    std::vector<double> s(std::size_t(m), 1.0);
    for (std::int64_t r = 0; r < a.rows; ++r)
        for (std::int64_t k = a.offsets[std::size_t(r)]; k < a.offsets[std::size_t(r) + 1]; ++k) {
            const std::int64_t c = a.indices[std::size_t(k)];
            const double v = std::abs(a.values[std::size_t(k)]) * std::abs(alpha);
            if (op == Operation::none) s[std::size_t(r)] += v * std::abs(x[std::size_t(c)]);
            else s[std::size_t(c)] += v * std::abs(x[std::size_t(r)]);
        }
    if (beta != cd(0.0, 0.0))
        for (std::size_t i = 0; i < s.size(); ++i) s[i] += std::abs(beta * y0[i]);
    return s;
}

// ---------------------------------------------------------------------------------------------
// Device copies of a host matrix in each format.

template <class T>
T to_value(cd v) {
    if constexpr (std::is_same_v<T, std::complex<float>>) return {float(v.real()), float(v.imag())};
    else if constexpr (std::is_same_v<T, std::complex<double>>) return v;
    else if constexpr (std::is_same_v<T, __half>) return __float2half(float(v.real()));
    else return T(v.real());
}

template <class T>
cd from_value(T v) {
    if constexpr (std::is_same_v<T, std::complex<float>>) return {v.real(), v.imag()};
    else if constexpr (std::is_same_v<T, std::complex<double>>) return v;
    else return {double(v), 0.0};
}

template <class T>
constexpr bool is_complex_v = std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

template <class T>
double tolerance() {
    return std::is_same_v<T, float> || std::is_same_v<T, std::complex<float>> ? 2e-5 : 1e-12;
}

/// A device matrix: its arrays and a view of them.
struct DeviceMatrix {
    Tensor offsets, indices, row_indices, values;
    MatrixView view;
};

template <class I>
std::vector<I> narrow(const std::vector<std::int64_t>& v) {
    return std::vector<I>(v.begin(), v.end());
}

template <class T>
std::vector<T> values_of(const std::vector<cd>& v) {
    std::vector<T> out;
    out.reserve(v.size());
    for (const cd x : v) out.push_back(to_value<T>(x));
    return out;
}

/// `a` on the device in `format` (BSR with blocks of `block`; `a`'s sizes multiples of it).
template <class T, class I>
DeviceMatrix upload(const HostCsr& a, Format format, core::StreamRef stream, std::int64_t block = 2) {
    DeviceMatrix d;
    const auto n = [](const auto& v) { return std::int64_t(v.size()); };
    switch (format) {
        case Format::csr: {
            d.offsets = Tensor::from_host(narrow<I>(a.offsets), {n(a.offsets)}, stream);
            d.indices = Tensor::from_host(narrow<I>(a.indices), {n(a.indices)}, stream);
            d.values = Tensor::from_host(values_of<T>(a.values), {n(a.values)}, stream);
            d.view = MatrixView::csr(a.rows, a.cols, d.offsets, d.indices, d.values);
            break;
        }
        case Format::coo: {
            std::vector<std::int64_t> rows;
            for (std::int64_t r = 0; r < a.rows; ++r)
                for (std::int64_t k = a.offsets[std::size_t(r)]; k < a.offsets[std::size_t(r) + 1]; ++k)
                    rows.push_back(r);
            d.row_indices = Tensor::from_host(narrow<I>(rows), {n(rows)}, stream);
            d.indices = Tensor::from_host(narrow<I>(a.indices), {n(a.indices)}, stream);
            d.values = Tensor::from_host(values_of<T>(a.values), {n(a.values)}, stream);
            d.view = MatrixView::coo(a.rows, a.cols, d.row_indices, d.indices, d.values);
            break;
        }
        case Format::csc: {  // the transpose's CSR
            std::vector<std::int64_t> offsets(std::size_t(a.cols) + 1, 0), rows(a.indices.size());
            std::vector<cd> values(a.values.size());
            for (const std::int64_t c : a.indices) ++offsets[std::size_t(c) + 1];
            for (std::size_t c = 0; c < std::size_t(a.cols); ++c) offsets[c + 1] += offsets[c];
            std::vector<std::int64_t> next(offsets.begin(), offsets.end() - 1);
            for (std::int64_t r = 0; r < a.rows; ++r)
                for (std::int64_t k = a.offsets[std::size_t(r)]; k < a.offsets[std::size_t(r) + 1]; ++k) {
                    const std::int64_t at = next[std::size_t(a.indices[std::size_t(k)])]++;
                    rows[std::size_t(at)] = r;
                    values[std::size_t(at)] = a.values[std::size_t(k)];
                }
            d.offsets = Tensor::from_host(narrow<I>(offsets), {n(offsets)}, stream);
            d.indices = Tensor::from_host(narrow<I>(rows), {n(rows)}, stream);
            d.values = Tensor::from_host(values_of<T>(values), {n(values)}, stream);
            d.view = MatrixView::csc(a.rows, a.cols, d.offsets, d.indices, d.values);
            break;
        }
        case Format::bsr: {  // row-major blocks; a block is stored when it holds an entry
            const std::int64_t br = a.rows / block, bc = a.cols / block;
            std::vector<std::int64_t> offsets{0}, cols;
            std::vector<cd> values;
            for (std::int64_t b = 0; b < br; ++b) {
                std::vector<std::int64_t> blocks;
                for (std::int64_t r = b * block; r < (b + 1) * block; ++r)
                    for (std::int64_t k = a.offsets[std::size_t(r)]; k < a.offsets[std::size_t(r) + 1]; ++k)
                        blocks.push_back(a.indices[std::size_t(k)] / block);
                std::sort(blocks.begin(), blocks.end());
                blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
                for (const std::int64_t c : blocks) {
                    cols.push_back(c);
                    std::vector<cd> dense(std::size_t(block * block), cd(0.0, 0.0));
                    for (std::int64_t r = b * block; r < (b + 1) * block; ++r)
                        for (std::int64_t k = a.offsets[std::size_t(r)]; k < a.offsets[std::size_t(r) + 1]; ++k)
                            if (a.indices[std::size_t(k)] / block == c)
                                dense[std::size_t((r - b * block) * block + a.indices[std::size_t(k)] - c * block)] =
                                    a.values[std::size_t(k)];
                    values.insert(values.end(), dense.begin(), dense.end());
                }
                offsets.push_back(std::int64_t(cols.size()));
            }
            (void)bc;
            d.offsets = Tensor::from_host(narrow<I>(offsets), {n(offsets)}, stream);
            d.indices = Tensor::from_host(narrow<I>(cols), {n(cols)}, stream);
            d.values = Tensor::from_host(values_of<T>(values), {n(values)}, stream);
            d.view = MatrixView::bsr(a.rows, a.cols, block, d.offsets, d.indices, d.values);
            break;
        }
    }
    return d;
}

template <class T>
std::vector<cd> random_vector(std::int64_t n, std::mt19937_64& rng) {
    std::vector<cd> v(static_cast<std::size_t>(n));
    for (cd& x : v) x = random_value(rng, is_complex_v<T>);
    return v;
}

template <class T>
std::vector<cd> download(const Tensor& t) {
    std::vector<cd> out;
    for (const T v : t.to_host<T>()) out.push_back(from_value(v));
    return out;
}

template <class T>
void expect_close(const std::vector<cd>& got, const std::vector<cd>& want, const std::vector<double>& scale,
                  const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    std::size_t bad = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double err = std::abs(got[i] - want[i]);
        if (!(err <= tolerance<T>() * scale[i])) {
            if (++bad <= 3)
                ADD_FAILURE() << what << ": entry " << i << " is " << got[i] << ", the reference " << want[i];
        }
    }
    EXPECT_EQ(bad, 0U) << what;
}

/// One SpMV through a plan checked against the reference: y poisoned (NaN) when β = 0.
template <class T, class I>
void check_spmv(const HostCsr& a, Format format, Operation op, SpMVAlgorithm algorithm, double alpha, double beta,
                std::mt19937_64& rng) {
    const core::Stream stream;
    const DeviceMatrix d = upload<T, I>(a, format, stream);
    const std::int64_t m = op == Operation::none ? a.rows : a.cols, k = op == Operation::none ? a.cols : a.rows;
    const std::vector<cd> x = random_vector<T>(k, rng);
    std::vector<cd> y0 = random_vector<T>(m, rng);
    if (beta == 0.0) std::fill(y0.begin(), y0.end(), cd(std::numeric_limits<double>::quiet_NaN(), 0.0));
    const Tensor xd = Tensor::from_host(values_of<T>(x), {k}, stream);
    const Tensor yd = Tensor::from_host(values_of<T>(y0), {m}, stream);
    SpMV plan(d.view, xd, yd, {.op = op, .algorithm = algorithm});
    plan.execute(xd, yd, alpha, beta, stream);
    EXPECT_TRUE(plan.planned());
    EXPECT_NE(plan.algorithm(), SpMVAlgorithm::automatic);
    const std::vector<cd> want = reference_spmv(a, op, x, y0, alpha, beta);
    expect_close<T>(
        download<T>(yd), want, row_scales(a, op, x, y0, alpha, beta),
        (::testing::Message() << to_string(format) << " " << to_string(op) << " " << to_string(algorithm) << " "
                              << to_string(data_type_of<T>()) << " index " << to_string(data_type_of<I>()))
            .GetString());
}

// ---------------------------------------------------------------------------------------------

template <class T, class I>
void check_all_formats(std::mt19937_64& rng) {
    const HostCsr lap = laplacian27(4);                                // 64 × 64
    const HostCsr graph = power_law(96, 80, rng, is_complex_v<T>, 7);  // rectangular, empty rows
    for (const HostCsr* a : {&lap, &graph})
        for (const Format f : {Format::csr, Format::csc, Format::coo, Format::bsr})
            for (const Operation op : {Operation::none, Operation::transpose, Operation::conjugate_transpose}) {
                if (f == Format::bsr && op != Operation::none) continue;  // cuSPARSE's BSR SpMV: op(A) = A
                check_spmv<T, I>(*a, f, op, SpMVAlgorithm::automatic, 1.5, -0.5, rng);
                check_spmv<T, I>(*a, f, op, SpMVAlgorithm::library_default, 1.0, 0.0, rng);
            }
}

TEST(SparseSpMVGpu, MatchesTheHostReferenceF32) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    check_all_formats<float, std::int32_t>(rng);
    check_all_formats<float, std::int64_t>(rng);
}

TEST(SparseSpMVGpu, MatchesTheHostReferenceF64) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    check_all_formats<double, std::int32_t>(rng);
    check_all_formats<double, std::int64_t>(rng);
}

TEST(SparseSpMVGpu, MatchesTheHostReferenceComplex) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    check_all_formats<std::complex<double>, std::int32_t>(rng);
    check_all_formats<std::complex<float>, std::int64_t>(rng);
}

TEST(SparseSpMVGpu, EveryNumberedAlgorithm) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const HostCsr a = power_law(200, 150, rng, false, 3);
    for (const Format f : {Format::csr, Format::coo, Format::csc})
        for (const SpMVAlgorithm alg : {SpMVAlgorithm::alg1, SpMVAlgorithm::alg2}) {
            check_spmv<double, std::int32_t>(a, f, Operation::none, alg, 2.0, 0.25, rng);
            check_spmv<float, std::int64_t>(a, f, Operation::none, alg, -1.0, 1.0, rng);
        }
}

TEST(SparseSpMVGpu, HalfValuesAndXWithF32Y) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    HostCsr a = laplacian27(3);
    const core::Stream stream;
    const DeviceMatrix d = upload<__half, std::int32_t>(a, Format::csr, stream);
    // cuSPARSE's mixed precision: A and x f16, y f32, computed in f32. x is rounded to f16 first so
    // that the reference sees the operand the GPU sees.
    std::vector<cd> x = random_vector<float>(a.cols, rng);
    for (cd& v : x) v = cd(double(__half2float(__float2half(float(v.real())))), 0.0);
    const Tensor xd = Tensor::from_host(values_of<__half>(x), {a.cols}, stream);
    const Tensor yd = Tensor::empty(DataType::f32, {a.rows}, stream);
    SpMV plan(d.view, xd, yd);
    plan.execute(xd, yd, 1.0, 0.0, stream);
    const std::vector<cd> want = reference_spmv(a, Operation::none, x, x, 1.0, 0.0);
    // The Laplacian's values (26, -1) are exact in f16.
    expect_close<float>(download<float>(yd), want, row_scales(a, Operation::none, x, x, 1.0, 0.0), "f16 values");
}

TEST(SparseSpMVGpu, NewValuesOfThePlannedPattern) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    HostCsr a = power_law(120, 120, rng, false, 0);
    const core::Stream stream;
    const DeviceMatrix d = upload<double, std::int32_t>(a, Format::csr, stream);
    const std::vector<cd> x = random_vector<double>(a.cols, rng);
    const Tensor xd = Tensor::from_host(values_of<double>(x), {a.cols}, stream);
    const Tensor yd = Tensor::empty(DataType::f64, {a.rows}, stream);
    SpMV plan(d.view, xd, yd);
    stream.synchronize();  // plan() reads A's arrays on a private stream
    plan.plan();
    HostCsr b = a;
    for (cd& v : b.values) v = random_value(rng, false);
    const Tensor other = Tensor::from_host(values_of<double>(b.values), {b.nnz()}, stream);
    for (int round = 0; round < 2; ++round) {  // the other values, then the planned ones again
        const HostCsr& h = round == 0 ? b : a;
        const MatrixView m = round == 0 ? d.view.with_values(other) : d.view;
        plan.execute(m, xd, yd, 1.0, 0.0, stream);
        expect_close<double>(download<double>(yd), reference_spmv(h, Operation::none, x, x, 1.0, 0.0),
                             row_scales(h, Operation::none, x, x, 1.0, 0.0), "new values");
    }
}

TEST(SparseSpMVGpu, CapturedAndReplayed) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const HostCsr a = laplacian27(5);
    const core::Stream stream;
    const DeviceMatrix d = upload<float, std::int32_t>(a, Format::csr, stream);
    const Tensor xd = Tensor::empty(DataType::f32, {a.cols}, stream);
    const Tensor yd = Tensor::empty(DataType::f32, {a.rows}, stream);
    SpMV plan(d.view, xd, yd);
    stream.synchronize();  // plan() reads A's arrays on a private stream
    plan.plan();
    core::Graph graph = core::Graph::capture(stream, [&](core::StreamRef s) { plan.execute(xd, yd, 2.0, 0.0, s); });
    for (int round = 0; round < 3; ++round) {
        const std::vector<cd> x = random_vector<float>(a.cols, rng);
        copy(Tensor::from_host(values_of<float>(x), {a.cols}, stream), xd, stream);
        fill(yd, std::complex<double>(std::numeric_limits<double>::quiet_NaN(), 0.0), stream);
        graph.launch(stream);
        stream.synchronize();
        expect_close<float>(download<float>(yd), reference_spmv(a, Operation::none, x, x, 2.0, 0.0),
                            row_scales(a, Operation::none, x, x, 2.0, 0.0), "replay");
    }
}

TEST(SparseSpMVGpu, FirstExecuteInsideACapturePlansOutsideIt) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const HostCsr a = power_law(300, 200, rng, false, 9);
    const core::Stream stream;
    const DeviceMatrix d = upload<double, std::int64_t>(a, Format::coo, stream);
    const std::vector<cd> x = random_vector<double>(a.cols, rng);
    const Tensor xd = Tensor::from_host(values_of<double>(x), {a.cols}, stream);
    const Tensor yd = Tensor::empty(DataType::f64, {a.rows}, stream);
    stream.synchronize();
    SpMV plan(d.view, xd, yd);  // not planned: the captured execute plans (on a private stream)
    core::Graph graph = core::Graph::capture(stream, [&](core::StreamRef s) { plan.execute(xd, yd, 1.0, 0.0, s); });
    EXPECT_TRUE(plan.planned());
    fill(yd, std::complex<double>(std::numeric_limits<double>::quiet_NaN(), 0.0), stream);
    graph.launch(stream);
    stream.synchronize();
    expect_close<double>(download<double>(yd), reference_spmv(a, Operation::none, x, x, 1.0, 0.0),
                         row_scales(a, Operation::none, x, x, 1.0, 0.0), "planned inside a capture");
}

TEST(SparseSpMVGpu, StatelessKeepsAPlanPerStream) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const HostCsr a = laplacian27(3);
    const core::Stream s1, s2;
    const DeviceMatrix d = upload<float, std::int32_t>(a, Format::csr, s1);
    const std::vector<cd> x = random_vector<float>(a.cols, rng);
    const Tensor xd = Tensor::from_host(values_of<float>(x), {a.cols}, s1);
    const Tensor y1 = Tensor::empty(DataType::f32, {a.rows}, s1), y2 = Tensor::empty(DataType::f32, {a.rows}, s1);
    s1.synchronize();
    sparse_plan_cache().clear();
    sparse_plan_cache().reset_stats();
    spmv(d.view, xd, y1, s1);
    spmv(d.view, xd, y2, s2);
    EXPECT_EQ(sparse_plan_cache().stats().misses, 2U);
    const auto want = reference_spmv(a, Operation::none, x, x, 1.0, 0.0);
    const auto scale = row_scales(a, Operation::none, x, x, 1.0, 0.0);
    expect_close<float>(download<float>(y1), want, scale, "stream 1");
    s2.synchronize();
    expect_close<float>(download<float>(y2), want, scale, "stream 2");
}

TEST(SparseSpMVGpu, AutomaticChoiceIsKept) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const HostCsr a = power_law(4000, 4000, rng, false, 11);
    const core::Stream stream;
    const DeviceMatrix d = upload<float, std::int32_t>(a, Format::csr, stream);
    const Tensor xd = Tensor::empty(DataType::f32, {a.cols}, stream);
    const Tensor yd = Tensor::empty(DataType::f32, {a.rows}, stream);
    SpMV first(d.view, xd, yd);
    stream.synchronize();  // plan() reads A's arrays on a private stream
    first.plan();
    const SpMVAlgorithm chosen = first.algorithm();
    EXPECT_TRUE(chosen == SpMVAlgorithm::alg1 || chosen == SpMVAlgorithm::alg2) << to_string(chosen);
    EXPECT_GT(first.buffer_size(), 0U);
    SpMV second(d.view, xd, yd);
    stream.synchronize();  // plan() reads A's arrays on a private stream
    second.plan();
    EXPECT_EQ(second.algorithm(), chosen);
}

TEST(SparseSpMVGpu, StatelessCallsUseTheCache) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const HostCsr a = laplacian27(4);
    const core::Stream stream;
    const DeviceMatrix d = upload<double, std::int32_t>(a, Format::csr, stream);
    const std::vector<cd> x = random_vector<double>(a.cols, rng), b = random_vector<double>(a.rows, rng);
    const Tensor xd = Tensor::from_host(values_of<double>(x), {a.cols}, stream);
    const Tensor r = Tensor::from_host(values_of<double>(b), {a.rows}, stream);
    sparse_plan_cache().clear();
    sparse_plan_cache().reset_stats();
    spmv(d.view, xd, r, -1.0, 1.0, {}, stream);  // r = b - A·x
    expect_close<double>(download<double>(r), reference_spmv(a, Operation::none, x, b, -1.0, 1.0),
                         row_scales(a, Operation::none, x, b, -1.0, 1.0), "residual");
    const Tensor y = Tensor::empty(DataType::f64, {a.rows}, stream);
    spmv(d.view, xd, y, stream);
    spmv(d.view, xd, y, stream);
    const core::CacheStats s = sparse_plan_cache().stats();
    EXPECT_EQ(s.misses, 1U);
    EXPECT_EQ(s.hits, 2U);
    expect_close<double>(download<double>(y), reference_spmv(a, Operation::none, x, b, 1.0, 0.0),
                         row_scales(a, Operation::none, x, b, 1.0, 0.0), "stateless");
}

TEST(SparseSpMVGpu, EmptyShapes) {
    GPUMATH_REQUIRE_GPU();
    const core::Stream stream;
    // A 3 × 0 matrix: y = β·y.
    const Tensor offsets = Tensor::from_host(std::vector<std::int32_t>{0, 0, 0, 0}, {4}, stream);
    const Tensor indices = Tensor::empty(DataType::i32, {0}, stream);
    const Tensor values = Tensor::empty(DataType::f32, {0}, stream);
    const MatrixView a = MatrixView::csr(3, 0, offsets, indices, values);
    const Tensor x = Tensor::empty(DataType::f32, {0}, stream);
    const Tensor y = Tensor::from_host(std::vector<float>{1, 2, 3}, {3}, stream);
    SpMV plan(a, x, y);
    plan.execute(x, y, 1.0, 1.0, stream);
    EXPECT_EQ(y.to_host<float>(stream), (std::vector<float>{1, 2, 3}));
    plan.execute(x, y, 1.0, 0.0, stream);
    EXPECT_EQ(y.to_host<float>(stream), (std::vector<float>{0, 0, 0}));
}

// ---------------------------------------------------------------------------------------------
// SpMM.

/// C = α·op(A)·B + β·C0 for B (k, n) and C (m, n), stored row- or column-major on the host.
template <class T, class I>
void check_spmm(const HostCsr& a, Format format, Operation op, bool row_major, std::int64_t n, SpMMAlgorithm alg,
                std::mt19937_64& rng) {
    const core::Stream stream;
    const DeviceMatrix d = upload<T, I>(a, format, stream);
    const std::int64_t m = op == Operation::none ? a.rows : a.cols, k = op == Operation::none ? a.cols : a.rows;
    std::vector<std::vector<cd>> bcols, c0cols;
    for (std::int64_t j = 0; j < n; ++j) {
        bcols.push_back(random_vector<T>(k, rng));
        c0cols.push_back(random_vector<T>(m, rng));
    }
    const auto store = [&](const std::vector<std::vector<cd>>& cols, std::int64_t rows) {
        std::vector<cd> out(static_cast<std::size_t>(rows * n));
        for (std::int64_t j = 0; j < n; ++j)
            for (std::int64_t i = 0; i < rows; ++i)
                out[std::size_t(row_major ? i * n + j : j * rows + i)] = cols[std::size_t(j)][std::size_t(i)];
        return out;
    };
    const Tensor bt = Tensor::from_host(values_of<T>(store(bcols, k)), {k * n}, stream);
    const Tensor ct = Tensor::from_host(values_of<T>(store(c0cols, m)), {m * n}, stream);
    const DataType t = data_type_of<T>();
    const TensorView bv = row_major ? TensorView(bt.data(), t, {k, n}) : TensorView(bt.data(), t, {k, n}, {1, k});
    const TensorView cv = row_major ? TensorView(ct.data(), t, {m, n}) : TensorView(ct.data(), t, {m, n}, {1, m});
    SpMM plan(d.view, bv, cv, {.op = op, .algorithm = alg});
    plan.execute(bv, cv, 0.75, -2.0, stream);
    const std::vector<cd> got = download<T>(ct);
    for (std::int64_t j = 0; j < n; ++j) {
        const std::vector<cd> want = reference_spmv(a, op, bcols[std::size_t(j)], c0cols[std::size_t(j)], 0.75, -2.0);
        const std::vector<double> scale = row_scales(a, op, bcols[std::size_t(j)], c0cols[std::size_t(j)], 0.75, -2.0);
        std::vector<cd> col(static_cast<std::size_t>(m));
        for (std::int64_t i = 0; i < m; ++i) col[std::size_t(i)] = got[std::size_t(row_major ? i * n + j : j * m + i)];
        expect_close<T>(col, want, scale,
                        (::testing::Message() << "SpMM " << to_string(format) << " " << to_string(op)
                                              << (row_major ? " row-major" : " column-major") << " column " << j << " "
                                              << to_string(plan.algorithm()))
                            .GetString());
    }
}

TEST(SparseSpMMGpu, MatchesTheHostReference) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const HostCsr lap = laplacian27(4);
    const HostCsr graph = power_law(64, 48, rng, false, 5);
    for (const HostCsr* a : {&lap, &graph})
        for (const Format f : {Format::csr, Format::coo, Format::csc, Format::bsr})
            for (const bool row_major : {true, false}) {
                check_spmm<float, std::int32_t>(*a, f, Operation::none, row_major, 5, SpMMAlgorithm::automatic, rng);
                check_spmm<double, std::int64_t>(*a, f, Operation::none, row_major, 3, SpMMAlgorithm::library_default,
                                                 rng);
            }
    for (const Format f : {Format::csr, Format::coo})
        check_spmm<std::complex<double>, std::int32_t>(graph, f, Operation::conjugate_transpose, false, 4,
                                                       SpMMAlgorithm::library_default, rng);
    check_spmm<double, std::int32_t>(graph, Format::csr, Operation::transpose, false, 4, SpMMAlgorithm::automatic, rng);
}

TEST(SparseSpMMGpu, Batches) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const HostCsr a = power_law(40, 30, rng, false, 2);
    const core::Stream stream;
    const std::int64_t batch = 3, n = 4, m = a.rows, k = a.cols;
    // A's pattern with a value array per matrix.
    std::vector<HostCsr> as(std::size_t(batch), a);
    std::vector<double> values;
    for (HostCsr& h : as)
        for (cd& v : h.values) {
            v = random_value(rng, false);
            values.push_back(v.real());
        }
    const DeviceMatrix d = upload<double, std::int32_t>(a, Format::csr, stream);
    const Tensor batched_values = Tensor::from_host(values, {batch, a.nnz()}, stream);
    const MatrixView ab = MatrixView::csr(m, k, d.offsets, d.indices, batched_values);
    // B (batch, k, n) and C (batch, m, n), row-major.
    std::vector<double> bh(static_cast<std::size_t>(batch * k * n));
    for (double& v : bh) v = random_value(rng, false).real();
    const Tensor b = Tensor::from_host(bh, {batch, k, n}, stream);
    const Tensor c = Tensor::empty(DataType::f64, {batch, m, n}, stream);
    const auto column = [&](std::int64_t mat, std::int64_t j, bool broadcast) {
        std::vector<cd> x(static_cast<std::size_t>(k));
        for (std::int64_t i = 0; i < k; ++i)
            x[std::size_t(i)] = bh[std::size_t((broadcast ? 0 : mat) * k * n + i * n + j)];
        return x;
    };
    const auto check = [&](bool a_batched, bool b_batched, const char* what) {
        const MatrixView av = a_batched ? ab : d.view;
        const TensorView bv = b_batched ? b.view() : TensorView(b.data(), DataType::f64, {k, n});
        fill(c, std::complex<double>(std::numeric_limits<double>::quiet_NaN(), 0.0), stream);
        SpMM plan(av, bv, c);
        plan.execute(bv, c, 1.0, 0.0, stream);
        const std::vector<double> got = c.to_host<double>(stream);
        for (std::int64_t mat = 0; mat < batch; ++mat)
            for (std::int64_t j = 0; j < n; ++j) {
                const HostCsr& h = a_batched ? as[std::size_t(mat)] : a;
                const std::vector<cd> x = column(mat, j, !b_batched);
                const std::vector<cd> want = reference_spmv(h, Operation::none, x, x, 1.0, 0.0);
                std::vector<cd> col(static_cast<std::size_t>(m));
                for (std::int64_t i = 0; i < m; ++i) col[std::size_t(i)] = got[std::size_t(mat * m * n + i * n + j)];
                expect_close<double>(col, want, row_scales(h, Operation::none, x, x, 1.0, 0.0), what);
            }
    };
    check(true, true, "A and B batched");
    check(false, true, "A broadcast");
    check(true, false, "B broadcast");
}

TEST(SparseSpMMGpu, CapturedReplayedAndStateless) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const HostCsr a = laplacian27(4);
    const core::Stream stream;
    const DeviceMatrix d = upload<float, std::int32_t>(a, Format::csr, stream);
    const std::int64_t n = 8;
    const Tensor b = Tensor::empty(DataType::f32, {a.cols, n}, stream);
    const Tensor c = Tensor::empty(DataType::f32, {a.rows, n}, stream);
    SpMM plan(d.view, b, c);
    stream.synchronize();  // plan() reads A's arrays on a private stream
    plan.plan();
    core::Graph graph = core::Graph::capture(stream, [&](core::StreamRef s) { plan.execute(b, c, 1.0, 0.0, s); });
    for (int round = 0; round < 2; ++round) {
        std::vector<float> bh(std::size_t(a.cols * n));
        for (float& v : bh) v = float(random_value(rng, false).real());
        copy(Tensor::from_host(bh, {a.cols, n}, stream), b, stream);
        graph.launch(stream);
        const std::vector<float> got = c.to_host<float>(stream);
        Tensor c2 = Tensor::empty(DataType::f32, {a.rows, n}, stream);
        spmm(d.view, b, c2, stream);
        const std::vector<float> got2 = c2.to_host<float>(stream);
        for (std::int64_t j = 0; j < n; ++j) {
            std::vector<cd> x(std::size_t(a.cols)), col(std::size_t(a.rows)), col2(std::size_t(a.rows));
            for (std::int64_t i = 0; i < a.cols; ++i) x[std::size_t(i)] = bh[std::size_t(i * n + j)];
            for (std::int64_t i = 0; i < a.rows; ++i) {
                col[std::size_t(i)] = got[std::size_t(i * n + j)];
                col2[std::size_t(i)] = got2[std::size_t(i * n + j)];
            }
            const auto want = reference_spmv(a, Operation::none, x, x, 1.0, 0.0);
            const auto scale = row_scales(a, Operation::none, x, x, 1.0, 0.0);
            expect_close<float>(col, want, scale, "SpMM replay");
            expect_close<float>(col2, want, scale, "stateless spmm");
        }
    }
}

}  // namespace
}  // namespace gpumath::sparse
