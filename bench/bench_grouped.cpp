// SPDX-License-Identifier: Apache-2.0
// gpumath's grouped (mixture-of-experts) products, bf16 in and out with f32 accumulation, on the
// same buffers in the same process as what they are compared with:
//   - "grouped gpu ...": uneven group sizes from a fixed-seed skewed routing (one group empty), each
//     backend of `backends` and the device-sizes path against a loop of planned Matmul executions
//     (one per non-empty group, in group order), plus one dense Matmul of the same total size;
//   - "grouped fp8 ...": e4m3 inputs with a scale per group, automatic against a loop of FP8
//     Matmul executions with per-group scale pointers, plus one dense FP8 Matmul;
//   - "grouped strided ...": equal group sizes, backend strided_batched against raw cuBLASLt's
//     strided-batched product;
//   - "grouped host ...": host time per execute() of tiny problems.
//
//   bench_grouped [--quick] [--json PATH] [name filters...]
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <cublasLt.h>

#include <gpumath/core.hpp>
#include <gpumath/matmul.hpp>

#include "harness.hpp"

using namespace gpumath;

namespace {

/// The backends timed on uneven sizes and for host time, one line each.
constexpr GroupedBackend backends[] = {
    GroupedBackend::loop,   GroupedBackend::automatic, GroupedBackend::streams, GroupedBackend::streams_partitioned,
    GroupedBackend::cublas, GroupedBackend::kernel,
};

/// (K, N) of the weights of the GPU-time cases.
struct Shape {
    std::int64_t k = 0, n = 0;
};

/// Values generated on the host per operand (32 MiB of bf16); larger operands repeat them, copied
/// on the device (bench::random_device), so that weights of gigabytes need no host memory.
constexpr std::size_t host_values = std::size_t(1) << 24;

/// Launch-queue entries a gated sample or a host-time burst may enqueue (see bench::StreamGate).
constexpr int queue_budget = 400;

/// Calls per gated sample or burst when a call enqueues up to 3 queue entries per product (the
/// product's kernels, the events of a backend that forks streams).
int calls_within_queue(std::size_t products) {
    return std::clamp(queue_budget / int(3 * std::max<std::size_t>(products, 1)), 1, bench::max_gated_calls);
}

/// Rows per group when `tokens` tokens are routed with a fixed seed: each token picks group g with
/// probability proportional to 1 / sqrt(r_g + 1), r a fixed-seed permutation of the groups (so the
/// popular groups are not all first); then group G / 2 hands its rows to the next group, so that
/// one group is empty.
std::vector<std::int64_t> routed_sizes(std::int64_t groups, std::int64_t tokens, std::uint64_t seed) {
    const auto count = std::size_t(groups);
    std::uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
    std::vector<std::size_t> rank(count);
    std::iota(rank.begin(), rank.end(), std::size_t(0));
    for (std::size_t i = count - 1; i > 0; --i)
        std::swap(rank[i], rank[std::size_t(bench::next_uniform(x) * double(i + 1))]);
    std::vector<double> cdf(count);
    double total = 0;
    for (std::size_t g = 0; g < count; ++g) cdf[g] = total += 1.0 / std::sqrt(double(rank[g] + 1));
    std::vector<std::int64_t> sizes(count, 0);
    for (std::int64_t t = 0; t < tokens; ++t) {
        const auto g =
            std::size_t(std::upper_bound(cdf.begin(), cdf.end(), bench::next_uniform(x) * total) - cdf.begin());
        ++sizes[std::min(g, count - 1)];
    }
    const std::size_t empty = count / 2;
    sizes[(empty + 1) % count] += sizes[empty];
    sizes[empty] = 0;
    return sizes;
}

/// 2 rows per group on average: 1, 3, 1, 3, ..., with the last group's rows moved to group 0, so
/// that exactly one group is empty.
std::vector<std::int64_t> tiny_sizes(std::int64_t groups) {
    std::vector<std::int64_t> sizes(static_cast<std::size_t>(groups));
    for (std::size_t g = 0; g < sizes.size(); ++g) sizes[g] = g % 2 ? 3 : 1;
    sizes.front() += sizes.back();
    sizes.back() = 0;
    return sizes;
}

/// Rows [row, row + m) of the row-major matrix `x`.
TensorView rows_of(const TensorView& x, std::int64_t row, std::int64_t m) {
    const auto* p = static_cast<const char*>(x.data()) + row * x.stride(0) * std::int64_t(size_of(x.dtype()));
    return TensorView(p, x.dtype(), {m, x.shape(1)});
}

/// Group g's weights (K, N) of the weights `b` (G, K, N).
TensorView expert_of(const TensorView& b, std::int64_t g) {
    const auto* p = static_cast<const char*>(b.data()) + g * b.stride(0) * std::int64_t(size_of(b.dtype()));
    return TensorView(p, b.dtype(), {b.shape(1), b.shape(2)});
}

/// Group g's weights (K, N) of the weights `b` (G, K, N), with b's strides.
TensorView expert_of_strided(const TensorView& b, std::int64_t g) {
    const auto* p = static_cast<const char*>(b.data()) + g * b.stride(0) * std::int64_t(size_of(b.dtype()));
    const std::int64_t shape[] = {b.shape(1), b.shape(2)};
    const std::int64_t strides[] = {b.stride(1), b.stride(2)};
    return TensorView(p, b.dtype(), shape, strides);
}

/// The baseline: one planned Matmul per non-empty group, executed in group order on per-group
/// views of A (T, K), B (G, K, N) and D (T, N).
class MatmulLoop {
public:
    MatmulLoop(const TensorView& a, const TensorView& b, std::span<const std::int64_t> sizes)
        : sizes_(sizes.begin(), sizes.end()) {
        std::int64_t row = 0;
        for (std::size_t g = 0; g < sizes_.size(); ++g) {
            const std::int64_t m = sizes_[g];
            if (m > 0) products_.emplace_back(rows_of(a, row, m), expert_of(b, std::int64_t(g))).plan();
            row += m;
        }
    }
    void run(const TensorView& a, const TensorView& b, const TensorView& d, core::StreamRef stream) {
        std::int64_t row = 0;
        auto product = products_.begin();
        for (std::size_t g = 0; g < sizes_.size(); ++g) {
            const std::int64_t m = sizes_[g];
            if (m > 0)
                (product++)->execute(rows_of(a, row, m), expert_of(b, std::int64_t(g)), rows_of(d, row, m), {}, stream);
            row += m;
        }
    }
    [[nodiscard]] std::size_t products() const { return products_.size(); }

private:
    std::vector<std::int64_t> sizes_;
    std::vector<Matmul> products_;
};

/// Runs `fn` once and waits, so that plans, run-time compilation and the automatic backend's first
/// measurement happen outside any timed or gated sample.
void warm(cudaStream_t s, const std::function<void(int)>& fn) {
    fn(0);
    bench::cuda_check(cudaStreamSynchronize(s), "warm-up");
}

std::string tflops_text(double flops, double ms) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f TFLOP/s", bench::tflops(flops, ms));
    return buf;
}

