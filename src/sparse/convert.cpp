// SPDX-License-Identifier: Apache-2.0
// sparse's conversions: dense ↔ CSR and CSR ↔ CSC / COO / BSR on cuSPARSE, with gpumath's own
// kernels (kernels/convert.cu) where cuSPARSE has none (64-bit COO rows, BSR to dense).
// csr2bsr and bsr2csr exist only in cuSPARSE's legacy API, marked deprecated: no generic call
// replaces them yet.
#define DISABLE_CUSPARSE_DEPRECATED  // NOLINT: before cusparse.h, see above
#include <gpumath/sparse/convert.hpp>

#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/launch.hpp>
#include <gpumath/core/memory.hpp>
#include <gpumath/error.hpp>
#include "core/kernel_loader.hpp"
#include "detail/enum_check.hpp"
#include "detail/status.hpp"
#include "sparse/cusparse.hpp"
#include "sparse/kernels/convert.cu.inc"
#include "sparse/kernels/convert_params.hpp.inc"
#include "sparse/convert.hpp"

namespace gpumath::detail {

std::string_view sparse_convert_source() { return embedded::sparse_kernels_convert_cu; }

core::ProgramOptions sparse_convert_options() {
    core::ProgramOptions options;
    options.name = "gpumath_sparse_convert";
    options.std = "c++17";
    options.headers["convert_params.hpp"] = std::string(embedded::sparse_kernels_convert_params_hpp);
    return options;
}

std::vector<std::string> sparse_convert_names() {
    std::vector<std::string> names;
    for (const char* index : {"int", "long long"}) {
        names.push_back(fmt::format("gpumath::kernels::expand_rows<{}>", index));
        names.push_back(fmt::format("gpumath::kernels::compress_rows<{}>", index));
        for (const int bytes : {2, 4, 8, 16})
            names.push_back(fmt::format("gpumath::kernels::bsr_to_dense<{}, {}>", index, bytes));
    }
    return names;
}

}  // namespace gpumath::detail

