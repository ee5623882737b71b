// SPDX-License-Identifier: Apache-2.0
// sparse::DirectSolver on cuDSS: the host checks (in every build), and with cudss.h the phases,
// each one cudssExecute on the caller's stream. Without cudss.h the constructor ends with
// NotSupported saying how to get cuDSS.
#include <gpumath/sparse/direct_solver.hpp>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include <gpumath/error.hpp>

#include "detail/enum_check.hpp"
#include "detail/status.hpp"
#include "sparse/cudss_api.hpp"

#if defined(GPUMATH_HAS_CUDSS)
#include <atomic>

#include <gpumath/core/device.hpp>

#include "core/stream_workspace.hpp"
#endif

namespace gpumath::sparse {

std::string_view to_string(MatrixType type) noexcept {
    switch (type) {
        case MatrixType::general:
            return "general";
        case MatrixType::symmetric:
            return "symmetric";
        case MatrixType::hermitian:
            return "hermitian";
        case MatrixType::spd:
            return "spd";
        case MatrixType::hpd:
            return "hpd";
    }
    return "unknown";
}

std::string_view to_string(MatrixPart part) noexcept {
    switch (part) {
        case MatrixPart::full:
            return "full";
        case MatrixPart::lower:
            return "lower";
        case MatrixPart::upper:
            return "upper";
    }
    return "unknown";
}

}  // namespace gpumath::sparse

