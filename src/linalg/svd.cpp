// SPDX-License-Identifier: Apache-2.0
// The SVD plan: Xgesvd (64-bit API) or gesvdj looped over the batch, gesvdjBatched, or
// gesvdaStridedBatched.
#include <gpumath/linalg/svd.hpp>

#include <algorithm>
#include <climits>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/tensor.hpp>
#include "detail/enum_check.hpp"
#include "detail/status.hpp"
#include "linalg/choice.hpp"
#include "linalg/cusolver.hpp"
#include "linalg/matrices.hpp"
#include "linalg/svd_impl.hpp"

namespace gpumath::detail {
namespace {

constexpr const char* plan_api = "linalg::SVD";
constexpr std::int64_t measured_elements = std::int64_t(1) << 26;
constexpr std::int64_t measured_n = 1024;
constexpr std::int64_t batched_max = 32;

/// Xgesvd's job for U and Vᴴ: none, the min(m, n) columns or rows, or all.
signed char gesvd_job(linalg::SVDJob job) {
    return job == linalg::SVDJob::values ? 'N' : job == linalg::SVDJob::thin ? 'S' : 'A';
}

cusolverEigMode_t eig_mode(bool vectors) { return vectors ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR; }

/// NotSupported naming the backend unless every size an int routine takes fits in int.
void check_int_sizes(const MatrixBatch& b, const Orientation& o, linalg::Backend backend, const char* api) {
    if (fits_int(o.wm * std::max<std::int64_t>(o.wm, o.wn)) && fits_int(b.count)) return;
    throw_not_supported(fmt::format("options.backend: {} runs a cuSOLVER routine whose sizes are int; this plan has "
                                    "{} x {} matrices and {} of them (use looped)",
                                    to_string(backend), b.m, b.n, b.count),
                        api);
}

}  // namespace

SVDImpl::~SVDImpl() {
    for (gesvdjInfo_t p : jacobi_params)
        if (p != nullptr) (void)cusolverDnDestroyGesvdjInfo(p);
}

bool SVDImpl::batched_fits() const noexcept { return orient.wm <= batched_max && fits_int(batch.count); }

void SVDImpl::plan_locked() {
    start_planning(options.memory_resource);
    backend = options.backend == linalg::Backend::automatic ? linalg::Backend::looped : options.backend;
    if (batch.count == 0 || k == 0) {
        size_host(0);
        return;
    }
    size_routines();
    if (options.backend == linalg::Backend::automatic) choose_backend();
}

void SVDImpl::size_routines() {
    const std::int64_t wm = orient.wm, wn = orient.wn;
    const linalg::Backend want = options.backend;
    const bool any = want == linalg::Backend::automatic;
    const cudaDataType t = to_cuda(batch.dtype), r = to_cuda(real_of(batch.dtype));
    const std::size_t elem = size_of(batch.dtype);
    const SolverHandle h(device, nullptr);
    std::size_t host_bytes = 0;
    if (any || want == linalg::Backend::looped) {
        const signed char job = gesvd_job(options.job);
        check_cusolver(cusolverDnXgesvd_bufferSize(h.get(), h.params(), job, job, wm, wn, t, nullptr, wm, r, nullptr, t,
                                                   nullptr, wm, t, nullptr, wn, t, &gesvd_bytes, &gesvd_host),
                       "cusolverDnXgesvd_bufferSize", "sizing an SVD");
        host_bytes = gesvd_host;
    }
    const bool jacobi_fits = fits_int(wm * wm) && fits_int(batch.count);
    if ((any && jacobi_fits) || want == linalg::Backend::jacobi || want == linalg::Backend::batched) {
        for (gesvdjInfo_t& p : jacobi_params) {
            check_cusolver(cusolverDnCreateGesvdjInfo(&p), "cusolverDnCreateGesvdjInfo", "making gesvdj's parameters");
            check_cusolver(cusolverDnXgesvdjSetSortEig(p, 1), "cusolverDnXgesvdjSetSortEig",
                           "asking gesvdj for sorted singular values");
        }
    }
    if ((any && jacobi_fits) || want == linalg::Backend::jacobi) {
        int lwork = 0;
        check_cusolver(gesvdj_size(h.get(), batch.dtype, eig_mode(vectors()), full() ? 0 : 1, int(wm), int(wn), int(wm),
                                   int(wm), int(wn), &lwork, jacobi_params[0]),
                       "cusolverDn<t>gesvdj_bufferSize", "sizing a Jacobi SVD");
        jacobi_solver_bytes = std::size_t(lwork) * elem;
        jacobi_bytes = jacobi_solver_bytes;
        if (!vectors())
            jacobi_bytes = aligned_bytes(jacobi_solver_bytes) + aligned_bytes(std::size_t(wm * wm) * elem) +
                           aligned_bytes(std::size_t(wn * wn) * elem);
    }
    if ((any && batch.count > 1 && batched_fits()) || want == linalg::Backend::batched) {
        int lwork = 0;
        check_cusolver(gesvdj_batched_size(h.get(), batch.dtype, eig_mode(vectors()), int(wm), int(wn), int(wm),
                                           int(wm), int(wn), &lwork, jacobi_params[0], int(batch.count)),
                       "cusolverDn<t>gesvdjBatched_bufferSize", "sizing a batched Jacobi SVD");
        batched_solver_bytes = std::size_t(lwork) * elem;
        batched_bytes = batched_solver_bytes;
        if (!vectors())
            batched_bytes = aligned_bytes(batched_solver_bytes) +
                            aligned_bytes(std::size_t(batch.count * wm * wm) * elem) +
                            aligned_bytes(std::size_t(batch.count * wn * wn) * elem);
    }
    if (want == linalg::Backend::approximate) {
        int lwork = 0;
        const GesvdaStrides st{.a = wm * wn, .s = k, .u = wm * k, .v = wn * k};
        check_cusolver(gesvda_size(h.get(), batch.dtype, eig_mode(vectors()), int(k), int(wm), int(wn), int(wm),
                                   int(wm), int(wn), st, &lwork, int(batch.count)),
                       "cusolverDn<t>gesvdaStridedBatched_bufferSize", "sizing an approximate SVD");
        approximate_solver_bytes = std::size_t(lwork) * elem;
        approximate_bytes = approximate_solver_bytes;
        if (!vectors())
            approximate_bytes = aligned_bytes(approximate_solver_bytes) +
                                aligned_bytes(std::size_t(batch.count * wm * k) * elem) +
                                aligned_bytes(std::size_t(batch.count * wn * k) * elem);
        host_bytes = std::max(host_bytes, std::size_t(batch.count) * sizeof(double));  // the residuals
    }
    size_host(host_bytes);
}

void SVDImpl::choose_backend() {
    const bool measure = batch.count > 1 && fits_int(orient.wm * orient.wm) && fits_int(batch.count) &&
                         orient.wm <= measured_n && batch.m * batch.n * batch.count <= measured_elements;
    if (!measure) return;  // looped
    const ChoiceKey key{fmt::format("svd {} m={}", to_string(options.job), batch.m), batch.dtype, batch.n, batch.count,
                        device_model(device)};
    std::vector<linalg::Backend> candidates{linalg::Backend::looped, linalg::Backend::jacobi};
    if (batched_fits()) candidates.push_back(linalg::Backend::batched);
    const TensorLayout packed =
        column_major(batch.dtype, batch.batch_shape(), batch.m, batch.n, batch.m, batch.m * batch.n);
    Tensor a, u, s, vh, info;
    backend = measured_backend(
        key, candidates,
        [&](core::StreamRef st) {
            a = Tensor::empty(packed, st, options.memory_resource);
            s = Tensor::empty(s_layout, st, options.memory_resource);
            if (vectors()) {
                u = Tensor::empty(u_layout, st, options.memory_resource);
                vh = Tensor::empty(vh_layout, st, options.memory_resource);
            }
            info = Tensor::empty(batch.info, st, options.memory_resource);
            fill_random(TensorView(a.data(), packed), st);
        },
        [&](linalg::Backend with, core::StreamRef st) {
            run(with, TensorView(a.data(), packed), vectors() ? u.view() : TensorView(), s,
                vectors() ? vh.view() : TensorView(), info, st);
        },
        [&] {
            a = Tensor();
            u = Tensor();
            s = Tensor();
            vh = Tensor();
            info = Tensor();
        });
}

void SVDImpl::run(linalg::Backend with, const TensorView& a, const TensorView& u, const TensorView& s,
                  const TensorView& vh, const TensorView& info, core::StreamRef stream) {
    const std::int64_t wm = orient.wm, wn = orient.wn, count = batch.count;
    const std::size_t elem = size_of(batch.dtype);
    const bool batched = with == linalg::Backend::batched || with == linalg::Backend::approximate;
    const bool v_routine = with != linalg::Backend::looped;  // returns V, not Vᴴ
    // Columns each routine writes: gesvdjBatched always the full U; gesvda the rank.
    const std::int64_t u_cols = with == linalg::Backend::batched       ? wm
                                : with == linalg::Backend::approximate ? k
                                : full()                               ? wm
                                                                       : wn;
    const std::int64_t v_cols = with == linalg::Backend::approximate ? k : wn;
    Piece sp = make_piece(values_as_rows(s), batch, k, batched, true);
    Piece up, vp;
    if (vectors()) {
        up = make_piece(orient.flip ? vh.transposed() : u, batch, u_cols, batched, true);
        const TensorView second = v_routine ? (orient.flip ? u : vh.transposed()) : (orient.flip ? u.transposed() : vh);
        vp = make_piece(second, batch, v_cols, batched, true);
    }
    // cuSOLVER decomposes the column-major wm × wn matrix W = A or Aᵀ: a copy (it overwrites its
    // input) except for gesvda, which reads a packed one in place.
    const TensorView w = orient.flip ? a.transposed() : a;
    const Storage ws = storage_of(w);
    const bool a_direct = with == linalg::Backend::approximate && ws.direct && !ws.row_major && ws.ld == wm &&
                          (count <= 1 || ws.batch_stride == wm * wn);
    const std::size_t a_bytes = a_direct ? 0 : aligned_bytes(std::size_t(count * wm * wn) * elem);
    const bool looped = !batched;
    const int lanes = looped ? int(std::min<std::int64_t>(count, Lanes::max_lanes)) : 1;
    const std::size_t per_lane = aligned_bytes(with == linalg::Backend::looped    ? gesvd_bytes
                                               : with == linalg::Backend::jacobi  ? jacobi_bytes
                                               : with == linalg::Backend::batched ? batched_bytes
                                                                                  : approximate_bytes);
    const StreamWorkspace::Lease lease =
        workspace->acquire(a_bytes + sp.bytes + up.bytes + vp.bytes + per_lane * std::size_t(lanes), stream);
    auto* cursor = static_cast<std::byte*>(lease.data);
    std::byte* a_data = a_direct ? static_cast<std::byte*>(a.data()) : cursor;
    cursor += a_bytes;
    if (!a_direct)
        copy_matrices(w, TensorView(a_data, column_major(batch.dtype, batch.batch_shape(), wm, wn, wm, wm * wn)),
                      stream);
    bind(sp, cursor);
    if (vectors()) {
        bind(up, cursor);
        bind(vp, cursor);
    }
    call_routine(with, a_data, wm, a_direct && count > 1 ? ws.batch_stride : wm * wn, sp, vectors() ? &up : nullptr,
                 vectors() ? &vp : nullptr, cursor, per_lane, static_cast<int*>(info.data()), stream);
    finish(sp, batch, false, stream);
    if (!vectors()) return;
    finish(up, batch, false, stream);
    const bool complex = batch.dtype == DataType::c32 || batch.dtype == DataType::c64;
    finish(vp, batch, v_routine && complex, stream);
}

void SVDImpl::call_routine(linalg::Backend with, std::byte* a, std::int64_t lda, std::int64_t a_stride, const Piece& sp,
                           const Piece* up, const Piece* vp, std::byte* ws, std::size_t per_lane, int* info,
                           core::StreamRef stream) {
    const std::int64_t wm = orient.wm, wn = orient.wn, count = batch.count;
    const std::int64_t a_step = a_stride * std::int64_t(size_of(batch.dtype));
    const std::int64_t ldu = up != nullptr ? up->ld : wm, ldv = vp != nullptr ? vp->ld : wn;
    const std::size_t elem = size_of(batch.dtype);
    // Values only: gesvdj(Batched) still writes V and may touch U, and gesvdaStridedBatched copies
    // its rank-k U and V out, so they get scratch matrices after the routine's own workspace
    // (sized in plan_locked), one set per lane (per matrix for the batched routines).
    const bool approximate = with == linalg::Backend::approximate;
    const bool scratch = up == nullptr && with != linalg::Backend::looped;
    const std::size_t solver_bytes = with == linalg::Backend::jacobi    ? jacobi_solver_bytes
                                     : with == linalg::Backend::batched ? batched_solver_bytes
                                     : approximate                      ? approximate_solver_bytes
                                                                        : per_lane;
    const std::int64_t scratch_count = with == linalg::Backend::jacobi ? 1 : count;
    const std::int64_t u_elems = approximate ? wm * k : wm * wm;  // per matrix
    const auto scratch_u = [&](std::byte* work) { return work + aligned_bytes(solver_bytes); };
    const auto scratch_v = [&](std::byte* work) {
        return scratch_u(work) + aligned_bytes(std::size_t(scratch_count * u_elems) * elem);
    };
    const int lwork = int((scratch ? solver_bytes : per_lane) / elem);
    const auto u_at = [&](std::int64_t b) { return up != nullptr ? up->at(b) : nullptr; };
    const auto v_at = [&](std::int64_t b) { return vp != nullptr ? vp->at(b) : nullptr; };
    std::unique_lock lock(host_mutex);  // the host workspaces and gesvdj's parameters
    if (with == linalg::Backend::batched) {
        const SolverHandle h(device, stream.handle());
        check_cusolver(gesvdj_batched(h.get(), batch.dtype, eig_mode(vectors()), int(wm), int(wn), a, int(lda), sp.data,
                                      scratch ? scratch_u(ws) : u_at(0), int(ldu), scratch ? scratch_v(ws) : v_at(0),
                                      int(ldv), ws, lwork, info, jacobi_params[0], int(count)),
                       "cusolverDn<t>gesvdjBatched", "a batched Jacobi SVD");
        return;
    }
    if (with == linalg::Backend::approximate) {
        const SolverHandle h(device, stream.handle());
        const GesvdaStrides st{.a = a_stride,
                               .s = sp.stride,
                               .u = up != nullptr ? up->stride : wm * k,
                               .v = vp != nullptr ? vp->stride : wn * k};
        check_cusolver(gesvda(h.get(), batch.dtype, eig_mode(vectors()), int(k), int(wm), int(wn), a, int(lda), sp.data,
                              scratch ? scratch_u(ws) : u_at(0), int(ldu), scratch ? scratch_v(ws) : v_at(0), int(ldv),
                              st, ws, lwork, info, reinterpret_cast<double*>(host[0].data()), int(count)),
                       "cusolverDn<t>gesvdaStridedBatched", "an approximate SVD");
        return;
    }
    const cudaDataType t = to_cuda(batch.dtype), r = to_cuda(real_of(batch.dtype));
    const signed char job = gesvd_job(options.job);
    Lanes lanes(device, stream, count, true);
    for (std::int64_t b = 0; b < count; ++b) {
        const int l = lanes.lane_of(b);
        const SolverHandle& h = lanes.handle(l);
        std::byte* work = ws + per_lane * std::size_t(l);
        if (with == linalg::Backend::looped)
            check_cusolver(cusolverDnXgesvd(h.get(), h.params(), job, job, wm, wn, t, a + b * a_step, lda, r, sp.at(b),
                                            t, u_at(b), ldu, t, v_at(b), ldv, t, work, per_lane,
                                            host[std::size_t(l)].data(), gesvd_host, info + b),
                           "cusolverDnXgesvd", "an SVD");
        else
            check_cusolver(gesvdj(h.get(), batch.dtype, eig_mode(vectors()), full() ? 0 : 1, int(wm), int(wn),
                                  a + b * a_step, int(lda), sp.at(b), scratch ? scratch_u(work) : u_at(b), int(ldu),
                                  scratch ? scratch_v(work) : v_at(b), int(ldv), work, lwork, info + b,
                                  jacobi_params[std::size_t(l)]),
                           "cusolverDn<t>gesvdj", "a Jacobi SVD");
    }
    lanes.join();
}

}  // namespace gpumath::detail

