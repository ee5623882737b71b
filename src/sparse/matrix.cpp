// SPDX-License-Identifier: Apache-2.0
// The sparse vocabulary: MatrixView's factories (every check the host can make) and Matrix.
#include <gpumath/sparse/matrix.hpp>

#include <array>
#include <cstdint>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "detail/enum_check.hpp"
#include "detail/status.hpp"

namespace gpumath::sparse {

std::string_view to_string(Format format) noexcept {
    switch (format) {
        case Format::csr:
            return "csr";
        case Format::csc:
            return "csc";
        case Format::coo:
            return "coo";
        case Format::bsr:
            return "bsr";
    }
    return "unknown";
}

std::string_view to_string(BlockOrder order) noexcept {
    switch (order) {
        case BlockOrder::row_major:
            return "row_major";
        case BlockOrder::column_major:
            return "column_major";
    }
    return "unknown";
}

namespace {

using detail::throw_invalid;

struct Named {
    const TensorView* view;
    const char* name;
};

/// A 1-D contiguous i32/i64 array of `length` entries.
void check_index_array(const Named& a, std::int64_t length, const char* api) {
    const TensorView& v = *a.view;
    if (v.dtype() != DataType::i32 && v.dtype() != DataType::i64)
        throw_invalid(fmt::format("{}: dtype {}; index and offset arrays are i32 or i64", a.name, to_string(v.dtype())),
                      api);
    if (v.rank() != 1)
        throw_invalid(fmt::format("{}: rank {}; index and offset arrays are 1-D", a.name, v.rank()), api);
    if (v.shape(0) != length)
        throw_invalid(fmt::format("{}: {} entries where the matrix needs {}", a.name, v.shape(0), length), api);
    if (length > 1 && v.stride(0) != 1)
        throw_invalid(
            fmt::format("{}: stride {}; index and offset arrays are contiguous (stride 1)", a.name, v.stride(0)), api);
}

void check_aligned(const Named& a, const char* api) {
    const auto address = reinterpret_cast<std::uintptr_t>(a.view->data());
    const std::size_t size = size_of(a.view->dtype());
    if (size != 0 && address % size != 0)
        throw_invalid(
            fmt::format("{}: address {} is not aligned to its {}-byte elements", a.name, a.view->data(), size), api);
}

bool overlap(const TensorView& a, const TensorView& b) {
    if (a.span_bytes() == 0 || b.span_bytes() == 0) return false;
    const auto a0 = reinterpret_cast<std::uintptr_t>(a.data()), b0 = reinterpret_cast<std::uintptr_t>(b.data());
    return a0 < b0 + std::uintptr_t(b.span_bytes()) && b0 < a0 + std::uintptr_t(a.span_bytes());
}

/// The values: floating or complex, contiguous, `per_matrix` entries or (batch, per_matrix).
void check_values(const TensorView& v, std::int64_t per_matrix, const char* api) {
    if (!is_floating(v.dtype()) || is_fp8(v.dtype()))
        throw_invalid(
            fmt::format("values: dtype {}; sparse values are f16, bf16, f32, f64, c32 or c64", to_string(v.dtype())),
            api);
    if (v.rank() != 1 && v.rank() != 2)
        throw_invalid(fmt::format("values: rank {}; values are 1-D ({} entries) or 2-D (batch, {})", v.rank(),
                                  per_matrix, per_matrix),
                      api);
    if (v.shape(-1) != per_matrix)
        throw_invalid(fmt::format("values: {} entries per matrix where the pattern stores {}", v.shape(-1), per_matrix),
                      api);
    if (!v.is_contiguous())
        throw_invalid(fmt::format("values: strides {} are not contiguous (row-major); sparse values are dense arrays",
                                  gpumath::to_string(v.strides())),
                      api);
}

void check_shape(std::int64_t rows, std::int64_t cols, const char* api) {
    if (rows < 0 || cols < 0) throw_invalid(fmt::format("rows, cols: {} × {}; extents are >= 0", rows, cols), api);
}

/// Every array aligned, one index dtype, 32-bit sizes with i32, no two arrays overlapping.
void check_together(std::span<const Named> arrays, std::int64_t rows, std::int64_t cols, const char* api) {
    const DataType index = arrays[0].view->dtype();
    for (const Named& a : arrays) {
        check_aligned(a, api);
        if (a.view != arrays.back().view && a.view->dtype() != index)
            throw_invalid(fmt::format("{}: dtype {} differs from {}'s {}; all index arrays have one dtype", a.name,
                                      to_string(a.view->dtype()), arrays[0].name, to_string(index)),
                          api);
    }
    if (index == DataType::i32) {
        constexpr std::int64_t limit = std::numeric_limits<std::int32_t>::max();
        const std::int64_t nnz = arrays[1].view->shape(0);
        if (rows > limit || cols > limit || nnz > limit)
            throw_invalid(
                fmt::format("{} × {} with {} entries does not fit i32 indices; give i64 index arrays", rows, cols, nnz),
                api);
    }
    for (std::size_t i = 0; i < arrays.size(); ++i)
        for (std::size_t j = i + 1; j < arrays.size(); ++j)
            if (overlap(*arrays[i].view, *arrays[j].view))
                throw_invalid(fmt::format("{} and {} overlap in memory; each array needs its own", arrays[i].name,
                                          arrays[j].name),
                              api);
}

}  // namespace

namespace {

/// The arrays of a compressed format (CSR or CSC) as `names` calls them, checked.
struct Compressed {
    const char* offsets;
    const char* indices;
    std::int64_t major;
};

void check_compressed(std::int64_t rows, std::int64_t cols, const TensorView& offsets, const TensorView& indices,
                      const TensorView& values, const Compressed& names, const char* api) {
    check_shape(rows, cols, api);
    check_index_array({&offsets, names.offsets}, names.major + 1, api);
    check_index_array({&indices, names.indices}, indices.rank() == 1 ? indices.shape(0) : 0, api);
    check_values(values, indices.shape(0), api);
    const std::array<Named, 3> all{{{&offsets, names.offsets}, {&indices, names.indices}, {&values, "values"}}};
    check_together(all, rows, cols, api);
}

}  // namespace

MatrixView MatrixView::csr(std::int64_t rows, std::int64_t cols, const TensorView& row_offsets,
                           const TensorView& col_indices, const TensorView& values) {
    check_compressed(rows, cols, row_offsets, col_indices, values, {"row_offsets", "col_indices", rows},
                     "sparse::MatrixView::csr");
    MatrixView m;
    m.format_ = Format::csr;
    m.made_ = true;
    m.rows_ = rows;
    m.cols_ = cols;
    m.offsets_ = row_offsets;
    m.indices_ = col_indices;
    m.values_ = values;
    return m;
}

MatrixView MatrixView::csc(std::int64_t rows, std::int64_t cols, const TensorView& col_offsets,
                           const TensorView& row_indices, const TensorView& values) {
    check_compressed(rows, cols, col_offsets, row_indices, values, {"col_offsets", "row_indices", cols},
                     "sparse::MatrixView::csc");
    MatrixView m;
    m.format_ = Format::csc;
    m.made_ = true;
    m.rows_ = rows;
    m.cols_ = cols;
    m.offsets_ = col_offsets;
    m.indices_ = row_indices;
    m.values_ = values;
    return m;
}

MatrixView MatrixView::coo(std::int64_t rows, std::int64_t cols, const TensorView& row_indices,
                           const TensorView& col_indices, const TensorView& values) {
    constexpr const char* api = "sparse::MatrixView::coo";
    check_shape(rows, cols, api);
    check_index_array({&row_indices, "row_indices"}, row_indices.rank() == 1 ? row_indices.shape(0) : 0, api);
    check_index_array({&col_indices, "col_indices"}, row_indices.shape(0), api);
    check_values(values, row_indices.shape(0), api);
    const std::array<Named, 3> all{{{&row_indices, "row_indices"}, {&col_indices, "col_indices"}, {&values, "values"}}};
    check_together(all, rows, cols, api);
    MatrixView m;
    m.format_ = Format::coo;
    m.made_ = true;
    m.rows_ = rows;
    m.cols_ = cols;
    m.rows_of_coo_ = row_indices;
    m.indices_ = col_indices;
    m.values_ = values;
    return m;
}

MatrixView MatrixView::bsr(std::int64_t rows, std::int64_t cols, std::int64_t block,
                           const TensorView& block_row_offsets, const TensorView& block_col_indices,
                           const TensorView& values, BlockOrder order) {
    constexpr const char* api = "sparse::MatrixView::bsr";
    check_shape(rows, cols, api);
    detail::check_enum(order, block_order_count, "a BlockOrder", "order", api);
    if (block < 1 || rows % block != 0 || cols % block != 0)
        throw_invalid(fmt::format("block: {} for a {} × {} matrix; the block is >= 1 and divides rows and cols", block,
                                  rows, cols),
                      api);
    check_index_array({&block_row_offsets, "block_row_offsets"}, rows / block + 1, api);
    check_index_array({&block_col_indices, "block_col_indices"},
                      block_col_indices.rank() == 1 ? block_col_indices.shape(0) : 0, api);
    const std::int64_t blocks = block_col_indices.shape(0);
    if (blocks > std::numeric_limits<std::int64_t>::max() / block / block)
        throw_invalid(fmt::format("{} blocks of {} × {}: the value count overflows int64", blocks, block, block), api);
    check_values(values, blocks * block * block, api);
    const std::array<Named, 3> all{
        {{&block_row_offsets, "block_row_offsets"}, {&block_col_indices, "block_col_indices"}, {&values, "values"}}};
    check_together(all, rows, cols, api);
    MatrixView m;
    m.format_ = Format::bsr;
    m.order_ = order;
    m.made_ = true;
    m.rows_ = rows;
    m.cols_ = cols;
    m.block_ = block;
    m.offsets_ = block_row_offsets;
    m.indices_ = block_col_indices;
    m.values_ = values;
    return m;
}

std::int64_t MatrixView::nnz() const noexcept { return indices_.size() * block_ * block_; }

MatrixView MatrixView::with_values(const TensorView& values) const {
    constexpr const char* api = "sparse::MatrixView::with_values";
    if (!made_) throw_invalid("the view is empty (default-constructed); make it with csr, csc, coo or bsr", api);
    if (values.dtype() != values_.dtype() || values.layout() != values_.layout())
        throw_invalid(fmt::format("values: {} of shape {}; the view's values are {} of shape {}",
                                  to_string(values.dtype()), gpumath::to_string(values.shape()),
                                  to_string(values_.dtype()), gpumath::to_string(values_.shape())),
                      api);
    check_aligned({&values, "values"}, api);
    for (const TensorView* a : {&offsets_, &indices_, &rows_of_coo_})
        if (overlap(values, *a)) throw_invalid("values: overlap one of the view's index arrays", api);
    MatrixView m = *this;
    m.values_ = values;
    return m;
}

Matrix::~Matrix() = default;
Matrix::Matrix(Matrix&& other) noexcept
    : view_(std::exchange(other.view_, MatrixView{})),
      offsets_(std::move(other.offsets_)),
      indices_(std::move(other.indices_)),
      rows_of_coo_(std::move(other.rows_of_coo_)),
      values_(std::move(other.values_)) {}
Matrix& Matrix::operator=(Matrix&& other) noexcept {
    if (this != &other) {
        view_ = std::exchange(other.view_, MatrixView{});
        offsets_ = std::move(other.offsets_);
        indices_ = std::move(other.indices_);
        rows_of_coo_ = std::move(other.rows_of_coo_);
        values_ = std::move(other.values_);
    }
    return *this;
}

Matrix Matrix::allocate(Format format, std::int64_t rows, std::int64_t cols, std::int64_t stored, DataType value_type,
                        DataType index_type, core::StreamRef stream, std::int64_t block, std::int64_t batch) {
    constexpr const char* api = "sparse::Matrix::allocate";
    detail::check_enum(format, format_count, "a Format", "format", api);
    detail::check_enum(value_type, data_type_count, "a DataType", "value_type", api);
    detail::check_enum(index_type, data_type_count, "a DataType", "index_type", api);
    check_shape(rows, cols, api);
    if (stored < 0 || batch < 1)
        throw_invalid(fmt::format("stored, batch: {}, {}; stored entries are >= 0 and the batch >= 1", stored, batch),
                      api);
    if (index_type != DataType::i32 && index_type != DataType::i64)
        throw_invalid(fmt::format("index_type: {}; indices are i32 or i64", to_string(index_type)), api);
    if (format != Format::bsr && block != 1)
        throw_invalid(fmt::format("block: {} for {}; only BSR has blocks (give 1)", block, to_string(format)), api);
    if (block < 1 || rows % block != 0 || cols % block != 0)
        throw_invalid(fmt::format("block: {} for a {} × {} matrix; the block is >= 1 and divides rows and cols", block,
                                  rows, cols),
                      api);
    if (stored > std::numeric_limits<std::int64_t>::max() / block / block / batch)
        throw_invalid(
            fmt::format("{} entries of {} × {} blocks in a batch of {} overflow int64", stored, block, block, batch),
            api);
    const std::int64_t per_matrix = stored * block * block;
    Matrix m;
    const std::int64_t major = format == Format::csr ? rows : format == Format::csc ? cols : rows / block;
    if (format != Format::coo) m.offsets_ = Tensor::empty(index_type, {major + 1}, stream);
    else m.rows_of_coo_ = Tensor::empty(index_type, {stored}, stream);
    m.indices_ = Tensor::empty(index_type, {stored}, stream);
    m.values_ = batch == 1 ? Tensor::empty(value_type, {per_matrix}, stream)
                           : Tensor::empty(value_type, {batch, per_matrix}, stream);
    switch (format) {
        case Format::csr:
            m.view_ = MatrixView::csr(rows, cols, m.offsets_.view(), m.indices_.view(), m.values_.view());
            break;
        case Format::csc:
            m.view_ = MatrixView::csc(rows, cols, m.offsets_.view(), m.indices_.view(), m.values_.view());
            break;
        case Format::coo:
            m.view_ = MatrixView::coo(rows, cols, m.rows_of_coo_.view(), m.indices_.view(), m.values_.view());
            break;
        case Format::bsr:
            m.view_ = MatrixView::bsr(rows, cols, block, m.offsets_.view(), m.indices_.view(), m.values_.view());
            break;
    }
    return m;
}

}  // namespace gpumath::sparse
