// SPDX-License-Identifier: Apache-2.0
// The SpMV plan: cuSPARSE's descriptors, buffer and preprocess made once, cusparseSpMV per execute.
#include <gpumath/sparse/spmv.hpp>

#include <array>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/error.hpp>
#include <gpumath/tensor.hpp>
#include <gpumath/tensor_ops.hpp>
#include "core/graph_holds.hpp"
#include "detail/capture_mode.hpp"
#include "detail/enum_check.hpp"
#include "detail/status.hpp"
#include "sparse/cusparse.hpp"
#include "sparse/products.hpp"

namespace gpumath::detail {
namespace {

constexpr const char* plan_api = "sparse::SpMV";

bool is_half(DataType t) noexcept { return t == DataType::f16 || t == DataType::bf16; }

/// cuSPARSE's SpMV dtypes (its "supported data types" tables): A, x, y and the compute type of one
/// dtype among f32, f64, c32 and c64; A and x f16 (or bf16) with y of theirs or f32, computed in
/// f32; A f32 with x and y f64 or c32; A f64 with x and y c64. A half-precision A never takes f32
/// vectors: A and x share the half dtype.
bool spmv_types(DataType a, DataType x, DataType y) noexcept {
    if (is_half(a)) return x == a && (y == a || y == DataType::f32);
    if (x != y) return false;
    switch (x) {
        case DataType::f32:
            return a == DataType::f32;
        case DataType::f64:
            return a == DataType::f64 || a == DataType::f32;
        case DataType::c32:
            return a == DataType::c32 || a == DataType::f32;
        case DataType::c64:
            return a == DataType::c64 || a == DataType::f64;
        default:
            return false;
    }
}

/// The compute type of a combination spmv_types takes: f32 for half-precision A, else x's dtype.
DataType spmv_compute(DataType a, DataType x) noexcept { return is_half(a) ? DataType::f32 : x; }

cusparseSpMVAlg_t spmv_alg(sparse::Format f, sparse::SpMVAlgorithm a) noexcept {
    switch (a) {
        case sparse::SpMVAlgorithm::alg1:
            return f == sparse::Format::coo   ? CUSPARSE_SPMV_COO_ALG1
                   : f == sparse::Format::bsr ? CUSPARSE_SPMV_BSR_ALG1
                                              : CUSPARSE_SPMV_CSR_ALG1;
        case sparse::SpMVAlgorithm::alg2:
            return f == sparse::Format::coo ? CUSPARSE_SPMV_COO_ALG2 : CUSPARSE_SPMV_CSR_ALG2;
        default:
            return CUSPARSE_SPMV_ALG_DEFAULT;
    }
}

/// A vector layout: 1-D, `n` entries, unit stride (or at most one entry).
void check_vector_layout(const TensorLayout& v, std::int64_t n, const char* name, const char* what, const char* api) {
    if (v.rank() != 1)
        throw_invalid(
            fmt::format("{}: rank {}; {} is a 1-D vector of {} entries (op(A)'s {})", name, v.rank(), name, n, what),
            api);
    if (v.shape(0) != n)
        throw_invalid(fmt::format("{}: {} entries where op(A) has {} {}", name, v.shape(0), n, what), api);
    if (n > 1 && v.stride(0) != 1)
        throw_invalid(fmt::format("{}: stride {}; cuSPARSE's vectors are contiguous (stride 1)", name, v.stride(0)),
                      api);
}

}  // namespace

/// What a captured graph and the plan share: the descriptors and the buffer preprocess filled.
/// Dropped on gpumath's release thread, which waits for the device before freeing the buffer.
struct SpMVResources {
    int device = -1;
    std::unique_ptr<SpMatDescriptor> mat;
    std::unique_ptr<DnVecDescriptor> x, y;
    core::Buffer buffer;
    const void* values = nullptr;  // what the descriptors point at (set again only when it changes)
    const void* x_data = nullptr;
    const void* y_data = nullptr;

