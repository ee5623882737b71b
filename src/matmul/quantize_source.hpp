// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: the programs of FP8 quantization (quantize_fp8, dequantize_fp8), one per
// (element type, FP8 type) over kernels/quantize.cu, the launch shape they are compiled for and the
// names of their kernels.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <gpumath/core/object_code.hpp>
#include <gpumath/core/program.hpp>
#include <gpumath/types.hpp>

#include "core/kernel_loader.hpp"
#include "matmul/kernels/quantize_params.hpp"

namespace gpumath::detail {

/// The one argument of every quantization kernel (kernels/quantize_params.hpp, shared with NVRTC).
using QuantizeParams = kernels::QuantizeParams;
static_assert(sizeof(QuantizeParams) == 104 && sizeof(long long) == sizeof(std::int64_t),
              "the quantization kernels' parameters are four pointers and nine 64-bit integers");

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

/// The CUDA C++ of the quantization kernels (kernels/quantize.cu as embedded at build time).
[[nodiscard]] std::string_view quantize_source();

/// The options that make quantize_source() the program for `element` (bf16, f16 or f32) and `fp8`
/// (e4m3 or e5m2): its macros and the parameter header; `arch` left empty. InvalidArgument for
/// other types.
[[nodiscard]] core::ProgramOptions quantize_options(DataType element, DataType fp8);

/// That program for the core kernel loader (device_kernel), made once per process.
[[nodiscard]] const DeviceProgram& quantize_program(DataType element, DataType fp8);

/// The program compiled to a cubin for `arch` ("sm_90"); needs NVRTC, not a device. CompileError
/// when it does not compile.
[[nodiscard]] core::ObjectCode compile_quantize_kernels(DataType element, DataType fp8, const std::string& arch);

}  // namespace gpumath::detail
