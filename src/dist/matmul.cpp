// SPDX-License-Identifier: Apache-2.0
#include <gpumath/dist/matmul.hpp>

#include <mutex>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/core/event.hpp>
#include <gpumath/error.hpp>

#include "detail/status.hpp"
#include "dist/collective_checks.hpp"
#include "dist/matmul_checks.hpp"

namespace gpumath::detail {

/// One local rank's plans and, with chunks, its pipeline's stream and events.
struct RankProducts {
    int rank = 0;
    int device = 0;
    std::optional<gpumath::Matmul> full;  // the product of `chunk_rows` rows (all of M unchunked)
    std::optional<gpumath::Matmul> last;  // the last chunk's, when it has fewer rows
    std::optional<core::Stream> comm;     // the pipeline's all-reduce stream
    std::optional<core::Event> produced;  // a chunk's product is in D
    std::optional<core::Event> reduced;   // every chunk's all-reduce is done
};

struct ParallelMatmulState {
    dist::Communicator* comm = nullptr;
    int size = 0;
    TensorLayout a;
    TensorLayout b;
    TensorLayout a_chunk;  // a's layout for `shape.chunk_rows` rows
    TensorLayout a_last;   // and for the last chunk's rows
    MatmulOptions options;
    dist::ParallelOptions parallel;
    ParallelShape shape;
    std::vector<RankProducts> ranks;
    TensorLayout result;
    std::mutex mutex;  // execute and plan: the pipeline's streams and events serve one call at a time
    bool planned = false;
};

namespace {

TensorLayout rows_of(const TensorLayout& a, std::int64_t rows) {
    const std::int64_t shape[] = {rows, a.shape(1)};
    const std::int64_t strides[] = {a.stride(0), a.stride(1)};
    return {a.dtype(), shape, strides};
}

// Dense in either order (row- or column-major): the collective sends it as one run of elements.
bool dense(const TensorLayout& v) { return v.size() == 0 || v.span_elements() == v.size(); }

// A 1-D view of a dense view's elements in memory order, optionally `count` of them from `first`.
TensorView flat(const TensorView& v, std::int64_t first = 0, std::int64_t count = -1) {
    const std::int64_t n = count < 0 ? v.size() : count;
    const auto* base = static_cast<const std::byte*>(v.data());
    const std::int64_t shape[] = {n};
    return {n == 0 ? nullptr : base + first * std::int64_t(size_of(v.dtype())), v.dtype(),
            std::span<const std::int64_t>(shape)};
}

// A view of rows [first, first + rows) of a matrix view (any strides).
TensorView rows_view(const TensorView& v, std::int64_t first, std::int64_t rows) {
    const auto* base = static_cast<const std::byte*>(v.data());
    const std::int64_t shape[] = {rows, v.shape(1)};
    const std::int64_t strides[] = {v.stride(0), v.stride(1)};
    return {base + first * v.stride(0) * std::int64_t(size_of(v.dtype())), v.dtype(), shape, strides};
}

void plan_rank(ParallelMatmulState& s, RankProducts& r) {
    const DeviceGuard guard(r.device);
    const MatmulOptions options = rank_options(s.options, s.parallel, r.rank);
    if (!r.full) r.full.emplace(s.parallel.chunks > 1 ? s.a_chunk : s.a, s.b, options);
    r.full->plan();
    if (s.parallel.chunks > 1) {
        if (s.shape.last_rows != s.shape.chunk_rows && !r.last) {
            r.last.emplace(s.a_last, s.b, options);
            r.last->plan();
        }
        const core::Device device(r.device);
        if (!r.comm) r.comm.emplace(device.create_stream({.non_blocking = true}));
        if (!r.produced) r.produced.emplace(device.create_event());
        if (!r.reduced) r.reduced.emplace(device.create_event());
    }
}

void plan_locked(ParallelMatmulState& s) {
    if (s.planned) return;
    for (RankProducts& r : s.ranks) plan_rank(s, r);
    s.planned = true;
}

// Row-parallel ranks other than 0 do not add C or the bias: rank 0's product adds them once.
MatmulArgs rank_args(const ParallelMatmulState& s, const RankProducts& r, const MatmulArgs& args) {
    if (s.parallel.parallelism != dist::Parallelism::row || r.rank == 0) return args;
    MatmulArgs out = args;
    out.c.reset();
    out.beta = 0.0;
    out.bias.reset();
    return out;
}

void check_operands(const ParallelMatmulState& s, std::span<const dist::RankOperands> ranks, const char* api) {
    if (ranks.size() != s.ranks.size()) {
        throw_invalid(fmt::format("{} RankOperands given; this process holds {} local rank{} of the communicator: "
                                  "give one per local rank, in local rank order",
                                  ranks.size(), s.ranks.size(), s.ranks.size() == 1 ? "" : "s"),
                      api);
    }
    const CollectiveLookups& lookups = cuda_lookups();
    const std::int64_t d_shape[] = {s.shape.m, s.shape.n};
    for (std::size_t i = 0; i < ranks.size(); ++i) {
        const dist::RankOperands& op = ranks[i];
        if (op.a.layout() != s.a) {
            throw_invalid(fmt::format("ranks[{}].a is {}; this product was made for {}", i, to_string(op.a.layout()),
                                      to_string(s.a)),
                          api);
        }
        if (op.b.layout() != s.b) {
            throw_invalid(fmt::format("ranks[{}].b is {}; this product was made for {}", i, to_string(op.b.layout()),
                                      to_string(s.b)),
                          api);
        }
        if (op.d.rank() != 2 || op.d.shape(0) != d_shape[0] || op.d.shape(1) != d_shape[1] ||
            op.d.dtype() != s.result.dtype() || !dense(op.d)) {
            throw_invalid(fmt::format("ranks[{}].d is {}; it must be a dense (row- or column-major) {} matrix of shape "
                                      "({}, {})",
                                      i, to_string(op.d.layout()), to_string(s.result.dtype()), d_shape[0], d_shape[1]),
                          api);
        }
        if (s.parallel.chunks > 1) {
            if (!op.d.is_contiguous()) {
                throw_invalid(fmt::format("ranks[{}].d is {}: a chunked pipeline slices D by rows, so D must be "
                                          "row-major",
                                          i, to_string(op.d.layout())),
                              api);
            }
            const bool row_bias = op.args.bias && op.args.bias->rank() == 2 && op.args.bias->shape(0) != 1;
            if (op.args.c || op.args.bias_grad || op.args.aux || row_bias) {
                throw_invalid(fmt::format("ranks[{}].args: a chunked pipeline takes no C, aux or bias gradient, and a "
                                          "bias per column only ((N,) or (1, N)); use chunks = 1",
                                          i),
                              api);
            }
        }
        const bool collective = s.parallel.collective != dist::OutputCollective::none;
        if (collective && !dense(op.out)) {
            throw_invalid(fmt::format("ranks[{}].out is {}; the collective writes a dense run of elements", i,
                                      to_string(op.out.layout())),
                          api);
        }
        if (collective && op.out.dtype() != op.d.dtype()) {
            throw_invalid(fmt::format("ranks[{}].out is {} but d is {}: the collective does not convert", i,
                                      to_string(op.out.dtype()), to_string(op.d.dtype())),
                          api);
        }
        const int device = s.ranks[i].device;
        check_memory_on(op.a, fmt::format("ranks[{}].a", i).c_str(), device, lookups, api);
        check_memory_on(op.b, fmt::format("ranks[{}].b", i).c_str(), device, lookups, api);
        check_memory_on(op.d, fmt::format("ranks[{}].d", i).c_str(), device, lookups, api);
        check_stream_on(op.stream, fmt::format("ranks[{}].stream", i).c_str(), device, lookups, api);
    }
}

}  // namespace
}  // namespace gpumath::detail