namespace gpumath::linalg {

using detail::SVDImpl;

SVD::SVD(const TensorLayout& a, const SVDOptions& options) : impl_(std::make_unique<SVDImpl>()) {
    const char* api = detail::plan_api;
    detail::check_enum(options.job, svd_job_count, "a linalg::SVDJob", "options.job", api);
    detail::check_backend(options.backend, "options.backend", api);
    if (options.backend == Backend::warp)
        detail::throw_not_supported(
            "options.backend: warp (gpumath's small-matrix kernel) covers Cholesky, LU and eigh only; for small SVDs "
            "use batched (gesvdjBatched) or automatic",
            api);
    SVDImpl& s = *impl_;
    s.batch = detail::matrix_batch(a, api);
    s.options = options;
    s.backend = options.backend;
    s.orient = detail::orientation_of(s.batch);
    const std::int64_t full_k = std::min(s.batch.m, s.batch.n);
    if (options.rank != 0 && options.backend != Backend::approximate)
        detail::throw_invalid(fmt::format("options.rank: {} is for Backend::approximate only; leave it 0 with "
                                          "Backend::{} (or use TruncatedSVD)",
                                          options.rank, to_string(options.backend)),
                              api);
    if (options.rank < 0 || options.rank > full_k)
        detail::throw_invalid(
            fmt::format("options.rank: {}; give 1 to min(m, n) = {}, or 0 for min(m, n)", options.rank, full_k), api);
    if (options.backend == Backend::batched && s.orient.wm > detail::batched_max)
        detail::throw_not_supported(fmt::format("options.backend: batched runs gesvdjBatched, for m and n at most {}; "
                                                "this plan has {} x {} matrices (use jacobi, looped or automatic)",
                                                detail::batched_max, s.batch.m, s.batch.n),
                                    api);
    if (options.backend == Backend::approximate && options.job == SVDJob::full)
        detail::throw_not_supported(
            "options.backend: approximate (gesvdaStridedBatched) computes thin vectors only; ask for SVDJob::thin "
            "or SVDJob::values, or use another backend",
            api);
    if (options.backend == Backend::jacobi || options.backend == Backend::batched ||
        options.backend == Backend::approximate)
        detail::check_int_sizes(s.batch, s.orient, options.backend, api);
    s.k = options.rank != 0 ? options.rank : full_k;
    const bool full = options.job == SVDJob::full;
    s.s_layout = detail::batch_vector_layout(s.batch, detail::real_of(s.batch.dtype), s.k);
    s.u_layout = detail::batch_layout(s.batch, s.batch.dtype, s.batch.m, full ? s.batch.m : s.k);
    s.vh_layout = detail::batch_layout(s.batch, s.batch.dtype, full ? s.batch.n : s.k, s.batch.n);
}

SVD::~SVD() = default;
SVD::SVD(SVD&&) noexcept = default;
SVD& SVD::operator=(SVD&&) noexcept = default;

SVDImpl& SVD::impl(const char* api) const {
    if (!impl_) detail::throw_moved_from("linalg::SVD", api);
    return *impl_;
}

void SVD::plan() { impl("linalg::SVD::plan").plan(); }

bool SVD::planned() const noexcept { return impl_ && impl_->planned.load(std::memory_order_acquire); }

void SVD::execute(const TensorView& a, const TensorView& u, const TensorView& s, const TensorView& vh,
                  const TensorView& info, core::StreamRef stream) {
    const char* api = "linalg::SVD::execute";
    SVDImpl& state = impl(api);
    detail::check_svd_operands(a, u, s, vh, info, state.batch, state.u_layout, state.s_layout, state.vh_layout,
                               state.vectors(), api);
    if (detail::empty_svd_done(state.batch, u, vh, state.full(), info, stream)) return;
    state.plan();
    // gpumath captures only gesvdjBatched: the other routines may wait on the host inside.
    if (state.backend != Backend::batched && detail::capturing(stream))
        detail::throw_not_supported(fmt::format("the stream is capturing a CUDA graph, and the {} backend cannot be "
                                                "captured; plan with Backend::batched (gesvdjBatched, m and n at most "
                                                "{}) to capture",
                                                to_string(state.backend), detail::batched_max),
                                    api);
    detail::check_plan_device(state.device, api);
    state.run(state.backend, a, u, s, vh, info, stream);
}

const TensorLayout& SVD::layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->batch.a : empty;
}

