// SPDX-License-Identifier: Apache-2.0
// Every host-side rule of the stateless sparse calls sddmm, triangular_solve, spsolve and spgemm,
// checked before any CUDA call: these run without a GPU (the pointers are never dereferenced;
// streams are passed as core::StreamRef{}). Each error is typed, names the call (its message and
// api()) and the operand at fault.
#include <gpumath/sparse.hpp>

#include <complex>
#include <cstdint>
#include <string>

#include "common/test_util.hpp"
#include "sparse_fakes.hpp"

namespace gpumath::sparse {
namespace {

const core::StreamRef no_stream{};

using fakes::fake;

/// A rows × cols CSR view over fake arrays in slots base, base + 1, base + 2 (f64 values by default).
MatrixView csr(std::int64_t rows, std::int64_t cols, std::uintptr_t base = 0, DataType vt = DataType::f64,
               DataType it = DataType::i32, std::int64_t nnz = 6) {
    return fakes::csr(rows, cols, base, vt, it, nnz);
}

MatrixView coo(std::int64_t rows, std::int64_t cols, std::uintptr_t base = 0, DataType vt = DataType::f64) {
    return fakes::coo(rows, cols, base, vt);
}

MatrixView csc(std::int64_t rows, std::int64_t cols, std::uintptr_t base = 0, DataType vt = DataType::f64) {
    return MatrixView::csc(rows, cols, TensorView(fake(base), DataType::i32, {cols + 1}),
                           TensorView(fake(base + 1), DataType::i32, {6}), TensorView(fake(base + 2), vt, {6}));
}

TensorView dense(std::uintptr_t slot, std::initializer_list<std::int64_t> shape,
                 std::initializer_list<std::int64_t> strides = {}, DataType t = DataType::f64) {
    return {fake(slot), t, shape, strides};
}

/// `f` throws E before any CUDA call, naming `api` in its message and in api(), and every needle.
template <class E, class F>
void expect_refused(const char* api, F&& f, std::initializer_list<std::string> needles) {
    try {
        f();
        ADD_FAILURE() << "expected an exception, none was thrown";
    } catch (const E& e) {
        const std::string what = e.what();
        EXPECT_EQ(e.api(), api) << "message: " << what;
        EXPECT_NE(what.find(api), std::string::npos) << "message: " << what << "\nmissing the call's name";
        for (const auto& n : needles)
            EXPECT_NE(what.find(n), std::string::npos) << "message: " << what << "\nmissing: " << n;
    } catch (const std::exception& e) {
        ADD_FAILURE() << "wrong exception type; message: " << e.what();
    }
}

// ---------------------------------------------------------------------------------------------
// sddmm: C (4 × 3, slots 0-2) = A (4 × 5, slot 10) · B (5 × 3, slot 11)

constexpr const char* sddmm_api = "sparse::sddmm";

TEST(SparseStatelessValidation, SddmmRefusesBadOperands) {
    const MatrixView c = csr(4, 3);
    const TensorView a = dense(10, {4, 5}), b = dense(11, {5, 3});
    expect_refused<InvalidArgument>(sddmm_api, [&] { sddmm(a, b, MatrixView(), 1.0, 0.0, {}, no_stream); },
                                    {"c: an empty MatrixView"});
    expect_refused<InvalidArgument>(sddmm_api, [&] { sddmm(a, b, coo(4, 3), 1.0, 0.0, {}, no_stream); },
                                    {"c: format coo", "sparse::to_csr"});
    expect_refused<InvalidArgument>(sddmm_api,
                                    [&] {
                                        sddmm(dense(10, {4, 4}), b, c, 1.0, 0.0, {}, no_stream);
                                    },
                                    {"op(a) is 4 × 4", "op(a)·op(b) must be c.rows() × c.cols()"});
    expect_refused<InvalidArgument>(sddmm_api,
                                    [&] {
                                        sddmm(a, dense(11, {5, 2}), c, 1.0, 0.0, {}, no_stream);
                                    },
                                    {"op(b) is 5 × 2"});
    expect_refused<InvalidArgument>(sddmm_api,
                                    [&] {
                                        sddmm(dense(10, {4, 5}, {}, DataType::f32), b, c, 1.0, 0.0, {}, no_stream);
                                    },
                                    {"a"});
    expect_refused<InvalidArgument>(sddmm_api,
                                    [&] {
                                        sddmm(dense(10, {4, 5, 1}), b, c, 1.0, 0.0, {}, no_stream);
                                    },
                                    {"a"});
    expect_refused<InvalidArgument>(sddmm_api,
                                    [&] {
                                        sddmm(a, dense(11, {5, 3}, {6, 2}), c, 1.0, 0.0, {}, no_stream);
                                    },
                                    {"b"});
    expect_refused<InvalidArgument>(sddmm_api,
                                    [&] {
                                        sddmm(dense(10, {4, 5}, {}, DataType::f16),
                                              dense(11, {5, 3}, {}, DataType::f16), csr(4, 3, 0, DataType::f16), 1.0,
                                              0.0, {}, no_stream);
                                    },
                                    {"f16", "f32, f64, c32 or c64"});
    expect_refused<NotSupported>(sddmm_api,
                                 [&] {
                                     sddmm(dense(10, {4, 0}), dense(11, {0, 3}), c, 1.0, 0.0, {}, no_stream);
                                 },
                                 {"inner extent 0"});
}

TEST(SparseStatelessValidation, SddmmRefusesOverlapsScalarsAndOptions) {
    const MatrixView c = csr(4, 3);
    const TensorView a = dense(10, {4, 5}), b = dense(11, {5, 3});
    // A over C's values (slot 2), B over C's column indices (slot 1).
    expect_refused<InvalidArgument>(sddmm_api,
                                    [&] {
                                        sddmm(dense(2, {4, 5}), b, c, 1.0, 0.0, {}, no_stream);
                                    },
                                    {"a", "c", "overlap"});
    expect_refused<InvalidArgument>(sddmm_api,
                                    [&] {
                                        sddmm(a, dense(1, {5, 3}), c, 1.0, 0.0, {}, no_stream);
                                    },
                                    {"b", "c", "overlap"});
    expect_refused<InvalidArgument>(
        sddmm_api, [&] { sddmm(a, b, c, std::complex<double>(1.0, 2.0), 0.0, {}, no_stream); }, {"alpha"});
    expect_refused<InvalidArgument>(
        sddmm_api, [&] { sddmm(a, b, c, 1.0, std::complex<double>(0.0, 1.0), {}, no_stream); }, {"beta"});
    expect_refused<InvalidArgument>(
        sddmm_api, [&] { sddmm(a, b, c, 1.0, 0.0, {.op_a = Operation::conjugate_transpose}, no_stream); },
        {"options.op_a: conjugate_transpose"});
    expect_refused<InvalidArgument>(sddmm_api, [&] { sddmm(a, b, c, 1.0, 0.0, {.op_b = Operation(7)}, no_stream); },
                                    {"options.op_b", "7"});
    // Transposed operands change the shapes that must agree.
    expect_refused<InvalidArgument>(
        sddmm_api, [&] { sddmm(a, b, c, 1.0, 0.0, {.op_a = Operation::transpose}, no_stream); }, {"op(a) is 5 × 4"});
}

// ---------------------------------------------------------------------------------------------
// triangular_solve: A 4 × 4 (slots 0-2), b in slot 10, x in slot 11

constexpr const char* trsv_api = "sparse::triangular_solve";

TEST(SparseStatelessValidation, TriangularSolveRefusesBadMatrices) {
    const TensorView b = dense(10, {4}), x = dense(11, {4});
    expect_refused<InvalidArgument>(trsv_api, [&] { triangular_solve(MatrixView(), b, x, {}, no_stream); },
                                    {"a: an empty MatrixView"});
    expect_refused<InvalidArgument>(trsv_api, [&] { triangular_solve(csc(4, 4), b, x, {}, no_stream); },
                                    {"a: format csc", "sparse::to_csr"});
    expect_refused<InvalidArgument>(trsv_api, [&] { triangular_solve(csr(4, 5), b, x, {}, no_stream); },
                                    {"a: 4 × 5", "square"});
    expect_refused<InvalidArgument>(trsv_api,
                                    [&] {
                                        triangular_solve(csr(4, 4, 0, DataType::f16), dense(10, {4}, {}, DataType::f16),
                                                         dense(11, {4}, {}, DataType::f16), {}, no_stream);
                                    },
                                    {"f16"});
}

TEST(SparseStatelessValidation, TriangularSolveRefusesBadRightHandSides) {
    const MatrixView a = csr(4, 4);
    expect_refused<InvalidArgument>(
        trsv_api, [&] { triangular_solve(a, dense(10, {4}, {}, DataType::f32), dense(11, {4}), {}, no_stream); },
        {"b"});
    expect_refused<InvalidArgument>(trsv_api,
                                    [&] { triangular_solve(a, dense(10, {5}), dense(11, {5}), {}, no_stream); }, {"b"});
    expect_refused<InvalidArgument>(trsv_api,
                                    [&] {
                                        triangular_solve(a, dense(10, {4, 2, 1}), dense(11, {4, 2, 1}), {}, no_stream);
                                    },
                                    {"b: rank 3"});
    expect_refused<InvalidArgument>(trsv_api,
                                    [&] {
                                        triangular_solve(a, dense(10, {5, 3}), dense(11, {5, 3}), {}, no_stream);
                                    },
                                    {"b: 5 rows where A is 4 × 4"});
    // x takes b's shape, dtype and strides.
    expect_refused<InvalidArgument>(trsv_api,
                                    [&] {
                                        triangular_solve(a, dense(10, {4, 3}), dense(11, {4, 2}), {}, no_stream);
                                    },
                                    {"x:", "b's shape, dtype and strides"});
    expect_refused<InvalidArgument>(
        trsv_api,
        [&] {
            triangular_solve(a, dense(10, {4, 3}), dense(11, {4, 3}, {1, 4}), {}, no_stream);
        },
        {"x:", "b's shape, dtype and strides"});
    expect_refused<InvalidArgument>(
        trsv_api, [&] { triangular_solve(a, dense(10, {4}), dense(11, {4}, {}, DataType::c64), {}, no_stream); },
        {"x:", "b's shape, dtype and strides"});
}

TEST(SparseStatelessValidation, TriangularSolveRefusesOverlapsAndEnums) {
    const MatrixView a = csr(4, 4);
    const TensorView b = dense(10, {4}), x = dense(11, {4});
    expect_refused<InvalidArgument>(
        trsv_api, [&] { triangular_solve(a, b, TensorView(fake(10, 8), DataType::f64, {4}), {}, no_stream); },
        {"x", "b", "overlap"});
    expect_refused<InvalidArgument>(trsv_api, [&] { triangular_solve(a, b, dense(2, {4}), {}, no_stream); },
                                    {"x", "a", "overlap"});
    expect_refused<InvalidArgument>(trsv_api, [&] { triangular_solve(a, b, x, {.triangle = Triangle(5)}, no_stream); },
                                    {"options.triangle: 5", "lower"});
    expect_refused<InvalidArgument>(trsv_api, [&] { triangular_solve(a, b, x, {.diagonal = Diagonal(9)}, no_stream); },
                                    {"options.diagonal: 9", "unit"});
    expect_refused<InvalidArgument>(trsv_api, [&] { triangular_solve(a, b, x, {.op = Operation(3)}, no_stream); },
                                    {"options.op"});
    // COO is taken (the error comes from the later rule).
    expect_refused<InvalidArgument>(trsv_api, [&] { triangular_solve(coo(4, 4), b, dense(2, {4}), {}, no_stream); },
                                    {"x", "overlap"});
}

// ---------------------------------------------------------------------------------------------
// spsolve: A 4 × 4 (slots 0-2), b in slot 10

constexpr const char* spsolve_api = "sparse::spsolve";

TEST(SparseStatelessValidation, SpsolveRefusesBadMatrices) {
    const TensorView b = dense(10, {4});
    expect_refused<InvalidArgument>(spsolve_api, [&] { (void)spsolve(MatrixView(), b, {}, no_stream); },
                                    {"a: an empty MatrixView"});
    expect_refused<InvalidArgument>(spsolve_api, [&] { (void)spsolve(coo(4, 4), b, {}, no_stream); },
                                    {"a: format coo", "sparse::to_csr"});
    expect_refused<InvalidArgument>(spsolve_api, [&] { (void)spsolve(csr(4, 5), b, {}, no_stream); },
                                    {"4 × 5 is not square"});
    expect_refused<NotSupported>(spsolve_api, [&] { (void)spsolve(csr(4, 4, 0, DataType::f16), b, {}, no_stream); },
                                 {"a: values of dtype f16"});
    expect_refused<NotSupported>(spsolve_api,
                                 [&] { (void)spsolve(csr(4, 4, 0, DataType::f64, DataType::i64), b, {}, no_stream); },
                                 {"a: indices of dtype i64"});
    const MatrixView batched =
        MatrixView::csr(4, 4, TensorView(fake(0), DataType::i32, {5}), TensorView(fake(1), DataType::i32, {6}),
                        TensorView(fake(2), DataType::f64, {2, 6}));
    expect_refused<NotSupported>(spsolve_api, [&] { (void)spsolve(batched, b, {}, no_stream); },
                                 {"a: a batch of 2 value arrays"});
}

TEST(SparseStatelessValidation, SpsolveRefusesBadOptionsAndRightHandSides) {
    const MatrixView a = csr(4, 4);
    const TensorView b = dense(10, {4});
    expect_refused<InvalidArgument>(spsolve_api, [&] { (void)spsolve(a, b, {.type = MatrixType(8)}, no_stream); },
                                    {"options.type: 8", "spd"});
    expect_refused<InvalidArgument>(
        spsolve_api, [&] { (void)spsolve(a, b, {.type = MatrixType::spd, .part = MatrixPart(4)}, no_stream); },
        {"options.part: 4"});
    expect_refused<InvalidArgument>(spsolve_api, [&] { (void)spsolve(a, b, {.refinement_steps = -1}, no_stream); },
                                    {"options.refinement_steps: -1", "0 to 100"});
    expect_refused<InvalidArgument>(spsolve_api, [&] { (void)spsolve(a, b, {.refinement_steps = 101}, no_stream); },
                                    {"options.refinement_steps: 101"});
    expect_refused<InvalidArgument>(spsolve_api, [&] { (void)spsolve(a, b, {.part = MatrixPart::lower}, no_stream); },
                                    {"options.part: lower for a general matrix"});
    expect_refused<InvalidArgument>(spsolve_api,
                                    [&] { (void)spsolve(a, dense(10, {4}, {}, DataType::f32), {}, no_stream); },
                                    {"b: dtype f32 where the matrix holds f64"});
    expect_refused<InvalidArgument>(spsolve_api,
                                    [&] {
                                        (void)spsolve(a, dense(10, {4, 2, 1}), {}, no_stream);
                                    },
                                    {"b: rank 3"});
    expect_refused<InvalidArgument>(spsolve_api,
                                    [&] {
                                        (void)spsolve(a, dense(10, {5, 2}), {}, no_stream);
                                    },
                                    {"b: 5 rows where the matrix has n = 4"});
}

TEST(SparseStatelessValidation, SpsolveWithoutCudssHeaderIsNotSupported) {
    if (DirectSolver::supported()) GTEST_SKIP() << "gpumath was built with cuDSS's header: nothing to refuse";
    expect_refused<NotSupported>(spsolve_api, [&] { (void)spsolve(csr(4, 4), dense(10, {4}), {}, no_stream); },
                                 {"cudss.h"});
}

// ---------------------------------------------------------------------------------------------
// spgemm (declared with SpGEMM in spgemm.hpp): validated before any CUDA call, under its name.

TEST(SparseStatelessValidation, SpgemmRefusesBeforeAnyCudaCall) {
    test::expect_throw_with<InvalidArgument>(
        [] { (void)spgemm(csr(4, 5), csr(4, 3, 10), no_stream); },
        {"sparse::spgemm", "a is 4 × 5 and b is 4 × 3", "a.cols() must equal b.rows()"});
    test::expect_throw_with<InvalidArgument>([] { (void)spgemm(csr(4, 5), coo(5, 3, 10), no_stream); },
                                             {"sparse::spgemm", "b: format coo", "sparse::to_csr"});
    test::expect_throw_with<InvalidArgument>([] { (void)spgemm(csr(4, 5), csr(5, 3, 10, DataType::f32), no_stream); },
                                             {"sparse::spgemm", "a.values: dtype f64, b.values: dtype f32"});
    test::expect_throw_with<NotSupported>(
        [] {
            (void)spgemm(csr(4, 5, 0, DataType::f64, DataType::i64), csr(5, 3, 10, DataType::f64, DataType::i64),
                         no_stream);
        },
        {"sparse::spgemm", "i32 indices"});
}

}  // namespace
}  // namespace gpumath::sparse
