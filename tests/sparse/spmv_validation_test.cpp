// SPDX-License-Identifier: Apache-2.0
// Every host-side rule of the SpMV and SpMM plans and of the stateless spmv and spmm, checked
// before any CUDA call: these run without a GPU (the pointers are never dereferenced).
#include <gpumath/sparse.hpp>

#include <climits>
#include <cstdint>
#include <utility>

#include "common/test_util.hpp"

namespace gpumath::sparse {
namespace {

using test::expect_throw_with;

std::byte* fake(std::uintptr_t offset = 0) { return reinterpret_cast<std::byte*>(std::uintptr_t(1) << 40) + offset; }

constexpr std::uintptr_t mib = std::uintptr_t(1) << 20;

// A 4 × 5 CSR matrix with 6 entries.
MatrixView csr(DataType values = DataType::f32, DataType index = DataType::i32) {
    return MatrixView::csr(4, 5, TensorView(fake(0), index, {5}), TensorView(fake(mib), index, {6}),
                           TensorView(fake(2 * mib), values, {6}));
}

TensorView vec(DataType t, std::int64_t n, std::uintptr_t at) { return {fake(at), t, {n}}; }
TensorView x_of(DataType t = DataType::f32) { return vec(t, 5, 3 * mib); }
TensorView y_of(DataType t = DataType::f32) { return vec(t, 4, 4 * mib); }

const core::StreamRef no_stream{};

TEST(SparseSpMVValidation, PlanRecordsItsOperands) {
    const SpMV p(csr(), x_of(), y_of());
    EXPECT_FALSE(p.planned());
    EXPECT_EQ(p.matrix().rows(), 4);
    EXPECT_EQ(p.x_layout().shape(0), 5);
    EXPECT_EQ(p.y_layout().shape(0), 4);
    EXPECT_EQ(p.algorithm(), SpMVAlgorithm::automatic);
    EXPECT_EQ(p.buffer_size(), 0U);
    const SpMV t(csr(DataType::c64), vec(DataType::c64, 4, 3 * mib), vec(DataType::c64, 5, 4 * mib),
                 {.op = Operation::conjugate_transpose, .algorithm = SpMVAlgorithm::alg2});
    EXPECT_EQ(t.options().op, Operation::conjugate_transpose);
    EXPECT_EQ(t.algorithm(), SpMVAlgorithm::alg2);
}

TEST(SparseSpMVValidation, TakesCuSparseDtypeCombinations) {
    EXPECT_NO_THROW(SpMV(csr(DataType::f64), x_of(DataType::f64), y_of(DataType::f64)));
    EXPECT_NO_THROW(SpMV(csr(DataType::c32), x_of(DataType::c32), y_of(DataType::c32)));
    // Half-precision A takes x of its dtype, y of its dtype or f32 (cuSPARSE's mixed-precision table).
    EXPECT_NO_THROW(SpMV(csr(DataType::f16), x_of(DataType::f16), y_of(DataType::f32)));
    EXPECT_NO_THROW(SpMV(csr(DataType::bf16), x_of(DataType::bf16), y_of(DataType::f32)));
    EXPECT_NO_THROW(SpMV(csr(DataType::f16), x_of(DataType::f16), y_of(DataType::f16)));
    EXPECT_NO_THROW(SpMV(csr(DataType::bf16), x_of(DataType::bf16), y_of(DataType::bf16)));
    EXPECT_NO_THROW(SpMV(csr(DataType::f32), x_of(DataType::f64), y_of(DataType::f64)));
    EXPECT_NO_THROW(SpMV(csr(DataType::f32), x_of(DataType::c32), y_of(DataType::c32)));
    EXPECT_NO_THROW(SpMV(csr(DataType::f64), x_of(DataType::c64), y_of(DataType::c64)));
    EXPECT_NO_THROW(SpMV(csr(DataType::f32, DataType::i64), x_of(), y_of()));
}

TEST(SparseSpMVValidation, RefusesDtypesCuSparseDoesNotTake) {
    expect_throw_with<NotSupported>([] { (void)SpMV(csr(DataType::f64), x_of(), y_of()); },
                                    {"sparse::SpMV", "values f64 with x f32"});
    // cuSPARSE refuses f16 A with f32 x ("type combination ... is not supported"): A and x share the dtype.
    expect_throw_with<NotSupported>([] { (void)SpMV(csr(DataType::f16), x_of(DataType::f32), y_of(DataType::f32)); },
                                    {"sparse::SpMV", "values f16 with x f32 and y f32"});
    expect_throw_with<NotSupported>([] { (void)SpMV(csr(DataType::bf16), x_of(DataType::bf16), y_of(DataType::f16)); },
                                    {"sparse::SpMV", "bf16"});
    expect_throw_with<NotSupported>([] { (void)SpMV(csr(), x_of(), y_of(DataType::f64)); }, {"x", "y", "one dtype"});
    expect_throw_with<NotSupported>([] { (void)SpMV(csr(), x_of(DataType::i32), y_of(DataType::i32)); },
                                    {"sparse::SpMV"});
}

TEST(SparseSpMVValidation, RefusesShapesThatDoNotAgree) {
    expect_throw_with<InvalidArgument>([] { (void)SpMV(csr(), vec(DataType::f32, 4, 3 * mib), y_of()); },
                                       {"x:", "4 entries", "5 columns"});
    expect_throw_with<InvalidArgument>([] { (void)SpMV(csr(), x_of(), vec(DataType::f32, 5, 4 * mib)); },
                                       {"y:", "5 entries", "4 rows"});
    // Transposed: x has A's rows, y its columns.
    expect_throw_with<InvalidArgument>([] { (void)SpMV(csr(), x_of(), y_of(), {.op = Operation::transpose}); },
                                       {"x:", "5 entries", "4 columns"});
    EXPECT_NO_THROW(
        SpMV(csr(), vec(DataType::f32, 4, 3 * mib), vec(DataType::f32, 5, 4 * mib), {.op = Operation::transpose}));
    expect_throw_with<InvalidArgument>(
        [] {
            (void)SpMV(csr(), TensorLayout(DataType::f32, {5, 1}), y_of());
        },
        {"x:", "rank 2", "1-D"});
    expect_throw_with<InvalidArgument>([] { (void)SpMV(csr(), TensorLayout(DataType::f32, {5}, {2}), y_of()); },
                                       {"x:", "stride 2"});
    expect_throw_with<InvalidArgument>([] { (void)SpMV(csr(), x_of(), TensorLayout(DataType::f32, {4}, {0})); },
                                       {"y:", "stride 0"});
}

TEST(SparseSpMVValidation, RefusesEmptyViewsBatchesAndEnumsOutOfRange) {
    expect_throw_with<InvalidArgument>([] { (void)SpMV(MatrixView(), x_of(), y_of()); }, {"a:", "empty"});
    const MatrixView batched =
        MatrixView::csr(4, 5, TensorView(fake(0), DataType::i32, {5}), TensorView(fake(mib), DataType::i32, {6}),
                        TensorView(fake(2 * mib), DataType::f32, {3, 6}));
    expect_throw_with<NotSupported>([&] { (void)SpMV(batched, x_of(), y_of()); }, {"batch of 3", "SpMM"});
    expect_throw_with<InvalidArgument>([] { (void)SpMV(csr(), x_of(), y_of(), {.op = Operation(7)}); },
                                       {"options.op", "7", "none, transpose, conjugate_transpose"});
    expect_throw_with<InvalidArgument>([] { (void)SpMV(csr(), x_of(), y_of(), {.algorithm = SpMVAlgorithm(9)}); },
                                       {"options.algorithm", "9", "automatic, library_default, alg1, alg2"});
    const MatrixView bsr =
        MatrixView::bsr(4, 4, 2, TensorView(fake(0), DataType::i32, {3}), TensorView(fake(mib), DataType::i32, {2}),
                        TensorView(fake(2 * mib), DataType::f32, {8}));
    expect_throw_with<NotSupported>(
        [&] { (void)SpMV(bsr, vec(DataType::f32, 4, 3 * mib), y_of(), {.algorithm = SpMVAlgorithm::alg2}); },
        {"alg2", "BSR"});
    EXPECT_NO_THROW(SpMV(bsr, vec(DataType::f32, 4, 3 * mib), y_of(), {.algorithm = SpMVAlgorithm::alg1}));
}

TEST(SparseSpMVValidation, ExecuteRefusesOtherLayoutsMisalignmentAndOverlap) {
    SpMV p(csr(), x_of(), y_of());
    expect_throw_with<InvalidArgument>([&] { p.execute(vec(DataType::f32, 6, 3 * mib), y_of(), 1, 0, no_stream); },
                                       {"sparse::SpMV::execute", "x:", "make a plan"});
    expect_throw_with<InvalidArgument>([&] { p.execute(x_of(), y_of(DataType::f64), 1, 0, no_stream); }, {"y:"});
    expect_throw_with<InvalidArgument>([&] { p.execute(x_of(), vec(DataType::f32, 4, 4 * mib + 2), 1, 0, no_stream); },
                                       {"y:", "aligned"});
    // y overlapping x, and y overlapping A's values or indices.
    expect_throw_with<InvalidArgument>([&] { p.execute(x_of(), vec(DataType::f32, 4, 3 * mib + 8), 1, 0, no_stream); },
                                       {"y overlaps x"});
    expect_throw_with<InvalidArgument>([&] { p.execute(x_of(), vec(DataType::f32, 4, 2 * mib + 4), 1, 0, no_stream); },
                                       {"y overlaps A's values"});
    expect_throw_with<InvalidArgument>([&] { p.execute(x_of(), vec(DataType::f32, 4, mib), 1, 0, no_stream); },
                                       {"y overlaps A's indices"});
    expect_throw_with<InvalidArgument>([&] { p.execute(x_of(), vec(DataType::f32, 4, 8), 1, 0, no_stream); },
                                       {"y overlaps A's offsets"});
    expect_throw_with<InvalidArgument>([&] { p.execute(vec(DataType::f32, 5, 3 * mib + 1), y_of(), 1, 0, no_stream); },
                                       {"x:", "aligned"});
}

TEST(SparseSpMVValidation, ExecuteWithNewValuesKeepsThePattern) {
    SpMV p(csr(), x_of(), y_of());
    // Other pattern arrays (a copy of the pattern elsewhere) are refused.
    const MatrixView other =
        MatrixView::csr(4, 5, TensorView(fake(8 * mib), DataType::i32, {5}), TensorView(fake(mib), DataType::i32, {6}),
                        TensorView(fake(2 * mib), DataType::f32, {6}));
    expect_throw_with<InvalidArgument>([&] { p.execute(other, x_of(), y_of(), 1, 0, no_stream); },
                                       {"a:", "pattern arrays are not the plan's"});
    expect_throw_with<InvalidArgument>([&] { p.execute(MatrixView(), x_of(), y_of(), 1, 0, no_stream); },
                                       {"a:", "empty"});
    // The planned pattern with values of another dtype or batch.
    const MatrixView wider =
        MatrixView::csr(4, 5, TensorView(fake(0), DataType::i32, {5}), TensorView(fake(mib), DataType::i32, {6}),
                        TensorView(fake(6 * mib), DataType::f64, {6}));
    expect_throw_with<InvalidArgument>([&] { p.execute(wider, x_of(), y_of(), 1, 0, no_stream); },
                                       {"a:", "values f64", "the plan has f32"});
    // New values overlapping y.
    const MatrixView moved = csr().with_values(TensorView(fake(5 * mib), DataType::f32, {6}));
    expect_throw_with<InvalidArgument>(
        [&] { p.execute(moved, x_of(), vec(DataType::f32, 4, 5 * mib + 4), 1, 0, no_stream); },
        {"y overlaps A's values"});
}

TEST(SparseSpMVValidation, MovedFromPlanThrows) {
    SpMV p(csr(), x_of(), y_of());
    SpMV q(std::move(p));
    EXPECT_FALSE(p.planned());  // NOLINT(bugprone-use-after-move): the moved-from state is under test
    EXPECT_TRUE(p.matrix().empty());
    EXPECT_EQ(p.x_layout().rank(), 0);
    EXPECT_EQ(p.buffer_size(), 0U);
    expect_throw_with<InvalidArgument>([&] { p.plan(); }, {"sparse::SpMV", "moved"});
    expect_throw_with<InvalidArgument>([&] { p.execute(x_of(), y_of(), 1, 0, no_stream); }, {"sparse::SpMV"});
    SpMV r(csr(), x_of(), y_of());
    r = std::move(q);
    EXPECT_EQ(r.matrix().rows(), 4);
}

TEST(SparseSpMVValidation, StatelessValidatesBeforeAnyCudaCall) {
    expect_throw_with<InvalidArgument>(
        [] { spmv(csr(), vec(DataType::f32, 3, 3 * mib), y_of(), -1.0, 1.0, {}, no_stream); }, {"x:"});
    expect_throw_with<InvalidArgument>([] { spmv(MatrixView(), x_of(), y_of(), no_stream); }, {"a:", "empty"});
    expect_throw_with<NotSupported>([] { spmv(csr(DataType::f64), x_of(), y_of(), no_stream); }, {"sparse::SpMV"});
    expect_throw_with<InvalidArgument>(
        [] {
            spmm(csr(), TensorView(fake(3 * mib), DataType::f32, {4, 2}),
                 TensorView(fake(4 * mib), DataType::f32, {4, 2}), no_stream);
        },
        {"b:", "4 rows"});
}

// SpMM: B (k, n), C (m, n), batches, orders.
TensorView dense(DataType t, std::initializer_list<std::int64_t> shape, std::uintptr_t at,
                 std::initializer_list<std::int64_t> strides = {}) {
    return {fake(at), t, shape, strides};
}

TEST(SparseSpMMValidation, TakesRowAndColumnMajorAndBatches) {
    EXPECT_NO_THROW(SpMM(csr(), dense(DataType::f32, {5, 3}, 3 * mib), dense(DataType::f32, {4, 3}, 4 * mib)));
    EXPECT_NO_THROW(
        SpMM(csr(), dense(DataType::f32, {5, 3}, 3 * mib, {1, 5}), dense(DataType::f32, {4, 3}, 4 * mib, {1, 4})));
    EXPECT_NO_THROW(SpMM(csr(), TensorLayout(DataType::f32, {5, 3}, {8, 1}), dense(DataType::f32, {4, 3}, 4 * mib)));
    // Batches: C (2, 4, 3), B batched or broadcast, A batched or broadcast.
    EXPECT_NO_THROW(SpMM(csr(), dense(DataType::f32, {2, 5, 3}, 3 * mib), dense(DataType::f32, {2, 4, 3}, 4 * mib)));
    EXPECT_NO_THROW(SpMM(csr(), dense(DataType::f32, {5, 3}, 3 * mib), dense(DataType::f32, {2, 4, 3}, 4 * mib)));
    // CSR_ALG3 runs one untransposed CSR matrix: asked for a batch or a transpose, it is refused here.
    expect_throw_with<NotSupported>(
        [] {
            (void)SpMM(csr(), dense(DataType::f32, {2, 5, 3}, 3 * mib), dense(DataType::f32, {2, 4, 3}, 4 * mib),
                       {.algorithm = SpMMAlgorithm::alg3});
        },
        {"sparse::SpMM", "alg3", "a batch of 2"});
    expect_throw_with<NotSupported>(
        [] {
            (void)SpMM(csr(), dense(DataType::f32, {4, 3}, 3 * mib), dense(DataType::f32, {5, 3}, 4 * mib),
                       {.op = Operation::transpose, .algorithm = SpMMAlgorithm::alg3});
        },
        {"sparse::SpMM", "alg3", "op transpose"});
    EXPECT_NO_THROW(SpMM(csr(), dense(DataType::f32, {5, 3}, 3 * mib), dense(DataType::f32, {4, 3}, 4 * mib),
                         {.algorithm = SpMMAlgorithm::alg3}));
    const MatrixView batched =
        MatrixView::coo(4, 5, TensorView(fake(0), DataType::i32, {6}), TensorView(fake(mib), DataType::i32, {6}),
                        TensorView(fake(2 * mib), DataType::f64, {2, 6}));
    EXPECT_NO_THROW(SpMM(batched, dense(DataType::f64, {5, 3}, 3 * mib), dense(DataType::f64, {2, 4, 3}, 4 * mib)));
    EXPECT_NO_THROW(
        SpMM(csr(DataType::f16), dense(DataType::f16, {5, 3}, 3 * mib), dense(DataType::f32, {4, 3}, 4 * mib)));
}

TEST(SparseSpMMValidation, RefusesBadShapesOrdersBatchesAndDtypes) {
    expect_throw_with<InvalidArgument>(
        [] {
            (void)SpMM(csr(), dense(DataType::f32, {4, 3}, 3 * mib), dense(DataType::f32, {4, 3}, 4 * mib));
        },
        {"b:", "4 rows", "5 columns"});
    expect_throw_with<InvalidArgument>(
        [] {
            (void)SpMM(csr(), dense(DataType::f32, {5, 3}, 3 * mib), dense(DataType::f32, {5, 3}, 4 * mib));
        },
        {"c:", "5 rows"});
    expect_throw_with<InvalidArgument>(
        [] {
            (void)SpMM(csr(), dense(DataType::f32, {5, 3}, 3 * mib), dense(DataType::f32, {4, 2}, 4 * mib));
        },
        {"b, c", "columns"});
    expect_throw_with<InvalidArgument>(
        [] {
            (void)SpMM(csr(), dense(DataType::f32, {5}, 3 * mib), dense(DataType::f32, {4, 3}, 4 * mib));
        },
        {"b:", "rank 1"});
    expect_throw_with<InvalidArgument>(
        [] {
            (void)SpMM(csr(), dense(DataType::f32, {5, 3}, 3 * mib, {2, 2}), dense(DataType::f32, {4, 3}, 4 * mib));
        },
        {"b:", "neither row-major", "column-major"});
    expect_throw_with<InvalidArgument>(
        [] {
            (void)SpMM(csr(), dense(DataType::f32, {3, 5, 3}, 3 * mib), dense(DataType::f32, {2, 4, 3}, 4 * mib));
        },
        {"b:", "batch of 3", "c has 2"});
    expect_throw_with<InvalidArgument>(
        [] {
            (void)SpMM(csr(), dense(DataType::f32, {5, 3}, 3 * mib),
                       dense(DataType::f32, {2, 4, 3}, 4 * mib, {6, 3, 1}));
        },
        {"c:", "batch stride 6"});
    const MatrixView batched3 =
        MatrixView::csr(4, 5, TensorView(fake(0), DataType::i32, {5}), TensorView(fake(mib), DataType::i32, {6}),
                        TensorView(fake(2 * mib), DataType::f32, {3, 6}));
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)SpMM(batched3, dense(DataType::f32, {5, 3}, 3 * mib), dense(DataType::f32, {2, 4, 3}, 4 * mib));
        },
        {"a:", "batch of 3"});
    const MatrixView csc =
        MatrixView::csc(4, 5, TensorView(fake(0), DataType::i32, {6}), TensorView(fake(mib), DataType::i32, {6}),
                        TensorView(fake(2 * mib), DataType::f32, {6}));
    expect_throw_with<NotSupported>(
        [&] {
            (void)SpMM(csc, dense(DataType::f32, {5, 3}, 3 * mib), dense(DataType::f32, {2, 4, 3}, 4 * mib));
        },
        {"CSR and COO", "csc"});
    expect_throw_with<NotSupported>(
        [] {
            (void)SpMM(csr(), dense(DataType::f32, {5, 1}, 3 * mib),
                       dense(DataType::f32, {std::int64_t(1) << 31, 4, 1}, 4 * mib));
        },
        {"c:", "int range"});
    expect_throw_with<NotSupported>(
        [] {
            (void)SpMM(csr(), dense(DataType::f32, {5, 3}, 3 * mib), dense(DataType::f32, {4, 3}, 4 * mib, {1, 4}));
        },
        {"b, c", "row-major", "column-major"});
    expect_throw_with<NotSupported>(
        [] {
            (void)SpMM(csr(), dense(DataType::f64, {5, 3}, 3 * mib), dense(DataType::f32, {4, 3}, 4 * mib));
        },
        {"a, b, c", "f32, f64 and f32"});
    expect_throw_with<NotSupported>(
        [] {
            (void)SpMM(csr(DataType::f16), dense(DataType::f16, {5, 3}, 3 * mib),
                       dense(DataType::f16, {4, 3}, 4 * mib));
        },
        {"a, b, c"});
    expect_throw_with<NotSupported>(
        [] {
            (void)SpMM(csr(), dense(DataType::f32, {5, 3}, 3 * mib), dense(DataType::f32, {4, 3}, 4 * mib),
                       {.algorithm = SpMMAlgorithm::alg4});
        },
        {"alg4", "csr", "alg1 to alg3"});
    expect_throw_with<InvalidArgument>(
        [] {
            (void)SpMM(csr(), dense(DataType::f32, {5, 3}, 3 * mib), dense(DataType::f32, {4, 3}, 4 * mib),
                       {.algorithm = SpMMAlgorithm(6)});
        },
        {"options.algorithm", "6"});
    expect_throw_with<InvalidArgument>(
        [] {
            (void)SpMM(csr(), dense(DataType::f32, {5, 3}, 3 * mib), dense(DataType::f32, {4, 3}, 4 * mib),
                       {.op = Operation(3)});
        },
        {"options.op", "3"});
    expect_throw_with<InvalidArgument>(
        [] {
            (void)SpMM(MatrixView(), dense(DataType::f32, {5, 3}, 3 * mib), dense(DataType::f32, {4, 3}, 4 * mib));
        },
        {"a:", "empty"});
}

