// SPDX-License-Identifier: Apache-2.0
// Without a GPU: the host assembly of from_triplets (sorting, duplicates summed, BSR blocks), every
// refusal of from_triplets, the conversions and check before any CUDA call, and the sparse kernels
// compiling with NVRTC for every name the host looks them up by.
#include <gpumath/sparse.hpp>

#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#include <gpumath/core/program.hpp>

#include "common/test_util.hpp"
#include "sparse/check.hpp"
#include "sparse/convert.hpp"
#include "sparse/triplets.hpp"

#ifndef GPUMATH_TEST_ARCH
#define GPUMATH_TEST_ARCH "sm_90"
#endif

namespace gpumath::sparse {
namespace {

using test::expect_throw_with;
using V = std::vector<std::int64_t>;

std::byte* fake(std::uintptr_t offset = 0) { return reinterpret_cast<std::byte*>(std::uintptr_t(1) << 40) + offset; }

// 3 × 4 with a duplicate (1, 2) and entries given out of order.
const V rows3{2, 1, 0, 1, 2, 1};
const V cols3{0, 2, 3, 2, 1, 0};
const std::vector<double> vals3{1, 2, 3, 4, 5, 6};

TEST(SparseTriplets, CsrSortedRowMajorWithDuplicatesSummed) {
    const auto a = detail::assemble_triplets(3, 4, rows3, cols3, Format::csr, 1, "t");
    EXPECT_EQ(a.offsets, (V{0, 1, 3, 5}));
    EXPECT_EQ(a.indices, (V{3, 0, 2, 0, 1}));
    EXPECT_TRUE(a.row_indices.empty());
    EXPECT_EQ(a.starts, (V{0, 1, 2, 4, 5, 6}));
    EXPECT_EQ(a.order, (V{2, 5, 1, 3, 0, 4}));  // stable: the duplicate's triplets in given order
    std::vector<double> out(std::size_t(a.stored()));
    detail::sum_triplet_values(a, rows3, cols3, vals3.data(), DataType::f64, out.data());
    EXPECT_EQ(out, (std::vector<double>{3, 6, 6, 1, 5}));
}

TEST(SparseTriplets, CscIsColumnMajor) {
    const auto a = detail::assemble_triplets(3, 4, rows3, cols3, Format::csc, 1, "t");
    EXPECT_EQ(a.offsets, (V{0, 2, 3, 4, 5}));  // column 0: rows 1, 2; col 1: row 2; col 2: row 1; col 3: row 0
    EXPECT_EQ(a.indices, (V{1, 2, 2, 1, 0}));
    std::vector<float> out(std::size_t(a.stored()));
    const std::vector<float> v(vals3.begin(), vals3.end());
    detail::sum_triplet_values(a, rows3, cols3, v.data(), DataType::f32, out.data());
    EXPECT_EQ(out, (std::vector<float>{6, 1, 5, 6, 3}));
}

TEST(SparseTriplets, CooKeepsRowIndices) {
    const auto a = detail::assemble_triplets(3, 4, rows3, cols3, Format::coo, 1, "t");
    EXPECT_TRUE(a.offsets.empty());
    EXPECT_EQ(a.row_indices, (V{0, 1, 1, 2, 2}));
    EXPECT_EQ(a.indices, (V{3, 0, 2, 0, 1}));
    std::vector<std::complex<float>> v, out(5);
    for (double x : vals3) v.emplace_back(float(x), float(-x));
    detail::sum_triplet_values(a, rows3, cols3, v.data(), DataType::c32, out.data());
    EXPECT_EQ(out[2], std::complex<float>(6, -6));
}

TEST(SparseTriplets, BsrBlocksRowMajorWithZeros) {
    // 4 × 4 in 2 × 2 blocks: (0,1) and (1,0) fall in block (0,0); (3,2) twice in block (1,1); (0,3) in (0,1).
    const V r{3, 0, 1, 3, 0}, c{2, 1, 0, 2, 3};
    const std::vector<double> v{1, 2, 3, 4, 5};
    const auto a = detail::assemble_triplets(4, 4, r, c, Format::bsr, 2, "t");
    EXPECT_EQ(a.offsets, (V{0, 2, 3}));
    EXPECT_EQ(a.indices, (V{0, 1, 1}));
    std::vector<double> out(std::size_t(a.stored() * 4));
    detail::sum_triplet_values(a, r, c, v.data(), DataType::f64, out.data());
    EXPECT_EQ(out, (std::vector<double>{0, 2, 3, 0, /**/ 0, 5, 0, 0, /**/ 0, 0, 5, 0}));
}

TEST(SparseTriplets, EmptyAndRefusals) {
    const auto a = detail::assemble_triplets(2, 2, {}, {}, Format::csr, 1, "t");
    EXPECT_EQ(a.offsets, (V{0, 0, 0}));
    EXPECT_EQ(a.stored(), 0);
    const V r{0, 5}, c{0, 1};
    expect_throw_with<InvalidArgument>([&] { (void)detail::assemble_triplets(3, 4, r, c, Format::csr, 1, "api"); },
                                       {"api", "row_idx[1]: 5", "[0, 3)"});
    const V cneg{0, -1};
    expect_throw_with<InvalidArgument>([&] { (void)detail::assemble_triplets(6, 4, r, cneg, Format::csr, 1, "api"); },
                                       {"col_idx[1]: -1"});
    expect_throw_with<InvalidArgument>([&] { (void)detail::assemble_triplets(6, 4, r, V{0}, Format::csr, 1, "api"); },
                                       {"row_idx, col_idx: 2 and 1"});
    expect_throw_with<InvalidArgument>([&] { (void)detail::assemble_triplets(6, 4, r, c, Format(7), 1, "api"); },
                                       {"format: 7"});
    expect_throw_with<InvalidArgument>([&] { (void)detail::assemble_triplets(6, 4, r, c, Format::csr, 2, "api"); },
                                       {"only BSR has blocks"});
    expect_throw_with<InvalidArgument>([&] { (void)detail::assemble_triplets(6, 4, r, c, Format::bsr, 4, "api"); },
                                       {"block: 4", "divides"});
    expect_throw_with<InvalidArgument>([&] { (void)detail::assemble_triplets(-1, 4, r, c, Format::csr, 1, "api"); },
                                       {"rows, cols"});
}

TEST(SparseFromTriplets, RefusesBeforeAnyCudaCall) {
    const V r{0, 1}, c{1, 0}, bad{0, 2};
    const std::vector<double> v{1, 2}, v1{1};
    const char* api = "sparse::from_triplets";
    const core::StreamRef s{};
    expect_throw_with<InvalidArgument>(
        [&] { (void)from_triplets(2, 2, r, bad, std::span<const double>(v), Format::csr, DataType::i32, s); },
        {api, "col_idx[1]: 2"});
    expect_throw_with<InvalidArgument>(
        [&] { (void)from_triplets(2, 2, r, c, std::span<const double>(v1), Format::csr, DataType::i32, s); },
        {api, "values: 1 entries for 2 triplets"});
    expect_throw_with<InvalidArgument>(
        [&] { (void)from_triplets(2, 2, r, c, std::span<const double>(v), Format::csr, DataType::f32, s); },
        {api, "index_type: f32"});
    expect_throw_with<InvalidArgument>(
        [&] { (void)from_triplets(2, 2, r, c, std::span<const double>(v), Format::csr, DataType(42), s); },
        {api, "index_type: 42"});
    expect_throw_with<InvalidArgument>(
        [&] { (void)from_triplets(2, 2, r, c, v.data(), DataType::i32, 2, Format::csr, DataType::i32, s); },
        {api, "values: dtype i32"});
    expect_throw_with<InvalidArgument>(
        [&] { (void)from_triplets(2, 2, r, c, nullptr, DataType::f64, 2, Format::csr, DataType::i32, s); },
        {api, "values: null"});
    expect_throw_with<InvalidArgument>(
        [&] { (void)from_triplets(2, 2, r, c, std::span<const double>(v), Format(9), DataType::i32, s); },
        {api, "format: 9"});
    expect_throw_with<InvalidArgument>(
        [&] { (void)from_triplets(4, 6, r, c, std::span<const double>(v), Format::bsr, DataType::i32, s, 4); },
        {api, "block: 4"});
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)from_triplets(std::int64_t(1) << 32, 2, r, c, std::span<const double>(v), Format::csr, DataType::i32,
                                s);
        },
        {api, "does not fit i32"});
}

