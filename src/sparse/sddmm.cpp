// SPDX-License-Identifier: Apache-2.0
// SDDMM on cuSPARSE: buffer size and preprocessing when planning, the product on every execute.
#include <gpumath/sparse/sddmm.hpp>

#include <atomic>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include "detail/status.hpp"
#include "sparse/cusparse.hpp"
#include "sparse/product_checks.hpp"

namespace gpumath::detail {

struct SDDMMImpl {
    TensorView a, b;
    sparse::MatrixView c;
    sparse::SDDMMOptions options;
    std::mutex mutex;  // planning and enqueuing
    std::atomic<bool> planned{false};
    int device = -1;
    bool trivial = false;  // C stores nothing
    std::optional<DnMatDescriptor> da, db;
    std::optional<SpMatDescriptor> dc;
    core::Buffer buffer;  // written by the preprocessing, read by every product

    /// Back to the unplanned state (after a failed plan).
    void reset() noexcept {
        da.reset();
        db.reset();
        dc.reset();
        buffer.reset();
        trivial = false;
    }

    void plan(core::StreamRef stream, const char* api);
    void plan_locked(core::StreamRef stream);
    void compute(const products::Scalar& alpha, const products::Scalar& beta, core::StreamRef stream) const;
};

void SDDMMImpl::plan(core::StreamRef stream, const char* api) {
    if (planned.load(std::memory_order_acquire)) return;
    products::reject_planning_in_capture(stream, api);
    std::lock_guard lock(mutex);
    if (planned.load(std::memory_order_relaxed)) return;
    try {
        plan_locked(stream);
    } catch (...) {
        release_noexcept([&] { stream.synchronize(); });  // before the buffer goes
        reset();
        throw;
    }
    planned.store(true, std::memory_order_release);
}

void SDDMMImpl::plan_locked(core::StreamRef stream) {
    device = current_device();
    trivial = c.stored() == 0 || c.rows() == 0 || c.cols() == 0;
    if (trivial) return;
    da.emplace(a);
    db.emplace(b);
    dc.emplace(c);
    const DataType vt = c.value_type();
    const products::Scalar one(1.0, vt, "alpha", "sparse::SDDMM::plan"), zero(0.0, vt, "beta", "sparse::SDDMM::plan");
    const SparseHandle h(device, stream.handle());
    const cusparseOperation_t op_a = products::cusparse_operation(options.op_a),
                              op_b = products::cusparse_operation(options.op_b);
    std::size_t bytes = 0;
    check_cusparse(cusparseSDDMM_bufferSize(h.get(), op_a, op_b, one.get(), da->get(), db->get(), zero.get(), dc->get(),
                                            to_cuda(vt), CUSPARSE_SDDMM_ALG_DEFAULT, &bytes),
                   "cusparseSDDMM_bufferSize", "sizing an SDDMM");
    buffer = products::plan_buffer(bytes, options.memory_resource);
    check_cusparse(cusparseSDDMM_preprocess(h.get(), op_a, op_b, one.get(), da->get(), db->get(), zero.get(), dc->get(),
                                            to_cuda(vt), CUSPARSE_SDDMM_ALG_DEFAULT, buffer.data()),
                   "cusparseSDDMM_preprocess", "preprocessing an SDDMM");
    stream.synchronize();
}

void SDDMMImpl::compute(const products::Scalar& alpha, const products::Scalar& beta, core::StreamRef stream) const {
    if (trivial) return;
    const SparseHandle h(device, stream.handle());
    check_cusparse(
        cusparseSDDMM(h.get(), products::cusparse_operation(options.op_a), products::cusparse_operation(options.op_b),
                      alpha.get(), da->get(), db->get(), beta.get(), dc->get(), to_cuda(c.value_type()),
                      CUSPARSE_SDDMM_ALG_DEFAULT, buffer.data()),
        "cusparseSDDMM", "a sampled dense-dense product");
}

}  // namespace gpumath::detail

namespace gpumath::sparse {

using detail::SDDMMImpl;

SDDMM::SDDMM(const TensorView& a, const TensorView& b, const MatrixView& c, const SDDMMOptions& options) {
    detail::products::check_sddmm(a, b, c, options.op_a, options.op_b, "sparse::SDDMM");
    impl_ = std::make_unique<SDDMMImpl>();
    impl_->a = a;
    impl_->b = b;
    impl_->c = c;
    impl_->options = options;
}

SDDMM::~SDDMM() = default;
SDDMM::SDDMM(SDDMM&&) noexcept = default;
SDDMM& SDDMM::operator=(SDDMM&&) noexcept = default;

SDDMMImpl& SDDMM::impl(const char* api) const {
    if (!impl_) detail::throw_moved_from("sparse::SDDMM", api);
    return *impl_;
}

void SDDMM::plan(core::StreamRef stream) {
    constexpr const char* api = "sparse::SDDMM::plan";
    impl(api).plan(stream, api);
}

bool SDDMM::planned() const noexcept { return impl_ && impl_->planned.load(std::memory_order_acquire); }

void SDDMM::execute(std::complex<double> alpha, std::complex<double> beta, core::StreamRef stream) {
    constexpr const char* api = "sparse::SDDMM::execute";
    SDDMMImpl& state = impl(api);
    const DataType vt = state.c.value_type();
    const detail::products::Scalar a(alpha, vt, "alpha", api), b(beta, vt, "beta", api);
    state.plan(stream, api);
    detail::products::check_plan_device(state.device, api);
    std::lock_guard lock(state.mutex);
    state.compute(a, b, stream);
}

const SDDMMOptions& SDDMM::options() const noexcept {
    static const SDDMMOptions empty;
    return impl_ ? impl_->options : empty;
}

}  // namespace gpumath::sparse
