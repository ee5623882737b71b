// SPDX-License-Identifier: Apache-2.0
// The stateless sparse calls on the GPU against host references that do not use gpumath: spgemm
// against a host CSR product, sddmm against sums entry by entry, triangular_solve (lower, non-unit,
// a vector and a 3-column matrix) and spsolve (a 3-D Poisson matrix, a vector and a row-major
// 3-column block) by their residuals, and a singular matrix raising NumericalError from spsolve.
// Skips with the reason when there is no GPU, and spsolve's tests when cuDSS cannot be loaded.
#include <gpumath/sparse.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <gpumath/tensor.hpp>

#include "common/test_util.hpp"

namespace gpumath::sparse {
namespace {

/// A CSR matrix on the host, i32 indices, f64 values.
struct HostCsr {
    std::int64_t rows = 0, cols = 0;
    std::vector<std::int32_t> offsets{0}, columns;
    std::vector<double> values;

    void end_row() { offsets.push_back(std::int32_t(columns.size())); }
};

/// A rows × cols matrix with each entry stored with probability `density`, sorted columns.
HostCsr random_csr(std::int64_t rows, std::int64_t cols, double density, std::mt19937_64& rng) {
    std::bernoulli_distribution keep(density);
    std::uniform_real_distribution<double> value(-1.0, 1.0);
    HostCsr a;
    a.rows = rows;
    a.cols = cols;
    for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t c = 0; c < cols; ++c)
            if (keep(rng)) {
                a.columns.push_back(std::int32_t(c));
                a.values.push_back(value(rng));
            }
        a.end_row();
    }
    return a;
}

/// The host product of two CSR matrices, row by row, as a map per row (column -> value).
std::vector<std::map<std::int32_t, double>> host_product(const HostCsr& a, const HostCsr& b) {
    std::vector<std::map<std::int32_t, double>> c(std::size_t(a.rows));
    for (std::int64_t i = 0; i < a.rows; ++i)
        for (std::int32_t e = a.offsets[std::size_t(i)]; e < a.offsets[std::size_t(i) + 1]; ++e) {
            const std::int32_t k = a.columns[std::size_t(e)];
            for (std::int32_t f = b.offsets[std::size_t(k)]; f < b.offsets[std::size_t(k) + 1]; ++f)
                c[std::size_t(i)][b.columns[std::size_t(f)]] += a.values[std::size_t(e)] * b.values[std::size_t(f)];
        }
    return c;
}

/// r = A·x on the host (x and r of `k` columns, column j at x[j * ld]).
std::vector<double> host_multiply(const HostCsr& a, const std::vector<double>& x, std::int64_t k, std::int64_t ld) {
    std::vector<double> r(std::size_t(k * ld), 0.0);
    for (std::int64_t j = 0; j < k; ++j)
        for (std::int64_t i = 0; i < a.rows; ++i) {
            double sum = 0;
            for (std::int32_t e = a.offsets[std::size_t(i)]; e < a.offsets[std::size_t(i) + 1]; ++e)
                sum += a.values[std::size_t(e)] * x[std::size_t(j * ld + a.columns[std::size_t(e)])];
            r[std::size_t(j * ld + i)] = sum;
        }
    return r;
}

/// max over columns of ||A x - b|| / ||b||, column j of x and b at [j * ld].
double relative_residual(const HostCsr& a, const std::vector<double>& x, const std::vector<double>& b, std::int64_t k,
                         std::int64_t ld) {
    const std::vector<double> ax = host_multiply(a, x, k, ld);
    double worst = 0;
    for (std::int64_t j = 0; j < k; ++j) {
        double r2 = 0, b2 = 0;
        for (std::int64_t i = 0; i < a.rows; ++i) {
            const double d = ax[std::size_t(j * ld + i)] - b[std::size_t(j * ld + i)];
            r2 += d * d;
            b2 += b[std::size_t(j * ld + i)] * b[std::size_t(j * ld + i)];
        }
        worst = std::max(worst, std::sqrt(r2 / b2));
    }
    return worst;
}

/// Row-major (rows, cols) host data transposed into column-major order (column j at [j * rows]).
std::vector<double> to_column_major(const std::vector<double>& row_major, std::int64_t rows, std::int64_t cols) {
    std::vector<double> out(row_major.size());
    for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) out[std::size_t(j * rows + i)] = row_major[std::size_t(i * cols + j)];
    return out;
}

