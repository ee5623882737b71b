// SPDX-License-Identifier: Apache-2.0
// sparse::from_triplets: host triplets sorted, duplicates summed, then uploaded as one Matrix.
#include "sparse/triplets.hpp"

#include <algorithm>
#include <complex>
#include <cstring>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include <gpumath/sparse/convert.hpp>
#include "detail/enum_check.hpp"
#include "detail/status.hpp"

namespace gpumath::detail {
namespace {

/// The sort key of a triplet: (major, minor) in the format's order.
struct Key {
    std::int64_t major, minor;
    friend bool operator==(const Key& a, const Key& b) { return a.major == b.major && a.minor == b.minor; }
    friend bool operator<(const Key& a, const Key& b) {
        return a.major != b.major ? a.major < b.major : a.minor < b.minor;
    }
};

Key key_of(sparse::Format format, std::int64_t r, std::int64_t c, std::int64_t block) {
    switch (format) {
        case sparse::Format::csc:
            return {c, r};
        case sparse::Format::bsr:
            return {r / block, c / block};
        default:
            return {r, c};
    }
}

template <class T>
void sum_as(const TripletAssembly& a, std::span<const std::int64_t> row_idx, std::span<const std::int64_t> col_idx,
            const void* values, void* out) {
    const T* in = static_cast<const T*>(values);
    T* o = static_cast<T*>(out);
    const std::int64_t b = a.block, per_block = b * b;
    std::fill(o, o + a.stored() * per_block, T{});
    for (std::int64_t k = 0; k < a.stored(); ++k)
        for (std::int64_t s = a.starts[std::size_t(k)]; s < a.starts[std::size_t(k) + 1]; ++s) {
            const auto i = std::size_t(a.order[std::size_t(s)]);
            const std::int64_t within = per_block == 1 ? 0 : (row_idx[i] % b) * b + col_idx[i] % b;
            o[k * per_block + within] += in[i];
        }
}

}  // namespace

TripletAssembly assemble_triplets(std::int64_t rows, std::int64_t cols, std::span<const std::int64_t> row_idx,
                                  std::span<const std::int64_t> col_idx, sparse::Format format, std::int64_t block,
                                  const char* api) {
    check_enum(format, sparse::format_count, "a Format", "format", api);
    if (rows < 0 || cols < 0) throw_invalid(fmt::format("rows, cols: {} × {}; extents are >= 0", rows, cols), api);
    if (format != sparse::Format::bsr && block != 1)
        throw_invalid(fmt::format("block: {} for {}; only BSR has blocks (give 1)", block, to_string(format)), api);
    if (block < 1 || rows % block != 0 || cols % block != 0)
        throw_invalid(fmt::format("block: {} for a {} × {} matrix; the block is >= 1 and divides rows and cols", block,
                                  rows, cols),
                      api);
    if (row_idx.size() != col_idx.size())
        throw_invalid(fmt::format("row_idx, col_idx: {} and {} entries; each triplet has one of each", row_idx.size(),
                                  col_idx.size()),
                      api);
    const std::size_t n = row_idx.size();
    for (std::size_t i = 0; i < n; ++i) {
        if (row_idx[i] < 0 || row_idx[i] >= rows)
            throw_invalid(fmt::format("row_idx[{}]: {} is outside the {} rows [0, {})", i, row_idx[i], rows, rows),
                          api);
        if (col_idx[i] < 0 || col_idx[i] >= cols)
            throw_invalid(fmt::format("col_idx[{}]: {} is outside the {} columns [0, {})", i, col_idx[i], cols, cols),
                          api);
    }
    TripletAssembly a;
    a.format = format;
    a.rows = rows;
    a.cols = cols;
    a.block = block;
    std::vector<Key> keys(n);
    for (std::size_t i = 0; i < n; ++i) keys[i] = key_of(format, row_idx[i], col_idx[i], block);
    a.order.resize(n);
    std::iota(a.order.begin(), a.order.end(), std::int64_t{0});
    std::stable_sort(a.order.begin(), a.order.end(),
                     [&](std::int64_t x, std::int64_t y) { return keys[std::size_t(x)] < keys[std::size_t(y)]; });
    const std::int64_t major = format == sparse::Format::csc   ? cols
                               : format == sparse::Format::bsr ? rows / block
                                                               : rows;
    if (format != sparse::Format::coo) a.offsets.assign(std::size_t(major) + 1, 0);
    for (std::size_t s = 0; s < n; ++s) {
        const Key& k = keys[std::size_t(a.order[s])];
        if (s > 0 && k == keys[std::size_t(a.order[s - 1])]) continue;
        a.starts.push_back(std::int64_t(s));
        a.indices.push_back(k.minor);
        if (format == sparse::Format::coo) a.row_indices.push_back(k.major);
        else ++a.offsets[std::size_t(k.major) + 1];
    }
    a.starts.push_back(std::int64_t(n));
    std::partial_sum(a.offsets.begin(), a.offsets.end(), a.offsets.begin());
    return a;
}

void sum_triplet_values(const TripletAssembly& assembly, std::span<const std::int64_t> row_idx,
                        std::span<const std::int64_t> col_idx, const void* values, DataType type, void* out) {
    switch (type) {
        case DataType::f32:
            return sum_as<float>(assembly, row_idx, col_idx, values, out);
        case DataType::f64:
            return sum_as<double>(assembly, row_idx, col_idx, values, out);
        case DataType::c32:
            return sum_as<std::complex<float>>(assembly, row_idx, col_idx, values, out);
        case DataType::c64:
            return sum_as<std::complex<double>>(assembly, row_idx, col_idx, values, out);
        default:
            throw_invalid(fmt::format("values: dtype {}; triplet values are f32, f64, c32 or c64", to_string(type)),
                          "sparse::from_triplets");
    }
}

}  // namespace gpumath::detail

