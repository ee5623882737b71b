// SPDX-License-Identifier: Apache-2.0
// SpGEMM on cuSPARSE's structure-reuse API: work estimation, nnz and copy once when planning (the
// symbolic phase, which reads C's nnz on the host), compute on every execute (capturable).
#include <gpumath/sparse/spgemm.hpp>

#include <atomic>
#include <limits>
#include <mutex>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include "core/stream_workspace.hpp"
#include "detail/status.hpp"
#include "sparse/cusparse.hpp"
#include "sparse/product_checks.hpp"

namespace gpumath::detail {

namespace {

constexpr cusparseSpGEMMAlg_t spgemm_alg = CUSPARSE_SPGEMM_DEFAULT;
constexpr cusparseOperation_t no_op = CUSPARSE_OPERATION_NON_TRANSPOSE;

}  // namespace

struct SpGEMMImpl {
    sparse::MatrixView a, b;
    sparse::SpGEMMOptions options;
    std::mutex mutex;  // planning and enqueuing
    std::atomic<bool> planned{false};
    int device = -1;
    bool trivial = false;  // C has no entries: nothing for cuSPARSE to do
    std::optional<SpMatDescriptor> da, db;
    cusparseSpMatDescr_t dc = nullptr;
    cusparseSpGEMMDescr_t descr = nullptr;
    core::Buffer buffer3, buffer4, buffer5;  // read by every compute
    std::vector<core::Buffer> scratch;       // planning's own, freed once it has finished
    sparse::Matrix c;
    std::int64_t nnz = -1;
    std::optional<core::StreamRef> last_stream;  // of the last compute, under `mutex`

    SpGEMMImpl() = default;
    SpGEMMImpl(const SpGEMMImpl&) = delete;
    SpGEMMImpl& operator=(const SpGEMMImpl&) = delete;
    SpGEMMImpl(SpGEMMImpl&&) = delete;
    SpGEMMImpl& operator=(SpGEMMImpl&&) = delete;
    ~SpGEMMImpl() { reset(); }

    /// Back to the unplanned state (after a failed plan).
    void reset() noexcept {
        if (descr != nullptr) (void)cusparseSpGEMM_destroyDescr(descr);
        if (dc != nullptr) (void)cusparseDestroySpMat(dc);
        descr = nullptr;
        dc = nullptr;
        da.reset();
        db.reset();
        buffer3.reset();
        buffer4.reset();
        buffer5.reset();
        scratch.clear();
        c = sparse::Matrix();
        nnz = -1;
        trivial = false;
    }