/// "7 products of 3..40 rows, 1 group empty": what a loop over `sizes` runs.
std::string sizes_text(std::span<const std::int64_t> sizes) {
    std::int64_t lo = 0, hi = 0, products = 0;
    for (std::int64_t m : sizes) {
        if (m == 0) continue;
        lo = products++ == 0 ? m : std::min(lo, m);
        hi = std::max(hi, m);
    }
    char buf[96];
    std::snprintf(buf, sizeof buf, "%lld products of %lld..%lld rows, %lld group(s) empty",
                  static_cast<long long>(products), static_cast<long long>(lo), static_cast<long long>(hi),
                  static_cast<long long>(std::int64_t(sizes.size()) - products));
    return buf;
}

struct Settings {
    bool quick = false;
    bench::Timing timing{};
};

/// A (T, K) and D (T, N) of one case over weights B (G, K, N), bf16 row-major.
struct MoeViews {
    TensorView a, b, d;
};

/// The uneven case `group` over `v`: the loop of Matmul, each backend, one dense Matmul of the same
/// total size and the device-sizes path.
void time_uneven(bench::Reporter& report, core::Stream& stream, const Settings& settings, const std::string& group,
                 const MoeViews& v, std::span<const std::int64_t> sizes) {
    const cudaStream_t s = stream.handle();
    const std::int64_t tokens = v.a.shape(0);
    const double flops = 2.0 * double(tokens) * double(v.d.shape(1)) * double(v.a.shape(1));
    MatmulLoop loop(v.a, v.b, sizes);
    const std::function<void(int)> baseline = [&](int) { loop.run(v.a, v.b, v.d, stream); };
    warm(s, baseline);
    bench::Timing timing = settings.timing;
    timing.max_per_sample = calls_within_queue(loop.products());
    const std::string target = "; ratio = loop-of-Matmul time / this (target >= 1.2)";

    bool first = true;
    for (GroupedBackend backend : backends) {
        GroupedMatmul grouped(v.a, v.b, sizes, {}, {.backend = backend});
        grouped.plan();
        const std::function<void(int)> ours = [&](int) { grouped.execute(v.a, v.b, v.d, sizes, {}, stream); };
        warm(s, ours);
        const auto [base_ms, ms] = bench::compare(s, baseline, ours, timing);
        if (first)
            report.add({group, "loop of Matmul", "ms", base_ms, 0,
                        tflops_text(flops, base_ms) + "; baseline, " + sizes_text(sizes)});
        first = false;
        report.add({group, "backend " + std::string(to_string(backend)), "ms", ms, base_ms / ms,
                    tflops_text(flops, ms) + target});
    }

    {
        const TensorView b0 = expert_of(v.b, 0);
        Matmul dense(v.a, b0);
        dense.plan();
        const std::function<void(int)> ours = [&](int) { dense.execute(v.a, b0, v.d, {}, stream); };
        const auto [base_ms, ms] = bench::compare(s, baseline, ours, timing);
        char note[128];
        std::snprintf(note, sizeof note,
                      "reference: one Matmul (T, K) x (K, N), group 0's weights; the loop reaches %.2f of it",
                      ms / base_ms);
        report.add({group, "dense Matmul", "TFLOP/s", bench::tflops(flops, ms), 0, note});
    }

    {
        const std::vector<std::int32_t> sizes32(sizes.begin(), sizes.end());
        const core::Buffer on_device = core::Buffer::from_host(sizes32, stream);
        const DeviceGroupSizes device_sizes{
            .sizes = TensorView(on_device.data(), DataType::i32, {std::int64_t(sizes.size())}),
            .max_total_rows = tokens};
        GroupedMatmul grouped(v.a, v.b, sizes);
        const std::function<void(int)> ours = [&](int) { grouped.execute(v.a, v.b, v.d, device_sizes, {}, stream); };
        warm(s, ours);
        const auto [base_ms, ms] = bench::compare(s, baseline, ours, timing);
        report.add(
            {group, "device sizes", "ms", ms, base_ms / ms,
             tflops_text(flops, ms) + "; grouped kernel, max_total_rows = T; ratio = loop-of-Matmul time / this"});
    }
}