namespace gpumath::detail {
namespace {

constexpr const char* solver_type = "sparse::DirectSolver";
constexpr int max_refinement_steps = 100;

[[maybe_unused]] bool overlap(const TensorView& a, const TensorView& b) {
    if (a.span_bytes() == 0 || b.span_bytes() == 0) return false;
    const auto a0 = reinterpret_cast<std::uintptr_t>(a.data()), b0 = reinterpret_cast<std::uintptr_t>(b.data());
    return a0 < b0 + std::uintptr_t(b.span_bytes()) && b0 < a0 + std::uintptr_t(a.span_bytes());
}

/// Every rule of the constructor that the host can check.
void check_matrix(const sparse::MatrixView& a, const sparse::DirectSolverOptions& options, const char* api) {
    check_enum(options.type, sparse::matrix_type_count, "a MatrixType", "options.type", api);
    check_enum(options.part, sparse::matrix_part_count, "a MatrixPart", "options.part", api);
    if (options.refinement_steps < 0 || options.refinement_steps > max_refinement_steps)
        throw_invalid(fmt::format("options.refinement_steps: {}; allowed 0 to {}", options.refinement_steps,
                                  max_refinement_steps),
                      api);
    if (options.type == sparse::MatrixType::general && options.part != sparse::MatrixPart::full)
        throw_invalid(fmt::format("options.part: {} for a general matrix, which must store every entry (full); "
                                  "a triangle is for symmetric, hermitian, spd and hpd matrices",
                                  to_string(options.part)),
                      api);
    if (a.empty()) throw_invalid("a: an empty MatrixView; pass a matrix made by MatrixView::csr", api);
    if (a.format() != sparse::Format::csr)
        throw_invalid(fmt::format("a: format {}; the direct solver takes CSR (convert with sparse::to_csr)",
                                  to_string(a.format())),
                      api);
    if (a.rows() != a.cols())
        throw_invalid(fmt::format("a: {} × {} is not square; a direct solve needs a square matrix", a.rows(), a.cols()),
                      api);
    const DataType t = a.value_type();
    if (t != DataType::f32 && t != DataType::f64 && t != DataType::c32 && t != DataType::c64)
        throw_not_supported(fmt::format("a: values of dtype {}; cuDSS solves f32, f64, c32 and c64", to_string(t)),
                            api);
    if (a.index_type() != DataType::i32)
        throw_not_supported(fmt::format("a: indices of dtype {}; cuDSS takes i32 row offsets and column indices "
                                        "(a matrix with {} rows and {} entries fits them)",
                                        to_string(a.index_type()), a.rows(), a.nnz()),
                            api);
    if (a.batch() != 1)
        throw_not_supported(fmt::format("a: a batch of {} value arrays; DirectSolver solves one matrix (make one "
                                        "solver per matrix, or refactorize with each value array in turn)",
                                        a.batch()),
                            api);
}

/// b or x of solve: A's dtype, (n) with unit stride or (n, k) column-major.
[[maybe_unused]] void check_dense(const TensorView& v, const char* name, std::int64_t n, DataType dtype,
                                  const char* api) {
    if (v.dtype() != dtype)
        throw_invalid(
            fmt::format("{}: dtype {} where the matrix holds {}", name, to_string(v.dtype()), to_string(dtype)), api);
    if (v.rank() != 1 && v.rank() != 2)
        throw_invalid(fmt::format("{}: rank {}; right-hand sides and solutions are (n) or (n, k)", name, v.rank()),
                      api);
    if (v.shape(0) != n)
        throw_invalid(fmt::format("{}: {} rows where the matrix has n = {}", name, v.shape(0), n), api);
    if (n > 1 && v.stride(0) != 1)
        throw_invalid(fmt::format("{}: row stride {}; cuDSS reads column-major vectors and matrices (unit stride "
                                  "along rows)",
                                  name, v.stride(0)),
                      api);
    if (v.rank() == 2 && v.shape(1) > 1 && v.stride(1) < std::max<std::int64_t>(n, 1))
        throw_invalid(fmt::format("{}: column stride {} below n = {}; (n, k) is column-major with a leading "
                                  "dimension of at least n",
                                  name, v.stride(1), n),
                      api);
    if (v.data() == nullptr && v.span_bytes() > 0) throw_invalid(fmt::format("{}: a null data pointer", name), api);
}

[[maybe_unused]] std::int64_t columns_of(const TensorView& v) { return v.rank() == 2 ? v.shape(1) : 1; }

}  // namespace

#if defined(GPUMATH_HAS_CUDSS)

namespace {

cudssMatrixType_t cudss_type(sparse::MatrixType type, bool complex) {
    switch (type) {
        case sparse::MatrixType::symmetric:
            return CUDSS_MTYPE_SYMMETRIC;
        case sparse::MatrixType::hermitian:
            return complex ? CUDSS_MTYPE_HERMITIAN : CUDSS_MTYPE_SYMMETRIC;
        case sparse::MatrixType::spd:
            return CUDSS_MTYPE_SPD;
        case sparse::MatrixType::hpd:
            return complex ? CUDSS_MTYPE_HPD : CUDSS_MTYPE_SPD;
        case sparse::MatrixType::general:
            break;
    }
    return CUDSS_MTYPE_GENERAL;
}

cudssMatrixViewType_t cudss_view(sparse::MatrixPart part) {
    switch (part) {
        case sparse::MatrixPart::lower:
            return CUDSS_MVIEW_LOWER;
        case sparse::MatrixPart::upper:
            return CUDSS_MVIEW_UPPER;
        case sparse::MatrixPart::full:
            break;
    }
    return CUDSS_MVIEW_FULL;
}

/// A cuDSS dense matrix (n, k) column-major over `v`, destroyed with it.
class DenseMatrix {
public:
    DenseMatrix(const TensorView& v, std::int64_t n) {
        const std::int64_t k = columns_of(v);
        const std::int64_t ld = v.rank() == 2 && k > 1 ? v.stride(1) : std::max<std::int64_t>(n, 1);
        check_cudss(cudss().cudssMatrixCreateDn(&m_, n, k, ld, v.data(), to_cuda(v.dtype()), CUDSS_LAYOUT_COL_MAJOR),
                    "cudssMatrixCreateDn", "describing a right-hand side or solution");
    }
    ~DenseMatrix() {
        if (m_ != nullptr) (void)cudss().cudssMatrixDestroy(m_);
    }
    DenseMatrix(const DenseMatrix&) = delete;
    DenseMatrix& operator=(const DenseMatrix&) = delete;
    DenseMatrix(DenseMatrix&&) = delete;
    DenseMatrix& operator=(DenseMatrix&&) = delete;
    [[nodiscard]] cudssMatrix_t get() const noexcept { return m_; }

private:
    cudssMatrix_t m_ = nullptr;
};

}  // namespace

struct DirectSolverImpl {
    enum class Stage : std::uint8_t { fresh, analyzed, factorized };

    sparse::MatrixView a;
    sparse::DirectSolverOptions options;
    mutable std::mutex mutex;  // one phase at a time: cudssSetStream and cudssExecute go in pairs
    std::atomic<bool> is_analyzed{false};
    Stage stage = Stage::fresh;
    const char* last_phase = "no factorization";
    int device = -1;
    cudssHandle_t handle = nullptr;
    cudssConfig_t config = nullptr;
    cudssData_t data = nullptr;
    cudssMatrix_t matrix = nullptr;
    // Analysis and factorization take a solution and a right-hand side they never read: these
    // describe (n, 1) over A's values so that no buffer is needed.
    cudssMatrix_t unread_x = nullptr, unread_b = nullptr;

