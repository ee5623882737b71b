// SPDX-License-Identifier: Apache-2.0
// The SpMM plan: cuSPARSE's descriptors, buffer and preprocess made once, cusparseSpMM per execute.
#include <gpumath/sparse/spmm.hpp>

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/core/memory.hpp>
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

constexpr const char* plan_api = "sparse::SpMM";

bool is_real_or_complex(DataType t) noexcept {
    return t == DataType::f32 || t == DataType::f64 || t == DataType::c32 || t == DataType::c64;
}

/// cuSPARSE's SpMM dtypes: A, B and C of one dtype among f32, f64, c32, c64; or A and B f16 or bf16
/// with C f32. The compute type is C's.
bool spmm_types(DataType a, DataType b, DataType c) noexcept {
    if (is_real_or_complex(c)) return a == c && b == c;
    return false;
}

bool spmm_half_types(DataType a, DataType b, DataType c) noexcept {
    return (a == DataType::f16 || a == DataType::bf16) && b == a && c == DataType::f32;
}

cusparseSpMMAlg_t spmm_alg(sparse::Format f, sparse::SpMMAlgorithm a) noexcept {
    const bool coo = f == sparse::Format::coo;
    switch (a) {
        case sparse::SpMMAlgorithm::alg1:
            return coo                        ? CUSPARSE_SPMM_COO_ALG1
                   : f == sparse::Format::bsr ? CUSPARSE_SPMM_BSR_ALG1
                                              : CUSPARSE_SPMM_CSR_ALG1;
        case sparse::SpMMAlgorithm::alg2:
            return coo ? CUSPARSE_SPMM_COO_ALG2 : CUSPARSE_SPMM_CSR_ALG2;
        case sparse::SpMMAlgorithm::alg3:
            return coo ? CUSPARSE_SPMM_COO_ALG3 : CUSPARSE_SPMM_CSR_ALG3;
        case sparse::SpMMAlgorithm::alg4:
            return CUSPARSE_SPMM_COO_ALG4;
        default:
            return CUSPARSE_SPMM_ALG_DEFAULT;
    }
}

/// The numbered algorithms `f` has.
int spmm_algorithms_of(sparse::Format f) noexcept {
    switch (f) {
        case sparse::Format::coo:
            return 4;
        case sparse::Format::bsr:
            return 1;
        default:
            return 3;
    }
}

/// cuSPARSE's CSR_ALG3 runs op(A) = A of a CSR matrix, one matrix (no batch): CSC maps to it and is
/// refused ("not valid for CSC format"), as are transposes and batches ("numBatches != 1").
bool csr_alg3_takes(sparse::Format f, sparse::Operation op, std::int64_t batch) noexcept {
    return f == sparse::Format::csr && op == sparse::Operation::none && batch == 1;
}

/// `count` copies of the `bytes` at `src`, one after another in a new buffer on `stream` (log2(count)
/// copies, each doubling what is there).
core::Buffer repeated(const void* src, std::size_t bytes, std::int64_t count, core::StreamRef stream,
                      const std::shared_ptr<core::MemoryResource>& resource) {
    core::Buffer out(std::max<std::size_t>(bytes * std::size_t(count), 1), stream, resource);
    if (bytes == 0) return out;
    auto* base = static_cast<unsigned char*>(out.data());
    copy_async(base, src, bytes, stream);
    for (std::int64_t done = 1; done < count;) {
        const std::int64_t now = std::min(done, count - done);
        copy_async(base + bytes * std::size_t(done), base, bytes * std::size_t(now), stream);
        done += now;
    }
    return out;
}

/// How a dense operand is stored: row- or column-major with a leading dimension, and its batch.
struct DenseShape {
    std::int64_t rows = 0, cols = 0, batch = 1, batch_stride = 0;
    bool row_major = true;
};

