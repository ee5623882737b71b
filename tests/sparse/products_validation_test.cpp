// SPDX-License-Identifier: Apache-2.0
// Every host-side rule of SpGEMM, SDDMM and TriangularSolve, checked before any CUDA call: these run
// without a GPU (the pointers are never dereferenced; streams are passed as core::StreamRef{}).
#include <gpumath/sparse.hpp>

#include <cstdint>
#include <string>
#include <utility>

#include "common/test_util.hpp"
#include "sparse_fakes.hpp"

namespace gpumath::sparse {
namespace {

using test::expect_throw_with;

using fakes::fake;

/// A rows × cols CSR view over fake arrays in slots base, base + 1, base + 2 (f32 values by default).
MatrixView csr(std::int64_t rows, std::int64_t cols, std::uintptr_t base = 0, DataType vt = DataType::f32,
               DataType it = DataType::i32, std::int64_t nnz = 6) {
    return fakes::csr(rows, cols, base, vt, it, nnz);
}

MatrixView coo(std::int64_t rows, std::int64_t cols, std::uintptr_t base = 0, DataType vt = DataType::f32) {
    return fakes::coo(rows, cols, base, vt);
}

TensorView dense(std::uintptr_t slot, std::int64_t rows, std::int64_t cols, DataType t = DataType::f32) {
    return {fake(slot), t, {rows, cols}};
}

// ---------------------------------------------------------------------------------------------
// SpGEMM

TEST(SparseProductsValidation, SpGEMMTakesTwoCompatibleCsrMatrices) {
    SpGEMM plan(csr(4, 5, 0), csr(5, 3, 10));
    EXPECT_FALSE(plan.planned());
    EXPECT_EQ(plan.nnz(), -1);
    EXPECT_TRUE(plan.result().empty());
    EXPECT_EQ(plan.options().memory_resource, nullptr);
    for (const DataType t : {DataType::f64, DataType::c32, DataType::c64})
        EXPECT_NO_THROW(SpGEMM(csr(4, 5, 0, t), csr(5, 3, 10, t)));
}

TEST(SparseProductsValidation, SpGEMMRefusesWhatCuSparseCannotTake) {
    const char* api = "sparse::SpGEMM";
    expect_throw_with<InvalidArgument>([] { SpGEMM p(MatrixView(), csr(5, 3, 10)); }, {api, "a: an empty MatrixView"});
    expect_throw_with<InvalidArgument>([] { SpGEMM p(csr(4, 5), coo(5, 3, 10)); },
                                       {api, "b: format coo", "csr", "sparse::to_csr"});
    expect_throw_with<InvalidArgument>([] { SpGEMM p(csr(4, 5), csr(4, 3, 10)); },
                                       {api, "a is 4 × 5 and b is 4 × 3", "a.cols() must equal b.rows()"});
    expect_throw_with<InvalidArgument>([] { SpGEMM p(csr(4, 5, 0, DataType::f32), csr(5, 3, 10, DataType::f64)); },
                                       {api, "a.values: dtype f32, b.values: dtype f64", "one dtype"});
    expect_throw_with<InvalidArgument>([] { SpGEMM p(csr(4, 5, 0, DataType::f16), csr(5, 3, 10, DataType::f16)); },
                                       {api, "a.values: dtype f16", "f32, f64, c32 or c64"});
    expect_throw_with<NotSupported>(
        [] { SpGEMM p(csr(4, 5, 0, DataType::f32, DataType::i64), csr(5, 3, 10, DataType::f32, DataType::i64)); },
        {api, "index dtypes i64 (a) and i64 (b)", "i32 indices"});
    const MatrixView batched =
        MatrixView::csr(5, 3, TensorView(fake(10), DataType::i32, {6}), TensorView(fake(11), DataType::i32, {6}),
                        TensorView(fake(12), DataType::f32, {2, 6}));
    expect_throw_with<NotSupported>([&] { SpGEMM p(csr(4, 5), batched); }, {api, "b: a batch of 2 matrices"});
    // The stateless call validates before any CUDA call.
    expect_throw_with<InvalidArgument>([] { (void)spgemm(csr(4, 5), csr(4, 3, 10), core::StreamRef{}); },
                                       {"sparse::spgemm", "a.cols() must equal b.rows()"});
}

TEST(SparseProductsValidation, SpGEMMMovedFromThrows) {
    SpGEMM plan(csr(4, 5, 0), csr(5, 3, 10));
    SpGEMM moved = std::move(plan);
    EXPECT_FALSE(plan.planned());  // NOLINT(bugprone-use-after-move): the moved-from state is the test
    EXPECT_EQ(plan.nnz(), -1);     // NOLINT(bugprone-use-after-move)
    expect_throw_with<InvalidArgument>([&] { plan.plan(core::StreamRef{}); }, {"sparse::SpGEMM::plan", "moved from"});
    expect_throw_with<InvalidArgument>([&] { plan.execute(core::StreamRef{}); },
                                       {"sparse::SpGEMM::execute", "moved from"});
    expect_throw_with<InvalidArgument>([&] { (void)plan.result(); }, {"sparse::SpGEMM::result", "moved from"});
    expect_throw_with<InvalidArgument>([&] { (void)std::move(plan).release_result(); },
                                       {"sparse::SpGEMM::release_result", "moved from"});
    SpGEMM assigned(csr(2, 5, 20), csr(5, 3, 30));
    assigned = std::move(moved);
    EXPECT_FALSE(assigned.planned());
}

// ---------------------------------------------------------------------------------------------
// SDDMM

TEST(SparseProductsValidation, SDDMMTakesDenseOperandsOfEitherOrder) {
    // C 4 × 5, k = 3: A 4 × 3 and B 3 × 5, row- or column-major, or transposed.
    EXPECT_NO_THROW(SDDMM(dense(20, 4, 3), dense(21, 3, 5), csr(4, 5)));
    EXPECT_NO_THROW(SDDMM(TensorView(fake(20), DataType::f32, {4, 3}, {1, 4}),
                          TensorView(fake(21), DataType::f32, {3, 5}, {1, 8}), csr(4, 5)));
    SDDMM t(dense(20, 3, 4), dense(21, 5, 3), csr(4, 5), {.op_a = Operation::transpose, .op_b = Operation::transpose});
    EXPECT_EQ(t.options().op_a, Operation::transpose);
    EXPECT_FALSE(t.planned());
    EXPECT_NO_THROW(SDDMM(dense(20, 4, 3, DataType::c64), dense(21, 3, 5, DataType::c64),
                          csr(4, 5, 0, DataType::c64, DataType::i64)));
}

TEST(SparseProductsValidation, SDDMMRefusesBadOperands) {
    const char* api = "sparse::SDDMM";
    expect_throw_with<InvalidArgument>([] { SDDMM p(dense(20, 4, 3), dense(21, 3, 5), coo(4, 5)); },
                                       {api, "c: format coo", "sparse::to_csr"});
    expect_throw_with<InvalidArgument>([] { SDDMM p(dense(20, 4, 3), dense(21, 3, 5), MatrixView()); },
                                       {api, "c: an empty MatrixView"});
    expect_throw_with<InvalidArgument>([] { SDDMM p(dense(20, 4, 3, DataType::f64), dense(21, 3, 5), csr(4, 5)); },
                                       {api, "a: dtype f64 where the operation computes in f32"});
    expect_throw_with<InvalidArgument>(
        [] {
            SDDMM p(TensorView(fake(20), DataType::f32, {2, 4, 3}), dense(21, 3, 5), csr(4, 5));
        },
        {api, "a: rank 3", "2-D"});
    expect_throw_with<InvalidArgument>(
        [] {
            SDDMM p(dense(20, 4, 3), TensorView(fake(21), DataType::f32, {3, 5}, {10, 2}), csr(4, 5));
        },
        {api, "b: strides", "row-major", "column-major"});
    expect_throw_with<InvalidArgument>([] { SDDMM p(dense(20, 4, 3), dense(21, 2, 5), csr(4, 5)); },
                                       {api, "op(a) is 4 × 3, op(b) is 2 × 5 and c is 4 × 5"});
    expect_throw_with<InvalidArgument>(
        [] { SDDMM p(dense(20, 4, 3), dense(21, 3, 5), csr(4, 5), {.op_a = Operation::transpose}); },
        {api, "op(a) is 3 × 4"});
    expect_throw_with<InvalidArgument>(
        [] { SDDMM p(dense(20, 4, 3), dense(21, 3, 5), csr(4, 5), {.op_b = Operation::conjugate_transpose}); },
        {api, "options.op_b: conjugate_transpose", "none or transpose"});
    expect_throw_with<InvalidArgument>(
        [] { SDDMM p(dense(20, 4, 3), dense(21, 3, 5), csr(4, 5), {.op_a = Operation(7)}); },
        {api, "options.op_a: 7 is not an Operation", "none, transpose, conjugate_transpose"});
    expect_throw_with<NotSupported>(
        [] {
            SDDMM p(TensorView(fake(20), DataType::f32, {4, 0}), TensorView(fake(21), DataType::f32, {0, 5}),
                    csr(4, 5));
        },
        {api, "inner extent 0"});
    // A over C's values; B misaligned.
    expect_throw_with<InvalidArgument>(
        [] {
            SDDMM p(TensorView(fake(2, 8), DataType::f32, {4, 3}), dense(21, 3, 5), csr(4, 5));
        },
        {api, "a and c.values overlap"});
    expect_throw_with<InvalidArgument>(
        [] {
            SDDMM p(dense(20, 4, 3), TensorView(fake(21, 2), DataType::f32, {3, 5}), csr(4, 5));
        },
        {api, "b: address", "not aligned"});
}

TEST(SparseProductsValidation, SDDMMScalarsAndMovedFrom) {
    SDDMM plan(dense(20, 4, 3), dense(21, 3, 5), csr(4, 5));
    // A complex scalar in a real dtype is refused before planning (so before any CUDA call).
    expect_throw_with<InvalidArgument>(
        [&] {
            plan.execute({1.0, 2.0}, 0.0, core::StreamRef{});
        },
        {"sparse::SDDMM::execute", "alpha: (1, 2) has an imaginary part", "f32"});
    expect_throw_with<InvalidArgument>(
        [&] {
            plan.execute(1.0, {0.0, -1.0}, core::StreamRef{});
        },
        {"sparse::SDDMM::execute", "beta"});
    SDDMM moved = std::move(plan);
    EXPECT_FALSE(plan.planned());  // NOLINT(bugprone-use-after-move)
    expect_throw_with<InvalidArgument>([&] { plan.plan(core::StreamRef{}); }, {"sparse::SDDMM::plan", "moved from"});
    expect_throw_with<InvalidArgument>([&] { plan.execute(1.0, 0.0, core::StreamRef{}); },
                                       {"sparse::SDDMM::execute", "moved from"});
    EXPECT_EQ(plan.options().op_a, Operation::none);
}

// ---------------------------------------------------------------------------------------------
// TriangularSolve

TEST(SparseProductsValidation, TriangularSolveTakesVectorsAndMatrices) {
    TriangularSolve sv(csr(4, 4), TensorLayout(DataType::f32, {4}));
    EXPECT_FALSE(sv.planned());
    EXPECT_EQ(sv.layout().rank(), 1);
    EXPECT_EQ(sv.options().triangle, Triangle::lower);
    TriangularSolve sm(coo(4, 4), TensorLayout(DataType::f32, {4, 3}, {1, 4}),
                       {.triangle = Triangle::upper, .diagonal = Diagonal::unit, .op = Operation::conjugate_transpose});
    EXPECT_EQ(sm.layout().shape(1), 3);
    EXPECT_EQ(sm.options().diagonal, Diagonal::unit);
    EXPECT_NO_THROW(TriangularSolve(csr(4, 4, 0, DataType::c64, DataType::i64), TensorLayout(DataType::c64, {4, 2})));
    EXPECT_EQ(to_string(Triangle::upper), "upper");
    EXPECT_EQ(to_string(Diagonal::non_unit), "non_unit");
    EXPECT_EQ(to_string(Triangle(5)), "unknown");
    EXPECT_EQ(to_string(Diagonal(5)), "unknown");
}

TEST(SparseProductsValidation, TriangularSolveRefusesBadPlans) {
    const char* api = "sparse::TriangularSolve";
    const TensorLayout vec(DataType::f32, {4});
    expect_throw_with<InvalidArgument>([&] { TriangularSolve p(csr(4, 5), vec); }, {api, "a: 4 × 5", "square"});
    const MatrixView csc =
        MatrixView::csc(4, 4, TensorView(fake(0), DataType::i32, {5}), TensorView(fake(1), DataType::i32, {6}),
                        TensorView(fake(2), DataType::f32, {6}));
    expect_throw_with<InvalidArgument>([&] { TriangularSolve p(csc, vec); },
                                       {api, "a: format csc", "csr or coo", "sparse::to_csr"});
    expect_throw_with<InvalidArgument>([&] { TriangularSolve p(csr(4, 4), vec, {.triangle = Triangle(2)}); },
                                       {api, "options.triangle: 2 is not a Triangle", "lower, upper"});
    expect_throw_with<InvalidArgument>([&] { TriangularSolve p(csr(4, 4), vec, {.diagonal = Diagonal(9)}); },
                                       {api, "options.diagonal: 9 is not a Diagonal", "non_unit, unit"});
    expect_throw_with<InvalidArgument>([&] { TriangularSolve p(csr(4, 4), vec, {.op = Operation(3)}); },
                                       {api, "options.op: 3 is not an Operation"});
    expect_throw_with<InvalidArgument>([] { TriangularSolve p(csr(4, 4), TensorLayout(DataType::f32, {5})); },
                                       {api, "b: 5 entries where the matrix needs 4"});
    expect_throw_with<InvalidArgument>(
        [] {
            TriangularSolve p(csr(4, 4), TensorLayout(DataType::f32, {5, 2}));
        },
        {api, "b: 5 rows where A is 4 × 4"});
    expect_throw_with<InvalidArgument>([] { TriangularSolve p(csr(4, 4), TensorLayout(DataType::f64, {4})); },
                                       {api, "b: dtype f64 where the operation computes in f32"});
    expect_throw_with<InvalidArgument>([] { TriangularSolve p(csr(4, 4), TensorLayout(DataType::f32, {4}, {2})); },
                                       {api, "b: stride 2", "contiguous"});
    expect_throw_with<InvalidArgument>(
        [] {
            TriangularSolve p(csr(4, 4), TensorLayout(DataType::f32, {2, 4, 2}));
        },
        {api, "b: rank 3"});
    expect_throw_with<InvalidArgument>(
        [] { TriangularSolve p(csr(4, 4, 0, DataType::f16), TensorLayout(DataType::f16, {4})); },
        {api, "a.values: dtype f16", "f32, f64, c32 or c64"});
}

TEST(SparseProductsValidation, TriangularSolveChecksEachSolveBeforeAnyCudaCall) {
    const char* api = "sparse::TriangularSolve::solve";
    TriangularSolve sm(csr(4, 4), TensorLayout(DataType::f32, {4, 3}, {1, 4}));
    const TensorView b(fake(20), DataType::f32, {4, 3}, {1, 4});
    const TensorView x(fake(21), DataType::f32, {4, 3}, {1, 4});
    expect_throw_with<InvalidArgument>(
        [&] {
            sm.solve(TensorView(fake(20), DataType::f32, {4, 2}, {1, 4}), x, 1.0, core::StreamRef{});
        },
        {api, "b:", "where the plan was made for"});
    expect_throw_with<InvalidArgument>(
        [&] {
            sm.solve(b, TensorView(fake(21), DataType::f32, {4, 3}), 1.0, core::StreamRef{});
        },
        {api, "x: strides (3, 1) where the plan was made for strides (1, 4)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            sm.solve(b, TensorView(fake(20, 16), DataType::f32, {4, 3}, {1, 4}), 1.0, core::StreamRef{});
        },
        {api, "x and b overlap"});
    expect_throw_with<InvalidArgument>(
        [&] {
            sm.solve(b, TensorView(fake(2), DataType::f32, {4, 3}, {1, 4}), 1.0, core::StreamRef{});
        },
        {api, "x and a.values overlap"});
    expect_throw_with<InvalidArgument>(
        [&] {
            sm.solve(b, x, {0.0, 1.0}, core::StreamRef{});
        },
        {api, "alpha", "imaginary part"});
    TriangularSolve sv(csr(4, 4), TensorLayout(DataType::f32, {4}));
    expect_throw_with<InvalidArgument>(
        [&] {
            sv.solve(TensorView(fake(20), DataType::f32, {4}), TensorView(fake(21, 2), DataType::f32, {4}), 1.0,
                     core::StreamRef{});
        },
        {api, "x: address", "not aligned"});
    expect_throw_with<InvalidArgument>(
        [&] {
            sv.solve(TensorView(fake(20), DataType::f32, {4}), TensorView(fake(21), DataType::f64, {4}), 1.0,
                     core::StreamRef{});
        },
        {api, "x:", "where the plan was made for"});
    TriangularSolve moved = std::move(sv);
    EXPECT_FALSE(sv.planned());  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(sv.layout().rank(), 0);
    expect_throw_with<InvalidArgument>(
        [&] {
            sv.solve(TensorView(fake(20), DataType::f32, {4}), TensorView(fake(21), DataType::f32, {4}), 1.0,
                     core::StreamRef{});
        },
        {api, "moved from"});
    expect_throw_with<InvalidArgument>([&] { sv.plan(core::StreamRef{}); },
                                       {"sparse::TriangularSolve::plan", "moved from"});
    expect_throw_with<InvalidArgument>([&] { sv.update_values(core::StreamRef{}); },
                                       {"sparse::TriangularSolve::update_values", "moved from"});
}

}  // namespace
}  // namespace gpumath::sparse