namespace gpumath::sparse {
namespace {

using detail::check;
using detail::check_cusparse;
using detail::throw_invalid;
using detail::throw_not_supported;

constexpr std::int64_t threads = 256;

const detail::DeviceProgram& program() {
    static const detail::DeviceProgram p(detail::sparse_convert_source(), detail::sparse_convert_options(),
                                         detail::sparse_convert_names());
    return p;
}

int current() {
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice", "finding the device of a sparse conversion");
    return device;
}

const char* index_name(DataType t) { return t == DataType::i64 ? "long long" : "int"; }

core::LaunchConfig grid_for(std::int64_t work) {
    return {.grid = std::max<std::int64_t>(1, std::min<std::int64_t>((work + threads - 1) / threads, 8192)),
            .block = threads};
}

void require_one(const MatrixView& m, const char* api) {
    if (m.empty())
        throw_invalid("matrix: the view is empty (default-constructed); make it with csr, csc, coo or bsr", api);
    if (m.batch() != 1)
        throw_invalid(fmt::format("matrix: a batch of {} value arrays; conversions take one matrix (pass "
                                  "with_values of one row)",
                                  m.batch()),
                      api);
}

bool legacy_value_type(DataType t) {
    return t == DataType::f32 || t == DataType::f64 || t == DataType::c32 || t == DataType::c64;
}

void require_i32(const MatrixView& m, const char* what, const char* api) {
    if (m.index_type() != DataType::i32)
        throw_not_supported(fmt::format("{} indices: cuSPARSE's {} takes 32-bit indices only; give i32 index arrays",
                                        to_string(m.index_type()), what),
                            api);
}

void reject_capture(core::StreamRef stream, const char* api) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    check(cudaStreamIsCapturing(stream.handle(), &status), "cudaStreamIsCapturing", "asking whether a stream captures");
    if (status != cudaStreamCaptureStatusNone)
        throw_invalid("stream: captures a CUDA graph; this conversion synchronizes, so run it before capturing", api);
}

/// A 2-D dense operand, row-major or column-major.
void check_dense(const TensorView& d, const char* name, const char* api) {
    if (d.rank() != 2) throw_invalid(fmt::format("{}: rank {}; a dense matrix is 2-D", name, d.rank()), api);
    const std::int64_t rows = d.shape(0), cols = d.shape(1);
    const bool row_major = d.stride(1) == 1 && (rows <= 1 || d.stride(0) >= cols);
    const bool col_major = d.stride(0) == 1 && (cols <= 1 || d.stride(1) >= rows);
    if (!row_major && !col_major)
        throw_invalid(fmt::format("{}: strides {}; a dense matrix is row-major or column-major (one stride 1, the "
                                  "other at least the extent)",
                                  name, gpumath::to_string(d.strides())),
                      api);
    const auto address = reinterpret_cast<std::uintptr_t>(d.data());
    if (size_of(d.dtype()) != 0 && address % size_of(d.dtype()) != 0)
        throw_invalid(fmt::format("{}: address {} is not aligned to its elements", name, d.data()), api);
}

bool overlap(const TensorView& a, const TensorView& b) {
    if (a.span_bytes() == 0 || b.span_bytes() == 0) return false;
    const auto a0 = reinterpret_cast<std::uintptr_t>(a.data()), b0 = reinterpret_cast<std::uintptr_t>(b.data());
    return a0 < b0 + std::uintptr_t(b.span_bytes()) && b0 < a0 + std::uintptr_t(a.span_bytes());
}

void copy_view(const TensorView& dst, const TensorView& src, core::StreamRef stream) {
    if (src.span_bytes() > 0) detail::copy_async(dst.data(), src.data(), std::size_t(src.span_bytes()), stream);
}

/// A new matrix of `format` shaped as `m` with `stored` entries, `m`'s dtypes, on `stream`.
Matrix like(const MatrixView& m, Format format, std::int64_t stored, core::StreamRef stream, std::int64_t block = 1) {
    return Matrix::allocate(format, m.rows(), m.cols(), stored, m.value_type(), m.index_type(), stream, block);
}

Matrix copy_of(const MatrixView& m, core::StreamRef stream) {
    Matrix out = like(m, m.format(), m.stored(), stream, m.block());
    // Only the arrays the format has: the absent one is a default (rank-0) view, whose span is one
    // element at a null address, not zero bytes.
    if (m.format() == Format::coo) copy_view(out.view().row_indices(), m.row_indices(), stream);
    else copy_view(out.view().offsets(), m.offsets(), stream);
    copy_view(out.view().indices(), m.indices(), stream);
    copy_view(out.view().values(), m.values(), stream);
    return out;
}

/// cuSPARSE's legacy matrix descriptor (general, 0-based), destroyed with it.
class LegacyDescriptor {
public:
    LegacyDescriptor() {
        check_cusparse(cusparseCreateMatDescr(&d_), "cusparseCreateMatDescr", "describing a matrix for csr2bsr");
    }
    ~LegacyDescriptor() { (void)cusparseDestroyMatDescr(d_); }
    LegacyDescriptor(const LegacyDescriptor&) = delete;
    LegacyDescriptor& operator=(const LegacyDescriptor&) = delete;
    LegacyDescriptor(LegacyDescriptor&&) = delete;
    LegacyDescriptor& operator=(LegacyDescriptor&&) = delete;
    [[nodiscard]] cusparseMatDescr_t get() const noexcept { return d_; }

private:
    cusparseMatDescr_t d_ = nullptr;
};

/// CSR of the (major × minor) matrix whose compressed arrays are `offsets`/`indices` into the
/// compressed arrays of its transpose: CSR → CSC of one matrix, or CSC → CSR.
void transpose_compressed(const MatrixView& from, std::int64_t major, std::int64_t minor, const MatrixView& to,
                          core::StreamRef stream, const char* api) {
    require_i32(from, "csr2cscEx2", api);
    if (major == 0 || minor == 0 || from.stored() == 0) {
        // Nothing to move: the offsets of the result are all 0.
        if (to.offsets().span_bytes() > 0)
            check(cudaMemsetAsync(to.offsets().data(), 0, std::size_t(to.offsets().span_bytes()), stream.handle()),
                  "cudaMemsetAsync", "zeroing the offsets of an empty matrix");
        return;
    }
    const detail::SparseHandle handle(current(), stream.handle());
    const cudaDataType vt = to_cuda(from.value_type());
    std::size_t bytes = 0;
    check_cusparse(cusparseCsr2cscEx2_bufferSize(handle.get(), int(major), int(minor), int(from.stored()),
                                                 from.values().data(), static_cast<const int*>(from.offsets().data()),
                                                 static_cast<const int*>(from.indices().data()), to.values().data(),
                                                 static_cast<int*>(to.offsets().data()),
                                                 static_cast<int*>(to.indices().data()), vt, CUSPARSE_ACTION_NUMERIC,
                                                 CUSPARSE_INDEX_BASE_ZERO, CUSPARSE_CSR2CSC_ALG_DEFAULT, &bytes),
                   "cusparseCsr2cscEx2_bufferSize", api);
    const core::Buffer work(std::max<std::size_t>(bytes, 1), stream);
    check_cusparse(cusparseCsr2cscEx2(handle.get(), int(major), int(minor), int(from.stored()), from.values().data(),
                                      static_cast<const int*>(from.offsets().data()),
                                      static_cast<const int*>(from.indices().data()), to.values().data(),
                                      static_cast<int*>(to.offsets().data()), static_cast<int*>(to.indices().data()),
                                      vt, CUSPARSE_ACTION_NUMERIC, CUSPARSE_INDEX_BASE_ZERO,
                                      CUSPARSE_CSR2CSC_ALG_DEFAULT, work.data()),
                   "cusparseCsr2cscEx2", api);
}

void rows_kernel(const char* kernel, DataType index, const kernels::SparseRowsParams& p, std::int64_t work,
                 core::StreamRef stream) {
    const core::Kernel k =
        detail::device_kernel(current(), program(), fmt::format("gpumath::kernels::{}<{}>", kernel, index_name(index)));
    core::launch(stream, grid_for(work), k, p);
}

Matrix csr_from_coo(const MatrixView& m, core::StreamRef stream, const char* api) {
    Matrix out = like(m, Format::csr, m.stored(), stream);
    const MatrixView& v = out.view();
    copy_view(v.indices(), m.indices(), stream);
    copy_view(v.values(), m.values(), stream);
    if (m.index_type() == DataType::i32 && m.stored() > 0) {
        const detail::SparseHandle handle(current(), stream.handle());
        check_cusparse(cusparseXcoo2csr(handle.get(), static_cast<const int*>(m.row_indices().data()), int(m.stored()),
                                        int(m.rows()), static_cast<int*>(v.offsets().data()), CUSPARSE_INDEX_BASE_ZERO),
                       "cusparseXcoo2csr", api);
    } else {
        rows_kernel(
            "compress_rows", m.index_type(),
            {.offsets = v.offsets().data(), .rows = m.row_indices().data(), .major = m.rows(), .stored = m.stored()},
            m.rows() + 1, stream);
    }
    return out;
}

Matrix csr_from_bsr(const MatrixView& m, core::StreamRef stream, const char* api) {
    require_i32(m, "bsr2csr", api);
    if (!legacy_value_type(m.value_type()))
        throw_not_supported(
            fmt::format("values: {}; cuSPARSE's bsr2csr takes f32, f64, c32 or c64", to_string(m.value_type())), api);
    Matrix out = like(m, Format::csr, m.nnz(), stream);
    const MatrixView& v = out.view();
    const std::int64_t b = m.block(), mb = m.rows() / b, nb = m.cols() / b;
    if (mb == 0 || nb == 0 || m.stored() == 0) {
        check(cudaMemsetAsync(v.offsets().data(), 0, std::size_t(v.offsets().span_bytes()), stream.handle()),
              "cudaMemsetAsync", "zeroing the offsets of an empty matrix");
        return out;
    }
    const detail::SparseHandle handle(current(), stream.handle());
    const LegacyDescriptor a, c;
    const cusparseDirection_t dir =
        m.block_order() == BlockOrder::row_major ? CUSPARSE_DIRECTION_ROW : CUSPARSE_DIRECTION_COLUMN;
    const auto* ro = static_cast<const int*>(m.offsets().data());
    const auto* ci = static_cast<const int*>(m.indices().data());
    auto* oro = static_cast<int*>(v.offsets().data());
    auto* oci = static_cast<int*>(v.indices().data());
    cusparseStatus_t s = CUSPARSE_STATUS_SUCCESS;
    switch (m.value_type()) {
        case DataType::f32:
            s = cusparseSbsr2csr(handle.get(), dir, int(mb), int(nb), a.get(),
                                 static_cast<const float*>(m.values().data()), ro, ci, int(b), c.get(),
                                 static_cast<float*>(v.values().data()), oro, oci);
            break;
        case DataType::f64:
            s = cusparseDbsr2csr(handle.get(), dir, int(mb), int(nb), a.get(),
                                 static_cast<const double*>(m.values().data()), ro, ci, int(b), c.get(),
                                 static_cast<double*>(v.values().data()), oro, oci);
            break;
        case DataType::c32:
            s = cusparseCbsr2csr(handle.get(), dir, int(mb), int(nb), a.get(),
                                 static_cast<const cuComplex*>(m.values().data()), ro, ci, int(b), c.get(),
                                 static_cast<cuComplex*>(v.values().data()), oro, oci);
            break;
        default:
            s = cusparseZbsr2csr(handle.get(), dir, int(mb), int(nb), a.get(),
                                 static_cast<const cuDoubleComplex*>(m.values().data()), ro, ci, int(b), c.get(),
                                 static_cast<cuDoubleComplex*>(v.values().data()), oro, oci);
            break;
    }
    check_cusparse(s, "cusparse<t>bsr2csr", api);
    return out;
}

Matrix to_csr_impl(const MatrixView& m, core::StreamRef stream, const char* api) {
    switch (m.format()) {
        case Format::csr:
            return copy_of(m, stream);
        case Format::csc: {
            Matrix out = like(m, Format::csr, m.stored(), stream);
            transpose_compressed(m, m.cols(), m.rows(), out.view(), stream, api);
            return out;
        }
        case Format::coo:
            return csr_from_coo(m, stream, api);
        case Format::bsr:
            return csr_from_bsr(m, stream, api);
    }
    throw_invalid("matrix: unknown format", api);
}

}  // namespace