    SpMVResources() = default;
    SpMVResources(const SpMVResources&) = delete;
    SpMVResources& operator=(const SpMVResources&) = delete;
    SpMVResources(SpMVResources&&) = delete;
    SpMVResources& operator=(SpMVResources&&) = delete;
    ~SpMVResources() {
        if (!buffer.empty()) {
            (void)cudaDeviceSynchronize();  // executions in flight on any stream
            buffer.reset(core::StreamRef{});
        }
    }
};

struct SpMVImpl final : ProductPlan {
    sparse::MatrixView a;
    TensorLayout x, y;
    sparse::SpMVOptions options;
    sparse::SpMVAlgorithm algorithm = sparse::SpMVAlgorithm::automatic;
    cusparseSpMVAlg_t alg = CUSPARSE_SPMV_ALG_DEFAULT;
    DataType compute = DataType::f32;
    bool trivial = false;  // op(A) has no rows or no columns: cuSPARSE is not called
    std::shared_ptr<SpMVResources> resources;

    SpMVImpl() = default;
    SpMVImpl(const SpMVImpl&) = delete;
    SpMVImpl& operator=(const SpMVImpl&) = delete;
    SpMVImpl(SpMVImpl&&) = delete;
    SpMVImpl& operator=(SpMVImpl&&) = delete;
    ~SpMVImpl() override {
        if (resources && !resources->buffer.empty()) drop_later(std::move(resources), device);
    }

