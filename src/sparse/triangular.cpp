// SPDX-License-Identifier: Apache-2.0
// Sparse triangular solves on cuSPARSE: SpSV (one right-hand side) or SpSM (a dense matrix of
// them), the analysis when planning, the solves on every call.
#include <gpumath/sparse/triangular.hpp>

#include <atomic>
#include <mutex>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include "core/stream_workspace.hpp"
#include "detail/enum_check.hpp"
#include "detail/status.hpp"
#include "sparse/cusparse.hpp"
#include "sparse/product_checks.hpp"

namespace gpumath::sparse {

std::string_view to_string(Triangle triangle) noexcept {
    switch (triangle) {
        case Triangle::lower:
            return "lower";
        case Triangle::upper:
            return "upper";
    }
    return "unknown";
}

std::string_view to_string(Diagonal diagonal) noexcept {
    switch (diagonal) {
        case Diagonal::non_unit:
            return "non_unit";
        case Diagonal::unit:
            return "unit";
    }
    return "unknown";
}

}  // namespace gpumath::sparse

namespace gpumath::detail {

struct TriangularSolveImpl {
    sparse::MatrixView a;
    TensorLayout layout;
    bool matrix = false;  // SpSM (right-hand sides (n, k)) rather than SpSV
    sparse::TriangularSolveOptions options;
    std::mutex mutex;  // planning and enqueuing (the descriptors' pointers)
    std::atomic<bool> planned{false};
    int device = -1;
    bool trivial = false;  // nothing to solve
    std::optional<SpMatDescriptor> da;
    std::optional<DnVecDescriptor> vb, vx;
    std::optional<DnMatDescriptor> mb, mx;
    cusparseSpSVDescr_t sv = nullptr;
    cusparseSpSMDescr_t sm = nullptr;
    core::Buffer buffer;                // the analysis, read by every solve
    std::vector<core::Buffer> scratch;  // planning's own, freed once it has finished

    TriangularSolveImpl() = default;
    TriangularSolveImpl(const TriangularSolveImpl&) = delete;
    TriangularSolveImpl& operator=(const TriangularSolveImpl&) = delete;
    TriangularSolveImpl(TriangularSolveImpl&&) = delete;
    TriangularSolveImpl& operator=(TriangularSolveImpl&&) = delete;
    ~TriangularSolveImpl() { reset(); }

    /// Back to the unplanned state (after a failed plan).
    void reset() noexcept {
        if (sv != nullptr) (void)cusparseSpSV_destroyDescr(sv);
        if (sm != nullptr) (void)cusparseSpSM_destroyDescr(sm);
        sv = nullptr;
        sm = nullptr;
        vb.reset();
        vx.reset();
        mb.reset();
        mx.reset();
        da.reset();
        buffer.reset();
        scratch.clear();
        trivial = false;
    }