Matrix to_csr(const MatrixView& matrix, core::StreamRef stream) {
    constexpr const char* api = "sparse::to_csr";
    require_one(matrix, api);
    if (matrix.format() == Format::csc) require_i32(matrix, "csr2cscEx2", api);
    if (matrix.format() == Format::bsr) {
        require_i32(matrix, "bsr2csr", api);
        if (!legacy_value_type(matrix.value_type()))
            throw_not_supported(fmt::format("values: {}; cuSPARSE's bsr2csr takes f32, f64, c32 or c64",
                                            to_string(matrix.value_type())),
                                api);
    }
    return to_csr_impl(matrix, stream, api);
}

Matrix to_csc(const MatrixView& matrix, core::StreamRef stream) {
    constexpr const char* api = "sparse::to_csc";
    require_one(matrix, api);
    require_i32(matrix, "csr2cscEx2", api);
    if (matrix.format() == Format::csc) return copy_of(matrix, stream);
    const Matrix csr = matrix.format() == Format::csr ? Matrix{} : to_csr(matrix, stream);
    const MatrixView& from = matrix.format() == Format::csr ? matrix : csr.view();
    Matrix out = like(from, Format::csc, from.stored(), stream);
    transpose_compressed(from, from.rows(), from.cols(), out.view(), stream, api);
    return out;
}