    void plan_locked() override;
    void run(const TensorView& xv, const TensorView& yv, const sparse::MatrixView& m, double alpha, double beta,
             core::StreamRef stream, const char* api);
};

void SpMVImpl::plan_locked() {
    if (trivial) {
        algorithm = options.algorithm == sparse::SpMVAlgorithm::automatic ? sparse::SpMVAlgorithm::library_default
                                                                          : options.algorithm;
        return;
    }
    const RelaxedCaptureMode relaxed("planning a sparse::SpMV");
    const core::Stream stream;
    auto res = std::make_shared<SpMVResources>();
    res->device = device;
    // Scratch vectors: cuSPARSE sizes and preprocesses with real operands, and measuring runs products.
    Tensor xs = Tensor::empty(x.dtype(), {x.size()}, stream, options.memory_resource);
    Tensor ys = Tensor::empty(y.dtype(), {y.size()}, stream, options.memory_resource);
    fill(xs, std::complex<double>(1.0, 0.0), stream);
    fill(ys, std::complex<double>(0.0, 0.0), stream);
    res->values = a.values().data();
    res->x = std::make_unique<DnVecDescriptor>(xs.view());
    res->y = std::make_unique<DnVecDescriptor>(ys.view());
    const cudaDataType ct = to_cuda(compute);
    const cusparseOperation_t op = to_cusparse(options.op, a.value_type());
    const Scalars one(compute, 1.0, 0.0);

    std::vector<sparse::SpMVAlgorithm> candidates;
    if (options.algorithm != sparse::SpMVAlgorithm::automatic) candidates.push_back(options.algorithm);
    else if (a.format() == sparse::Format::bsr) candidates.push_back(sparse::SpMVAlgorithm::alg1);
    else candidates = {sparse::SpMVAlgorithm::alg1, sparse::SpMVAlgorithm::alg2};
    std::vector<core::Buffer> buffers(candidates.size());
    // A descriptor per candidate: preprocess makes its buffer the matrix's one active buffer, and a
    // product with another algorithm's buffer on that matrix may read the wrong acceleration data.
    std::vector<std::unique_ptr<SpMatDescriptor>> mats(candidates.size());
    std::vector<bool> prepared(candidates.size(), false);

    const auto prepare = [&](int i, core::StreamRef s) {
        const cusparseSpMVAlg_t with = spmv_alg(a.format(), candidates[std::size_t(i)]);
        const SparseHandle h(device, s.handle());
        auto mat = std::make_unique<SpMatDescriptor>(a);
        std::size_t bytes = 0;
        check_cusparse(cusparseSpMV_bufferSize(h.get(), op, one.alpha, mat->get(), res->x->get(), one.beta,
                                               res->y->get(), ct, with, &bytes),
                       "cusparseSpMV_bufferSize",
                       fmt::format("sizing a SpMV with {}", to_string(candidates[std::size_t(i)])));
        buffers[std::size_t(i)] = core::Buffer(std::max<std::size_t>(bytes, 1), s, options.memory_resource);
        check_cusparse(cusparseSpMV_preprocess(h.get(), op, one.alpha, mat->get(), res->x->get(), one.beta,
                                               res->y->get(), ct, with, buffers[std::size_t(i)].data()),
                       "cusparseSpMV_preprocess", "preprocessing a SpMV");
        mats[std::size_t(i)] = std::move(mat);
        prepared[std::size_t(i)] = true;
    };
    int chosen = 0;
    if (candidates.size() > 1) {
        const std::string key = fmt::format(
            "spmv {} op={} {}x{} nnz={} batch={} a={} x={} y={} index={} on {}", sparse::to_string(a.format()),
            sparse::to_string(options.op), a.rows(), a.cols(), a.nnz(), a.batch(), to_string(a.value_type()),
            to_string(x.dtype()), to_string(y.dtype()), to_string(a.index_type()), sparse_device_model(device));
        std::vector<std::string> names;
        names.reserve(candidates.size());
        for (const sparse::SpMVAlgorithm c : candidates) names.emplace_back(to_string(c));
        chosen = measured_choice(key, "SpMV", names, prepare, [&](int i, core::StreamRef s) {
            const SparseHandle h(device, s.handle());
            check_cusparse(cusparseSpMV(h.get(), op, one.alpha, mats[std::size_t(i)]->get(), res->x->get(), one.beta,
                                        res->y->get(), ct, spmv_alg(a.format(), candidates[std::size_t(i)]),
                                        buffers[std::size_t(i)].data()),
                           "cusparseSpMV", "measuring a SpMV algorithm");
        });
    }
    if (!prepared[std::size_t(chosen)]) prepare(chosen, stream);
    stream.synchronize();
    algorithm = candidates[std::size_t(chosen)];
    alg = spmv_alg(a.format(), algorithm);
    res->mat = std::move(mats[std::size_t(chosen)]);
    res->buffer = std::move(buffers[std::size_t(chosen)]);
    res->buffer.set_stream(core::StreamRef{});
    buffer_bytes = res->buffer.size_bytes();
    for (core::Buffer& b : buffers) b.reset(stream);
    xs = Tensor();
    ys = Tensor();
    stream.synchronize();
    resources = std::move(res);
}

void SpMVImpl::run(const TensorView& xv, const TensorView& yv, const sparse::MatrixView& m, double alpha, double beta,
                   core::StreamRef stream, const char* api) {
    if (yv.size() == 0) return;
    ensure_planned(api, stream);
    if (trivial) {  // op(A) has no columns: y = β·y
        if (beta == 0.0) fill(yv, std::complex<double>(0.0, 0.0), stream);
        else if (beta != 1.0)
            throw_not_supported(fmt::format("op(A) has no columns, so y = β·y; β = {} is not 0 or 1", beta), api);
        return;
    }
    SpMVResources& r = *resources;
    const Scalars s(compute, alpha, beta);
    {
        std::lock_guard lock(execute_mutex);
        if (xv.data() != r.x_data) {
            r.x->set_pointer(xv.data());
            r.x_data = xv.data();
        }
        if (yv.data() != r.y_data) {
            r.y->set_pointer(yv.data());
            r.y_data = yv.data();
        }
        if (m.values().data() != r.values) {
            check_cusparse(cusparseSpMatSetValues(r.mat->get(), m.values().data()), "cusparseSpMatSetValues",
                           "pointing a SpMV plan at new values");
            r.values = m.values().data();
        }
        const SparseHandle h(device, stream.handle());
        check_cusparse(cusparseSpMV(h.get(), to_cusparse(options.op, a.value_type()), s.alpha, r.mat->get(), r.x->get(),
                                    s.beta, r.y->get(), to_cuda(compute), alg, r.buffer.data()),
                       "cusparseSpMV", "a sparse matrix-vector product");
    }
    if (const CaptureTarget t = capture_target(stream); t.graph != nullptr)
        hold_for_graph(t.graph, t.capture, resources);
}

}  // namespace gpumath::detail

