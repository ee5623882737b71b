// SPDX-License-Identifier: Apache-2.0
/// @file
/// FP8 quantization for the scaled products: quantize_fp8 turns a bf16/f16/f32 tensor into e4m3 or
/// e5m2 data plus the scales of a ScaleMode (and optionally its amax) in one run-time compiled
/// kernel; dequantize_fp8 is the inverse.
#pragma once

#include <memory>
#include <optional>

#include <gpumath/core/memory.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/matmul/options.hpp>
#include <gpumath/tensor.hpp>
#include <gpumath/types.hpp>

namespace gpumath {

/// Options of quantize_fp8.
struct QuantizeOptions {
    /// The FP8 type of the data: e4m3 (largest finite 448) or e5m2 (57344).
    DataType dtype = DataType::e4m3;
    /// Also compute max |x| over the whole tensor (QuantizedFP8::amax).
    bool amax = false;
    /// Where the allocating quantize_fp8 allocates; default: the device's pool.
    std::shared_ptr<core::MemoryResource> memory_resource{};
};

/// FP8 data with its scales: what quantize_fp8 returns. `data * scale` (the scale of each
/// element's row, block or tensor) approximates the input. Data and scales are laid out as an
/// operand `a` wants them (scale blocks run along the last dimension, K). For an operand `b`,
/// quantize the weights W (N, K) as they are stored and pass `data.view().transposed()` and
/// `scales_view.transposed()`: b = W^T is (K, N) column-major, as FP8 products need.
struct QuantizedFP8 {
    /// e4m3 or e5m2, the input's shape, dense row-major.
    Tensor data{};
    /// The memory of the scales, dense: a Tensor is row-major, and the block modes' scale layouts
    /// are not, so this is (..., L, R) for block_1x128 and (..., ceil(R / 128), L4) for
    /// block_128x128 (the layout itself for tensor and outer_vector). Use `scales_view`.
    Tensor scales{};
    /// The scales as a view of `scales` in the layout `fp8_scale_layout(mode, data)` gives: what
    /// MatmulScales and dequantize_fp8 take.
    TensorView scales_view{};
    /// max |x| as one f32 (rank 0) when QuantizeOptions::amax was set; empty otherwise.
    Tensor amax{};
    /// The mode the scales follow.
    ScaleMode mode = ScaleMode::tensor;
};

/// The f32 scale layout of `mode` for an FP8 tensor of layout `x` (..., R, C) whose scale blocks run
/// along its last dimension C (an operand `a` with R = M, C = K), L = ceil(C / 128),
/// L4 = L rounded up to a multiple of 4:
/// - tensor: rank 0 (one f32);
/// - outer_vector: (..., R), contiguous;
/// - block_1x128: (..., R, L) with strides (..., 1, R): R runs fastest ("M-major");
/// - block_128x128: (..., ceil(R / 128), L) with strides (..., L4, 1): L runs fastest, rows of L4.
///   The scales occupy ceil(R / 128) * L4 floats per batch, the last row's padding included (more
///   than the view's span): allocate that many; quantize_fp8 writes 0 into the padding.
/// Batch dimensions are dense over these matrices. InvalidArgument below rank 2 (rank 1 for
/// `tensor`), or for an out-of-range mode.
[[nodiscard]] TensorLayout fp8_scale_layout(ScaleMode mode, const TensorLayout& x);

/// Quantizes `x` (bf16, f16 or f32; shape (..., R, C), unit stride along C, any row stride, batch
/// dimensions with one batch stride) to FP8 with scales of `mode`: each scale is the amax of the
/// elements it covers divided by the FP8 type's largest finite value (1 where that amax is 0, or
/// so small that the quotient underflows), and each element is rounded to nearest-even from
/// `x / scale`, saturating. NaN elements do not count toward an amax and quantize to NaN; an infinite
/// element makes its block's scale infinite, so the block's finite elements quantize to 0 and the
/// infinite one to NaN (clip infinities first where that matters). One
/// run-time compiled kernel (cached per device) reads x once (`tensor` mode reads it twice: the
/// grid-wide max comes first). Allocates data, scales and amax from the options' memory resource;
/// InvalidArgument for bad input (before any GPU work) and during a stream capture (use the form
/// with outputs).
[[nodiscard]] QuantizedFP8 quantize_fp8(const TensorView& x, ScaleMode mode, const QuantizeOptions& options = {},
                                        core::StreamRef stream = core::current_stream());

/// The same into the caller's memory: `data` (FP8, x's shape, dense row-major), `scales` (f32, the
/// layout fp8_scale_layout gives, 16-byte aligned for every mode but `tensor`) and optionally
/// `amax` (one f32). No output may overlap x or another output. Allocates nothing, so it may be
/// captured in a CUDA graph. InvalidArgument naming the operand for bad input, before any GPU work.
void quantize_fp8(const TensorView& x, ScaleMode mode, const TensorView& data, const TensorView& scales,
                  float* amax = nullptr, core::StreamRef stream = core::current_stream());

/// The inverse: `data * scale` per element (in f32, then rounded to `result_type`: bf16, f16 or
/// f32), dense row-major with data's shape. `data` may have strided rows as x may; `scales` must
/// have the layout fp8_scale_layout(mode, data) gives (QuantizedFP8::scales_view). One run-time
/// compiled kernel. Allocates the result from the device's pool; InvalidArgument for bad input
/// (before any GPU work) and during a stream capture.
[[nodiscard]] Tensor dequantize_fp8(const TensorView& data, const TensorView& scales, ScaleMode mode,
                                    DataType result_type = DataType::f32,
                                    core::StreamRef stream = core::current_stream());

}  // namespace gpumath