    DirectSolverImpl(const sparse::MatrixView& view, const sparse::DirectSolverOptions& opts)
        : a(view), options(opts) {}
    ~DirectSolverImpl() {
        if (handle == nullptr) return;
        release_noexcept([&] {
            const DeviceGuard guard(device);
            const CudssApi& api = cudss();
            for (cudssMatrix_t m : {matrix, unread_x, unread_b})
                if (m != nullptr) (void)api.cudssMatrixDestroy(m);
            if (data != nullptr) (void)api.cudssDataDestroy(handle, data);
            if (config != nullptr) (void)api.cudssConfigDestroy(config);
            (void)api.cudssDestroy(handle);
        });
    }
    DirectSolverImpl(const DirectSolverImpl&) = delete;
    DirectSolverImpl& operator=(const DirectSolverImpl&) = delete;
    DirectSolverImpl(DirectSolverImpl&&) = delete;
    DirectSolverImpl& operator=(DirectSolverImpl&&) = delete;

    [[nodiscard]] std::int64_t n() const noexcept { return a.rows(); }

    /// Makes what cuDSS needs (each piece once, so a failed attempt can be retried).
    void create(const CudssApi& api) {
        if (handle == nullptr) {
            device = current_device();
            check_cudss(api.cudssCreate(&handle), "cudssCreate", "creating a cuDSS handle");
        }
        if (config == nullptr) {
            check_cudss(api.cudssConfigCreate(&config), "cudssConfigCreate", "creating the solver's configuration");
            if (options.refinement_steps > 0) {
                int steps = options.refinement_steps;
                check_cudss(api.cudssConfigSet(config, CUDSS_CONFIG_IR_N_STEPS, &steps, sizeof(steps)),
                            "cudssConfigSet", "setting options.refinement_steps");
            }
        }
        if (data == nullptr)
            check_cudss(api.cudssDataCreate(handle, &data), "cudssDataCreate", "creating the solver's data");
        const cudaDataType_t t = to_cuda(a.value_type());
        if (matrix == nullptr) {
            const bool complex = a.value_type() == DataType::c32 || a.value_type() == DataType::c64;
            check_cudss(
                api.cudssMatrixCreateCsr(&matrix, n(), n(), a.nnz(), a.offsets().data(), nullptr, a.indices().data(),
                                         a.values().data(), CUDA_R_32I, CUDA_R_32I, t,
                                         cudss_type(options.type, complex), cudss_view(options.part), CUDSS_BASE_ZERO),
                "cudssMatrixCreateCsr", "describing the matrix");
        }
        for (cudssMatrix_t* m : {&unread_x, &unread_b})
            if (*m == nullptr)
                check_cudss(api.cudssMatrixCreateDn(m, n(), 1, n(), a.values().data(), t, CUDSS_LAYOUT_COL_MAJOR),
                            "cudssMatrixCreateDn", "describing the analysis's unused right-hand side");
    }

    void execute(const CudssApi& api, int phase, cudssMatrix_t x, cudssMatrix_t b, core::StreamRef stream,
                 const char* what) {
        check_cudss(api.cudssSetStream(handle, stream.handle()), "cudssSetStream", what);
        check_cudss(api.cudssExecute(handle, phase, config, data, matrix, x, b), "cudssExecute", what);
    }

    void analyze_locked(core::StreamRef stream) {
        if (stage != Stage::fresh) return;
        if (n() > 0) {
            const CudssApi& api = cudss();
            create(api);
            const DeviceGuard guard(device);
            execute(api, CUDSS_PHASE_ANALYSIS, unread_x, unread_b, stream, "reordering and symbolic factorization");
        }
        stage = Stage::analyzed;
        is_analyzed.store(true, std::memory_order_release);
    }

    void factorize_locked(core::StreamRef stream, bool again) {
        analyze_locked(stream);
        if (n() > 0) {
            const CudssApi& api = cudss();
            const DeviceGuard guard(device);
            int zero = 0;
            check_cudss(api.cudssDataSet(handle, data, CUDSS_DATA_INFO, &zero, sizeof(zero)), "cudssDataSet",
                        "clearing the info of an earlier factorization");
            const bool refactor = again && stage == Stage::factorized;
            execute(api, refactor ? CUDSS_PHASE_REFACTORIZATION : CUDSS_PHASE_FACTORIZATION, unread_x, unread_b, stream,
                    refactor ? "refactorization" : "numeric factorization");
            last_phase = refactor ? "refactorizing" : "factorizing";
        }
        stage = Stage::factorized;
    }
};

#else

struct DirectSolverImpl {};

#endif

}  // namespace gpumath::detail

