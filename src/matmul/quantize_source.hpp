// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: the CUDA C++ of FP8 quantization (quantize_fp8, dequantize_fp8), compiled
// at run time, one program per (element type, FP8 type), and the parameters its kernels take.
#pragma once

#include <cstdint>
#include <string>

#include <gpumath/core/object_code.hpp>
#include <gpumath/types.hpp>

namespace gpumath::detail {

/// The one argument of every quantization kernel (`gm_quantize` in the generated source, which
/// checks the size): a tensor (..., R, C) seen as B batches of R rows of C elements, its row and
/// batch strides in elements, and the work items of the launch. For dequantize_fp8 `x` is the FP8
/// data and `data` the result.
struct QuantizeParams {
    const void* x = nullptr;
    void* data = nullptr;
    float* scales = nullptr;
    float* amax = nullptr;
    std::int64_t rows = 0;          // R
    std::int64_t cols = 0;          // C
    std::int64_t blocks = 0;        // L = ceil(C / 128)
    std::int64_t blocks4 = 0;       // L rounded up to a multiple of 4
    std::int64_t row_blocks = 0;    // ceil(R / 128)
    std::int64_t batches = 0;       // B
    std::int64_t row_stride = 0;    // of x, in elements
    std::int64_t batch_stride = 0;  // of x, in elements
    std::int64_t items = 0;         // work items of the launch (see each kernel)
};
static_assert(sizeof(QuantizeParams) == 104, "QuantizeParams must match gm_quantize of the generated kernels");

/// Threads that cover one 128-element block of a row, 32 elements each. Measured on an H200 (bf16
/// (8192, 7168), bench_quantize's kernels against a copy of as many bytes in the same run, every
/// variant's bytes compared with the others'): block_1x128 reached 0.93 of the copy's bandwidth
/// with 4 threads of 32 elements in blocks of 128 threads, 0.92 in blocks of 256, 0.90 with 8
/// threads of 16 and 0.72 with 16 of 8, the per-block max and scale being spread over more
/// elements; block_128x128 and outer_vector 0.96 to 1.0 with each.
inline constexpr int quantize_group = 4;
/// Threads of a block of the per-128-block, tile and row kernels.
inline constexpr int quantize_block_threads = 128;
/// 128-element blocks each group of the per-block kernels (and of the outer_vector kernel per
/// sweep) loads before it reduces, so that enough loads are in flight (2 ran ahead of 1 and 4).
inline constexpr int quantize_unroll = 2;
/// 128-element blocks (work items) one block of the per-block kernels takes.
inline constexpr std::int64_t quantize_items_per_block =
    std::int64_t{quantize_block_threads / quantize_group} * quantize_unroll;

/// The kernels of one program, by their extern "C" names. `_v` kernels load 16 bytes at a time
/// and need x 16-byte aligned (pointer, row and batch strides), C a multiple of 16 / element size
/// and the data pointer aligned to that many bytes; `_s` kernels take any layout.
namespace quantize_kernel {
inline constexpr const char* amax_v = "gm_amax_v";  ///< tensor mode, first pass
inline constexpr const char* amax_s = "gm_amax_s";
inline constexpr const char* tensor_v = "gm_quantize_tensor_v";  ///< tensor mode, second pass
inline constexpr const char* tensor_s = "gm_quantize_tensor_s";
inline constexpr const char* finalize = "gm_finalize_tensor";  ///< tensor mode, last
inline constexpr const char* rows_v = "gm_quantize_rows_v";    ///< outer_vector
inline constexpr const char* rows_s = "gm_quantize_rows_s";
inline constexpr const char* blocks_v = "gm_quantize_blocks_v";  ///< block_1x128
inline constexpr const char* blocks_s = "gm_quantize_blocks_s";
inline constexpr const char* tiles_v = "gm_quantize_tiles_v";  ///< block_128x128
inline constexpr const char* tiles_s = "gm_quantize_tiles_s";
inline constexpr const char* dequantize = "gm_dequantize";  ///< dequantize_fp8
}  // namespace quantize_kernel

/// The CUDA C++ of the quantization kernels for `element` (bf16, f16 or f32) and `fp8` (e4m3 or
/// e5m2): quantize `element` to `fp8` in each scale mode, and dequantize `fp8` to `element`.
/// InvalidArgument for other types.
[[nodiscard]] std::string quantize_source(DataType element, DataType fp8);

/// `quantize_source(element, fp8)` compiled to a cubin for `arch` ("sm_90"); needs NVRTC, not a
/// device. CompileError when it does not compile.
[[nodiscard]] core::ObjectCode compile_quantize_kernels(DataType element, DataType fp8, const std::string& arch);

}  // namespace gpumath::detail
