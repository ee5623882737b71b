// SPDX-License-Identifier: Apache-2.0
// The RefinedSolve plan: cuSOLVER's IRSXgesv (LU in a lower precision, iterative refinement to the
// matrices' own), once per matrix on the caller's stream.
#include <gpumath/linalg/refined_solve.hpp>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/linalg/info.hpp>
#include "core/stream_workspace.hpp"
#include "detail/enum_check.hpp"
#include "detail/status.hpp"
#include "linalg/cusolver.hpp"
#include "linalg/matrices.hpp"
#include "linalg/plan_state.hpp"

namespace gpumath::detail {
namespace {

constexpr const char* plan_api = "linalg::RefinedSolve";

bool complex_dtype(DataType t) noexcept { return t == DataType::c32 || t == DataType::c64; }

cusolverPrecType_t main_precision(DataType t) noexcept {
    switch (t) {
        case DataType::f64:
            return CUSOLVER_R_64F;
        case DataType::c32:
            return CUSOLVER_C_32F;
        case DataType::c64:
            return CUSOLVER_C_64F;
        default:
            return CUSOLVER_R_32F;
    }
}

cusolverPrecType_t lowest_precision(linalg::LowestPrecision p, bool complex) noexcept {
    switch (p) {
        case linalg::LowestPrecision::bf16:
            return complex ? CUSOLVER_C_16BF : CUSOLVER_R_16BF;
        case linalg::LowestPrecision::tf32:
            return complex ? CUSOLVER_C_TF32 : CUSOLVER_R_TF32;
        case linalg::LowestPrecision::f32:
            return complex ? CUSOLVER_C_32F : CUSOLVER_R_32F;
        case linalg::LowestPrecision::f64:
            return complex ? CUSOLVER_C_64F : CUSOLVER_R_64F;
        default:
            return complex ? CUSOLVER_C_16F : CUSOLVER_R_16F;
    }
}

/// The refinement cuSOLVER runs for `r` and `k` right-hand sides (automatic: GMRES for one).
cusolverIRSRefinement_t refinement_of(linalg::Refinement r, std::int64_t k) noexcept {
    switch (r) {
        case linalg::Refinement::classical:
            return CUSOLVER_IRS_REFINE_CLASSICAL;
        case linalg::Refinement::gmres:
            return CUSOLVER_IRS_REFINE_GMRES;
        case linalg::Refinement::classical_gmres:
            return CUSOLVER_IRS_REFINE_CLASSICAL_GMRES;
        case linalg::Refinement::gmres_gmres:
            return CUSOLVER_IRS_REFINE_GMRES_GMRES;
        default:
            return k == 1 ? CUSOLVER_IRS_REFINE_GMRES : CUSOLVER_IRS_REFINE_CLASSICAL;
    }
}

/// One call's cuSOLVER IRS information (made fresh per call: cuSOLVER's can refuse one reused
/// after a failed call).
class IrsInfos {
public:
    IrsInfos() {
        check_cusolver(cusolverDnIRSInfosCreate(&infos_), "cusolverDnIRSInfosCreate", "a mixed-precision solve");
    }
    ~IrsInfos() { cusolverDnIRSInfosDestroy(infos_); }
    IrsInfos(const IrsInfos&) = delete;
    IrsInfos& operator=(const IrsInfos&) = delete;
    IrsInfos(IrsInfos&&) = delete;
    IrsInfos& operator=(IrsInfos&&) = delete;
    [[nodiscard]] cusolverDnIRSInfos_t get() const noexcept { return infos_; }

private:
    cusolverDnIRSInfos_t infos_ = nullptr;
};

/// Right-hand sides (or solutions) as cuSOLVER addresses them: column-major n × k matrices with a
/// 32-bit leading dimension, one stride between matrices.
struct ColumnMajor {
    bool direct = false;
    std::int64_t ld = 0, batch_stride = 0;  // elements
};

ColumnMajor column_major(const TensorView& v, const SquareBatch& batch, bool matrices) {
    ColumnMajor c;
    if (matrices) {
        const Storage s = storage_of(v);
        c = {.direct = s.direct && !s.row_major, .ld = s.ld, .batch_stride = s.batch_stride};
    } else {
        const auto stride = uniform_batch_stride(v, batch.batch_rank);
        c = {.direct =
                 (batch.n <= 1 || v.stride(-1) == 1) && stride.has_value() && (batch.count <= 1 || *stride >= batch.n),
             .ld = std::max<std::int64_t>(batch.n, 1),
             .batch_stride = stride.value_or(0)};
    }
    c.direct = c.direct && c.ld <= INT_MAX;
    return c;
}

/// InvalidArgument unless `b` is `(..., n, k)` or `(..., n)` of the batch's shape and dtype.
void check_rhs_layout(const SquareBatch& batch, const TensorLayout& b, const char* api) {
    const int rhs_rank = b.rank() - batch.batch_rank;
    bool fits = rhs_rank == 1 || rhs_rank == 2;
    for (int d = 0; fits && d < batch.batch_rank; ++d) fits = b.shape(d) == batch.a.shape(d);
    if (!fits || b.shape(batch.batch_rank) != batch.n)
        throw_invalid(fmt::format("b: shape {}; give right-hand sides as (..., n, k) or (..., n) with the batch shape "
                                  "{} and n {}",
                                  to_string(b.shape()), to_string(batch.info.shape()), batch.n),
                      api);
    if (b.dtype() != batch.dtype)
        throw_invalid(fmt::format("b: dtype {}; this plan's matrices are {}, and b must be too", to_string(b.dtype()),
                                  to_string(batch.dtype)),
                      api);
}

}  // namespace

struct RefinedSolveImpl final : PlanState {
    SquareBatch batch;
    TensorLayout rhs;       // B's shape and dtype
    bool matrices = false;  // B is (..., n, k), not (..., n)
    std::int64_t k = 1;
    linalg::RefinedSolveOptions options;
    cusolverDnIRSParams_t params = nullptr;       // set at planning, read under host_mutex
    std::size_t device_bytes = 0;                 // IRSXgesv's workspace
    std::size_t lu_bytes = 0, lu_host_bytes = 0;  // Xgetrf's, for a refinement that did not converge