    void plan(core::StreamRef stream, const char* api);
    void plan_locked(core::StreamRef stream);
    void compute(core::StreamRef stream) const;
};

void SpGEMMImpl::plan(core::StreamRef stream, const char* api) {
    if (planned.load(std::memory_order_acquire)) return;
    products::reject_planning_in_capture(stream, api);
    std::lock_guard lock(mutex);
    if (planned.load(std::memory_order_relaxed)) return;
    try {
        plan_locked(stream);
    } catch (...) {
        // What was enqueued may still use the buffers: wait for it before they go.
        release_noexcept([&] { stream.synchronize(); });
        reset();
        throw;
    }
    planned.store(true, std::memory_order_release);
}

void SpGEMMImpl::plan_locked(core::StreamRef stream) {
    device = current_device();
    const std::int64_t m = a.rows(), n = b.cols();
    const DataType vt = a.value_type(), it = a.index_type();
    const std::size_t index_bytes = size_of(it);
    trivial = m == 0 || n == 0 || a.stored() == 0 || b.stored() == 0;
    if (trivial) {
        c = sparse::Matrix::allocate(sparse::Format::csr, m, n, 0, vt, it, core::StreamRef{});
        check(cudaMemsetAsync(c.view().offsets().data(), 0, std::size_t(m + 1) * index_bytes, nullptr),
              "cudaMemsetAsync", "zeroing an empty product's row offsets");
        products::sync_default_stream();
        nnz = 0;
        return;
    }
    const auto& resource = options.memory_resource;
    da.emplace(a);
    db.emplace(b);
    // C's row offsets are found before its nnz is known: into a buffer of their own, copied into
    // C once it is allocated.
    void* offsets = scratch.emplace_back(products::plan_buffer(std::size_t(m + 1) * index_bytes, resource)).data();
    const cusparseIndexType_t cit = index_type_of(it);
    check_cusparse(
        cusparseCreateCsr(&dc, m, n, 0, offsets, nullptr, nullptr, cit, cit, CUSPARSE_INDEX_BASE_ZERO, to_cuda(vt)),
        "cusparseCreateCsr", "describing SpGEMM's product");
    check_cusparse(cusparseSpGEMM_createDescr(&descr), "cusparseSpGEMM_createDescr", "planning a SpGEMM");

    const SparseHandle h(device, stream.handle());
    std::size_t size1 = 0;
    check_cusparse(cusparseSpGEMMreuse_workEstimation(h.get(), no_op, no_op, da->get(), db->get(), dc, spgemm_alg,
                                                      descr, &size1, nullptr),
                   "cusparseSpGEMMreuse_workEstimation", "sizing SpGEMM's work estimation");
    void* buffer1 = scratch.emplace_back(products::plan_buffer(size1, resource)).data();
    check_cusparse(cusparseSpGEMMreuse_workEstimation(h.get(), no_op, no_op, da->get(), db->get(), dc, spgemm_alg,
                                                      descr, &size1, buffer1),
                   "cusparseSpGEMMreuse_workEstimation", "SpGEMM's work estimation");

    std::size_t size2 = 0, size3 = 0, size4 = 0;
    check_cusparse(cusparseSpGEMMreuse_nnz(h.get(), no_op, no_op, da->get(), db->get(), dc, spgemm_alg, descr, &size2,
                                           nullptr, &size3, nullptr, &size4, nullptr),
                   "cusparseSpGEMMreuse_nnz", "sizing SpGEMM's symbolic phase");
    void* buffer2 = scratch.emplace_back(products::plan_buffer(size2, resource)).data();
    buffer3 = products::plan_buffer(size3, resource);
    buffer4 = products::plan_buffer(size4, resource);
    check_cusparse(cusparseSpGEMMreuse_nnz(h.get(), no_op, no_op, da->get(), db->get(), dc, spgemm_alg, descr, &size2,
                                           buffer2, &size3, buffer3.data(), &size4, buffer4.data()),
                   "cusparseSpGEMMreuse_nnz", "SpGEMM's symbolic phase");
    stream.synchronize();  // C's nnz reaches the host

    std::int64_t rows = 0, cols = 0;
    check_cusparse(cusparseSpMatGetSize(dc, &rows, &cols, &nnz), "cusparseSpMatGetSize", "reading SpGEMM's nnz");
    if (it == DataType::i32 && nnz > std::numeric_limits<std::int32_t>::max())
        throw_not_supported(
            fmt::format("the product has {} entries, more than i32 indices can address (cuSPARSE's SpGEMM takes i32)",
                        nnz),
            "sparse::SpGEMM::plan");
    c = sparse::Matrix::allocate(sparse::Format::csr, m, n, nnz, vt, it, core::StreamRef{});
    products::sync_default_stream();
    const sparse::MatrixView& cv = c.view();
    check(cudaMemcpyAsync(cv.offsets().data(), offsets, std::size_t(m + 1) * index_bytes, cudaMemcpyDeviceToDevice,
                          stream.handle()),
          "cudaMemcpyAsync", "copying SpGEMM's row offsets into the product");
    if (nnz == 0) {  // no product of stored entries: C is its offsets alone
        trivial = true;
        stream.synchronize();
        scratch.clear();
        return;
    }
    check_cusparse(cusparseCsrSetPointers(dc, cv.offsets().data(), cv.indices().data(), cv.values().data()),
                   "cusparseCsrSetPointers", "pointing SpGEMM's product at its arrays");

    std::size_t size5 = 0;
    check_cusparse(
        cusparseSpGEMMreuse_copy(h.get(), no_op, no_op, da->get(), db->get(), dc, spgemm_alg, descr, &size5, nullptr),
        "cusparseSpGEMMreuse_copy", "sizing SpGEMM's copy");
    buffer5 = products::plan_buffer(size5, resource);
    check_cusparse(cusparseSpGEMMreuse_copy(h.get(), no_op, no_op, da->get(), db->get(), dc, spgemm_alg, descr, &size5,
                                            buffer5.data()),
                   "cusparseSpGEMMreuse_copy", "SpGEMM's copy of the product's pattern");
    stream.synchronize();
    scratch.clear();
}

void SpGEMMImpl::compute(core::StreamRef stream) const {
    if (trivial) return;
    const DataType vt = a.value_type();
    const products::Scalar one(1.0, vt, "alpha", "sparse::SpGEMM::execute"),
        zero(0.0, vt, "beta", "sparse::SpGEMM::execute");
    const SparseHandle h(device, stream.handle());
    check_cusparse(cusparseSpGEMMreuse_compute(h.get(), no_op, no_op, one.get(), da->get(), db->get(), zero.get(), dc,
                                               to_cuda(vt), spgemm_alg, descr),
                   "cusparseSpGEMMreuse_compute", "SpGEMM's numeric phase");
}

}  // namespace gpumath::detail