/// A dense matrix `(rows, cols)` or batch `(batch, rows, cols)`: row-major (unit stride along the
/// last dimension, the other at least cols) or column-major (unit stride along rows, the other at
/// least rows); a batch's matrices one stride apart, not overlapping.
DenseShape dense_shape(const TensorLayout& v, const char* name, const char* api) {
    if (v.rank() != 2 && v.rank() != 3)
        throw_invalid(fmt::format("{}: rank {}; {} is a matrix (rows, cols) or a batch (batch, rows, cols)", name,
                                  v.rank(), name),
                      api);
    DenseShape d;
    const bool batched = v.rank() == 3;
    d.rows = v.shape(-2);
    d.cols = v.shape(-1);
    d.batch = batched ? v.shape(0) : 1;
    const std::int64_t s0 = v.stride(-2), s1 = v.stride(-1);
    // The order cuSPARSE's descriptor (DnMatDescriptor) takes: row-major when the last dimension has
    // unit stride and rows lie at least a row apart, else column-major.
    d.row_major = s1 == 1 && (d.rows == 1 || s0 >= d.cols);
    const bool col = (d.rows <= 1 || s0 == 1) && (d.cols <= 1 || s1 >= d.rows);
    if (!d.row_major && !col)
        throw_invalid(fmt::format("{}: strides {} for a {} × {} matrix are neither row-major (unit stride along "
                                  "columns) nor column-major (unit stride along rows)",
                                  name, gpumath::to_string(v.strides()), d.rows, d.cols),
                      api);
    if (batched && d.batch > 1) {
        d.batch_stride = v.stride(0);
        const std::int64_t ld = d.row_major ? (d.rows == 1 ? d.cols : s0) : (d.cols == 1 ? d.rows : s1);
        const std::int64_t span = ld * (d.row_major ? d.rows : d.cols);
        if (d.batch_stride < span)
            throw_invalid(fmt::format("{}: batch stride {} is below one matrix's span ({}); a batch's matrices lie "
                                      "apart, one stride between them",
                                      name, d.batch_stride, span),
                          api);
    }
    return d;
}

}  // namespace

/// What a captured graph and the plan share: the descriptors and the buffer preprocess filled.
struct SpMMResources {
    std::unique_ptr<SpMatDescriptor> mat;
    std::unique_ptr<DnMatDescriptor> b, c;
    core::Buffer buffer;
    // A's index arrays once per matrix of a batch of value arrays: cuSPARSE strides a CSR batch's
    // column indices with its values (one stride for both; COO: rows, columns and values), so a
    // pattern shared by the batch is repeated for it.
    core::Buffer batch_indices, batch_rows;
    const void* values = nullptr;  // what the descriptors point at (set again only when it changes)
    const void* b_data = nullptr;
    const void* c_data = nullptr;

    SpMMResources() = default;
    SpMMResources(const SpMMResources&) = delete;
    SpMMResources& operator=(const SpMMResources&) = delete;
    SpMMResources(SpMMResources&&) = delete;
    SpMMResources& operator=(SpMMResources&&) = delete;
    ~SpMMResources() {
        if (!buffer.empty() || !batch_indices.empty()) {
            (void)cudaDeviceSynchronize();  // executions in flight on any stream
            buffer.reset(core::StreamRef{});
            batch_indices.reset(core::StreamRef{});
            batch_rows.reset(core::StreamRef{});
        }
    }
};

struct SpMMImpl final : ProductPlan {
    sparse::MatrixView a;
    TensorLayout b, c;
    DenseShape bs, cs;
    sparse::SpMMOptions options;
    sparse::SpMMAlgorithm algorithm = sparse::SpMMAlgorithm::automatic;
    cusparseSpMMAlg_t alg = CUSPARSE_SPMM_ALG_DEFAULT;
    DataType compute = DataType::f32;
    bool trivial = false;  // no output entries, or op(A) has no columns
    std::shared_ptr<SpMMResources> resources;

    SpMMImpl() = default;
    SpMMImpl(const SpMMImpl&) = delete;
    SpMMImpl& operator=(const SpMMImpl&) = delete;
    SpMMImpl(SpMMImpl&&) = delete;
    SpMMImpl& operator=(SpMMImpl&&) = delete;
    ~SpMMImpl() override {
        if (resources && !resources->buffer.empty()) drop_later(std::move(resources), device);
    }

