// SPDX-License-Identifier: Apache-2.0
// The Eig plan: Xgeev (64-bit API) looped over the batch, and the complex vectors of real matrices
// unpacked from LAPACK's real packing by gpumath's own kernel.
#include <gpumath/linalg/eig.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/linalg/info.hpp>
#include <gpumath/tensor.hpp>
#include <gpumath/tensor_ops.hpp>
#include "core/stream_workspace.hpp"
#include "detail/enum_check.hpp"
#include "detail/status.hpp"
#include "linalg/cusolver.hpp"
#include "linalg/eig_kernels.hpp"
#include "linalg/lanes.hpp"
#include "linalg/matrices.hpp"
#include "linalg/plan_state.hpp"

namespace gpumath::detail {
namespace {

constexpr const char* plan_api = "linalg::Eig";

bool complex_dtype(DataType t) noexcept { return t == DataType::c32 || t == DataType::c64; }

/// The complex dtype of the same precision (c32 for f32 and c32, c64 for f64 and c64).
DataType complex_of(DataType t) noexcept {
    return t == DataType::f64 || t == DataType::c64 ? DataType::c64 : DataType::c32;
}

/// Where a plan's outputs are written for one execution: in the caller's tensors when cuSOLVER (or
/// the unpacking kernel) can address them there, else in workspace.
struct EigTargets {
    bool w_direct = false;      // values: unit stride, one stride between matrices
    std::int64_t w_stride = 0;  // between matrices' values, in complex elements
    bool vr_direct = false;     // vectors hold cuSOLVER's VR: column-major, one stride between matrices
    Storage vr;                 // their storage when direct
    bool out_direct = false;    // unpacked complex vectors written straight into `vectors`
};

}  // namespace

struct EigImpl final : PlanState {
    SquareBatch batch;
    linalg::EigOptions options;
    TensorLayout values_layout;                    // (..., n), complex, row-major
    TensorLayout vectors_layout;                   // A's shape; complex, or A's dtype for real_packed
    std::size_t device_bytes = 0, host_bytes = 0;  // Xgeev per matrix, leading dimensions n

    [[nodiscard]] bool has_vectors() const noexcept { return options.vectors != linalg::EigVectors::none; }
    /// Complex vectors of a real matrix: cuSOLVER writes the real packing, gpumath unpacks it.
    [[nodiscard]] bool unpacks() const noexcept {
        return options.vectors == linalg::EigVectors::complex && !complex_dtype(batch.dtype);
    }
    [[nodiscard]] cusolverEigMode_t jobvr() const noexcept {
        return has_vectors() ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
    }