namespace gpumath::sparse {

using detail::SpGEMMImpl;

namespace {

void check_spgemm_operands(const MatrixView& a, const MatrixView& b, const char* api) {
    detail::products::check_sparse_operand(a, "a", {Format::csr}, api);
    detail::products::check_sparse_operand(b, "b", {Format::csr}, api);
    if (a.value_type() != b.value_type())
        detail::throw_invalid(fmt::format("a.values: dtype {}, b.values: dtype {}; both operands have one dtype",
                                          to_string(a.value_type()), to_string(b.value_type())),
                              api);
    if (a.index_type() != DataType::i32 || b.index_type() != DataType::i32)
        detail::throw_not_supported(fmt::format("index dtypes {} (a) and {} (b); cuSPARSE's SpGEMM takes i32 indices",
                                                to_string(a.index_type()), to_string(b.index_type())),
                                    api);
    if (a.cols() != b.rows())
        detail::throw_invalid(fmt::format("a is {} × {} and b is {} × {}; a.cols() must equal b.rows()", a.rows(),
                                          a.cols(), b.rows(), b.cols()),
                              api);
}

}  // namespace

SpGEMM::SpGEMM(const MatrixView& a, const MatrixView& b, const SpGEMMOptions& options) {
    check_spgemm_operands(a, b, "sparse::SpGEMM");
    impl_ = std::make_unique<SpGEMMImpl>();
    impl_->a = a;
    impl_->b = b;
    impl_->options = options;
}

SpGEMM::~SpGEMM() = default;
SpGEMM::SpGEMM(SpGEMM&&) noexcept = default;
SpGEMM& SpGEMM::operator=(SpGEMM&&) noexcept = default;

SpGEMMImpl& SpGEMM::impl(const char* api) const {
    if (!impl_) detail::throw_moved_from("sparse::SpGEMM", api);
    return *impl_;
}

void SpGEMM::plan(core::StreamRef stream) {
    constexpr const char* api = "sparse::SpGEMM::plan";
    impl(api).plan(stream, api);
}

bool SpGEMM::planned() const noexcept { return impl_ && impl_->planned.load(std::memory_order_acquire); }

void SpGEMM::execute(core::StreamRef stream) {
    constexpr const char* api = "sparse::SpGEMM::execute";
    SpGEMMImpl& state = impl(api);
    state.plan(stream, api);
    detail::products::check_plan_device(state.device, api);
    std::lock_guard lock(state.mutex);
    state.compute(stream);
    state.last_stream = stream;
}

const MatrixView& SpGEMM::result() const {
    const SpGEMMImpl& state = impl("sparse::SpGEMM::result");
    return state.c.view();
}

std::int64_t SpGEMM::nnz() const noexcept { return planned() ? impl_->nnz : -1; }

const SpGEMMOptions& SpGEMM::options() const noexcept {
    static const SpGEMMOptions empty;
    return impl_ ? impl_->options : empty;
}

Matrix SpGEMM::release_result() && {
    SpGEMMImpl& state = impl("sparse::SpGEMM::release_result");
    Matrix c = std::move(state.c);
    {
        // The buffers every compute reads go in stream order after the last one (on its stream),
        // not on the null stream, which a non-blocking stream does not wait for.
        const std::lock_guard lock(state.mutex);
        if (state.last_stream)
            for (core::Buffer* b : {&state.buffer3, &state.buffer4, &state.buffer5}) b->set_stream(*state.last_stream);
    }
    impl_.reset();
    return c;
}

Matrix spgemm(const MatrixView& a, const MatrixView& b, core::StreamRef stream, const SpGEMMOptions& options) {
    check_spgemm_operands(a, b, "sparse::spgemm");  // before any CUDA call, under this call's name
    SpGEMM plan(a, b, options);
    detail::reject_capture(stream, "sparse::spgemm",
                           "the product's nnz must reach the host; plan a SpGEMM before the capture and capture its "
                           "execute");
    plan.execute(stream);
    return std::move(plan).release_result();
}

}  // namespace gpumath::sparse
