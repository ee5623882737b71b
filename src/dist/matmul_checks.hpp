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

/// NotSupported unless NCCL can move a D of fp8 `dtype`: NCCL 2.24 or later (`nccl_version`),
/// checked first, then every local rank's device 9.0 or later (`lookups.compute_major`, the one
/// device query, made only for a NCCL that has the types).
void check_fp8_collective(DataType dtype, int nccl_version, std::span<const LocalRank> ranks,
                          const CollectiveLookups& lookups, const char* api);

/// The rules of a chunked pipeline's products (`chunks` above 1; nothing otherwise), for local rank
/// `index`'s operands `a`, `b`, `d` and the arguments `args` its products run with: no amax_d (each
/// chunk's product would write the max |D| of its own rows), per-tensor FP8 scales only (the finer
/// modes' tensors cover all of M), and each chunk's product valid as gpumath::Matmul checks it (the
/// second chunk's and the last's: the second starts least aligned, since every later start is a
/// multiple of its offset, so an FP8 operand misaligned by a chunk is found there). Host only:
/// InvalidArgument / NotSupported naming the rank's operand and the chunk.
void check_chunked_products(const TensorView& a, const TensorView& b, const TensorView& d, const MatmulArgs& args,
                            const MatmulOptions& options, const ParallelShape& shape, int chunks, std::size_t index,
                            const char* api);

/// InvalidArgument when `options.memory_resource` is a device pool of a device other than a rank's.
void check_memory_resource(const MatmulOptions& options, std::span<const LocalRank> ranks, const char* api);

/// The options of rank `rank`'s product: row-parallel ranks other than 0 drop the bias epilog
/// (rank 0's product adds it, once).
MatmulOptions rank_options(const MatmulOptions& options, const dist::ParallelOptions& parallel, int rank);

}  // namespace gpumath::detail