namespace gpumath::dist {

using gpumath::detail::ParallelMatmulState;

Matmul::Matmul(Communicator& comm, const TensorLayout& a, const TensorLayout& b, const MatmulOptions& options,
               const ParallelOptions& parallel) {
    constexpr const char* api = "dist::Matmul";
    if (comm.local_size() == 0) gpumath::detail::throw_invalid("the communicator is empty (moved from)", api);
    auto s = std::make_unique<ParallelMatmulState>();
    s->shape = gpumath::detail::check_parallel(a, b, options, parallel, comm.size(), api);
    s->comm = &comm;
    s->size = comm.size();
    s->a = a;
    s->b = b;
    s->a_chunk = gpumath::detail::rows_of(a, s->shape.chunk_rows);
    s->a_last = gpumath::detail::rows_of(a, s->shape.last_rows);
    s->options = options;
    s->parallel = parallel;
    for (int i = 0; i < comm.local_size(); ++i) {
        s->ranks.emplace_back();
        s->ranks.back().rank = comm.rank(i);
        s->ranks.back().device = comm.device(i);
    }
    // Validates the product itself (dtypes, epilog, options) as gpumath::Matmul does, on the CPU.
    const gpumath::Matmul probe(a, b, gpumath::detail::rank_options(options, parallel, 0));
    const std::int64_t shape[] = {s->shape.m, s->shape.n};
    s->result = TensorLayout(probe.result_layout().dtype(), shape);
    state_ = std::move(s);
}

Matmul::~Matmul() = default;
Matmul::Matmul(Matmul&&) noexcept = default;
Matmul& Matmul::operator=(Matmul&&) noexcept = default;

ParallelMatmulState& Matmul::state(const char* api) const {
    if (!state_) [[unlikely]]
        gpumath::detail::throw_moved_from("dist::Matmul", api);
    return *state_;
}

void Matmul::plan() {
    ParallelMatmulState& s = state("dist::Matmul::plan");
    const std::lock_guard lock(s.mutex);
    gpumath::detail::plan_locked(s);
}

std::vector<MatmulOutputs> Matmul::execute(std::span<const RankOperands> ranks) {
    constexpr const char* api = "dist::Matmul::execute";
    ParallelMatmulState& s = state(api);
    gpumath::detail::check_operands(s, ranks, api);
    const std::size_t n = ranks.size();
    std::vector<TensorView> d(n);
    std::vector<TensorView> out(n);
    std::vector<core::StreamRef> streams(n);
    for (std::size_t i = 0; i < n; ++i) {
        d[i] = gpumath::detail::flat(ranks[i].d);
        out[i] = gpumath::detail::flat(ranks[i].out);
        streams[i] = ranks[i].stream;
    }
    const std::lock_guard lock(s.mutex);
    gpumath::detail::plan_locked(s);
    std::vector<MatmulOutputs> outputs(n);
    Communicator& comm = *s.comm;
    if (s.parallel.chunks == 1) {
        // Check the collective's operands before the first product is enqueued: a dry run of the
        // checks Communicator runs again.
        if (s.parallel.collective != OutputCollective::none) {
            std::vector<gpumath::detail::LocalRank> local;
            for (const auto& r : s.ranks) local.push_back({r.rank, r.device});
            const auto kind =
                s.parallel.collective == OutputCollective::all_gather   ? gpumath::detail::Collective::all_gather
                : s.parallel.collective == OutputCollective::all_reduce ? gpumath::detail::Collective::all_reduce
                                                                        : gpumath::detail::Collective::reduce_scatter;
            (void)gpumath::detail::check_collective({kind, d, out, streams, ReduceOp::sum, 0}, s.size, local,
                                                    nccl_version(), gpumath::detail::cuda_lookups(), api);
        }
        for (std::size_t i = 0; i < n; ++i) {
            gpumath::detail::RankProducts& r = s.ranks[i];
            const gpumath::detail::DeviceGuard guard(r.device);
            outputs[i] = r.full->execute(ranks[i].a, ranks[i].b, ranks[i].d,
                                         gpumath::detail::rank_args(s, r, ranks[i].args), ranks[i].stream);
        }
        switch (s.parallel.collective) {
            case OutputCollective::none:
                break;
            case OutputCollective::all_gather:
                comm.all_gather(d, out, streams);
                break;
            case OutputCollective::all_reduce:
                comm.all_reduce(d, out, ReduceOp::sum, streams);
                break;
            case OutputCollective::reduce_scatter:
                comm.reduce_scatter(d, out, ReduceOp::sum, streams);
                break;
        }
        return outputs;
    }
    // The pipeline: chunk c's product on the rank's stream, then its collective on the rank's
    // comm stream, which waits for that product only; the rank's stream waits for every
    // collective at the end. A reduce_scatter scatters each chunk: its output is chunk-major.
    const bool scatter = s.parallel.collective == OutputCollective::reduce_scatter;
    {
        std::vector<gpumath::detail::LocalRank> local;
        for (const auto& r : s.ranks) local.push_back({r.rank, r.device});
        std::vector<core::StreamRef> comm_streams(n);
        for (std::size_t i = 0; i < n; ++i) comm_streams[i] = *s.ranks[i].comm;
        (void)gpumath::detail::check_collective(
            {gpumath::detail::Collective::all_reduce, d, out, comm_streams, ReduceOp::sum, 0}, s.size, local,
            nccl_version(), gpumath::detail::cuda_lookups(), api);
    }
    const std::int64_t row_elements = s.shape.n;
    std::vector<TensorView> d_chunk(n);
    std::vector<TensorView> out_chunk(n);
    std::vector<core::StreamRef> comm_streams(n);
    for (std::size_t i = 0; i < n; ++i) comm_streams[i] = *s.ranks[i].comm;
    for (int c = 0; c < s.parallel.chunks; ++c) {
        const std::int64_t first = std::int64_t(c) * s.shape.chunk_rows;
        const bool last = c == s.parallel.chunks - 1;
        const std::int64_t rows = last ? s.shape.last_rows : s.shape.chunk_rows;
        for (std::size_t i = 0; i < n; ++i) {
            gpumath::detail::RankProducts& r = s.ranks[i];
            const gpumath::detail::DeviceGuard guard(r.device);
            gpumath::Matmul& plan = last && r.last ? *r.last : *r.full;
            (void)plan.execute(gpumath::detail::rows_view(ranks[i].a, first, rows), ranks[i].b,
                               gpumath::detail::rows_view(ranks[i].d, first, rows),
                               gpumath::detail::rank_args(s, r, ranks[i].args), ranks[i].stream);
            ranks[i].stream.record(*r.produced);
            r.comm->wait(*r.produced);
            d_chunk[i] = gpumath::detail::flat(ranks[i].d, first * row_elements, rows * row_elements);
            out_chunk[i] = scatter ? gpumath::detail::flat(ranks[i].out, first * row_elements / s.size,
                                                           rows * row_elements / s.size)
                                   : gpumath::detail::flat(ranks[i].out, first * row_elements, rows * row_elements);
        }
        if (scatter) comm.reduce_scatter(d_chunk, out_chunk, ReduceOp::sum, comm_streams);
        else comm.all_reduce(d_chunk, out_chunk, ReduceOp::sum, comm_streams);
    }
    for (std::size_t i = 0; i < n; ++i) {
        const gpumath::detail::RankProducts& r = s.ranks[i];
        const gpumath::detail::DeviceGuard guard(r.device);
        r.comm->record(*r.reduced);
        ranks[i].stream.wait(*r.reduced);
    }
    return outputs;
}

MatmulOutputs Matmul::execute(const RankOperands& rank) {
    std::vector<MatmulOutputs> outputs = execute(std::span<const RankOperands>(&rank, 1));
    return std::move(outputs.front());
}

const gpumath::Matmul& Matmul::local(int local) const {
    constexpr const char* api = "dist::Matmul::local";
    ParallelMatmulState& s = state(api);
    if (local < 0 || local >= int(s.ranks.size())) {
        gpumath::detail::throw_invalid(
            fmt::format("local rank {} is not held here (0 to {})", local, int(s.ranks.size()) - 1), api);
    }
    const std::lock_guard lock(s.mutex);
    gpumath::detail::plan_locked(s);
    return *s.ranks[std::size_t(local)].full;
}

const ParallelOptions& Matmul::parallel() const noexcept {
    static const ParallelOptions empty{};
    return state_ ? state_->parallel : empty;
}

const TensorLayout& Matmul::result_layout() const noexcept {
    static const TensorLayout empty{};
    return state_ ? state_->result : empty;
}

}  // namespace gpumath::dist
