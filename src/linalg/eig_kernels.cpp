// SPDX-License-Identifier: Apache-2.0
// Eig's eigenvector kernel, compiled once per device by the core loader (linalg/eig_kernels.hpp).
#include "linalg/eig_kernels.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <gpumath/core/launch.hpp>
#include "core/kernel_loader.hpp"
#include "detail/status.hpp"
#include "linalg/kernels/eig_params.hpp.inc"
#include "linalg/kernels/eig_vectors.cu.inc"
#include "linalg/kernels/linalg_params.hpp.inc"

namespace gpumath::detail {
namespace {

constexpr std::int64_t threads = 256;
constexpr std::int64_t max_grid_y = 65535;

const DeviceProgram& program() {
    static const DeviceProgram p(eig_kernel_source(), eig_kernel_options(), eig_kernel_names());
    return p;
}

}  // namespace

std::string_view eig_kernel_source() { return embedded::linalg_kernels_eig_vectors_cu; }

core::ProgramOptions eig_kernel_options() {
    core::ProgramOptions options;
    options.name = "gpumath_linalg_eig";
    options.std = "c++17";
    options.headers["linalg_params.hpp"] = std::string(embedded::linalg_kernels_linalg_params_hpp);
    options.headers["eig_params.hpp"] = std::string(embedded::linalg_kernels_eig_params_hpp);
    return options;
}

std::vector<std::string> eig_kernel_names() {
    return {"gpumath::kernels::unpack_vectors<float>", "gpumath::kernels::unpack_vectors<double>"};
}

void unpack_vectors(const kernels::UnpackParams& p, DataType real, core::StreamRef stream) {
    const std::int64_t elements = p.out.n * p.out.n;
    if (elements == 0 || p.out.count == 0) return;
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice", "finding the device of the eigenvector kernel");
    const core::Kernel k = device_kernel(
        device, program(),
        real == DataType::f64 ? "gpumath::kernels::unpack_vectors<double>" : "gpumath::kernels::unpack_vectors<float>");
    core::launch(
        stream,
        {.grid = core::Dim3((elements + threads - 1) / threads, std::min<std::int64_t>(p.out.count, max_grid_y)),
         .block = threads},
        k, p);
}

}  // namespace gpumath::detail