Matrix to_coo(const MatrixView& matrix, core::StreamRef stream) {
    constexpr const char* api = "sparse::to_coo";
    require_one(matrix, api);
    if (matrix.format() == Format::coo) return copy_of(matrix, stream);
    const Matrix csr = matrix.format() == Format::csr ? Matrix{} : to_csr(matrix, stream);
    const MatrixView& from = matrix.format() == Format::csr ? matrix : csr.view();
    Matrix out = like(from, Format::coo, from.stored(), stream);
    const MatrixView& v = out.view();
    copy_view(v.indices(), from.indices(), stream);
    copy_view(v.values(), from.values(), stream);
    if (from.stored() == 0) return out;
    if (from.index_type() == DataType::i32) {
        const detail::SparseHandle handle(current(), stream.handle());
        check_cusparse(
            cusparseXcsr2coo(handle.get(), static_cast<const int*>(from.offsets().data()), int(from.stored()),
                             int(from.rows()), static_cast<int*>(v.row_indices().data()), CUSPARSE_INDEX_BASE_ZERO),
            "cusparseXcsr2coo", api);
    } else {
        rows_kernel("expand_rows", from.index_type(),
                    {.offsets = from.offsets().data(),
                     .rows = v.row_indices().data(),
                     .major = from.rows(),
                     .stored = from.stored()},
                    from.stored(), stream);
    }
    return out;
}

