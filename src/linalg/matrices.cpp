// SPDX-License-Identifier: Apache-2.0
// Batches of square matrices, their storage and the operand checks (linalg/matrices.hpp).
#include "linalg/matrices.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/tensor_ops.hpp>
#include "core/tensor_ops_internal.hpp"
#include "detail/enum_check.hpp"
#include "detail/status.hpp"

namespace gpumath::detail {

MatrixBatch matrix_batch(const TensorLayout& a, const char* api, const char* form) {
    check_enum(a.dtype(), data_type_count, "a DataType", "a.dtype()", api);
    if (a.rank() < 2)
        throw_invalid(
            fmt::format("a: rank {} (shape {}); give matrices as (..., {})", a.rank(), to_string(a.shape()), form),
            api);
    const DataType t = a.dtype();
    if (t != DataType::f32 && t != DataType::f64 && t != DataType::c32 && t != DataType::c64)
        throw_not_supported(
            fmt::format("a: dtype {} is not supported; f32, f64, c32 and c64 are (cast first, gpumath::cast)",
                        to_string(t)),
            api);
    MatrixBatch b;
    b.a = a;
    b.dtype = t;
    b.m = a.shape(-2);
    b.n = a.shape(-1);
    b.batch_rank = a.rank() - 2;
    b.count = 1;
    for (int d = 0; d < b.batch_rank; ++d) b.count *= a.shape(d);
    b.info = TensorLayout(DataType::i32, a.shape().first(std::size_t(b.batch_rank)));
    return b;
}

SquareBatch square_batch(const TensorLayout& a, const char* api) {
    if (a.rank() >= 2 && a.shape(-1) != a.shape(-2))
        throw_invalid(fmt::format("a: matrices of {} x {} (shape {}); this operation takes square matrices",
                                  a.shape(-2), a.shape(-1), to_string(a.shape())),
                      api);
    const MatrixBatch b = matrix_batch(a, api, "n, n");
    return {.a = b.a, .dtype = b.dtype, .n = b.n, .batch_rank = b.batch_rank, .count = b.count, .info = b.info};
}

std::optional<std::int64_t> uniform_batch_stride(const TensorLayout& layout, int batch_rank) {
    std::optional<std::int64_t> stride;  // of the innermost batch dimension with an extent above 1
    std::int64_t expected = 0;
    for (int d = batch_rank - 1; d >= 0; --d) {
        if (layout.shape(d) == 1) continue;
        if (!stride) {
            stride = layout.stride(d);
        } else if (layout.stride(d) != expected) {
            return std::nullopt;
        }
        expected = layout.stride(d) * layout.shape(d);
    }
    return stride.value_or(0);
}

Storage storage_of(const TensorLayout& layout) {
    Storage s;
    const std::int64_t rows = layout.shape(-2), cols = layout.shape(-1);
    const std::int64_t rs = layout.stride(-2), cs = layout.stride(-1);
    // A single column is column-major whatever its column stride.
    const bool col = (rows <= 1 || rs == 1) && (cols <= 1 || cs >= std::max<std::int64_t>(1, rows));
    const bool row = (cols <= 1 || cs == 1) && rs >= std::max<std::int64_t>(1, cols);
    const std::optional<std::int64_t> batch = uniform_batch_stride(layout, layout.rank() - 2);
    if ((!col && !row) || !batch) return s;
    s.row_major = !col;
    s.ld = col ? std::max<std::int64_t>(cs, std::max<std::int64_t>(1, rows))
               : std::max<std::int64_t>(rs, std::max<std::int64_t>(1, cols));
    s.batch_stride = *batch;
    std::int64_t count = 1;
    for (int d = 0; d < layout.rank() - 2; ++d) count *= layout.shape(d);
    // Matrices one stride apart must not reach into each other.
    const std::int64_t reach = s.ld * (col ? std::max<std::int64_t>(cols, 1) : std::max<std::int64_t>(rows, 1));
    s.direct = count <= 1 || s.batch_stride >= reach;
    return s;
}

kernels::MatrixBatchParams matrix_params(const TensorView& view, std::int64_t count) {
    const int r = view.rank();
    return {.data = view.data(),
            .n = view.shape(-1),
            .row_stride = view.stride(-2),
            .col_stride = view.stride(-1),
            .count = count,
            .batch_stride = uniform_batch_stride(view, r - 2).value_or(0)};
}

TensorLayout packed_column_major(DataType dtype, std::span<const std::int64_t> shape) {
    std::array<std::int64_t, max_rank> strides{};
    const int rank = int(shape.size());
    if (rank >= 2) {
        strides[std::size_t(rank - 2)] = 1;
        strides[std::size_t(rank - 1)] = std::max<std::int64_t>(1, shape[std::size_t(rank - 2)]);
        std::int64_t step = std::max<std::int64_t>(1, shape[std::size_t(rank - 2)] * shape[std::size_t(rank - 1)]);
        for (int d = rank - 3; d >= 0; --d) {
            strides[std::size_t(d)] = step;
            step *= std::max<std::int64_t>(1, shape[std::size_t(d)]);
        }
    } else if (rank == 1) {
        strides[0] = 1;
    }
    return {dtype, shape, std::span<const std::int64_t>(strides.data(), shape.size())};
}

void check_operand(const TensorView& view, std::span<const std::int64_t> shape, DataType dtype, const char* name,
                   bool written, const char* api) {
    if (!std::equal(view.shape().begin(), view.shape().end(), shape.begin(), shape.end()))
        throw_invalid(fmt::format("{}: shape {}; this call needs {}", name, to_string(view.shape()), to_string(shape)),
                      api);
    if (view.dtype() != dtype)
        throw_invalid(fmt::format("{}: dtype {}; this call needs {}", name, to_string(view.dtype()), to_string(dtype)),
                      api);
    if (view.size() == 0) return;
    if (view.data() == nullptr) throw_invalid(fmt::format("{}: null data for {} elements", name, view.size()), api);
    if (reinterpret_cast<std::uintptr_t>(view.data()) % size_of(dtype) != 0)
        throw_invalid(
            fmt::format("{}: data at {} is not aligned to its {}-byte elements", name, view.data(), size_of(dtype)),
            api);
    if (written) check_written(view, name, api);
}

void check_contiguous_operand(const TensorView& view, const TensorLayout& expected, const char* name, bool written,
                              const char* api) {
    check_operand(view, expected.shape(), expected.dtype(), name, written, api);
    if (!view.is_contiguous())
        throw_invalid(fmt::format("{}: strides {} are not contiguous (row-major); {} is {} as one array", name,
                                  to_string(view.strides()), name, written ? "written" : "read"),
                      api);
}

void check_info_operand(const TensorView& info, const TensorLayout& expected, const char* name, const char* api) {
    check_contiguous_operand(info, TensorLayout(DataType::i32, expected.shape()), name, true, api);
}

TensorView sub_matrices(const TensorView& view, std::int64_t row0, std::int64_t rows, std::int64_t col0,
                        std::int64_t cols) {
    std::array<std::int64_t, max_rank> shape{};
    std::copy(view.shape().begin(), view.shape().end(), shape.begin());
    const std::size_t r = std::size_t(view.rank());
    shape[r - 2] = rows;
    shape[r - 1] = cols;
    const std::int64_t offset = rows == 0 || cols == 0 ? 0 : row0 * view.stride(-2) + col0 * view.stride(-1);
    return {static_cast<std::byte*>(view.data()) + offset * std::int64_t(size_of(view.dtype())), view.dtype(),
            std::span<const std::int64_t>(shape.data(), r), view.strides()};
}

TensorView as_columns(const TensorView& view) {
    std::array<std::int64_t, max_rank> shape{}, strides{};
    const std::size_t r = std::size_t(view.rank());
    std::copy(view.shape().begin(), view.shape().end(), shape.begin());
    std::copy(view.strides().begin(), view.strides().end(), strides.begin());
    shape[r] = 1;
    // Any stride serves a dimension of extent 1; this one makes a unit-stride vector column-major.
    strides[r] = std::max<std::int64_t>(1, view.shape(-1));
    return {view.data(), view.dtype(), std::span<const std::int64_t>(shape.data(), r + 1),
            std::span<const std::int64_t>(strides.data(), r + 1)};
}

bool same_operand(const TensorView& a, const TensorView& b) noexcept {
    return a.data() == b.data() && a.dtype() == b.dtype() &&
           std::equal(a.shape().begin(), a.shape().end(), b.shape().begin(), b.shape().end()) &&
           std::equal(a.strides().begin(), a.strides().end(), b.strides().begin(), b.strides().end());
}

void check_apart(const TensorView& a, const char* a_name, const TensorView& b, const char* b_name, const char* api) {
    if (a.size() == 0 || b.size() == 0) return;
    const auto* x = static_cast<const char*>(a.data());
    const auto* y = static_cast<const char*>(b.data());
    if (x < y + b.span_bytes() && y < x + a.span_bytes())
        throw_invalid(fmt::format("{}: its memory ({} bytes at {}) overlaps {}'s ({} bytes at {}); give each its own "
                                  "memory",
                                  a_name, a.span_bytes(), a.data(), b_name, b.span_bytes(), b.data()),
                      api);
}

namespace {

/// The shape right-hand sides of `b`'s rank must have (InvalidArgument for another rank).
std::array<std::int64_t, max_rank> rhs_shape(const SquareBatch& batch, const TensorView& b, const char* api) {
    const int rhs_rank = b.rank() - batch.batch_rank;
    if (rhs_rank != 1 && rhs_rank != 2)
        throw_invalid(
            fmt::format("b: shape {}; give right-hand sides as (..., n, k) or (..., n) with the batch shape {} "
                        "and n {}",
                        to_string(b.shape()), to_string(batch.info.shape()), batch.n),
            api);
    std::array<std::int64_t, max_rank> shape{};
    for (int d = 0; d < batch.batch_rank; ++d) shape[std::size_t(d)] = batch.a.shape(d);
    shape[std::size_t(batch.batch_rank)] = batch.n;
    if (rhs_rank == 2) shape[std::size_t(batch.batch_rank) + 1] = b.shape(-1);
    return shape;
}

}  // namespace

void check_right_hand_side(const SquareBatch& batch, const TensorView& b, const char* api) {
    const auto shape = rhs_shape(batch, b, api);
    check_operand(b, std::span<const std::int64_t>(shape.data(), std::size_t(b.rank())), batch.dtype, "b", false, api);
}

RightHandSides right_hand_sides(const SquareBatch& batch, const TensorView& b, const TensorView& x, const char* api) {
    const int rhs_rank = b.rank() - batch.batch_rank;
    const auto shape = rhs_shape(batch, b, api);
    const std::span<const std::int64_t> expected(shape.data(), std::size_t(b.rank()));
    check_operand(b, expected, batch.dtype, "b", false, api);
    check_operand(x, expected, batch.dtype, "x", true, api);
    if (!same_operand(b, x)) check_apart(x, "x", b, "b", api);
    RightHandSides r;
    r.k = rhs_rank == 2 ? b.shape(-1) : 1;
    if (rhs_rank == 2) {
        r.storage = storage_of(x);
    } else {
        const auto stride = uniform_batch_stride(x, batch.batch_rank);
        r.storage.direct =
            (batch.n <= 1 || x.stride(-1) == 1) && stride.has_value() && (batch.count <= 1 || *stride >= batch.n);
        r.storage.ld = std::max<std::int64_t>(batch.n, 1);
        r.storage.batch_stride = stride.value_or(0);
    }
    r.temp = !r.storage.direct || r.storage.row_major;
    const std::int64_t ld = std::max<std::int64_t>(batch.n, 1);
    r.packed = {.direct = true, .row_major = false, .ld = ld, .batch_stride = batch.n * r.k};
    r.packed_layout = rhs_rank == 2 ? packed_column_major(batch.dtype, expected) : TensorLayout(batch.dtype, expected);
    return r;
}

void copy_matrices(const TensorView& in, const TensorView& out, core::StreamRef stream) {
    // Nothing to copy, whatever the strides of no elements are (packed layouts of empty matrices
    // repeat addresses, which gpumath::copy refuses for an output).
    if (in.size() == 0) return;
    const bool same_strides =
        std::equal(in.strides().begin(), in.strides().end(), out.strides().begin(), out.strides().end());
    if (same_strides && in.span_elements() == in.size()) {
        check(cudaMemcpyAsync(out.data(), in.data(), std::size_t(in.span_bytes()), cudaMemcpyDeviceToDevice,
                              stream.handle()),
              "cudaMemcpyAsync", "copying matrices for cuSOLVER");
        return;
    }
    copy(in, out, stream);
}

bool empty_batch_done(const SquareBatch& batch, const TensorView& info, core::StreamRef stream) {
    if (batch.count == 0) return true;
    if (batch.n != 0) return false;
    check(cudaMemsetAsync(info.data(), 0, std::size_t(batch.count) * sizeof(int), stream.handle()), "cudaMemsetAsync",
          "writing the info of empty matrices");
    return true;
}

void grow_host_workspaces(std::vector<std::vector<std::byte>>& host, std::size_t bytes) {
    for (auto& lane : host)
        if (lane.size() < bytes) lane.resize(bytes);
}

void check_plan_device(int planned, const char* api) {
    const int d = current_device();
    if (d != planned)
        throw_invalid(fmt::format("the plan was made for device {}, the current device is {}; make a plan per device",
                                  planned, d),
                      api);
}

bool capturing(core::StreamRef stream) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    check(cudaStreamIsCapturing(stream.handle(), &status), "cudaStreamIsCapturing", "asking whether a stream captures");
    return status != cudaStreamCaptureStatusNone;
}