/// GPU time on uneven sizes: G in {8, 64}, (K, N) in {(4096, 14336), (7168, 2048)}, mean rows per
/// group in {16, 128, 1024}.
void gpu_time(bench::Reporter& report, core::Stream& stream, const Settings& settings) {
    const cudaStream_t s = stream.handle();
    const std::vector<Shape> shapes =
        settings.quick ? std::vector<Shape>{{7168, 2048}} : std::vector<Shape>{{4096, 14336}, {7168, 2048}};
    const std::vector<std::int64_t> means =
        settings.quick ? std::vector<std::int64_t>{16, 128} : std::vector<std::int64_t>{16, 128, 1024};
    for (std::int64_t g : {8, 64})
        for (const Shape& shape : shapes) {
            auto name = [&](std::int64_t mean) {
                return "grouped gpu G=" + std::to_string(g) + " K=" + std::to_string(shape.k) +
                       " N=" + std::to_string(shape.n) + " mean=" + std::to_string(mean);
            };
            if (std::none_of(means.begin(), means.end(), [&](std::int64_t m) { return report.selected(name(m)); }))
                continue;
            const core::Buffer b =
                bench::random_device(DataType::bf16, std::size_t(g * shape.k * shape.n), 2, s, host_values);
            for (std::int64_t mean : means) {
                if (!report.selected(name(mean))) continue;
                const std::int64_t tokens = g * mean;
                const std::vector<std::int64_t> sizes = routed_sizes(g, tokens, std::uint64_t(g * 10000 + mean));
                const core::Buffer a =
                    bench::random_device(DataType::bf16, std::size_t(tokens * shape.k), 1, s, host_values);
                const core::Buffer d(std::size_t(tokens * shape.n) * 2, stream);
                const MoeViews v{TensorView(a.data(), DataType::bf16, {tokens, shape.k}),
                                 TensorView(b.data(), DataType::bf16, {g, shape.k, shape.n}),
                                 TensorView(d.data(), DataType::bf16, {tokens, shape.n})};
                time_uneven(report, stream, settings, name(mean), v, sizes);
            }
        }
}

