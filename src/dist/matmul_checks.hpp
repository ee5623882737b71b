// SPDX-License-Identifier: Apache-2.0
// Private: the rules of a tensor-parallel product that need no GPU (tested on the CPU).
#pragma once

#include <span>

#include <gpumath/dist/matmul.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/matmul/options.hpp>

#include "dist/collective_checks.hpp"

namespace gpumath::detail {

/// The shape of one rank's product and its chunks.
struct ParallelShape {
    std::int64_t m = 0;
    std::int64_t n = 0;
    std::int64_t k = 0;
    std::int64_t chunk_rows = 0;  // rows of every chunk but the last (m when not chunked)
    std::int64_t last_rows = 0;   // rows of the last chunk
};

/// InvalidArgument / NotSupported unless a product of `a` and `b` (this rank's slices) can run
/// with `options` split and joined as `parallel` on a communicator of `size` ranks. `api` starts
/// the messages.
ParallelShape check_parallel(const TensorLayout& a, const TensorLayout& b, bool with_c, const MatmulOptions& options,
                             const dist::ParallelOptions& parallel, int size, const char* api);

/// NotSupported unless NCCL can move a D of fp8 `dtype`: NCCL 2.24 or later (`nccl_version`), and
/// every local rank's device (compute capability major `majors[i]`) 9.0 or later.
void check_fp8_collective(DataType dtype, int nccl_version, std::span<const LocalRank> ranks,
                          std::span<const int> majors, const char* api);

/// InvalidArgument when `options.memory_resource` is a device pool of a device other than a rank's.
void check_memory_resource(const MatmulOptions& options, std::span<const LocalRank> ranks, const char* api);

/// The options of rank `rank`'s product: row-parallel ranks other than 0 drop the bias epilog
/// (rank 0's product adds it, once).
MatmulOptions rank_options(const MatmulOptions& options, const dist::ParallelOptions& parallel, int rank);

}  // namespace gpumath::detail
