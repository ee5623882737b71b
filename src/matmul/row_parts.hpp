// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: a large product whose epilog runs in gpumath's pass after cuBLASLt's
// product (SiLU, a bias per row of a row-major D) split into blocks of D's rows on two streams, so
// that each block's pass, bound by memory, runs beside the next block's product, bound by the tensor
// cores, instead of after the whole product. Only the last block's pass is left after the product.
#pragma once

#include <cstdint>

#include <gpumath/core/stream.hpp>
#include <gpumath/matmul/options.hpp>

#include "matmul/problem.hpp"

namespace gpumath::detail {

class MatmulPlan;

/// Blocks of rows a product is split into (on the caller's stream and one side stream, alternately).
inline constexpr std::int64_t row_part_count = 4;
/// The smallest D (bytes) split so: below it the pass over D reads and writes it through the L2
/// cache and costs a few microseconds after the product, less than what splitting costs.
inline constexpr std::int64_t row_parts_min_bytes = std::int64_t(64) << 20;
/// The least work a split product does per byte of D, in flops (2 K / the size of D's element):
/// below it (K under 2048 for a 16-bit D) the blocks gain nothing. Measured on an H200 with 128 MiB
/// of bf16 D, a bias per row in blocks cost 19 µs less than one pass after the product at K = 4096
/// and 7 µs more at K = 512; at K = 1024 and 2048 the differences (3 µs more, 3 µs less) are within
/// what two runs of one product differ by. SiLU + bias followed the same course.
inline constexpr std::int64_t row_parts_min_flops_per_byte = 2048;
static_assert(row_parts_min_flops_per_byte % 2 == 0, "compared as K >= row_parts_min_flops_per_byte / 2 * element");

/// Whether the call (a, d, args) of problem `P` runs in row parts: P has a pass and no user epilog
/// function (which sees each element's row), D is one rank-2 row-major product of at least
/// row_parts_min_bytes and row_parts_min_flops_per_byte, arranged as Dᵀ, whose rows split into
/// row_part_count blocks of a multiple of 16 rows, with no C (beta 0), no aux, no bias gradient, no
/// FP8 and no SM count target, and a bias, if any, of shape (N,), (1, N) or (M, 1).
[[nodiscard]] bool runs_in_row_parts(const MatmulProblem& P, const TensorView& a, const TensorView& d,
                                     const MatmulArgs& args) noexcept;

/// `plan`'s product on (a, b, d, args) (run_plan), or, where runs_in_row_parts says so, the same
/// call as row_part_count products, each with its pass, alternately on `stream` and a side stream
/// forked from it and joined back to it (capturable as enqueue_streams), each block planned through
/// the plan cache of matmul() (the heuristic's first algorithm) under `options`. Where cuBLASLt has
/// no algorithm for a block, the whole product runs. (A call in blocks has no outputs to return: no
/// aux, no bias gradient.)
MatmulOutputs run_whole_or_in_row_parts(MatmulPlan& plan, const TensorView& a, const TensorView& b, const TensorView& d,
                                        const MatmulArgs& args, const MatmulOptions& options, core::StreamRef stream,
                                        int device, const char* api);

}  // namespace gpumath::detail
