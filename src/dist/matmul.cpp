// SPDX-License-Identifier: Apache-2.0
#include <gpumath/dist/matmul.hpp>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/core/event.hpp>
#include <gpumath/error.hpp>

#include "detail/scope_exit.hpp"
#include "detail/status.hpp"
#include "dist/collective_checks.hpp"
#include "dist/communicator_state.hpp"
#include "dist/matmul_checks.hpp"
#include "matmul/call.hpp"
#include "matmul/checks.hpp"
#include "matmul/problem.hpp"
#include "matmul/shapes.hpp"

namespace gpumath::detail {

/// One local rank's plans and, with chunks, its pipeline's stream and events.
struct RankProducts {
    int rank = 0;
    int device = 0;
    std::optional<gpumath::Matmul> full;  // the product of `chunk_rows` rows (all of M unchunked)
    std::optional<gpumath::Matmul> last;  // the last chunk's, when it has fewer rows
    std::optional<core::Stream> comm;     // the pipeline's collective stream
    std::optional<core::Event> produced;  // a chunk's product is in D
    std::optional<core::Event> reduced;   // every chunk's collective is done
};

struct ParallelMatmulState {
    std::shared_ptr<CommunicatorState> comm;
    TensorLayout a;
    TensorLayout b;
    std::optional<TensorLayout> c;
    TensorLayout a_chunk;  // a's layout for `shape.chunk_rows` rows
    TensorLayout a_last;   // and for the last chunk's rows
    MatmulOptions options;
    dist::ParallelOptions parallel;
    ParallelShape shape;
    std::vector<RankProducts> ranks;
    TensorLayout result;
    std::mutex mutex;  // execute and plan: the pipeline's streams and events serve one call at a time
    bool planned = false;

