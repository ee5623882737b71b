// SPDX-License-Identifier: Apache-2.0
#include "sparse/product_checks.hpp"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include "core/stream_workspace.hpp"
#include "detail/enum_check.hpp"
#include "detail/status.hpp"

namespace gpumath::detail::products {

void check_product_dtype(DataType t, const char* name, const char* api) {
    if (t != DataType::f32 && t != DataType::f64 && t != DataType::c32 && t != DataType::c64)
        throw_invalid(fmt::format("{}: dtype {}; {} takes f32, f64, c32 or c64", name, to_string(t), api), api);
}

void check_sparse_operand(const sparse::MatrixView& m, const char* name, std::initializer_list<sparse::Format> formats,
                          const char* api) {
    if (m.empty())
        throw_invalid(fmt::format("{}: an empty MatrixView; make one with MatrixView::csr (or another factory)", name),
                      api);
    bool allowed = false;
    std::string names;
    for (const sparse::Format f : formats) {
        allowed = allowed || f == m.format();
        if (!names.empty()) names += " or ";
        names += sparse::to_string(f);
    }
    if (!allowed)
        throw_invalid(fmt::format("{}: format {}; {} takes {} (convert with sparse::to_csr)", name,
                                  sparse::to_string(m.format()), api, names),
                      api);
    if (m.batch() != 1)
        throw_not_supported(
            fmt::format("{}: a batch of {} matrices; {} takes one matrix (values 1-D)", name, m.batch(), api), api);
    check_product_dtype(m.value_type(), fmt::format("{}.values", name).c_str(), api);
}

void check_operation(sparse::Operation op, const char* field, const char* api) {
    check_enum(op, sparse::operation_count, "an Operation", field, api);
}

namespace {

void check_aligned(const TensorView& v, const char* name, const char* api) {
    const auto address = reinterpret_cast<std::uintptr_t>(v.data());
    const std::size_t size = size_of(v.dtype());
    if (size != 0 && address % size != 0)
        throw_invalid(fmt::format("{}: address {} is not aligned to its {}-byte elements", name, v.data(), size), api);
}

}  // namespace

DenseStorage check_dense_matrix(const TensorView& m, DataType dtype, const char* name, const char* api) {
    const DenseStorage s = check_dense_matrix(static_cast<const TensorLayout&>(m), dtype, name, api);
    check_aligned(m, name, api);
    return s;
}

DenseStorage check_dense_matrix(const TensorLayout& m, DataType dtype, const char* name, const char* api) {
    if (m.rank() != 2) throw_invalid(fmt::format("{}: rank {}; a dense matrix operand is 2-D", name, m.rank()), api);
    if (m.dtype() != dtype)
        throw_invalid(fmt::format("{}: dtype {} where the operation computes in {}; all operands have one dtype", name,
                                  to_string(m.dtype()), to_string(dtype)),
                      api);
    const std::int64_t rows = m.shape(0), cols = m.shape(1);
    const std::int64_t rs = m.stride(0), cs = m.stride(1);
    DenseStorage s{.rows = rows, .cols = cols, .row_major = true};
    if ((cs == 1 || cols <= 1) && (rows <= 1 || rs >= cols)) {
        s.row_major = true;
    } else if ((rs == 1 || rows <= 1) && (cols <= 1 || cs >= rows)) {
        s.row_major = false;
    } else {
        throw_invalid(fmt::format("{}: strides {} for shape {}; a dense operand is row-major (unit column stride, row "
                                  "stride >= cols) or column-major (unit row stride, column stride >= rows)",
                                  name, to_string(m.strides()), to_string(m.shape())),
                      api);
    }
    return s;
}

void check_dense_vector(const TensorView& v, std::int64_t length, DataType dtype, const char* name, const char* api) {
    check_dense_vector(static_cast<const TensorLayout&>(v), length, dtype, name, api);
    check_aligned(v, name, api);
}

void check_dense_vector(const TensorLayout& v, std::int64_t length, DataType dtype, const char* name, const char* api) {
    if (v.rank() != 1) throw_invalid(fmt::format("{}: rank {}; a dense vector operand is 1-D", name, v.rank()), api);
    if (v.dtype() != dtype)
        throw_invalid(fmt::format("{}: dtype {} where the operation computes in {}; all operands have one dtype", name,
                                  to_string(v.dtype()), to_string(dtype)),
                      api);
    if (v.shape(0) != length)
        throw_invalid(fmt::format("{}: {} entries where the matrix needs {}", name, v.shape(0), length), api);
    if (length > 1 && v.stride(0) != 1)
        throw_invalid(fmt::format("{}: stride {}; a dense vector operand is contiguous (stride 1)", name, v.stride(0)),
                      api);
}

bool overlaps(const TensorView& a, const TensorView& b) noexcept {
    if (a.span_bytes() == 0 || b.span_bytes() == 0 || a.data() == nullptr || b.data() == nullptr) return false;
    const auto a0 = reinterpret_cast<std::uintptr_t>(a.data()), b0 = reinterpret_cast<std::uintptr_t>(b.data());
    return a0 < b0 + std::uintptr_t(b.span_bytes()) && b0 < a0 + std::uintptr_t(a.span_bytes());
}

void check_apart(const TensorView& out, const char* out_name, const TensorView& in, const char* in_name,
                 const char* api) {
    if (overlaps(out, in))
        throw_invalid(fmt::format("{} and {} overlap in memory; the output needs memory of its own", out_name, in_name),
                      api);
}

void check_apart(const TensorView& out, const char* out_name, const sparse::MatrixView& m, const char* m_name,
                 const char* api) {
    const std::string offsets = fmt::format("{}.offsets", m_name), indices = fmt::format("{}.indices", m_name),
                      rows = fmt::format("{}.row_indices", m_name), values = fmt::format("{}.values", m_name);
    check_apart(out, out_name, m.offsets(), offsets.c_str(), api);
    check_apart(out, out_name, m.indices(), indices.c_str(), api);
    check_apart(out, out_name, m.row_indices(), rows.c_str(), api);
    check_apart(out, out_name, m.values(), values.c_str(), api);
}

cusparseOperation_t cusparse_operation(sparse::Operation op) noexcept {
    switch (op) {
        case sparse::Operation::transpose:
            return CUSPARSE_OPERATION_TRANSPOSE;
        case sparse::Operation::conjugate_transpose:
            return CUSPARSE_OPERATION_CONJUGATE_TRANSPOSE;
        case sparse::Operation::none:
            break;
    }
    return CUSPARSE_OPERATION_NON_TRANSPOSE;
}

Scalar::Scalar(std::complex<double> value, DataType dtype, const char* name, const char* api) {
    if (!is_complex(dtype) && value.imag() != 0.0)
        throw_invalid(fmt::format("{}: ({}, {}) has an imaginary part; the operation computes in {}", name,
                                  value.real(), value.imag(), to_string(dtype)),
                      api);
    switch (dtype) {
        case DataType::f64:
            storage_.d = value.real();
            break;
        case DataType::c32:
            storage_.c = std::complex<float>(value);
            break;
        case DataType::c64:
            storage_.z = value;
            break;
        default:
            storage_.f = float(value.real());
            break;
    }
}

core::Buffer plan_buffer(std::size_t bytes, const std::shared_ptr<core::MemoryResource>& resource) {
    // Never empty: cuSPARSE reads a null buffer as a size query.
    core::Buffer b(std::max<std::size_t>(bytes, 16), core::StreamRef{}, resource);
    sync_default_stream();
    return b;
}

void sync_default_stream() {
    check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize", "waiting for a sparse plan's allocations");
}

void check_plan_device(int planned, const char* api) {
    const int d = current_device();
    if (d != planned)
        throw_invalid(fmt::format("the plan was made for device {}, the current device is {}; make a plan per device",
                                  planned, d),
                      api);
}

void reject_planning_in_capture(core::StreamRef stream, const char* api) {
    reject_capture(stream, api,
                   "planning (cuSPARSE's analysis and the plan's buffers) cannot be captured; call plan() before the "
                   "capture");
}

namespace {

void check_sddmm_op(sparse::Operation op, const char* field, const char* api) {
    check_operation(op, field, api);
    if (op == sparse::Operation::conjugate_transpose)
        throw_invalid(fmt::format("{}: conjugate_transpose; cuSPARSE's SDDMM takes none or transpose (conjugate the "
                                  "dense operand's values instead)",
                                  field),
                      api);
}

}  // namespace

void check_sddmm(const TensorView& a, const TensorView& b, const sparse::MatrixView& c, sparse::Operation op_a,
                 sparse::Operation op_b, const char* api) {
    check_sddmm_op(op_a, "options.op_a", api);
    check_sddmm_op(op_b, "options.op_b", api);
    check_sparse_operand(c, "c", {sparse::Format::csr}, api);
    const DataType vt = c.value_type();
    const DenseStorage sa = check_dense_matrix(a, vt, "a", api);
    const DenseStorage sb = check_dense_matrix(b, vt, "b", api);
    const bool ta = op_a != sparse::Operation::none, tb = op_b != sparse::Operation::none;
    const std::int64_t am = ta ? sa.cols : sa.rows, ak = ta ? sa.rows : sa.cols;
    const std::int64_t bk = tb ? sb.cols : sb.rows, bn = tb ? sb.rows : sb.cols;
    if (am != c.rows() || bn != c.cols() || ak != bk)
        throw_invalid(fmt::format("op(a) is {} × {}, op(b) is {} × {} and c is {} × {}; op(a)·op(b) must be "
                                  "c.rows() × c.cols()",
                                  am, ak, bk, bn, c.rows(), c.cols()),
                      api);
    if (ak == 0 && c.stored() != 0)
        throw_not_supported("op(a)·op(b) has inner extent 0 (C = β·C); cuSPARSE's SDDMM needs k >= 1", api);
    check_apart(a, "a", c, "c", api);
    check_apart(b, "b", c, "c", api);
}

}  // namespace gpumath::detail::products
