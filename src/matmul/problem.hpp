// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: a validated matmul problem, the aggregate of analyze()'s stages. User
// facts (the call's layouts, shape, types, epilog inputs) are kept apart from cuBLASLt's vocabulary
// (LtArrangement), as CUTLASS keeps Arguments apart from Params.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <cublasLt.h>

#include <gpumath/layout.hpp>
#include <gpumath/matmul/options.hpp>

#include "matmul/call.hpp"

namespace gpumath::detail {

/// Batch dimensions (NumPy-broadcast leading dimensions of a and b).
struct BatchShape {
    std::array<std::int64_t, max_rank> dims{};
    int rank = 0;
    [[nodiscard]] std::span<const std::int64_t> span() const { return {dims.data(), std::size_t(rank)}; }
    /// The number of products; nullopt when it does not fit in int64.
    [[nodiscard]] std::optional<std::int64_t> count() const {
        std::int64_t n = 1;
        for (int i = 0; i < rank; ++i)
            if (__builtin_mul_overflow(n, dims[std::size_t(i)], &n)) return std::nullopt;
        return n;
    }
};

/// Shapes: M, N, K and the broadcast batch (shapes.cpp).
struct ProblemShape {
    std::int64_t m = 0, n = 0, k = 0;
    std::int64_t batch = 1;  // number of products
    BatchShape batch_dims;
};

/// Types (types.cpp): the dtype of every operand and the compute type, `automatic` resolved.
struct ProblemTypes {
    DataType a{}, b{}, c{}, d{}, bias{}, aux{};
    ComputeType compute = ComputeType::f32;
    bool fp8 = false;
    bool fast_accumulation = false;
};

enum class AuxKind : std::uint8_t { none, relu_mask, gelu };

/// Epilog inputs and outputs (epilog_inputs.cpp): what the bias, aux and bias gradient are.
struct EpilogInputs {
    Epilog epilog = Epilog::none;     // as asked
    Epilog effective = Epilog::none;  // after a full bias moved to C
    bool c_from_bias = false;         // C is the user's full (M, N) bias
    bool bias_vector = false;         // the bias goes through the epilog's bias pointer
    AuxKind aux = AuxKind::none;
    TensorLayout aux_storage;  // what gpumath allocates when the caller passes no aux
    TensorLayout aux_view;     // the aux as a view relative to the storage pointer
    bool bias_grad = false;
    std::int64_t bias_grad_length = 0;
    TensorLayout bias_grad_storage;
};

/// FP8 scale modes (scales.cpp), in the user's terms: per operand a and b.
struct ScaleInputs {
    ScaleMode a = ScaleMode::tensor, b = ScaleMode::tensor;
    bool fine = false;  // a mode other than `tensor`: scales come from the scale tensors
};

/// Byte offsets between consecutive products when a batched problem runs as one cuBLASLt call per
/// product (cuBLASLt 13 has no batch stride for the scale tensors of the finer scale modes and
/// offers no batched algorithm for them). In the user's terms (a is the user's a).
struct BatchLoop {
    bool on = false;
    /// Byte offset between products of each operand slot (0 for operands the problem lacks).
    std::array<std::int64_t, layout_slot_count> bytes{};
    [[nodiscard]] std::int64_t operator[](Slot s) const noexcept { return bytes[std::size_t(s)]; }
    [[nodiscard]] std::int64_t& operator[](Slot s) noexcept { return bytes[std::size_t(s)]; }
};

/// One matrix as cuBLASLt sees it (column-major).
struct LtMatrix {
    cudaDataType_t type = CUDA_R_32F;
    std::uint64_t rows = 0;
    std::uint64_t cols = 0;
    std::int64_t ld = 0;
    std::int64_t batch_stride = 0;
};

/// The problem in cuBLASLt's vocabulary (arrangement.cpp, with the epilog vectors' strides from
/// epilog_inputs.cpp): what MatmulPlan writes into descriptors.
struct LtArrangement {
    /// cuBLASLt computes D^T = B^T A^T (D row-major) instead of D = A B (D column-major).
    bool swap = true;
    LtMatrix a, b, c, d;
    cublasOperation_t op_a = CUBLAS_OP_N, op_b = CUBLAS_OP_N;
    bool has_c = false;  // a C operand is read (the user's c or a full bias)
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    cudaDataType_t scale_type = CUDA_R_32F;
    cublasLtEpilogue_t epilog = CUBLASLT_EPILOGUE_DEFAULT;
    std::int64_t bias_batch_stride = 0;
    std::int64_t aux_ld = 0;  // elements (GELU) or bits (ReLU mask)
    std::int64_t aux_batch_stride = 0;
    std::int64_t bias_grad_batch_stride = 0;
    /// cublasLtMatmulMatrixScale_t of cuBLASLt's A and B (the user's b and a with the swap).
    std::int32_t a_scale_mode = 0, b_scale_mode = 0;
    BatchLoop loop;
};

/// What gpumath's elementwise pass over D does after cuBLASLt's product (epilog_pass.cpp): the
/// activation cuBLASLt lacks (SiLU), a bias in the orientation cuBLASLt cannot add (then also the
/// activation that follows it), and the user's epilog function. D as cuBLASLt wrote it: column-major
/// D_lt (`inner` rows with unit stride, `outer` columns `ld` apart), `batch` products.
struct EpilogPass {
    enum class Activation : std::uint8_t { none, relu, gelu, silu };
    bool on = false;
    Activation act = Activation::none;
    bool bias = false;        // the pass adds the bias
    bool bias_inner = false;  // one bias value per D_lt row (else per D_lt column)
    DataType bias_type = DataType::f32;
    std::int64_t bias_stride = 0;        // elements between bias values
    std::int64_t bias_batch_stride = 0;  // elements between products' biases (0: shared)
    bool function = false;               // the user's epilog function runs last
    bool swap = false;                   // D_lt = D^T: its rows are D's columns
    std::int64_t inner = 0, outer = 0, ld = 0, batch = 1, batch_stride = 0;
};

struct MatmulProblem {
    const char* api = "";
    /// The call with every default filled in (d, the planned bias and aux): the plan's key and
    /// match test derive from it.
    MatmulSignature signature;
    ProblemShape shape;
    ProblemTypes types;
    EpilogInputs inputs;
    ScaleInputs scales;
    LtArrangement lt;
    EpilogPass pass;
    /// cuBLASLt's SM count target: the plan is for a product that shares the device with others
    /// and may use about this many SMs (0: the whole device). Set by grouped products only.
    int sm_count_target = 0;