/// FP8: e4m3 A (T, K) row-major and weights (G, K, N) column-major per expert, bf16 D, a scale per
/// group for A and for B. The baseline is what a user of Matmul writes: one planned FP8 Matmul per
/// non-empty group with per-tensor scale pointers into 16-byte slots of the user's own; gpumath
/// takes the scales as (G,) f32 tensors (4-byte steps) and copies them to slots itself.
void fp8_time(bench::Reporter& report, core::Stream& stream, const Settings& settings) {
    const cudaStream_t s = stream.handle();
    const std::vector<Shape> shapes =
        settings.quick ? std::vector<Shape>{{7168, 2048}} : std::vector<Shape>{{4096, 14336}, {7168, 2048}};
    const std::vector<std::int64_t> means =
        settings.quick ? std::vector<std::int64_t>{128} : std::vector<std::int64_t>{128, 1024};
    constexpr auto e4m3 = DataType::e4m3;
    for (std::int64_t g : {8, 64})
        for (const Shape& shape : shapes)
            for (std::int64_t mean : means) {
                const std::string group = "grouped fp8 G=" + std::to_string(g) + " K=" + std::to_string(shape.k) +
                                          " N=" + std::to_string(shape.n) + " mean=" + std::to_string(mean);
                if (!report.selected(group)) continue;
                const std::int64_t k = shape.k, n = shape.n, tokens = g * mean;
                const std::vector<std::int64_t> sizes = routed_sizes(g, tokens, std::uint64_t(g * 20000 + mean));
                const core::Buffer a = bench::random_device(e4m3, std::size_t(tokens * k), 5, s, host_values);
                const core::Buffer b = bench::random_device(e4m3, std::size_t(g * k * n), 6, s, host_values);
                const core::Buffer d(std::size_t(tokens * n) * 2, stream);
                const TensorView av(a.data(), e4m3, {tokens, k}), bv(b.data(), e4m3, {g, k, n}, {k * n, 1, k}),
                    dv(d.data(), DataType::bf16, {tokens, n});
                // Scales: (G,) f32 for gpumath; 16-byte slots (4 floats per group) for the baseline.
                std::vector<float> scale(std::size_t(g), 1.0F), slots(std::size_t(4 * g), 1.0F);
                const core::Buffer sa = core::Buffer::from_host(scale, stream),
                                   sb = core::Buffer::from_host(scale, stream);
                const core::Buffer slot_a = core::Buffer::from_host(slots, stream),
                                   slot_b = core::Buffer::from_host(slots, stream);
                const GroupedScales scales{.a = TensorView(sa.data(), DataType::f32, {g}),
                                           .b = TensorView(sb.data(), DataType::f32, {g})};
                const MatmulOptions options{.result_type = DataType::bf16};

                std::vector<Matmul> loop;
                std::vector<std::int64_t> first_row;
                std::int64_t row = 0;
                for (std::int64_t x = 0; x < g; ++x) {
                    const std::int64_t m = sizes[std::size_t(x)];
                    if (m > 0) {
                        loop.emplace_back(rows_of(av, row, m), expert_of_strided(bv, x), options).plan();
                        first_row.push_back(row);
                    }
                    row += m;
                }
                const std::function<void(int)> baseline = [&](int) {
                    std::size_t i = 0;
                    for (std::int64_t x = 0; x < g; ++x) {
                        const std::int64_t m = sizes[std::size_t(x)];
                        if (m == 0) continue;
                        const std::int64_t r = first_row[i];
                        MatmulArgs args;
                        args.scales.a = static_cast<const float*>(slot_a.data()) + 4 * x;
                        args.scales.b = static_cast<const float*>(slot_b.data()) + 4 * x;
                        loop[i++].execute(rows_of(av, r, m), expert_of_strided(bv, x), rows_of(dv, r, m), args, stream);
                    }
                };
                GroupedMatmul grouped(av, bv, sizes, options);
                grouped.plan();
                const std::function<void(int)> ours = [&](int) {
                    grouped.execute(av, bv, dv, sizes, {.scales = scales}, stream);
                };
                warm(s, baseline);
                warm(s, ours);
                bench::Timing timing = settings.timing;
                timing.max_per_sample = calls_within_queue(loop.size());
                const auto [base_ms, ms] = bench::compare(s, baseline, ours, timing);
                const double flops = 2.0 * double(tokens) * double(n) * double(k);
                report.add({group, "loop of FP8 Matmul", "ms", base_ms, 0,
                            tflops_text(flops, base_ms) + "; baseline, " + sizes_text(sizes)});
                report.add({group, "backend automatic, (G,) scales", "ms", ms, base_ms / ms,
                            tflops_text(flops, ms) + "; ratio = loop time / this (DeepGEMM: 1297 TFLOP/s grouped "
                                                     "FP8 contiguous layout on an H800)"});
                // The same with scales 16 bytes apart (the baseline's slots as (G,) views of stride 4):
                // read in place, no copy kernel.
                const std::int64_t every_fourth[] = {4};
                const std::int64_t g_shape[] = {g};
                const GroupedScales aligned{.a = TensorView(slot_a.data(), DataType::f32, g_shape, every_fourth),
                                            .b = TensorView(slot_b.data(), DataType::f32, g_shape, every_fourth)};
                const std::function<void(int)> in_place = [&](int) {
                    grouped.execute(av, bv, dv, sizes, {.scales = aligned}, stream);
                };
                warm(s, in_place);
                const auto [base2_ms, aligned_ms] = bench::compare(s, baseline, in_place, timing);
                report.add({group, "backend automatic, 16-byte-strided scales", "ms", aligned_ms, base2_ms / aligned_ms,
                            tflops_text(flops, aligned_ms) + "; ratio = loop time / this"});
                const TensorView b0 = expert_of_strided(bv, 0);
                Matmul dense(av, b0, options);
                dense.plan();
                const std::function<void(int)> one = [&](int) { dense.execute(av, b0, dv, {}, stream); };
                warm(s, one);
                const auto [unused, dense_ms] = bench::compare(s, baseline, one, timing);
                (void)unused;
                char note[128];
                std::snprintf(note, sizeof note,
                              "reference: one FP8 Matmul (T, K) x (K, N); the loop reaches %.2f of it",
                              dense_ms / base_ms);
                report.add({group, "dense FP8 Matmul", "TFLOP/s", bench::tflops(flops, dense_ms), 0, note});
            }
}

