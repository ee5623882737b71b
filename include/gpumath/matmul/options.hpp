// SPDX-License-Identifier: Apache-2.0
/// @file
/// Options, arguments and results of gpumath's matrix multiplication (cuBLASLt).
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include <gpumath/core/memory.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/tensor.hpp>
#include <gpumath/types.hpp>

namespace gpumath {

/// How products are accumulated. `automatic` follows cuBLASLt's table: f32 for f16, bf16, f32,
/// c32 and FP8 inputs, f64 for f64 and c64, i32 for i8. The `f32_fast_*` types let f32/c32
/// products run on tensor cores with f16, bf16 or tf32 inputs; `f16` accumulates f16 products in
/// f16 (alpha and beta are then rounded to f16). An explicit type the inputs do not allow is
/// InvalidArgument.
enum class ComputeType : std::uint8_t {
    automatic,      ///< The inputs' default: f32, f64 for f64 and c64, i32 for i8.
    f16,            ///< f16 accumulation, for f16 inputs (and an f16 D); alpha and beta in f16.
    f32,            ///< f32 accumulation, for f16, bf16, f32, c32 and FP8 inputs.
    f32_fast_f16,   ///< f32 or c32 inputs rounded to f16 on tensor cores, accumulated in f32.
    f32_fast_bf16,  ///< f32 or c32 inputs rounded to bf16 on tensor cores, accumulated in f32.
    f32_fast_tf32,  ///< f32 or c32 inputs rounded to tf32 on tensor cores, accumulated in f32.
    f64,            ///< f64 accumulation, for f64 and c64 inputs.
    i32             ///< i32 accumulation, for i8 inputs.
};

/// The enumerator's name ("f32_fast_tf32", ...).
[[nodiscard]] constexpr std::string_view to_string(ComputeType t) noexcept {
    switch (t) {
        case ComputeType::automatic:
            return "automatic";
        case ComputeType::f16:
            return "f16";
        case ComputeType::f32:
            return "f32";
        case ComputeType::f32_fast_f16:
            return "f32_fast_f16";
        case ComputeType::f32_fast_bf16:
            return "f32_fast_bf16";
        case ComputeType::f32_fast_tf32:
            return "f32_fast_tf32";
        case ComputeType::f64:
            return "f64";
        case ComputeType::i32:
            return "i32";
    }
    return "unknown";
}

/// What is applied to `alpha * A @ B + beta * C` before it is stored in D: cuBLASLt's epilogues,
/// and SiLU, which cuBLASLt lacks (gpumath applies it in an elementwise pass over D after the
/// product, with the bias fused into the product where cuBLASLt can add it).
///
/// | epilog | extra input | extra output | D |
/// |---|---|---|---|
/// | none | | | x |
/// | relu, gelu | | | relu(x), gelu(x) |
/// | relu_aux, gelu_aux | | aux: ReLU bit mask / GELU input x | relu(x), gelu(x) |
/// | bias | bias | | x + bias |
/// | relu_bias, gelu_bias | bias | | act(x + bias) |
/// | relu_aux_bias, gelu_aux_bias | bias | aux of x + bias | act(x + bias) |
/// | drelu, dgelu | aux (from a forward *_aux call) | | x * act'(aux) |
/// | drelu_bgrad, dgelu_bgrad | aux | bias_grad = D summed over D's rows or columns | x * act'(aux) |
/// | bgrada | | bias_grad[m] = sum_k A[m, k] | x |
/// | bgradb | | bias_grad[n] = sum_k B[k, n] | x |
/// | silu | | | x * sigmoid(x) |
/// | silu_bias | bias | | silu(x + bias) |
///
/// A bias per row of a row-major D, or per column of a column-major D (the orientation cuBLASLt's
/// epilog bias cannot run along), is added in the elementwise pass for bias, relu_bias, gelu_bias
/// and silu_bias; the *_aux_bias epilogs need the orientation cuBLASLt takes.
///
/// GELU is the tanh approximation `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, as cuBLASLt
/// computes it. docs/matmul.md gives the shapes and dtypes of every input and output.
enum class Epilog : std::uint8_t {
    /// D = x, where x is `alpha * A @ B + beta * C`.
    none,
    /// D = relu(x).
    relu,
    /// D = relu(x); aux receives the ReLU bit mask that drelu and drelu_bgrad take.
    relu_aux,
    /// D = x + bias.
    bias,
    /// D = relu(x + bias).
    relu_bias,
    /// D = relu(x + bias); aux receives the ReLU bit mask of x + bias.
    relu_aux_bias,
    /// D = gelu(x), GELU's tanh approximation.
    gelu,
    /// D = gelu(x); aux receives the GELU input x, which dgelu and dgelu_bgrad take.
    gelu_aux,
    /// D = gelu(x + bias).
    gelu_bias,
    /// D = gelu(x + bias); aux receives the GELU input x + bias.
    gelu_aux_bias,
    /// ReLU's backward pass: D = x * relu'(aux), with aux from a relu_aux or relu_aux_bias call.
    drelu,
    /// drelu, and bias_grad receives D summed along its non-unit-stride dimension.
    drelu_bgrad,
    /// GELU's backward pass: D = x * gelu'(aux), with aux from a gelu_aux or gelu_aux_bias call.
    dgelu,
    /// dgelu, and bias_grad receives D summed along its non-unit-stride dimension.
    dgelu_bgrad,
    /// D = x, and bias_grad[m] receives the sum over k of A[m, k] (A column-major).
    bgrada,
    /// D = x, and bias_grad[n] receives the sum over k of B[k, n] (B row-major).
    bgradb,
    /// D = silu(x) = x * sigmoid(x), in an elementwise pass after the product.
    silu,
    /// D = silu(x + bias), the bias fused into the product where cuBLASLt can add it.
    silu_bias,
};

/// The enumerator's name ("gelu_aux_bias", ...).
[[nodiscard]] constexpr std::string_view to_string(Epilog e) noexcept {
    switch (e) {
        case Epilog::none:
            return "none";
        case Epilog::relu:
            return "relu";
        case Epilog::relu_aux:
            return "relu_aux";
        case Epilog::bias:
            return "bias";
        case Epilog::relu_bias:
            return "relu_bias";
        case Epilog::relu_aux_bias:
            return "relu_aux_bias";
        case Epilog::gelu:
            return "gelu";
        case Epilog::gelu_aux:
            return "gelu_aux";
        case Epilog::gelu_bias:
            return "gelu_bias";
        case Epilog::gelu_aux_bias:
            return "gelu_aux_bias";
        case Epilog::drelu:
            return "drelu";
        case Epilog::drelu_bgrad:
            return "drelu_bgrad";
        case Epilog::dgelu:
            return "dgelu";
        case Epilog::dgelu_bgrad:
            return "dgelu_bgrad";
        case Epilog::bgrada:
            return "bgrada";
        case Epilog::bgradb:
            return "bgradb";
        case Epilog::silu:
            return "silu";
        case Epilog::silu_bias:
            return "silu_bias";
    }
    return "unknown";
}

/// True when the epilog adds a bias (`MatmulArgs::bias` required).
[[nodiscard]] constexpr bool epilog_takes_bias(Epilog e) noexcept {
    return e == Epilog::bias || e == Epilog::relu_bias || e == Epilog::relu_aux_bias || e == Epilog::gelu_bias ||
           e == Epilog::gelu_aux_bias || e == Epilog::silu_bias;
}
/// True when the epilog writes an aux output (ReLU bit mask or GELU input).
[[nodiscard]] constexpr bool epilog_writes_aux(Epilog e) noexcept {
    return e == Epilog::relu_aux || e == Epilog::relu_aux_bias || e == Epilog::gelu_aux || e == Epilog::gelu_aux_bias;
}
/// True when the epilog reads an aux input (`MatmulArgs::aux` required).
[[nodiscard]] constexpr bool epilog_reads_aux(Epilog e) noexcept {
    return e == Epilog::drelu || e == Epilog::drelu_bgrad || e == Epilog::dgelu || e == Epilog::dgelu_bgrad;
}
/// True when the epilog writes a bias gradient.
[[nodiscard]] constexpr bool epilog_writes_bias_grad(Epilog e) noexcept {
    return e == Epilog::drelu_bgrad || e == Epilog::dgelu_bgrad || e == Epilog::bgrada || e == Epilog::bgradb;
}
/// True when the epilog's aux is a ReLU bit mask (false: GELU input, or no aux).
[[nodiscard]] constexpr bool epilog_aux_is_relu_mask(Epilog e) noexcept {
    return e == Epilog::relu_aux || e == Epilog::relu_aux_bias || e == Epilog::drelu || e == Epilog::drelu_bgrad;
}

/// cuBLAS's recommended workspace on Hopper and gpumath's default limit: 32 MiB.
inline constexpr std::size_t default_workspace_limit = std::size_t(32) << 20;

/// A user epilog: CUDA C++ source defining a `__device__` function that gpumath applies to every
/// element of D after the built-in `Epilog`, in an elementwise pass over D that reads and writes
/// D once. It must match `matmul_epilog_signature(symbol)`:
///
///     __device__ float symbol(float value, long long batch, long long row, long long col, void* user_info)
///
/// `value` is the element (after the built-in epilog) in f32, `row` and `col` its indices in D
/// (M x N), `batch` the product's index among D's flattened batch dimensions, and `user_info` the
/// call's `MatmulArgs::epilog_user_info`, so the function can read a bias of any orientation, a
/// gate or anything else from device memory. Compiled with NVRTC through the compile cache when
/// the plan is made; D must be f16, bf16 or f32.
struct MatmulEpilogFunction {
    /// CUDA C++ source defining `symbol` (it may define other functions and include headers).
    std::string source{};
    /// The function's name (may be namespace-qualified, e.g. "act::swish").
    std::string symbol{};
};

/// The declaration a user epilog named `symbol` must match. InvalidArgument when `symbol` is not a
/// (namespace-qualified) C++ name (a C++17 keyword is not one).
[[nodiscard]] std::string matmul_epilog_signature(const std::string& symbol = "epilog");

/// Options of a matrix multiplication, fixed when a Matmul is built (part of the plan cache key of
/// `matmul()`).
struct MatmulOptions {
    /// Accumulation type; see ComputeType.
    ComputeType compute_type = ComputeType::automatic;
    /// What is applied to the product before it is stored.
    Epilog epilog = Epilog::none;
    /// Element type of D. Default: the inputs' type (f16, bf16, f32, f64, c32, c64), i32 for i8
    /// inputs, bf16 for FP8 inputs. When a `d` view is given its dtype must match (or leave this empty).
    std::optional<DataType> result_type{};
    /// Most workspace an algorithm may use, in bytes. More allows split-K and other algorithms
    /// (and can change results bitwise).
    std::size_t workspace_limit = default_workspace_limit;
    /// Where gpumath allocates results, aux outputs and workspace; default: the device's pool.
    std::shared_ptr<core::MemoryResource> memory_resource{};
    /// FP8 only: skip the periodic promotion of partial sums (faster, less accurate).
    bool fast_accumulation = false;
    /// A user function applied to every element of D after `epilog` (see MatmulEpilogFunction).
    std::optional<MatmulEpilogFunction> epilog_function{};
};

/// What plan() asks cuBLASLt's heuristics for.
struct PlanPreferences {
    /// How many candidate algorithms to ask for (1..64); autotune() times all of them.
    int max_algorithms = 8;
};

/// A host scalar for alpha and beta: real, complex or integer. It is converted to the problem's
/// scale type (f16, f32, f64, c32, c64 or i32) when the product runs; a complex value for a real
/// problem, or a non-integral value for an integer problem, is InvalidArgument.
struct Scalar {
    /// The real part (the value of a real or integer scalar).
    double real = 0.0;
    /// The imaginary part (0 for a real or integer scalar).
    double imag = 0.0;

