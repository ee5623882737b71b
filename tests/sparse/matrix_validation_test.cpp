// SPDX-License-Identifier: Apache-2.0
// Every host-side rule of sparse::MatrixView's factories, checked before any CUDA call: these run
// without a GPU (the pointers are never dereferenced).
#include <gpumath/sparse.hpp>

#include <climits>
#include <cstdint>
#include <string>

#include "common/test_util.hpp"

namespace gpumath::sparse {
namespace {

using test::expect_throw_with;

// Addresses that are never dereferenced: every check runs before any CUDA call.
std::byte* fake(std::uintptr_t offset = 0) { return reinterpret_cast<std::byte*>(std::uintptr_t(1) << 40) + offset; }

// A 4 × 5 CSR matrix with 6 entries, each array in its own range of fake addresses.
TensorView offsets(DataType t = DataType::i32, std::int64_t n = 5) { return {fake(0), t, {n}}; }
TensorView indices(DataType t = DataType::i32, std::int64_t n = 6) { return {fake(1 << 20), t, {n}}; }
TensorView values(DataType t = DataType::f32, std::int64_t n = 6) { return {fake(2 << 20), t, {n}}; }

TEST(SparseMatrixView, CsrRecordsItsShapeAndArrays) {
    const MatrixView m = MatrixView::csr(4, 5, offsets(), indices(), values());
    EXPECT_FALSE(m.empty());
    EXPECT_EQ(m.format(), Format::csr);
    EXPECT_EQ(m.rows(), 4);
    EXPECT_EQ(m.cols(), 5);
    EXPECT_EQ(m.nnz(), 6);
    EXPECT_EQ(m.stored(), 6);
    EXPECT_EQ(m.batch(), 1);
    EXPECT_EQ(m.block(), 1);
    EXPECT_EQ(m.value_type(), DataType::f32);
    EXPECT_EQ(m.index_type(), DataType::i32);
    EXPECT_EQ(m.offsets().data(), fake(0));
    EXPECT_EQ(m.indices().data(), fake(1 << 20));
    EXPECT_EQ(m.values().data(), fake(2 << 20));
    EXPECT_EQ(m.row_indices().size(), 1);  // an empty (rank-0, null) view
    EXPECT_EQ(m.row_indices().data(), nullptr);
    EXPECT_TRUE(MatrixView().empty());
}

TEST(SparseMatrixView, TakesI64IndicesAndBatchedValues) {
    const MatrixView m = MatrixView::csr(4, 5, offsets(DataType::i64), indices(DataType::i64),
                                         TensorView(fake(2 << 20), DataType::c64, {3, 6}));
    EXPECT_EQ(m.index_type(), DataType::i64);
    EXPECT_EQ(m.batch(), 3);
    EXPECT_EQ(m.nnz(), 6);
}

TEST(SparseMatrixView, OtherFormats) {
    const MatrixView c = MatrixView::csc(4, 5, TensorView(fake(0), DataType::i32, {6}), indices(), values());
    EXPECT_EQ(c.format(), Format::csc);
    EXPECT_EQ(c.offsets().size(), 6);
    const MatrixView o = MatrixView::coo(4, 5, TensorView(fake(0), DataType::i64, {6}), indices(DataType::i64),
                                         values(DataType::f64));
    EXPECT_EQ(o.format(), Format::coo);
    EXPECT_EQ(o.row_indices().data(), fake(0));
    EXPECT_EQ(o.offsets().data(), nullptr);
    // 8 × 6 in 2 × 2 blocks: 4 block rows, 3 stored blocks of 4 values.
    const MatrixView b = MatrixView::bsr(8, 6, 2, offsets(), indices(DataType::i32, 3), values(DataType::f32, 12),
                                         BlockOrder::column_major);
    EXPECT_EQ(b.format(), Format::bsr);
    EXPECT_EQ(b.block(), 2);
    EXPECT_EQ(b.stored(), 3);
    EXPECT_EQ(b.nnz(), 12);
    EXPECT_EQ(b.block_order(), BlockOrder::column_major);
    EXPECT_EQ(to_string(Format::bsr), "bsr");
    EXPECT_EQ(to_string(Format(9)), "unknown");
}

TEST(SparseMatrixView, RefusesWhatTheHostCanSee) {
    const char* api = "sparse::MatrixView::csr";
    expect_throw_with<InvalidArgument>([] { (void)MatrixView::csr(-1, 5, offsets(), indices(), values()); },
                                       {api, "rows, cols", ">= 0"});
    expect_throw_with<InvalidArgument>([] { (void)MatrixView::csr(4, 5, offsets(DataType::i32, 4), indices(), values()); },
                                       {api, "row_offsets: 4 entries", "needs 5"});
    expect_throw_with<InvalidArgument>(
        [] { (void)MatrixView::csr(4, 5, offsets(DataType::f32), indices(), values()); },
        {api, "row_offsets: dtype f32", "i32 or i64"});
    expect_throw_with<InvalidArgument>(
        [] { (void)MatrixView::csr(4, 5, offsets(DataType::i64), indices(DataType::i32), values()); },
        {api, "dtype", "all index arrays have one dtype"});
    expect_throw_with<InvalidArgument>(
        [] { (void)MatrixView::csr(4, 5, offsets(), indices(), values(DataType::f32, 7)); },
        {api, "values: 7 entries per matrix", "stores 6"});
    expect_throw_with<InvalidArgument>([] { (void)MatrixView::csr(4, 5, offsets(), indices(), values(DataType::i32)); },
                                       {api, "values: dtype i32"});
    expect_throw_with<InvalidArgument>(
        [] { (void)MatrixView::csr(4, 5, offsets(), indices(), values(DataType::e4m3)); }, {api, "values: dtype e4m3"});
    expect_throw_with<InvalidArgument>(
        [] {
            (void)MatrixView::csr(4, 5, offsets(), TensorView(fake(1 << 20), DataType::i32, {6}, {2}), values());
        },
        {api, "col_indices: stride 2", "contiguous"});
    expect_throw_with<InvalidArgument>(
        [] {
            (void)MatrixView::csr(4, 5, offsets(), indices(), TensorView(fake(2 << 20), DataType::f32, {2, 6}, {1, 2}));
        },
        {api, "values: strides", "not contiguous"});
    expect_throw_with<InvalidArgument>(
        [] { (void)MatrixView::csr(4, 5, offsets(), TensorView(fake(2), DataType::i32, {6}), values()); },
        {api, "col_indices: address", "not aligned to its 4-byte elements"});
    expect_throw_with<InvalidArgument>(
        [] { (void)MatrixView::csr(4, 5, offsets(), TensorView(fake(8), DataType::i32, {6}), values()); },
        {api, "row_offsets and col_indices overlap"});
    // i32 indices cap the sizes.
    expect_throw_with<InvalidArgument>(
        [] {
            (void)MatrixView::csr(4, std::int64_t(INT_MAX) + 1, offsets(), indices(), values());
        },
        {api, "does not fit i32 indices", "i64"});
    EXPECT_NO_THROW((void)MatrixView::csr(4, std::int64_t(INT_MAX) + 1, offsets(DataType::i64),
                                          indices(DataType::i64), values()));
    // BSR: the block divides both extents; the order is an enumerator.
    expect_throw_with<InvalidArgument>(
        [] { (void)MatrixView::bsr(8, 5, 2, offsets(), indices(DataType::i32, 3), values(DataType::f32, 12)); },
        {"sparse::MatrixView::bsr", "block: 2 for a 8 × 5 matrix", "divides"});
    expect_throw_with<InvalidArgument>(
        [] {
            (void)MatrixView::bsr(8, 6, 2, offsets(), indices(DataType::i32, 3), values(DataType::f32, 12),
                                  BlockOrder(5));
        },
        {"sparse::MatrixView::bsr", "order: 5", "row_major, column_major"});
    expect_throw_with<InvalidArgument>(
        [] {
            (void)MatrixView::bsr(8, 6, std::int64_t(1) << 40, offsets(), indices(DataType::i32, 3),
                                  values(DataType::f32, 12));
        },
        {"sparse::MatrixView::bsr", "block"});
}

TEST(SparseMatrixView, WithValuesKeepsThePattern) {
    const MatrixView m = MatrixView::csr(4, 5, offsets(), indices(), values());
    const MatrixView n = m.with_values(TensorView(fake(3 << 20), DataType::f32, {6}));
    EXPECT_EQ(n.values().data(), fake(3 << 20));
    EXPECT_EQ(n.indices().data(), m.indices().data());
    expect_throw_with<InvalidArgument>([&] { (void)m.with_values(TensorView(fake(3 << 20), DataType::f64, {6})); },
                                       {"sparse::MatrixView::with_values", "values: f64"});
    expect_throw_with<InvalidArgument>([&] { (void)m.with_values(TensorView(fake(1 << 20), DataType::f32, {6})); },
                                       {"sparse::MatrixView::with_values", "overlap"});
    expect_throw_with<InvalidArgument>([] { (void)MatrixView().with_values(values()); },
                                       {"sparse::MatrixView::with_values", "empty"});
}

TEST(SparseMatrix, AllocateRefusesBadRequestsWithoutCuda) {
    const char* api = "sparse::Matrix::allocate";
    expect_throw_with<InvalidArgument>(
        [] { (void)Matrix::allocate(Format(7), 4, 4, 4, DataType::f32, DataType::i32, {}); }, {api, "format: 7", "csr, csc, coo, bsr"});
    expect_throw_with<InvalidArgument>(
        [] { (void)Matrix::allocate(Format::csr, 4, 4, 4, DataType::f32, DataType::f32, {}); },
        {api, "index_type: f32", "i32 or i64"});
    expect_throw_with<InvalidArgument>(
        [] { (void)Matrix::allocate(Format::csr, 4, 4, 4, DataType::f32, DataType::i32, {}, 2); },
        {api, "block: 2 for csr"});
    expect_throw_with<InvalidArgument>(
        [] {
            (void)Matrix::allocate(Format::bsr, 1 << 20, 1 << 20, std::int64_t(1) << 44, DataType::f32,
                                   DataType::i64, {}, 1 << 10);
        },
        {api, "overflow int64"});
    const Matrix empty;
    EXPECT_TRUE(empty.view().empty());
}

}  // namespace
}  // namespace gpumath::sparse