// A 4 × 5 CSR view over fake addresses, and others like it.
MatrixView csr(DataType index = DataType::i32, DataType value = DataType::f32, std::int64_t batch = 1) {
    const TensorView values =
        batch == 1 ? TensorView(fake(2 << 20), value, {6}) : TensorView(fake(2 << 20), value, {batch, 6});
    return MatrixView::csr(4, 5, {fake(0), index, {5}}, {fake(1 << 20), index, {6}}, values);
}

TEST(SparseConvert, RefusesBeforeAnyCudaCall) {
    const core::StreamRef s{};
    expect_throw_with<InvalidArgument>([&] { (void)to_csr(MatrixView{}, s); }, {"sparse::to_csr", "empty"});
    expect_throw_with<InvalidArgument>([&] { (void)to_coo(csr(DataType::i32, DataType::f32, 3), s); },
                                       {"sparse::to_coo", "a batch of 3"});
    expect_throw_with<NotSupported>([&] { (void)to_csc(csr(DataType::i64), s); },
                                    {"sparse::to_csc", "i64 indices", "csr2cscEx2", "32-bit"});
    const MatrixView csc64 = MatrixView::csc(4, 5, {fake(0), DataType::i64, {6}}, {fake(1 << 20), DataType::i64, {6}},
                                             {fake(2 << 20), DataType::f64, {6}});
    expect_throw_with<NotSupported>([&] { (void)to_csr(csc64, s); }, {"sparse::to_csr", "i64"});
    expect_throw_with<InvalidArgument>([&] { (void)to_bsr(csr(), 3, s); }, {"sparse::to_bsr", "block: 3"});
    expect_throw_with<InvalidArgument>([&] { (void)to_bsr(csr(), 0, s); }, {"sparse::to_bsr", "block: 0"});
    expect_throw_with<NotSupported>([&] { (void)to_bsr(csr(DataType::i64), 1, s); }, {"sparse::to_bsr", "csr2bsr"});
    expect_throw_with<NotSupported>([&] { (void)to_bsr(csr(DataType::i32, DataType::f16), 1, s); },
                                    {"sparse::to_bsr", "values: f16"});
    const MatrixView bsr64 = MatrixView::bsr(4, 4, 2, {fake(0), DataType::i64, {3}},
                                             {fake(1 << 20), DataType::i64, {2}}, {fake(2 << 20), DataType::f32, {8}});
    expect_throw_with<NotSupported>([&] { (void)to_csr(bsr64, s); }, {"sparse::to_csr", "bsr2csr"});
}