/// Equal sizes (128 rows per group): backend strided_batched against raw cuBLASLt's strided-batched
/// product (D^T = B^T A^T column-major, as gpumath computes a row-major D).
void strided_time(bench::Reporter& report, core::Stream& stream, const Settings& settings) {
    const cudaStream_t s = stream.handle();
    constexpr std::int64_t m = 128;
    const std::vector<Shape> shapes =
        settings.quick ? std::vector<Shape>{{7168, 2048}} : std::vector<Shape>{{4096, 14336}, {7168, 2048}};
    for (std::int64_t g : {8, 64})
        for (const Shape& shape : shapes) {
            const std::int64_t k = shape.k, n = shape.n, tokens = g * m;
            const std::string group = "grouped strided G=" + std::to_string(g) + " M=" + std::to_string(m) +
                                      " K=" + std::to_string(k) + " N=" + std::to_string(n);
            if (!report.selected(group)) continue;
            const std::vector<std::int64_t> sizes(std::size_t(g), m);
            const core::Buffer a = bench::random_device(DataType::bf16, std::size_t(tokens * k), 3, s, host_values);
            const core::Buffer b = bench::random_device(DataType::bf16, std::size_t(g * k * n), 4, s, host_values);
            const core::Buffer d(std::size_t(tokens * n) * 2, stream);
            const TensorView av(a.data(), DataType::bf16, {tokens, k}), bv(b.data(), DataType::bf16, {g, k, n}),
                dv(d.data(), DataType::bf16, {tokens, n});
            bench::RawLt raw({.m = std::uint64_t(n),
                              .n = std::uint64_t(m),
                              .k = std::uint64_t(k),
                              .batch = std::int32_t(g),
                              .stride_a = k * n,
                              .stride_b = m * k,
                              .stride_d = m * n});
            GroupedMatmul grouped(av, bv, sizes, {}, {.backend = GroupedBackend::strided_batched});
            grouped.plan();
            const std::function<void(int)> theirs = [&](int) { raw.run(b.data(), a.data(), d.data(), s); };
            const std::function<void(int)> ours = [&](int) { grouped.execute(av, bv, dv, sizes, {}, stream); };
            warm(s, theirs);
            warm(s, ours);
            const auto [raw_ms, ms] = bench::compare(s, theirs, ours, settings.timing);
            const double flops = 2.0 * double(tokens) * double(n) * double(k);
            report.add(
                {group, "raw cuBLASLt batched", "ms", raw_ms, 0, tflops_text(flops, raw_ms) + "; " + raw.algorithm()});
            report.add({group, "backend strided_batched", "ms", ms, raw_ms / ms,
                        tflops_text(flops, ms) + "; ratio = raw time / this (target >= 0.99)"});
        }
}