    /// Zero.
    constexpr Scalar() noexcept = default;
    // clang-format 14 would join the requires-clause to the declaration.
    // clang-format off
    /// A real value of any arithmetic type (`alpha = 2`, `beta = 0.5f`), held as a double.
    template <class T>
        requires std::is_arithmetic_v<T>
    constexpr Scalar(T value) noexcept : real(static_cast<double>(value)) {}  // NOLINT: implicit by design
    // clang-format on
    /// A complex value (`alpha = std::complex<float>(0, 1)`), held as two doubles.
    template <class T>
    constexpr Scalar(std::complex<T> value) noexcept  // NOLINT: implicit by design
        : real(static_cast<double>(value.real())), imag(static_cast<double>(value.imag())) {}

    /// Equal when real and imaginary parts are.
    friend constexpr bool operator==(const Scalar&, const Scalar&) = default;
};

/// How finely an FP8 operand is scaled (MatmulScales::a_mode, b_mode; quantize_fp8). Each mode
/// names what one f32 scale covers, in the operand's own orientation (a is M x K, b is K x N):
/// - `tensor`: the whole operand (one f32; today's per-tensor scaling, the default).
/// - `outer_vector`: one row of a (M scales) or one column of b (N scales): "row-wise" scaling.
/// - `block_1x128`: 128 consecutive elements along K of one row of a (or one column of b).
/// - `block_128x128`: a 128 x 128 block of the operand.
/// The finer modes run on compute capability 9.x (Hopper) only; their scale tensors' shapes and
/// strides are fixed by cuBLASLt and tabled in docs/matmul.md (quantize_fp8 produces them).
enum class ScaleMode : std::uint8_t {
    tensor,        ///< One f32 scale for the whole operand.
    outer_vector,  ///< One scale per row of a (M) or per column of b (N).
    block_1x128,   ///< One scale per 128 consecutive elements along K of a row of a or column of b.
    block_128x128  ///< One scale per 128 x 128 block of the operand.
};

/// The enumerator's name ("block_1x128", ...).
[[nodiscard]] constexpr std::string_view to_string(ScaleMode m) noexcept {
    switch (m) {
        case ScaleMode::tensor:
            return "tensor";
        case ScaleMode::outer_vector:
            return "outer_vector";
        case ScaleMode::block_1x128:
            return "block_1x128";
        case ScaleMode::block_128x128:
            return "block_128x128";
    }
    return "invalid ScaleMode";
}

/// FP8 scales. The product computed is
/// `D = scale_d * epilog(alpha * (scale_a * A) @ (scale_b * B) + beta * C)`, where scale_a and
/// scale_b are per tensor (`a`, `b`: device pointers to one f32 each, nullptr = 1.0) or, with a
/// finer ScaleMode, f32 device tensors (`a_tensor`, `b_tensor`) holding one scale per row, column
/// or block of the operand, in the shapes and strides docs/matmul.md tables.
/// Only for FP8 inputs; `d` and `amax_d` only with an FP8 result (and per-tensor a and b); `c` is
/// rejected (cuBLASLt scales only an FP8 C, and C of FP8 products is bf16 or f16: scale it with
/// beta). Pointers 16-byte aligned are the safe choice: plans are made for the alignment of the
/// pointers given, and a call with less aligned scale pointers is planned again.
struct MatmulScales {
    /// Per-tensor scale of A (ScaleMode::tensor).
    const float* a = nullptr;
    /// Per-tensor scale of B (ScaleMode::tensor).
    const float* b = nullptr;
    /// Per-tensor scale of C.
    const float* c = nullptr;
    /// Per-tensor scale of D (an FP8 result only).
    const float* d = nullptr;
    /// Receives max |D| (before the D scale is applied) when the product completes.
    float* amax_d = nullptr;
    /// How finely A is scaled; any mode but `tensor` takes its scales from `a_tensor`.
    ScaleMode a_mode = ScaleMode::tensor;
    /// How finely B is scaled; any mode but `tensor` takes its scales from `b_tensor`.
    ScaleMode b_mode = ScaleMode::tensor;
    /// A's scales for `a_mode` other than `tensor`: an f32 device tensor (docs/matmul.md).
    std::optional<TensorView> a_tensor{};
    /// B's scales for `b_mode` other than `tensor`: an f32 device tensor (docs/matmul.md).
    std::optional<TensorView> b_tensor{};
};

/// The per-call arguments of a product. Views are not owned and must stay valid until the work
/// enqueued on the stream has finished.
struct MatmulArgs {
    /// Scales A @ B.
    Scalar alpha = 1.0;
    /// Scales C; must be 0 without `c`.
    Scalar beta = 0.0;
    /// C: shape (..., M, N) like D, with the same unit-stride dimension; may be D itself (in place).
    std::optional<TensorView> c{};
    /// Bias of the *_bias epilogs, broadcast as NumPy broadcasts `A @ B + bias`: (N,) or (1, N)
    /// per column, (M, 1) per row, with leading batch dimensions for a bias per batch; a full
    /// (M, N) bias is added through C.
    std::optional<TensorView> bias{};
    /// Aux of the *_aux epilogs (output; allocated and returned when absent) and of the d*
    /// epilogs (input, required). Layouts in docs/matmul.md.
    std::optional<TensorView> aux{};
    /// Bias gradient of the *_bgrad and bgrad* epilogs (output; allocated and returned when absent).
    std::optional<TensorView> bias_grad{};
    /// FP8 scales.
    MatmulScales scales{};
    /// Handed to the user epilog function (MatmulOptions::epilog_function) as `user_info`:
    /// device-accessible memory, or null. Ignored without a function.
    void* epilog_user_info = nullptr;
};

/// One algorithm cuBLASLt's heuristics proposed, with its configuration.
struct AlgorithmInfo {
    /// cuBLASLt's algorithm id.
    int id = -1;
    /// cuBLASLt's tile id (cublasLtMatmulTile_t).
    unsigned tile_id = 0;
    /// The tile's name ("128x256": rows x columns of D per block), "undefined" when none.
    std::string tile{};
    /// cuBLASLt's stages id (cublasLtMatmulStages_t).
    unsigned stages_id = 0;
    /// The stages' name ("64x4": K per stage x stages).
    std::string stages{};
    /// Number of K splits (1 = no split-K).
    int split_k = 1;
    /// cublasLtReductionScheme_t of a split-K algorithm.
    unsigned reduction_scheme = 0;
    /// CTA swizzling (0 or 1).
    unsigned cta_swizzling = 0;
    /// Algorithm-specific custom option.
    unsigned custom_option = 0;
    /// Thread-block cluster shape ("2x1x1"; "auto").
    std::string cluster_shape{};
    /// Workspace the algorithm needs, in bytes.
    std::size_t workspace_bytes = 0;
    /// Waves of the device the algorithm fills (1.0 = all SMs once).
    float waves = 0.0f;
    /// Median time per product measured by autotune(), in milliseconds; negative when not measured.
    double time_ms = -1.0;
};

/// Outputs gpumath allocated during a product: the aux output of a *_aux epilog and the bias
/// gradient of a *bgrad* epilog, when the caller passed no view for them (empty otherwise).
struct MatmulOutputs {
    /// Storage of an aux output gpumath allocated (ReLU bit mask as i8 bytes, GELU input as D's
    /// dtype), laid out as docs/matmul.md describes.
    Tensor aux{};
    /// The aux output as the view to pass back as `MatmulArgs::aux` to the matching d* epilog (a
    /// view of `aux`, or the caller's view).
    TensorView aux_view{};
    /// A bias gradient gpumath allocated: shape (..., L) with the batch dimensions of D.
    Tensor bias_grad{};
};

/// The result of an allocating product: D (row-major) plus any allocated outputs. Converts to
/// the D Tensor, so `Tensor d = mm.execute(a, b);` works.
struct MatmulResult : MatmulOutputs {
    /// D, row-major (..., M, N).
    Tensor d{};
    /// Moves D out: `Tensor d = mm.execute(a, b);` (the other outputs stay here).
    operator Tensor() && noexcept { return std::move(d); }  // NOLINT: implicit by design
};

}  // namespace gpumath
