// SPDX-License-Identifier: Apache-2.0
// The LU plan: getrf and getrs (64-bit API) looped over the batch, cuBLAS's getrfBatched and
// getrsBatched (Backend::batched, lu_batched.cpp) or the warp kernel; the caller's pivots are 32-bit.
#include <gpumath/linalg/lu.hpp>

#include <algorithm>
#include <climits>
#include <atomic>
#include <initializer_list>
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
#include "linalg/kernels.hpp"
#include "linalg/lanes.hpp"
#include "linalg/lu_impl.hpp"
#include "linalg/small.hpp"

namespace gpumath::detail {
namespace {

constexpr const char* plan_api = "linalg::LU";
/// Largest n (times batch) whose scratch `automatic` measures on; larger batches run looped.
constexpr std::int64_t measured_elements = std::int64_t(1) << 26;
constexpr std::int64_t measured_n = 1024;

/// A size an execution hands cuBLAS's batched routines as an int.
struct IntSize {
    const char* what;
    std::int64_t value;
};

/// Whether Backend::batched can take `sizes` (all at most INT_MAX). When the plan asked for
/// `batched` by name and one is above, NotSupported naming it; under `automatic` the call runs
/// looped instead.
bool batched_takes(const LUImpl& state, std::initializer_list<IntSize> sizes, const char* api) {
    for (const IntSize& size : sizes) {
        if (fits_int(size.value)) continue;
        if (state.options.backend == linalg::Backend::batched)
            throw_not_supported(fmt::format("{} is {}, above INT_MAX ({}): Backend::batched runs cuBLAS's "
                                            "getrfBatched and getrsBatched, whose sizes are int; use looped or "
                                            "automatic",
                                            size.what, size.value, INT_MAX),
                                api);
        return false;
    }
    return true;
}

/// The backend an execution runs: the planned one, looped where batched cannot take its sizes and
/// for a single matrix (which every plan runs on the single-matrix routine).
linalg::Backend running(const LUImpl& state, bool batched_ok) {
    const bool batched = state.backend == linalg::Backend::batched && batched_ok && state.batch.count > 1;
    return state.backend == linalg::Backend::batched && !batched ? linalg::Backend::looped : state.backend;
}

}  // namespace

void LUImpl::plan_locked() {
    start_planning(options.memory_resource);
    const cudaDataType t = to_cuda(batch.dtype);
    const SolverHandle h(device, nullptr);
    check_cusolver(cusolverDnXgetrf_bufferSize(h.get(), h.params(), batch.n, batch.n, t, nullptr,
                                               std::max<std::int64_t>(batch.n, 1), t, &device_bytes, &host_bytes),
                   "cusolverDnXgetrf_bufferSize", "sizing an LU factorization");
    size_host(host_bytes);
    backend = options.backend;
    if (backend != linalg::Backend::automatic) return;
    backend = linalg::Backend::looped;
    std::vector<linalg::Backend> candidates{linalg::Backend::looped};
    if (fits_int(batch.n) && fits_int(batch.count)) candidates.push_back(linalg::Backend::batched);
    if (small_kernel_supported(SmallOp::lu, batch.dtype, batch.n)) candidates.push_back(linalg::Backend::warp);
    if (batch.count <= 1 || batch.n == 0 || candidates.size() < 2 || batch.n > measured_n ||
        batch.n * batch.n * batch.count > measured_elements)
        return;
    const ChoiceKey key{"lu", batch.dtype, batch.n, batch.count, device_model(device)};
    const TensorLayout packed = packed_column_major(batch.dtype, batch.a.shape());
    const Storage s{.direct = true, .row_major = false, .ld = batch.n, .batch_stride = batch.n * batch.n};
    Tensor a, f, pivots, info;
    backend = measured_backend(
        key, candidates,
        [&](core::StreamRef st) {
            a = Tensor::empty(packed, st, options.memory_resource);
            f = Tensor::empty(packed, st, options.memory_resource);
            pivots = Tensor::empty(pivots_layout, st, options.memory_resource);
            info = Tensor::empty(batch.info, st, options.memory_resource);
            const TensorView av(a.data(), packed);
            fill_random(av, st);
            add_diagonal(matrix_params(av, batch.count), batch.dtype, double(batch.n) / 4, st);
        },
        [&](linalg::Backend with, core::StreamRef st) {
            factorize(with, TensorView(a.data(), packed), TensorView(f.data(), packed), s,
                      static_cast<int*>(pivots.data()), static_cast<int*>(info.data()), st);
        },
        [&] {
            a = Tensor();
            f = Tensor();
            pivots = Tensor();
            info = Tensor();
        });
}

void LUImpl::factorize(linalg::Backend with, const TensorView& a, const TensorView& lu, const Storage& s, int* pivots,
                       int* info, core::StreamRef stream) {
    if (with == linalg::Backend::warp) {
        // The matrices cuSOLVER would factorize: lu's memory seen column-major (Aᵀ for row-major).
        small_lu(batch, s.row_major ? a.transposed() : a, s.row_major ? lu.transposed() : lu, pivots, info, stream);
        return;
    }
    const std::int64_t n = batch.n, count = batch.count;
    const std::size_t elem = size_of(batch.dtype);
    if (with == linalg::Backend::batched) {  // in place in lu, through an array of its matrices' addresses
        const StreamWorkspace::Lease lease =
            workspace->acquire(aligned_bytes(std::size_t(count) * sizeof(void*)), stream);
        if (!same_operand(a, lu)) detail::copy_matrices(a, lu, stream);
        auto** ptrs = static_cast<void**>(lease.data);
        batch_pointers(lu.data(), s.batch_stride * std::int64_t(elem), count, ptrs, stream);
        getrf_batched(device, batch.dtype, int(n), ptrs, int(s.ld), pivots, info, int(count), stream);
        return;
    }
    const int lanes_wanted = int(std::min<std::int64_t>(count, Lanes::max_lanes));
    std::size_t per_lane = aligned_bytes(device_bytes), host_needed = host_bytes;
    const cudaDataType t = to_cuda(batch.dtype);
    if (s.ld != std::max<std::int64_t>(n, 1)) {
        const SolverHandle h(device, nullptr);
        std::size_t dev = 0;
        check_cusolver(cusolverDnXgetrf_bufferSize(h.get(), h.params(), n, n, t, nullptr, s.ld, t, &dev, &host_needed),
                       "cusolverDnXgetrf_bufferSize", "sizing an LU factorization");
        per_lane = aligned_bytes(dev);
    }
    const std::size_t pivot_bytes = aligned_bytes(std::size_t(count * n) * sizeof(std::int64_t));
    const StreamWorkspace::Lease lease = workspace->acquire(pivot_bytes + per_lane * std::size_t(lanes_wanted), stream);
    auto* area = static_cast<std::byte*>(lease.data);
    auto* wide = reinterpret_cast<std::int64_t*>(area);
    if (!same_operand(a, lu)) detail::copy_matrices(a, lu, stream);
    auto* data = static_cast<std::byte*>(lu.data());
    {
        std::lock_guard lock(host_mutex);  // the host workspaces
        grow_host_workspaces(host, host_needed);
        Lanes lanes(device, stream, count, true);
        for (std::int64_t b = 0; b < count; ++b) {
            const int l = lanes.lane_of(b);
            const SolverHandle& h = lanes.handle(l);
            check_cusolver(
                cusolverDnXgetrf(h.get(), h.params(), n, n, t, data + b * s.batch_stride * std::int64_t(elem), s.ld,
                                 wide + b * n, t, area + pivot_bytes + per_lane * std::size_t(l), per_lane,
                                 host[std::size_t(l)].data(), host_needed, info + b),
                "cusolverDnXgetrf", "an LU factorization");
        }
        lanes.join();
    }
    convert_pivots(wide, pivots, count * n, true, stream);
}

void LUImpl::solve(linalg::Backend with, const TensorView& lu, const Storage& fs, const int* pivots,
                   const TensorView& b, const TensorView& x, const RightHandSides& r, core::StreamRef stream) {
    const std::int64_t n = batch.n, count = batch.count;
    const std::size_t elem = size_of(batch.dtype);
    const bool batched = with == linalg::Backend::batched;
    const std::size_t x_bytes = r.temp ? aligned_bytes(std::size_t(count * n * r.k) * elem) : 0;
    const std::size_t ptr_bytes = aligned_bytes(std::size_t(count) * sizeof(void*));
    // Batched: two arrays of addresses; looped: 64-bit pivots and getrs's infos.
    const std::size_t pivot_bytes = batched ? 0 : aligned_bytes(std::size_t(count * n) * sizeof(std::int64_t));
    const std::size_t rest_bytes = batched ? 2 * ptr_bytes : aligned_bytes(std::size_t(count) * sizeof(int));
    const StreamWorkspace::Lease lease = workspace->acquire(pivot_bytes + x_bytes + rest_bytes, stream);
    auto* area = static_cast<std::byte*>(lease.data);
    const Storage xs = r.temp ? r.packed : r.storage;
    const TensorView target = r.temp ? TensorView(area + pivot_bytes, r.packed_layout) : x;
    if (!same_operand(b, target)) detail::copy_matrices(b, target, stream);
    // A row-major lu holds Aᵀ's factors: solve with the transpose (not the adjoint: the memory of a
    // row-major complex A is its plain transpose).
    const cublasOperation_t op = fs.row_major ? CUBLAS_OP_T : CUBLAS_OP_N;
    const auto* fdata = static_cast<const std::byte*>(lu.data());
    auto* xdata = static_cast<std::byte*>(target.data());
    if (batched) {
        auto** fptrs = reinterpret_cast<void**>(area + x_bytes);
        auto** xptrs = reinterpret_cast<void**>(area + x_bytes + ptr_bytes);
        batch_pointers(lu.data(), fs.batch_stride * std::int64_t(elem), count, fptrs, stream);
        batch_pointers(xdata, xs.batch_stride * std::int64_t(elem), count, xptrs, stream);
        getrs_batched(device, batch.dtype, op, int(n), int(r.k), fptrs, int(fs.ld), pivots, xptrs, int(xs.ld),
                      int(count), stream);
    } else {
        auto* wide = reinterpret_cast<std::int64_t*>(area);
        convert_pivots(pivots, wide, count * n, false, stream);
        int* infos = reinterpret_cast<int*>(area + pivot_bytes + x_bytes);
        const cudaDataType t = to_cuda(batch.dtype);
        Lanes lanes(device, stream, count, true);
        for (std::int64_t m = 0; m < count; ++m) {
            const SolverHandle& h = lanes.handle(lanes.lane_of(m));
            check_cusolver(cusolverDnXgetrs(h.get(), h.params(), op, n, r.k, t,
                                            fdata + m * fs.batch_stride * std::int64_t(elem), fs.ld, wide + m * n, t,
                                            xdata + m * xs.batch_stride * std::int64_t(elem), xs.ld, infos + m),
                           "cusolverDnXgetrs", "an LU solve");
        }
        lanes.join();
    }
    if (r.temp) detail::copy_matrices(target, x, stream);
}

}  // namespace gpumath::detail