    void plan_locked() override;
    void run(const TensorView& bv, const TensorView& cv, const sparse::MatrixView& m, double alpha, double beta,
             core::StreamRef stream, const char* api);
    /// Describes a dense operand (and broadcasts one matrix over the batch).
    [[nodiscard]] std::unique_ptr<DnMatDescriptor> describe(const TensorView& v, const DenseShape& d) const;
};

std::unique_ptr<DnMatDescriptor> SpMMImpl::describe(const TensorView& v, const DenseShape& d) const {
    auto descr = std::make_unique<DnMatDescriptor>(v);
    if (d.batch == 1 && cs.batch > 1)
        check_cusparse(cusparseDnMatSetStridedBatch(descr->get(), int(cs.batch), 0), "cusparseDnMatSetStridedBatch",
                       "broadcasting one dense matrix over a batch");
    return descr;
}

void SpMMImpl::plan_locked() {
    if (trivial) {
        algorithm = options.algorithm == sparse::SpMMAlgorithm::automatic ? sparse::SpMMAlgorithm::library_default
                                                                          : options.algorithm;
        return;
    }
    const RelaxedCaptureMode relaxed("planning a sparse::SpMM");
    const core::Stream stream;
    auto res = std::make_shared<SpMMResources>();
    // Scratch operands of the planned layouts: cuSPARSE sizes and preprocesses with real operands.
    core::Buffer bbuf(std::size_t(std::max<std::int64_t>(b.span_bytes(), 1)), stream, options.memory_resource);
    core::Buffer cbuf(std::size_t(std::max<std::int64_t>(c.span_bytes(), 1)), stream, options.memory_resource);
    const TensorView bv(bbuf.data(), b), cv(cbuf.data(), c);
    fill(bv, std::complex<double>(1.0, 0.0), stream);
    fill(cv, std::complex<double>(0.0, 0.0), stream);
    if (a.batch() > 1) {
        const std::size_t isz = size_of(a.index_type()), stored = std::size_t(a.stored());
        res->batch_indices = repeated(a.indices().data(), isz * stored, a.batch(), stream, options.memory_resource);
        if (a.format() == sparse::Format::coo)
            res->batch_rows =
                repeated(a.row_indices().data(), isz * stored, a.batch(), stream, options.memory_resource);
    }
    // A descriptor per candidate: preprocess makes its buffer the matrix's one active buffer, and a
    // product with another algorithm's buffer on that matrix may read the wrong acceleration data.
    const auto describe_a = [&] {
        auto mat = std::make_unique<SpMatDescriptor>(a, res->batch_indices.data(), res->batch_rows.data());
        if (a.batch() == 1 && cs.batch > 1) {
            const bool coo = a.format() == sparse::Format::coo;
            const cusparseStatus_t s = coo ? cusparseCooSetStridedBatch(mat->get(), int(cs.batch), 0)
                                           : cusparseCsrSetStridedBatch(mat->get(), int(cs.batch), 0, 0);
            check_cusparse(s, coo ? "cusparseCooSetStridedBatch" : "cusparseCsrSetStridedBatch",
                           "broadcasting one sparse matrix over a batch");
        }
        return mat;
    };
    res->values = a.values().data();
    res->b = describe(bv, bs);
    res->c = describe(cv, cs);
    const cudaDataType ct = to_cuda(compute);
    const cusparseOperation_t op = to_cusparse(options.op, a.value_type());
    const Scalars one(compute, 1.0, 0.0);

    std::vector<sparse::SpMMAlgorithm> candidates;
    if (options.algorithm != sparse::SpMMAlgorithm::automatic) {
        candidates.push_back(options.algorithm);
    } else {
        for (int i = 0; i < spmm_algorithms_of(a.format()); ++i) {
            const auto x = sparse::SpMMAlgorithm(int(sparse::SpMMAlgorithm::alg1) + i);
            if (x == sparse::SpMMAlgorithm::alg3 && a.format() != sparse::Format::coo &&
                !csr_alg3_takes(a.format(), options.op, cs.batch))
                continue;
            candidates.push_back(x);
        }
    }
    std::vector<core::Buffer> buffers(candidates.size());
    std::vector<std::unique_ptr<SpMatDescriptor>> mats(candidates.size());
    std::vector<bool> prepared(candidates.size(), false);
    const auto prepare = [&](int i, core::StreamRef s) {
        const cusparseSpMMAlg_t with = spmm_alg(a.format(), candidates[std::size_t(i)]);
        const SparseHandle h(device, s.handle());
        auto mat = describe_a();
        std::size_t bytes = 0;
        check_cusparse(cusparseSpMM_bufferSize(h.get(), op, CUSPARSE_OPERATION_NON_TRANSPOSE, one.alpha, mat->get(),
                                               res->b->get(), one.beta, res->c->get(), ct, with, &bytes),
                       "cusparseSpMM_bufferSize",
                       fmt::format("sizing an SpMM with {}", to_string(candidates[std::size_t(i)])));
        buffers[std::size_t(i)] = core::Buffer(std::max<std::size_t>(bytes, 1), s, options.memory_resource);
        check_cusparse(
            cusparseSpMM_preprocess(h.get(), op, CUSPARSE_OPERATION_NON_TRANSPOSE, one.alpha, mat->get(), res->b->get(),
                                    one.beta, res->c->get(), ct, with, buffers[std::size_t(i)].data()),
            "cusparseSpMM_preprocess", "preprocessing an SpMM");
        mats[std::size_t(i)] = std::move(mat);
        prepared[std::size_t(i)] = true;
    };
    int chosen = 0;
    if (candidates.size() > 1) {
        const std::string key =
            fmt::format("spmm {} op={} {}x{} nnz={} a_batch={} b={} c={} a={} bc={} index={} on {}",
                        sparse::to_string(a.format()), sparse::to_string(options.op), a.rows(), a.cols(), a.nnz(),
                        a.batch(), gpumath::to_string(b), gpumath::to_string(c), to_string(a.value_type()),
                        to_string(c.dtype()), to_string(a.index_type()), sparse_device_model(device));
        std::vector<std::string> names;
        names.reserve(candidates.size());
        for (const sparse::SpMMAlgorithm x : candidates) names.emplace_back(to_string(x));
        chosen = measured_choice(key, "SpMM", names, prepare, [&](int i, core::StreamRef s) {
            const SparseHandle h(device, s.handle());
            check_cusparse(
                cusparseSpMM(h.get(), op, CUSPARSE_OPERATION_NON_TRANSPOSE, one.alpha, mats[std::size_t(i)]->get(),
                             res->b->get(), one.beta, res->c->get(), ct,
                             spmm_alg(a.format(), candidates[std::size_t(i)]), buffers[std::size_t(i)].data()),
                "cusparseSpMM", "measuring an SpMM algorithm");
        });
    }
    if (!prepared[std::size_t(chosen)]) prepare(chosen, stream);
    stream.synchronize();
    algorithm = candidates[std::size_t(chosen)];
    alg = spmm_alg(a.format(), algorithm);
    res->mat = std::move(mats[std::size_t(chosen)]);
    res->buffer = std::move(buffers[std::size_t(chosen)]);
    res->buffer.set_stream(core::StreamRef{});
    buffer_bytes = res->buffer.size_bytes();
    for (core::Buffer& x : buffers) x.reset(stream);
    bbuf.reset(stream);
    cbuf.reset(stream);
    stream.synchronize();
    resources = std::move(res);
}