    /// Xgeev's device and host workspace for a VR leading dimension `ldvr`.
    void sizes(std::int64_t ldvr, std::size_t& dev, std::size_t& host_size) const;
    void plan_locked() override;
    [[nodiscard]] EigTargets targets(const TensorView& values, const TensorView& vectors) const;
    void run(const TensorView& a, const TensorView& values, const TensorView& vectors, const TensorView& info,
             core::StreamRef stream);
};

void EigImpl::sizes(std::int64_t ldvr, std::size_t& dev, std::size_t& host_size) const {
    const SolverHandle h(device, nullptr);
    const std::int64_t ld = std::max<std::int64_t>(batch.n, 1);
    const cudaDataType t = to_cuda(batch.dtype), w = to_cuda(complex_of(batch.dtype));
    check_cusolver(
        cusolverDnXgeev_bufferSize(h.get(), h.params(), CUSOLVER_EIG_MODE_NOVECTOR, jobvr(), batch.n, t, nullptr, ld, w,
                                   nullptr, t, nullptr, ld, t, nullptr, ldvr, t, &dev, &host_size),
        "cusolverDnXgeev_bufferSize", "sizing a general eigendecomposition");
}

void EigImpl::plan_locked() {
    start_planning(options.memory_resource);
    if (batch.n > 0) sizes(batch.n, device_bytes, host_bytes);
    size_host(host_bytes);
}

EigTargets EigImpl::targets(const TensorView& values, const TensorView& vectors) const {
    const std::int64_t n = batch.n, count = batch.count;
    EigTargets t;
    const auto w_stride = uniform_batch_stride(values, batch.batch_rank);
    t.w_direct = (n <= 1 || values.stride(-1) == 1) && w_stride && (count <= 1 || *w_stride >= n);
    t.w_stride = t.w_direct ? w_stride.value_or(0) : n;
    if (!has_vectors()) return t;
    if (unpacks()) {
        t.out_direct = uniform_batch_stride(vectors, batch.batch_rank).has_value();
    } else {
        t.vr = storage_of(vectors);
        // Only with a leading dimension of n: cuSOLVER 12.0's Xgeev fails (INTERNAL_ERROR) on a
        // VR with a larger one, so such vectors go through workspace too.
        t.vr_direct = t.vr.direct && !t.vr.row_major && t.vr.ld == std::max<std::int64_t>(n, 1);
    }
    return t;
}

void EigImpl::run(const TensorView& a, const TensorView& values, const TensorView& vectors, const TensorView& info,
                  core::StreamRef stream) {
    const std::int64_t n = batch.n, count = batch.count, ld = std::max<std::int64_t>(batch.n, 1);
    const DataType t = batch.dtype, ct = complex_of(t);
    const std::size_t elem = size_of(t), celem = size_of(ct);
    const EigTargets at = targets(values, vectors);
    const bool vr_temp = has_vectors() && !at.vr_direct;
    const std::size_t a_bytes = aligned_bytes(std::size_t(count * n * n) * elem);
    const std::size_t w_bytes = at.w_direct ? 0 : aligned_bytes(std::size_t(count * n) * celem);
    const std::size_t vr_bytes = vr_temp ? aligned_bytes(std::size_t(count * n * n) * elem) : 0;
    const std::size_t out_bytes = unpacks() && !at.out_direct ? aligned_bytes(std::size_t(count * n * n) * celem) : 0;
    const std::int64_t ldvr = ld;  // targets() takes vectors in place only with this one
    const std::size_t solver_bytes = device_bytes, host_needed = host_bytes;
    const std::size_t per_lane = aligned_bytes(solver_bytes);
    const int lanes_wanted = 1;  // see the loop below
    const StreamWorkspace::Lease lease =
        workspace->acquire(a_bytes + w_bytes + vr_bytes + out_bytes + per_lane * std::size_t(lanes_wanted), stream);
    auto* area = static_cast<std::byte*>(lease.data);

    // cuSOLVER overwrites A: it works on a packed column-major copy.
    const TensorLayout packed = packed_column_major(t, batch.a.shape());
    detail::copy_matrices(a, TensorView(area, packed), stream);
    const TensorView w = at.w_direct ? values : TensorView(area + a_bytes, values_layout);
    const TensorView vr = !has_vectors() ? TensorView()
                          : vr_temp      ? TensorView(area + a_bytes + w_bytes, packed)
                                         : vectors;
    const std::int64_t vr_step = at.vr_direct ? at.vr.batch_stride : n * n;
    const cudaDataType ta = to_cuda(t), tw = to_cuda(ct);
    auto* adata = area;
    auto* wdata = static_cast<std::byte*>(w.data());
    auto* vrdata = static_cast<std::byte*>(vr.data());
    int* infos = static_cast<int*>(info.data());
    std::byte* ws = area + a_bytes + w_bytes + vr_bytes + out_bytes;
    if (n == 1) {
        // cuSOLVER's Xgeev fails on 1 × 1 matrices (CUSOLVER_STATUS_INTERNAL_ERROR, CUDA 13.0): the
        // eigenvalue is the matrix's one entry, the (unit) eigenvector 1.
        gpumath::cast(TensorView(adata, t, {count}), TensorView(wdata, ct, {count}, {at.w_stride}), stream);
        if (vrdata != nullptr) gpumath::fill(TensorView(vrdata, t, {count}, {vr_step}), 1.0, stream);
        check(cudaMemsetAsync(infos, 0, std::size_t(count) * sizeof(int), stream.handle()), "cudaMemsetAsync",
              "writing the info of 1 × 1 eigendecompositions");
    } else {
        std::lock_guard lock(host_mutex);  // the host workspaces
        grow_host_workspaces(host, host_needed);
        // One lane, the caller's stream: Xgeev waits for the GPU inside, so side streams would
        // overlap nothing.
        Lanes lanes(device, stream, count, false);
        for (std::int64_t b = 0; b < count; ++b) {
            const int l = lanes.lane_of(b);
            const SolverHandle& h = lanes.handle(l);
            check_cusolver(cusolverDnXgeev(h.get(), h.params(), CUSOLVER_EIG_MODE_NOVECTOR, jobvr(), n, ta,
                                           adata + b * n * n * std::int64_t(elem), ld, tw,
                                           wdata + b * at.w_stride * std::int64_t(celem), ta, nullptr, ld, ta,
                                           vrdata == nullptr ? nullptr : vrdata + b * vr_step * std::int64_t(elem),
                                           ldvr, ta, ws + per_lane * std::size_t(l), per_lane,
                                           host[std::size_t(l)].data(), host_needed, infos + b),
                           "cusolverDnXgeev", "a general eigendecomposition");
        }
        lanes.join();
    }
    if (unpacks()) {
        const TensorView out =
            at.out_direct ? vectors
                          : TensorView(area + a_bytes + w_bytes + vr_bytes, packed_column_major(ct, batch.a.shape()));
        const kernels::UnpackParams p{.packed = vr.data(),
                                      .packed_ld = ld,
                                      .packed_batch = n * n,
                                      .values = w.data(),
                                      .values_batch = at.w_stride,
                                      .out = matrix_params(out, count)};
        unpack_vectors(p, real_of(t), stream);
        if (!at.out_direct) detail::copy_matrices(out, vectors, stream);
    } else if (vr_temp) {
        detail::copy_matrices(vr, vectors, stream);
    }
    if (!at.w_direct) detail::copy_matrices(w, values, stream);
}

}  // namespace gpumath::detail

