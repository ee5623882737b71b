// SPDX-License-Identifier: Apache-2.0
// The LeastSquares plan: Xgeqrf, then <t>ormqr / <t>unmqr and cuBLAS's trsm per matrix on the
// caller's stream and side streams; R's diagonal checked for zeros, the residual norms from Qᴴ·B.
#include <gpumath/linalg/qr.hpp>

#include <algorithm>
#include <array>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include "core/stream_workspace.hpp"
#include "detail/status.hpp"
#include "linalg/cublas.hpp"
#include "linalg/householder.hpp"
#include "linalg/kernels.hpp"
#include "linalg/lanes.hpp"
#include "linalg/qr_impl.hpp"

namespace gpumath::detail {
namespace {

constexpr const char* plan_api = "linalg::LeastSquares";

bool complex_type(DataType t) { return t == DataType::c32 || t == DataType::c64; }

/// `batch`'s batch dimensions followed by `rows` and `cols`.
std::array<std::int64_t, max_rank> matrix_shape(const MatrixBatch& batch, std::int64_t rows, std::int64_t cols) {
    std::array<std::int64_t, max_rank> shape{};
    std::copy(batch.a.shape().begin(), batch.a.shape().begin() + batch.batch_rank, shape.begin());
    shape[std::size_t(batch.batch_rank)] = rows;
    shape[std::size_t(batch.batch_rank) + 1] = cols;
    return shape;
}

kernels::ColumnMajorBatchParams params_of(void* data, std::int64_t rows, std::int64_t cols, std::int64_t count) {
    return {.data = data,
            .rows = rows,
            .cols = cols,
            .ld = std::max<std::int64_t>(rows, 1),
            .count = count,
            .batch_stride = rows * cols};
}

}  // namespace

LstsqShapes lstsq_shapes(const MatrixBatch& batch, const TensorView& b, const char* api) {
    const int tail = b.rank() - batch.batch_rank;
    if (tail != 1 && tail != 2)
        throw_invalid(fmt::format("b: shape {}; give right-hand sides as (..., m, p) or (..., m) with the batch "
                                  "shape {} and m {}",
                                  to_string(b.shape()), to_string(batch.info.shape()), batch.m),
                      api);
    LstsqShapes s;
    std::array<std::int64_t, max_rank> expected{};
    const std::size_t at = std::size_t(batch.batch_rank);
    std::copy(batch.a.shape().begin(), batch.a.shape().begin() + batch.batch_rank, expected.begin());
    std::copy(expected.begin(), expected.begin() + batch.batch_rank, s.x.begin());
    std::copy(expected.begin(), expected.begin() + batch.batch_rank, s.residuals.begin());
    expected[at] = batch.m;
    s.x[at] = batch.n;
    if (tail == 2) {
        s.p = b.shape(-1);
        expected[at + 1] = s.p;
        s.x[at + 1] = s.p;
        s.residuals[at] = s.p;
    }
    s.x_rank = b.rank();
    s.residuals_rank = batch.batch_rank + tail - 1;
    check_operand(b, std::span<const std::int64_t>(expected.data(), std::size_t(b.rank())), batch.dtype, "b", false,
                  api);
    check_int_size(s.p, "p (the columns of b)", "cusolverDn<t>ormqr", api);
    return s;
}

void LeastSquaresImpl::plan_locked() {
    start_planning(options.memory_resource);
    if (cols > 0) {  // else nothing is factorized
        const SolverHandle h(device, nullptr);
        geqrf_workspace(h, batch.dtype, rows, cols, std::max<std::int64_t>(rows, 1), geqrf_bytes, geqrf_host);
    }
    size_host(geqrf_host);
}

void LeastSquaresImpl::execute(const TensorView& a, const TensorView& b, const TensorView& x, void* residuals,
                               int* info, core::StreamRef stream) {
    const DataType t = batch.dtype;
    const std::int64_t m = batch.m, n = batch.n, count = batch.count, p = b.shape(-1), k = cols;
    const std::size_t elem = size_of(t);
    const std::int64_t ld = std::max<std::int64_t>(rows, 1);
    const auto f_shape = matrix_shape(batch, rows, cols);
    const auto y_shape = matrix_shape(batch, rows, p);
    const std::span<const std::int64_t> f_span(f_shape.data(), std::size_t(batch.batch_rank + 2));
    const std::span<const std::int64_t> y_span(y_shape.data(), std::size_t(batch.batch_rank + 2));
    // m >= n: Qᴴ·B, then R⁻¹ on its first n rows. m < n (Aᴴ = Q·R): R⁻ᴴ·B in the first m rows of n,
    // zeros below, then Q times that.
    const cublasOperation_t q_op = wide ? CUBLAS_OP_N : CUBLAS_OP_C;
    const cublasOperation_t r_op = !wide ? CUBLAS_OP_N : complex_type(t) ? CUBLAS_OP_C : CUBLAS_OP_T;
    const bool solve = k > 0 && p > 0;
    std::size_t ormqr_bytes = 0;
    if (solve) {
        const SolverHandle h(device, nullptr);
        ormqr_bytes = ormqr_workspace(h, t, CUBLAS_SIDE_LEFT, q_op, int(rows), int(p), int(k), nullptr, int(ld),
                                      nullptr, nullptr, int(ld));
    }
    const std::size_t f_bytes = aligned_bytes(std::size_t(count * rows * cols) * elem);
    const std::size_t tau_bytes = aligned_bytes(std::size_t(count * k) * elem);
    const std::size_t y_bytes = aligned_bytes(std::size_t(count * rows * p) * elem);
    const std::size_t info_bytes = aligned_bytes(std::size_t(count) * sizeof(int));
    const std::size_t per_lane = aligned_bytes(std::max(geqrf_bytes, ormqr_bytes));
    const int lanes_wanted = int(std::min<std::int64_t>(count, Lanes::max_lanes));
    const StreamWorkspace::Lease lease =
        workspace->acquire(f_bytes + tau_bytes + y_bytes + info_bytes + per_lane * std::size_t(lanes_wanted), stream);
    auto* area = static_cast<std::byte*>(lease.data);
    const TensorView f(area, packed_column_major(t, f_span));
    std::byte* tau = area + f_bytes;
    const TensorView y(area + f_bytes + tau_bytes, packed_column_major(t, y_span));
    int* infos = reinterpret_cast<int*>(area + f_bytes + tau_bytes + y_bytes);
    std::byte* work = area + f_bytes + tau_bytes + y_bytes + info_bytes;

    if (!wide) {
        copy_matrices(a, f, stream);
        copy_matrices(b, y, stream);
    } else {
        copy_matrices(a.transposed(), f, stream);
        if (complex_type(t))
            conjugate({.data = f.data(),
                       .rows = count * rows * cols,
                       .cols = 1,
                       .row_stride = 1,
                       .col_stride = 0,
                       .count = 1,
                       .batch_stride = 0},
                      t, stream);
        copy_matrices(b, sub_matrices(y, 0, m, 0, p), stream);
        if (p > 0)  // rows m..n-1 of every column of every matrix: one strided memset
            check(cudaMemset2DAsync(static_cast<std::byte*>(y.data()) + std::size_t(m) * elem, std::size_t(rows) * elem,
                                    0, std::size_t(rows - m) * elem, std::size_t(count * p), stream.handle()),
                  "cudaMemset2DAsync", "zeroing the rows of a least-norm solve");
    }
    const SolverMatrices fm{static_cast<std::byte*>(f.data()), ld, rows * cols, elem};
    const SolverMatrices ym{static_cast<std::byte*>(y.data()), ld, rows * p, elem};
    if (k > 0) {
        std::lock_guard lock(host_mutex);  // the host workspaces
        grow_host_workspaces(host, geqrf_host);
        Lanes lanes(device, stream, count, true);
        std::array<std::optional<BlasHandle>, Lanes::max_lanes> blas;
        if (solve)
            for (int l = 0; l < lanes.size(); ++l) blas[std::size_t(l)].emplace(device, lanes.stream(l));
        for (std::int64_t i = 0; i < count; ++i) {
            const int l = lanes.lane_of(i);
            const SolverHandle& h = lanes.handle(l);
            std::byte* w = work + per_lane * std::size_t(l);
            std::byte* ti = tau + std::size_t(i * k) * elem;
            geqrf(h, t, rows, cols, fm.at(i), ld, ti, w, per_lane, host[std::size_t(l)].data(), geqrf_host, infos + i);
            if (!solve) continue;
            const cublasHandle_t bh = blas[std::size_t(l)]->get();
            if (!wide) {
                ormqr(h, t, CUBLAS_SIDE_LEFT, q_op, int(rows), int(p), int(k), fm.at(i), int(ld), ti, ym.at(i), int(ld),
                      w, per_lane, infos + i);
                trsm(bh, t, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, r_op, int(k), int(p), fm.at(i), int(ld), ym.at(i),
                     int(ld));
            } else {
                trsm(bh, t, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, r_op, int(k), int(p), fm.at(i), int(ld), ym.at(i),
                     int(ld));
                ormqr(h, t, CUBLAS_SIDE_LEFT, q_op, int(rows), int(p), int(k), fm.at(i), int(ld), ti, ym.at(i), int(ld),
                      w, per_lane, infos + i);
            }
        }
        lanes.join();
    }
    first_zero_diagonal(params_of(f.data(), rows, cols, count), t, info, stream);
    if (residuals != nullptr) {
        if (m > n) {
            column_norms(params_of(y.data(), rows, p, count), t, n, residuals, stream);
        } else if (count * p > 0) {
            check(cudaMemsetAsync(residuals, 0, std::size_t(count * p) * size_of(real_of(t)), stream.handle()),
                  "cudaMemsetAsync", "writing the residuals of a solve without any");
        }
    }
    copy_matrices(sub_matrices(y, 0, n, 0, p), x, stream);
}

}  // namespace gpumath::detail

