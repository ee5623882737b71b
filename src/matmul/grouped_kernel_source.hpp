// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: the programs of the grouped kernels over kernels/grouped_gemm.cu, one per
// (input type, result type, activation, bias, where the sizes are) for the portable kernels and,
// for the Hopper kernel, also per weight layout, block width and cluster: the options that make
// each, the programs the core kernel loader compiles, and their compiles for the CPU tests.
#pragma once

#include <string>
#include <string_view>

#include <gpumath/core/object_code.hpp>
#include <gpumath/core/program.hpp>

#include "core/kernel_loader.hpp"
#include "matmul/grouped_kernel.hpp"

namespace gpumath::detail {

/// The CUDA C++ of every grouped kernel (kernels/grouped_gemm.cu as embedded at build time).
[[nodiscard]] std::string_view grouped_gemm_source();

/// The options that make grouped_gemm_source() the portable kernel of `v` (the tensor-core kernel
/// for f16 and bf16 inputs, the SIMT one for f32): its macros and in-memory headers; `arch` left
/// empty. InvalidArgument for a type or epilog it lacks.
[[nodiscard]] core::ProgramOptions grouped_kernel_options(const GroupedKernelVariant& v);

/// The options of the Hopper kernel of `v` for weights laid out as `layout` (not none), with
/// `block_n` columns per block and `cluster` blocks per cluster; `arch` is "sm_90a", the kernel's
/// one target. InvalidArgument for f32 inputs, `none`, a width other than 128 and 256, a cluster
/// other than 1 and 2, and what grouped_kernel_options refuses.
[[nodiscard]] core::ProgramOptions grouped_wgmma_options(const GroupedKernelVariant& v, GroupedWgmmaLayout layout,
                                                         int block_n = 128, int cluster = 1);

/// Those programs for the core kernel loader (device_kernel), each made once per process, on first
/// use. Throw as the options do.
[[nodiscard]] const DeviceProgram& grouped_kernel_program(const GroupedKernelVariant& v);
[[nodiscard]] const DeviceProgram& grouped_wgmma_program(const GroupedKernelVariant& v, GroupedWgmmaLayout layout,
                                                         int block_n, int cluster);

/// The portable kernel of `v` compiled to a cubin for `arch` ("sm_90"); needs NVRTC, not a device.
[[nodiscard]] core::ObjectCode compile_grouped_kernel(const GroupedKernelVariant& v, const std::string& arch);

/// The Hopper kernel of (v, layout, block_n, cluster) compiled to a cubin for `arch` ("sm_90a").
[[nodiscard]] core::ObjectCode compile_grouped_wgmma_kernel(const GroupedKernelVariant& v, GroupedWgmmaLayout layout,
                                                            int block_n, const std::string& arch, int cluster = 1);

}  // namespace gpumath::detail