/// The matrix on the device, with its view.
struct DeviceCsr {
    Tensor offsets, columns, values;
    MatrixView view;
    DeviceCsr(const HostCsr& a, core::StreamRef s)
        : offsets(Tensor::from_host(a.offsets, {std::int64_t(a.offsets.size())}, s)),
          columns(Tensor::from_host(a.columns, {std::int64_t(a.columns.size())}, s)),
          values(Tensor::from_host(a.values, {std::int64_t(a.values.size())}, s)),
          view(MatrixView::csr(a.rows, a.cols, offsets, columns, values)) {}
};

template <class T>
std::vector<T> read(const TensorView& v, core::StreamRef s) {
    s.synchronize();
    std::vector<T> out(std::size_t(v.size()));
    if (!out.empty()) {
        EXPECT_EQ(cudaMemcpy(out.data(), v.data(), out.size() * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    }
    return out;
}

std::vector<double> random_values(std::size_t count, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> value(-1.0, 1.0);
    std::vector<double> v(count);
    for (double& x : v) x = value(rng);
    return v;
}

class SparseStatelessGpu : public ::testing::Test {
protected:
    void SetUp() override {
        GPUMATH_REQUIRE_GPU();
        owned.emplace();
        stream = *owned;
    }
    std::mt19937_64 rng = test::rng_for_test();
    std::optional<core::Stream> owned;  // made once the test knows there is a GPU
    core::StreamRef stream;
};

TEST_F(SparseStatelessGpu, SpgemmMatchesHostProduct) {
    const HostCsr ha = random_csr(30, 40, 0.1, rng), hb = random_csr(40, 25, 0.15, rng);
    const DeviceCsr a(ha, stream), b(hb, stream);
    const Matrix c = spgemm(a.view, b.view, stream);
    const MatrixView& cv = c.view();
    ASSERT_EQ(cv.format(), Format::csr);
    ASSERT_EQ(cv.rows(), 30);
    ASSERT_EQ(cv.cols(), 25);
    const auto offsets = read<std::int32_t>(cv.offsets(), stream);
    const auto columns = read<std::int32_t>(cv.indices(), stream);
    const auto values = read<double>(cv.values(), stream);
    const auto expected = host_product(ha, hb);
    ASSERT_EQ(offsets.size(), 31U);
    for (std::int64_t i = 0; i < 30; ++i) {
        // Every stored entry is the host's (cuSPARSE may store structural zeros the host also has).
        std::map<std::int32_t, double> row;
        for (std::int32_t e = offsets[std::size_t(i)]; e < offsets[std::size_t(i) + 1]; ++e)
            row[columns[std::size_t(e)]] += values[std::size_t(e)];
        EXPECT_EQ(row.size(), expected[std::size_t(i)].size()) << "row " << i;
        for (const auto& [col, v] : expected[std::size_t(i)]) {
            const auto it = row.find(col);
            ASSERT_NE(it, row.end()) << "row " << i << " misses column " << col;
            EXPECT_NEAR(it->second, v, 1e-12) << "(" << i << ", " << col << ")";
        }
    }
}

TEST_F(SparseStatelessGpu, SddmmMatchesHostSums) {
    constexpr std::int64_t m = 20, n = 15, k = 8;
    const HostCsr hc = random_csr(m, n, 0.3, rng);
    const DeviceCsr c(hc, stream);
    // A (m × k) row-major; B (k × n) column-major.
    const std::vector<double> a_host = random_values(std::size_t(m * k), rng);
    const std::vector<double> b_host = random_values(std::size_t(k * n), rng);  // column-major
    const Tensor a = Tensor::from_host(a_host, {m, k}, stream);
    const Tensor b = Tensor::from_host(b_host, {n, k}, stream);
    const TensorView bv = b.view().transposed();  // (k, n), strides (1, k)
    const double alpha = 2.0, beta = 0.5;
    sddmm(a, bv, c.view, alpha, beta, {}, stream);
    const std::vector<double> got = read<double>(c.values, stream);
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int32_t e = hc.offsets[std::size_t(i)]; e < hc.offsets[std::size_t(i) + 1]; ++e) {
            const std::int32_t j = hc.columns[std::size_t(e)];
            double dot = 0;
            for (std::int64_t l = 0; l < k; ++l) dot += a_host[std::size_t(i * k + l)] * b_host[std::size_t(j * k + l)];
            EXPECT_NEAR(got[std::size_t(e)], alpha * dot + beta * hc.values[std::size_t(e)], 1e-12)
                << "(" << i << ", " << j << ")";
        }

    // op(A) = Aᵀ with A stored k × m row-major, β = 0.
    const std::vector<double> at_host = random_values(std::size_t(k * m), rng);
    const Tensor at = Tensor::from_host(at_host, {k, m}, stream);
    sddmm(at, bv, c.view, 1.0, 0.0, {.op_a = Operation::transpose}, stream);
    const std::vector<double> got_t = read<double>(c.values, stream);
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int32_t e = hc.offsets[std::size_t(i)]; e < hc.offsets[std::size_t(i) + 1]; ++e) {
            const std::int32_t j = hc.columns[std::size_t(e)];
            double dot = 0;
            for (std::int64_t l = 0; l < k; ++l)
                dot += at_host[std::size_t(l * m + i)] * b_host[std::size_t(j * k + l)];
            EXPECT_NEAR(got_t[std::size_t(e)], dot, 1e-12) << "(" << i << ", " << j << ")";
        }
}