    /// Bytes of the area after A's and B's and X's copies: IRSXgesv's workspace, or Xgetrf's with
    /// the pivots and Xgetrs' info (they run one after the other).
    [[nodiscard]] std::size_t solver_area() const noexcept {
        return std::max(aligned_bytes(device_bytes), aligned_bytes(lu_bytes) +
                                                         aligned_bytes(std::size_t(batch.n) * sizeof(std::int64_t)) +
                                                         aligned_bytes(sizeof(int)));
    }

    RefinedSolveImpl() = default;
    ~RefinedSolveImpl() override {
        if (params != nullptr) cusolverDnIRSParamsDestroy(params);
    }
    RefinedSolveImpl(const RefinedSolveImpl&) = delete;
    RefinedSolveImpl& operator=(const RefinedSolveImpl&) = delete;
    RefinedSolveImpl(RefinedSolveImpl&&) = delete;
    RefinedSolveImpl& operator=(RefinedSolveImpl&&) = delete;

    void plan_locked() override;
    /// Xgetrf of the column-major copy `a` (ld n) into `info`; with `options.fallback`, X = A⁻¹·B
    /// by Xgetrs into `x` from `b`. `ws` is solver_area() bytes. Under host_mutex.
    void full_precision_lu(const SolverHandle& h, std::byte* a, const std::byte* b, std::int64_t ldb, std::byte* x,
                           std::int64_t ldx, std::byte* ws, int* info, core::StreamRef stream);
    [[nodiscard]] std::vector<linalg::RefinementStatus> run(const TensorView& a, const TensorView& b,
                                                            const TensorView& x, const TensorView& info,
                                                            core::StreamRef stream);
};

void RefinedSolveImpl::plan_locked() {
    start_planning(options.memory_resource);
    const char* context = "setting up a mixed-precision solve";
    if (params == nullptr) check_cusolver(cusolverDnIRSParamsCreate(&params), "cusolverDnIRSParamsCreate", context);
    check_cusolver(cusolverDnIRSParamsSetSolverPrecisions(params, main_precision(batch.dtype),
                                                          lowest_precision(options.lowest, complex_dtype(batch.dtype))),
                   "cusolverDnIRSParamsSetSolverPrecisions", context);
    check_cusolver(cusolverDnIRSParamsSetRefinementSolver(params, refinement_of(options.refinement, k)),
                   "cusolverDnIRSParamsSetRefinementSolver", context);
    check_cusolver(cusolverDnIRSParamsSetMaxIters(params, options.max_iterations), "cusolverDnIRSParamsSetMaxIters",
                   context);
    if (options.tolerance > 0)
        check_cusolver(cusolverDnIRSParamsSetTol(params, options.tolerance), "cusolverDnIRSParamsSetTol", context);
    check_cusolver(
        options.fallback ? cusolverDnIRSParamsEnableFallback(params) : cusolverDnIRSParamsDisableFallback(params),
        "cusolverDnIRSParams(Enable|Disable)Fallback", context);
    device_bytes = 0;
    if (batch.n > 0 && k > 0) {
        const SolverHandle h(device, nullptr);
        check_cusolver(cusolverDnIRSXgesv_bufferSize(h.get(), params, int(batch.n), int(k), &device_bytes),
                       "cusolverDnIRSXgesv_bufferSize", "sizing a mixed-precision solve");
        const cudaDataType t = to_cuda(batch.dtype);
        check_cusolver(cusolverDnXgetrf_bufferSize(h.get(), h.params(), batch.n, batch.n, t, nullptr, batch.n, t,
                                                   &lu_bytes, &lu_host_bytes),
                       "cusolverDnXgetrf_bufferSize", "sizing a mixed-precision solve's full-precision LU");
    }
    size_host(lu_host_bytes);
}

void RefinedSolveImpl::full_precision_lu(const SolverHandle& h, std::byte* a, const std::byte* b, std::int64_t ldb,
                                         std::byte* x, std::int64_t ldx, std::byte* ws, int* info,
                                         core::StreamRef stream) {
    const std::int64_t n = batch.n;
    const cudaDataType t = to_cuda(batch.dtype);
    auto* pivots = reinterpret_cast<std::int64_t*>(ws + aligned_bytes(lu_bytes));
    int* solve_info =
        reinterpret_cast<int*>(ws + aligned_bytes(lu_bytes) + aligned_bytes(std::size_t(n) * sizeof(std::int64_t)));
    grow_host_workspaces(host, lu_host_bytes);
    check_cusolver(cusolverDnXgetrf(h.get(), h.params(), n, n, t, a, n, pivots, t, ws, lu_bytes, host[0].data(),
                                    lu_host_bytes, info),
                   "cusolverDnXgetrf", "the full-precision LU of a refinement that did not converge");
    if (!options.fallback) return;
    const std::size_t elem = size_of(batch.dtype);
    check(cudaMemcpy2DAsync(x, std::size_t(ldx) * elem, b, std::size_t(ldb) * elem, std::size_t(n) * elem,
                            std::size_t(k), cudaMemcpyDeviceToDevice, stream.handle()),
          "cudaMemcpy2DAsync", "copying B into X for the full-precision solve");
    check_cusolver(cusolverDnXgetrs(h.get(), h.params(), CUBLAS_OP_N, n, k, t, a, n, pivots, t, x, ldx, solve_info),
                   "cusolverDnXgetrs", "the full-precision solve of a refinement that did not converge");
}

std::vector<linalg::RefinementStatus> RefinedSolveImpl::run(const TensorView& a, const TensorView& b,
                                                            const TensorView& x, const TensorView& info,
                                                            core::StreamRef stream) {
    const std::int64_t n = batch.n, count = batch.count;
    const std::int64_t elem = std::int64_t(size_of(batch.dtype));
    const ColumnMajor bs = column_major(b, batch, matrices), xs = column_major(x, batch, matrices);
    const std::size_t a_bytes = aligned_bytes(std::size_t(count * n * n * elem));
    const std::size_t rhs_bytes = aligned_bytes(std::size_t(count * n * k * elem));
    const std::size_t b_bytes = bs.direct ? 0 : rhs_bytes, x_bytes = xs.direct ? 0 : rhs_bytes;
    const StreamWorkspace::Lease lease = workspace->acquire(a_bytes + b_bytes + x_bytes + solver_area(), stream);
    auto* area = static_cast<std::byte*>(lease.data);
    // cuSOLVER leaves A as it was when the refinement converges, and writes its full-precision
    // factors over it when it falls back: it works on a column-major copy.
    detail::copy_matrices(a, TensorView(area, packed_column_major(batch.dtype, batch.a.shape())), stream);
    const TensorLayout packed = matrices ? packed_column_major(batch.dtype, rhs.shape()) : rhs;
    const TensorView bt = bs.direct ? b : TensorView(area + a_bytes, packed);
    if (!bs.direct) detail::copy_matrices(b, bt, stream);
    const TensorView xt = xs.direct ? x : TensorView(area + a_bytes + b_bytes, packed);
    const std::int64_t ldb = bs.direct ? bs.ld : std::max<std::int64_t>(n, 1);
    const std::int64_t ldx = xs.direct ? xs.ld : std::max<std::int64_t>(n, 1);
    const std::int64_t b_step = (bs.direct ? bs.batch_stride : n * k) * elem;
    const std::int64_t x_step = (xs.direct ? xs.batch_stride : n * k) * elem;
    auto* bdata = static_cast<std::byte*>(bt.data());
    auto* xdata = static_cast<std::byte*>(xt.data());
    int* infos = static_cast<int*>(info.data());
    std::byte* ws = area + a_bytes + b_bytes + x_bytes;
    std::vector<linalg::RefinementStatus> statuses(static_cast<std::size_t>(count));
    {
        std::lock_guard lock(host_mutex);  // the solver parameters
        const SolverHandle h(device, stream.handle());
        for (std::int64_t m = 0; m < count; ++m) {
            const IrsInfos irs;
            int niters = 0;
            check_cusolver(cusolverDnIRSXgesv(h.get(), params, irs.get(), int(n), int(k), area + m * n * n * elem,
                                              int(std::max<std::int64_t>(n, 1)), bdata + m * b_step, int(ldb),
                                              xdata + m * x_step, int(ldx), ws, device_bytes, &niters, infos + m),
                           "cusolverDnIRSXgesv", "a mixed-precision solve");
            statuses[std::size_t(m)] = {.iterations = niters, .fell_back = niters < 0 && options.fallback};
        }
        // A refinement that did not converge: cuSOLVER does not always report a singular matrix
        // then (its info can stay 0), nor say whether its own fallback ran. Each such matrix is
        // factorized again here in full precision from a fresh copy of A, which sets its info
        // (the first zero pivot, if any) and, with `fallback`, solves X from B by that LU.
        bool recopied = false;
        for (std::int64_t m = 0; m < count; ++m) {
            if (statuses[std::size_t(m)].converged()) continue;
            if (!recopied) {
                detail::copy_matrices(a, TensorView(area, packed_column_major(batch.dtype, batch.a.shape())), stream);
                recopied = true;
            }
            full_precision_lu(h, area + m * n * n * elem, bdata + m * b_step, ldb, xdata + m * x_step, ldx, ws,
                              infos + m, stream);
        }
    }
    if (!xs.direct) detail::copy_matrices(xt, x, stream);
    return statuses;
}

}  // namespace gpumath::detail

