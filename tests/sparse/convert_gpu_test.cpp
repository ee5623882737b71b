// SPDX-License-Identifier: Apache-2.0
// On a GPU: from_triplets, from_dense, to_dense and the conversions CSR ↔ CSC / COO / BSR for
// f32, f64 and c64 values with i32 and i64 indices, each against a host dense reference built from
// the triplets; outputs poisoned first; to_dense captured into a graph and replayed.
#include <gpumath/core/graph.hpp>
#include <gpumath/sparse.hpp>

#include <complex>
#include <cstdint>
#include <vector>

#include "common/test_util.hpp"
#include "sparse_test_util.hpp"

namespace gpumath::sparse {
namespace {

using namespace test_util;

template <class T>
class SparseConvertGpu : public ::testing::Test {};
using Types = ::testing::Types<float, double, std::complex<double>>;
TYPED_TEST_SUITE(SparseConvertGpu, Types);

constexpr std::int64_t rows = 24, cols = 18;

template <class T>
void expect_dense(const std::vector<T>& got, const std::vector<T>& want, const char* what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    EXPECT_LE(test::relative_error(got, want), 1e-6) << what;
}

/// A poisoned dense output (NaN bytes).
Tensor poisoned(DataType t, core::StreamRef s) {
    Tensor out = Tensor::empty(t, {rows * cols}, s);
    EXPECT_EQ(cudaMemsetAsync(out.data(), 0xFF, std::size_t(out.view().span_bytes()), s.handle()), cudaSuccess);
    return out;
}

TensorView as_dense(const Tensor& t, bool column_major) {
    return column_major ? TensorView(t.data(), t.dtype(), {rows, cols}, {1, rows})
                        : TensorView(t.data(), t.dtype(), {rows, cols});
}

/// Column-major host copy of a row-major dense matrix.
template <class T>
std::vector<T> transposed(const std::vector<T>& d) {
    std::vector<T> out(d.size());
    for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) out[std::size_t(j * rows + i)] = d[std::size_t(i * cols + j)];
    return out;
}

TYPED_TEST(SparseConvertGpu, TripletsEveryFormatAndDense) {
    GPUMATH_REQUIRE_GPU();
    using T = TypeParam;
    auto rng = test::rng_for_test();
    const Triplets t = random_triplets(rows, cols, rng);
    const std::vector<T> v = test::random_vector<T>(t.r.size(), rng);
    const std::vector<T> ref = dense_of(t, v, cols, rows);
    const core::Stream stream;
    for (const DataType index : {DataType::i32, DataType::i64}) {
        for (const Format f : {Format::csr, Format::csc, Format::coo, Format::bsr}) {
            SCOPED_TRACE(std::string(to_string(f)) + " " + std::string(to_string(index)));
            const Matrix m =
                from_triplets(rows, cols, t.r, t.c, std::span<const T>(v), f, index, stream, f == Format::bsr ? 3 : 1);
            stream.synchronize();
            EXPECT_EQ(m.view().index_type(), index);
            expect_dense(dense_of<T>(m.view()), ref, "arrays");
            EXPECT_NO_THROW(check(m, {.sorted = true}, stream));
            for (const bool column_major : {false, true}) {
                const Tensor out = poisoned(m.view().value_type(), stream);
                to_dense(m, as_dense(out, column_major), stream);
                stream.synchronize();
                expect_dense(read<T>(out.view()), column_major ? transposed(ref) : ref, "to_dense");
            }
        }
    }
}

TYPED_TEST(SparseConvertGpu, ConversionsRoundTrip) {
    GPUMATH_REQUIRE_GPU();
    using T = TypeParam;
    auto rng = test::rng_for_test();
    const Triplets t = random_triplets(rows, cols, rng);
    const std::vector<T> v = test::random_vector<T>(t.r.size(), rng);
    const std::vector<T> ref = dense_of(t, v, cols, rows);
    const core::Stream stream;
    for (const DataType index : {DataType::i32, DataType::i64}) {
        SCOPED_TRACE(to_string(index));
        const Matrix csr = from_triplets(rows, cols, t.r, t.c, std::span<const T>(v), Format::csr, index, stream);
        const Matrix coo = to_coo(csr, stream);
        stream.synchronize();
        EXPECT_EQ(coo.view().format(), Format::coo);
        expect_dense(dense_of<T>(coo.view()), ref, "csr → coo");
        EXPECT_NO_THROW(check(coo, {}, stream));
        const Matrix back = to_csr(coo, stream);
        stream.synchronize();
        EXPECT_EQ(read_index(back.view().offsets()), read_index(csr.view().offsets())) << "coo → csr offsets";
        expect_dense(dense_of<T>(back.view()), ref, "coo → csr");
        expect_dense(dense_of<T>(to_csr(csr, stream).view()), ref, "csr copy");
        if (index == DataType::i64) {
            EXPECT_THROW((void)to_csc(csr, stream), NotSupported);
            EXPECT_THROW((void)to_bsr(csr, 2, stream), NotSupported);
            continue;
        }
        const Matrix csc = to_csc(csr, stream);
        stream.synchronize();
        expect_dense(dense_of<T>(csc.view()), ref, "csr → csc");
        EXPECT_NO_THROW(check(csc, {}, stream));
        const Matrix from_csc = to_csr(csc, stream);
        stream.synchronize();
        EXPECT_EQ(read_index(from_csc.view().indices()), read_index(csr.view().indices())) << "csc → csr";
        expect_dense(dense_of<T>(from_csc.view()), ref, "csc → csr");
        for (const std::int64_t block : {1, 2, 3, 6}) {
            SCOPED_TRACE(block);
            const Matrix bsr = to_bsr(csr, block, stream);
            stream.synchronize();
            EXPECT_EQ(bsr.view().block(), block);
            expect_dense(dense_of<T>(bsr.view()), ref, "csr → bsr");
            EXPECT_NO_THROW(check(bsr, {}, stream));
            const Matrix csr2 = to_csr(bsr, stream);  // explicit zeros of the blocks stay
            stream.synchronize();
            expect_dense(dense_of<T>(csr2.view()), ref, "bsr → csr");
            expect_dense(dense_of<T>(to_csc(bsr, stream).view()), ref, "bsr → csc");
            expect_dense(dense_of<T>(to_coo(bsr, stream).view()), ref, "bsr → coo");
        }
        expect_dense(dense_of<T>(to_bsr(coo, 2, stream).view()), ref, "coo → bsr");
    }
}

TYPED_TEST(SparseConvertGpu, FromDense) {
    GPUMATH_REQUIRE_GPU();
    using T = TypeParam;
    auto rng = test::rng_for_test();
    const Triplets t = random_triplets(rows, cols, rng);
    const std::vector<T> v = test::random_vector<T>(t.r.size(), rng);
    const std::vector<T> ref = dense_of(t, v, cols, rows);
    std::int64_t nonzeros = 0;
    for (const T& x : ref) nonzeros += x != T{} ? 1 : 0;
    const core::Stream stream;
    for (const DataType index : {DataType::i32, DataType::i64})
        for (const bool column_major : {false, true}) {
            SCOPED_TRACE(column_major ? "column-major" : "row-major");
            const Tensor d = Tensor::from_host(column_major ? transposed(ref) : ref, {rows * cols}, stream);
            const Matrix m = from_dense(as_dense(d, column_major), index, stream);
            stream.synchronize();
            EXPECT_EQ(m.view().format(), Format::csr);
            EXPECT_EQ(m.view().index_type(), index);
            EXPECT_EQ(m.view().stored(), nonzeros);
            expect_dense(dense_of<T>(m.view()), ref, "from_dense");
            EXPECT_NO_THROW(check(m, {}, stream));
        }
}

TEST(SparseConvertGpuCapture, ToDenseReplaysFromAGraph) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const Triplets t = random_triplets(rows, cols, rng);
    std::vector<double> v = test::random_vector<double>(t.r.size(), rng);
    const core::Stream stream;
    for (const Format f : {Format::csr, Format::coo, Format::bsr}) {
        SCOPED_TRACE(to_string(f));
        const Matrix m = from_triplets(rows, cols, t.r, t.c, std::span<const double>(v), f, DataType::i32, stream,
                                       f == Format::bsr ? 2 : 1);
        const Tensor out = Tensor::empty(DataType::f64, {rows, cols}, stream);
        core::Graph graph = core::Graph::capture(stream, [&](core::StreamRef s) { to_dense(m, out, s); });
        for (int round = 0; round < 2; ++round) {
            const std::vector<double> vals = test::random_vector<double>(std::size_t(m.view().values().size()), rng);
            ASSERT_EQ(
                cudaMemcpy(m.view().values().data(), vals.data(), vals.size() * sizeof(double), cudaMemcpyHostToDevice),
                cudaSuccess);
            ASSERT_EQ(cudaMemset(out.data(), 0xFF, std::size_t(out.view().span_bytes())), cudaSuccess);
            graph.launch(stream);
            stream.synchronize();
            expect_dense(read<double>(out.view()), dense_of<double>(m.view()), "replayed to_dense");
        }
    }
}

}  // namespace
}  // namespace gpumath::sparse