void fill_random(const TensorView& view, core::StreamRef stream) {
    const bool complex = view.dtype() == DataType::c32 || view.dtype() == DataType::c64;
    const DataType real =
        view.dtype() == DataType::f64 || view.dtype() == DataType::c64 ? DataType::f64 : DataType::f32;
    random::uniform(TensorView(view.data(), real, {view.size() * (complex ? 2 : 1)}), -1.0, 1.0, {}, stream);
}

void check_triangle(linalg::Triangle t, const char* field, const char* api) {
    check_enum(t, linalg::triangle_count, "a linalg::Triangle", field, api);
}

namespace {

/// The one plan that takes `b` (its api name), or empty for a backend several plans take.
std::string_view only_plan_of(linalg::Backend b) noexcept {
    switch (b) {
        case linalg::Backend::jacobi:
        case linalg::Backend::approximate:
            return "linalg::SVD";
        case linalg::Backend::jacobi_batched:
            return "linalg::Eigh";
        default:
            return {};
    }
}

/// The backends `plan` offers, for messages: "automatic, looped, batched or warp".
std::string offered_by(std::string_view plan) {
    std::vector<std::string_view> names;
    for (int i = 0; i < linalg::backend_count; ++i) {
        const auto b = linalg::Backend(i);
        const std::string_view only = only_plan_of(b);
        if (!only.empty() && only != plan) continue;
        // The shared backends that a plan refuses with a rule of its own.
        if (b == linalg::Backend::batched && plan == "linalg::Eig") continue;
        if (b == linalg::Backend::warp && (plan == "linalg::SVD" || plan == "linalg::Eig")) continue;
        names.push_back(to_string(b));
    }
    std::string text;
    for (std::size_t i = 0; i < names.size(); ++i)
        text += fmt::format("{}{}", i == 0 ? "" : i + 1 == names.size() ? " or " : ", ", names[i]);
    return text;
}

}  // namespace

void check_backend(linalg::Backend b, const char* field, const char* api) {
    check_enum(b, linalg::backend_count, "a linalg::Backend", field, api);
    const std::string_view only = only_plan_of(b);
    if (!only.empty() && only != std::string_view(api))
        throw_not_supported(fmt::format("{}: {} is a backend of {} only; this plan takes {}", field, to_string(b), only,
                                        offered_by(api)),
                            api);
}

}  // namespace gpumath::detail