void SpMMImpl::run(const TensorView& bv, const TensorView& cv, const sparse::MatrixView& m, double alpha, double beta,
                   core::StreamRef stream, const char* api) {
    if (cv.size() == 0) return;
    ensure_planned(api, stream);
    if (trivial) {  // op(A) has no columns: C = β·C
        if (beta == 0.0) fill(cv, std::complex<double>(0.0, 0.0), stream);
        else if (beta != 1.0)
            throw_not_supported(fmt::format("op(A) has no columns, so C = β·C; β = {} is not 0 or 1", beta), api);
        return;
    }
    SpMMResources& r = *resources;
    const Scalars s(compute, alpha, beta);
    {
        std::lock_guard lock(execute_mutex);
        if (bv.data() != r.b_data) {
            r.b->set_pointer(bv.data());
            r.b_data = bv.data();
        }
        if (cv.data() != r.c_data) {
            r.c->set_pointer(cv.data());
            r.c_data = cv.data();
        }
        if (m.values().data() != r.values) {
            check_cusparse(cusparseSpMatSetValues(r.mat->get(), m.values().data()), "cusparseSpMatSetValues",
                           "pointing an SpMM plan at new values");
            r.values = m.values().data();
        }
        const SparseHandle h(device, stream.handle());
        check_cusparse(
            cusparseSpMM(h.get(), to_cusparse(options.op, a.value_type()), CUSPARSE_OPERATION_NON_TRANSPOSE, s.alpha,
                         r.mat->get(), r.b->get(), s.beta, r.c->get(), to_cuda(compute), alg, r.buffer.data()),
            "cusparseSpMM", "a sparse matrix-dense matrix product");
    }
    if (const CaptureTarget t = capture_target(stream); t.graph != nullptr)
        hold_for_graph(t.graph, t.capture, resources);
}

}  // namespace gpumath::detail