namespace gpumath::linalg {

using detail::LeastSquaresImpl;

LeastSquares::LeastSquares(const TensorLayout& a, const LeastSquaresOptions& options)
    : impl_(std::make_unique<LeastSquaresImpl>()) {
    const char* api = detail::plan_api;
    LeastSquaresImpl& s = *impl_;
    s.batch = detail::matrix_batch(a, api);
    s.options = options;
    detail::check_int_size(s.batch.m, "m (the rows of A)", "cusolverDn<t>ormqr", api);
    detail::check_int_size(s.batch.n, "n (the columns of A)", "cusolverDn<t>ormqr", api);
    s.wide = s.batch.m < s.batch.n;
    s.rows = std::max(s.batch.m, s.batch.n);
    s.cols = std::min(s.batch.m, s.batch.n);
}

LeastSquares::~LeastSquares() = default;
LeastSquares::LeastSquares(LeastSquares&&) noexcept = default;
LeastSquares& LeastSquares::operator=(LeastSquares&&) noexcept = default;

LeastSquaresImpl& LeastSquares::impl(const char* api) const {
    if (!impl_) detail::throw_moved_from("linalg::LeastSquares", api);
    return *impl_;
}

void LeastSquares::plan() { impl("linalg::LeastSquares::plan").plan(); }

bool LeastSquares::planned() const noexcept { return impl_ && impl_->planned.load(std::memory_order_acquire); }

void LeastSquares::execute(const TensorView& a, const TensorView& b, const TensorView& x, const TensorView& residuals,
                           const TensorView& info, core::StreamRef stream) {
    const char* api = "linalg::LeastSquares::execute";
    LeastSquaresImpl& state = impl(api);
    const detail::MatrixBatch& batch = state.batch;
    detail::check_operand(a, batch.a.shape(), batch.dtype, "a", false, api);
    const detail::LstsqShapes shapes = detail::lstsq_shapes(batch, b, api);
    detail::check_operand(x, shapes.x_shape(), batch.dtype, "x", true, api);
    const bool with_residuals = residuals.data() != nullptr;
    if (with_residuals)
        detail::check_contiguous_operand(
            residuals, TensorLayout(detail::real_of(batch.dtype), shapes.residuals_shape()), "residuals", true, api);
    detail::check_info_operand(info, batch.info, "info", api);
    if (!detail::same_operand(b, x)) detail::check_apart(x, "x", b, "b", api);
    detail::check_apart(x, "x", a, "a", api);
    detail::check_apart(info, "info", a, "a", api);
    detail::check_apart(info, "info", b, "b", api);
    detail::check_apart(info, "info", x, "x", api);
    if (with_residuals) {
        detail::check_apart(residuals, "residuals", a, "a", api);
        detail::check_apart(residuals, "residuals", b, "b", api);
        detail::check_apart(residuals, "residuals", x, "x", api);
        detail::check_apart(residuals, "residuals", info, "info", api);
    }
    if (batch.count == 0) return;
    state.ensure_planned(api);
    const bool vector = b.rank() == batch.batch_rank + 1;
    state.execute(a, vector ? detail::as_columns(b) : b, vector ? detail::as_columns(x) : x,
                  with_residuals ? residuals.data() : nullptr, static_cast<int*>(info.data()), stream);
}

const TensorLayout& LeastSquares::layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->batch.a : empty;
}

const TensorLayout& LeastSquares::info_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->batch.info : empty;
}

const LeastSquaresOptions& LeastSquares::options() const noexcept {
    static const LeastSquaresOptions empty;
    return impl_ ? impl_->options : empty;
}

}  // namespace gpumath::linalg
