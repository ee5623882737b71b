// SPDX-License-Identifier: Apache-2.0
// Host references for gpumath::linalg's GPU tests, written without gpumath: matrices in double
// (complex), products, adjoints, random Hermitian and general matrices, and a strided batch of
// device matrices with a host mirror.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include <gpumath/tensor.hpp>

namespace gpumath::linalg::reference {

using cd = std::complex<double>;
using Matrix = std::vector<cd>;  // n × n, row-major, in double

template <class T>
struct Real {
    using type = T;
};
template <class T>
struct Real<std::complex<T>> {
    using type = T;
};
template <class T>
constexpr bool is_complex = !std::is_same_v<T, typename Real<T>::type>;

template <class T>
inline double tolerance(std::int64_t n) {
    return 200.0 * double(std::max<std::int64_t>(n, 4)) *
           double(std::numeric_limits<typename Real<T>::type>::epsilon());
}

template <class T>
inline T from(cd v) {
    if constexpr (is_complex<T>) return T(typename Real<T>::type(v.real()), typename Real<T>::type(v.imag()));
    else return T(v.real());
}

inline double frobenius(const Matrix& m) {
    double s = 0;
    for (const cd& v : m) s += std::norm(v);
    return std::sqrt(s);
}

inline Matrix product(const Matrix& a, const Matrix& b, std::int64_t n, std::int64_t m, std::int64_t k) {  // (n×k)(k×m)
    Matrix c(std::size_t(n * m));
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t p = 0; p < k; ++p)
            for (std::int64_t j = 0; j < m; ++j)
                c[std::size_t(i * m + j)] += a[std::size_t(i * k + p)] * b[std::size_t(p * m + j)];
    return c;
}

inline Matrix adjoint(const Matrix& a, std::int64_t n) {
    Matrix t(a.size());
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j) t[std::size_t(j * n + i)] = std::conj(a[std::size_t(i * n + j)]);
    return t;
}

/// A random Hermitian (real: symmetric) matrix; positive definite when `spd`.
template <class T>
inline Matrix hermitian(std::int64_t n, std::mt19937_64& rng, bool spd) {
    std::uniform_real_distribution<double> u(-1, 1);
    Matrix m(std::size_t(n * n));
    for (auto& v : m) v = is_complex<T> ? cd(u(rng), u(rng)) : cd(u(rng), 0);
    Matrix a = spd ? product(m, adjoint(m, n), n, n, n) : m;
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j <= i; ++j) {
            const cd v = spd ? a[std::size_t(i * n + j)]
                             : 0.5 * (m[std::size_t(i * n + j)] + std::conj(m[std::size_t(j * n + i)]));
            a[std::size_t(i * n + j)] = v;
            a[std::size_t(j * n + i)] = std::conj(v);
        }
    for (std::int64_t i = 0; i < n; ++i) {
        a[std::size_t(i * n + i)] = cd(a[std::size_t(i * n + i)].real() + (spd ? double(n) : 0.0), 0);
    }
    return a;
}

/// Device memory holding `count` matrices seen through `shape`/`strides` (elements, 3-D: batch,
/// row, column), with a host mirror to write and read matrices by their logical indices.
template <class T>
struct Batch {
    std::int64_t count, rows, cols, sb, sr, sc;
    Tensor storage;
    std::vector<T> host;