    [[nodiscard]] int size() const noexcept { return comm->size; }
    [[nodiscard]] bool row() const noexcept { return parallel.parallelism == dist::Parallelism::row; }
    [[nodiscard]] bool chunked() const noexcept { return parallel.chunks > 1; }
    // Whether rank `rank`'s product reads C: every rank's of a column split, rank 0's of a row split.
    [[nodiscard]] bool reads_c(int rank) const noexcept { return c.has_value() && (!row() || rank == 0); }
};

namespace {

TensorLayout leading_rows(const TensorLayout& a, std::int64_t rows) {
    const std::int64_t shape[] = {rows, a.shape(1)};
    const std::int64_t strides[] = {a.stride(0), a.stride(1)};
    return {a.dtype(), shape, strides};
}

// Dense in either order (row- or column-major): the collective sends it as one run of elements.
bool dense(const TensorLayout& v) { return v.size() == 0 || v.span_elements() == v.size(); }

// A 1-D view of a dense view's elements in memory order, `count` of them from `first` (all by default).
TensorView flat(const TensorView& v, std::int64_t first = 0, std::int64_t count = -1) {
    const std::int64_t n = count < 0 ? v.size() : count;
    const auto* base = static_cast<const std::byte*>(v.data());
    const std::int64_t shape[] = {n};
    return {n == 0 ? nullptr : base + first * std::int64_t(size_of(v.dtype())), v.dtype(),
            std::span<const std::int64_t>(shape)};
}

// A view of rows [first, first + rows) of a matrix view (any strides).
bool overlap(const TensorView& x, const TensorView& y) { return meet(bytes_of(x), bytes_of(y)); }

Collective collective_of(dist::OutputCollective c) {
    switch (c) {
        case dist::OutputCollective::all_gather:
            return Collective::all_gather;
        case dist::OutputCollective::reduce_scatter:
            return Collective::reduce_scatter;
        default:
            return Collective::all_reduce;
    }
}

MatmulOptions options_of(const ParallelMatmulState& s, int rank) { return rank_options(s.options, s.parallel, rank); }

gpumath::Matmul make_plan(const ParallelMatmulState& s, const TensorLayout& a, int rank) {
    if (s.reads_c(rank)) return gpumath::Matmul(a, s.b, *s.c, options_of(s, rank));
    return gpumath::Matmul(a, s.b, options_of(s, rank));
}

void plan_rank(ParallelMatmulState& s, RankProducts& r) {
    const DeviceGuard guard(r.device);
    if (!r.full) r.full.emplace(make_plan(s, s.chunked() ? s.a_chunk : s.a, r.rank));
    r.full->plan();
    if (!s.chunked()) return;
    if (s.shape.last_rows != s.shape.chunk_rows) {
        if (!r.last) r.last.emplace(make_plan(s, s.a_last, r.rank));
        r.last->plan();
    }
    const core::Device device(r.device);
    if (!r.comm) r.comm.emplace(device.create_stream({.non_blocking = true}));
    if (!r.produced) r.produced.emplace(device.create_event());
    if (!r.reduced) r.reduced.emplace(device.create_event());
}

void plan_locked(ParallelMatmulState& s) {
    if (s.planned) return;
    for (RankProducts& r : s.ranks) plan_rank(s, r);
    s.planned = true;
}

// Row-parallel ranks other than 0 do not add C or the bias: rank 0's product adds them once.
MatmulArgs rank_args(const ParallelMatmulState& s, const RankProducts& r, const MatmulArgs& args) {
    if (!s.row() || r.rank == 0) return args;
    MatmulArgs out = args;
    out.c.reset();
    out.beta = 0.0;
    out.bias.reset();
    return out;
}

// Every check of one rank's operands that needs no other rank and no CUDA call.
void check_rank(const ParallelMatmulState& s, const dist::RankOperands& op, std::size_t i, const char* api) {
    const RankProducts& r = s.ranks[i];
    if (op.a.layout() != s.a) {
        throw_invalid(
            fmt::format("ranks[{}].a is {}; this product was made for {}", i, to_string(op.a.layout()), to_string(s.a)),
            api);
    }
    if (op.b.layout() != s.b) {
        throw_invalid(
            fmt::format("ranks[{}].b is {}; this product was made for {}", i, to_string(op.b.layout()), to_string(s.b)),
            api);
    }
    if (op.d.rank() != 2 || op.d.shape(0) != s.shape.m || op.d.shape(1) != s.shape.n ||
        op.d.dtype() != s.result.dtype() || !dense(op.d)) {
        throw_invalid(fmt::format("ranks[{}].d is {}; it must be a dense (row- or column-major) {} matrix of shape "
                                  "({}, {})",
                                  i, to_string(op.d.layout()), to_string(s.result.dtype()), s.shape.m, s.shape.n),
                      api);
    }
    const MatmulArgs args = rank_args(s, r, op.args);
    if (args.c && !s.reads_c(r.rank)) {
        throw_invalid(fmt::format("ranks[{}].args.c: this product was made without a C layout; use the constructor "
                                  "that takes one",
                                  i),
                      api);
    }
    if (s.reads_c(r.rank) && (!args.c || args.c->layout() != *s.c)) {
        throw_invalid(fmt::format("ranks[{}].args.c is {}; this product was made for a C laid out as {}", i,
                                  args.c ? to_string(args.c->layout()) : std::string("missing"), to_string(*s.c)),
                      api);
    }
    switch (s.parallel.collective) {
        case dist::OutputCollective::none:
            break;
        case dist::OutputCollective::all_reduce:
            if (op.out.layout() != op.d.layout()) {
                throw_invalid(fmt::format("ranks[{}].out is {}; an all_reduce writes the sum laid out as d ({})", i,
                                          to_string(op.out.layout()), to_string(op.d.layout())),
                              api);
            }
            break;
        case dist::OutputCollective::all_gather:
        case dist::OutputCollective::reduce_scatter:
            if (!dense(op.out) || op.out.dtype() != op.d.dtype()) {
                throw_invalid(fmt::format("ranks[{}].out is {}; the {} writes a dense run of {} elements", i,
                                          to_string(op.out.layout()), dist::to_string(s.parallel.collective),
                                          to_string(op.d.dtype())),
                              api);
            }
            break;
    }
    if (s.chunked()) {
        if (!op.d.is_contiguous()) {
            throw_invalid(fmt::format("ranks[{}].d is {}: a chunked pipeline slices D by rows, so D must be row-major",
                                      i, to_string(op.d.layout())),
                          api);
        }
        const bool row_bias = args.bias && args.bias->rank() == 2 && args.bias->shape(0) != 1;
        if (args.bias_grad || args.aux || row_bias) {
            throw_invalid(fmt::format("ranks[{}].args: a chunked pipeline takes no aux or bias gradient, and a bias "
                                      "per column only ((N,) or (1, N)); use chunks = 1",
                                      i),
                          api);
        }
        // A chunk's collective writes out while later chunks' products read a, b, the bias and the
        // scales and write d: out may overlap none of them, except that an all_reduce may be d itself.
        const auto overlaps_input = [&](const std::optional<TensorView>& v) { return v && overlap(op.out, *v); };
        if (overlap(op.out, op.a) || overlap(op.out, op.b) || overlaps_input(args.bias) ||
            overlaps_input(args.scales.a_tensor) || overlaps_input(args.scales.b_tensor)) {
            throw_invalid(
                fmt::format("ranks[{}].out overlaps an input (a, b, the bias or a scale tensor): in a chunked "
                            "pipeline a chunk's {} writes out while the next chunks' products read them",
                            i, dist::to_string(s.parallel.collective)),
                api);
        }
        const bool same = op.out.data() == op.d.data() && op.out.layout() == op.d.layout() &&
                          s.parallel.collective == dist::OutputCollective::all_reduce;
        if (!same && overlap(op.out, op.d)) {
            throw_invalid(
                fmt::format(
                    "ranks[{}].out overlaps d: in a chunked pipeline a chunk's {} writes out while "
                    "the next chunks' products write d; give out its own memory{}",
                    i, dist::to_string(s.parallel.collective),
                    s.parallel.collective == dist::OutputCollective::all_reduce ? " (or d itself, in place)" : ""),
                api);
        }
    }
    // The rank's call as gpumath::Matmul checks it: the values (alpha, beta, alignment, overlaps) and
    // the layouts of the args' tensors (bias, aux, scales), so that no rank fails after another's
    // product was enqueued.
    const MatmulOptions options = options_of(s, r.rank);
    check_call(op.a, op.b, &op.d, args, options, api);
    (void)analyze(MatmulSignature::of(call_of(op.a, op.b, &op.d, args)), options, api);
    // And each chunk's product of a pipeline, which the planned products run one by one.
    check_chunked_products(op.a, op.b, op.d, args, options, s.shape, s.parallel.chunks, i, api);
}

// Where rank i's memory lives, and its stream's device: CUDA queries, after every rank's other checks.
void check_rank_places(const ParallelMatmulState& s, const dist::RankOperands& op, std::size_t i, const char* api) {
    const RankProducts& r = s.ranks[i];
    const MatmulArgs args = rank_args(s, r, op.args);
    const CollectiveLookups& lookups = cuda_lookups();
    check_memory_on(op.a, {"", "ranks", i, ".a"}, r.device, lookups, api);
    check_memory_on(op.b, {"", "ranks", i, ".b"}, r.device, lookups, api);
    check_memory_on(op.d, {"", "ranks", i, ".d"}, r.device, lookups, api);
    if (s.parallel.collective != dist::OutputCollective::none)
        check_memory_on(op.out, {"", "ranks", i, ".out"}, r.device, lookups, api);
    if (args.c) check_memory_on(*args.c, {"", "ranks", i, ".args.c"}, r.device, lookups, api);
    if (args.bias) check_memory_on(*args.bias, {"", "ranks", i, ".args.bias"}, r.device, lookups, api);
    if (args.aux) check_memory_on(*args.aux, {"", "ranks", i, ".args.aux"}, r.device, lookups, api);
    if (args.bias_grad) check_memory_on(*args.bias_grad, {"", "ranks", i, ".args.bias_grad"}, r.device, lookups, api);
    if (args.scales.a_tensor)
        check_memory_on(*args.scales.a_tensor, {"", "ranks", i, ".args.scales.a_tensor"}, r.device, lookups, api);
    if (args.scales.b_tensor)
        check_memory_on(*args.scales.b_tensor, {"", "ranks", i, ".args.scales.b_tensor"}, r.device, lookups, api);
    check_stream_on(op.stream, {"", "ranks", i, ".stream"}, r.device, lookups, api);
}

// The pipeline's end: rank i's stream waits for everything its collective stream was given, so
// the caller's stream (and a capture on it) is joined again. Only ranks whose collective stream
// was forked from the caller's (`forked`) are joined.
void join_pipeline(ParallelMatmulState& s, std::span<const dist::RankOperands> ranks, const std::vector<char>& forked) {
    for (std::size_t i = 0; i < ranks.size(); ++i) {
        if (forked[i] == 0) continue;
        const RankProducts& r = s.ranks[i];
        const DeviceGuard guard(r.device);
        r.comm->record(*r.reduced);
        ranks[i].stream.wait(*r.reduced);
    }
}

}  // namespace

}  // namespace gpumath::detail

