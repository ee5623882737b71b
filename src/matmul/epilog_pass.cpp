// SPDX-License-Identifier: Apache-2.0
// The elementwise pass over D: routing (what cuBLASLt does, what the pass does), the generated
// kernels, and their launch. The pass reads and writes D once, 16 bytes per thread where D's
// layout and pointer allow, with D's unit-stride dimension across threads.
#include "matmul/epilog_pass.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
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
#include "detail/capture_mode.hpp"

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

constexpr const char* pass_body = R"(
struct gm_pass_params {
    gm_d* d;
    gm_i64 inner, outer, ld, batch, batch_stride;
    const gm_bias* bias;
    gm_i64 bias_stride, bias_batch_stride;
    void* user_info;
};

// Element (i, o) of product b of D_lt: i along the unit-stride dimension.
__device__ __forceinline__ float gm_apply(float x, gm_i64 b, gm_i64 i, gm_i64 o, const gm_pass_params& p) {
#if GM_BIAS
    x += gm_load(p.bias[b * p.bias_batch_stride + (GM_BIAS_INNER ? i : o) * p.bias_stride]);
#endif
#if GM_ACT == 1
    x = fmaxf(x, 0.0f);
#elif GM_ACT == 2
    x = 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
#elif GM_ACT == 3
    x = x / (1.0f + __expf(-x));
#endif
#if GM_FUNCTION
    x = GM_SYMBOL(x, b, GM_SWAP ? o : i, GM_SWAP ? i : o, p.user_info);
#endif
    return x;
}

template <int V>
__device__ __forceinline__ void gm_pass(const gm_pass_params& p) {
#if __CUDA_ARCH__ >= 900
    // Launched as a programmatic dependent of the product: wait until D is written.
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    const gm_i64 v = gm_i64(blockIdx.x) * blockDim.x + threadIdx.x;
    if (v * V >= p.inner) return;
    const gm_i64 columns = p.batch * p.outer;
    for (gm_i64 y = blockIdx.y; y < columns; y += gridDim.y) {
        const gm_i64 b = y / p.outer, o = y - b * p.outer;
        gm_d* at = p.d + b * p.batch_stride + o * p.ld + v * V;
        if (V == 1) {
            gm_store(*at, gm_apply(gm_load(*at), b, v, o, p));
        } else {
            uint4 raw = *reinterpret_cast<const uint4*>(at);
            gm_d* e = reinterpret_cast<gm_d*>(&raw);
#pragma unroll
            for (int j = 0; j < V; ++j) gm_store(e[j], gm_apply(gm_load(e[j]), b, v * V + j, o, p));
            *reinterpret_cast<uint4*>(at) = raw;
        }
    }
}

extern "C" __global__ void __launch_bounds__(256) gm_epilog_pass_v(gm_pass_params p) {
    gm_pass<int(16 / sizeof(gm_d))>(p);
}
extern "C" __global__ void __launch_bounds__(256) gm_epilog_pass_s(gm_pass_params p) { gm_pass<1>(p); }
)";

/// Kernel parameters; the layout of gm_pass_params.
struct PassParams {
    void* d;
    std::int64_t inner, outer, ld, batch, batch_stride;
    const void* bias;
    std::int64_t bias_stride, bias_batch_stride;
    void* user_info;
};

}  // namespace

struct EpilogPassKernels {
    core::Module module;
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

std::string epilog_pass_source(const EpilogPass& pass, DataType d, const MatmulEpilogFunction* function) {
    std::string s = fmt::format(
        "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\ntypedef long long gm_i64;\ntypedef {} gm_d;\n"
        "typedef {} gm_bias;\n#define GM_ACT {}\n#define GM_BIAS {}\n#define GM_BIAS_INNER {}\n"
        "#define GM_FUNCTION {}\n",
        cuda_element_type(d), cuda_element_type(pass.bias_type), int(pass.act), pass.bias ? 1 : 0,
        pass.bias_inner ? 1 : 0, function != nullptr ? 1 : 0);
    // GM_SWAP maps D_lt's (inner, outer) to the user's (row, col), which a function sees.
    s += fmt::format("#define GM_SWAP {}\n", pass.swap ? 1 : 0);
    if (function != nullptr) {
        s += fmt::format("#define GM_SYMBOL {}\n#line 1 \"epilog_function\"\n", function->symbol);
        s += function->source;
        s += "\n";
    }
    s += cuda_element_conversions();  // gm_load, gm_store
    s += "#line 1 \"gpumath_epilog_pass\"";
    s += pass_body;
    return s;
}

core::ObjectCode compile_epilog_pass(const EpilogPass& pass, DataType d, const MatmulEpilogFunction* function,
                                     const std::string& arch) {
    core::ProgramOptions po;
    po.name = "gpumath_epilog_pass";
    po.arch = arch;
    po.std = "c++17";
    try {
        return core::Program(epilog_pass_source(pass, d, function), std::move(po)).compile(core::CodeType::cubin);
    } catch (const CompileError& e) {
        if (function == nullptr) throw;
        // Say which function failed and what it must look like; keep NVRTC's status and log.
        throw CompileError(fmt::format("options.epilog_function \"{}\" does not compile; it must define {}\n{}",
                                       function->symbol, matmul_epilog_signature(function->symbol), e.what()),
                           e.status(), e.api(), e.log());
    }
}

std::shared_ptr<const EpilogPassKernels> load_epilog_pass(const MatmulProblem& P, const MatmulOptions& options,
                                                          int device) {
    const MatmulEpilogFunction* function = options.epilog_function ? &*options.epilog_function : nullptr;
    using Key = std::pair<int, std::string>;
    static std::mutex mutex;
    // Never destroyed, like every per-device state: no static destructor may run after the CUDA
    // runtime has shut down.
    static auto* cache = new std::map<Key, std::shared_ptr<const EpilogPassKernels>>();
    const Key key{device, epilog_pass_source(P.pass, P.types.d, function)};
    {
        std::lock_guard lock(mutex);
        if (auto it = cache->find(key); it != cache->end()) return it->second;
    }
    // Compiled outside the lock; two threads that miss at once both compile (the compile cache
    // serves the second) and the first one stored wins.
    // A plan may be made while the caller's stream captures: loading a module is no stream work.
    const RelaxedCaptureMode relaxed("loading a matmul epilog pass");
    const core::ObjectCode code = compile_epilog_pass(P.pass, P.types.d, function, core::Device(device).arch());
    auto k = std::make_shared<EpilogPassKernels>();
    k->module = core::Module(code);
    k->vector = k->module.kernel(kernel_vector, device);
    k->scalar = k->module.kernel(kernel_scalar, device);
    k->vector_elements = 16 / size_of(P.types.d);
    std::lock_guard lock(mutex);
    return cache->emplace(key, std::move(k)).first->second;
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
    const PassParams p{d,        pass.inner,       pass.outer,
                       pass.ld,  pass.batch,       pass.batch_stride,
                       bias,     pass.bias_stride, pass.bias_batch_stride,
                       user_info};
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
