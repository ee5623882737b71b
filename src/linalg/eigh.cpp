// SPDX-License-Identifier: Apache-2.0
// The Eigh plan: syevd (64-bit API, looped over the batch) or XsyevBatched.
#include <gpumath/linalg/eigh.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/tensor.hpp>
#include <gpumath/tensor_ops.hpp>
#include "core/stream_workspace.hpp"
#include "detail/status.hpp"
#include "linalg/choice.hpp"
#include "linalg/cusolver.hpp"
#include "linalg/lanes.hpp"
#include "linalg/matrices.hpp"
#include "linalg/plan_state.hpp"
#include "linalg/small.hpp"

namespace gpumath::detail {
namespace {

constexpr const char* plan_api = "linalg::Eigh";
constexpr std::int64_t measured_elements = std::int64_t(1) << 26;
constexpr std::int64_t measured_n = 1024;

}  // namespace

struct EighImpl final : PlanState {
    SquareBatch batch;
    linalg::EighOptions options;
    TensorLayout values_layout;  // (..., n) of the real dtype, row-major
    linalg::Backend backend = linalg::Backend::automatic;
    std::size_t single_bytes = 0, single_host = 0;    // Xsyevd per matrix, leading dimension n
    std::size_t batched_bytes = 0, batched_host = 0;  // XsyevBatched for the whole batch

    [[nodiscard]] cusolverEigMode_t jobz() const noexcept {
        return options.vectors ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
    }