TEST(SparseConvert, DenseRefusalsBeforeAnyCudaCall) {
    const core::StreamRef s{};
    const char* api = "sparse::to_dense";
    const MatrixView m = csr();
    expect_throw_with<InvalidArgument>(
        [&] {
            to_dense(m, TensorView(fake(3 << 20), DataType::f32, {4, 5, 1}), s);
        },
        {api, "out: rank 3"});
    expect_throw_with<InvalidArgument>(
        [&] {
            to_dense(m, TensorView(fake(3 << 20), DataType::f32, {5, 4}), s);
        },
        {api, "out: shape", "4 × 5"});
    expect_throw_with<InvalidArgument>(
        [&] {
            to_dense(m, TensorView(fake(3 << 20), DataType::f64, {4, 5}), s);
        },
        {api, "out: dtype f64"});
    expect_throw_with<InvalidArgument>(
        [&] {
            to_dense(m, TensorView(fake(3 << 20), DataType::f32, {4, 5}, {2, 8}), s);
        },
        {api, "out: strides"});
    expect_throw_with<InvalidArgument>(
        [&] {
            to_dense(m, TensorView(fake(2 << 20), DataType::f32, {4, 5}), s);
        },
        {api, "overlaps"});
    expect_throw_with<InvalidArgument>(
        [&] {
            to_dense(MatrixView{}, TensorView(fake(3 << 20), DataType::f32, {4, 5}), s);
        },
        {api, "empty"});
    const char* fd = "sparse::from_dense";
    expect_throw_with<InvalidArgument>(
        [&] { (void)from_dense(TensorView(fake(), DataType::f32, {4}), DataType::i32, s); }, {fd, "dense: rank 1"});
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)from_dense(TensorView(fake(), DataType::f16, {4, 4}), DataType::i32, s);
        },
        {fd, "dense: dtype f16"});
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)from_dense(TensorView(fake(), DataType::f32, {4, 4}), DataType::f32, s);
        },
        {fd, "index_type: f32"});
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)from_dense(TensorView(fake(), DataType::f32, {4, 4}), DataType(40), s);
        },
        {fd, "index_type: 40"});
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)from_dense(TensorView(fake(), DataType::f32, {70000, 70000}), DataType::i32, s);
        },
        {fd, "ask for i64"});
}

