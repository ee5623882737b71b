// SPDX-License-Identifier: Apache-2.0
// The Eigh plan: syevd (64-bit API, looped over the batch), XsyevBatched, syevjBatched or the warp
// kernel; ranges are in eigh_range.cpp.
#include <gpumath/linalg/eigh.hpp>

#include <algorithm>
#include <atomic>
#include <climits>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/tensor.hpp>
#include <gpumath/tensor_ops.hpp>
#include "core/stream_workspace.hpp"
#include "detail/status.hpp"
#include "linalg/choice.hpp"
#include "detail/enum_check.hpp"
#include "linalg/cusolver.hpp"
#include "linalg/eigh_impl.hpp"
#include "linalg/lanes.hpp"
#include "linalg/matrices.hpp"
#include "linalg/small.hpp"

namespace gpumath::detail {
namespace {

constexpr const char* plan_api = "linalg::Eigh";
constexpr std::int64_t measured_elements = std::int64_t(1) << 26;
constexpr std::int64_t measured_n = 1024;

/// syevjBatched / heevjBatched's workspace in elements, for `batch` packed (ld n).
int jacobi_buffer_size(const SolverHandle& h, const SquareBatch& batch, cusolverEigMode_t jobz, cublasFillMode_t fill,
                       syevjInfo_t params) {
    const int n = int(batch.n), count = int(batch.count);
    int lwork = 0;
    cusolverStatus_t status = CUSOLVER_STATUS_SUCCESS;
    switch (batch.dtype) {
        case DataType::f32:
            status =
                cusolverDnSsyevjBatched_bufferSize(h.get(), jobz, fill, n, nullptr, n, nullptr, &lwork, params, count);
            break;
        case DataType::f64:
            status =
                cusolverDnDsyevjBatched_bufferSize(h.get(), jobz, fill, n, nullptr, n, nullptr, &lwork, params, count);
            break;
        case DataType::c32:
            status =
                cusolverDnCheevjBatched_bufferSize(h.get(), jobz, fill, n, nullptr, n, nullptr, &lwork, params, count);
            break;
        default:
            status =
                cusolverDnZheevjBatched_bufferSize(h.get(), jobz, fill, n, nullptr, n, nullptr, &lwork, params, count);
            break;
    }
    check_cusolver(status, "cusolverDn<t>syevjBatched_bufferSize", "sizing a batched Jacobi eigendecomposition");
    return lwork;
}

/// One syevjBatched / heevjBatched over the batch at `a` (leading dimension `lda`, matrices lda·n
/// apart), values packed at `w`.
void run_jacobi(const SolverHandle& h, const SquareBatch& batch, cusolverEigMode_t jobz, cublasFillMode_t fill, void* a,
                int lda, void* w, void* work, int lwork, int* info, syevjInfo_t params) {
    const int n = int(batch.n), count = int(batch.count);
    cusolverStatus_t status = CUSOLVER_STATUS_SUCCESS;
    switch (batch.dtype) {
        case DataType::f32:
            status =
                cusolverDnSsyevjBatched(h.get(), jobz, fill, n, static_cast<float*>(a), lda, static_cast<float*>(w),
                                        static_cast<float*>(work), lwork, info, params, count);
            break;
        case DataType::f64:
            status =
                cusolverDnDsyevjBatched(h.get(), jobz, fill, n, static_cast<double*>(a), lda, static_cast<double*>(w),
                                        static_cast<double*>(work), lwork, info, params, count);
            break;
        case DataType::c32:
            status =
                cusolverDnCheevjBatched(h.get(), jobz, fill, n, static_cast<cuComplex*>(a), lda, static_cast<float*>(w),
                                        static_cast<cuComplex*>(work), lwork, info, params, count);
            break;
        default:
            status = cusolverDnZheevjBatched(h.get(), jobz, fill, n, static_cast<cuDoubleComplex*>(a), lda,
                                             static_cast<double*>(w), static_cast<cuDoubleComplex*>(work), lwork, info,
                                             params, count);
            break;
    }
    check_cusolver(status, "cusolverDn<t>syevjBatched", "a batched Jacobi eigendecomposition");
}

/// True when syevjBatched takes `batch`: n at most 32, a batch size that fits in int.
bool jacobi_fits(const SquareBatch& batch) noexcept { return batch.n <= 32 && batch.count <= INT_MAX; }

}  // namespace

EighImpl::~EighImpl() {
    if (jacobi_params != nullptr) (void)cusolverDnDestroySyevjInfo(jacobi_params);
}

void EighImpl::plan_locked() {
    start_planning(options.memory_resource);
    const std::int64_t n = std::max<std::int64_t>(batch.n, 1);
    const cudaDataType t = to_cuda(batch.dtype), w = to_cuda(real_of(batch.dtype));
    const cublasFillMode_t fill = fill_mode(options.triangle, false);
    const linalg::Backend want = options.backend;
    const bool ranged = options.range != linalg::EighRange::all;
    // syevjBatched is planned when asked for or when `automatic` may measure it.
    const bool jacobi =
        batch.count > 0 && batch.n > 0 && jacobi_fits(batch) &&
        (want == linalg::Backend::jacobi_batched || (want == linalg::Backend::automatic && !ranged && batch.count > 1));
    {
        const SolverHandle h(device, nullptr);
        if (ranged) {
            if (batch.n > 0) size_range(h, n, single_bytes, single_host);
        } else {
            check_cusolver(cusolverDnXsyevd_bufferSize(h.get(), h.params(), jobz(), fill, batch.n, t, nullptr, n, w,
                                                       nullptr, t, &single_bytes, &single_host),
                           "cusolverDnXsyevd_bufferSize", "sizing an eigendecomposition");
        }
        if (batch.count > 1 && !ranged && (want == linalg::Backend::automatic || want == linalg::Backend::batched))
            check_cusolver(cusolverDnXsyevBatched_bufferSize(h.get(), h.params(), jobz(), fill, batch.n, t, nullptr, n,
                                                             w, nullptr, t, &batched_bytes, &batched_host, batch.count),
                           "cusolverDnXsyevBatched_bufferSize", "sizing a batched eigendecomposition");
        if (jacobi) {
            // Per plan and device; ascending values (cuSOLVER's default, set to be sure).
            if (jacobi_params == nullptr)
                check_cusolver(cusolverDnCreateSyevjInfo(&jacobi_params), "cusolverDnCreateSyevjInfo",
                               "making the Jacobi parameters of an eigendecomposition");
            check_cusolver(cusolverDnXsyevjSetSortEig(jacobi_params, 1), "cusolverDnXsyevjSetSortEig",
                           "sorting the eigenvalues of a Jacobi eigendecomposition");
            jacobi_lwork = jacobi_buffer_size(h, batch, jobz(), fill, jacobi_params);
            jacobi_bytes = std::size_t(jacobi_lwork) * size_of(batch.dtype);
        }
    }
    size_host(std::max(single_host, batched_host));
    backend = want;
    if (backend != linalg::Backend::automatic) return;
    const bool measure =
        !ranged && batch.count > 1 && batch.n <= measured_n && batch.n * batch.n * batch.count <= measured_elements;
    backend = linalg::Backend::looped;
    if (!measure) return;
    const ChoiceKey key{options.vectors ? "eigh" : "eigh values", batch.dtype, batch.n, batch.count,
                        device_model(device)};
    const TensorLayout packed = packed_column_major(batch.dtype, batch.a.shape());
    Tensor a, v, wv, info;
    std::vector<linalg::Backend> candidates{linalg::Backend::looped, linalg::Backend::batched};
    if (small_kernel_supported(SmallOp::eigh, batch.dtype, batch.n)) candidates.push_back(linalg::Backend::warp);
    if (jacobi) candidates.push_back(linalg::Backend::jacobi_batched);
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
            run(with, TensorView(a.data(), packed), wv, options.vectors ? TensorView(v.data(), packed) : TensorView(),
                info, s);
        },
        [&] {
            a = Tensor();
            v = Tensor();
            wv = Tensor();
            info = Tensor();
        });
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
    const bool jacobi = with == linalg::Backend::jacobi_batched;
    const bool batched = (with == linalg::Backend::batched && count > 1) || jacobi;
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
    const std::size_t per_lane = aligned_bytes(jacobi ? jacobi_bytes : batched ? batched_bytes : single_bytes);
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
    if (jacobi) {
        const SolverHandle h(device, stream.handle());
        run_jacobi(h, batch, jobz(), fill, data, int(ld), wdata, ws, jacobi_lwork, infos, jacobi_params);
    } else if (batched) {
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

void EighImpl::execute(const char* api, const TensorView& a, const TensorView& values, const TensorView& vectors,
                       const TensorView& info, const TensorView& counts, core::StreamRef stream) {
    check_operand(a, batch.a.shape(), batch.dtype, "a", false, api);
    check_operand(values, values_layout.shape(), values_layout.dtype(), "values", true, api);
    check_info_operand(info, batch.info, "info", api);
    if (options.vectors) {
        check_operand(vectors, vectors_layout.shape(), batch.dtype, "vectors", true, api);
        if (!same_operand(a, vectors)) check_apart(vectors, "vectors", a, "a", api);
        check_apart(values, "values", vectors, "vectors", api);
        check_apart(info, "info", vectors, "vectors", api);
    } else if (vectors.data() != nullptr) {
        throw_invalid("vectors: given, but the plan computes values only (options.vectors is false); pass TensorView{}",
                      api);
    }
    check_apart(values, "values", a, "a", api);
    check_apart(info, "info", a, "a", api);
    check_apart(info, "info", values, "values", api);
    const bool by_value = options.range == linalg::EighRange::value;
    const bool no_counts = counts.data() == nullptr && counts.rank() == 0;  // TensorView{}
    if (by_value && no_counts)
        throw_invalid(
            fmt::format("counts: none given, and the plan finds the eigenvalues in (low, high] (options.range "
                        "is value); pass an i32 tensor of shape {} to the execute that takes counts",
                        gpumath::to_string(batch.info.shape())),
            api);
    if (!by_value && !no_counts)
        throw_invalid(fmt::format("counts: given, but only a plan of EighRange::value writes counts (options.range is "
                                  "{}); pass TensorView{{}} or use the execute without counts",
                                  to_string(options.range)),
                      api);
    if (by_value) {
        check_info_operand(counts, batch.info, "counts", api);
        check_apart(counts, "counts", a, "a", api);
        check_apart(counts, "counts", values, "values", api);
        check_apart(counts, "counts", info, "info", api);
        if (options.vectors) check_apart(counts, "counts", vectors, "vectors", api);
    }
    if (empty_batch_done(batch, info, stream)) {
        if (by_value && batch.count > 0)
            check(cudaMemsetAsync(counts.data(), 0, std::size_t(batch.count) * sizeof(int), stream.handle()),
                  "cudaMemsetAsync", "writing the counts of empty matrices");
        return;
    }
    plan();
    // syevd and Xsyevdx wait on the host inside (cuSOLVER reports an internal error when captured);
    // the batched routines are stream work only.
    if (options.range != linalg::EighRange::all && capturing(stream))
        throw_not_supported(fmt::format("the stream is capturing a CUDA graph, and a range (options.range {}) runs "
                                        "cuSOLVER's Xsyevdx, which returns the number of eigenvalues to the host and "
                                        "cannot be captured; compute all eigenvalues to capture",
                                        to_string(options.range)),
                            api);
    if (backend == linalg::Backend::looped && capturing(stream))
        throw_not_supported(
            "the stream is capturing a CUDA graph, and the looped backend (cuSOLVER's syevd) cannot be captured; plan "
            "with Backend::batched (XsyevBatched) or, for n <= 32, Backend::warp or Backend::jacobi_batched to capture",
            api);
    check_plan_device(device, api);
    if (options.range != linalg::EighRange::all) {
        run_range(a, values, vectors, info, counts, stream);
    } else {
        run(backend, a, values, vectors, info, stream);
    }
}

}  // namespace gpumath::detail

