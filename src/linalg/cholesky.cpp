// SPDX-License-Identifier: Apache-2.0
// The Cholesky plan: potrf (64-bit API, looped over the batch) or potrfBatched, and potrs.
#include <gpumath/linalg/cholesky.hpp>

#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/tensor.hpp>
#include <gpumath/tensor_ops.hpp>
#include "detail/status.hpp"
#include "linalg/choice.hpp"
#include "linalg/cholesky_impl.hpp"
#include "linalg/cusolver.hpp"
#include "linalg/kernels.hpp"
#include "linalg/lanes.hpp"
#include "linalg/small.hpp"

namespace gpumath::detail {
namespace {

constexpr const char* plan_api = "linalg::Cholesky";

/// Largest n (times batch) whose scratch `automatic` measures on; larger batches run looped.
constexpr std::int64_t measured_elements = std::int64_t(1) << 26;
constexpr std::int64_t measured_n = 1024;

std::size_t potrf_bytes(int device, const SquareBatch& b, std::int64_t ld, cublasFillMode_t fill, std::size_t& host) {
    const SolverHandle h(device, nullptr);
    std::size_t dev = 0;
    const cudaDataType t = to_cuda(b.dtype);
    check_cusolver(cusolverDnXpotrf_bufferSize(h.get(), h.params(), fill, b.n, t, nullptr, ld, t, &dev, &host),
                   "cusolverDnXpotrf_bufferSize", "sizing a Cholesky factorization");
    return dev;
}

cusolverStatus_t potrf_batched(cusolverDnHandle_t h, DataType t, cublasFillMode_t fill, int n, void** ptrs, int ld,
                               int* info, int count) {
    switch (t) {
        case DataType::f64:
            return cusolverDnDpotrfBatched(h, fill, n, reinterpret_cast<double**>(ptrs), ld, info, count);
        case DataType::c32:
            return cusolverDnCpotrfBatched(h, fill, n, reinterpret_cast<cuComplex**>(ptrs), ld, info, count);
        case DataType::c64:
            return cusolverDnZpotrfBatched(h, fill, n, reinterpret_cast<cuDoubleComplex**>(ptrs), ld, info, count);
        default:
            return cusolverDnSpotrfBatched(h, fill, n, reinterpret_cast<float**>(ptrs), ld, info, count);
    }
}

}  // namespace

void CholeskyImpl::plan_locked() {
    start_planning(options.memory_resource);
    const cublasFillMode_t fill = fill_mode(options.triangle, false);
    device_bytes = potrf_bytes(device, batch, std::max<std::int64_t>(batch.n, 1), fill, host_bytes);
    size_host(host_bytes);
    backend = options.backend;
    if (backend == linalg::Backend::automatic) {
        std::vector<linalg::Backend> candidates{linalg::Backend::looped};
        if (fits_int(batch.n) && fits_int(batch.count)) candidates.push_back(linalg::Backend::batched);
        if (small_kernel_supported(SmallOp::cholesky, batch.dtype, batch.n))
            candidates.push_back(linalg::Backend::warp);
        const bool measure = batch.count > 1 && candidates.size() > 1 && batch.n <= measured_n &&
                             batch.n * batch.n * batch.count <= measured_elements;
        backend = linalg::Backend::looped;
        if (measure) {
            const ChoiceKey key{"cholesky", batch.dtype, batch.n, batch.count, device_model(device)};
            const TensorLayout packed = packed_column_major(batch.dtype, batch.a.shape());
            Tensor a, f, info;
            backend = measured_backend(
                key, candidates,
                [&](core::StreamRef s) {
                    // Symmetric with entries in [-1, 1] and n added to the diagonal: positive definite.
                    a = Tensor::empty(packed, s, options.memory_resource);
                    f = Tensor::empty(packed, s, options.memory_resource);
                    info = Tensor::empty(batch.info, s, options.memory_resource);
                    const TensorView av(a.data(), packed);
                    fill_random(av, s);
                    add_diagonal(matrix_params(av, batch.count), batch.dtype, double(batch.n), s);
                },
                [&](linalg::Backend with, core::StreamRef s) {
                    factorize(with, TensorView(a.data(), packed), TensorView(f.data(), packed), info, s);
                },
                [&] {
                    a = Tensor();
                    f = Tensor();
                    info = Tensor();
                });
        }
    }
}

void CholeskyImpl::factorize(linalg::Backend with, const TensorView& a, const TensorView& factor,
                             const TensorView& info, core::StreamRef stream) {
    if (with == linalg::Backend::warp) {  // reads a and writes factor where they are
        small_cholesky(batch, a, factor, static_cast<int*>(info.data()), options.triangle == linalg::Triangle::upper,
                       stream);
        return;
    }
    const std::int64_t n = batch.n, count = batch.count;
    const std::size_t elem = size_of(batch.dtype);
    const Storage fs = storage_of(factor);
    const bool temp = !fs.direct;
    const bool batched = with == linalg::Backend::batched && count > 1;
    const int lanes_wanted = batched ? 1 : int(std::min<std::int64_t>(count, Lanes::max_lanes));
    const std::size_t temp_bytes = temp ? aligned_bytes(std::size_t(count * n * n) * elem) : 0;
    const std::size_t ptr_bytes = batched ? aligned_bytes(std::size_t(count) * sizeof(void*)) : 0;
    std::size_t per_lane = aligned_bytes(device_bytes);
    const Storage ts =
        temp ? Storage{.direct = true, .row_major = false, .ld = std::max<std::int64_t>(n, 1), .batch_stride = n * n}
             : fs;
    const cublasFillMode_t fill = fill_mode(options.triangle, ts.row_major);
    std::size_t host_needed = host_bytes;
    if (!batched && ts.ld != std::max<std::int64_t>(n, 1))
        per_lane = aligned_bytes(potrf_bytes(device, batch, ts.ld, fill, host_needed));
    const StreamWorkspace::Lease lease =
        workspace->acquire(temp_bytes + ptr_bytes + per_lane * std::size_t(lanes_wanted), stream);
    auto* area = static_cast<std::byte*>(lease.data);
    const TensorView target = temp ? TensorView(area, packed_column_major(batch.dtype, batch.a.shape())) : factor;
    if (!same_operand(a, target)) detail::copy_matrices(a, target, stream);
    auto* data = static_cast<std::byte*>(target.data());
    int* infos = static_cast<int*>(info.data());
    if (batched) {
        void** ptrs = reinterpret_cast<void**>(area + temp_bytes);
        batch_pointers(data, ts.batch_stride * std::int64_t(elem), count, ptrs, stream);
        if (!fits_int(ts.ld))
            throw_not_supported(fmt::format("factor: leading dimension {} is above potrfBatched's int range", ts.ld),
                                plan_api);
        const SolverHandle h(device, stream.handle());
        check_cusolver(potrf_batched(h.get(), batch.dtype, fill, int(n), ptrs, int(ts.ld), infos, int(count)),
                       "cusolverDnXpotrfBatched", "a batched Cholesky factorization");
    } else {
        std::unique_lock lock(host_mutex);  // the host workspaces
        grow_host_workspaces(host, host_needed);
        Lanes lanes(device, stream, count, true);
        const cudaDataType t = to_cuda(batch.dtype);
        for (std::int64_t b = 0; b < count; ++b) {
            const int l = lanes.lane_of(b);
            const SolverHandle& h = lanes.handle(l);
            std::byte* ws = area + temp_bytes + ptr_bytes + per_lane * std::size_t(l);
            check_cusolver(
                cusolverDnXpotrf(h.get(), h.params(), fill, n, t, data + b * ts.batch_stride * std::int64_t(elem),
                                 ts.ld, t, ws, per_lane, host[std::size_t(l)].data(), host_needed, infos + b),
                "cusolverDnXpotrf", "a Cholesky factorization");
        }
        lanes.join();
    }
    if (temp) detail::copy_matrices(target, factor, stream);
}

}  // namespace gpumath::detail