namespace gpumath::dist {

using gpumath::detail::ParallelMatmulState;

namespace {

std::unique_ptr<ParallelMatmulState> make_state(const Communicator& comm, const TensorLayout& a, const TensorLayout& b,
                                                const std::optional<TensorLayout>& c, const MatmulOptions& options,
                                                const ParallelOptions& parallel) {
    constexpr const char* api = "dist::Matmul";
    const auto& shared = gpumath::detail::CommunicatorAccess::state(comm, api);
    auto s = std::make_unique<ParallelMatmulState>();
    s->shape = gpumath::detail::check_parallel(a, b, c.has_value(), options, parallel, shared->size, api);
    gpumath::detail::check_memory_resource(options, shared->ranks, api);
    s->comm = shared;
    s->a = a;
    s->b = b;
    s->c = c;
    s->a_chunk = gpumath::detail::leading_rows(a, s->shape.chunk_rows);
    s->a_last = gpumath::detail::leading_rows(a, s->shape.last_rows);
    s->options = options;
    s->parallel = parallel;
    for (const gpumath::detail::LocalRank& r : shared->ranks) {
        s->ranks.emplace_back();
        s->ranks.back().rank = r.rank;
        s->ranks.back().device = r.device;
    }
    // Validates the product itself (dtypes, epilog, options, C) as gpumath::Matmul does, on the CPU,
    // and a pipeline's chunk products, which plan() makes (FP8's rules on M, say).
    const gpumath::Matmul probe = gpumath::detail::make_plan(*s, a, 0);
    s->result = probe.result_layout();
    if (s->chunked()) {
        (void)gpumath::detail::make_plan(*s, s->a_chunk, 0);
        (void)gpumath::detail::make_plan(*s, s->a_last, 0);
    }
    // NCCL's fp8 types: known now, not after the products are planned; the device queries last.
    if (parallel.collective != OutputCollective::none && is_fp8(s->result.dtype()))
        gpumath::detail::check_fp8_collective(s->result.dtype(), nccl_version(), shared->ranks,
                                              gpumath::detail::cuda_lookups(), api);
    return s;
}

}  // namespace

Matmul::Matmul(const Communicator& comm, const TensorLayout& a, const TensorLayout& b, const MatmulOptions& options,
               const ParallelOptions& parallel)
    : state_(make_state(comm, a, b, std::nullopt, options, parallel)) {}

Matmul::Matmul(const Communicator& comm, const TensorLayout& a, const TensorLayout& b, const TensorLayout& c,
               const MatmulOptions& options, const ParallelOptions& parallel)
    : state_(make_state(comm, a, b, c, options, parallel)) {}

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
    using gpumath::detail::flat;
    using gpumath::detail::rows_of;
    ParallelMatmulState& s = state(api);
    const std::size_t n = s.ranks.size();
    if (ranks.size() != n) {
        gpumath::detail::throw_invalid(
            fmt::format("{} RankOperands given; this process holds {} local rank{} of the communicator: give one per "
                        "local rank, in local rank order",
                        ranks.size(), n, n == 1 ? "" : "s"),
            api);
    }
    for (std::size_t i = 0; i < n; ++i) {
        gpumath::detail::check_rank(s, ranks[i], i, api);
        // NCCL combines the ranks' D element by element in memory order: one layout for all.
        if (ranks[i].d.layout() != ranks[0].d.layout()) {
            gpumath::detail::throw_invalid(
                fmt::format("ranks[{}].d is {} but ranks[0].d is {}: every rank's D has one "
                            "layout, since the collective combines them in memory order",
                            i, to_string(ranks[i].d.layout()), to_string(ranks[0].d.layout())),
                api);
        }
    }
    for (std::size_t i = 0; i < n; ++i) gpumath::detail::check_rank_places(s, ranks[i], i, api);