    void plan(core::StreamRef stream, const char* api);
    void plan_locked(core::StreamRef stream);
    void run(const TensorView& b, const TensorView& x, const products::Scalar& alpha, core::StreamRef stream);
};

void TriangularSolveImpl::plan(core::StreamRef stream, const char* api) {
    if (planned.load(std::memory_order_acquire)) return;
    products::reject_planning_in_capture(stream, api);
    std::lock_guard lock(mutex);
    if (planned.load(std::memory_order_relaxed)) return;
    try {
        plan_locked(stream);
    } catch (...) {
        release_noexcept([&] { stream.synchronize(); });  // before the buffers go
        reset();
        throw;
    }
    planned.store(true, std::memory_order_release);
}

void TriangularSolveImpl::plan_locked(core::StreamRef stream) {
    device = current_device();
    trivial = layout.size() == 0;
    if (trivial) return;
    da.emplace(a);
    cusparseFillMode_t fill =
        options.triangle == sparse::Triangle::lower ? CUSPARSE_FILL_MODE_LOWER : CUSPARSE_FILL_MODE_UPPER;
    cusparseDiagType_t diag =
        options.diagonal == sparse::Diagonal::unit ? CUSPARSE_DIAG_TYPE_UNIT : CUSPARSE_DIAG_TYPE_NON_UNIT;
    check_cusparse(cusparseSpMatSetAttribute(da->get(), CUSPARSE_SPMAT_FILL_MODE, &fill, sizeof(fill)),
                   "cusparseSpMatSetAttribute", "setting a triangular solve's triangle");
    check_cusparse(cusparseSpMatSetAttribute(da->get(), CUSPARSE_SPMAT_DIAG_TYPE, &diag, sizeof(diag)),
                   "cusparseSpMatSetAttribute", "setting a triangular solve's diagonal");
    // The analysis takes descriptors of b and x: scratch of the planned layout stands in for them.
    const void* b_scratch =
        scratch.emplace_back(products::plan_buffer(std::size_t(layout.span_bytes()), options.memory_resource)).data();
    const void* x_scratch =
        scratch.emplace_back(products::plan_buffer(std::size_t(layout.span_bytes()), options.memory_resource)).data();
    const TensorView bv(b_scratch, layout), xv(x_scratch, layout);
    const DataType vt = a.value_type();
    const cudaDataType ct = to_cuda(vt);
    const products::Scalar one(1.0, vt, "alpha", "sparse::TriangularSolve::plan");
    const cusparseOperation_t op = products::cusparse_operation(options.op);
    const SparseHandle h(device, stream.handle());
    std::size_t bytes = 0;
    if (matrix) {
        mb.emplace(bv);
        mx.emplace(xv);
        check_cusparse(cusparseSpSM_createDescr(&sm), "cusparseSpSM_createDescr", "planning a triangular solve");
        check_cusparse(cusparseSpSM_bufferSize(h.get(), op, CUSPARSE_OPERATION_NON_TRANSPOSE, one.get(), da->get(),
                                               mb->get(), mx->get(), ct, CUSPARSE_SPSM_ALG_DEFAULT, sm, &bytes),
                       "cusparseSpSM_bufferSize", "sizing a triangular solve's analysis");
        buffer = products::plan_buffer(bytes, options.memory_resource);
        check_cusparse(cusparseSpSM_analysis(h.get(), op, CUSPARSE_OPERATION_NON_TRANSPOSE, one.get(), da->get(),
                                             mb->get(), mx->get(), ct, CUSPARSE_SPSM_ALG_DEFAULT, sm, buffer.data()),
                       "cusparseSpSM_analysis", "analysing a triangular matrix");
    } else {
        vb.emplace(bv);
        vx.emplace(xv);
        check_cusparse(cusparseSpSV_createDescr(&sv), "cusparseSpSV_createDescr", "planning a triangular solve");
        check_cusparse(cusparseSpSV_bufferSize(h.get(), op, one.get(), da->get(), vb->get(), vx->get(), ct,
                                               CUSPARSE_SPSV_ALG_DEFAULT, sv, &bytes),
                       "cusparseSpSV_bufferSize", "sizing a triangular solve's analysis");
        buffer = products::plan_buffer(bytes, options.memory_resource);
        check_cusparse(cusparseSpSV_analysis(h.get(), op, one.get(), da->get(), vb->get(), vx->get(), ct,
                                             CUSPARSE_SPSV_ALG_DEFAULT, sv, buffer.data()),
                       "cusparseSpSV_analysis", "analysing a triangular matrix");
    }
    stream.synchronize();
    scratch.clear();
}

void TriangularSolveImpl::run(const TensorView& b, const TensorView& x, const products::Scalar& alpha,
                              core::StreamRef stream) {
    if (trivial) return;
    const cudaDataType ct = to_cuda(a.value_type());
    const cusparseOperation_t op = products::cusparse_operation(options.op);
    const SparseHandle h(device, stream.handle());
    if (matrix) {
        mb->set_pointer(b.data());
        mx->set_pointer(x.data());
        check_cusparse(cusparseSpSM_solve(h.get(), op, CUSPARSE_OPERATION_NON_TRANSPOSE, alpha.get(), da->get(),
                                          mb->get(), mx->get(), ct, CUSPARSE_SPSM_ALG_DEFAULT, sm),
                       "cusparseSpSM_solve", "a sparse triangular solve");
    } else {
        vb->set_pointer(b.data());
        vx->set_pointer(x.data());
        check_cusparse(cusparseSpSV_solve(h.get(), op, alpha.get(), da->get(), vb->get(), vx->get(), ct,
                                          CUSPARSE_SPSV_ALG_DEFAULT, sv),
                       "cusparseSpSV_solve", "a sparse triangular solve");
    }
}

}  // namespace gpumath::detail

