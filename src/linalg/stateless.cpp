// SPDX-License-Identifier: Apache-2.0
// The stateless linalg calls: plans from a thread-safe LRU cache keyed by operation, device, layout
// and options, outputs allocated on the caller's stream.
#include <gpumath/linalg/functions.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/linalg/cholesky.hpp>
#include <gpumath/linalg/eig.hpp>
#include <gpumath/linalg/eigh.hpp>
#include <gpumath/linalg/lu.hpp>
#include <gpumath/linalg/qr.hpp>
#include <gpumath/linalg/refined_solve.hpp>
#include <gpumath/linalg/svd.hpp>
#include <gpumath/tensor_ops.hpp>
#include "detail/lru_cache.hpp"
#include "detail/status.hpp"
#include "linalg/cusolver.hpp"
#include "linalg/kernels.hpp"
#include "linalg/matrices.hpp"
#include "linalg/qr_impl.hpp"

namespace gpumath {
namespace detail {
namespace {

/// One cached plan of one of the operations.
struct LinalgPlan {
    std::optional<linalg::Cholesky> cholesky;
    std::optional<linalg::Eigh> eigh;
    std::optional<linalg::LU> lu;
    std::optional<linalg::Eig> eig;
    std::optional<linalg::RefinedSolve> refined_solve;
    std::optional<linalg::SVD> svd;
    std::optional<linalg::QR> qr;
    std::optional<linalg::LeastSquares> lstsq;
};

using PlanCache = ControlledLruCache<std::string, LinalgPlan>;

PlanCache& plan_cache() {
    static auto* cache = new PlanCache(linalg::LinalgPlanCache::default_capacity);  // never destroyed
    return *cache;
}

/// What identifies a plan besides the operation: device, dtype, shape and the memory resource
/// (strides are an execution's, not a plan's).
std::string key_of(const char* operation, int device, const TensorLayout& a, int triangle, int backend, int vectors,
                   const void* resource) {
    return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}", operation, device, int(a.dtype()), to_string(a.shape()), triangle,
                       backend, vectors, resource);
}

/// The cached plan under `key` on the current device: `fresh` (made, and so validated, before any
/// CUDA call) planned and kept in `slot` on a miss.
template <class Plan>
std::shared_ptr<LinalgPlan> cached(Plan& fresh, std::optional<Plan> LinalgPlan::*slot, const char* operation,
                                   const TensorView& a, int triangle, int backend, int vectors, const void* resource) {
    const std::string key = key_of(operation, current_device(), a, triangle, backend, vectors, resource);
    return plan_cache().get_or_create(key, [&] {
        auto p = std::make_shared<LinalgPlan>();
        ((*p).*slot).emplace(std::move(fresh));
        ((*p).*slot)->plan();
        return p;
    });
}

/// The cached LU plan of `a`'s layout on the current device (validated first, also without one).
std::shared_ptr<LinalgPlan> lu_plan(const TensorView& a, const linalg::LUOptions& options) {
    linalg::LU fresh(a, options);
    return cached(fresh, &LinalgPlan::lu, "lu", a, 0, int(options.backend), 0, options.memory_resource.get());
}

}  // namespace
}  // namespace detail