    void plan_locked() override;
    void run(linalg::Backend with, const TensorView& a, const TensorView& values, const TensorView& vectors,
             const TensorView& info, core::StreamRef stream);
};

void EighImpl::plan_locked() {
    start_planning(options.memory_resource);
    const std::int64_t n = std::max<std::int64_t>(batch.n, 1);
    const cudaDataType t = to_cuda(batch.dtype), w = to_cuda(real_of(batch.dtype));
    const cublasFillMode_t fill = fill_mode(options.triangle, false);
    {
        const SolverHandle h(device, nullptr);
        check_cusolver(cusolverDnXsyevd_bufferSize(h.get(), h.params(), jobz(), fill, batch.n, t, nullptr, n, w,
                                                   nullptr, t, &single_bytes, &single_host),
                       "cusolverDnXsyevd_bufferSize", "sizing an eigendecomposition");
        if (batch.count > 1 && options.backend != linalg::Backend::looped && options.backend != linalg::Backend::warp)
            check_cusolver(cusolverDnXsyevBatched_bufferSize(h.get(), h.params(), jobz(), fill, batch.n, t, nullptr, n,
                                                             w, nullptr, t, &batched_bytes, &batched_host, batch.count),
                           "cusolverDnXsyevBatched_bufferSize", "sizing a batched eigendecomposition");
    }
    size_host(std::max(single_host, batched_host));
    backend = options.backend;
    if (backend == linalg::Backend::automatic) {
        const bool measure =
            batch.count > 1 && batch.n <= measured_n && batch.n * batch.n * batch.count <= measured_elements;
        backend = linalg::Backend::looped;
        if (measure) {
            const ChoiceKey key{options.vectors ? "eigh" : "eigh values", batch.dtype, batch.n, batch.count,
                                device_model(device)};
            const TensorLayout packed = packed_column_major(batch.dtype, batch.a.shape());
            Tensor a, v, wv, info;
            std::vector<linalg::Backend> candidates{linalg::Backend::looped, linalg::Backend::batched};
            if (small_kernel_supported(SmallOp::eigh, batch.dtype, batch.n))
                candidates.push_back(linalg::Backend::warp);
            backend = measured_backend(
                key, candidates,
                [&](core::StreamRef s) {
                    a = Tensor::empty(packed, s, options.memory_resource);
                    if (options.vectors) v = Tensor::empty(packed, s, options.memory_resource);
                    wv = Tensor::empty(values_layout, s, options.memory_resource);
                    info = Tensor::empty(batch.info, s, options.memory_resource);
                    fill_random(TensorView(a.data(), packed), s);
                },
                [&](linalg::Backend with, core::StreamRef s) {
                    run(with, TensorView(a.data(), packed), wv,
                        options.vectors ? TensorView(v.data(), packed) : TensorView(), info, s);
                },
                [&] {
                    a = Tensor();
                    v = Tensor();
                    wv = Tensor();
                    info = Tensor();
                });
        }
    }
}

void EighImpl::run(linalg::Backend with, const TensorView& a, const TensorView& values, const TensorView& vectors,
                   const TensorView& info, core::StreamRef stream) {
    if (with == linalg::Backend::warp) {  // reads a and writes values and vectors where they are
        small_eigh(batch, a, values, vectors, static_cast<int*>(info.data()),
                   options.triangle == linalg::Triangle::upper, stream);
        return;
    }
    const std::int64_t n = batch.n, count = batch.count;
    const std::size_t elem = size_of(batch.dtype), welem = size_of(real_of(batch.dtype));
    const bool batched = with == linalg::Backend::batched && count > 1;
    // cuSOLVER overwrites A with the vectors: in `vectors` where it can work there (column-major;
    // packed for the batched routine), else in workspace.
    bool v_direct = false;
    if (options.vectors) {
        const Storage vs = storage_of(vectors);
        v_direct = vs.direct && !vs.row_major && (!batched || (vs.ld == n && (count <= 1 || vs.batch_stride == n * n)));
    }
    const auto w_stride = uniform_batch_stride(values, batch.batch_rank);
    const bool w_direct = (n <= 1 || values.stride(-1) == 1) && w_stride && (count <= 1 || *w_stride == n);
    const std::size_t a_bytes = v_direct ? 0 : aligned_bytes(std::size_t(count * n * n) * elem);
    const std::size_t w_bytes = w_direct ? 0 : aligned_bytes(std::size_t(count * n) * welem);
    const int lanes_wanted = batched ? 1 : int(std::min<std::int64_t>(count, Lanes::max_lanes));
    const std::size_t per_lane = aligned_bytes(batched ? batched_bytes : single_bytes);
    const StreamWorkspace::Lease lease =
        workspace->acquire(a_bytes + w_bytes + per_lane * std::size_t(lanes_wanted), stream);
    auto* area = static_cast<std::byte*>(lease.data);
    const TensorView target = v_direct ? vectors : TensorView(area, packed_column_major(batch.dtype, batch.a.shape()));
    const TensorView w = w_direct ? values : TensorView(area + a_bytes, values_layout);
    if (!same_operand(a, target)) detail::copy_matrices(a, target, stream);
    const Storage ts = storage_of(target);
    const std::int64_t ld = std::max<std::int64_t>(ts.ld, 1);
    const std::int64_t a_step = ts.batch_stride * std::int64_t(elem);
    const std::int64_t w_step = (w_direct ? w_stride.value_or(0) : n) * std::int64_t(welem);
    const cudaDataType t = to_cuda(batch.dtype), wt = to_cuda(real_of(batch.dtype));
    const cublasFillMode_t fill = fill_mode(options.triangle, false);
    auto* data = static_cast<std::byte*>(target.data());
    auto* wdata = static_cast<std::byte*>(w.data());
    int* infos = static_cast<int*>(info.data());
    std::byte* ws = area + a_bytes + w_bytes;
    std::unique_lock lock(host_mutex);  // the host workspaces
    if (batched) {
        const SolverHandle h(device, stream.handle());
        check_cusolver(cusolverDnXsyevBatched(h.get(), h.params(), jobz(), fill, n, t, data, ld, wt, wdata, t, ws,
                                              per_lane, host[0].data(), batched_host, infos, count),
                       "cusolverDnXsyevBatched", "a batched eigendecomposition");
    } else {
        std::size_t bytes = per_lane, host_bytes = single_host;
        if (ld != std::max<std::int64_t>(n, 1)) {
            const SolverHandle h(device, nullptr);
            std::size_t dev = 0;
            check_cusolver(cusolverDnXsyevd_bufferSize(h.get(), h.params(), jobz(), fill, n, t, nullptr, ld, wt,
                                                       nullptr, t, &dev, &host_bytes),
                           "cusolverDnXsyevd_bufferSize", "sizing an eigendecomposition");
            if (dev > bytes)
                throw_not_supported(fmt::format("vectors: leading dimension {} needs {} bytes of workspace where {} "
                                                "were planned; give vectors a leading dimension of n",
                                                ld, dev, bytes),
                                    plan_api);
            grow_host_workspaces(host, host_bytes);
        }
        Lanes lanes(device, stream, count, true);
        for (std::int64_t b = 0; b < count; ++b) {
            const int l = lanes.lane_of(b);
            const SolverHandle& h = lanes.handle(l);
            check_cusolver(cusolverDnXsyevd(h.get(), h.params(), jobz(), fill, n, t, data + b * a_step, ld, wt,
                                            wdata + b * w_step, t, ws + per_lane * std::size_t(l), bytes,
                                            host[std::size_t(l)].data(), host_bytes, infos + b),
                           "cusolverDnXsyevd", "an eigendecomposition");
        }
        lanes.join();
    }
    lock.unlock();
    if (!w_direct) detail::copy_matrices(w, values, stream);
    if (options.vectors && !v_direct) detail::copy_matrices(target, vectors, stream);
}

}  // namespace gpumath::detail

