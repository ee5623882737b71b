// SPDX-License-Identifier: Apache-2.0
#include "sparse/cusparse.hpp"

#include <fmt/format.h>

#include <gpumath/error.hpp>
#include "detail/handle_pool.hpp"
#include "detail/status.hpp"

namespace gpumath::detail {

void throw_cusparse(int status, const char* api, std::string_view context) {
    const char* name = cusparseGetErrorName(cusparseStatus_t(status));
    throw CusparseError(status_message(api, name != nullptr ? name : "CUSPARSE_STATUS_UNKNOWN", status, context),
                        status, api);
}

cusparseIndexType_t index_type_of(DataType t) noexcept {
    return t == DataType::i64 ? CUSPARSE_INDEX_64I : CUSPARSE_INDEX_32I;
}

namespace {

using SparseHandles = StreamBound<cusparseHandle_t>;

}  // namespace

SparseHandle::SparseHandle(int device, cudaStream_t stream) : device_(device) {
    const SparseHandles taken = HandlePool<SparseHandles>::of(device).take("creating a cuSPARSE handle", [&] {
        cusparseHandle_t h = nullptr;
        check_cusparse(cusparseCreate(&h), "cusparseCreate",
                       fmt::format("creating a cuSPARSE handle on device {}", device));
        return SparseHandles{.handle = h};
    });
    handle_ = taken.handle;
    if (taken.stream != stream) {
        if (const cusparseStatus_t s = cusparseSetStream(handle_, stream); s != CUSPARSE_STATUS_SUCCESS) {
            HandlePool<SparseHandles>::of(device_).give_back(taken);
            throw_cusparse(int(s), "cusparseSetStream", "setting a cuSPARSE handle's stream");
        }
    }
    stream_ = stream;
}

SparseHandle::~SparseHandle() {
    HandlePool<SparseHandles>::of(device_).give_back({.handle = handle_, .stream = stream_});
}

SpMatDescriptor::SpMatDescriptor(const sparse::MatrixView& m, const void* batch_indices, const void* batch_rows) {
    const cusparseIndexType_t it = index_type_of(m.index_type());
    const cudaDataType vt = to_cuda(m.value_type());
    const std::int64_t stored = m.stored();
    void* values = m.values().data();
    const bool batch = m.batch() > 1;
    if (batch && (m.format() == sparse::Format::csc || m.format() == sparse::Format::bsr || batch_indices == nullptr ||
                  (m.format() == sparse::Format::coo && batch_rows == nullptr)))
        throw_invalid(fmt::format("a batch of {} matrices over one pattern: cuSPARSE describes CSR and COO "
                                  "batches, with their index arrays repeated per matrix",
                                  sparse::to_string(m.format())),
                      "gpumath::sparse");
    // cuSPARSE takes non-const pointers for the arrays it only reads.
    void* indices = batch ? const_cast<void*>(batch_indices) : m.indices().data();  // NOLINT
    switch (m.format()) {
        case sparse::Format::csr:
            check_cusparse(cusparseCreateCsr(&descr_, m.rows(), m.cols(), stored, m.offsets().data(), indices, values,
                                             it, it, CUSPARSE_INDEX_BASE_ZERO, vt),
                           "cusparseCreateCsr", "describing a CSR matrix");
            break;
        case sparse::Format::csc:
            check_cusparse(cusparseCreateCsc(&descr_, m.rows(), m.cols(), stored, m.offsets().data(), indices, values,
                                             it, it, CUSPARSE_INDEX_BASE_ZERO, vt),
                           "cusparseCreateCsc", "describing a CSC matrix");
            break;
        case sparse::Format::coo:
            check_cusparse(cusparseCreateCoo(&descr_, m.rows(), m.cols(), stored,
                                             batch ? const_cast<void*>(batch_rows) : m.row_indices().data(),  // NOLINT
                                             indices, values, it, CUSPARSE_INDEX_BASE_ZERO, vt),
                           "cusparseCreateCoo", "describing a COO matrix");
            break;
        case sparse::Format::bsr:
            check_cusparse(
                cusparseCreateBsr(
                    &descr_, m.rows() / m.block(), m.cols() / m.block(), stored, m.block(), m.block(),
                    m.offsets().data(), indices, values, it, it, CUSPARSE_INDEX_BASE_ZERO, vt,
                    m.block_order() == sparse::BlockOrder::row_major ? CUSPARSE_ORDER_ROW : CUSPARSE_ORDER_COL),
                "cusparseCreateBsr", "describing a BSR matrix");
            break;
    }
    if (!batch) return;
    const std::int64_t per = m.values().shape(-1);
    const bool coo = m.format() == sparse::Format::coo;
    const cusparseStatus_t s = coo ? cusparseCooSetStridedBatch(descr_, int(m.batch()), per)
                                   : cusparseCsrSetStridedBatch(descr_, int(m.batch()), 0, per);
    if (s != CUSPARSE_STATUS_SUCCESS) {
        (void)cusparseDestroySpMat(descr_);
        throw_cusparse(int(s), coo ? "cusparseCooSetStridedBatch" : "cusparseCsrSetStridedBatch",
                       "describing a batch of sparse matrices sharing one pattern");
    }
}

SpMatDescriptor::~SpMatDescriptor() { (void)cusparseDestroySpMat(descr_); }

DnVecDescriptor::DnVecDescriptor(const TensorView& v) {
    check_cusparse(cusparseCreateDnVec(&descr_, v.size(), v.data(), to_cuda(v.dtype())), "cusparseCreateDnVec",
                   "describing a dense vector");
}

DnVecDescriptor::~DnVecDescriptor() { (void)cusparseDestroyDnVec(descr_); }

void DnVecDescriptor::set_pointer(void* data) const {
    check_cusparse(cusparseDnVecSetValues(descr_, data), "cusparseDnVecSetValues", "pointing a dense vector");
}

DnMatDescriptor::DnMatDescriptor(const TensorView& m) {
    const int r = m.rank();
    const std::int64_t rows = m.shape(r - 2), cols = m.shape(r - 1);
    const bool row_major = m.stride(r - 1) == 1 && (rows == 1 || m.stride(r - 2) >= cols);
    const std::int64_t ld = row_major ? (rows == 1 ? cols : m.stride(r - 2)) : (cols == 1 ? rows : m.stride(r - 1));
    check_cusparse(cusparseCreateDnMat(&descr_, rows, cols, ld, m.data(), to_cuda(m.dtype()),
                                       row_major ? CUSPARSE_ORDER_ROW : CUSPARSE_ORDER_COL),
                   "cusparseCreateDnMat", "describing a dense matrix");
    if (r == 3 && m.shape(0) > 1) {
        if (const cusparseStatus_t s = cusparseDnMatSetStridedBatch(descr_, int(m.shape(0)), m.stride(0));
            s != CUSPARSE_STATUS_SUCCESS) {
            (void)cusparseDestroyDnMat(descr_);
            throw_cusparse(int(s), "cusparseDnMatSetStridedBatch", "describing a batch of dense matrices");
        }
    }
}

DnMatDescriptor::~DnMatDescriptor() { (void)cusparseDestroyDnMat(descr_); }

void DnMatDescriptor::set_pointer(void* data) const {
    check_cusparse(cusparseDnMatSetValues(descr_, data), "cusparseDnMatSetValues", "pointing a dense matrix");
}

}  // namespace gpumath::detail
