// SPDX-License-Identifier: Apache-2.0
// The TruncatedSVD plan: cusolverDnXgesvdr (randomized, rank k) looped over the batch.
#include <algorithm>
#include <mutex>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/linalg/svd.hpp>
#include "detail/status.hpp"
#include "linalg/matrices.hpp"
#include "linalg/svd_impl.hpp"

namespace gpumath::detail {
namespace {

constexpr const char* truncated_api = "linalg::TruncatedSVD";
constexpr std::int64_t default_oversampling = 10;

}  // namespace

void TruncatedSVDImpl::plan_locked() {
    start_planning(options.memory_resource);
    if (batch.count == 0 || k == 0) {
        size_host(0);
        return;
    }
    const std::int64_t wm = orient.wm, wn = orient.wn;
    const cudaDataType t = to_cuda(batch.dtype), r = to_cuda(real_of(batch.dtype));
    const SolverHandle h(device, nullptr);
    check_cusolver(
        cusolverDnXgesvdr_bufferSize(h.get(), h.params(), 'S', 'S', wm, wn, k, p, options.power_iterations, t, nullptr,
                                     wm, r, nullptr, t, nullptr, wm, t, nullptr, wn, t, &device_bytes, &host_bytes),
        "cusolverDnXgesvdr_bufferSize", "sizing a truncated SVD");
    size_host(host_bytes);
}

void TruncatedSVDImpl::run(const TensorView& a, const TensorView& u, const TensorView& s, const TensorView& vh,
                           const TensorView& info, core::StreamRef stream) {
    const std::int64_t wm = orient.wm, wn = orient.wn, count = batch.count;
    const std::size_t elem = size_of(batch.dtype);
    // gesvdr's outputs go to workspace as wide as min(m, n) (it is not documented to write only k
    // columns there); their first k columns are copied out. Vectors are always computed: U and V
    // are where the routine works.
    const bool vectors = options.vectors;
    Piece sp = make_piece(values_as_rows(s), batch, wn, false, false);
    Piece up = vectors ? make_piece(orient.flip ? vh.transposed() : u, batch, wn, false, false)
                       : scratch_piece(batch.dtype, batch, wm, wn);
    Piece vp = vectors ? make_piece(orient.flip ? u : vh.transposed(), batch, wn, false, false)
                       : scratch_piece(batch.dtype, batch, wn, wn);
    const std::size_t a_bytes = aligned_bytes(std::size_t(count * wm * wn) * elem);
    const int lanes_wanted = int(std::min<std::int64_t>(count, Lanes::max_lanes));
    const std::size_t per_lane = aligned_bytes(device_bytes);
    const StreamWorkspace::Lease lease =
        workspace->acquire(a_bytes + sp.bytes + up.bytes + vp.bytes + per_lane * std::size_t(lanes_wanted), stream);
    auto* cursor = static_cast<std::byte*>(lease.data);
    std::byte* a_data = cursor;
    cursor += a_bytes;
    copy_matrices(orient.flip ? a.transposed() : a,
                  TensorView(a_data, column_major(batch.dtype, batch.batch_shape(), wm, wn, wm, wm * wn)), stream);
    bind(sp, cursor);
    bind(up, cursor);
    bind(vp, cursor);
    const cudaDataType t = to_cuda(batch.dtype), r = to_cuda(real_of(batch.dtype));
    const std::int64_t a_step = wm * wn * std::int64_t(elem);
    int* infos = static_cast<int*>(info.data());
    {
        std::unique_lock lock(host_mutex);  // the host workspaces
        Lanes lanes(device, stream, count, true);
        for (std::int64_t b = 0; b < count; ++b) {
            const int l = lanes.lane_of(b);
            const SolverHandle& h = lanes.handle(l);
            check_cusolver(cusolverDnXgesvdr(h.get(), h.params(), 'S', 'S', wm, wn, k, p, options.power_iterations, t,
                                             a_data + b * a_step, wm, r, sp.at(b), t, up.at(b), up.ld, t, vp.at(b),
                                             vp.ld, t, cursor + per_lane * std::size_t(l), per_lane,
                                             host[std::size_t(l)].data(), host_bytes, infos + b),
                           "cusolverDnXgesvdr", "a truncated SVD");
        }
        lanes.join();
    }
    // The first k of the routine's values and columns are the answer.
    finish(sp, batch, false, stream);
    if (!vectors) return;
    finish(up, batch, false, stream);
    finish(vp, batch, batch.dtype == DataType::c32 || batch.dtype == DataType::c64, stream);
}

}  // namespace gpumath::detail