TEST(SparseCheck, RefusesAnEmptyViewBeforeAnyCudaCall) {
    expect_throw_with<InvalidArgument>([] { check(MatrixView{}, {}, core::StreamRef{}); }, {"sparse::check", "empty"});
}

TEST(SparseCheck, ReportsTheFirstBadEntryOfEachArrayInOrder) {
    // The verdict on the host: offsets before COO rows before indices; position * 8 + kind.
    const MatrixView m = csr();
    constexpr auto none = ~0ULL;
    const unsigned long long clean[3] = {none, none, none};
    EXPECT_NO_THROW(detail::throw_sparse_check_result(m, clean, "api"));
    const unsigned long long bad_index[3] = {none, none, 3 * 8 + kernels::sparse_index_order};
    try {
        detail::throw_sparse_check_result(m, bad_index, "api");
        ADD_FAILURE() << "no throw";
    } catch (const InvalidSparseData& e) {
        EXPECT_EQ(e.array(), "col_indices");
        EXPECT_EQ(e.position(), 3);
        EXPECT_NE(std::string(e.what()).find("col_indices[3] is not greater than col_indices[2]"), std::string::npos)
            << e.what();
    }
    const unsigned long long both[3] = {4 * 8 + kernels::sparse_offset_last, none, 0 * 8 + kernels::sparse_index_range};
    try {
        detail::throw_sparse_check_result(m, both, "api");
        ADD_FAILURE() << "no throw";
    } catch (const InvalidSparseData& e) {
        EXPECT_EQ(e.array(), "row_offsets");
        EXPECT_EQ(e.position(), 4);
        EXPECT_NE(std::string(e.what()).find("not 6"), std::string::npos) << e.what();
    }
    EXPECT_EQ(std::string(detail::sparse_array_names(Format::coo)[1]), "row_indices");
    EXPECT_EQ(std::string(detail::sparse_array_names(Format::bsr)[2]), "block_col_indices");
    EXPECT_EQ(std::string(detail::sparse_array_names(Format::csc)[0]), "col_offsets");
}

TEST(SparseKernels, EveryKernelCompilesAndIsFoundByItsName) {
    struct Prog {
        std::string_view source;
        core::ProgramOptions options;
        std::vector<std::string> names;
    };
    for (const Prog& p :
         {Prog{detail::sparse_check_source(), detail::sparse_check_options(), detail::sparse_check_names()},
          Prog{detail::sparse_convert_source(), detail::sparse_convert_options(), detail::sparse_convert_names()}}) {
        core::ProgramOptions options = p.options;
        options.arch = GPUMATH_TEST_ARCH;
        core::Program program(std::string(p.source), options);
        for (const std::string& name : p.names) program.add_name_expression(name);
        const core::ObjectCode code = program.compile(core::CodeType::cubin);
        for (const std::string& name : p.names) {
            SCOPED_TRACE(name);
            EXPECT_FALSE(code.lowered_name(name).empty());
        }
    }
}

}  // namespace
}  // namespace gpumath::sparse