namespace gpumath::sparse {

using detail::DirectSolverImpl;

DirectSolver::DirectSolver(const MatrixView& a, const DirectSolverOptions& options) {
    const char* api = "sparse::DirectSolver";
    detail::check_matrix(a, options, api);
#if defined(GPUMATH_HAS_CUDSS)
    impl_ = std::make_unique<DirectSolverImpl>(a, options);
#else
    detail::throw_not_supported(fmt::format("gpumath was built without cuDSS's header cudss.h, so it has no sparse "
                                            "direct solver; rebuild with it: run scripts/deps.sh, or `pip install "
                                            "nvidia-cudss-cu13` and configure with -DGPUMATH_CUDSS_ROOT=<the folder "
                                            "holding nvidia/cu13>; then at run time {}",
                                            detail::cudss_install_hint()),
                                api);
#endif
}

DirectSolver::~DirectSolver() = default;
DirectSolver::DirectSolver(DirectSolver&&) noexcept = default;
DirectSolver& DirectSolver::operator=(DirectSolver&&) noexcept = default;

DirectSolverImpl& DirectSolver::impl(const char* api) const {
    if (!impl_) detail::throw_moved_from(detail::solver_type, api);
    return *impl_;
}

bool DirectSolver::supported() noexcept {
#if defined(GPUMATH_HAS_CUDSS)
    return true;
#else
    return false;
#endif
}

int DirectSolver::library_version() {
#if defined(GPUMATH_HAS_CUDSS)
    return detail::cudss().version;
#else
    detail::throw_not_supported("gpumath was built without cuDSS's header cudss.h (see cmake/gpumath-cudss.cmake)",
                                "sparse::DirectSolver::library_version");
#endif
}

#if defined(GPUMATH_HAS_CUDSS)

namespace {

constexpr const char* capture_refusal =
    "cuDSS's phases are not documented as capturable (they allocate and may synchronize); run them outside the "
    "capture";

}  // namespace

void DirectSolver::analyze(core::StreamRef stream) {
    const char* api = "sparse::DirectSolver::analyze";
    DirectSolverImpl& state = impl(api);
    const std::scoped_lock lock(state.mutex);
    if (state.stage != DirectSolverImpl::Stage::fresh) return;
    detail::reject_capture(stream, api, capture_refusal);
    state.analyze_locked(stream);
}

bool DirectSolver::analyzed() const noexcept { return impl_ && impl_->is_analyzed.load(std::memory_order_acquire); }

void DirectSolver::factorize(core::StreamRef stream) {
    const char* api = "sparse::DirectSolver::factorize";
    DirectSolverImpl& state = impl(api);
    const std::scoped_lock lock(state.mutex);
    detail::reject_capture(stream, api, capture_refusal);
    state.factorize_locked(stream, false);
}

void DirectSolver::refactorize(const TensorView& values, core::StreamRef stream) {
    const char* api = "sparse::DirectSolver::refactorize";
    DirectSolverImpl& state = impl(api);
    const std::scoped_lock lock(state.mutex);
    if (values.dtype() != state.a.value_type() || !std::ranges::equal(values.shape(), state.a.values().shape()))
        detail::throw_invalid(fmt::format("values: {} where the matrix's values are {}", to_string(values.layout()),
                                          to_string(state.a.values().layout())),
                              api);
    const MatrixView next = state.a.with_values(values);
    detail::reject_capture(stream, api, capture_refusal);
    if (state.matrix != nullptr) {
        const detail::DeviceGuard guard(state.device);
        detail::check_cudss(detail::cudss().cudssMatrixSetValues(state.matrix, values.data()), "cudssMatrixSetValues",
                            "pointing the matrix at its new values");
        for (cudssMatrix_t m : {state.unread_x, state.unread_b})
            detail::check_cudss(detail::cudss().cudssMatrixSetValues(m, values.data()), "cudssMatrixSetValues",
                                "pointing the unused right-hand side at the new values");
    }
    state.a = next;
    state.factorize_locked(stream, true);
}

void DirectSolver::solve(const TensorView& b, const TensorView& x, core::StreamRef stream) {
    const char* api = "sparse::DirectSolver::solve";
    DirectSolverImpl& state = impl(api);
    const std::scoped_lock lock(state.mutex);
    const std::int64_t n = state.n();
    const DataType t = state.a.value_type();
    detail::check_dense(b, "b", n, t, api);
    detail::check_dense(x, "x", n, t, api);
    if (detail::columns_of(b) != detail::columns_of(x) || b.rank() != x.rank())
        detail::throw_invalid(
            fmt::format("x: shape {} where b is {}; they have one shape", to_string(x.layout()), to_string(b.layout())),
            api);
    if (detail::overlap(b, x))
        detail::throw_invalid("x: overlaps b; the solution needs its own memory (copy b first to solve in place)", api);
    const std::pair<const TensorView*, const char*> arrays[] = {{&state.a.offsets(), "the matrix's row offsets"},
                                                                {&state.a.indices(), "the matrix's column indices"},
                                                                {&state.a.values(), "the matrix's values"}};
    for (const auto& [array, name] : arrays) {
        if (detail::overlap(x, *array)) detail::throw_invalid(fmt::format("x: overlaps {}", name), api);
    }
    if (state.stage != DirectSolverImpl::Stage::factorized)
        detail::throw_invalid("the solver has not factorized its matrix; call factorize() (or refactorize()) first",
                              api);
    if (n == 0 || detail::columns_of(b) == 0) return;
    detail::reject_capture(stream, api, capture_refusal);
    const detail::DeviceGuard guard(state.device);
    const detail::DenseMatrix db(b, n), dx(x, n);
    state.execute(detail::cudss(), CUDSS_PHASE_SOLVE, dx.get(), db.get(), stream, "solve");
}

int DirectSolver::info(core::StreamRef stream) const {
    const char* api = "sparse::DirectSolver::info";
    DirectSolverImpl& state = impl(api);
    const std::scoped_lock lock(state.mutex);
    if (state.handle == nullptr || state.stage != DirectSolverImpl::Stage::factorized) return 0;
    const detail::DeviceGuard guard(state.device);
    stream.synchronize();
    int value = 0;
    std::size_t written = 0;
    detail::check_cudss(
        detail::cudss().cudssDataGet(state.handle, state.data, CUDSS_DATA_INFO, &value, sizeof(value), &written),
        "cudssDataGet", "reading the factorization's info");
    return value;
}

void DirectSolver::check(core::StreamRef stream) const {
    const DirectSolverImpl& state = impl("sparse::DirectSolver::check");
    const int value = info(stream);
    if (value == 0) return;
    const bool definite = state.options.type == MatrixType::spd || state.options.type == MatrixType::hpd;
    throw NumericalError(
        fmt::format("sparse::DirectSolver: cuDSS reported info {} after {} the {} × {} matrix: it is {}", value,
                    state.last_phase, state.n(), state.n(),
                    definite ? "singular or not positive definite (a general or symmetric solver factorizes an "
                               "indefinite one)"
                             : "singular to working precision (a zero pivot)"),
        "sparse::DirectSolver::check", 0, value);
}

const MatrixView& DirectSolver::matrix() const noexcept {
    static const MatrixView empty;
    return impl_ ? impl_->a : empty;
}

const DirectSolverOptions& DirectSolver::options() const noexcept {
    static const DirectSolverOptions defaults;
    return impl_ ? impl_->options : defaults;
}

#else

// Built without cudss.h: no solver can be constructed, so every method meets an empty one.
void DirectSolver::analyze(core::StreamRef) { (void)impl("sparse::DirectSolver::analyze"); }
bool DirectSolver::analyzed() const noexcept { return false; }
void DirectSolver::factorize(core::StreamRef) { (void)impl("sparse::DirectSolver::factorize"); }
void DirectSolver::refactorize(const TensorView&, core::StreamRef) { (void)impl("sparse::DirectSolver::refactorize"); }
void DirectSolver::solve(const TensorView&, const TensorView&, core::StreamRef) {
    (void)impl("sparse::DirectSolver::solve");
}
int DirectSolver::info(core::StreamRef) const {
    (void)impl("sparse::DirectSolver::info");
    return 0;
}
void DirectSolver::check(core::StreamRef) const { (void)impl("sparse::DirectSolver::check"); }
const MatrixView& DirectSolver::matrix() const noexcept {
    static const MatrixView empty;
    return empty;
}
const DirectSolverOptions& DirectSolver::options() const noexcept {
    static const DirectSolverOptions defaults;
    return defaults;
}

#endif

}  // namespace gpumath::sparse
