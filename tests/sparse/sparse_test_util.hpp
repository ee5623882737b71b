// SPDX-License-Identifier: Apache-2.0
// Shared by the sparse GPU tests: device arrays read back and written with plain cudaMemcpy, and a
// host dense matrix rebuilt from any format's arrays (an independent reference, no gpumath code).
#pragma once

#include <cuda_runtime_api.h>

#include <complex>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <gpumath/sparse.hpp>

#include "common/test_util.hpp"

namespace gpumath::sparse::test_util {

/// The bytes of a device array as T (blocking).
template <class T>
std::vector<T> read(const TensorView& v) {
    std::vector<T> out(v.data() == nullptr ? 0 : std::size_t(v.size()));
    if (!out.empty()) {
        EXPECT_EQ(cudaMemcpy(out.data(), v.data(), out.size() * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    }
    return out;
}

/// An index array (i32 or i64) as int64.
inline std::vector<std::int64_t> read_index(const TensorView& v) {
    if (v.dtype() == DataType::i64) return read<std::int64_t>(v);
    const std::vector<std::int32_t> narrow = read<std::int32_t>(v);
    return {narrow.begin(), narrow.end()};
}

/// Writes `value` at `position` of an index array (i32 or i64), blocking.
inline void poke(const TensorView& v, std::int64_t position, std::int64_t value) {
    const std::size_t size = size_of(v.dtype());
    const auto narrow = static_cast<std::int32_t>(value);
    const void* src = v.dtype() == DataType::i64 ? static_cast<const void*>(&value) : &narrow;
    ASSERT_EQ(
        cudaMemcpy(static_cast<char*>(v.data()) + position * std::int64_t(size), src, size, cudaMemcpyHostToDevice),
        cudaSuccess);
}

/// The matrix as a row-major host dense matrix, from its arrays alone.
template <class T>
std::vector<T> dense_of(const MatrixView& m) {
    std::vector<T> d(std::size_t(m.rows() * m.cols()), T{});
    const std::vector<T> val = read<T>(m.values());
    const std::vector<std::int64_t> idx = read_index(m.indices());
    const auto put = [&](std::int64_t r, std::int64_t c, const T& x) { d[std::size_t(r * m.cols() + c)] += x; };
    if (m.format() == Format::coo) {
        const std::vector<std::int64_t> rows = read_index(m.row_indices());
        for (std::size_t k = 0; k < idx.size(); ++k) put(rows[k], idx[k], val[k]);
        return d;
    }
    const std::vector<std::int64_t> off = read_index(m.offsets());
    const std::int64_t b = m.block();
    for (std::size_t major = 0; major + 1 < off.size(); ++major)
        for (std::int64_t k = off[major]; k < off[major + 1]; ++k) {
            const auto minor = idx[std::size_t(k)];
            switch (m.format()) {
                case Format::csr:
                    put(std::int64_t(major), minor, val[std::size_t(k)]);
                    break;
                case Format::csc:
                    put(minor, std::int64_t(major), val[std::size_t(k)]);
                    break;
                default:
                    for (std::int64_t i = 0; i < b; ++i)
                        for (std::int64_t j = 0; j < b; ++j) {
                            const std::int64_t w = m.block_order() == BlockOrder::row_major ? i * b + j : j * b + i;
                            put(std::int64_t(major) * b + i, minor * b + j, val[std::size_t(k * b * b + w)]);
                        }
            }
        }
    return d;
}

/// Random triplets of a rows × cols matrix: empty rows, one dense row, some duplicates.
struct Triplets {
    std::vector<std::int64_t> r, c;
};
inline Triplets random_triplets(std::int64_t rows, std::int64_t cols, std::mt19937_64& rng) {
    Triplets t;
    std::uniform_int_distribution<std::int64_t> col(0, cols - 1);
    std::bernoulli_distribution empty(0.3);
    for (std::int64_t i = 0; i < rows; ++i) {
        if (i == rows / 2) {  // one dense row
            for (std::int64_t j = 0; j < cols; ++j) t.r.push_back(i), t.c.push_back(j);
            continue;
        }
        if (empty(rng)) continue;
        for (int k = 0; k < 3; ++k) t.r.push_back(i), t.c.push_back(col(rng));  // duplicates possible
    }
    return t;
}

/// The host dense sum of the triplets.
template <class T>
std::vector<T> dense_of(const Triplets& t, const std::vector<T>& v, std::int64_t cols, std::int64_t rows) {
    std::vector<T> d(std::size_t(rows * cols), T{});
    for (std::size_t k = 0; k < t.r.size(); ++k) d[std::size_t(t.r[k] * cols + t.c[k])] += v[k];
    return d;
}

}  // namespace gpumath::sparse::test_util
