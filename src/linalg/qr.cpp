// SPDX-License-Identifier: Apache-2.0
// The QR plan: Xgeqrf (64-bit API), <t>orgqr / <t>ungqr and <t>ormqr / <t>unmqr, looped over the
// batch on the caller's stream and side streams.
#include <gpumath/linalg/qr.hpp>

#include <algorithm>
#include <array>
#include <mutex>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include "core/stream_workspace.hpp"
#include "detail/enum_check.hpp"
#include "detail/status.hpp"
#include "linalg/householder.hpp"
#include "linalg/kernels.hpp"
#include "linalg/lanes.hpp"
#include "linalg/qr_impl.hpp"

namespace gpumath::detail {
namespace {

constexpr const char* plan_api = "linalg::QR";

bool complex_type(DataType t) { return t == DataType::c32 || t == DataType::c64; }

/// Where cuSOLVER finds `view`'s matrices: where they are when column-major with an int leading
/// dimension (`direct`), else in a packed column-major workspace copy.
struct Placement {
    bool direct = false;
    SolverMatrices at;
};

Placement place(const TensorView& view) {
    const Storage s = storage_of(view);
    const std::size_t elem = size_of(view.dtype());
    if (s.direct && !s.row_major && fits_int(s.ld))
        return {.direct = true, .at = {static_cast<std::byte*>(view.data()), s.ld, s.batch_stride, elem}};
    const std::int64_t rows = view.shape(-2);
    return {.direct = false, .at = {nullptr, std::max<std::int64_t>(rows, 1), rows * view.shape(-1), elem}};
}

/// Bytes of a packed column-major copy of `view`'s `count` matrices (0 when `direct`).
std::size_t copy_bytes(const Placement& p, const TensorView& view, std::int64_t count) {
    return p.direct ? 0 : aligned_bytes(std::size_t(count * view.shape(-2) * view.shape(-1)) * p.at.elem);
}

/// The packed column-major view of `shape`'s matrices at `data`.
TensorView packed_at(std::byte* data, DataType dtype, std::span<const std::int64_t> shape) {
    return {data, packed_column_major(dtype, shape)};
}

}  // namespace

void check_q_sizes(std::int64_t m, std::int64_t q_cols, const char* api) {
    check_int_size(m, "m (the rows of A and Q)", "cusolverDn<t>orgqr", api);
    check_int_size(q_cols, "the columns of Q", "cusolverDn<t>orgqr", api);
}

void QRImpl::plan_locked() {
    start_planning(options.memory_resource);
    if (k > 0) {  // else nothing is factorized
        const SolverHandle h(device, nullptr);
        geqrf_workspace(h, batch.dtype, batch.m, batch.n, std::max<std::int64_t>(batch.m, 1), geqrf_bytes, geqrf_host);
    }
    size_host(geqrf_host);
}

void QRImpl::factorize(const TensorView& a, const TensorView& qr, void* tau, core::StreamRef stream) {
    const std::int64_t m = batch.m, n = batch.n, count = batch.count;
    Placement f = place(qr);
    std::size_t per_lane = aligned_bytes(geqrf_bytes), host_needed = geqrf_host;
    if (f.at.ld != std::max<std::int64_t>(m, 1)) {
        const SolverHandle h(device, nullptr);
        std::size_t dev = 0;
        geqrf_workspace(h, batch.dtype, m, n, f.at.ld, dev, host_needed);
        per_lane = aligned_bytes(dev);
    }
    const int lanes_wanted = int(std::min<std::int64_t>(count, Lanes::max_lanes));
    const std::size_t temp_bytes = copy_bytes(f, qr, count);
    const std::size_t info_bytes = aligned_bytes(std::size_t(count) * sizeof(int));
    const StreamWorkspace::Lease lease =
        workspace->acquire(temp_bytes + info_bytes + per_lane * std::size_t(lanes_wanted), stream);
    auto* area = static_cast<std::byte*>(lease.data);
    if (!f.direct) f.at.data = area;
    const TensorView target = f.direct ? qr : packed_at(area, batch.dtype, batch.a.shape());
    if (!same_operand(a, target)) copy_matrices(a, target, stream);
    int* infos = reinterpret_cast<int*>(area + temp_bytes);
    std::byte* work = area + temp_bytes + info_bytes;
    auto* taus = static_cast<std::byte*>(tau);
    const std::size_t tau_stride = std::size_t(k) * f.at.elem;
    {
        std::lock_guard lock(host_mutex);  // the host workspaces
        grow_host_workspaces(host, host_needed);
        Lanes lanes(device, stream, count, true);
        for (std::int64_t b = 0; b < count; ++b) {
            const int l = lanes.lane_of(b);
            geqrf(lanes.handle(l), batch.dtype, m, n, f.at.at(b), f.at.ld, taus + std::size_t(b) * tau_stride,
                  work + per_lane * std::size_t(l), per_lane, host[std::size_t(l)].data(), host_needed, infos + b);
        }
        lanes.join();
    }
    if (!f.direct) copy_matrices(target, qr, stream);
}

void QRImpl::form_q(const TensorView& qr, const void* tau, const TensorView& q, core::StreamRef stream) {
    const std::int64_t m = batch.m, count = batch.count, q_cols = q.shape(-1);
    if (k == 0) {  // no reflectors: Q is the identity (complete, m × m)
        set_identity(matrix_params(q, count), batch.dtype, stream);
        return;
    }
    Placement target = place(q);
    const std::size_t temp_bytes = copy_bytes(target, q, count);
    const std::size_t info_bytes = aligned_bytes(std::size_t(count) * sizeof(int));
    const int lanes_wanted = int(std::min<std::int64_t>(count, Lanes::max_lanes));
    std::size_t per_lane = 0;
    {
        const SolverHandle h(device, nullptr);
        per_lane = aligned_bytes(
            orgqr_workspace(h, batch.dtype, int(m), int(q_cols), int(k), target.at.data, int(target.at.ld), tau));
    }
    const StreamWorkspace::Lease lease =
        workspace->acquire(temp_bytes + info_bytes + per_lane * std::size_t(lanes_wanted), stream);
    auto* area = static_cast<std::byte*>(lease.data);
    if (!target.direct) target.at.data = area;
    const TensorView qv = target.direct ? q : packed_at(area, batch.dtype, q.shape());
    // The reflectors: the first min(n, q's columns) columns; orgqr sets the rest itself.
    const std::int64_t copied = std::min(batch.n, q_cols);
    if (!same_operand(qr, qv))
        copy_matrices(sub_matrices(qr, 0, m, 0, copied), sub_matrices(qv, 0, m, 0, copied), stream);
    int* infos = reinterpret_cast<int*>(area + temp_bytes);
    std::byte* work = area + temp_bytes + info_bytes;
    const auto* taus = static_cast<const std::byte*>(tau);
    const std::size_t tau_stride = std::size_t(k) * target.at.elem;
    {
        Lanes lanes(device, stream, count, true);
        for (std::int64_t b = 0; b < count; ++b) {
            const int l = lanes.lane_of(b);
            orgqr(lanes.handle(l), batch.dtype, int(m), int(q_cols), int(k), target.at.at(b), int(target.at.ld),
                  taus + std::size_t(b) * tau_stride, work + per_lane * std::size_t(l), per_lane, infos + b);
        }
        lanes.join();
    }
    if (!target.direct) copy_matrices(qv, q, stream);
}

void QRImpl::apply_q(const TensorView& qr, const void* tau, const TensorView& c, const TensorView& out,
                     const linalg::ApplyQOptions& how, core::StreamRef stream) {
    const std::int64_t m = batch.m, count = batch.count;
    cublasSideMode_t side = how.side == linalg::Side::left ? CUBLAS_SIDE_LEFT : CUBLAS_SIDE_RIGHT;
    cublasOperation_t op = how.adjoint ? CUBLAS_OP_C : CUBLAS_OP_N;
    // A row-major `out` of a real dtype is outᵀ column-major: (op(Q)·C)ᵀ = Cᵀ·op(Q)ᵀ, so the other
    // side with the other operation, and no copy. (For a complex dtype op(Q)ᵀ is neither Q nor Qᴴ.)
    const Storage os = storage_of(out);
    const bool flipped = os.direct && os.row_major && fits_int(os.ld) && !complex_type(batch.dtype);
    if (flipped) {
        side = side == CUBLAS_SIDE_LEFT ? CUBLAS_SIDE_RIGHT : CUBLAS_SIDE_LEFT;
        op = op == CUBLAS_OP_N ? CUBLAS_OP_T : CUBLAS_OP_N;
    }
    const TensorView seen = flipped ? out.transposed() : out;  // column-major, or copied to be
    Placement target = place(seen);
    const TensorView reflectors = sub_matrices(qr, 0, m, 0, k);
    Placement f = place(reflectors);
    const std::size_t factor_bytes = copy_bytes(f, reflectors, count);
    const std::size_t temp_bytes = copy_bytes(target, seen, count);
    const std::size_t info_bytes = aligned_bytes(std::size_t(count) * sizeof(int));
    const int lanes_wanted = int(std::min<std::int64_t>(count, Lanes::max_lanes));
    const int rows = int(seen.shape(-2)), cols = int(seen.shape(-1));
    std::size_t per_lane = 0;
    {
        const SolverHandle h(device, nullptr);
        per_lane = aligned_bytes(ormqr_workspace(h, batch.dtype, side, op, rows, cols, int(k), f.at.data, int(f.at.ld),
                                                 tau, target.at.data, int(target.at.ld)));
    }
    const StreamWorkspace::Lease lease =
        workspace->acquire(factor_bytes + temp_bytes + info_bytes + per_lane * std::size_t(lanes_wanted), stream);
    auto* area = static_cast<std::byte*>(lease.data);
    if (!f.direct) {
        f.at.data = area;
        copy_matrices(reflectors, packed_at(area, batch.dtype, reflectors.shape()), stream);
    }
    if (!target.direct) target.at.data = area + factor_bytes;
    const TensorView cv = target.direct ? seen : packed_at(area + factor_bytes, batch.dtype, seen.shape());
    const TensorView source = flipped ? c.transposed() : c;
    if (!same_operand(source, cv)) copy_matrices(source, cv, stream);
    int* infos = reinterpret_cast<int*>(area + factor_bytes + temp_bytes);
    std::byte* work = area + factor_bytes + temp_bytes + info_bytes;
    const auto* taus = static_cast<const std::byte*>(tau);
    const std::size_t tau_stride = std::size_t(k) * f.at.elem;
    {
        Lanes lanes(device, stream, count, true);
        for (std::int64_t b = 0; b < count; ++b) {
            const int l = lanes.lane_of(b);
            ormqr(lanes.handle(l), batch.dtype, side, op, rows, cols, int(k), f.at.at(b), int(f.at.ld),
                  taus + std::size_t(b) * tau_stride, target.at.at(b), int(target.at.ld),
                  work + per_lane * std::size_t(l), per_lane, infos + b);
        }
        lanes.join();
    }
    if (!target.direct) copy_matrices(cv, seen, stream);
}

}  // namespace gpumath::detail

