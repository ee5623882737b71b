// SPDX-License-Identifier: Apache-2.0
// gpumath's multi-GPU module against what it is built on, in the same process on the same
// buffers and streams, one rank per GPU (every GPU of the machine or the first p):
//   - "all_reduce ...": Communicator::all_reduce (f32 sum) against raw ncclAllReduce on the
//     communicator's own NCCL handles: GPU time, algorithm and bus bandwidth at 1 GiB per rank, and
//     at 1 MiB GPU time and host time per call;
//   - "row-parallel linear ...": dist::Matmul row-parallel on p = 1, 2, 4, ... GPUs, collective
//     included, against one GPU's gpumath::Matmul of the whole product (scaling efficiency);
//   - "fft c2c f32 ...": dist::FFT on the first p GPUs against one GPU's gpumath::FFT, GPU time
//     between events on a stream of device 0 (scaling efficiency).
// With one GPU every case runs with p = 1 (the ratios then show overhead; scaling needs 2+ GPUs).
//
//   bench_dist [--quick] [--json PATH] [name filters...]
#include <algorithm>
#include <chrono>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <gpumath/core.hpp>
#include <gpumath/error.hpp>
#include <gpumath/matmul.hpp>

#include "harness.hpp"

// The module is built only where CMake found nccl.h (GPUMATH_HAS_DIST); the raw baseline needs
// that header too.
#if defined(GPUMATH_HAS_DIST) && __has_include(<nccl.h>)

#include <gpumath/dist/communicator.hpp>
#include <gpumath/dist/fft.hpp>
#include <gpumath/dist/matmul.hpp>
#include <gpumath/fft.hpp>

#include "dist/nccl_api.hpp"

using namespace gpumath;
using dist::Communicator;
using Work = std::function<void(int)>;

