// SPDX-License-Identifier: Apache-2.0
#include "dist/matmul_checks.hpp"

#include <string>

#include <fmt/format.h>

#include <gpumath/core/memory.hpp>

#include "detail/enum_check.hpp"
#include "detail/status.hpp"
#include "matmul/call.hpp"
#include "matmul/checks.hpp"
#include "matmul/problem.hpp"
#include "matmul/shapes.hpp"

namespace gpumath::detail {
namespace {

// `e`'s message with the rank and the chunk after its api prefix.
std::string chunk_context(const Error& e, std::size_t index, std::int64_t first, std::int64_t rows) {
    const std::string what = e.what();
    const std::string prefix = e.api().empty() ? std::string() : e.api() + ": ";
    const std::string where = fmt::format("ranks[{}], the chunk of rows {} to {}: ", index, first, first + rows - 1);
    if (!prefix.empty() && what.compare(0, prefix.size(), prefix) == 0)
        return prefix + where + what.substr(prefix.size());
    return where + what;
}

}  // namespace

ParallelShape check_parallel(const TensorLayout& a, const TensorLayout& b, bool with_c, const MatmulOptions& options,
                             const dist::ParallelOptions& parallel, int size, const char* api) {
    using dist::OutputCollective;
    using dist::Parallelism;
    check_enum(parallel.parallelism, dist::parallelism_count, "a Parallelism", "parallel.parallelism", api);
    check_enum(parallel.collective, dist::output_collective_count, "an OutputCollective", "parallel.collective", api);
    if (size < 1) throw_invalid(fmt::format("comm: the communicator has {} ranks (moved from?)", size), api);
    const bool row = parallel.parallelism == Parallelism::row;
    const bool fits =
        parallel.collective == OutputCollective::none || (row ? parallel.collective != OutputCollective::all_gather
                                                              : parallel.collective == OutputCollective::all_gather);
    if (!fits) {
        throw_invalid(fmt::format("parallel.collective: {} does not join {}-parallel products; {}-parallel takes {}",
                                  dist::to_string(parallel.collective), dist::to_string(parallel.parallelism),
                                  dist::to_string(parallel.parallelism),
                                  row ? "none, all_reduce or reduce_scatter (the ranks' D are partial sums)"
                                      : "none or all_gather (the ranks' D are slices of D's columns)"),
                      api);
    }
    if (a.rank() != 2 || b.rank() != 2) {
        throw_invalid(fmt::format("a, b: a is {} and b is {}; a tensor-parallel product takes matrices (rank 2): a "
                                  "(M, K) and b (K, N) slices",
                                  to_string(a), to_string(b)),
                      api);
    }
    if (a.shape(1) != b.shape(0)) {
        throw_invalid(fmt::format("a, b: a is {} and b is {}; a's columns (K = {}) must equal b's rows ({})",
                                  to_string(a), to_string(b), a.shape(1), b.shape(0)),
                      api);
    }
    if (row) {
        const Epilog e = options.epilog;
        if (e != Epilog::none && e != Epilog::bias) {
            throw_not_supported(
                fmt::format("options.epilog: {} on a row-parallel product: each rank holds a partial sum, and the "
                            "epilog's nonlinear part applies to the whole sum, which only exists after the "
                            "reduction; use none or bias (added once, by rank 0), and apply the rest to the result",
                            to_string(e)),
                api);
        }
        if (options.epilog_function) {
            throw_not_supported(
                "options.epilog_function on a row-parallel product: the function applies to the "
                "whole sum, which only exists after the reduction; apply it to the result",
                api);
        }
    }
    ParallelShape shape{a.shape(0), b.shape(1), a.shape(1), a.shape(0), a.shape(0)};
    std::int64_t elements = 0;
    if (__builtin_mul_overflow(shape.m, shape.n, &elements)) {
        throw_invalid(fmt::format("d: {} x {} elements overflow a 64-bit count", shape.m, shape.n), api);
    }
    if (parallel.chunks < 1 || parallel.chunks > 64) {
        throw_invalid(fmt::format("parallel.chunks: {}; allowed: 1 to 64", parallel.chunks), api);
    }
    if (parallel.chunks > 1) {
        const bool reduces = parallel.collective == OutputCollective::all_reduce ||
                             parallel.collective == OutputCollective::reduce_scatter;
        if (!row || !reduces) {
            throw_invalid(fmt::format("parallel.chunks: {} chunks pipeline a row-parallel all_reduce or reduce_scatter "
                                      "only; this product is {}-parallel with {}",
                                      parallel.chunks, dist::to_string(parallel.parallelism),
                                      dist::to_string(parallel.collective)),
                          api);
        }
        if (with_c) {
            throw_invalid(fmt::format("parallel.chunks: {} chunks with a C operand; a chunked pipeline takes no C",
                                      parallel.chunks),
                          api);
        }
        if (parallel.chunks > shape.m) {
            throw_invalid(fmt::format("parallel.chunks: {} chunks of M = {} rows; at most one chunk per row",
                                      parallel.chunks, shape.m),
                          api);
        }
        shape.chunk_rows = (shape.m + parallel.chunks - 1) / parallel.chunks;
        shape.last_rows = shape.m - shape.chunk_rows * (parallel.chunks - 1);
        if (shape.last_rows <= 0) {
            // Rounding up left the last chunks empty (e.g. 5 rows in 4 chunks of 2).
            throw_invalid(fmt::format("parallel.chunks: M = {} rows do not split into {} chunks of {} rows; choose a "
                                      "chunk count that divides M or leaves a non-empty last chunk",
                                      shape.m, parallel.chunks, shape.chunk_rows),
                          api);
        }
        if (parallel.collective == OutputCollective::reduce_scatter &&
            (shape.m % parallel.chunks != 0 || (shape.chunk_rows * shape.n) % size != 0)) {
            throw_invalid(fmt::format("parallel.chunks: a chunked reduce_scatter scatters each chunk over the {} "
                                      "ranks, so the {} chunks must be equal ({} rows do not split evenly) and each "
                                      "chunk's elements ({} rows of {}) divisible by the rank count",
                                      size, parallel.chunks, shape.m, shape.chunk_rows, shape.n),
                          api);
        }
    }
    if (parallel.collective == OutputCollective::reduce_scatter && elements % size != 0) {
        throw_invalid(fmt::format("parallel.collective: reduce_scatter of D ({} x {} = {} elements) over {} ranks "
                                  "needs an element count divisible by the rank count",
                                  shape.m, shape.n, elements, size),
                      api);
    }
    return shape;
}

void check_fp8_collective(DataType dtype, int nccl_version, std::span<const LocalRank> ranks,
                          const CollectiveLookups& lookups, const char* api) {
    // NCCL's version needs no device: it is checked before any device is asked.
    if (nccl_version < nccl_fp8_version) {
        throw_not_supported(fmt::format("options.result_type: a collective of {} data needs NCCL 2.24 or later; the "
                                        "NCCL loaded is {}",
                                        to_string(dtype), nccl_version),
                            api);
    }
    for (const LocalRank& r : ranks) {
        const int major = lookups.compute_major(r.device);
        if (major < nccl_fp8_compute_major) {
            throw_not_supported(fmt::format("options.result_type: a collective of {} data needs compute capability 9.0 "
                                            "or later (NCCL's fp8), and rank {} runs on device {} of {}.x",
                                            to_string(dtype), r.rank, r.device, major),
                                api);
        }
    }
}

void check_chunked_products(const TensorView& a, const TensorView& b, const TensorView& d, const MatmulArgs& args,
                            const MatmulOptions& options, const ParallelShape& shape, int chunks, std::size_t index,
                            const char* api) {
    if (chunks <= 1) return;
    if (args.scales.amax_d != nullptr) {
        throw_invalid(fmt::format("ranks[{}].args.scales.amax_d: a chunked pipeline runs one product per chunk of "
                                  "rows, and each would write the max |D| of its own rows over the previous one's; "
                                  "use chunks = 1 for amax_d",
                                  index),
                      api);
    }
    const MatmulScales& s = args.scales;
    if (s.a_mode != ScaleMode::tensor || s.b_mode != ScaleMode::tensor) {
        throw_not_supported(fmt::format("ranks[{}].args.scales.a_mode: {} x {} scaling in a chunked pipeline: the "
                                        "scale tensors cover all {} rows of a, and each chunk's product has {} rows; "
                                        "use chunks = 1 or per-tensor scales",
                                        index, to_string(s.a_mode), to_string(s.b_mode), shape.m, shape.chunk_rows),
                            api);
    }
    const std::int64_t last_first = shape.chunk_rows * (chunks - 1);
    for (const std::int64_t first : {shape.chunk_rows, last_first}) {
        const std::int64_t rows = first == last_first ? shape.last_rows : shape.chunk_rows;
        const TensorView chunk_a = rows_of(a, first, rows);
        const TensorView chunk_d = rows_of(d, first, rows);
        try {
            check_call(chunk_a, b, &chunk_d, args, options, api);
            (void)analyze(MatmulSignature::of(call_of(chunk_a, b, &chunk_d, args)), options, api);
        } catch (const InvalidArgument& e) {
            throw InvalidArgument(chunk_context(e, index, first, rows), e.api());
        } catch (const NotSupported& e) {
            throw NotSupported(chunk_context(e, index, first, rows), e.api(), e.status());
        }
        if (first == last_first) break;
    }
}

void check_memory_resource(const MatmulOptions& options, std::span<const LocalRank> ranks, const char* api) {
    const auto* pool = dynamic_cast<const core::DeviceMemoryResource*>(options.memory_resource.get());
    if (pool == nullptr) return;
    for (const LocalRank& r : ranks) {
        if (r.device != pool->device()) {
            throw_invalid(fmt::format("options.memory_resource allocates on device {}, but rank {} runs on device {}: "
                                      "leave it empty (each rank then uses its device's pool)",
                                      pool->device(), r.rank, r.device),
                          api);
        }
    }
}

MatmulOptions rank_options(const MatmulOptions& options, const dist::ParallelOptions& parallel, int rank) {
    MatmulOptions out = options;
    if (parallel.parallelism == dist::Parallelism::row && rank != 0 && out.epilog == Epilog::bias) {
        out.epilog = Epilog::none;
    }
    return out;
}

}  // namespace gpumath::detail
