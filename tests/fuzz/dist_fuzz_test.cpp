// SPDX-License-Identifier: Apache-2.0
// Random hostile input for the multi-GPU module's validators: collectives (counts, dtypes, strides,
// overlapping and misaligned views, ranks, roots, out-of-range ReduceOp values, streams and memory
// of the wrong device) through the checks every Communicator call runs, with stand-in CUDA lookups;
// tensor-parallel product rules (layouts, epilogs, out-of-range Parallelism and OutputCollective
// values, chunk counts, rank counts); dist::FFT plans (device lists with repeats, negative or
// huge ordinals, ranks, dtypes, kinds, normalizations, c2r lengths); and the host-array free
// functions dist::fft/ifft/rfft/irfft (in and out layouts, r2c/c2r partners, views that alias,
// misaligned and null pointers, out-of-range kinds). Accepted outcomes as in
// validation_fuzz_test.cpp: passes validation, or an InvalidArgument / NotSupported naming what
// was wrong. Nothing here reaches a GPU, so it runs on every machine (the free functions' target
// only where there is no GPU: a call that passes would copy through fake pointers).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include <gpumath/dist/fft.hpp>
#include <gpumath/dist/matmul.hpp>

#include "common/test_util.hpp"
#include "dist/collective_checks.hpp"
#include "dist/matmul_checks.hpp"
#include "fuzz/fuzz_util.hpp"

using namespace gpumath;
using namespace gpumath::test::fuzz;
namespace d = gpumath::detail;

namespace {

// Fuzzer::pointer puts slot s at (s + 1) << 32: the stand-in memory of slot s is on device s % 4,
// managed for slots that are multiples of 7; a pointer below 2^32 (null) is host memory.
d::PointerPlace fake_pointer(const void* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    if (a < (std::uintptr_t(1) << 32)) return {-1, false};
    const auto slot = std::int64_t(a >> 32) - 1;
    return {int(slot % 4), slot % 7 == 0};
}
int fake_stream_device(core::StreamRef s) { return int(reinterpret_cast<std::uintptr_t>(s.handle()) % 16) - 8; }
int fake_compute_major(int device) { return device == 3 ? 8 : 9; }
constexpr d::CollectiveLookups fakes{&fake_pointer, &fake_stream_device, &fake_compute_major};

core::StreamRef fake_stream(Fuzzer& fz, int device) {
    if (fz.chance(30)) return core::StreamRef{};
    const int dev = fz.hostile(20) ? fz.below(4) : device;
    return core::StreamRef(reinterpret_cast<cudaStream_t>(std::uintptr_t(0x1000 + 8 + dev)));
}

}  // namespace

TEST(ValidationFuzz, DistCollectives) {
    const std::uint64_t seed = fuzz_seed() + 11;
    Fuzzer fz(seed);
    Tally t;
    const int n = iterations(4000);
    for (int i = 0; i < n; ++i) {
        fz.next_call();
        (void)classify("dist collective", i, t, [&] {
            const int local = 1 + fz.below(3);
            const int size = fz.hostile(10) ? fz.below(3) : local * (1 + fz.below(2));
            std::vector<d::LocalRank> ranks;
            for (int r = 0; r < local; ++r) ranks.push_back({r, fz.hostile(10) ? fz.below(4) : r});
            const auto kind = static_cast<d::Collective>(fz.below(4));
            const TensorLayout base = fz.layout(fz.hostile(30) ? -1 : 1);
            std::vector<TensorView> send, recv;
            std::vector<core::StreamRef> streams;
            const int views = fz.hostile(10) ? local + 1 : local;
            for (int r = 0; r < views; ++r) {
                const TensorLayout s = fz.hostile(20) ? fz.layout() : base;
                // Slots 4r + device keep a rank's memory on its device unless hostile.
                const int slot = 4 * (r + 1) + ranks[std::size_t(r % local)].device;
                send.push_back(fz.view(slot, s));
                const std::int64_t count = kind == d::Collective::all_gather       ? times(s.size(), std::max(size, 1))
                                           : kind == d::Collective::reduce_scatter ? s.size() / std::max(size, 1)
                                                                                   : s.size();
                // One element too many (too few where the count is already INT64_MAX).
                const std::int64_t extent = !fz.hostile(20)                                    ? count
                                            : count < std::numeric_limits<std::int64_t>::max() ? count + 1
                                                                                               : count - 1;
                const TensorLayout rl = fz.hostile(10) ? fz.layout() : TensorLayout(s.dtype(), {extent});
                recv.push_back(fz.hostile(10) ? send.back() : fz.view(slot + 4 * 16, rl));
                streams.push_back(fake_stream(fz, ranks[std::size_t(r % local)].device));
            }
            if (fz.hostile(10)) streams.pop_back();
            const auto op = fz.enum_value<dist::ReduceOp>(dist::reduce_op_count);
            const int root = fz.hostile(20) ? size + fz.below(3) : fz.below(std::max(size, 1));
            const int version = fz.hostile(20) ? 21900 : 22803;
            const d::CheckedCollective c = d::check_collective({kind, send, recv, streams, op, root}, size, ranks,
                                                               version, fakes, "Communicator::collective");
            // What passes must be what NCCL can run: one count per rank, within size_t.
            EXPECT_LE(c.count, std::size_t(1) << 62);
        });
    }
    report("dist collective", seed, n, t);
    EXPECT_GT(t.passed, 0);
    EXPECT_GT(t.rejected, n / 10);
}