namespace {

struct Settings {
    bool quick = false;
    bench::Timing timing{};
};

/// Calls per gated sample of a collective: NCCL hands each call's work to the GPU through a queue
/// of its own that a held (gated) stream does not drain, so a sample stays far below its depth.
constexpr int collective_calls_per_sample = 16;

/// Values generated on the host per operand; larger operands repeat them (bench::random_device).
constexpr std::size_t host_values = std::size_t(1) << 24;

/// One stream per local rank of a communicator, on the rank's device, and what makes a timed
/// sample start on every rank at once (fork) and end when the last rank is done (join).
class RankStreams {
public:
    explicit RankStreams(const Communicator& comm) {
        for (int i = 0; i < comm.local_size(); ++i) {
            const core::Device device(comm.device(i));
            devices_.push_back(device.ordinal());
            streams_.push_back(device.create_stream());
            done_.push_back(device.create_event());
        }
        refs_.assign(streams_.begin(), streams_.end());
    }
    [[nodiscard]] std::size_t size() const { return streams_.size(); }
    [[nodiscard]] int device(std::size_t i) const { return devices_[i]; }
    [[nodiscard]] std::span<const core::StreamRef> refs() const { return refs_; }
    [[nodiscard]] core::StreamRef operator[](std::size_t i) const { return refs_[i]; }
    /// Rank 0's stream: samples are gated and timed on it.
    [[nodiscard]] cudaStream_t lead() const { return streams_.front().handle(); }
    /// Makes every other rank's stream wait for `start`, recorded on rank 0's.
    void fork(core::EventRef start) const {
        for (std::size_t i = 1; i < size(); ++i) streams_[i].wait(start);
    }
    /// Makes rank 0's stream wait for all the work enqueued so far on every other rank's.
    void join() const {
        for (std::size_t i = 1; i < size(); ++i) {
            const gpumath::detail::DeviceGuard guard(devices_[i]);  // a record is made on its own device
            streams_[i].record(done_[i]);
            streams_[0].wait(done_[i]);
        }
    }
    void synchronize() const {
        for (const core::Stream& s : streams_) s.synchronize();
    }

private:
    std::vector<int> devices_;
    std::vector<core::Stream> streams_;
    std::vector<core::Event> done_;
    std::vector<core::StreamRef> refs_;
};

/// bench::paired_gpu_ms over every rank: each sample is gated on rank 0's stream, starts on every
/// rank with rank 0's start event (fork) and ends with its end event after every rank's work
/// (join), so that the time is from the first rank's start to the last rank's end.
bench::PairedMs paired_ranks_ms(const RankStreams& r, const Work& a, const Work& b, int warmup, int pairs,
                                int per_sample) {
    per_sample = std::clamp(per_sample, 1, bench::max_gated_calls);
    int call_a = 0, call_b = 0;
    for (int i = 0; i < warmup; ++i) {
        a(call_a++);
        b(call_b++);
    }
    r.synchronize();
    const core::Device lead(r.device(0));
    const core::Event e0 = lead.create_event({.timing = true}), e1 = lead.create_event({.timing = true});
    auto sample = [&](const Work& fn, int& call) {
        bench::StreamGate gate(r.lead());
        r[0].record(e0);
        r.fork(e0);
        for (int k = 0; k < per_sample; ++k) fn(call++);
        r.join();
        r[0].record(e1);
        gate.release();
        e1.synchronize();
        return double(core::Event::elapsed_ms(e0, e1)) / per_sample;
    };
    return bench::interleaved_pairs(
        pairs, [&] { return sample(a, call_a); }, [&] { return sample(b, call_b); });
}

/// bench::compare over every rank: both sides run for `t.burn_seconds` first (loading every GPU
/// either uses), then interleaved samples of about 2 ms. Returns ms per call of raw and of ours
/// (raw's median over the median ratio of the sample pairs).
std::pair<double, double> compare_ranks(const RankStreams& r, const Work& raw, const Work& ours,
                                        const bench::Timing& t) {
    int call = 0;
    for (const auto t0 = std::chrono::steady_clock::now();
         std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < t.burn_seconds;) {
        for (int k = 0; k < 4; ++k) {
            raw(call);
            ours(call++);
        }
        r.synchronize();
    }
    const bench::PairedMs probe = paired_ranks_ms(r, raw, ours, 1, 3, 1);
    const int per =
        std::clamp(int(2.0 / std::max(probe.a, 1e-4)), 1, std::clamp(t.max_per_sample, 1, bench::max_gated_calls));
    int pairs = t.samples * t.rounds;
    if (t.max_seconds > 0) {
        const double pair_ms = per * (probe.a + probe.b);
        pairs = std::clamp(int(t.max_seconds * 1e3 / std::max(pair_ms, 1e-3)), std::min(7, pairs), pairs);
    }
    const bench::PairedMs m = paired_ranks_ms(r, raw, ours, t.warmup, pairs, per);
    return {m.a, m.a / m.ratio};
}

std::string mib_text(std::size_t bytes) {
    return bytes >= (std::size_t(1) << 30) ? std::to_string(bytes >> 30) + " GiB"
                                           : std::to_string(bytes >> 20) + " MiB";
}

std::string fixed(double v, int digits) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

void nccl_check(ncclResult_t s, const char* what) { bench::check_status(s, ncclSuccess, what); }

/// One f32 buffer of `count` elements per rank: the send side random, the receive side filled by
/// the collective.
struct RankVectors {
    std::vector<core::Buffer> send, recv;
    std::vector<TensorView> send_views, recv_views;
};

RankVectors rank_vectors(const RankStreams& r, std::size_t count) {
    RankVectors v;
    const auto n = std::int64_t(count);
    for (std::size_t i = 0; i < r.size(); ++i) {
        const gpumath::detail::DeviceGuard guard(r.device(i));
        v.send.push_back(bench::random_device(DataType::f32, count, 40 + i, r[i].handle(), host_values));
        v.recv.emplace_back(count * 4, r[i]);
        v.send_views.emplace_back(v.send.back().data(), DataType::f32, std::initializer_list<std::int64_t>{n});
        v.recv_views.emplace_back(v.recv.back().data(), DataType::f32, std::initializer_list<std::int64_t>{n});
    }
    r.synchronize();
    return v;
}

/// Raw NCCL: one ncclAllReduce per rank on the communicator's own handles, in a group when there
/// are several ranks (as NCCL requires of one thread driving several GPUs).
void raw_all_reduce(const Communicator& comm, const RankStreams& r, const RankVectors& v, std::size_t count) {
    const gpumath::detail::NcclApi& nccl = gpumath::detail::nccl();
    const bool group = r.size() > 1;
    if (group) nccl_check(nccl.ncclGroupStart(), "ncclGroupStart");
    for (std::size_t i = 0; i < r.size(); ++i) {
        nccl_check(nccl.ncclAllReduce(v.send[i].data(), v.recv[i].data(), count, ncclFloat32, ncclSum,
                                      static_cast<ncclComm_t>(comm.native_handle(int(i))), r[i].handle()),
                   "ncclAllReduce");
    }
    if (group) nccl_check(nccl.ncclGroupEnd(), "ncclGroupEnd");
}

/// f32 sum all-reduce over every GPU, out of place: GPU time and bandwidth of a large and a small
/// one (interleaved gated samples), and host time per call of the small one.
void all_reduce(bench::Reporter& report, const Settings& settings) {
    const std::size_t large = settings.quick ? (std::size_t(64) << 20) : (std::size_t(1) << 30);
    const std::size_t small = std::size_t(1) << 20;
    const int p = core::Device::count();
    const std::string suffix = " p=" + std::to_string(p);
    auto group_of = [&](std::size_t bytes) { return "all_reduce f32 sum " + mib_text(bytes) + suffix; };
    const std::string host_group = group_of(small) + " host time";
    if (!report.selected(group_of(large)) && !report.selected(group_of(small)) && !report.selected(host_group)) return;

    Communicator comm = Communicator::all_devices();
    const RankStreams r(comm);
    std::printf(
        "all_reduce: every GPU (p = %d), f32 sum, out of place, bytes per rank as named; raw = ncclAllReduce per rank "
        "on Communicator::native_handle (grouped when p > 1); algbw = bytes / time, busbw = algbw * 2(p-1)/p (NCCL's "
        "convention), GB = 1e9 B\n",
        p);
    if (p == 1) std::printf("all_reduce: p = 1: NCCL copies send to recv; the ratios show gpumath's overhead\n");

    bench::Timing timing = settings.timing;
    timing.max_per_sample = collective_calls_per_sample;
    for (std::size_t bytes : {large, small}) {
        const std::string group = group_of(bytes);
        if (!report.selected(group)) continue;
        const std::size_t count = bytes / 4;
        const RankVectors v = rank_vectors(r, count);
        const Work raw = [&](int) { raw_all_reduce(comm, r, v, count); };
        const Work ours = [&](int) { comm.all_reduce(v.send_views, v.recv_views, dist::ReduceOp::sum, r.refs()); };
        const auto [raw_ms, ours_ms] = compare_ranks(r, raw, ours, timing);
        const double algbw_raw = double(bytes) / (raw_ms * 1e-3) / 1e9;
        const double algbw_ours = double(bytes) / (ours_ms * 1e-3) / 1e9;
        const double bus = 2.0 * (p - 1) / p;
        const std::string target =
            bytes == large ? "ratio = raw time / gpumath time (target >= 0.98)" : "ratio = raw time / gpumath time";
        report.add({group, "raw ncclAllReduce", "ms", raw_ms, 0, ""});
        report.add({group, "raw ncclAllReduce", "GB/s algbw", algbw_raw, 0, ""});
        if (p > 1) report.add({group, "raw ncclAllReduce", "GB/s busbw", algbw_raw * bus, 0, ""});
        report.add({group, "Communicator", "ms", ours_ms, raw_ms / ours_ms, target});
        report.add({group, "Communicator", "GB/s algbw", algbw_ours, algbw_ours / algbw_raw, ""});
        if (p > 1) report.add({group, "Communicator", "GB/s busbw", algbw_ours * bus, algbw_ours / algbw_raw, ""});
    }

    if (report.selected(host_group)) {
        const std::size_t count = small / 4;
        const RankVectors v = rank_vectors(r, count);
        // Bursts of 16: well inside NCCL's queue, so that the host time is the enqueue's and not a
        // wait for the GPU. Rank 0's stream is drained between bursts (the collective ties the ranks).
        const std::vector<double> us = bench::interleaved_host_us(
            r.lead(),
            {[&](int) { raw_all_reduce(comm, r, v, count); },
             [&](int) { comm.all_reduce(v.send_views, v.recv_views, dist::ReduceOp::sum, r.refs()); }},
            collective_calls_per_sample, settings.quick ? 21 : 151);
        r.synchronize();
        report.add({host_group, "raw ncclAllReduce", "us/call", us[0], 0, "all ranks' calls"});
        report.add({host_group, "Communicator", "us/call", us[1], us[0] / us[1],
                    "delta " + fixed(us[1] - us[0], 2) + " us (argument checks)"});
    }
}

/// The row-parallel linear layer D (M, N) = A (M, K) B (K, N), bf16 in and out.
struct LinearShape {
    std::int64_t m = 0, k = 0, n = 0;
};

/// How a dist::Matmul variant joins the ranks' partial sums.
struct LinearVariant {
    const char* name;
    dist::OutputCollective collective;
    int chunks;
};

constexpr LinearVariant linear_variants[] = {
    {"reduce_scatter", dist::OutputCollective::reduce_scatter, 1},
    {"reduce_scatter c=2", dist::OutputCollective::reduce_scatter, 2},
    {"reduce_scatter c=4", dist::OutputCollective::reduce_scatter, 4},
    {"all_reduce", dist::OutputCollective::all_reduce, 1},
    {"all_reduce c=2", dist::OutputCollective::all_reduce, 2},
    {"all_reduce c=4", dist::OutputCollective::all_reduce, 4},
    {"products only", dist::OutputCollective::none, 1},
};

/// Ranks counts timed: 1, 2, 4, ... below the device count, and the device count.
std::vector<int> rank_counts(int devices) {
    std::vector<int> out;
    for (int p = 1; p < devices; p *= 2) out.push_back(p);
    out.push_back(devices);
    return out;
}

/// One rank's slices A_i (M, K / p), B_i (K / p, N), its partial D (M, N) and its block of the
/// reduce-scatter (M N / p elements).
struct RankLinear {
    core::Buffer a, b, d, scattered;
};

/// One GPU's gpumath::Matmul of the whole product on device 0 against dist::Matmul on the first p
/// GPUs, each variant of linear_variants timed in its own interleaved pairing.
void time_linear(bench::Reporter& report, const Settings& settings, const LinearShape& s, int p,
                 const std::string& group, const std::function<void(core::StreamRef)>& one_gpu, double flops) {
    if (s.k % p != 0 || s.m % p != 0) {
        std::printf("  %-44s skipped: K = %lld or M = %lld does not split over %d ranks\n", group.c_str(),
                    static_cast<long long>(s.k), static_cast<long long>(s.m), p);
        return;
    }
    std::vector<int> devices(static_cast<std::size_t>(p));
    for (int i = 0; i < p; ++i) devices[std::size_t(i)] = i;
    Communicator comm(std::span<const int>(devices.data(), devices.size()));
    const RankStreams r(comm);
    const std::int64_t kl = s.k / p;
    const TensorLayout a_layout(DataType::bf16, {s.m, kl}), b_layout(DataType::bf16, {kl, s.n});
    std::vector<RankLinear> data(static_cast<std::size_t>(p));
    for (std::size_t i = 0; i < r.size(); ++i) {
        const gpumath::detail::DeviceGuard guard(r.device(i));
        const cudaStream_t st = r[i].handle();
        RankLinear& x = data[i];
        x.a = bench::random_device(DataType::bf16, std::size_t(s.m * kl), 60 + 2 * i, st, host_values);
        x.b = bench::random_device(DataType::bf16, std::size_t(kl * s.n), 61 + 2 * i, st, host_values);
        x.d = core::Buffer(std::size_t(s.m * s.n) * 2, r[i]);
        x.scattered = core::Buffer(std::size_t(s.m * s.n / p) * 2, r[i]);
    }
    r.synchronize();

    bench::Timing timing = settings.timing;
    timing.max_per_sample = collective_calls_per_sample;
    const Work single = [&](int) { one_gpu(r[0]); };
    for (const LinearVariant& variant : linear_variants) {
        std::vector<dist::RankOperands> ops;
        for (std::size_t i = 0; i < r.size(); ++i) {
            const RankLinear& x = data[i];
            const TensorView d(x.d.data(), DataType::bf16, {s.m, s.n});
            TensorView out{};
            if (variant.collective == dist::OutputCollective::all_reduce) out = d;  // in place, as Megatron-LM
            if (variant.collective == dist::OutputCollective::reduce_scatter)
                out = TensorView(x.scattered.data(), DataType::bf16, {s.m * s.n / p});
            ops.push_back({TensorView(x.a.data(), a_layout), TensorView(x.b.data(), b_layout), d, out, {}, r[i]});
        }
        try {
            dist::Matmul mm(
                comm, a_layout, b_layout, {},
                {.parallelism = dist::Parallelism::row, .collective = variant.collective, .chunks = variant.chunks});
            mm.plan();
            (void)mm.execute(ops);  // refuses bad operands before the timed samples
            r.synchronize();
            const Work parallel = [&](int) { (void)mm.execute(ops); };
            const auto [one_ms, p_ms] = compare_ranks(r, single, parallel, timing);
            const double efficiency = one_ms / (p * p_ms);
            const std::string note = "ratio = t1 / (p tp), target >= 0.9; 1 GPU " + fixed(one_ms, 3) + " ms (" +
                                     fixed(bench::tflops(flops, one_ms), 0) + " TFLOP/s) in this pairing; speedup " +
                                     fixed(one_ms / p_ms, 2) + "x; " + fixed(bench::tflops(flops, p_ms), 0) +
                                     " TFLOP/s over " + std::to_string(p) + " GPU(s)";
            report.add({group, variant.name, "ms", p_ms, efficiency, note});
        } catch (const InvalidArgument& e) {
            // A variant this shape does not allow (chunks that do not split M evenly, say).
            std::printf("  %-44s %-18s skipped: %s\n", group.c_str(), variant.name, e.what());
        } catch (const NotSupported& e) {
            std::printf("  %-44s %-18s skipped: %s\n", group.c_str(), variant.name, e.what());
        }
    }
}

/// Row-parallel linear layer: M = 8192 tokens, K = 32768 (split over the ranks), N = 8192, bf16.
void row_parallel_linear(bench::Reporter& report, const Settings& settings) {
    const LinearShape s = settings.quick ? LinearShape{4096, 8192, 4096} : LinearShape{8192, 32768, 8192};
    const int devices = core::Device::count();
    const std::string shape_text =
        "M=" + std::to_string(s.m) + " K=" + std::to_string(s.k) + " N=" + std::to_string(s.n);
    auto group_of = [&](int p) { return "row-parallel linear bf16 " + shape_text + " p=" + std::to_string(p); };
    const std::vector<int> counts = rank_counts(devices);
    if (std::none_of(counts.begin(), counts.end(), [&](int p) { return report.selected(group_of(p)); })) return;

    std::printf(
        "row-parallel linear: D (M, N) = A (M, K) B (K, N), bf16 in and out, row-major, %s (M tokens, K the "
        "split dimension, N outputs); 1 GPU = gpumath::Matmul of the whole product on device 0; p GPUs = "
        "dist::Matmul row-parallel on devices 0..p-1, rank i holding A_i (M, K/p) and B_i (K/p, N), timed up to the "
        "last rank's end, collective included (all_reduce in place on D; c = chunks of the pipeline); ratio = "
        "scaling efficiency t1 / (p tp), each variant paired with its own 1-GPU samples\n",
        shape_text.c_str());
    if (devices < 2)
        std::printf(
            "row-parallel linear: scaling needs 2+ GPUs; this machine has %d: p = 1 only (ratio = Matmul time "
            "/ dist::Matmul time, its overhead)\n",
            devices);

    const gpumath::detail::DeviceGuard on_first(0);  // the buffers and the plan live on device 0
    core::Stream home = core::Device(0).create_stream();
    core::Buffer a = bench::random_device(DataType::bf16, std::size_t(s.m * s.k), 50, home.handle(), host_values);
    core::Buffer b = bench::random_device(DataType::bf16, std::size_t(s.k * s.n), 51, home.handle(), host_values);
    core::Buffer d(std::size_t(s.m * s.n) * 2, home);
    home.synchronize();
    const TensorView av(a.data(), DataType::bf16, {s.m, s.k}), bv(b.data(), DataType::bf16, {s.k, s.n}),
        dv(d.data(), DataType::bf16, {s.m, s.n});
    Matmul one(av, bv);
    one.plan();
    const double flops = 2.0 * double(s.m) * double(s.k) * double(s.n);
    const auto one_gpu = [&](core::StreamRef stream) {
        const gpumath::detail::DeviceGuard guard(0);
        (void)one.execute(av, bv, dv, {}, stream);
    };
    for (int p : counts) {
        const std::string group = group_of(p);
        if (report.selected(group)) time_linear(report, settings, s, p, group, one_gpu, flops);
    }
}

/// Copies `bytes` from device memory to the host (blocking).
void cuda_check_copy(void* host, const void* device, std::size_t bytes) {
    bench::cuda_check(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
}

/// A c2c f32 forward FFT of the whole array, in place: one GPU's gpumath::FFT against dist::FFT on
/// the first p GPUs with the data already on them (FFTData). Both enqueue on a stream of device 0
/// and are timed alike: GPU time between events on that stream of one forward and one inverse
/// transform, halved (dist::FFT's stream waits for every device's work, so its end event is the
/// last device's). The samples are not gated: cuFFT Xt may block the host inside a transform across
/// several GPUs, which a held stream would turn into a deadlock. Ratio: t1 / (p tp), target >= 0.8.
void fft_scaling(bench::Reporter& report, const Settings& settings) {
    struct Case {
        const char* name;
        std::vector<std::int64_t> shape;
    };
    const std::int64_t cube = settings.quick ? 256 : 1024;
    const std::int64_t line = settings.quick ? (std::int64_t(1) << 24) : (std::int64_t(1) << 30);
    const std::vector<Case> cases{{"3-D", {cube, cube, cube}}, {"1-D", {line}}};
    const int devices = core::Device::count();
    for (const Case& c : cases) {
        const TensorLayout layout(DataType::c32, c.shape);
        const std::string size_text = c.shape.size() == 3 ? std::to_string(cube) + "^3" : std::to_string(line);
        const auto group_of = [&](int p) {
            return "fft c2c f32 " + std::string(c.name) + " " + size_text + " p=" + std::to_string(p);
        };
        const std::vector<int> counts = rank_counts(devices);
        if (std::none_of(counts.begin(), counts.end(), [&](int p) { return report.selected(group_of(p)); })) continue;
        // One GPU: gpumath::FFT over every axis, in place on device 0, timed as the multi-GPU side
        // is (forward then inverse, normalized, so the values stay bounded over the runs).
        std::vector<std::complex<float>> host(std::size_t(layout.size()));
        double t1 = 0;
        const gpumath::detail::DeviceGuard on_first(0);
        core::Stream stream = core::Device(0).create_stream();
        {
            core::Buffer data =
                bench::random_device(DataType::c32, std::size_t(layout.size()), 70, stream.handle(), host_values);
            stream.synchronize();
            cuda_check_copy(host.data(), data.data(), host.size() * sizeof(host[0]));
            FFTAxes axes;
            if (c.shape.size() == 3) axes = FFTAxes{0, 1, 2};
            FFT one(layout, FFTOptions{.axes = axes, .inplace = true});
            one.plan();
            const TensorView view(data.data(), layout);
            t1 = bench::gpu_ms(
                     stream.handle(),
                     [&](int) {
                         one.execute(view, view, Direction::forward, stream);
                         one.execute(view, view, Direction::inverse, stream);
                     },
                     settings.timing.warmup, settings.timing.samples) /
                 2;
            stream.synchronize();
        }
        // Room for the multi-GPU plans on device 0: the pool keeps freed memory unless trimmed.
        core::release_workspaces();
        core::DeviceMemoryResource::default_resource(0)->trim();
        for (int p : counts) {
            const std::string group = group_of(p);
            if (!report.selected(group)) continue;
            try {
                std::vector<int> list(static_cast<std::size_t>(p));
                for (int i = 0; i < p; ++i) list[std::size_t(i)] = i;
                dist::FFT plan(layout, {.devices = list});
                dist::FFTData on_gpus = plan.allocate();
                on_gpus.copy_from(TensorView(host.data(), layout.dtype(), c.shape));
                // Forward then inverse keeps the data's order what cuFFT Xt expects for the next pair.
                const double tp = bench::gpu_ms(
                                      stream.handle(),
                                      [&](int) {
                                          plan.execute(on_gpus, Direction::forward, stream);
                                          plan.execute(on_gpus, Direction::inverse, stream);
                                      },
                                      settings.timing.warmup, settings.timing.samples) /
                                  2;
                const std::string note = "ratio = t1 / (p tp), target >= 0.8; 1 GPU " + fixed(t1, 3) + " ms; speedup " +
                                         fixed(t1 / tp, 2) +
                                         "x (GPU time on device 0's stream, forward and inverse averaged on both "
                                         "sides, inverse normalized)";
                report.add({group, "dist::FFT", "ms", tp, t1 / (p * tp), note});
            } catch (const Error& e) {
                std::printf("  %-44s %-18s skipped: %s\n", group.c_str(), "dist::FFT", e.what());
            }
        }
    }
}

}  // namespace

int main(int argc, char** argv) try {
    bench::require_gpu("bench_dist");
    bench::Reporter report("bench_dist", argc, argv);
    bench::print_environment("bench_dist");
    int version = 0;
    try {
        version = dist::nccl_version();
    } catch (const NcclError& e) {
        // As on a machine without a GPU: nothing to measure, exit status 0.
        std::printf("bench_dist: NCCL could not be loaded (%s); set GPUMATH_NCCL_LIBRARY to the path of libnccl.so.2\n",
                    e.what());
        return 0;
    }
    const char* nvls = std::getenv("NCCL_NVLS_ENABLE");
    std::printf("%d GPU(s); NCCL %d (loaded at run time); NCCL_NVLS_ENABLE=%s; inputs uniform in (-0.5, 0.5)\n",
                core::Device::count(), version, nvls != nullptr ? nvls : "(unset)");
    Settings settings{.quick = report.quick()};
    settings.timing = settings.quick ? bench::Timing{.warmup = 2, .samples = 7, .rounds = 2, .burn_seconds = 0.2}
                                     : bench::Timing{.warmup = 5, .samples = 21, .rounds = 3, .burn_seconds = 2.0};
    all_reduce(report, settings);
    row_parallel_linear(report, settings);
    fft_scaling(report, settings);
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "bench_dist: %s\n", e.what());
    return 2;
}

#else

int main() {
    std::printf("bench_dist: gpumath was built without its multi-GPU module (nccl.h not found); nothing to measure\n");
    return 0;
}

#endif
