// SPDX-License-Identifier: Apache-2.0
/// @file
/// Tensor-parallel matrix products: each rank's product on cuBLASLt (gpumath::Matmul), the
/// collective that joins them on NCCL (dist::Communicator).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include <gpumath/core/stream.hpp>
#include <gpumath/dist/communicator.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/matmul/matmul.hpp>
#include <gpumath/matmul/options.hpp>

namespace gpumath::detail {
struct ParallelMatmulState;
}  // namespace gpumath::detail

namespace gpumath::dist {

/// How a linear layer `D = A @ B` is split over the ranks (Megatron-LM's tensor parallelism).
enum class Parallelism : std::uint8_t {
    /// Each rank holds A whole (M, K) and a slice of B's columns (K, N / size): its D is a slice of
    /// D's columns, exact (any epilog; each rank passes its slice of a bias).
    column,
    /// Each rank holds a slice of A's columns (M, K / size) and of B's rows (K / size, N): its D is
    /// a partial sum (M, N) that a reduction completes.
    row,
};

/// Number of Parallelism enumerators.
inline constexpr int parallelism_count = 2;

/// What runs on the ranks' D after their products.
enum class OutputCollective : std::uint8_t {
    /// Nothing: each rank keeps its D (a column slice, or a partial sum).
    none,
    /// Column-parallel: every rank gets every rank's D, one after the other (`Communicator::all_gather`).
    all_gather,
    /// Row-parallel: every rank gets the sum of the partial D.
    all_reduce,
    /// Row-parallel: rank r gets block r of the sum (of `size()` equal blocks of D's elements in
    /// memory order: rows of a row-major D, columns of a column-major one). With `chunks` c above
    /// 1, each chunk of M / c rows is scattered: rank r gets block r of every chunk, chunk after
    /// chunk.
    reduce_scatter,
};

/// Number of OutputCollective enumerators.
inline constexpr int output_collective_count = 4;

/// "column", "row" ("unknown" for a value that is neither).
[[nodiscard]] constexpr std::string_view to_string(Parallelism p) noexcept {
    switch (p) {
        case Parallelism::column:
            return "column";
        case Parallelism::row:
            return "row";
    }
    return "unknown";
}

/// "none", "all_gather", "all_reduce", "reduce_scatter" ("unknown" for other values).
[[nodiscard]] constexpr std::string_view to_string(OutputCollective c) noexcept {
    switch (c) {
        case OutputCollective::none:
            return "none";
        case OutputCollective::all_gather:
            return "all_gather";
        case OutputCollective::all_reduce:
            return "all_reduce";
        case OutputCollective::reduce_scatter:
            return "reduce_scatter";
    }
    return "unknown";
}

/// How a dist::Matmul splits and joins the product. Designated initializers:
/// `{.parallelism = Parallelism::row, .collective = OutputCollective::all_reduce, .chunks = 4}`.
struct ParallelOptions {
    /// Column- or row-parallel.
    Parallelism parallelism = Parallelism::column;
    /// The collective after the products (column: none or all_gather; row: none, all_reduce or
    /// reduce_scatter).
    OutputCollective collective = OutputCollective::none;
    /// Row-parallel with all_reduce or reduce_scatter and a row-major D only: the product runs in
    /// `chunks` slices of M, and slice c's collective (on a stream of its own) overlaps slice
    /// c + 1's product. 1 (the default) runs one product, then one collective. 1 to 64, at most
    /// M; reduce_scatter needs equal chunks whose elements divide evenly over the ranks.
    int chunks = 1;
};

/// One local rank's operands for `dist::Matmul::execute`.
struct RankOperands {
    /// This rank's A: (M, K) whole for column-parallel, (M, K / size) for row-parallel.
    TensorView a{};
    /// This rank's B: (K, N / size) for column-parallel, (K / size, N) for row-parallel.
    TensorView b{};
    /// This rank's product, dense (row- or column-major): (M, N / size), or the partial (M, N).
    TensorView d{};
    /// The collective's result, on this rank's device: for all_reduce laid out exactly as `d` (and
    /// may be `d` itself); for all_gather dense with `size()` times D's elements (rank 0's D
    /// first), for reduce_scatter dense with D's element count over `size()` (both in memory
    /// order, see OutputCollective). Unused (leave empty) without a collective.
    TensorView out{};
    /// As for gpumath::Matmul::execute (`c` only for a product constructed with a C layout).
    /// Row-parallel: only rank 0's product adds C (beta) and the bias, which the sum then holds
    /// once; the other ranks' c, beta and bias are not read.
    MatmulArgs args{};
    /// The stream of this rank's work; it must belong to the rank's device (or be the default stream).
    core::StreamRef stream{};
};

/// A tensor-parallel product over the ranks this process holds in a Communicator: every local
/// rank runs the product of its slices with a gpumath::Matmul planned on its device, then the
/// collective joins the results on NCCL. All local ranks see the same layouts (and so, in a
/// communicator spread over processes, should every rank). Move-only. It shares the
/// communicator's NCCL state, so the Communicator object may be moved or destroyed first; the last
/// owner's destructor then finalizes NCCL, which waits for queued collectives and for CUDA graphs
/// that captured them (see Communicator's destructor).
///
/// The constructor validates (InvalidArgument / NotSupported, before any GPU work); `plan()`
/// plans every local rank's product on its device (implicitly on the first `execute`), and with
/// `chunks` above 1 creates one stream and two events per local rank for the pipeline. `execute`
/// enqueues and returns; it may be captured into a CUDA graph once planned. Executions of one
/// object are serialized (a chunked pipeline reuses its streams and events).
class Matmul {
public:
    /// The product of operands laid out as `a` and `b` on each local rank (this rank's slices),
    /// with `options` as for gpumath::Matmul and the split and collective of `parallel`.
    /// InvalidArgument for a collective that does not fit the parallelism, enum values outside
    /// their enumerators, `chunks` out of range or with a D it cannot slice, a moved-from
    /// communicator, an `options.memory_resource` that allocates on one device while the ranks
    /// run on several; NotSupported for a row-parallel epilog other than none or bias (the
    /// nonlinear part applies to the sum, which only exists after the reduction) or a user epilog
    /// function.
    Matmul(const Communicator& comm, const TensorLayout& a, const TensorLayout& b, const MatmulOptions& options = {},
           const ParallelOptions& parallel = {});
    /// The same with a C operand laid out like `c` (this rank's (M, N / size) slice for
    /// column-parallel; the whole (M, N) for row-parallel, where rank 0's product adds it once,
    /// such as a residual). Not with `chunks` above 1.
    Matmul(const Communicator& comm, const TensorLayout& a, const TensorLayout& b, const TensorLayout& c,
           const MatmulOptions& options = {}, const ParallelOptions& parallel = {});
    ~Matmul();
    /// Moves the plans; the moved-from Matmul is empty: its calls throw InvalidArgument, its
    /// accessors report defaults.
    Matmul(Matmul&&) noexcept;
    /// Releases this object's plans and takes the other's; the moved-from Matmul is empty.
    Matmul& operator=(Matmul&&) noexcept;
    Matmul(const Matmul&) = delete;
    Matmul& operator=(const Matmul&) = delete;

