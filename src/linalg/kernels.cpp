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
    for (const DataType t : {DataType::f32, DataType::f64, DataType::c32, DataType::c64})
        names.emplace_back(diagonal_name(t));
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

}  // namespace gpumath::detail