TEST(SparseSpMMValidation, ExecuteRefusesOtherLayoutsAndOverlap) {
    SpMM p(csr(), dense(DataType::f32, {5, 3}, 3 * mib), dense(DataType::f32, {4, 3}, 4 * mib));
    expect_throw_with<InvalidArgument>(
        [&] {
            p.execute(dense(DataType::f32, {5, 3}, 3 * mib, {1, 5}), dense(DataType::f32, {4, 3}, 4 * mib), 1, 0,
                      no_stream);
        },
        {"sparse::SpMM::execute", "b:"});
    expect_throw_with<InvalidArgument>(
        [&] {
            p.execute(dense(DataType::f32, {5, 3}, 3 * mib), dense(DataType::f32, {4, 3}, 3 * mib + 4), 1, 0,
                      no_stream);
        },
        {"c overlaps b"});
    expect_throw_with<InvalidArgument>(
        [&] {
            p.execute(dense(DataType::f32, {5, 3}, 3 * mib), dense(DataType::f32, {4, 3}, 2 * mib), 1, 0, no_stream);
        },
        {"c overlaps A's values"});
    expect_throw_with<InvalidArgument>(
        [&] {
            p.execute(dense(DataType::f32, {5, 3}, 3 * mib), dense(DataType::f32, {4, 3}, 4 * mib + 1), 1, 0,
                      no_stream);
        },
        {"c:", "aligned"});
    SpMM q(std::move(p));
    expect_throw_with<InvalidArgument>([&] { p.plan(); },
                                       {"sparse::SpMM", "moved"});  // NOLINT(bugprone-use-after-move)
    EXPECT_TRUE(p.matrix().empty());
    EXPECT_EQ(q.c_layout().shape(0), 4);
}

}  // namespace
}  // namespace gpumath::sparse