    /// "M=.. N=.. K=.. batch=.., a f16 (..) ..., epilog ..., compute ..." for messages and logs.
    [[nodiscard]] std::string describe() const;
};

/// Validates `sig` under `options` and decides the arrangement. Throws InvalidArgument or
/// NotSupported naming the operand; `api` prefixes messages.
[[nodiscard]] MatmulProblem analyze(const MatmulSignature& sig, const MatmulOptions& options, const char* api);

/// Checks of the options alone: every enum within its enumerators (a value cast from an
/// out-of-range integer is InvalidArgument naming the field). No CUDA calls.
void check_options(const MatmulOptions& options, const char* api);

/// Checks of one call that depend on values, not layouts: alpha/beta against the scale type, beta
/// without c, operand pointers aligned to their element size, and overlaps between outputs and
/// inputs. No CUDA calls.
void check_call(const TensorView& a, const TensorView& b, const TensorView* d, const MatmulArgs& args, const char* api);
/// check_call, then alpha and beta against the scale type of `a`'s products under `options`
/// (check_scale_range): every check of a Matmul or matmul() call's values.
void check_call(const TensorView& a, const TensorView& b, const TensorView* d, const MatmulArgs& args,
                const MatmulOptions& options, const char* api);

/// Whether products of `input` under `options` scale by an f16 alpha and beta (compute type f16),
/// which hold |x| <= 65504.
[[nodiscard]] bool f16_scale_type(DataType input, const MatmulOptions& options) noexcept;
/// InvalidArgument when alpha or beta is past the f16 scale type's range and `f16_scale` (before any
/// CUDA call; check_call bounds them by f32's range only).
void check_scale_range(const Scalar& alpha, const Scalar& beta, bool f16_scale, const char* api);

/// InvalidArgument when `out` (the aux, a bias gradient) overlaps an input of the call (a, b, c,
/// bias, the scale tensors).
void check_output_alone(const TensorView& out, const char* name, const TensorView& a, const TensorView& b,
                        const MatmulArgs& args, const char* api);

/// The D that the allocating calls return: Matmul::result_layout() of the same operands (dense
/// row-major, or column-major like a column-major c). Validates enough to compute it; a
/// column-major one is InvalidArgument naming c, because a Tensor is row-major.
[[nodiscard]] TensorLayout allocated_result_layout(const TensorLayout& a, const TensorLayout& b,
                                                   const std::optional<TensorLayout>& c, const MatmulOptions& options,
                                                   const char* api);

/// Text of a cuBLASLt epilogue for logs.
[[nodiscard]] const char* lt_epilog_name(cublasLtEpilogue_t e) noexcept;

}  // namespace gpumath::detail