/// Host time per execute() of tiny problems (K = N = 64, 2 rows per group on average, one group
/// empty), in interleaved bursts short enough for the launch queue, over 8 rotating buffer sets.
void host_time(bench::Reporter& report, core::Stream& stream, const Settings& settings) {
    const cudaStream_t s = stream.handle();
    constexpr std::int64_t k = 64, n = 64;
    constexpr int sets = 8;
    for (std::int64_t g : {8, 64}) {
        const std::string group = "grouped host G=" + std::to_string(g) + " K=N=64 mean=2";
        if (!report.selected(group)) continue;
        const std::vector<std::int64_t> sizes = tiny_sizes(g);
        const std::int64_t tokens = std::accumulate(sizes.begin(), sizes.end(), std::int64_t(0));
        std::vector<core::Buffer> buffers;
        buffers.reserve(std::size_t(3) * sets);  // the references below stay valid
        std::vector<MoeViews> views;
        for (int i = 0; i < sets; ++i) {
            const std::uint64_t seed = 10 + std::uint64_t(2) * std::uint64_t(i);
            const core::Buffer& a =
                buffers.emplace_back(bench::random_device(DataType::bf16, std::size_t(tokens * k), seed, s));
            const core::Buffer& b =
                buffers.emplace_back(bench::random_device(DataType::bf16, std::size_t(g * k * n), seed + 1, s));
            const core::Buffer& d = buffers.emplace_back(std::size_t(tokens * n) * 2, stream);
            views.push_back({TensorView(a.data(), DataType::bf16, {tokens, k}),
                             TensorView(b.data(), DataType::bf16, {g, k, n}),
                             TensorView(d.data(), DataType::bf16, {tokens, n})});
        }
        const MoeViews& v0 = views.front();
        MatmulLoop loop(v0.a, v0.b, sizes);
        std::vector<GroupedMatmul> grouped;
        for (GroupedBackend backend : backends) {
            grouped.emplace_back(v0.a, v0.b, sizes, MatmulOptions{}, GroupedOptions{.backend = backend}).plan();
        }
        GroupedMatmul device(v0.a, v0.b, sizes);
        const std::vector<std::int32_t> sizes32(sizes.begin(), sizes.end());
        const core::Buffer on_device = core::Buffer::from_host(sizes32, stream);
        const DeviceGroupSizes device_sizes{.sizes = TensorView(on_device.data(), DataType::i32, {g}),
                                            .max_total_rows = tokens};

        std::vector<std::function<void(int)>> fns;
        fns.emplace_back([&](int i) {
            const MoeViews& x = views[std::size_t(i % sets)];
            loop.run(x.a, x.b, x.d, stream);
        });
        for (GroupedMatmul& gm : grouped)
            fns.emplace_back([&, gm = &gm](int i) {
                const MoeViews& x = views[std::size_t(i % sets)];
                gm->execute(x.a, x.b, x.d, sizes, {}, stream);
            });
        fns.emplace_back([&](int i) {
            const MoeViews& x = views[std::size_t(i % sets)];
            device.execute(x.a, x.b, x.d, device_sizes, {}, stream);
        });
        for (const auto& fn : fns)
            for (int i = 0; i < sets; ++i) warm(s, [&](int) { fn(i); });

        const int burst = calls_within_queue(loop.products());
        const std::vector<double> us = bench::interleaved_host_us(s, fns, burst, settings.quick ? 31 : 301);
        char note[128];
        std::snprintf(note, sizeof note, "baseline, %s; bursts of %d calls", sizes_text(sizes).c_str(), burst);
        report.add({group, "loop of Matmul", "us/call", us[0], 0, note});
        const double host_target = 2.0 + 0.2 * double(g);
        for (std::size_t i = 0; i < grouped.size(); ++i) {
            std::snprintf(note, sizeof note, "target <= %.1f us (2 + 0.2 G); ratio = loop-of-Matmul / this",
                          host_target);
            report.add({group, "backend " + std::string(to_string(backends[i])), "us/call", us[i + 1],
                        us[0] / us[i + 1], note});
        }
        report.add({group, "device sizes", "us/call", us.back(), us[0] / us.back(),
                    "target <= 3 us; ratio = loop-of-Matmul / this"});
    }
}

}  // namespace

int main(int argc, char** argv) try {
    bench::require_gpu("bench_grouped");
    bench::Reporter report("bench_grouped", argc, argv);
    bench::print_environment("bench_grouped");
    std::printf(
        "cuBLASLt %zu; bf16 in and out, f32 accumulation; A (T, K), weights (G, K, N), D (T, N) row-major, inputs "
        "uniform in (-0.5, 0.5); baseline = one planned Matmul per non-empty group in group order, same buffers; "
        "raw = cublasLtMatmul strided-batched with the heuristic's first algorithm and kept descriptors\n",
        cublasLtGetVersion());
    core::Stream stream;
    Settings settings{.quick = report.quick()};
    settings.timing =
        settings.quick
            ? bench::Timing{.warmup = 2, .samples = 7, .rounds = 2, .burn_seconds = 0.2, .max_seconds = 2.0}
            : bench::Timing{.warmup = 5, .samples = 21, .rounds = 3, .burn_seconds = 1.0, .max_seconds = 6.0};
    gpu_time(report, stream, settings);
    fp8_time(report, stream, settings);
    strided_time(report, stream, settings);
    host_time(report, stream, settings);
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "bench_grouped: %s\n", e.what());
    return 2;
}