TEST(ValidationFuzz, DistParallelProducts) {
    const std::uint64_t seed = fuzz_seed() + 12;
    Fuzzer fz(seed);
    Tally t;
    const int n = iterations(4000);
    for (int i = 0; i < n; ++i) {
        fz.next_call();
        (void)classify("dist matmul", i, t, [&] {
            const TensorLayout a = fz.layout(fz.hostile(20) ? -1 : 2);
            // A tame b multiplies a; a hostile one is any layout.
            const TensorLayout b = fz.hostile(30) || a.rank() != 2 ? fz.layout(fz.hostile(20) ? -1 : 2)
                                                                   : TensorLayout(a.dtype(), {a.shape(1), fz.extent()});
            MatmulOptions o;
            o.epilog = fz.enum_value<Epilog>(16);
            dist::ParallelOptions p;
            p.parallelism = fz.enum_value<dist::Parallelism>(dist::parallelism_count);
            p.collective = fz.enum_value<dist::OutputCollective>(dist::output_collective_count);
            static constexpr std::array<int, 8> chunks{1, 1, 2, 3, 4, 0, 65, -1};
            p.chunks = fz.hostile(30) ? fz.pick(chunks) : 1 + fz.below(4);
            const int size = fz.hostile(10) ? -fz.below(2) : 1 + fz.below(8);
            const d::ParallelShape s = d::check_parallel(a, b, fz.chance(20), o, p, size, "dist::Matmul");
            EXPECT_GE(s.last_rows, s.m == 0 ? 0 : 1);  // an empty product has no rows to chunk
            EXPECT_LE(s.last_rows, s.chunk_rows);
            EXPECT_EQ(s.chunk_rows * (p.chunks - 1) + s.last_rows, s.m);
        });
    }
    report("dist matmul", seed, n, t);
    EXPECT_GT(t.passed, 0);
    EXPECT_GT(t.rejected, n / 10);
}

TEST(ValidationFuzz, DistFftPlans) {
    const std::uint64_t seed = fuzz_seed() + 13;
    Fuzzer fz(seed);
    Tally t;
    const int n = iterations(4000);
    for (int i = 0; i < n; ++i) {
        fz.next_call();
        (void)classify("dist fft", i, t, [&] {
            dist::FFTOptions o;
            const int count = fz.hostile(10) ? (fz.chance(50) ? 0 : 17 + fz.below(4)) : 1 + fz.below(4);
            for (int k = 0; k < count; ++k) {
                int device = k;
                if (fz.hostile(10)) device = -1 - fz.below(3);
                if (fz.hostile(10)) device = k > 0 ? o.devices.back() : 0;
                if (fz.hostile(5)) device = 1 << 30;
                o.devices.push_back(device);
            }
            o.kind = fz.enum_value<FFTKind>(4);
            o.normalization = fz.enum_value<Normalization>(4);
            if (fz.chance(20)) o.last_axis_size = fz.hostile(30) ? -fz.below(3) : fz.extent();
            const dist::FFT plan(fz.layout(fz.hostile(20) ? -1 : 1 + fz.below(3)), o);
            EXPECT_FALSE(plan.planned());
        });
    }
    report("dist fft", seed, n, t);
    EXPECT_GT(t.rejected, n / 10);
}

TEST(ValidationFuzz, DistFftFunctions) {
    // The free functions copy host arrays onto the devices once validation passes: only where there
    // is no device (fake host pointers).
    if (test::has_gpu()) GTEST_SKIP() << "a GPU is present: calls that pass validation would copy fake pointers";
    const std::uint64_t seed = fuzz_seed() + 14;
    Fuzzer fz(seed);
    Tally t;
    const int n = iterations(4000) / 2;
    for (int i = 0; i < n; ++i) {
        fz.next_call();
        (void)classify("dist fft functions", i, t, [&] {
            dist::FFTOptions o;
            const int count = fz.hostile(10) ? 0 : 1 + fz.below(3);
            for (int k = 0; k < count; ++k) o.devices.push_back(fz.hostile(10) ? -1 : k);
            if (fz.chance(30)) o.kind = fz.enum_value<FFTKind>(4);
            o.normalization = fz.enum_value<Normalization>(4);
            if (fz.chance(20)) o.last_axis_size = fz.hostile(30) ? -fz.below(3) : fz.extent();
            const TensorLayout in = fz.layout(fz.hostile(20) ? -1 : 1 + fz.below(3));
            TensorLayout out = in;
            if (fz.chance(50) && in.rank() > 0) {
                // The r2c/c2r partner of `in`: the last axis n/2 + 1 long, complex or real.
                std::vector<std::int64_t> shape(in.shape().begin(), in.shape().end());
                shape.back() = fz.chance(50) ? shape.back() / 2 + 1 : std::max<std::int64_t>(2 * (shape.back() - 1), 0);
                static constexpr std::array<DataType, 4> types{DataType::c32, DataType::f32, DataType::c64,
                                                               DataType::f64};
                out = TensorLayout(fz.chance(80) ? fz.pick(types) : fz.dtype(), std::span<const std::int64_t>(shape));
            } else if (fz.chance(30)) {
                out = fz.layout(in.rank());
            }
            const TensorView iv = fz.view(1, in);
            const TensorView ov = fz.chance(20) ? iv : fz.view(2, out);
            switch (fz.below(4)) {
                case 0:
                    dist::fft(iv, ov, o);
                    break;
                case 1:
                    dist::ifft(iv, ov, o);
                    break;
                case 2:
                    dist::rfft(iv, ov, o);
                    break;
                default:
                    dist::irfft(iv, ov, o);
            }
        });
    }
    report("dist fft functions", seed, n, t);
    EXPECT_GT(t.rejected, n / 10);
}
