// SPDX-License-Identifier: Apache-2.0
// The elementwise pass over D: routing (what cuBLASLt does, what the pass does), the generated
// kernels, and their launch. The pass reads and writes D once, 16 bytes per thread where D's
// layout and pointer allow, with D's unit-stride dimension across threads.
#include "matmul/epilog_pass.hpp"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/core/launch.hpp>
#include <gpumath/core/module.hpp>
#include <gpumath/core/program.hpp>
#include <gpumath/matmul/matmul.hpp>
#include "detail/identifier.hpp"
#include "detail/status.hpp"
#include "matmul/checks.hpp"
#include "matmul/shapes.hpp"
#include "matmul/types.hpp"
#include "core/kernel_loader.hpp"
#include "matmul/kernels/element_conversions.cuh.inc"
#include "matmul/kernels/epilog_pass.cu.inc"
#include "matmul/kernels/epilog_pass_params.hpp"
#include "matmul/kernels/epilog_pass_params.hpp.inc"

namespace gpumath::detail {
namespace {

using Activation = EpilogPass::Activation;

constexpr int pass_threads = 256;
constexpr const char* kernel_vector = "gm_epilog_pass_v";
constexpr const char* kernel_scalar = "gm_epilog_pass_s";

bool pass_type(DataType t) { return t == DataType::f16 || t == DataType::bf16 || t == DataType::f32; }

/// The activation that follows a bias the pass adds.
Activation activation_after_bias(Epilog e) {
    switch (e) {
        case Epilog::relu_bias:
            return Activation::relu;
        case Epilog::gelu_bias:
            return Activation::gelu;
        case Epilog::silu_bias:
            return Activation::silu;
        default:
            return Activation::none;
    }
}

/// True when cuBLASLt cannot add `bias` along D: its epilog bias runs along D's unit-stride
/// dimension, and D has that dimension only across the bias.
bool bias_needs_pass(const BiasInput& bias, const TensorLayout& d, Epilog epilog, std::int64_t M, std::int64_t N) {
    if (!bias.present || bias.shape.full) return false;
    if (epilog != Epilog::bias && epilog != Epilog::relu_bias && epilog != Epilog::gelu_bias &&
        epilog != Epilog::silu_bias)
        return false;
    const Matrix dm = matrix_of(d);
    const bool d_col = col_major(M, N, dm.rs, dm.cs).has_value();
    const bool d_row = col_major(N, M, dm.cs, dm.rs).has_value();
    if (bias.shape.per_col && !bias.shape.per_row) return d_col && !d_row;
    if (bias.shape.per_row && !bias.shape.per_col) return d_row && !d_col;
    return false;
}

static_assert(std::is_trivially_copyable_v<kernels::EpilogPassParams>, "launched by value");

}  // namespace

struct EpilogPassKernels {
    core::Kernel vector, scalar;
    std::size_t vector_elements = 1;  // elements per 16 bytes
};

void epilog_pass_route(const BiasInput& bias, const MatmulOptions& options, MatmulProblem& P) {
    const char* api = P.api;
    const Epilog epilog = P.inputs.epilog;
    EpilogPass& pass = P.pass;
    pass.bias = bias_needs_pass(bias, *P.signature.d, epilog, P.shape.m, P.shape.n);
    if (pass.bias) pass.act = activation_after_bias(epilog);
    else if (epilog == Epilog::silu || epilog == Epilog::silu_bias) pass.act = Activation::silu;
    if (const auto& f = options.epilog_function) {
        if (f->symbol.empty())
            invalid(api, "options.epilog_function.symbol: empty; name the __device__ function to apply, declared as {}",
                    matmul_epilog_signature());
        check_qualified_name(f->symbol, "options.epilog_function.symbol", api);
        if (f->source.empty())
            invalid(api, "options.epilog_function.source: empty; give the CUDA C++ source that defines {}", f->symbol);
        check_no_nul(f->source, "options.epilog_function.source", api);
        pass.function = true;
    }
    pass.on = pass.bias || pass.act != Activation::none || pass.function;
    if (!pass.on) return;
    const char* what = pass.function ? "options.epilog_function" : pass.bias ? "bias" : "epilog silu";
    if (!pass_type(P.types.d))
        unsupported(api,
                    "{}: runs in gpumath's elementwise pass over d{}, which takes an f16, bf16 or f32 d; d is {} (for "
                    "epilog {})",
                    what, !pass.function && pass.bias ? " (a bias along d's strided dimension is added there)" : "",
                    to_string(P.types.d), to_string(epilog));
}

void epilog_pass_stage(const BiasInput& bias, MatmulProblem& P) {
    EpilogPass& pass = P.pass;
    Epilog& lt = P.inputs.effective;
    // A bias in the pass takes the activation after it along; SiLU always runs in the pass.
    if (pass.bias || lt == Epilog::silu) lt = Epilog::none;
    else if (lt == Epilog::silu_bias) lt = Epilog::bias;
    if (!pass.on) return;
    const LtMatrix& d = P.lt.d;
    pass.swap = P.lt.swap;
    pass.inner = std::int64_t(d.rows);
    pass.outer = std::int64_t(d.cols);
    // A thread per element along D_lt's unit-stride dimension, in at most CUDA's 2^31 - 1 blocks;
    // refused here, before any product is enqueued, not by the pass's launch after it.
    constexpr std::int64_t max_inner = std::int64_t(std::numeric_limits<std::int32_t>::max()) * pass_threads;
    if (pass.inner > max_inner)
        unsupported(P.api,
                    "d: {} elements along its unit-stride dimension; gpumath's elementwise pass over d (for this "
                    "epilog) takes at most {}: split the product along that dimension",
                    pass.inner, max_inner);
    pass.ld = d.ld;
    pass.batch = P.shape.batch;
    pass.batch_stride = d.batch_stride;
    if (pass.bias) {
        const bool per_row = bias.shape.per_row && !bias.shape.per_col;
        // D_lt's rows are D's columns with the swap (D row-major), D's rows without it.
        pass.bias_inner = per_row != P.lt.swap;
        pass.bias_type = bias.layout.dtype();
        pass.bias_stride = per_row ? bias.shape.ps : bias.shape.qs;
        pass.bias_batch_stride =
            batch_stride_of(bias.layout, P.shape.batch_dims, bias.layout.rank() == 1 ? 1 : 2, "bias", P.api);
    }
}

core::ProgramOptions epilog_pass_options(const EpilogPass& pass, DataType d, const MatmulEpilogFunction* function) {
    core::ProgramOptions options;
    options.name = "gpumath_epilog_pass";
    options.std = "c++17";
    // GM_SWAP maps D_lt's (inner, outer) to the user's (row, col), which a function sees.
    options.defines = {{"GM_D_TYPE", cuda_element_type(d)},
                       {"GM_BIAS_TYPE", cuda_element_type(pass.bias_type)},
                       {"GM_ACT", std::to_string(int(pass.act))},
                       {"GM_BIAS", pass.bias ? "1" : "0"},
                       {"GM_BIAS_INNER", pass.bias_inner ? "1" : "0"},
                       {"GM_FUNCTION", function != nullptr ? "1" : "0"},
                       {"GM_SWAP", pass.swap ? "1" : "0"}};
    options.headers["element_conversions.cuh"] = std::string(embedded::matmul_kernels_element_conversions_cuh);
    options.headers["epilog_pass_params.hpp"] = std::string(embedded::matmul_kernels_epilog_pass_params_hpp);
    if (function != nullptr) {
        options.defines["GM_SYMBOL"] = function->symbol;
        options.headers["epilog_function.cuh"] = function->source + "\n";
    }
    return options;
}

namespace {

/// Rethrows a CompileError of the user's function saying which function failed and what it must
/// look like, with NVRTC's status and log.
[[noreturn]] void rethrow_function_error(const CompileError& e, const MatmulEpilogFunction& function) {
    throw CompileError(fmt::format("options.epilog_function \"{}\" does not compile; it must define {}\n{}",
                                   function.symbol, matmul_epilog_signature(function.symbol), e.what()),
                       e.status(), e.api(), e.log());
}

}  // namespace

core::ObjectCode compile_epilog_pass(const EpilogPass& pass, DataType d, const MatmulEpilogFunction* function,
                                     const std::string& arch) {
    core::ProgramOptions options = epilog_pass_options(pass, d, function);
    options.arch = arch;
    try {
        return core::Program(std::string(embedded::matmul_kernels_epilog_pass_cu), std::move(options))
            .compile(core::CodeType::cubin);
    } catch (const CompileError& e) {
        if (function == nullptr) throw;
        rethrow_function_error(e, *function);
    }
}

std::shared_ptr<const EpilogPassKernels> load_epilog_pass(const MatmulProblem& P, const MatmulOptions& options,
                                                          int device) {
    const MatmulEpilogFunction* function = options.epilog_function ? &*options.epilog_function : nullptr;
    // The core loader compiles and loads each distinct program once per device; a plan asks once.
    const DeviceProgram program(embedded::matmul_kernels_epilog_pass_cu,
                                epilog_pass_options(P.pass, P.types.d, function));
    auto k = std::make_shared<EpilogPassKernels>();
    try {
        k->vector = device_kernel(device, program, kernel_vector);
        k->scalar = device_kernel(device, program, kernel_scalar);
    } catch (const CompileError& e) {
        if (function == nullptr) throw;
        rethrow_function_error(e, *function);
    }
    k->vector_elements = 16 / size_of(P.types.d);
    return k;
}

void run_epilog_pass(const EpilogPassKernels& kernels, const EpilogPass& pass, void* d, const void* bias,
                     void* user_info, core::StreamRef stream) {
    const std::int64_t columns = pass.batch * pass.outer;
    if (columns == 0 || pass.inner == 0) return;
    const auto v = std::int64_t(kernels.vector_elements);
    const std::int64_t bytes = 16 / v;
    const bool vector = reinterpret_cast<std::uintptr_t>(d) % 16 == 0 && pass.inner % v == 0 &&
                        (pass.outer * pass.batch <= 1 || (pass.ld * bytes) % 16 == 0) &&
                        (pass.batch <= 1 || (pass.batch_stride * bytes) % 16 == 0);
    const std::int64_t items = vector ? pass.inner / v : pass.inner;
    const std::int64_t threads = std::min<std::int64_t>(pass_threads, (items + 31) / 32 * 32);
    const std::int64_t grid_x = (items + threads - 1) / threads;
    const std::int64_t grid_y = std::min<std::int64_t>(columns, 65535);
    const kernels::EpilogPassParams p{.d = d,
                                      .inner = pass.inner,
                                      .outer = pass.outer,
                                      .ld = pass.ld,
                                      .batch = pass.batch,
                                      .batch_stride = pass.batch_stride,
                                      .bias = bias,
                                      .bias_stride = pass.bias_stride,
                                      .bias_batch_stride = pass.bias_batch_stride,
                                      .user_info = user_info};
    core::launch(stream, {.grid = core::Dim3(grid_x, grid_y), .block = threads, .programmatic_dependency = true},
                 vector ? kernels.vector : kernels.scalar, p);
}

}  // namespace gpumath::detail

namespace gpumath {

std::string matmul_epilog_signature(const std::string& symbol) {
    detail::check_qualified_name(symbol, "symbol", "gpumath::matmul_epilog_signature");
    return fmt::format(
        "__device__ float {}(float value, long long batch, long long row, long long col, void* user_info)", symbol);
}

}  // namespace gpumath