    const std::lock_guard lock(s.mutex);
    gpumath::detail::plan_locked(s);
    // The collective over the whole of every rank's D, checked before the first product is enqueued.
    std::vector<TensorView> d(n);
    std::vector<TensorView> out(n);
    std::vector<core::StreamRef> streams(n);
    const bool joins = s.parallel.collective != OutputCollective::none;
    for (std::size_t i = 0; i < n; ++i) {
        // Without a collective, out is not used (an empty view: no data, one element as a scalar).
        if (joins) {
            d[i] = flat(ranks[i].d);
            out[i] = flat(ranks[i].out);
        }
        streams[i] = s.chunked() ? core::StreamRef(*s.ranks[i].comm) : ranks[i].stream;
    }
    const gpumath::detail::CollectiveCall whole{
        gpumath::detail::collective_of(s.parallel.collective), d, out, streams, ReduceOp::sum, 0};
    gpumath::detail::CheckedCollective checked;
    if (joins) checked = gpumath::detail::check_on(*s.comm, whole, api);

    std::vector<MatmulOutputs> outputs(n);
    if (!s.chunked()) {
        for (std::size_t i = 0; i < n; ++i) {
            gpumath::detail::RankProducts& r = s.ranks[i];
            const gpumath::detail::DeviceGuard guard(r.device);
            outputs[i] = r.full->execute(ranks[i].a, ranks[i].b, ranks[i].d,
                                         gpumath::detail::rank_args(s, r, ranks[i].args), ranks[i].stream);
        }
        if (joins) gpumath::detail::enqueue(*s.comm, whole, checked, api);
        return outputs;
    }
    // The pipeline: chunk c's product on the rank's stream, then its collective on the rank's
    // collective stream, which waits for that product only; the rank's stream waits for every
    // collective at the end (also when a chunk throws). A reduce_scatter scatters each chunk: its
    // output is chunk-major.
    const bool scatter = s.parallel.collective == OutputCollective::reduce_scatter;
    const std::int64_t reals =
        std::int64_t(checked.count) / std::max<std::int64_t>(scatter ? out[0].size() : d[0].size(), 1);
    std::vector<char> forked(n, 0);
    bool joined = false;
    // On an exception, join what was forked (errors then are secondary to the one in flight).
    const gpumath::detail::ScopeExit join_on_error([&] {
        if (!joined) gpumath::detail::release_noexcept([&] { gpumath::detail::join_pipeline(s, ranks, forked); });
    });
    std::vector<TensorView> d_chunk(n);
    std::vector<TensorView> out_chunk(n);
    for (int c = 0; c < s.parallel.chunks; ++c) {
        const std::int64_t first = std::int64_t(c) * s.shape.chunk_rows;
        const bool last = c == s.parallel.chunks - 1;
        const std::int64_t rows = last ? s.shape.last_rows : s.shape.chunk_rows;
        const std::int64_t elements = rows * s.shape.n;
        for (std::size_t i = 0; i < n; ++i) {
            gpumath::detail::RankProducts& r = s.ranks[i];
            const gpumath::detail::DeviceGuard guard(r.device);
            gpumath::Matmul& plan = last && r.last ? *r.last : *r.full;
            (void)plan.execute(rows_of(ranks[i].a, first, rows), ranks[i].b, rows_of(ranks[i].d, first, rows),
                               gpumath::detail::rank_args(s, r, ranks[i].args), ranks[i].stream);
            ranks[i].stream.record(*r.produced);
            r.comm->wait(*r.produced);
            forked[i] = 1;
            d_chunk[i] = flat(ranks[i].d, first * s.shape.n, elements);
            out_chunk[i] = scatter ? flat(ranks[i].out, first * s.shape.n / s.size(), elements / s.size())
                                   : flat(ranks[i].out, first * s.shape.n, elements);
        }
        // The whole call passed the checks; a chunk is a slice of it, so only NCCL's count changes.
        gpumath::detail::CheckedCollective chunk = checked;
        chunk.count = std::size_t((scatter ? elements / s.size() : elements) * reals);
        gpumath::detail::enqueue(*s.comm, {whole.kind, d_chunk, out_chunk, streams, ReduceOp::sum, 0}, chunk, api);
    }
    joined = true;
    gpumath::detail::join_pipeline(s, ranks, forked);
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