namespace linalg {

CholeskyResult cholesky(const TensorView& a, const CholeskyOptions& options, core::StreamRef stream) {
    // Validated in full before any CUDA call (also without a device).
    Cholesky fresh(a, options);
    const auto plan = detail::cached(fresh, &detail::LinalgPlan::cholesky, "cholesky", a, int(options.triangle),
                                     int(options.backend), 0, options.memory_resource.get());
    CholeskyResult r;
    r.factor = Tensor::empty(TensorLayout(a.dtype(), a.shape()), stream, options.memory_resource);
    r.info = Tensor::empty(plan->cholesky->info_layout(), stream, options.memory_resource);
    plan->cholesky->factorize(a, r.factor, r.info, stream);
    // NumPy's convention: the triangle not asked for is zero.
    detail::zero_triangle(detail::matrix_params(r.factor, plan->cholesky->info_layout().size()), a.dtype(),
                          options.triangle == Triangle::lower, stream);
    return r;
}

EighResult eigh(const TensorView& a, const EighOptions& options, core::StreamRef stream) {
    Eigh fresh(a, options);
    // A range's bounds are part of the plan.
    const std::string operation = options.range == EighRange::all
                                      ? std::string("eigh")
                                      : fmt::format("eigh {} {} {} {} {}", to_string(options.range), options.first,
                                                    options.last, options.low, options.high);
    const auto plan = detail::cached(fresh, &detail::LinalgPlan::eigh, operation.c_str(), a, int(options.triangle),
                                     int(options.backend), options.vectors ? 1 : 0, options.memory_resource.get());
    Eigh& solver = *plan->eigh;
    EighResult r;
    r.values = Tensor::empty(solver.values_layout(), stream, options.memory_resource);
    if (options.vectors) r.vectors = Tensor::empty(solver.vectors_layout(), stream, options.memory_resource);
    r.info = Tensor::empty(solver.info_layout(), stream, options.memory_resource);
    const TensorView vectors = options.vectors ? r.vectors.view() : TensorView();
    if (options.range == EighRange::value) {
        r.counts = Tensor::empty(solver.info_layout(), stream, options.memory_resource);
        solver.execute(a, r.values, vectors, r.info, r.counts, stream);
    } else {
        solver.execute(a, r.values, vectors, r.info, stream);
    }
    return r;
}

SolveResult solve(const TensorView& a, const TensorView& b, const LUOptions& options, core::StreamRef stream) {
    // b's rules before any CUDA call (the plan's solve checks them again, cheaply).
    detail::check_right_hand_side(detail::square_batch(a, "linalg::LU"), b, "linalg::solve");
    const auto plan = detail::lu_plan(a, options);
    LU& lu = *plan->lu;
    SolveResult r;
    Tensor factors = Tensor::empty(TensorLayout(a.dtype(), a.shape()), stream, options.memory_resource);
    Tensor pivots = Tensor::empty(lu.pivots_layout(), stream, options.memory_resource);
    r.info = Tensor::empty(lu.info_layout(), stream, options.memory_resource);
    r.x = Tensor::empty(TensorLayout(b.dtype(), b.shape()), stream, options.memory_resource);
    lu.factorize(a, factors, pivots, r.info, stream);
    lu.solve(factors, pivots, b, r.x, stream);
    return r;
}

InverseResult inv(const TensorView& a, const LUOptions& options, core::StreamRef stream) {
    const auto plan = detail::lu_plan(a, options);
    LU& lu = *plan->lu;
    InverseResult r;
    Tensor factors = Tensor::empty(TensorLayout(a.dtype(), a.shape()), stream, options.memory_resource);
    Tensor pivots = Tensor::empty(lu.pivots_layout(), stream, options.memory_resource);
    r.info = Tensor::empty(lu.info_layout(), stream, options.memory_resource);
    r.inverse = Tensor::empty(TensorLayout(a.dtype(), a.shape()), stream, options.memory_resource);
    // Aᵀ's factors in column-major order, then Aᵀ·Y = I solved into the inverse's memory seen
    // column-major: Y = A⁻ᵀ there is A⁻¹ read row-major. No copy beyond A's into the factors.
    const TensorView ft = factors.view().transposed();
    const TensorView yt = r.inverse.view().transposed();
    lu.factorize(a.transposed(), ft, pivots, r.info, stream);
    detail::set_identity(detail::matrix_params(yt, lu.info_layout().size()), a.dtype(), stream);
    lu.solve(ft, pivots, yt, yt, stream);
    return r;
}

Tensor det(const TensorView& a, const LUOptions& options, core::StreamRef stream) {
    const auto plan = detail::lu_plan(a, options);
    LU& lu = *plan->lu;
    Tensor factors = Tensor::empty(TensorLayout(a.dtype(), a.shape()), stream, options.memory_resource);
    Tensor pivots = Tensor::empty(lu.pivots_layout(), stream, options.memory_resource);
    Tensor info = Tensor::empty(lu.info_layout(), stream, options.memory_resource);
    Tensor out = Tensor::empty(TensorLayout(a.dtype(), lu.info_layout().shape()), stream, options.memory_resource);
    lu.factorize(a, factors, pivots, info, stream);
    const std::int64_t count = lu.info_layout().size();
    detail::determinants(detail::matrix_params(factors, count), a.dtype(), static_cast<const int*>(pivots.data()),
                         a.shape(-1), out.data(), stream);
    return out;
}

EigResult eig(const TensorView& a, const EigOptions& options, core::StreamRef stream) {
    Eig fresh(a, options);
    const auto plan = detail::cached(fresh, &detail::LinalgPlan::eig, "eig", a, 0, int(options.backend),
                                     int(options.vectors), options.memory_resource.get());
    Eig& e = *plan->eig;
    EigResult r;
    r.values = Tensor::empty(e.values_layout(), stream, options.memory_resource);
    if (options.vectors != EigVectors::none)
        r.vectors = Tensor::empty(e.vectors_layout(), stream, options.memory_resource);
    r.info = Tensor::empty(e.info_layout(), stream, options.memory_resource);
    e.execute(a, r.values, options.vectors != EigVectors::none ? r.vectors.view() : TensorView(), r.info, stream);
    return r;
}

RefinedSolveResult refined_solve(const TensorView& a, const TensorView& b, const RefinedSolveOptions& options,
                                 core::StreamRef stream) {
    RefinedSolve fresh(a, b, options);
    // The operation names everything else a plan is made of: b's shape and the solver's settings.
    const std::string operation =
        fmt::format("refined_solve|{}|{}|{}|{}|{}|{}", gpumath::to_string(b.shape()), int(options.lowest),
                    int(options.refinement), options.max_iterations, options.tolerance, options.fallback ? 1 : 0);
    const auto plan = detail::cached(fresh, &detail::LinalgPlan::refined_solve, operation.c_str(), a, 0, 0, 0,
                                     options.memory_resource.get());
    RefinedSolve& s = *plan->refined_solve;
    RefinedSolveResult r;
    r.x = Tensor::empty(TensorLayout(b.dtype(), b.shape()), stream, options.memory_resource);
    r.info = Tensor::empty(s.info_layout(), stream, options.memory_resource);
    r.refinement = s.execute(a, b, r.x, r.info, stream);
    return r;
}

SVDResult svd(const TensorView& a, const SVDOptions& options, core::StreamRef stream) {
    SVD fresh(a, options);
    // The rank rides in the triangle's place of the key (it is at most min(m, n), an int for gesvda).
    const auto plan = detail::cached(fresh, &detail::LinalgPlan::svd, "svd", a, int(options.rank), int(options.backend),
                                     int(options.job), options.memory_resource.get());
    SVD& p = *plan->svd;
    SVDResult r;
    r.s = Tensor::empty(p.values_layout(), stream, options.memory_resource);
    if (options.job != SVDJob::values) {
        r.u = Tensor::empty(p.u_layout(), stream, options.memory_resource);
        r.vh = Tensor::empty(p.vh_layout(), stream, options.memory_resource);
    }
    r.info = Tensor::empty(p.info_layout(), stream, options.memory_resource);
    const bool vectors = options.job != SVDJob::values;
    p.execute(a, vectors ? r.u.view() : TensorView(), r.s, vectors ? r.vh.view() : TensorView(), r.info, stream);
    return r;
}

QRResult qr(const TensorView& a, const QROptions& options, core::StreamRef stream) {
    QR fresh(a, options);
    const std::int64_t m = a.shape(-2), n = a.shape(-1), k = std::min(m, n);
    if (options.mode != QRMode::r) detail::check_q_sizes(m, fresh.q_layout().shape(-1), "linalg::qr");
    // The mode keys the plan as `vectors` does eigh's: what is formed besides R.
    const auto plan =
        detail::cached(fresh, &detail::LinalgPlan::qr, "qr", a, 0, 0, int(options.mode), options.memory_resource.get());
    QR& q = *plan->qr;
    // Factorized in a column-major temporary: in place, then Q formed from it and R copied out.
    Tensor f = Tensor::empty(detail::packed_column_major(a.dtype(), a.shape()), stream, options.memory_resource);
    Tensor tau = Tensor::empty(q.tau_layout(), stream, options.memory_resource);
    q.factorize(a, f, tau, stream);
    QRResult r;
    if (options.mode != QRMode::r) {
        r.q = Tensor::empty(TensorLayout(a.dtype(), q.q_layout().shape()), stream, options.memory_resource);
        q.form_q(f, tau, r.q, stream);
    }
    const std::int64_t r_rows = options.mode == QRMode::complete ? m : k;
    std::vector<std::int64_t> shape(a.shape().begin(), a.shape().end());
    shape[shape.size() - 2] = r_rows;
    r.r = Tensor::empty(a.dtype(), shape, stream, options.memory_resource);
    if (r.r.size() == 0) return r;
    copy(detail::sub_matrices(f, 0, r_rows, 0, n), r.r, stream);
    // Zeros below the diagonal: the square part by the triangle kernel, rows past n (complete) whole.
    const std::int64_t square = std::min(r_rows, n);
    const std::int64_t count = r.r.size() / (r_rows * n);
    detail::zero_triangle(detail::matrix_params(detail::sub_matrices(r.r, 0, square, 0, square), count), a.dtype(),
                          false, stream);
    if (r_rows > square) fill(detail::sub_matrices(r.r, square, r_rows - square, 0, n), 0.0, stream);
    return r;
}

LstsqResult lstsq(const TensorView& a, const TensorView& b, const LeastSquaresOptions& options,
                  core::StreamRef stream) {
    LeastSquares fresh(a, options);
    // b's rules before any CUDA call (the plan's execute checks them again, cheaply).
    const detail::LstsqShapes shapes =
        detail::lstsq_shapes(detail::matrix_batch(a, "linalg::LeastSquares"), b, "linalg::lstsq");
    const auto plan =
        detail::cached(fresh, &detail::LinalgPlan::lstsq, "lstsq", a, 0, 0, 0, options.memory_resource.get());
    LeastSquares& ls = *plan->lstsq;
    LstsqResult r;
    r.x = Tensor::empty(a.dtype(), shapes.x_shape(), stream, options.memory_resource);
    r.residuals = Tensor::empty(detail::real_of(a.dtype()), shapes.residuals_shape(), stream, options.memory_resource);
    r.info = Tensor::empty(ls.info_layout(), stream, options.memory_resource);
    ls.execute(a, b, r.x, r.residuals, r.info, stream);
    return r;
}

LinalgPlanCache::LinalgPlanCache() : PlanCacheControl(detail::plan_cache()) {}

LinalgPlanCache& linalg_plan_cache() {
    static LinalgPlanCache cache;
    return cache;
}

}  // namespace linalg
}  // namespace gpumath
