// SPDX-License-Identifier: Apache-2.0
// What the SVD plans share (linalg/svd_impl.hpp): batches of m × n matrices, their orientation,
// outputs in place or through workspace, the operand checks, and the typed cuSOLVER routines.
#include <algorithm>
#include <array>
#include <utility>

#include <cuComplex.h>
#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include "detail/enum_check.hpp"
#include "detail/status.hpp"
#include "linalg/kernels.hpp"
#include "linalg/matrices.hpp"
#include "linalg/svd_impl.hpp"

namespace gpumath::detail {

Orientation orientation_of(const MatrixBatch& b) noexcept {
    const bool flip = b.m < b.n;
    return {.flip = flip, .wm = flip ? b.n : b.m, .wn = flip ? b.m : b.n};
}

TensorLayout batch_layout(const MatrixBatch& b, DataType dtype, std::int64_t rows, std::int64_t cols) {
    std::array<std::int64_t, max_rank> shape{};
    std::copy(b.batch_shape().begin(), b.batch_shape().end(), shape.begin());
    shape[std::size_t(b.batch_rank)] = rows;
    shape[std::size_t(b.batch_rank) + 1] = cols;
    return {dtype, std::span<const std::int64_t>(shape.data(), std::size_t(b.batch_rank + 2))};
}

TensorLayout batch_vector_layout(const MatrixBatch& b, DataType dtype, std::int64_t cols) {
    std::array<std::int64_t, max_rank> shape{};
    std::copy(b.batch_shape().begin(), b.batch_shape().end(), shape.begin());
    shape[std::size_t(b.batch_rank)] = cols;
    return {dtype, std::span<const std::int64_t>(shape.data(), std::size_t(b.batch_rank + 1))};
}

TensorLayout column_major(DataType dtype, std::span<const std::int64_t> batch_shape, std::int64_t rows,
                          std::int64_t cols, std::int64_t ld, std::int64_t stride) {
    const std::size_t r = batch_shape.size();
    std::array<std::int64_t, max_rank> shape{}, strides{};
    std::copy(batch_shape.begin(), batch_shape.end(), shape.begin());
    std::int64_t step = stride;
    for (std::size_t d = r; d-- > 0;) {
        strides[d] = step;
        step *= std::max<std::int64_t>(shape[d], 1);
    }
    shape[r] = rows;
    shape[r + 1] = cols;
    strides[r] = 1;
    strides[r + 1] = ld;
    return {dtype, std::span<const std::int64_t>(shape.data(), r + 2),
            std::span<const std::int64_t>(strides.data(), r + 2)};
}

Piece make_piece(const TensorView& target, const MatrixBatch& b, std::int64_t routine_cols, bool packed,
                 bool allow_direct) {
    Piece p;
    p.target = target;
    p.dtype = target.dtype();
    p.rows = target.shape(-2);
    p.cols = target.shape(-1);
    p.routine_cols = routine_cols;
    const std::int64_t rows = std::max<std::int64_t>(p.rows, 1);
    const Storage st = storage_of(target);
    p.direct = allow_direct && routine_cols == p.cols && st.direct && !st.row_major && st.ld == rows &&
               (!packed || b.count <= 1 || st.batch_stride == rows * p.cols);
    p.ld = rows;
    if (p.direct) {
        p.data = static_cast<std::byte*>(target.data());
        // One matrix has no stride between matrices (0); the strided-batch routines still want at
        // least a matrix's extent.
        p.stride = b.count > 1 ? st.batch_stride : rows * p.cols;
    } else {
        p.stride = rows * routine_cols;
        p.bytes = aligned_bytes(std::size_t(b.count * p.stride) * size_of(target.dtype()));
    }
    return p;
}

Piece scratch_piece(DataType dtype, const MatrixBatch& b, std::int64_t rows, std::int64_t cols) {
    Piece p;
    p.dtype = dtype;
    p.rows = rows;
    p.cols = cols;
    p.routine_cols = cols;
    p.ld = std::max<std::int64_t>(rows, 1);
    p.stride = p.ld * cols;
    p.bytes = aligned_bytes(std::size_t(b.count * p.stride) * size_of(dtype));
    return p;
}

void bind(Piece& piece, std::byte*& cursor) noexcept {
    if (piece.direct) return;
    piece.data = cursor;
    cursor += piece.bytes;
}

void finish(const Piece& piece, const MatrixBatch& b, bool conj, core::StreamRef stream) {
    if (conj)
        conjugate({.data = piece.data,
                   .rows = piece.rows,
                   .cols = piece.cols,
                   .row_stride = 1,
                   .col_stride = piece.ld,
                   .count = b.count,
                   .batch_stride = piece.stride},
                  piece.dtype, stream);
    if (piece.direct || piece.target.data() == nullptr) return;
    const TensorView written(
        piece.data, column_major(piece.dtype, b.batch_shape(), piece.rows, piece.cols, piece.ld, piece.stride));
    copy_matrices(written, piece.target, stream);
}

TensorView values_as_rows(const TensorView& s) {
    const int r = s.rank();
    std::array<std::int64_t, max_rank> shape{}, strides{};
    std::copy(s.shape().begin(), s.shape().end(), shape.begin());
    std::copy(s.strides().begin(), s.strides().end(), strides.begin());
    shape[std::size_t(r)] = shape[std::size_t(r - 1)];
    strides[std::size_t(r)] = strides[std::size_t(r - 1)];
    shape[std::size_t(r - 1)] = 1;
    strides[std::size_t(r - 1)] = std::max<std::int64_t>(1, shape[std::size_t(r)] * strides[std::size_t(r)]);
    return {s.data(), s.dtype(), std::span<const std::int64_t>(shape.data(), std::size_t(r + 1)),
            std::span<const std::int64_t>(strides.data(), std::size_t(r + 1))};
}

void check_svd_operands(const TensorView& a, const TensorView& u, const TensorView& s, const TensorView& vh,
                        const TensorView& info, const MatrixBatch& b, const TensorLayout& u_layout,
                        const TensorLayout& s_layout, const TensorLayout& vh_layout, bool vectors, const char* api) {
    check_operand(a, b.a.shape(), b.dtype, "a", false, api);
    check_operand(s, s_layout.shape(), s_layout.dtype(), "s", true, api);
    check_info_operand(info, b.info, "info", api);
    check_apart(s, "s", a, "a", api);
    check_apart(info, "info", a, "a", api);
    check_apart(info, "info", s, "s", api);
    if (!vectors) {
        for (const auto& [view, name] : {std::pair{&u, "u"}, std::pair{&vh, "vh"}})
            if (view->data() != nullptr)
                throw_invalid(
                    fmt::format("{}: given, but the plan computes singular values only; pass TensorView{{}}", name),
                    api);
        return;
    }
    check_operand(u, u_layout.shape(), u_layout.dtype(), "u", true, api);
    check_operand(vh, vh_layout.shape(), vh_layout.dtype(), "vh", true, api);
    check_apart(u, "u", a, "a", api);
    check_apart(vh, "vh", a, "a", api);
    check_apart(u, "u", vh, "vh", api);
    check_apart(s, "s", u, "u", api);
    check_apart(s, "s", vh, "vh", api);
    check_apart(info, "info", u, "u", api);
    check_apart(info, "info", vh, "vh", api);
}

bool empty_svd_done(const MatrixBatch& b, const TensorView& u, const TensorView& vh, bool full, const TensorView& info,
                    core::StreamRef stream) {
    if (b.count == 0) return true;
    if (b.m != 0 && b.n != 0) return false;
    check(cudaMemsetAsync(info.data(), 0, std::size_t(b.count) * sizeof(int), stream.handle()), "cudaMemsetAsync",
          "writing the info of empty matrices");
    if (full) {
        set_identity(matrix_params(u, b.count), b.dtype, stream);
        set_identity(matrix_params(vh, b.count), b.dtype, stream);
    }
    return true;
}

// The typed routines: one switch per entry point over S, D, C and Z.

cusolverStatus_t gesvdj_size(cusolverDnHandle_t h, DataType t, cusolverEigMode_t jobz, int econ, int m, int n, int lda,
                             int ldu, int ldv, int* lwork, gesvdjInfo_t params) {
    switch (t) {
        case DataType::f64:
            return cusolverDnDgesvdj_bufferSize(h, jobz, econ, m, n, nullptr, lda, nullptr, nullptr, ldu, nullptr, ldv,
                                                lwork, params);
        case DataType::c32:
            return cusolverDnCgesvdj_bufferSize(h, jobz, econ, m, n, nullptr, lda, nullptr, nullptr, ldu, nullptr, ldv,
                                                lwork, params);
        case DataType::c64:
            return cusolverDnZgesvdj_bufferSize(h, jobz, econ, m, n, nullptr, lda, nullptr, nullptr, ldu, nullptr, ldv,
                                                lwork, params);
        default:
            return cusolverDnSgesvdj_bufferSize(h, jobz, econ, m, n, nullptr, lda, nullptr, nullptr, ldu, nullptr, ldv,
                                                lwork, params);
    }
}

cusolverStatus_t gesvdj(cusolverDnHandle_t h, DataType t, cusolverEigMode_t jobz, int econ, int m, int n, void* a,
                        int lda, void* s, void* u, int ldu, void* v, int ldv, void* work, int lwork, int* info,
                        gesvdjInfo_t params) {
    switch (t) {
        case DataType::f64:
            return cusolverDnDgesvdj(h, jobz, econ, m, n, static_cast<double*>(a), lda, static_cast<double*>(s),
                                     static_cast<double*>(u), ldu, static_cast<double*>(v), ldv,
                                     static_cast<double*>(work), lwork, info, params);
        case DataType::c32:
            return cusolverDnCgesvdj(h, jobz, econ, m, n, static_cast<cuComplex*>(a), lda, static_cast<float*>(s),
                                     static_cast<cuComplex*>(u), ldu, static_cast<cuComplex*>(v), ldv,
                                     static_cast<cuComplex*>(work), lwork, info, params);
        case DataType::c64:
            return cusolverDnZgesvdj(h, jobz, econ, m, n, static_cast<cuDoubleComplex*>(a), lda,
                                     static_cast<double*>(s), static_cast<cuDoubleComplex*>(u), ldu,
                                     static_cast<cuDoubleComplex*>(v), ldv, static_cast<cuDoubleComplex*>(work), lwork,
                                     info, params);
        default:
            return cusolverDnSgesvdj(h, jobz, econ, m, n, static_cast<float*>(a), lda, static_cast<float*>(s),
                                     static_cast<float*>(u), ldu, static_cast<float*>(v), ldv,
                                     static_cast<float*>(work), lwork, info, params);
    }
}

cusolverStatus_t gesvdj_batched_size(cusolverDnHandle_t h, DataType t, cusolverEigMode_t jobz, int m, int n, int lda,
                                     int ldu, int ldv, int* lwork, gesvdjInfo_t params, int count) {
    switch (t) {
        case DataType::f64:
            return cusolverDnDgesvdjBatched_bufferSize(h, jobz, m, n, nullptr, lda, nullptr, nullptr, ldu, nullptr, ldv,
                                                       lwork, params, count);
        case DataType::c32:
            return cusolverDnCgesvdjBatched_bufferSize(h, jobz, m, n, nullptr, lda, nullptr, nullptr, ldu, nullptr, ldv,
                                                       lwork, params, count);
        case DataType::c64:
            return cusolverDnZgesvdjBatched_bufferSize(h, jobz, m, n, nullptr, lda, nullptr, nullptr, ldu, nullptr, ldv,
                                                       lwork, params, count);
        default:
            return cusolverDnSgesvdjBatched_bufferSize(h, jobz, m, n, nullptr, lda, nullptr, nullptr, ldu, nullptr, ldv,
                                                       lwork, params, count);
    }
}

cusolverStatus_t gesvdj_batched(cusolverDnHandle_t h, DataType t, cusolverEigMode_t jobz, int m, int n, void* a,
                                int lda, void* s, void* u, int ldu, void* v, int ldv, void* work, int lwork, int* info,
                                gesvdjInfo_t params, int count) {
    switch (t) {
        case DataType::f64:
            return cusolverDnDgesvdjBatched(h, jobz, m, n, static_cast<double*>(a), lda, static_cast<double*>(s),
                                            static_cast<double*>(u), ldu, static_cast<double*>(v), ldv,
                                            static_cast<double*>(work), lwork, info, params, count);
        case DataType::c32:
            return cusolverDnCgesvdjBatched(h, jobz, m, n, static_cast<cuComplex*>(a), lda, static_cast<float*>(s),
                                            static_cast<cuComplex*>(u), ldu, static_cast<cuComplex*>(v), ldv,
                                            static_cast<cuComplex*>(work), lwork, info, params, count);
        case DataType::c64:
            return cusolverDnZgesvdjBatched(h, jobz, m, n, static_cast<cuDoubleComplex*>(a), lda,
                                            static_cast<double*>(s), static_cast<cuDoubleComplex*>(u), ldu,
                                            static_cast<cuDoubleComplex*>(v), ldv, static_cast<cuDoubleComplex*>(work),
                                            lwork, info, params, count);
        default:
            return cusolverDnSgesvdjBatched(h, jobz, m, n, static_cast<float*>(a), lda, static_cast<float*>(s),
                                            static_cast<float*>(u), ldu, static_cast<float*>(v), ldv,
                                            static_cast<float*>(work), lwork, info, params, count);
    }
}

cusolverStatus_t gesvda_size(cusolverDnHandle_t h, DataType t, cusolverEigMode_t jobz, int rank, int m, int n, int lda,
                             int ldu, int ldv, const GesvdaStrides& st, int* lwork, int count) {
    switch (t) {
        case DataType::f64:
            return cusolverDnDgesvdaStridedBatched_bufferSize(h, jobz, rank, m, n, nullptr, lda, st.a, nullptr, st.s,
                                                              nullptr, ldu, st.u, nullptr, ldv, st.v, lwork, count);
        case DataType::c32:
            return cusolverDnCgesvdaStridedBatched_bufferSize(h, jobz, rank, m, n, nullptr, lda, st.a, nullptr, st.s,
                                                              nullptr, ldu, st.u, nullptr, ldv, st.v, lwork, count);
        case DataType::c64:
            return cusolverDnZgesvdaStridedBatched_bufferSize(h, jobz, rank, m, n, nullptr, lda, st.a, nullptr, st.s,
                                                              nullptr, ldu, st.u, nullptr, ldv, st.v, lwork, count);
        default:
            return cusolverDnSgesvdaStridedBatched_bufferSize(h, jobz, rank, m, n, nullptr, lda, st.a, nullptr, st.s,
                                                              nullptr, ldu, st.u, nullptr, ldv, st.v, lwork, count);
    }
}

cusolverStatus_t gesvda(cusolverDnHandle_t h, DataType t, cusolverEigMode_t jobz, int rank, int m, int n, const void* a,
                        int lda, void* s, void* u, int ldu, void* v, int ldv, const GesvdaStrides& st, void* work,
                        int lwork, int* info, double* residuals, int count) {
    switch (t) {
        case DataType::f64:
            return cusolverDnDgesvdaStridedBatched(h, jobz, rank, m, n, static_cast<const double*>(a), lda, st.a,
                                                   static_cast<double*>(s), st.s, static_cast<double*>(u), ldu, st.u,
                                                   static_cast<double*>(v), ldv, st.v, static_cast<double*>(work),
                                                   lwork, info, residuals, count);
        case DataType::c32:
            return cusolverDnCgesvdaStridedBatched(h, jobz, rank, m, n, static_cast<const cuComplex*>(a), lda, st.a,
                                                   static_cast<float*>(s), st.s, static_cast<cuComplex*>(u), ldu, st.u,
                                                   static_cast<cuComplex*>(v), ldv, st.v, static_cast<cuComplex*>(work),
                                                   lwork, info, residuals, count);
        case DataType::c64:
            return cusolverDnZgesvdaStridedBatched(
                h, jobz, rank, m, n, static_cast<const cuDoubleComplex*>(a), lda, st.a, static_cast<double*>(s), st.s,
                static_cast<cuDoubleComplex*>(u), ldu, st.u, static_cast<cuDoubleComplex*>(v), ldv, st.v,
                static_cast<cuDoubleComplex*>(work), lwork, info, residuals, count);
        default:
            return cusolverDnSgesvdaStridedBatched(h, jobz, rank, m, n, static_cast<const float*>(a), lda, st.a,
                                                   static_cast<float*>(s), st.s, static_cast<float*>(u), ldu, st.u,
                                                   static_cast<float*>(v), ldv, st.v, static_cast<float*>(work), lwork,
                                                   info, residuals, count);
    }
}

}  // namespace gpumath::detail