namespace gpumath::linalg {

using detail::EighImpl;

Eigh::Eigh(const TensorLayout& a, const EighOptions& options) : impl_(std::make_unique<EighImpl>()) {
    const char* api = detail::plan_api;
    detail::check_triangle(options.triangle, "options.triangle", api);
    detail::check_backend(options.backend, "options.backend", api);
    detail::check_enum(options.range, eigh_range_count, "a linalg::EighRange", "options.range", api);
    impl_->batch = detail::square_batch(a, api);
    impl_->options = options;
    impl_->backend = options.backend;
    impl_->set_range(api);
    if (options.backend == Backend::warp) detail::check_small_backend(detail::SmallOp::eigh, impl_->batch, api);
    if (options.backend == Backend::jacobi_batched && !detail::jacobi_fits(impl_->batch))
        detail::throw_not_supported(
            fmt::format("options.backend: jacobi_batched runs syevjBatched, for n <= 32 and at most {} matrices; this "
                        "plan has n {} and {} matrices (use batched, looped or automatic)",
                        INT_MAX, impl_->batch.n, impl_->batch.count),
            api);
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
    impl(api).execute(api, a, values, vectors, info, TensorView(), stream);
}

void Eigh::execute(const TensorView& a, const TensorView& values, const TensorView& vectors, const TensorView& info,
                   const TensorView& counts, core::StreamRef stream) {
    const char* api = "linalg::Eigh::execute";
    impl(api).execute(api, a, values, vectors, info, counts, stream);
}

const TensorLayout& Eigh::layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->batch.a : empty;
}

const TensorLayout& Eigh::values_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->values_layout : empty;
}

const TensorLayout& Eigh::vectors_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->vectors_layout : empty;
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
    const std::size_t lanes = impl_->options.range != EighRange::all
                                  ? 1
                                  : std::size_t(std::min<std::int64_t>(batch.count, detail::Lanes::max_lanes));
    const std::size_t solver =
        std::max({lanes * detail::aligned_bytes(impl_->single_bytes), detail::aligned_bytes(impl_->batched_bytes),
                  detail::aligned_bytes(impl_->jacobi_bytes)});
    return detail::aligned_bytes(std::size_t(batch.count * batch.n * batch.n) * size_of(batch.dtype)) +
           detail::aligned_bytes(std::size_t(batch.count * batch.n) * size_of(detail::real_of(batch.dtype))) + solver;
}

}  // namespace gpumath::linalg