/// A lower-triangular n × n matrix with a dominant diagonal (well conditioned), plus entries above
/// the diagonal that a lower solve must ignore.
HostCsr lower_with_noise(std::int64_t n, std::mt19937_64& rng) {
    std::bernoulli_distribution keep(0.2);
    std::uniform_real_distribution<double> value(-1.0, 1.0);
    HostCsr a;
    a.rows = a.cols = n;
    for (std::int64_t r = 0; r < n; ++r) {
        for (std::int64_t c = 0; c < n; ++c)
            if (c == r || keep(rng)) {
                a.columns.push_back(std::int32_t(c));
                a.values.push_back(c == r ? 4.0 + value(rng) : value(rng));
            }
        a.end_row();
    }
    return a;
}

/// The lower triangle of `a` (with the diagonal), for the host residual.
HostCsr lower_part(const HostCsr& a) {
    HostCsr l;
    l.rows = a.rows;
    l.cols = a.cols;
    for (std::int64_t r = 0; r < a.rows; ++r) {
        for (std::int32_t e = a.offsets[std::size_t(r)]; e < a.offsets[std::size_t(r) + 1]; ++e)
            if (a.columns[std::size_t(e)] <= r) {
                l.columns.push_back(a.columns[std::size_t(e)]);
                l.values.push_back(a.values[std::size_t(e)]);
            }
        l.end_row();
    }
    return l;
}

TEST_F(SparseStatelessGpu, TriangularSolveLowerNonUnitVectorAndMatrix) {
    constexpr std::int64_t n = 60, k = 3;
    const HostCsr ha = lower_with_noise(n, rng);
    const HostCsr hl = lower_part(ha);
    const DeviceCsr a(ha, stream);
    const TriangularSolveOptions options{.triangle = Triangle::lower, .diagonal = Diagonal::non_unit};

    const std::vector<double> b1 = random_values(std::size_t(n), rng);
    const Tensor db1 = Tensor::from_host(b1, {n}, stream);
    const Tensor dx1 = Tensor::empty(DataType::f64, {n}, stream);
    triangular_solve(a.view, db1, dx1, options, stream);
    EXPECT_LT(relative_residual(hl, read<double>(dx1, stream), b1, 1, n), 1e-12);

    // (n, 3) row-major right-hand sides.
    const std::vector<double> bk = random_values(std::size_t(n * k), rng);
    const Tensor dbk = Tensor::from_host(bk, {n, k}, stream);
    const Tensor dxk = Tensor::empty(DataType::f64, {n, k}, stream);
    triangular_solve(a.view, dbk, dxk, options, stream);
    EXPECT_LT(relative_residual(hl, to_column_major(read<double>(dxk, stream), n, k), to_column_major(bk, n, k), k, n),
              1e-12);
}