    Batch(std::int64_t count_, std::int64_t rows_, std::int64_t cols_, std::int64_t sb_, std::int64_t sr_,
          std::int64_t sc_)
        : count(count_), rows(rows_), cols(cols_), sb(sb_), sr(sr_), sc(sc_) {
        const std::int64_t span = std::max<std::int64_t>(1, (count - 1) * sb + (rows - 1) * sr + (cols - 1) * sc + 1);
        host.assign(std::size_t(span), from<T>(cd(std::nan(""), 0)));
        storage = Tensor::from_host(host, {span});
    }
    /// Row-major packed; `col_major` gives unit stride down the columns instead; `pad` widens the
    /// leading dimension; `step` > 1 leaves gaps between elements (not cuSOLVER-addressable).
    static Batch make(std::int64_t count, std::int64_t rows, std::int64_t cols, bool col_major, std::int64_t pad = 0,
                      std::int64_t step = 1) {
        if (col_major) {
            const std::int64_t ld = (rows + pad) * step;
            return Batch(count, rows, cols, ld * cols, step, ld);
        }
        const std::int64_t ld = (cols + pad) * step;
        return Batch(count, rows, cols, ld * rows, ld, step);
    }
    [[nodiscard]] TensorView view() const {
        return {storage.data(), data_type_of<T>(), {count, rows, cols}, {sb, sr, sc}};
    }
    [[nodiscard]] TensorView vector_view() const {  // (count, rows) when cols == 1
        return {storage.data(), data_type_of<T>(), {count, rows}, {sb, sr}};
    }
    T& at(std::int64_t b, std::int64_t i, std::int64_t j) { return host[std::size_t(b * sb + i * sr + j * sc)]; }
    void set(std::int64_t b, const Matrix& m) {
        for (std::int64_t i = 0; i < rows; ++i)
            for (std::int64_t j = 0; j < cols; ++j) at(b, i, j) = from<T>(m[std::size_t(i * cols + j)]);
    }
    void upload() { storage = Tensor::from_host(host, {std::int64_t(host.size())}); }
    void download() { host = storage.to_host<T>(); }
    [[nodiscard]] Matrix get(std::int64_t b) {
        Matrix m(std::size_t(rows * cols));
        for (std::int64_t i = 0; i < rows; ++i)
            for (std::int64_t j = 0; j < cols; ++j) m[std::size_t(i * cols + j)] = cd(at(b, i, j));
        return m;
    }
};

inline std::vector<int> infos(const Tensor& info) { return info.to_host<int>(); }

/// A random general matrix, diagonally weighted so that it is comfortably invertible.
template <class T>
inline Matrix general(std::int64_t n, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> u(-1, 1);
    Matrix m(std::size_t(n * n));
    for (auto& v : m) v = is_complex<T> ? cd(u(rng), u(rng)) : cd(u(rng), 0);
    for (std::int64_t i = 0; i < n; ++i) m[std::size_t(i * n + i)] += cd(double(n) / 4, 0);
    return m;
}

/// The determinant by Gaussian elimination with partial pivoting on the host, in double.
inline cd host_determinant(Matrix m, std::int64_t n) {
    cd det = 1;
    for (std::int64_t c = 0; c < n; ++c) {
        std::int64_t p = c;
        for (std::int64_t r = c + 1; r < n; ++r)
            if (std::abs(m[std::size_t(r * n + c)]) > std::abs(m[std::size_t(p * n + c)])) p = r;
        if (p != c) {
            for (std::int64_t j = 0; j < n; ++j) std::swap(m[std::size_t(p * n + j)], m[std::size_t(c * n + j)]);
            det = -det;
        }
        const cd pivot = m[std::size_t(c * n + c)];
        det *= pivot;
        if (pivot == cd(0)) return 0;
        for (std::int64_t r = c + 1; r < n; ++r) {
            const cd f = m[std::size_t(r * n + c)] / pivot;
            for (std::int64_t j = c; j < n; ++j) m[std::size_t(r * n + j)] -= f * m[std::size_t(c * n + j)];
        }
    }
    return det;
}

/// ‖P·M − L·U‖/‖M‖ for the factors `f` of M (unit lower L below the diagonal, U on and above it)
/// and 1-based LAPACK pivots `piv` (row i swapped with row piv[i] − 1, in order), which must lie in
/// [i + 1, n] (infinity when one does not).
inline double factor_error(const Matrix& m, const Matrix& f, const int* piv, std::int64_t n) {
    Matrix lower(std::size_t(n * n)), upper(std::size_t(n * n));
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            if (j < i) lower[std::size_t(i * n + j)] = f[std::size_t(i * n + j)];
            else upper[std::size_t(i * n + j)] = f[std::size_t(i * n + j)];
        }
    for (std::int64_t i = 0; i < n; ++i) lower[std::size_t(i * n + i)] = 1;
    Matrix pm = m;
    for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t p = piv[i] - 1;
        if (p < i || p >= n) return std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j < n; ++j) std::swap(pm[std::size_t(i * n + j)], pm[std::size_t(p * n + j)]);
    }
    const Matrix lu = product(lower, upper, n, n, n);
    Matrix d(pm.size());
    for (std::size_t i = 0; i < d.size(); ++i) d[i] = lu[i] - pm[i];
    return frobenius(d) / frobenius(pm);
}

}  // namespace gpumath::linalg::reference