namespace gpumath::linalg {

using detail::TruncatedSVDImpl;

TruncatedSVD::TruncatedSVD(const TensorLayout& a, std::int64_t rank, const TruncatedSVDOptions& options)
    : impl_(std::make_unique<TruncatedSVDImpl>()) {
    const char* api = detail::truncated_api;
    TruncatedSVDImpl& s = *impl_;
    s.batch = detail::matrix_batch(a, api);
    s.options = options;
    s.orient = detail::orientation_of(s.batch);
    const std::int64_t min_mn = std::min(s.batch.m, s.batch.n);
    if (rank < 1 || rank > min_mn)
        detail::throw_invalid(
            fmt::format("rank: {}; give 1 to min(m, n) = {} (matrices of {} x {})", rank, min_mn, s.batch.m, s.batch.n),
            api);
    if (options.oversampling < -1)
        detail::throw_invalid(fmt::format("options.oversampling: {}; give 0 or more, or -1 for min({}, min(m, n) - k)",
                                          options.oversampling, detail::default_oversampling),
                              api);
    if (options.oversampling > min_mn - rank)
        detail::throw_invalid(fmt::format("options.oversampling: {} with rank {}; rank + oversampling must not exceed "
                                          "min(m, n) = {}",
                                          options.oversampling, rank, min_mn),
                              api);
    if (options.power_iterations < 0)
        detail::throw_invalid(fmt::format("options.power_iterations: {}; give 0 or more", options.power_iterations),
                              api);
    s.k = rank;
    s.p = options.oversampling >= 0 ? options.oversampling : std::min(detail::default_oversampling, min_mn - rank);
    s.s_layout = detail::batch_vector_layout(s.batch, detail::real_of(s.batch.dtype), rank);
    s.u_layout = detail::batch_layout(s.batch, s.batch.dtype, s.batch.m, rank);
    s.vh_layout = detail::batch_layout(s.batch, s.batch.dtype, rank, s.batch.n);
}

TruncatedSVD::~TruncatedSVD() = default;
TruncatedSVD::TruncatedSVD(TruncatedSVD&&) noexcept = default;
TruncatedSVD& TruncatedSVD::operator=(TruncatedSVD&&) noexcept = default;

TruncatedSVDImpl& TruncatedSVD::impl(const char* api) const {
    if (!impl_) detail::throw_moved_from("linalg::TruncatedSVD", api);
    return *impl_;
}

void TruncatedSVD::plan() { impl("linalg::TruncatedSVD::plan").plan(); }

bool TruncatedSVD::planned() const noexcept { return impl_ && impl_->planned.load(std::memory_order_acquire); }

void TruncatedSVD::execute(const TensorView& a, const TensorView& u, const TensorView& s, const TensorView& vh,
                           const TensorView& info, core::StreamRef stream) {
    const char* api = "linalg::TruncatedSVD::execute";
    TruncatedSVDImpl& state = impl(api);
    detail::check_svd_operands(a, u, s, vh, info, state.batch, state.u_layout, state.s_layout, state.vh_layout,
                               state.options.vectors, api);
    if (detail::empty_svd_done(state.batch, u, vh, false, info, stream)) return;
    state.plan();
    if (detail::capturing(stream))
        detail::throw_not_supported(
            "the stream is capturing a CUDA graph, and TruncatedSVD (cuSOLVER's gesvdr, which may wait on the host "
            "inside) cannot be captured; execute it outside the capture",
            api);
    detail::check_plan_device(state.device, api);
    state.run(a, u, s, vh, info, stream);
}

const TensorLayout& TruncatedSVD::layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->batch.a : empty;
}

std::int64_t TruncatedSVD::rank() const noexcept { return impl_ ? impl_->k : 0; }

std::int64_t TruncatedSVD::oversampling() const noexcept { return impl_ ? impl_->p : 0; }

const TensorLayout& TruncatedSVD::values_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->s_layout : empty;
}

const TensorLayout& TruncatedSVD::u_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->u_layout : empty;
}

const TensorLayout& TruncatedSVD::vh_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->vh_layout : empty;
}

const TensorLayout& TruncatedSVD::info_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->batch.info : empty;
}

const TruncatedSVDOptions& TruncatedSVD::options() const noexcept {
    static const TruncatedSVDOptions empty;
    return impl_ ? impl_->options : empty;
}

std::size_t TruncatedSVD::workspace_size() const noexcept {
    if (!planned()) return 0;
    const TruncatedSVDImpl& s = *impl_;
    const std::int64_t wm = s.orient.wm, wn = s.orient.wn, count = s.batch.count;
    const std::size_t elem = size_of(s.batch.dtype);
    const std::size_t lanes = std::size_t(std::min<std::int64_t>(count, detail::Lanes::max_lanes));
    return 2 * detail::aligned_bytes(std::size_t(count * wm * wn) * elem) +
           detail::aligned_bytes(std::size_t(count * wn * wn) * elem) +
           detail::aligned_bytes(std::size_t(count * wn) * size_of(detail::real_of(s.batch.dtype))) +
           lanes * detail::aligned_bytes(s.device_bytes);
}

}  // namespace gpumath::linalg
