// SPDX-License-Identifier: Apache-2.0
// Shared by the FP8 scale-mode and quantization tests: dtype shorthands, every scale mode, and the
// block arithmetic of the scale layouts.
#pragma once

#include <cstdint>

#include <gpumath/matmul.hpp>

namespace gpumath::test::fp8 {

inline constexpr auto bf16 = DataType::bf16;
inline constexpr auto f16 = DataType::f16;
inline constexpr auto f32 = DataType::f32;
inline constexpr auto e4m3 = DataType::e4m3;
inline constexpr auto e5m2 = DataType::e5m2;

inline constexpr ScaleMode all_modes[] = {ScaleMode::tensor, ScaleMode::outer_vector, ScaleMode::block_1x128,
                                          ScaleMode::block_128x128};

/// Rows or columns of one scale block.
inline constexpr std::int64_t blk = 128;

/// `x / y` rounded up: the number of blocks of `y` covering `x`.
constexpr std::int64_t ceil_div(std::int64_t x, std::int64_t y) { return (x + y - 1) / y; }

}  // namespace gpumath::test::fp8