namespace gpumath::linalg {

using detail::CholeskyImpl;

Cholesky::Cholesky(const TensorLayout& a, const CholeskyOptions& options) : impl_(std::make_unique<CholeskyImpl>()) {
    const char* api = detail::plan_api;
    detail::check_triangle(options.triangle, "options.triangle", api);
    detail::check_backend(options.backend, "options.backend", api);
    impl_->batch = detail::square_batch(a, api);
    impl_->options = options;
    impl_->backend = options.backend;
    if (options.backend == Backend::batched && (impl_->batch.n > INT_MAX || impl_->batch.count > INT_MAX))
        detail::throw_not_supported(
            fmt::format("options.backend: batched runs potrfBatched, whose n and batch are int; "
                        "this plan has n {} and {} matrices (use looped or automatic)",
                        impl_->batch.n, impl_->batch.count),
            api);
    if (options.backend == Backend::warp) detail::check_small_backend(detail::SmallOp::cholesky, impl_->batch, api);
}

Cholesky::~Cholesky() = default;
Cholesky::Cholesky(Cholesky&&) noexcept = default;
Cholesky& Cholesky::operator=(Cholesky&&) noexcept = default;

CholeskyImpl& Cholesky::impl(const char* api) const {
    if (!impl_) detail::throw_moved_from("linalg::Cholesky", api);
    return *impl_;
}

void Cholesky::plan() { impl("linalg::Cholesky::plan").plan(); }

bool Cholesky::planned() const noexcept { return impl_ && impl_->planned.load(std::memory_order_acquire); }

void Cholesky::factorize(const TensorView& a, const TensorView& factor, const TensorView& info,
                         core::StreamRef stream) {
    const char* api = "linalg::Cholesky::factorize";
    CholeskyImpl& state = impl(api);
    const detail::SquareBatch& batch = state.batch;
    detail::check_operand(a, batch.a.shape(), batch.dtype, "a", false, api);
    detail::check_operand(factor, batch.a.shape(), batch.dtype, "factor", true, api);
    detail::check_info_operand(info, batch.info, "info", api);
    if (!detail::same_operand(a, factor)) detail::check_apart(factor, "factor", a, "a", api);
    detail::check_apart(info, "info", a, "a", api);
    detail::check_apart(info, "info", factor, "factor", api);
    if (detail::empty_batch_done(batch, info, stream)) return;
    state.ensure_planned(api);
    state.factorize(state.backend, a, factor, info, stream);
}

void Cholesky::solve(const TensorView& factor, const TensorView& b, const TensorView& x, core::StreamRef stream) {
    const char* api = "linalg::Cholesky::solve";
    CholeskyImpl& state = impl(api);
    const detail::SquareBatch& batch = state.batch;
    detail::check_operand(factor, batch.a.shape(), batch.dtype, "factor", false, api);
    const detail::RightHandSides r = detail::right_hand_sides(batch, b, x, api);
    detail::check_apart(x, "x", factor, "factor", api);
    const std::int64_t k = r.k;
    if (batch.count == 0 || batch.n == 0 || k == 0) return;
    state.ensure_planned(api);

    // The factor where it is when cuSOLVER can read it there (a row-major complex factor is the
    // conjugate of what potrs would read, so it is copied), x likewise.
    const std::size_t elem = size_of(batch.dtype);
    const bool complex = batch.dtype == DataType::c32 || batch.dtype == DataType::c64;
    detail::Storage fs = detail::storage_of(factor);
    const bool factor_temp = !fs.direct || (fs.row_major && complex);
    const bool x_temp = r.temp;
    detail::Storage xs = r.storage;
    const std::size_t factor_bytes =
        factor_temp ? detail::aligned_bytes(std::size_t(batch.count * batch.n * batch.n) * elem) : 0;
    const std::size_t x_bytes = x_temp ? detail::aligned_bytes(std::size_t(batch.count * batch.n * k) * elem) : 0;
    const std::size_t info_bytes = detail::aligned_bytes(std::size_t(batch.count) * sizeof(int));
    const detail::StreamWorkspace::Lease lease = state.workspace->acquire(factor_bytes + x_bytes + info_bytes, stream);
    auto* area = static_cast<std::byte*>(lease.data);
    TensorView f = factor;
    if (factor_temp) {
        f = TensorView(area, detail::packed_column_major(batch.dtype, batch.a.shape()));
        detail::copy_matrices(factor, f, stream);
        fs = {.direct = true, .row_major = false, .ld = batch.n, .batch_stride = batch.n * batch.n};
    }
    TensorView target = x;
    if (x_temp) {
        target = TensorView(area + factor_bytes, r.packed_layout);
        xs = r.packed;
    }
    if (!detail::same_operand(b, target)) detail::copy_matrices(b, target, stream);
    int* infos = reinterpret_cast<int*>(area + factor_bytes + x_bytes);
    const cublasFillMode_t fill = detail::fill_mode(state.options.triangle, fs.row_major);
    const cudaDataType t = to_cuda(batch.dtype);
    auto* fdata = static_cast<const std::byte*>(f.data());
    auto* xdata = static_cast<std::byte*>(target.data());
    {
        detail::Lanes lanes(state.device, stream, batch.count, true);
        for (std::int64_t m = 0; m < batch.count; ++m) {
            const detail::SolverHandle& h = lanes.handle(lanes.lane_of(m));
            detail::check_cusolver(cusolverDnXpotrs(h.get(), h.params(), fill, batch.n, k, t,
                                                    fdata + m * fs.batch_stride * std::int64_t(elem), fs.ld, t,
                                                    xdata + m * xs.batch_stride * std::int64_t(elem), xs.ld, infos + m),
                                   "cusolverDnXpotrs", "a Cholesky solve");
        }
        lanes.join();
    }
    if (x_temp) detail::copy_matrices(target, x, stream);
}

const TensorLayout& Cholesky::layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->batch.a : empty;
}

const TensorLayout& Cholesky::info_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->batch.info : empty;
}

const CholeskyOptions& Cholesky::options() const noexcept {
    static const CholeskyOptions empty;
    return impl_ ? impl_->options : empty;
}

Backend Cholesky::backend() const noexcept {
    if (!impl_) return Backend::automatic;
    return planned() ? impl_->backend : impl_->options.backend;
}

std::size_t Cholesky::workspace_size() const noexcept {
    if (!planned()) return 0;
    const detail::SquareBatch& batch = impl_->batch;
    const std::size_t lanes = std::size_t(std::min<std::int64_t>(batch.count, detail::Lanes::max_lanes));
    return detail::aligned_bytes(std::size_t(batch.count * batch.n * batch.n) * size_of(batch.dtype)) +
           detail::aligned_bytes(std::size_t(batch.count) * sizeof(void*)) +
           lanes * detail::aligned_bytes(impl_->device_bytes);
}

}  // namespace gpumath::linalg