namespace gpumath::linalg {

using detail::EighImpl;

Eigh::Eigh(const TensorLayout& a, const EighOptions& options) : impl_(std::make_unique<EighImpl>()) {
    const char* api = detail::plan_api;
    detail::check_triangle(options.triangle, "options.triangle", api);
    detail::check_backend(options.backend, "options.backend", api);
    impl_->batch = detail::square_batch(a, api);
    impl_->options = options;
    impl_->backend = options.backend;
    impl_->values_layout = TensorLayout(detail::real_of(a.dtype()), a.shape().first(std::size_t(a.rank() - 1)));
    if (options.backend == Backend::warp) detail::check_small_backend(detail::SmallOp::eigh, impl_->batch, api);
}

Eigh::~Eigh() = default;
Eigh::Eigh(Eigh&&) noexcept = default;
Eigh& Eigh::operator=(Eigh&&) noexcept = default;

EighImpl& Eigh::impl(const char* api) const {
    if (!impl_) detail::throw_moved_from("linalg::Eigh", api);
    return *impl_;
}

void Eigh::plan() { impl("linalg::Eigh::plan").plan(); }

bool Eigh::planned() const noexcept { return impl_ && impl_->planned.load(std::memory_order_acquire); }

void Eigh::execute(const TensorView& a, const TensorView& values, const TensorView& vectors, const TensorView& info,
                   core::StreamRef stream) {
    const char* api = "linalg::Eigh::execute";
    EighImpl& state = impl(api);
    const detail::SquareBatch& batch = state.batch;
    detail::check_operand(a, batch.a.shape(), batch.dtype, "a", false, api);
    detail::check_operand(values, state.values_layout.shape(), state.values_layout.dtype(), "values", true, api);
    detail::check_info_operand(info, batch.info, "info", api);
    if (state.options.vectors) {
        detail::check_operand(vectors, batch.a.shape(), batch.dtype, "vectors", true, api);
        if (!detail::same_operand(a, vectors)) detail::check_apart(vectors, "vectors", a, "a", api);
        detail::check_apart(values, "values", vectors, "vectors", api);
        detail::check_apart(info, "info", vectors, "vectors", api);
    } else if (vectors.data() != nullptr) {
        detail::throw_invalid(
            "vectors: given, but the plan computes values only (options.vectors is false); pass "
            "TensorView{}",
            api);
    }
    detail::check_apart(values, "values", a, "a", api);
    detail::check_apart(info, "info", a, "a", api);
    detail::check_apart(info, "info", values, "values", api);
    if (detail::empty_batch_done(batch, info, stream)) return;
    state.plan();
    // syevd waits on the host inside (cuSOLVER reports an internal error when captured); the
    // batched routine is stream work only.
    if (state.backend == Backend::looped && detail::capturing(stream))
        detail::throw_not_supported(
            "the stream is capturing a CUDA graph, and the looped backend (cuSOLVER's syevd) "
            "cannot be captured; plan with Backend::batched (XsyevBatched) or, for n <= 32, Backend::warp to "
            "capture",
            api);
    detail::check_plan_device(state.device, api);
    state.run(state.backend, a, values, vectors, info, stream);
}

const TensorLayout& Eigh::layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->batch.a : empty;
}

const TensorLayout& Eigh::values_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->values_layout : empty;
}

const TensorLayout& Eigh::info_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->batch.info : empty;
}

const EighOptions& Eigh::options() const noexcept {
    static const EighOptions empty;
    return impl_ ? impl_->options : empty;
}

Backend Eigh::backend() const noexcept {
    if (!impl_) return Backend::automatic;
    return planned() ? impl_->backend : impl_->options.backend;
}

std::size_t Eigh::workspace_size() const noexcept {
    if (!planned()) return 0;
    const detail::SquareBatch& batch = impl_->batch;
    const std::size_t lanes = std::size_t(std::min<std::int64_t>(batch.count, detail::Lanes::max_lanes));
    const std::size_t solver =
        std::max(lanes * detail::aligned_bytes(impl_->single_bytes), detail::aligned_bytes(impl_->batched_bytes));
    return detail::aligned_bytes(std::size_t(batch.count * batch.n * batch.n) * size_of(batch.dtype)) +
           detail::aligned_bytes(std::size_t(batch.count * batch.n) * size_of(detail::real_of(batch.dtype))) + solver;
}

}  // namespace gpumath::linalg