Matrix to_bsr(const MatrixView& matrix, std::int64_t block, core::StreamRef stream) {
    constexpr const char* api = "sparse::to_bsr";
    require_one(matrix, api);
    if (block < 1 || matrix.rows() % block != 0 || matrix.cols() % block != 0)
        throw_invalid(fmt::format("block: {} for a {} × {} matrix; the block is >= 1 and divides rows and cols", block,
                                  matrix.rows(), matrix.cols()),
                      api);
    require_i32(matrix, "csr2bsr", api);
    if (!legacy_value_type(matrix.value_type()))
        throw_not_supported(
            fmt::format("values: {}; cuSPARSE's csr2bsr takes f32, f64, c32 or c64", to_string(matrix.value_type())),
            api);
    if (matrix.format() == Format::bsr && matrix.block() == block && matrix.block_order() == BlockOrder::row_major)
        return copy_of(matrix, stream);
    reject_capture(stream, api);
    const Matrix csr = matrix.format() == Format::csr ? Matrix{} : to_csr(matrix, stream);
    const MatrixView& from = matrix.format() == Format::csr ? matrix : csr.view();
    const std::int64_t mb = from.rows() / block, nb = from.cols() / block;
    if (mb == 0 || nb == 0 || from.stored() == 0) {
        Matrix out = like(from, Format::bsr, 0, stream, block);
        check(cudaMemsetAsync(out.view().offsets().data(), 0, std::size_t(out.view().offsets().span_bytes()),
                              stream.handle()),
              "cudaMemsetAsync", "zeroing the offsets of an empty matrix");
        return out;
    }
    const detail::SparseHandle handle(current(), stream.handle());
    const LegacyDescriptor a, c;
    // The block-row offsets come first, with the block count; they move into the result after.
    const core::Buffer offsets(std::size_t(mb + 1) * sizeof(int), stream);
    int blocks = 0;
    check_cusparse(cusparseXcsr2bsrNnz(handle.get(), CUSPARSE_DIRECTION_ROW, int(from.rows()), int(from.cols()),
                                       a.get(), static_cast<const int*>(from.offsets().data()),
                                       static_cast<const int*>(from.indices().data()), int(block), c.get(),
                                       static_cast<int*>(offsets.data()), &blocks),
                   "cusparseXcsr2bsrNnz", api);
    stream.synchronize();  // `blocks` is a host value: make sure it has arrived
    Matrix out = like(from, Format::bsr, blocks, stream, block);
    const MatrixView& v = out.view();
    detail::copy_async(v.offsets().data(), offsets.data(), std::size_t(mb + 1) * sizeof(int), stream);
    auto* oro = static_cast<int*>(v.offsets().data());
    auto* oci = static_cast<int*>(v.indices().data());
    const auto* ro = static_cast<const int*>(from.offsets().data());
    const auto* ci = static_cast<const int*>(from.indices().data());
    const int m = int(from.rows()), n = int(from.cols()), b = int(block);
    cusparseStatus_t s = CUSPARSE_STATUS_SUCCESS;
    switch (from.value_type()) {
        case DataType::f32:
            s = cusparseScsr2bsr(handle.get(), CUSPARSE_DIRECTION_ROW, m, n, a.get(),
                                 static_cast<const float*>(from.values().data()), ro, ci, b, c.get(),
                                 static_cast<float*>(v.values().data()), oro, oci);
            break;
        case DataType::f64:
            s = cusparseDcsr2bsr(handle.get(), CUSPARSE_DIRECTION_ROW, m, n, a.get(),
                                 static_cast<const double*>(from.values().data()), ro, ci, b, c.get(),
                                 static_cast<double*>(v.values().data()), oro, oci);
            break;
        case DataType::c32:
            s = cusparseCcsr2bsr(handle.get(), CUSPARSE_DIRECTION_ROW, m, n, a.get(),
                                 static_cast<const cuComplex*>(from.values().data()), ro, ci, b, c.get(),
                                 static_cast<cuComplex*>(v.values().data()), oro, oci);
            break;
        default:
            s = cusparseZcsr2bsr(handle.get(), CUSPARSE_DIRECTION_ROW, m, n, a.get(),
                                 static_cast<const cuDoubleComplex*>(from.values().data()), ro, ci, b, c.get(),
                                 static_cast<cuDoubleComplex*>(v.values().data()), oro, oci);
            break;
    }
    check_cusparse(s, "cusparse<t>csr2bsr", api);
    return out;
}