namespace gpumath::sparse {

using detail::SpMVImpl;

SpMV::SpMV(const MatrixView& a, const TensorLayout& x, const TensorLayout& y, const SpMVOptions& options)
    : impl_(std::make_unique<SpMVImpl>()) {
    const char* api = detail::plan_api;
    detail::check_made(a, "a", api);
    detail::check_enum(options.op, operation_count, "an Operation", "options.op", api);
    detail::check_enum(options.algorithm, spmv_algorithm_count, "a SpMVAlgorithm", "options.algorithm", api);
    detail::check_enum(x.dtype(), data_type_count, "a DataType", "x.dtype", api);
    detail::check_enum(y.dtype(), data_type_count, "a DataType", "y.dtype", api);
    if (a.batch() > 1)
        detail::throw_not_supported(
            fmt::format("a: a batch of {} matrices; cuSPARSE's SpMV takes one matrix (run a batch as an SpMM with "
                        "one column: B of shape (batch, k, 1))",
                        a.batch()),
            api);
    const std::int64_t m = detail::op_rows(a, options.op), k = detail::op_cols(a, options.op);
    detail::check_vector_layout(x, k, "x", "columns", api);
    detail::check_vector_layout(y, m, "y", "rows", api);
    if (!detail::spmv_types(a.value_type(), x.dtype(), y.dtype()))
        detail::throw_not_supported(
            fmt::format("a, x, y: values {} with x {} and y {}; cuSPARSE's SpMV takes A, x and y of one dtype among "
                        "f32, f64, c32 and c64; A and x f16 (or bf16) with y of theirs or f32; A f32 with x and y f64 "
                        "or c32; A f64 with x and y c64",
                        to_string(a.value_type()), to_string(x.dtype()), to_string(y.dtype())),
            api);
    if (a.format() == Format::bsr && options.algorithm == SpMVAlgorithm::alg2)
        detail::throw_not_supported("options.algorithm: alg2 has no BSR counterpart (BSR has alg1 only)", api);
    impl_->a = a;
    impl_->x = x;
    impl_->y = y;
    impl_->options = options;
    impl_->algorithm = options.algorithm;
    impl_->compute = detail::spmv_compute(a.value_type(), x.dtype());
    impl_->trivial = m == 0 || k == 0;
}

SpMV::~SpMV() = default;
SpMV::SpMV(SpMV&&) noexcept = default;
SpMV& SpMV::operator=(SpMV&&) noexcept = default;

SpMVImpl& SpMV::impl(const char* api) const {
    if (!impl_) detail::throw_moved_from("sparse::SpMV", api);
    return *impl_;
}

void SpMV::plan() { impl("sparse::SpMV::plan").plan(); }

bool SpMV::planned() const noexcept { return impl_ && impl_->planned.load(std::memory_order_acquire); }

namespace {

void check_vectors(const SpMVImpl& state, const TensorView& x, const TensorView& y, const MatrixView& a,
                   const char* api) {
    const auto same = [](const TensorLayout& v, const TensorLayout& planned) {
        return v.dtype() == planned.dtype() && v.rank() == 1 && v.shape(0) == planned.shape(0) &&
               (v.shape(0) <= 1 || v.stride(0) == 1);
    };
    if (!same(x, state.x)) detail::throw_layout_mismatch("x", x, state.x, api);
    if (!same(y, state.y)) detail::throw_layout_mismatch("y", y, state.y, api);
    detail::check_aligned_to_elements(x, "x", api);
    detail::check_aligned_to_elements(y, "y", api);
    detail::check_apart(y, "y", x, "x", api);
    detail::check_apart_from_matrix(y, "y", a, api);
}

}  // namespace

void SpMV::execute(const TensorView& x, const TensorView& y, double alpha, double beta, core::StreamRef stream) {
    const char* api = "sparse::SpMV::execute";
    SpMVImpl& state = impl(api);
    check_vectors(state, x, y, state.a, api);
    state.run(x, y, state.a, alpha, beta, stream, api);
}

void SpMV::execute(const MatrixView& a, const TensorView& x, const TensorView& y, double alpha, double beta,
                   core::StreamRef stream) {
    const char* api = "sparse::SpMV::execute";
    SpMVImpl& state = impl(api);
    detail::check_same_pattern(a, state.a, api);
    check_vectors(state, x, y, a, api);
    state.run(x, y, a, alpha, beta, stream, api);
}

const MatrixView& SpMV::matrix() const noexcept {
    static const MatrixView empty;
    return impl_ ? impl_->a : empty;
}

const TensorLayout& SpMV::x_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->x : empty;
}

const TensorLayout& SpMV::y_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->y : empty;
}

const SpMVOptions& SpMV::options() const noexcept {
    static const SpMVOptions empty;
    return impl_ ? impl_->options : empty;
}

SpMVAlgorithm SpMV::algorithm() const noexcept {
    if (!impl_) return SpMVAlgorithm::automatic;
    return planned() ? impl_->algorithm : impl_->options.algorithm;
}

std::size_t SpMV::buffer_size() const noexcept { return planned() ? impl_->buffer_bytes : 0; }

}  // namespace gpumath::sparse