namespace gpumath::linalg {

using detail::EigImpl;

Eig::Eig(const TensorLayout& a, const EigOptions& options) : impl_(std::make_unique<EigImpl>()) {
    const char* api = detail::plan_api;
    detail::check_enum(options.vectors, eig_vectors_count, "a linalg::EigVectors", "options.vectors", api);
    detail::check_backend(options.backend, "options.backend", api);
    if (options.backend == Backend::batched)
        detail::throw_not_supported("options.backend: cuSOLVER has no batched Xgeev; use looped or automatic", api);
    if (options.backend == Backend::warp)
        detail::throw_not_supported(
            "options.backend: warp (gpumath's small-matrix kernel) covers Cholesky, LU and eigh only; use looped or "
            "automatic",
            api);
    impl_->batch = detail::square_batch(a, api);
    const DataType t = impl_->batch.dtype;
    if (options.vectors == EigVectors::real_packed && detail::complex_dtype(t))
        detail::throw_invalid(
            fmt::format("options.vectors: real_packed is the packing of a real matrix's eigenvectors; "
                        "a is {}, whose eigenvectors are complex as they are: use EigVectors::complex",
                        to_string(t)),
            api);
    impl_->options = options;
    const DataType ct = detail::complex_of(t);
    impl_->values_layout = TensorLayout(ct, a.shape().first(std::size_t(a.rank() - 1)));
    if (options.vectors != EigVectors::none)
        impl_->vectors_layout = TensorLayout(options.vectors == EigVectors::real_packed ? t : ct, a.shape());
}

Eig::~Eig() = default;
Eig::Eig(Eig&&) noexcept = default;
Eig& Eig::operator=(Eig&&) noexcept = default;

EigImpl& Eig::impl(const char* api) const {
    if (!impl_) detail::throw_moved_from("linalg::Eig", api);
    return *impl_;
}

void Eig::plan() { impl("linalg::Eig::plan").plan(); }

bool Eig::planned() const noexcept { return impl_ && impl_->planned.load(std::memory_order_acquire); }

void Eig::execute(const TensorView& a, const TensorView& values, const TensorView& vectors, const TensorView& info,
                  core::StreamRef stream) {
    const char* api = "linalg::Eig::execute";
    EigImpl& state = impl(api);
    const detail::SquareBatch& batch = state.batch;
    detail::check_operand(a, batch.a.shape(), batch.dtype, "a", false, api);
    detail::check_operand(values, state.values_layout.shape(), state.values_layout.dtype(), "values", true, api);
    detail::check_info_operand(info, batch.info, "info", api);
    if (state.has_vectors()) {
        detail::check_operand(vectors, state.vectors_layout.shape(), state.vectors_layout.dtype(), "vectors", true,
                              api);
        detail::check_apart(vectors, "vectors", a, "a", api);
        detail::check_apart(values, "values", vectors, "vectors", api);
        detail::check_apart(info, "info", vectors, "vectors", api);
    } else if (vectors.data() != nullptr) {
        detail::throw_invalid(
            "vectors: given, but the plan computes eigenvalues only (options.vectors is none); pass TensorView{}", api);
    }
    detail::check_apart(values, "values", a, "a", api);
    detail::check_apart(info, "info", a, "a", api);
    detail::check_apart(info, "info", values, "values", api);
    if (batch.count == 0) return;
    // Xgeev works on the host too and waits for the GPU inside: it cannot be captured.
    if (detail::capturing(stream))
        detail::throw_not_supported(
            "the stream is capturing a CUDA graph, and cuSOLVER's Xgeev waits for the GPU on the host inside; a "
            "general eigendecomposition cannot be captured (run it outside the capture)",
            api);
    if (detail::empty_batch_done(batch, info, stream)) return;
    state.ensure_planned(api);
    state.run(a, values, vectors, info, stream);
}

const TensorLayout& Eig::layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->batch.a : empty;
}

const TensorLayout& Eig::values_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->values_layout : empty;
}

const TensorLayout& Eig::vectors_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->vectors_layout : empty;
}

const TensorLayout& Eig::info_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->batch.info : empty;
}

const EigOptions& Eig::options() const noexcept {
    static const EigOptions empty;
    return impl_ ? impl_->options : empty;
}

std::size_t Eig::workspace_size() const noexcept {
    if (!planned()) return 0;
    const detail::SquareBatch& batch = impl_->batch;
    const std::size_t matrices = std::size_t(batch.count * batch.n * batch.n);
    const std::size_t elem = size_of(batch.dtype), celem = size_of(detail::complex_of(batch.dtype));
    return 2 * detail::aligned_bytes(matrices * elem) + detail::aligned_bytes(matrices * celem) +
           detail::aligned_bytes(std::size_t(batch.count * batch.n) * celem) +
           detail::aligned_bytes(impl_->device_bytes);
}

void EigResult::check(core::StreamRef stream) const { check_info(info, "linalg::eig", stream); }

}  // namespace gpumath::linalg