Matrix from_dense(const TensorView& dense, DataType index_type, core::StreamRef stream) {
    constexpr const char* api = "sparse::from_dense";
    detail::check_enum(index_type, data_type_count, "a DataType", "index_type", api);
    check_dense(dense, "dense", api);
    if (!legacy_value_type(dense.dtype()))
        throw_invalid(fmt::format("dense: dtype {}; from_dense takes f32, f64, c32 or c64", to_string(dense.dtype())),
                      api);
    if (index_type != DataType::i32 && index_type != DataType::i64)
        throw_invalid(fmt::format("index_type: {}; indices are i32 or i64", to_string(index_type)), api);
    const std::int64_t rows = dense.shape(0), cols = dense.shape(1);
    if (index_type == DataType::i32 &&
        (rows > std::numeric_limits<std::int32_t>::max() || cols > std::numeric_limits<std::int32_t>::max() ||
         rows * cols > std::numeric_limits<std::int32_t>::max()))
        throw_invalid(
            fmt::format("dense: {} × {} may hold more nonzeros than i32 indices count; ask for i64", rows, cols), api);
    reject_capture(stream, api);
    if (rows == 0 || cols == 0) {
        Matrix out = Matrix::allocate(Format::csr, rows, cols, 0, dense.dtype(), index_type, stream);
        check(cudaMemsetAsync(out.view().offsets().data(), 0, std::size_t(out.view().offsets().span_bytes()),
                              stream.handle()),
              "cudaMemsetAsync", "zeroing the offsets of an empty matrix");
        return out;
    }
    const Tensor offsets = Tensor::empty(index_type, {rows + 1}, stream);
    const cusparseIndexType_t it = detail::index_type_of(index_type);
    cusparseSpMatDescr_t raw = nullptr;
    check_cusparse(cusparseCreateCsr(&raw, rows, cols, 0, offsets.data(), nullptr, nullptr, it, it,
                                     CUSPARSE_INDEX_BASE_ZERO, to_cuda(dense.dtype())),
                   "cusparseCreateCsr", "describing the CSR result of from_dense");
    struct Destroy {
        explicit Destroy(cusparseSpMatDescr_t descr) : d(descr) {}
        cusparseSpMatDescr_t d;
        ~Destroy() { (void)cusparseDestroySpMat(d); }
        Destroy(const Destroy&) = delete;
        Destroy& operator=(const Destroy&) = delete;
        Destroy(Destroy&&) = delete;
        Destroy& operator=(Destroy&&) = delete;
    } const owner(raw);
    const detail::DnMatDescriptor in(dense);
    const detail::SparseHandle handle(current(), stream.handle());
    std::size_t bytes = 0;
    check_cusparse(
        cusparseDenseToSparse_bufferSize(handle.get(), in.get(), raw, CUSPARSE_DENSETOSPARSE_ALG_DEFAULT, &bytes),
        "cusparseDenseToSparse_bufferSize", api);
    const core::Buffer work(std::max<std::size_t>(bytes, 1), stream);
    check_cusparse(
        cusparseDenseToSparse_analysis(handle.get(), in.get(), raw, CUSPARSE_DENSETOSPARSE_ALG_DEFAULT, work.data()),
        "cusparseDenseToSparse_analysis", api);
    std::int64_t r = 0, c = 0, nnz = 0;
    check_cusparse(cusparseSpMatGetSize(raw, &r, &c, &nnz), "cusparseSpMatGetSize", api);
    Matrix out = Matrix::allocate(Format::csr, rows, cols, nnz, dense.dtype(), index_type, stream);
    const MatrixView& v = out.view();
    copy_view(v.offsets(), offsets.view(), stream);
    check_cusparse(cusparseCsrSetPointers(raw, v.offsets().data(), v.indices().data(), v.values().data()),
                   "cusparseCsrSetPointers", api);
    check_cusparse(
        cusparseDenseToSparse_convert(handle.get(), in.get(), raw, CUSPARSE_DENSETOSPARSE_ALG_DEFAULT, work.data()),
        "cusparseDenseToSparse_convert", api);
    return out;
}