namespace gpumath::linalg {

using detail::QRImpl;

QR::QR(const TensorLayout& a, const QROptions& options) : impl_(std::make_unique<QRImpl>()) {
    const char* api = detail::plan_api;
    detail::check_enum(options.mode, qr_mode_count, "a linalg::QRMode", "options.mode", api);
    QRImpl& s = *impl_;
    s.batch = detail::matrix_batch(a, api);
    s.options = options;
    s.k = std::min(s.batch.m, s.batch.n);
    std::array<std::int64_t, max_rank> shape{};
    const std::size_t batch_rank = std::size_t(s.batch.batch_rank);
    std::copy(a.shape().begin(), a.shape().end(), shape.begin());
    shape[batch_rank] = s.k;
    s.tau_layout = TensorLayout(a.dtype(), std::span<const std::int64_t>(shape.data(), batch_rank + 1));
    shape[batch_rank] = s.batch.m;
    shape[batch_rank + 1] = options.mode == QRMode::complete ? s.batch.m : s.k;
    s.q_layout = TensorLayout(a.dtype(), std::span<const std::int64_t>(shape.data(), batch_rank + 2));
}

QR::~QR() = default;
QR::QR(QR&&) noexcept = default;
QR& QR::operator=(QR&&) noexcept = default;

QRImpl& QR::impl(const char* api) const {
    if (!impl_) detail::throw_moved_from("linalg::QR", api);
    return *impl_;
}

void QR::plan() { impl("linalg::QR::plan").plan(); }

bool QR::planned() const noexcept { return impl_ && impl_->planned.load(std::memory_order_acquire); }

void QR::factorize(const TensorView& a, const TensorView& qr, const TensorView& tau, core::StreamRef stream) {
    const char* api = "linalg::QR::factorize";
    QRImpl& state = impl(api);
    const detail::MatrixBatch& batch = state.batch;
    detail::check_operand(a, batch.a.shape(), batch.dtype, "a", false, api);
    detail::check_operand(qr, batch.a.shape(), batch.dtype, "qr", true, api);
    detail::check_contiguous_operand(tau, state.tau_layout, "tau", true, api);
    if (!detail::same_operand(a, qr)) detail::check_apart(qr, "qr", a, "a", api);
    detail::check_apart(tau, "tau", a, "a", api);
    detail::check_apart(tau, "tau", qr, "qr", api);
    if (batch.count == 0 || state.k == 0) return;  // nothing to factorize, nothing to write
    state.ensure_planned(api);
    state.factorize(a, qr, tau.data(), stream);
}

void QR::form_q(const TensorView& qr, const TensorView& tau, const TensorView& q, core::StreamRef stream) {
    const char* api = "linalg::QR::form_q";
    QRImpl& state = impl(api);
    const detail::MatrixBatch& batch = state.batch;
    if (state.options.mode == QRMode::r)
        detail::throw_invalid(
            "the plan was made with options.mode QRMode::r, which forms no Q; plan with QRMode::reduced or "
            "QRMode::complete",
            api);
    detail::check_operand(qr, batch.a.shape(), batch.dtype, "qr", false, api);
    detail::check_contiguous_operand(tau, state.tau_layout, "tau", false, api);
    detail::check_operand(q, state.q_layout.shape(), batch.dtype, "q", true, api);
    if (!detail::same_operand(qr, q)) detail::check_apart(q, "q", qr, "qr", api);
    detail::check_apart(q, "q", tau, "tau", api);
    detail::check_q_sizes(batch.m, q.shape(-1), api);
    if (q.size() == 0) return;
    state.ensure_planned(api);
    state.form_q(qr, tau.data(), q, stream);
}

void QR::apply_q(const TensorView& qr, const TensorView& tau, const TensorView& c, const TensorView& out,
                 const ApplyQOptions& how, core::StreamRef stream) {
    const char* api = "linalg::QR::apply_q";
    QRImpl& state = impl(api);
    const detail::MatrixBatch& batch = state.batch;
    detail::check_enum(how.side, side_count, "a linalg::Side", "how.side", api);
    detail::check_operand(qr, batch.a.shape(), batch.dtype, "qr", false, api);
    detail::check_contiguous_operand(tau, state.tau_layout, "tau", false, api);
    const bool left = how.side == Side::left;
    const int tail = c.rank() - batch.batch_rank;
    if (tail != 2 && !(tail == 1 && left))
        detail::throw_invalid(
            fmt::format("c: shape {}; give C as {} with the batch shape {} and m {}", gpumath::to_string(c.shape()),
                        left ? "(..., m, p) or (..., m)" : "(..., p, m)", gpumath::to_string(batch.info.shape()),
                        batch.m),
            api);
    std::array<std::int64_t, max_rank> shape{};
    std::copy(batch.a.shape().begin(), batch.a.shape().begin() + batch.batch_rank, shape.begin());
    const std::int64_t p = tail == 1 ? 1 : left ? c.shape(-1) : c.shape(-2);
    const std::size_t at = std::size_t(batch.batch_rank);
    if (tail == 1) {
        shape[at] = batch.m;
    } else {
        shape[at] = left ? batch.m : p;
        shape[at + 1] = left ? p : batch.m;
    }
    const std::span<const std::int64_t> expected(shape.data(), std::size_t(c.rank()));
    detail::check_operand(c, expected, batch.dtype, "c", false, api);
    detail::check_operand(out, expected, batch.dtype, "out", true, api);
    if (!detail::same_operand(c, out)) detail::check_apart(out, "out", c, "c", api);
    detail::check_apart(out, "out", qr, "qr", api);
    detail::check_apart(out, "out", tau, "tau", api);
    detail::check_int_size(batch.m, "m (the order of Q)", "cusolverDn<t>ormqr", api);
    detail::check_int_size(p, left ? "p (the columns of c)" : "p (the rows of c)", "cusolverDn<t>ormqr", api);
    if (out.size() == 0) return;
    const TensorView cm = tail == 1 ? detail::as_columns(c) : c;
    const TensorView om = tail == 1 ? detail::as_columns(out) : out;
    if (state.k == 0) {  // no reflectors: Q is the identity
        if (!detail::same_operand(c, out)) detail::copy_matrices(cm, om, stream);
        return;
    }
    state.ensure_planned(api);
    state.apply_q(qr, tau.data(), cm, om, how, stream);
}

const TensorLayout& QR::layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->batch.a : empty;
}

const TensorLayout& QR::tau_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->tau_layout : empty;
}

const TensorLayout& QR::q_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->q_layout : empty;
}

const QROptions& QR::options() const noexcept {
    static const QROptions empty;
    return impl_ ? impl_->options : empty;
}

std::size_t QR::workspace_size() const noexcept {
    if (!planned()) return 0;
    const detail::MatrixBatch& batch = impl_->batch;
    const std::size_t lanes = std::size_t(std::min<std::int64_t>(batch.count, detail::Lanes::max_lanes));
    return detail::aligned_bytes(std::size_t(batch.count) * sizeof(int)) +
           lanes * detail::aligned_bytes(impl_->geqrf_bytes);
}

}  // namespace gpumath::linalg