namespace gpumath::sparse {

using detail::TriangularSolveImpl;

namespace {

/// The right-hand sides' layout: `(n)` contiguous or `(n, k)` row- or column-major, A's dtype.
/// True for a matrix.
bool check_rhs_layout(const TensorLayout& layout, std::int64_t n, DataType vt, const char* name, const char* api) {
    if (layout.rank() == 1) {
        detail::products::check_dense_vector(layout, n, vt, name, api);
        return false;
    }
    if (layout.rank() != 2)
        detail::throw_invalid(
            fmt::format("{}: rank {}; right-hand sides are a vector (n) or a matrix (n, k)", name, layout.rank()), api);
    (void)detail::products::check_dense_matrix(layout, vt, name, api);
    if (layout.shape(0) != n)
        detail::throw_invalid(fmt::format("{}: {} rows where A is {} × {}", name, layout.shape(0), n, n), api);
    return true;
}

/// `v` has the planned layout: shape, dtype and (for a matrix) strides.
void check_planned_operand(const TensorView& v, const TensorLayout& layout, const char* name, const char* api) {
    const bool same_shape = v.rank() == layout.rank() && std::equal(v.shape().begin(), v.shape().end(),
                                                                    layout.shape().begin(), layout.shape().end());
    if (!same_shape || v.dtype() != layout.dtype())
        detail::throw_invalid(fmt::format("{}: {} where the plan was made for {}", name, gpumath::to_string(v),
                                          gpumath::to_string(layout)),
                              api);
    if (layout.rank() == 1) {
        detail::products::check_dense_vector(v, layout.shape(0), layout.dtype(), name, api);
        return;
    }
    const bool same_strides =
        std::equal(v.strides().begin(), v.strides().end(), layout.strides().begin(), layout.strides().end());
    if (!same_strides)
        detail::throw_invalid(fmt::format("{}: strides {} where the plan was made for strides {}; plan for this layout",
                                          name, gpumath::to_string(v.strides()), gpumath::to_string(layout.strides())),
                              api);
    (void)detail::products::check_dense_matrix(v, layout.dtype(), name, api);
}

}  // namespace

TriangularSolve::TriangularSolve(const MatrixView& a, const TensorLayout& b, const TriangularSolveOptions& options) {
    constexpr const char* api = "sparse::TriangularSolve";
    detail::check_enum(options.triangle, triangle_count, "a Triangle", "options.triangle", api);
    detail::check_enum(options.diagonal, diagonal_count, "a Diagonal", "options.diagonal", api);
    detail::products::check_operation(options.op, "options.op", api);
    detail::products::check_sparse_operand(a, "a", {Format::csr, Format::coo}, api);
    if (a.rows() != a.cols())
        detail::throw_invalid(fmt::format("a: {} × {}; a triangular solve takes a square matrix", a.rows(), a.cols()),
                              api);
    const bool matrix = check_rhs_layout(b, a.rows(), a.value_type(), "b", api);
    impl_ = std::make_unique<TriangularSolveImpl>();
    impl_->a = a;
    impl_->layout = TensorLayout(b);
    impl_->matrix = matrix;
    impl_->options = options;
}

TriangularSolve::~TriangularSolve() = default;
TriangularSolve::TriangularSolve(TriangularSolve&&) noexcept = default;
TriangularSolve& TriangularSolve::operator=(TriangularSolve&&) noexcept = default;

TriangularSolveImpl& TriangularSolve::impl(const char* api) const {
    if (!impl_) detail::throw_moved_from("sparse::TriangularSolve", api);
    return *impl_;
}

void TriangularSolve::plan(core::StreamRef stream) {
    constexpr const char* api = "sparse::TriangularSolve::plan";
    impl(api).plan(stream, api);
}

bool TriangularSolve::planned() const noexcept { return impl_ && impl_->planned.load(std::memory_order_acquire); }

void TriangularSolve::solve(const TensorView& b, const TensorView& x, std::complex<double> alpha,
                            core::StreamRef stream) {
    constexpr const char* api = "sparse::TriangularSolve::solve";
    TriangularSolveImpl& state = impl(api);
    check_planned_operand(b, state.layout, "b", api);
    check_planned_operand(x, state.layout, "x", api);
    detail::products::check_apart(x, "x", b, "b", api);
    detail::products::check_apart(x, "x", state.a, "a", api);
    const detail::products::Scalar s(alpha, state.a.value_type(), "alpha", api);
    state.plan(stream, api);
    detail::products::check_plan_device(state.device, api);
    std::lock_guard lock(state.mutex);
    state.run(b, x, s, stream);
}

void TriangularSolve::update_values(core::StreamRef stream) {
    constexpr const char* api = "sparse::TriangularSolve::update_values";
    TriangularSolveImpl& state = impl(api);
    state.plan(stream, api);
    detail::products::check_plan_device(state.device, api);
    std::lock_guard lock(state.mutex);
    if (state.trivial) return;
    const detail::SparseHandle h(state.device, stream.handle());
    void* values = state.a.values().data();
    if (state.matrix)
        detail::check_cusparse(cusparseSpSM_updateMatrix(h.get(), state.sm, values, CUSPARSE_SPSM_UPDATE_GENERAL),
                               "cusparseSpSM_updateMatrix", "updating a triangular solve's values");
    else
        detail::check_cusparse(cusparseSpSV_updateMatrix(h.get(), state.sv, values, CUSPARSE_SPSV_UPDATE_GENERAL),
                               "cusparseSpSV_updateMatrix", "updating a triangular solve's values");
}

const TensorLayout& TriangularSolve::layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->layout : empty;
}

const TriangularSolveOptions& TriangularSolve::options() const noexcept {
    static const TriangularSolveOptions empty;
    return impl_ ? impl_->options : empty;
}

}  // namespace gpumath::sparse