namespace gpumath::linalg {

using detail::LUImpl;

LU::LU(const TensorLayout& a, const LUOptions& options) : impl_(std::make_unique<LUImpl>()) {
    const char* api = detail::plan_api;
    detail::check_backend(options.backend, "options.backend", api);
    impl_->batch = detail::square_batch(a, api);
    if (options.backend == Backend::batched &&
        (!detail::fits_int(impl_->batch.n) || !detail::fits_int(impl_->batch.count)))
        detail::throw_not_supported(
            fmt::format("options.backend: batched runs cuBLAS's getrfBatched and getrsBatched, whose n and batch "
                        "are int (at most INT_MAX, {}); this plan has n {} and {} matrices (use looped or automatic)",
                        INT_MAX, impl_->batch.n, impl_->batch.count),
            api);
    impl_->options = options;
    impl_->backend = options.backend;
    impl_->pivots_layout = TensorLayout(DataType::i32, a.shape().first(std::size_t(a.rank() - 1)));
    if (options.backend == Backend::warp) detail::check_small_backend(detail::SmallOp::lu, impl_->batch, api);
}

LU::~LU() = default;
LU::LU(LU&&) noexcept = default;
LU& LU::operator=(LU&&) noexcept = default;

LUImpl& LU::impl(const char* api) const {
    if (!impl_) detail::throw_moved_from("linalg::LU", api);
    return *impl_;
}

void LU::plan() { impl("linalg::LU::plan").plan(); }

bool LU::planned() const noexcept { return impl_ && impl_->planned.load(std::memory_order_acquire); }

void LU::factorize(const TensorView& a, const TensorView& lu, const TensorView& pivots, const TensorView& info,
                   core::StreamRef stream) {
    const char* api = "linalg::LU::factorize";
    LUImpl& state = impl(api);
    const detail::SquareBatch& batch = state.batch;
    detail::check_operand(a, batch.a.shape(), batch.dtype, "a", false, api);
    detail::check_operand(lu, batch.a.shape(), batch.dtype, "lu", true, api);
    detail::check_info_operand(pivots, state.pivots_layout, "pivots", api);
    detail::check_info_operand(info, batch.info, "info", api);
    const detail::Storage s = detail::storage_of(lu);
    if (!s.direct)
        detail::throw_invalid(fmt::format("lu: strides {} give neither unit stride along rows nor along columns with "
                                          "one stride between matrices; cuSOLVER factorizes in place, so give lu such "
                                          "a layout (a contiguous tensor, or its transpose)",
                                          gpumath::to_string(lu.strides())),
                              api);
    if (!detail::same_operand(a, lu)) detail::check_apart(lu, "lu", a, "a", api);
    detail::check_apart(pivots, "pivots", a, "a", api);
    detail::check_apart(pivots, "pivots", lu, "lu", api);
    detail::check_apart(info, "info", a, "a", api);
    detail::check_apart(info, "info", lu, "lu", api);
    detail::check_apart(info, "info", pivots, "pivots", api);
    if (detail::empty_batch_done(batch, info, stream)) return;
    const bool batched_ok = state.options.backend == Backend::looped || state.options.backend == Backend::warp ||
                            batch.count <= 1 ||
                            detail::batched_takes(state, {{"lu: the leading dimension", s.ld}}, api);
    state.ensure_planned(api);
    state.factorize(detail::running(state, batched_ok), a, lu, s, static_cast<int*>(pivots.data()),
                    static_cast<int*>(info.data()), stream);
}

void LU::solve(const TensorView& lu, const TensorView& pivots, const TensorView& b, const TensorView& x,
               core::StreamRef stream) {
    const char* api = "linalg::LU::solve";
    LUImpl& state = impl(api);
    const detail::SquareBatch& batch = state.batch;
    detail::check_operand(lu, batch.a.shape(), batch.dtype, "lu", false, api);
    detail::check_info_operand(pivots, state.pivots_layout, "pivots", api);
    const detail::Storage fs = detail::storage_of(lu);
    if (!fs.direct)
        detail::throw_invalid(fmt::format("lu: strides {} are not a layout factorize writes (unit stride along rows "
                                          "or columns, one stride between matrices)",
                                          gpumath::to_string(lu.strides())),
                              api);
    const detail::RightHandSides r = detail::right_hand_sides(batch, b, x, api);
    detail::check_apart(x, "x", lu, "lu", api);
    detail::check_apart(x, "x", pivots, "pivots", api);
    if (batch.count == 0 || batch.n == 0 || r.k == 0) return;
    const bool batched_ok = state.options.backend == Backend::looped || state.options.backend == Backend::warp ||
                            batch.count <= 1 ||
                            detail::batched_takes(state,
                                                  {{"lu: the leading dimension", fs.ld},
                                                   {"b: the number of right-hand sides", r.k},
                                                   {"x: the leading dimension", r.temp ? batch.n : r.storage.ld}},
                                                  api);
    state.ensure_planned(api);
    state.solve(detail::running(state, batched_ok), lu, fs, static_cast<const int*>(pivots.data()), b, x, r, stream);
}

const TensorLayout& LU::layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->batch.a : empty;
}

const TensorLayout& LU::pivots_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->pivots_layout : empty;
}

const TensorLayout& LU::info_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->batch.info : empty;
}

const LUOptions& LU::options() const noexcept {
    static const LUOptions empty;
    return impl_ ? impl_->options : empty;
}

Backend LU::backend() const noexcept {
    if (!impl_) return Backend::automatic;
    return planned() ? impl_->backend : impl_->options.backend;
}

std::size_t LU::workspace_size() const noexcept {
    if (!planned()) return 0;
    const detail::SquareBatch& batch = impl_->batch;
    if (impl_->backend == Backend::batched && batch.count > 1)
        return detail::aligned_bytes(std::size_t(batch.count) * sizeof(void*));
    const std::size_t lanes = std::size_t(std::min<std::int64_t>(batch.count, detail::Lanes::max_lanes));
    return detail::aligned_bytes(std::size_t(batch.count * batch.n) * sizeof(std::int64_t)) +
           lanes * detail::aligned_bytes(impl_->device_bytes);
}

}  // namespace gpumath::linalg
