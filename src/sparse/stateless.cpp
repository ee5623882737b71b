// SPDX-License-Identifier: Apache-2.0
// The stateless sparse calls beyond spmv and spmm: sddmm, triangular_solve and spsolve. Each checks
// its operands under its own name before any CUDA call (the rules of the plan it wraps), then makes
// that plan for the call, runs it and waits for the stream before the plan's buffers go.
#include <gpumath/sparse/functions.hpp>

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include <gpumath/error.hpp>
#include <gpumath/tensor_ops.hpp>
#include "core/stream_workspace.hpp"
#include "detail/enum_check.hpp"
#include "detail/status.hpp"
#include "sparse/product_checks.hpp"

namespace gpumath::sparse {
namespace {

namespace products = detail::products;

constexpr int max_refinement_steps = 100;  // DirectSolverOptions::refinement_steps' bound

/// SDDMM's rules (its constructor's and its execute's scalars), under `api`.
void check_sddmm(const TensorView& a, const TensorView& b, const MatrixView& c, std::complex<double> alpha,
                 std::complex<double> beta, const SDDMMOptions& options, const char* api) {
    products::check_sddmm(a, b, c, options.op_a, options.op_b, api);
    const DataType vt = c.value_type();
    (void)products::Scalar(alpha, vt, "alpha", api);
    (void)products::Scalar(beta, vt, "beta", api);
}

/// A triangular solve's right-hand sides (or solutions) `v`: `(n)` contiguous or `(n, k)` row- or
/// column-major, A's dtype.
void check_rhs(const TensorView& v, std::int64_t n, DataType vt, const char* name, const char* api) {
    if (v.rank() == 1) {
        products::check_dense_vector(v, n, vt, name, api);
        return;
    }
    if (v.rank() != 2)
        detail::throw_invalid(
            fmt::format("{}: rank {}; right-hand sides are a vector (n) or a matrix (n, k)", name, v.rank()), api);
    (void)products::check_dense_matrix(v, vt, name, api);
    if (v.shape(0) != n)
        detail::throw_invalid(fmt::format("{}: {} rows where A is {} × {}", name, v.shape(0), n, n), api);
}

/// TriangularSolve's rules (its constructor's and its solve's), under `api`; x has b's layout.
void check_triangular(const MatrixView& a, const TensorView& b, const TensorView& x,
                      const TriangularSolveOptions& options, const char* api) {
    detail::check_enum(options.triangle, triangle_count, "a Triangle", "options.triangle", api);
    detail::check_enum(options.diagonal, diagonal_count, "a Diagonal", "options.diagonal", api);
    products::check_operation(options.op, "options.op", api);
    products::check_sparse_operand(a, "a", {Format::csr, Format::coo}, api);
    if (a.rows() != a.cols())
        detail::throw_invalid(fmt::format("a: {} × {}; a triangular solve takes a square matrix", a.rows(), a.cols()),
                              api);
    check_rhs(b, a.rows(), a.value_type(), "b", api);
    const bool same = x.dtype() == b.dtype() && std::ranges::equal(x.shape(), b.shape()) &&
                      std::ranges::equal(x.strides(), b.strides());
    if (!same)
        detail::throw_invalid(fmt::format("x: {} where b is {}; x takes b's shape, dtype and strides",
                                          gpumath::to_string(x.layout()), gpumath::to_string(b.layout())),
                              api);
    check_rhs(x, a.rows(), a.value_type(), "x", api);
    products::check_apart(x, "x", b, "b", api);
    products::check_apart(x, "x", a, "a", api);
}

/// DirectSolver's rules for the matrix and the options, under `api`.
void check_direct_matrix(const MatrixView& a, const DirectSolverOptions& options, const char* api) {
    detail::check_enum(options.type, matrix_type_count, "a MatrixType", "options.type", api);
    detail::check_enum(options.part, matrix_part_count, "a MatrixPart", "options.part", api);
    if (options.refinement_steps < 0 || options.refinement_steps > max_refinement_steps)
        detail::throw_invalid(fmt::format("options.refinement_steps: {}; allowed 0 to {}", options.refinement_steps,
                                          max_refinement_steps),
                              api);
    if (options.type == MatrixType::general && options.part != MatrixPart::full)
        detail::throw_invalid(fmt::format("options.part: {} for a general matrix, which must store every entry "
                                          "(full); a triangle is for symmetric, hermitian, spd and hpd matrices",
                                          to_string(options.part)),
                              api);
    if (a.empty()) detail::throw_invalid("a: an empty MatrixView; pass a matrix made by MatrixView::csr", api);
    if (a.format() != Format::csr)
        detail::throw_invalid(fmt::format("a: format {}; the direct solver takes CSR (convert with sparse::to_csr)",
                                          to_string(a.format())),
                              api);
    if (a.rows() != a.cols())
        detail::throw_invalid(
            fmt::format("a: {} × {} is not square; a direct solve needs a square matrix", a.rows(), a.cols()), api);
    const DataType t = a.value_type();
    if (t != DataType::f32 && t != DataType::f64 && t != DataType::c32 && t != DataType::c64)
        detail::throw_not_supported(
            fmt::format("a: values of dtype {}; cuDSS solves f32, f64, c32 and c64", to_string(t)), api);
    if (a.index_type() != DataType::i32)
        detail::throw_not_supported(fmt::format("a: indices of dtype {}; cuDSS takes i32 row offsets and column "
                                                "indices (a matrix with {} rows and {} entries fits them)",
                                                to_string(a.index_type()), a.rows(), a.nnz()),
                                    api);
    if (a.batch() != 1)
        detail::throw_not_supported(fmt::format("a: a batch of {} value arrays; spsolve solves one matrix (make a "
                                                "DirectSolver and refactorize it with each value array in turn)",
                                                a.batch()),
                                    api);
}

/// spsolve's right-hand sides: A's dtype, (n) or (n, k), any strides.
void check_direct_rhs(const TensorView& b, std::int64_t n, DataType dtype, const char* api) {
    if (b.dtype() != dtype)
        detail::throw_invalid(
            fmt::format("b: dtype {} where the matrix holds {}", to_string(b.dtype()), to_string(dtype)), api);
    if (b.rank() != 1 && b.rank() != 2)
        detail::throw_invalid(fmt::format("b: rank {}; right-hand sides are (n) or (n, k)", b.rank()), api);
    if (b.shape(0) != n)
        detail::throw_invalid(fmt::format("b: {} rows where the matrix has n = {}", b.shape(0), n), api);
}

/// True when cuDSS reads `v` as it is: unit stride along rows (n > 1), and for (n, k) with k > 1 a
/// column stride of at least n (DirectSolver::solve's layout).
bool cudss_readable(const TensorView& v, std::int64_t n) {
    if (n > 1 && v.stride(0) != 1) return false;
    return v.rank() == 1 || v.shape(1) <= 1 || v.stride(1) >= std::max<std::int64_t>(n, 1);
}

/// A block cuDSS reads for `v`'s shape on `stream`, with its view: contiguous for (n), column-major
/// for (n, k).
std::pair<Tensor, TensorView> column_major_block(const TensorView& v, core::StreamRef stream) {
    if (v.rank() == 1) {
        Tensor t = Tensor::empty(TensorLayout(v.dtype(), {v.shape(0)}), stream);
        const TensorView view = t.view();
        return {std::move(t), view};
    }
    Tensor t = Tensor::empty(TensorLayout(v.dtype(), {v.shape(1), v.shape(0)}), stream);
    const TensorView view = t.view().transposed();
    return {std::move(t), view};
}

}  // namespace

void sddmm(const TensorView& a, const TensorView& b, const MatrixView& c, std::complex<double> alpha,
           std::complex<double> beta, const SDDMMOptions& options, core::StreamRef stream) {
    constexpr const char* api = "sparse::sddmm";
    check_sddmm(a, b, c, alpha, beta, options, api);  // before any CUDA call
    detail::reject_capture(stream, api,
                           "it plans an SDDMM for the call (buffer and preprocessing) and waits for it; plan an SDDMM "
                           "before the capture and capture its execute");
    SDDMM plan(a, b, c, options);
    plan.plan(stream);
    plan.execute(alpha, beta, stream);
    stream.synchronize();  // the plan's buffer goes with it
}

void triangular_solve(const MatrixView& a, const TensorView& b, const TensorView& x,
                      const TriangularSolveOptions& options, core::StreamRef stream) {
    constexpr const char* api = "sparse::triangular_solve";
    check_triangular(a, b, x, options, api);  // before any CUDA call
    detail::reject_capture(stream, api,
                           "it runs cuSPARSE's analysis of A for the call and waits for the solve; plan a "
                           "TriangularSolve before the capture and capture its solve");
    TriangularSolve plan(a, b.layout(), options);
    plan.plan(stream);
    plan.solve(b, x, 1.0, stream);
    stream.synchronize();  // the analysis buffer goes with the plan
}

Tensor spsolve(const MatrixView& a, const TensorView& b, const DirectSolverOptions& options, core::StreamRef stream) {
    constexpr const char* api = "sparse::spsolve";
    check_direct_matrix(a, options, api);  // before any CUDA call
    const std::int64_t n = a.rows();
    check_direct_rhs(b, n, a.value_type(), api);
    if (!DirectSolver::supported())
        detail::throw_not_supported(
            "gpumath was built without cuDSS's header cudss.h, so it has no sparse direct "
            "solver; rebuild with it (run scripts/deps.sh, or `pip install "
            "nvidia-cudss-cu13` and configure with -DGPUMATH_CUDSS_ROOT=<the folder holding "
            "nvidia/cu13>)",
            api);
    detail::reject_capture(stream, api,
                           "cuDSS's phases are not documented as capturable (they allocate and may synchronize); keep "
                           "a DirectSolver, factorize it before the capture and solve outside it");

    DirectSolver solver(a, options);
    solver.factorize(stream);  // analyzes first
    if (const int info = solver.info(stream); info != 0) {
        const bool definite = options.type == MatrixType::spd || options.type == MatrixType::hpd;
        throw NumericalError(
            fmt::format("{}: cuDSS reported info {} after factorizing the {} × {} matrix: it is {}", api, info, n, n,
                        definite ? "singular or not positive definite (a general or symmetric solve factorizes an "
                                   "indefinite one)"
                                 : "singular to working precision (a zero pivot)"),
            api, 0, info);
    }

    Tensor x = Tensor::empty(TensorLayout(b.dtype(), b.shape()), stream);
    // cuDSS reads and writes column-major blocks: b is copied into one when it is laid out
    // otherwise, and a solution of several columns is solved into one and copied into x.
    Tensor b_block, x_block;
    TensorView bv = b, xv = x.view();
    if (!cudss_readable(b, n)) std::tie(b_block, bv) = column_major_block(b, stream);
    if (!cudss_readable(xv, n)) std::tie(x_block, xv) = column_major_block(xv, stream);
    if (bv.data() != b.data()) copy(b, bv, stream);
    solver.solve(bv, xv, stream);
    if (xv.data() != x.data()) copy(xv, x.view(), stream);
    stream.synchronize();  // the solver and the blocks go once the solve has run
    return x;
}

}  // namespace gpumath::sparse
