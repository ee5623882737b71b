// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: what a quantize_fp8 or dequantize_fp8 call is, decided and checked on the
// host before any CUDA call (InvalidArgument naming the operand; NotSupported for grids CUDA
// cannot launch).
#pragma once

#include <cstdint>

#include <gpumath/layout.hpp>
#include <gpumath/matmul/options.hpp>
#include <gpumath/types.hpp>

namespace gpumath::detail {

/// A tensor (..., R, C) with unit stride along C as the kernels read it: B batches (the leading
/// dimensions, one batch stride) of R rows (one row stride) of C elements. A rank-1 tensor is one
/// row. L = ceil(C / 128) blocks per row, padded to L4 (a multiple of 4) in block_128x128 scales;
/// ceil(R / 128) row blocks.
struct QuantizeGeometry {
    std::int64_t batches = 1;
    std::int64_t rows = 1;
    std::int64_t cols = 1;
    std::int64_t row_stride = 0;
    std::int64_t batch_stride = 0;
    std::int64_t blocks = 0;
    std::int64_t blocks4 = 0;
    std::int64_t row_blocks = 0;
};

/// One quantization (or dequantization) as the kernels run it, validated.
struct QuantizeCall {
    /// bf16, f16 or f32: the type of x (quantize) or of the result (dequantize).
    DataType element = DataType::f32;
    /// e4m3 or e5m2.
    DataType fp8 = DataType::e4m3;
    ScaleMode mode = ScaleMode::tensor;
    QuantizeGeometry geometry{};
    /// Quantize: x, data, scales, amax (may be null). Dequantize: the FP8 data, the result, the
    /// scales, null.
    const void* in = nullptr;
    void* out = nullptr;
    float* scales = nullptr;
    float* amax = nullptr;
};

/// InvalidArgument unless `mode` is a ScaleMode.
void check_scale_mode(ScaleMode mode, const char* api);

/// The f32 scale layout of `mode` for a tensor of layout `x` (fp8_scale_layout's contract: the
/// matmul's own scale_layout, after the rank check; `name` is the operand named in errors). `mode`
/// must have been checked.
[[nodiscard]] TensorLayout quantize_scale_layout(ScaleMode mode, const TensorLayout& x, const char* name,
                                                 const char* api);

/// The dense row-major layout of the memory `mode`'s scales for `x` occupy, which the allocating
/// quantize_fp8 allocates: rank 0, (..., R), (..., L, R) or (..., ceil(R / 128), L4).
[[nodiscard]] TensorLayout scale_storage_layout(ScaleMode mode, const TensorLayout& x);

/// Validates what the allocating quantize_fp8 is given (x, mode, the FP8 type) and returns the
/// call without outputs.
[[nodiscard]] QuantizeCall quantize_call(const TensorView& x, ScaleMode mode, DataType fp8, const char* api);

/// Validates the form with outputs: x and mode as above, `data` (FP8, x's shape, dense row-major),
/// `scales` (exactly scale_layout, 16-byte aligned for the modes other than tensor), `amax` (4-byte
/// aligned or null), and that no output overlaps x or another output.
[[nodiscard]] QuantizeCall quantize_call(const TensorView& x, ScaleMode mode, const TensorView& data,
                                         const TensorView& scales, float* amax, const char* api);

/// Validates dequantize_fp8's arguments; the call's `out` is left null.
[[nodiscard]] QuantizeCall dequantize_call(const TensorView& data, const TensorView& scales, ScaleMode mode,
                                           DataType result_type, const char* api);

}  // namespace gpumath::detail
