// SPDX-License-Identifier: Apache-2.0
// linalg's own kernels, compiled once per device by the core loader (linalg/kernels.hpp).
#include "linalg/kernels.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <gpumath/core/launch.hpp>
#include "core/kernel_loader.hpp"
#include "detail/status.hpp"
#include "linalg/kernels/linalg_params.hpp.inc"
#include "linalg/kernels/linalg_util.cu.inc"

namespace gpumath::detail {
namespace {

constexpr std::int64_t threads = 256;
constexpr std::int64_t max_grid_y = 65535;

const DeviceProgram& program() {
    static const DeviceProgram p(linalg_kernel_source(), linalg_kernel_options(), linalg_kernel_names());
    return p;
}

int current() {
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice", "finding the device of a linalg kernel");
    return device;
}

const char* zero_name(DataType type) {
    switch (size_of(type)) {
        case 4:
            return "gpumath::kernels::zero_triangle<4>";
        case 8:
            return "gpumath::kernels::zero_triangle<8>";
        default:
            return "gpumath::kernels::zero_triangle<16>";
    }
}

const char* diagonal_name(DataType type) {
    switch (type) {
        case DataType::f64:
            return "gpumath::kernels::add_diagonal<double, false>";
        case DataType::c32:
            return "gpumath::kernels::add_diagonal<float, true>";
        case DataType::c64:
            return "gpumath::kernels::add_diagonal<double, true>";
        default:
            return "gpumath::kernels::add_diagonal<float, false>";
    }
}

/// "<float, false>" and so on: a template's arguments for `type`.
const char* typed(DataType type) {
    switch (type) {
        case DataType::f64:
            return "<double, false>";
        case DataType::c32:
            return "<float, true>";
        case DataType::c64:
            return "<double, true>";
        default:
            return "<float, false>";
    }
}

std::string named(const char* kernel, DataType type) {
    return std::string("gpumath::kernels::") + kernel + typed(type);
}

}  // namespace

std::string_view linalg_kernel_source() { return embedded::linalg_kernels_linalg_util_cu; }

core::ProgramOptions linalg_kernel_options() {
    core::ProgramOptions options;
    options.name = "gpumath_linalg_util";
    options.std = "c++17";
    options.headers["linalg_params.hpp"] = std::string(embedded::linalg_kernels_linalg_params_hpp);
    return options;
}

std::vector<std::string> linalg_kernel_names() {
    std::vector<std::string> names{"gpumath::kernels::batch_pointers"};
    for (const DataType t : {DataType::f32, DataType::f64, DataType::c64}) names.emplace_back(zero_name(t));
    for (const DataType t : {DataType::f32, DataType::f64, DataType::c32, DataType::c64}) {
        names.emplace_back(diagonal_name(t));
        names.push_back(named("determinant", t));
        names.push_back(named("identity", t));
        names.push_back(named("first_zero_diagonal", t));
        names.push_back(named("column_norms", t));
    }
    names.emplace_back("gpumath::kernels::conjugate<float>");
    names.emplace_back("gpumath::kernels::conjugate<double>");
    names.emplace_back("gpumath::kernels::pivots_narrow");
    names.emplace_back("gpumath::kernels::pivots_widen");
    return names;
}

void zero_triangle(const kernels::MatrixBatchParams& m, DataType type, bool upper, core::StreamRef stream) {
    const std::int64_t elements = m.n * m.n;
    if (elements == 0 || m.count == 0) return;
    const core::Kernel k = device_kernel(current(), program(), zero_name(type));
    const kernels::TriangleParams p{.m = m, .upper = upper ? 1 : 0};
    core::launch(stream,
                 {.grid = core::Dim3((elements + threads - 1) / threads, std::min<std::int64_t>(m.count, max_grid_y)),
                  .block = threads},
                 k, p);
}

void batch_pointers(void* base, std::int64_t stride_bytes, std::int64_t count, void** out, core::StreamRef stream) {
    if (count == 0) return;
    const core::Kernel k = device_kernel(current(), program(), "gpumath::kernels::batch_pointers");
    const kernels::BatchPointerParams p{
        .base = static_cast<char*>(base), .stride_bytes = stride_bytes, .count = count, .out = out};
    core::launch(stream, {.grid = std::min<std::int64_t>((count + threads - 1) / threads, 1024), .block = threads}, k,
                 p);
}

void add_diagonal(const kernels::MatrixBatchParams& m, DataType type, double value, core::StreamRef stream) {
    if (m.n == 0 || m.count == 0) return;
    const core::Kernel k = device_kernel(current(), program(), diagonal_name(type));
    const kernels::DiagonalParams p{.m = m, .value = value};
    core::launch(stream,
                 {.grid = core::Dim3((m.n + threads - 1) / threads, std::min<std::int64_t>(m.count, max_grid_y)),
                  .block = threads},
                 k, p);
}

void convert_pivots(const void* in, void* out, std::int64_t count, bool narrow, core::StreamRef stream) {
    if (count == 0) return;
    const core::Kernel k = device_kernel(current(), program(),
                                         narrow ? "gpumath::kernels::pivots_narrow" : "gpumath::kernels::pivots_widen");
    const kernels::PivotParams p{.in = in, .out = out, .count = count};
    core::launch(stream, {.grid = std::min<std::int64_t>((count + threads - 1) / threads, 4096), .block = threads}, k,
                 p);
}

void determinants(const kernels::MatrixBatchParams& lu, DataType type, const int* pivots, std::int64_t pivot_stride,
                  void* out, core::StreamRef stream) {
    if (lu.count == 0) return;
    const core::Kernel k = device_kernel(current(), program(), named("determinant", type));
    const kernels::DeterminantParams p{.m = lu, .pivots = pivots, .pivot_stride = pivot_stride, .out = out};
    core::launch(stream, {.grid = (lu.count + threads - 1) / threads, .block = threads}, k, p);
}

void set_identity(const kernels::MatrixBatchParams& m, DataType type, core::StreamRef stream) {
    const std::int64_t elements = m.n * m.n;
    if (elements == 0 || m.count == 0) return;
    const core::Kernel k = device_kernel(current(), program(), named("identity", type));
    const kernels::IdentityParams p{.m = m};
    core::launch(stream,
                 {.grid = core::Dim3((elements + threads - 1) / threads, std::min<std::int64_t>(m.count, max_grid_y)),
                  .block = threads},
                 k, p);
}

void conjugate(const kernels::ConjugateParams& m, DataType type, core::StreamRef stream) {
    const std::int64_t elements = m.rows * m.cols;
    if (elements == 0 || m.count == 0 || (type != DataType::c32 && type != DataType::c64)) return;
    const core::Kernel k = device_kernel(
        current(), program(),
        type == DataType::c64 ? "gpumath::kernels::conjugate<double>" : "gpumath::kernels::conjugate<float>");
    core::launch(stream,
                 {.grid = core::Dim3((elements + threads - 1) / threads, std::min<std::int64_t>(m.count, max_grid_y)),
                  .block = threads},
                 k, m);
}

void first_zero_diagonal(const kernels::ColumnMajorBatchParams& m, DataType type, int* info, core::StreamRef stream) {
    if (m.count == 0) return;
    const core::Kernel k = device_kernel(current(), program(), named("first_zero_diagonal", type));
    const kernels::ZeroDiagonalParams p{.m = m, .info = info};
    core::launch(stream, {.grid = std::min<std::int64_t>(m.count, 65535), .block = threads}, k, p);
}

void column_norms(const kernels::ColumnMajorBatchParams& m, DataType type, std::int64_t row0, void* out,
                  core::StreamRef stream) {
    if (m.count == 0 || m.cols == 0) return;
    const core::Kernel k = device_kernel(current(), program(), named("column_norms", type));
    const kernels::ColumnNormParams p{.m = m, .row0 = row0, .out = out};
    core::launch(stream, {.grid = core::Dim3(m.cols, std::min<std::int64_t>(m.count, max_grid_y)), .block = threads}, k,
                 p);
}

}  // namespace gpumath::detail