namespace gpumath::sparse {
namespace {

/// `v` as `index_type` (i32 or i64) in a host byte array.
std::vector<std::byte> narrowed(const std::vector<std::int64_t>& v, DataType index_type) {
    std::vector<std::byte> out(v.size() * size_of(index_type));
    if (index_type == DataType::i64) {
        if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
        return out;
    }
    for (std::size_t i = 0; i < v.size(); ++i) {
        const auto x = static_cast<std::int32_t>(v[i]);
        std::memcpy(out.data() + i * sizeof(x), &x, sizeof(x));
    }
    return out;
}

void upload(const TensorView& dst, const std::vector<std::int64_t>& v, DataType index_type, core::StreamRef stream) {
    if (v.empty()) return;
    const std::vector<std::byte> bytes = narrowed(v, index_type);
    // Pageable source: the copy has read it when cudaMemcpyAsync returns, so `bytes` may go.
    detail::copy_async(dst.data(), bytes.data(), bytes.size(), stream);
}

}  // namespace

Matrix from_triplets(std::int64_t rows, std::int64_t cols, std::span<const std::int64_t> row_idx,
                     std::span<const std::int64_t> col_idx, const void* values, DataType value_type,
                     std::int64_t value_count, Format format, DataType index_type, core::StreamRef stream,
                     std::int64_t block) {
    constexpr const char* api = "sparse::from_triplets";
    detail::check_enum(value_type, data_type_count, "a DataType", "value_type", api);
    detail::check_enum(index_type, data_type_count, "a DataType", "index_type", api);
    if (value_type != DataType::f32 && value_type != DataType::f64 && value_type != DataType::c32 &&
        value_type != DataType::c64)
        detail::throw_invalid(
            fmt::format("values: dtype {}; triplet values are f32, f64, c32 or c64", to_string(value_type)), api);
    if (index_type != DataType::i32 && index_type != DataType::i64)
        detail::throw_invalid(fmt::format("index_type: {}; indices are i32 or i64", to_string(index_type)), api);
    if (value_count != std::int64_t(row_idx.size()))
        detail::throw_invalid(
            fmt::format("values: {} entries for {} triplets; each triplet has one value", value_count, row_idx.size()),
            api);
    if (value_count > 0 && values == nullptr)
        detail::throw_invalid("values: null for a non-empty list of triplets", api);
    // Sizes first: the assembly allocates the offsets on the host.
    constexpr std::int64_t limit = std::numeric_limits<std::int32_t>::max();
    if (index_type == DataType::i32 && (rows > limit || cols > limit || value_count > limit))
        detail::throw_invalid(
            fmt::format("{} × {} with {} triplets does not fit i32 indices; ask for i64", rows, cols, value_count),
            api);
    const detail::TripletAssembly a = detail::assemble_triplets(rows, cols, row_idx, col_idx, format, block, api);
    std::vector<std::byte> summed(std::size_t(a.stored() * block * block) * size_of(value_type));
    detail::sum_triplet_values(a, row_idx, col_idx, values, value_type, summed.data());

    Matrix m = Matrix::allocate(format, rows, cols, a.stored(), value_type, index_type, stream, block);
    const MatrixView& v = m.view();
    upload(format == Format::coo ? v.row_indices() : v.offsets(), format == Format::coo ? a.row_indices : a.offsets,
           index_type, stream);
    upload(v.indices(), a.indices, index_type, stream);
    if (!summed.empty()) detail::copy_async(v.values().data(), summed.data(), summed.size(), stream);
    return m;
}

}  // namespace gpumath::sparse