const TensorLayout& SVD::values_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->s_layout : empty;
}

const TensorLayout& SVD::u_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->u_layout : empty;
}

const TensorLayout& SVD::vh_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->vh_layout : empty;
}

const TensorLayout& SVD::info_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->batch.info : empty;
}

const SVDOptions& SVD::options() const noexcept {
    static const SVDOptions empty;
    return impl_ ? impl_->options : empty;
}

Backend SVD::backend() const noexcept {
    if (!impl_) return Backend::automatic;
    return planned() ? impl_->backend : impl_->options.backend;
}

std::size_t SVD::workspace_size() const noexcept {
    if (!planned()) return 0;
    const SVDImpl& s = *impl_;
    const std::int64_t wm = s.orient.wm, wn = s.orient.wn, count = s.batch.count;
    const std::size_t elem = size_of(s.batch.dtype);
    const std::size_t lanes = std::size_t(std::min<std::int64_t>(count, detail::Lanes::max_lanes));
    const std::size_t solver =
        std::max({lanes * detail::aligned_bytes(s.gesvd_bytes), lanes * detail::aligned_bytes(s.jacobi_bytes),
                  detail::aligned_bytes(s.batched_bytes), detail::aligned_bytes(s.approximate_bytes)});
    // A's copy, S, and U and V as wide as any routine writes them.
    return detail::aligned_bytes(std::size_t(count * wm * wn) * elem) +
           detail::aligned_bytes(std::size_t(count * s.k) * size_of(detail::real_of(s.batch.dtype))) +
           (s.vectors() ? detail::aligned_bytes(std::size_t(count * wm * wm) * elem) +
                              detail::aligned_bytes(std::size_t(count * wn * wn) * elem)
                        : 0) +
           solver;
}

}  // namespace gpumath::linalg
