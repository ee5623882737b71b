// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: gpumath's elementwise pass over D after cuBLASLt's product, for what
// cuBLASLt's epilogues cannot do (SiLU, a bias along D's strided dimension, the user's function).
#pragma once

#include <memory>
#include <string>

#include <gpumath/core/object_code.hpp>
#include <gpumath/core/program.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/matmul/options.hpp>
#include "matmul/epilog_inputs.hpp"
#include "matmul/problem.hpp"

namespace gpumath::detail {

/// Stage, before the arrangement: whether there is a pass, and whether the bias goes to it (a bias
/// per row of a D that can only be row-major, or per column of one that can only be column-major).
/// Checks the pass's rules (D f16, bf16 or f32; a function with source and symbol).
void epilog_pass_route(const BiasInput& bias, const MatmulOptions& options, MatmulProblem& P);

/// Stage, after the epilog vectors: cuBLASLt's share of the epilog (P.inputs.effective) and the
/// pass's geometry over D as cuBLASLt writes it.
void epilog_pass_stage(const BiasInput& bias, MatmulProblem& P);

/// NVRTC's options for the pass of `pass` over a D of `d` elements (kernels/epilog_pass.cu): its
/// macros, parameter header and the user's function, if any, as the header epilog_function.cuh.
[[nodiscard]] core::ProgramOptions epilog_pass_options(const EpilogPass& pass, DataType d,
                                                       const MatmulEpilogFunction* function);

/// kernels/epilog_pass.cu with `epilog_pass_options(...)` compiled to a cubin for `arch` ("sm_90"); needs NVRTC, not a
/// device. CompileError naming options.epilog_function and its signature when the user's function does not compile.
[[nodiscard]] core::ObjectCode compile_epilog_pass(const EpilogPass& pass, DataType d,
                                                   const MatmulEpilogFunction* function, const std::string& arch);

/// The pass's kernels on one device (compiled and loaded once per process and program by the core
/// kernel loader).
struct EpilogPassKernels;

/// The kernels of `P.pass` on `device`. CompileError naming options.epilog_function when the
/// user's function does not compile.
[[nodiscard]] std::shared_ptr<const EpilogPassKernels> load_epilog_pass(const MatmulProblem& P,
                                                                        const MatmulOptions& options, int device);

/// Enqueues the pass over `d` on `stream` (the kernels' device must be current). Allocates nothing.
void run_epilog_pass(const EpilogPassKernels& kernels, const EpilogPass& pass, void* d, const void* bias,
                     void* user_info, core::StreamRef stream);

}  // namespace gpumath::detail