namespace gpumath::sparse {

using detail::SpMMImpl;

SpMM::SpMM(const MatrixView& a, const TensorLayout& b, const TensorLayout& c, const SpMMOptions& options)
    : impl_(std::make_unique<SpMMImpl>()) {
    const char* api = detail::plan_api;
    detail::check_made(a, "a", api);
    detail::check_enum(options.op, operation_count, "an Operation", "options.op", api);
    detail::check_enum(options.algorithm, spmm_algorithm_count, "an SpMMAlgorithm", "options.algorithm", api);
    detail::check_enum(b.dtype(), data_type_count, "a DataType", "b.dtype", api);
    detail::check_enum(c.dtype(), data_type_count, "a DataType", "c.dtype", api);
    const detail::DenseShape bs = detail::dense_shape(b, "b", api);
    const detail::DenseShape cs = detail::dense_shape(c, "c", api);
    const std::int64_t m = detail::op_rows(a, options.op), k = detail::op_cols(a, options.op);
    if (bs.rows != k)
        detail::throw_invalid(fmt::format("b: {} rows where op(A) ({} × {}) has {} columns", bs.rows, m, k, k), api);
    if (cs.rows != m)
        detail::throw_invalid(fmt::format("c: {} rows where op(A) ({} × {}) has {} rows", cs.rows, m, k, m), api);
    if (cs.cols != bs.cols)
        detail::throw_invalid(fmt::format("b, c: {} and {} columns; C has B's columns", bs.cols, cs.cols), api);
    if (bs.batch != 1 && bs.batch != cs.batch)
        detail::throw_invalid(
            fmt::format("b: a batch of {} where c has {}; B is one matrix or one per matrix of C", bs.batch, cs.batch),
            api);
    if (a.batch() != 1 && a.batch() != cs.batch)
        detail::throw_invalid(fmt::format("a: a batch of {} value arrays where c has {} matrices; A is one matrix or "
                                          "one per matrix of C",
                                          a.batch(), cs.batch),
                              api);
    if (cs.batch > 1 && (a.format() == Format::csc || a.format() == Format::bsr))
        detail::throw_not_supported(fmt::format("a: cuSPARSE runs batches of CSR and COO matrices only, not of {} "
                                                "(convert A to CSR)",
                                                to_string(a.format())),
                                    api);
    if (cs.batch > std::numeric_limits<int>::max())
        detail::throw_not_supported(fmt::format("c: a batch of {} is above cuSPARSE's int range", cs.batch), api);
    if (bs.row_major != cs.row_major)
        detail::throw_not_supported(
            fmt::format("b, c: B is {} and C {}; give both in one order", bs.row_major ? "row-major" : "column-major",
                        cs.row_major ? "row-major" : "column-major"),
            api);
    if (!detail::spmm_types(a.value_type(), b.dtype(), c.dtype()) &&
        !detail::spmm_half_types(a.value_type(), b.dtype(), c.dtype()))
        detail::throw_not_supported(
            fmt::format("a, b, c: {}, {} and {}; cuSPARSE's SpMM takes A, B and C of one dtype among f32, f64, c32 "
                        "and c64, or A and B f16 or bf16 with C f32",
                        to_string(a.value_type()), to_string(b.dtype()), to_string(c.dtype())),
            api);
    if (options.algorithm != SpMMAlgorithm::automatic && options.algorithm != SpMMAlgorithm::library_default &&
        int(options.algorithm) - int(SpMMAlgorithm::alg1) >= detail::spmm_algorithms_of(a.format()))
        detail::throw_not_supported(fmt::format("options.algorithm: {} has no {} counterpart ({} has alg1 to alg{})",
                                                to_string(options.algorithm), to_string(a.format()),
                                                to_string(a.format()), detail::spmm_algorithms_of(a.format())),
                                    api);
    if (options.algorithm == SpMMAlgorithm::alg3 && a.format() != Format::coo &&
        !detail::csr_alg3_takes(a.format(), options.op, cs.batch))
        detail::throw_not_supported(
            fmt::format("options.algorithm: alg3 (cuSPARSE's CSR_ALG3) takes op(A) = A of one CSR matrix; here a {} "
                        "matrix, op {}, a batch of {} (choose alg1, alg2 or automatic)",
                        to_string(a.format()), to_string(options.op), cs.batch),
            api);
    impl_->a = a;
    impl_->b = b;
    impl_->c = c;
    impl_->bs = bs;
    impl_->cs = cs;
    impl_->options = options;
    impl_->algorithm = options.algorithm;
    impl_->compute = c.dtype();
    impl_->trivial = m == 0 || k == 0 || cs.cols == 0 || cs.batch == 0;
}

SpMM::~SpMM() = default;
SpMM::SpMM(SpMM&&) noexcept = default;
SpMM& SpMM::operator=(SpMM&&) noexcept = default;

SpMMImpl& SpMM::impl(const char* api) const {
    if (!impl_) detail::throw_moved_from("sparse::SpMM", api);
    return *impl_;
}

void SpMM::plan() { impl("sparse::SpMM::plan").plan(); }

bool SpMM::planned() const noexcept { return impl_ && impl_->planned.load(std::memory_order_acquire); }

namespace {

void check_dense(const SpMMImpl& state, const TensorView& b, const TensorView& c, const MatrixView& a,
                 const char* api) {
    if (b.layout() != state.b) detail::throw_layout_mismatch("b", b, state.b, api);
    if (c.layout() != state.c) detail::throw_layout_mismatch("c", c, state.c, api);
    detail::check_aligned_to_elements(b, "b", api);
    detail::check_aligned_to_elements(c, "c", api);
    detail::check_apart(c, "c", b, "b", api);
    detail::check_apart_from_matrix(c, "c", a, api);
}

}  // namespace

void SpMM::execute(const TensorView& b, const TensorView& c, double alpha, double beta, core::StreamRef stream) {
    const char* api = "sparse::SpMM::execute";
    SpMMImpl& state = impl(api);
    check_dense(state, b, c, state.a, api);
    state.run(b, c, state.a, alpha, beta, stream, api);
}

void SpMM::execute(const MatrixView& a, const TensorView& b, const TensorView& c, double alpha, double beta,
                   core::StreamRef stream) {
    const char* api = "sparse::SpMM::execute";
    SpMMImpl& state = impl(api);
    detail::check_same_pattern(a, state.a, api);
    check_dense(state, b, c, a, api);
    state.run(b, c, a, alpha, beta, stream, api);
}

const MatrixView& SpMM::matrix() const noexcept {
    static const MatrixView empty;
    return impl_ ? impl_->a : empty;
}

const TensorLayout& SpMM::b_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->b : empty;
}

const TensorLayout& SpMM::c_layout() const noexcept {
    static const TensorLayout empty;
    return impl_ ? impl_->c : empty;
}

const SpMMOptions& SpMM::options() const noexcept {
    static const SpMMOptions empty;
    return impl_ ? impl_->options : empty;
}

SpMMAlgorithm SpMM::algorithm() const noexcept {
    if (!impl_) return SpMMAlgorithm::automatic;
    return planned() ? impl_->algorithm : impl_->options.algorithm;
}

std::size_t SpMM::buffer_size() const noexcept { return planned() ? impl_->buffer_bytes : 0; }

}  // namespace gpumath::sparse