/// The 7-point Laplacian of an m × m × m grid (Dirichlet): SPD, n = m³.
HostCsr poisson_3d(int m) {
    HostCsr a;
    a.rows = a.cols = std::int64_t(m) * m * m;
    for (int z = 0; z < m; ++z)
        for (int y = 0; y < m; ++y)
            for (int x = 0; x < m; ++x) {
                const int row = (z * m + y) * m + x;
                const int stencil[7] = {row - m * m, row - m, row - 1, row, row + 1, row + m, row + m * m};
                const bool inside[7] = {z > 0, y > 0, x > 0, true, x + 1 < m, y + 1 < m, z + 1 < m};
                for (int e = 0; e < 7; ++e) {
                    if (!inside[e]) continue;
                    a.columns.push_back(stencil[e]);
                    a.values.push_back(stencil[e] == row ? 6.0 : -1.0);
                }
                a.end_row();
            }
    return a;
}

class SparseStatelessSpsolveGpu : public SparseStatelessGpu {
protected:
    void SetUp() override {
        SparseStatelessGpu::SetUp();
        if (IsSkipped()) return;
        if (!DirectSolver::supported()) GTEST_SKIP() << "gpumath was built without cuDSS's header cudss.h";
        try {
            (void)DirectSolver::library_version();
        } catch (const CudssError& e) {
            GTEST_SKIP() << "cuDSS cannot be loaded: " << e.what();
        }
    }
};

TEST_F(SparseStatelessSpsolveGpu, Poisson3dVectorAndRowMajorBlock) {
    const HostCsr h = poisson_3d(8);
    const std::int64_t n = h.rows, k = 3;
    const DeviceCsr a(h, stream);

    const std::vector<double> b1 = random_values(std::size_t(n), rng);
    const Tensor db1 = Tensor::from_host(b1, {n}, stream);
    const Tensor x1 = spsolve(a.view, db1, {}, stream);
    ASSERT_EQ(x1.rank(), 1);
    EXPECT_EQ(x1.shape(0), n);
    EXPECT_EQ(x1.dtype(), DataType::f64);
    EXPECT_LT(relative_residual(h, read<double>(x1, stream), b1, 1, n), 1e-10);

    // Row-major (n, 3): copied into a column-major block for cuDSS; x comes back row-major.
    const std::vector<double> bk = random_values(std::size_t(n * k), rng);
    const Tensor dbk = Tensor::from_host(bk, {n, k}, stream);
    const Tensor xk = spsolve(a.view, dbk, {.type = MatrixType::spd}, stream);
    ASSERT_EQ(xk.rank(), 2);
    EXPECT_EQ(xk.shape(0), n);
    EXPECT_EQ(xk.shape(1), k);
    EXPECT_LT(relative_residual(h, to_column_major(read<double>(xk, stream), n, k), to_column_major(bk, n, k), k, n),
              1e-10);

    // A column-major (n, 3) view is read as it is.
    const Tensor dbt = Tensor::from_host(to_column_major(bk, n, k), {k, n}, stream);
    const Tensor xt = spsolve(a.view, dbt.view().transposed(), {}, stream);
    EXPECT_LT(relative_residual(h, to_column_major(read<double>(xt, stream), n, k), to_column_major(bk, n, k), k, n),
              1e-10);
}

TEST_F(SparseStatelessSpsolveGpu, SingularMatrixRaisesNumericalError) {
    // Row 5 holds only explicit zeros (its column too): singular.
    HostCsr h = poisson_3d(4);
    for (std::int64_t r = 0; r < h.rows; ++r)
        for (std::int32_t e = h.offsets[std::size_t(r)]; e < h.offsets[std::size_t(r) + 1]; ++e)
            if (r == 5 || h.columns[std::size_t(e)] == 5) h.values[std::size_t(e)] = 0.0;
    const DeviceCsr a(h, stream);
    const Tensor b = Tensor::from_host(random_values(std::size_t(h.rows), rng), {h.rows}, stream);
    try {
        (void)spsolve(a.view, b, {}, stream);
        ADD_FAILURE() << "spsolve of a singular matrix returned";
    } catch (const NumericalError& e) {
        EXPECT_NE(e.info(), 0);
        EXPECT_EQ(e.api(), "sparse::spsolve");
        EXPECT_NE(std::string(e.what()).find("singular"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace gpumath::sparse