void to_dense(const MatrixView& matrix, const TensorView& out, core::StreamRef stream) {
    constexpr const char* api = "sparse::to_dense";
    require_one(matrix, api);
    check_dense(out, "out", api);
    if (out.shape(0) != matrix.rows() || out.shape(1) != matrix.cols())
        throw_invalid(fmt::format("out: shape {}; the matrix is {} × {}", gpumath::to_string(out.shape()),
                                  matrix.rows(), matrix.cols()),
                      api);
    if (out.dtype() != matrix.value_type())
        throw_invalid(fmt::format("out: dtype {}; the matrix's values are {}", to_string(out.dtype()),
                                  to_string(matrix.value_type())),
                      api);
    for (const TensorView* a : {&matrix.offsets(), &matrix.row_indices(), &matrix.indices(), &matrix.values()})
        if (overlap(out, *a)) throw_invalid("out: overlaps one of the matrix's arrays", api);
    const std::int64_t rows = matrix.rows(), cols = matrix.cols();
    if (rows == 0 || cols == 0) return;
    if (matrix.format() != Format::bsr) {
        const detail::SpMatDescriptor a(matrix);
        const detail::DnMatDescriptor b(out);
        const detail::SparseHandle handle(current(), stream.handle());
        std::size_t bytes = 0;
        check_cusparse(cusparseSparseToDense_bufferSize(handle.get(), a.get(), b.get(),
                                                        CUSPARSE_SPARSETODENSE_ALG_DEFAULT, &bytes),
                       "cusparseSparseToDense_bufferSize", api);
        const core::Buffer work = bytes == 0 ? core::Buffer{} : core::Buffer(bytes, stream);
        check_cusparse(
            cusparseSparseToDense(handle.get(), a.get(), b.get(), CUSPARSE_SPARSETODENSE_ALG_DEFAULT, work.data()),
            "cusparseSparseToDense", api);
        return;
    }
    // BSR: zeros, then every stored value scattered to its place.
    const bool row_major = out.stride(1) == 1 && (rows <= 1 || out.stride(0) >= cols);
    const std::size_t e = size_of(out.dtype());
    const std::int64_t pitch = row_major ? (rows > 1 ? out.stride(0) : cols) : (cols > 1 ? out.stride(1) : rows);
    const std::int64_t width = row_major ? cols : rows, height = row_major ? rows : cols;
    check(cudaMemset2DAsync(out.data(), std::size_t(pitch) * e, 0, std::size_t(width) * e, std::size_t(height),
                            stream.handle()),
          "cudaMemset2DAsync", "zeroing the dense result of sparse::to_dense");
    if (matrix.stored() == 0) return;
    const kernels::SparseBsrDenseParams p{.offsets = matrix.offsets().data(),
                                          .indices = matrix.indices().data(),
                                          .values = matrix.values().data(),
                                          .out = out.data(),
                                          .block_rows = rows / matrix.block(),
                                          .blocks = matrix.stored(),
                                          .block = matrix.block(),
                                          .column_major = matrix.block_order() == BlockOrder::column_major ? 1 : 0,
                                          .row_stride = row_major ? pitch : 1,
                                          .col_stride = row_major ? 1 : pitch};
    const core::Kernel k = detail::device_kernel(
        current(), program(),
        fmt::format("gpumath::kernels::bsr_to_dense<{}, {}>", index_name(matrix.index_type()), e));
    core::launch(stream, grid_for(matrix.nnz()), k, p);
}

}  // namespace gpumath::sparse