    /// Plans every local rank's product on its device (idempotent). Throws as gpumath::Matmul::plan.
    void plan();
    /// Enqueues every local rank's product and then the collective, one RankOperands per local
    /// rank in local rank order, and returns what each rank's product allocated (aux outputs and
    /// bias gradients the args did not provide). Before enqueuing anything (InvalidArgument): the
    /// layouts of a, b and d (as constructed; d dense, one layout on every local rank), `out` as
    /// the collective needs (and, with chunks, overlapping neither the inputs nor `d` unless it is
    /// `d`), where the memory of every operand lives, each stream's device, and each rank's args
    /// as gpumath::Matmul checks them (values, alignment, overlaps, the layouts of C, bias, aux and
    /// scales).
    std::vector<MatmulOutputs> execute(std::span<const RankOperands> ranks);
    /// `execute` with one local rank.
    MatmulOutputs execute(const RankOperands& rank);

    /// The local product of local rank `local` (its gpumath::Matmul, planned on its device; with
    /// chunks, the plan of one slice of M). InvalidArgument when moved from or `local` is out of range.
    [[nodiscard]] const gpumath::Matmul& local(int local = 0) const;
    /// The options given at construction (defaults when moved from).
    [[nodiscard]] const ParallelOptions& parallel() const noexcept;
    /// The layout of each rank's D (dense row-major (M, N / size) or (M, N) unless `options` ask
    /// for another; a default layout when moved from).
    [[nodiscard]] const TensorLayout& result_layout() const noexcept;

private:
    [[nodiscard]] gpumath::detail::ParallelMatmulState& state(const char* api) const;
    std::unique_ptr<gpumath::detail::ParallelMatmulState> state_;
};

}  // namespace gpumath::dist