namespace gpumath::linalg {

using detail::RefinedSolveImpl;

RefinedSolve::RefinedSolve(const TensorLayout& a, const TensorLayout& b, const RefinedSolveOptions& options)
    : impl_(std::make_unique<RefinedSolveImpl>()) {
    const char* api = detail::plan_api;
    detail::check_enum(options.lowest, lowest_precision_count, "a linalg::LowestPrecision", "options.lowest", api);
    detail::check_enum(options.refinement, refinement_count, "a linalg::Refinement", "options.refinement", api);
    if (options.max_iterations < 1)
        detail::throw_invalid(fmt::format("options.max_iterations: {}; give at least 1 (cuSOLVER's default is 50)",
                                          options.max_iterations),
                              api);
    if (!std::isfinite(options.tolerance) || options.tolerance < 0)
        detail::throw_invalid(fmt::format("options.tolerance: {}; give a finite value of 0 or more (0 keeps "
                                          "cuSOLVER's default)",
                                          options.tolerance),
                              api);
    const detail::SquareBatch batch = detail::square_batch(a, api);
    detail::check_rhs_layout(batch, b, api);
    const bool matrices = b.rank() - batch.batch_rank == 2;
    const std::int64_t k = matrices ? b.shape(-1) : 1;
    if (batch.n > INT_MAX || k > INT_MAX)
        detail::throw_not_supported(fmt::format("a, b: n {} and k {}; cuSOLVER's IRSXgesv takes 32-bit sizes (at "
                                                "most {}): use LU",
                                                batch.n, k, INT_MAX),
                                    api);
    if (options.lowest == LowestPrecision::f64 && (batch.dtype == DataType::f32 || batch.dtype == DataType::c32))
        detail::throw_not_supported(fmt::format("options.lowest: f64 is above a's own precision ({}); the lowest "
                                                "precision is f16, bf16, tf32 or f32 for {} matrices",
                                                to_string(batch.dtype), to_string(batch.dtype)),
                                    api);
    if (k > 1 && options.refinement != Refinement::automatic && options.refinement != Refinement::classical)
        detail::throw_not_supported(fmt::format("options.refinement: {} refines one right-hand side at a time in "
                                                "cuSOLVER, and b has {}; use classical (or automatic)",
                                                to_string(options.refinement), k),
                                    api);
    impl_->batch = batch;
    impl_->rhs = TensorLayout(b.dtype(), b.shape());
    impl_->matrices = matrices;
    impl_->k = k;
    impl_->options = options;
}

RefinedSolve::~RefinedSolve() = default;
RefinedSolve::RefinedSolve(RefinedSolve&&) noexcept = default;
RefinedSolve& RefinedSolve::operator=(RefinedSolve&&) noexcept = default;

RefinedSolveImpl& RefinedSolve::impl(const char* api) const {
    if (!impl_) detail::throw_moved_from("linalg::RefinedSolve", api);
    return *impl_;
}

void RefinedSolve::plan() { impl("linalg::RefinedSolve::plan").plan(); }

bool RefinedSolve::planned() const noexcept { return impl_ && impl_->planned.load(std::memory_order_acquire); }

std::vector<RefinementStatus> RefinedSolve::execute(const TensorView& a, const TensorView& b, const TensorView& x,
                                                    const TensorView& info, core::StreamRef stream) {
    const char* api = "linalg::RefinedSolve::execute";
    RefinedSolveImpl& state = impl(api);
    const detail::SquareBatch& batch = state.batch;
    detail::check_operand(a, batch.a.shape(), batch.dtype, "a", false, api);
    detail::check_operand(b, state.rhs.shape(), batch.dtype, "b", false, api);
    detail::check_operand(x, state.rhs.shape(), batch.dtype, "x", true, api);
    detail::check_info_operand(info, batch.info, "info", api);
    detail::check_apart(x, "x", b, "b", api);
    detail::check_apart(x, "x", a, "a", api);
    detail::check_apart(info, "info", a, "a", api);
    detail::check_apart(info, "info", b, "b", api);
    detail::check_apart(info, "info", x, "x", api);
    if (batch.count == 0) return {};
    // IRSXgesv hands its iteration count back on the host: it waits for the GPU inside.
    if (detail::capturing(stream))
        detail::throw_not_supported(
            "the stream is capturing a CUDA graph, and cuSOLVER's IRSXgesv returns its iteration count on the host "
            "(it waits for the GPU inside); a refined solve cannot be captured (LU's factorize and solve can)",
            api);
    if (batch.n == 0 || state.k == 0) {
        detail::check(cudaMemsetAsync(info.data(), 0, std::size_t(batch.count) * sizeof(int), stream.handle()),
                      "cudaMemsetAsync", "writing the info of empty systems");
        return std::vector<RefinementStatus>(std::size_t(batch.count));
    }
    state.ensure_planned(api);
    return state.run(a, b, x, info, stream);
}

const TensorLayout& RefinedSolve::layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->batch.a : empty;
}

const TensorLayout& RefinedSolve::rhs_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->rhs : empty;
}

const TensorLayout& RefinedSolve::info_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->batch.info : empty;
}

const RefinedSolveOptions& RefinedSolve::options() const noexcept {
    static const RefinedSolveOptions empty;
    return impl_ ? impl_->options : empty;
}

std::size_t RefinedSolve::workspace_size() const noexcept {
    if (!planned()) return 0;
    const detail::SquareBatch& batch = impl_->batch;
    const std::size_t elem = size_of(batch.dtype);
    return detail::aligned_bytes(std::size_t(batch.count * batch.n * batch.n) * elem) +
           2 * detail::aligned_bytes(std::size_t(batch.count * batch.n * impl_->k) * elem) + impl_->solver_area();
}

void RefinedSolveResult::check(core::StreamRef stream) const { check_info(info, "linalg::refined_solve", stream); }

}  // namespace gpumath::linalg
