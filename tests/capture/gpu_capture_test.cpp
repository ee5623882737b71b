// SPDX-License-Identifier: Apache-2.0
// gpumath work under CUDA graph capture: every entry point replays what it computes eagerly
// (bitwise), captured work never shares scratch memory with eager work or other graphs (replays on
// other streams run concurrently with eager calls), capture/instantiate/destroy cycles do not grow
// device memory, and what cannot run inside a capture says so before touching the stream.
#include <gtest/gtest.h>

#include <chrono>
#include <complex>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>

#include <gpumath/core.hpp>
#include "core/graph_holds.hpp"
#include "core/stream_workspace.hpp"
#include <gpumath/fft.hpp>
#include <gpumath/fft/plan_cache.hpp>
#include <gpumath/matmul.hpp>
#include <gpumath/matmul/plan_cache.hpp>

#include "common/test_util.hpp"

using namespace gpumath;
using gpumath::test::expect_throw_with;
using c32 = std::complex<float>;

namespace {

// A product large enough that cuBLASLt's algorithms may use workspace, small enough to check
// against a host reference quickly.
constexpr std::int64_t M = 192, N = 160, K = 256;

std::vector<float> reference_product(const std::vector<float>& a, const std::vector<float>& b) {
    std::vector<float> d(std::size_t(M * N));
    for (std::int64_t i = 0; i < M; ++i)
        for (std::int64_t j = 0; j < N; ++j) {
            double s = 0;
            for (std::int64_t k = 0; k < K; ++k)
                s += double(a[std::size_t(i * K + k)]) * double(b[std::size_t(k * N + j)]);
            d[std::size_t(i * N + j)] = float(s);
        }
    return d;
}

// An FFT length with several prime factors, batched: cuFFT runs it in several kernels with a work
// area, so captured and eager executions would race if they shared one.
constexpr std::int64_t fft_n = 3 * 5 * 7 * 11 * 13, fft_batch = 16;

std::vector<c32> naive_dft_row(const std::vector<c32>& x, std::int64_t row, std::int64_t bins) {
    std::vector<c32> out(static_cast<std::size_t>(bins));
    for (std::int64_t k = 0; k < bins; ++k) {
        std::complex<double> s = 0;
        for (std::int64_t j = 0; j < fft_n; ++j)
            s += std::complex<double>(x[std::size_t(row * fft_n + j)]) *
                 std::polar(1.0, -2.0 * M_PI * double((j * k) % fft_n) / double(fft_n));
        out[std::size_t(k)] = c32(s);
    }
    return out;
}

void fill_poison(core::StreamRef stream, Tensor& t) {
    ASSERT_EQ(cudaMemsetAsync(t.data(), 0xFF, std::size_t(t.view().span_bytes()), stream.handle()), cudaSuccess);
}

template <class T>
bool bitwise_equal(const std::vector<T>& x, const std::vector<T>& y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0;
}

std::size_t free_device_memory() {
    std::size_t free = 0, total = 0;
    EXPECT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
    return free;
}

/// Waits (up to 5 s) until CUDA has released every graph's workspace areas.
detail::CaptureAreaStats settled_capture_areas() {
    detail::CaptureAreaStats s = detail::capture_area_stats(core::Device::current().ordinal());
    for (int i = 0; i < 500 && s.idle != s.areas; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        s = detail::capture_area_stats(core::Device::current().ordinal());
    }
    return s;
}

struct Data {
    std::vector<float> a, b;
    std::vector<c32> x;
};

Data make_data(std::mt19937_64& rng) {
    return {test::random_vector<float>(std::size_t(M * K), rng), test::random_vector<float>(std::size_t(K * N), rng),
            test::random_vector<c32>(std::size_t(fft_n * fft_batch), rng)};
}

// The inputs on the device: A, B and the FFT's input.
struct Inputs {
    Tensor a, b, x;
};

Inputs upload(const Data& h, core::StreamRef stream) {
    return {Tensor::from_host(h.a, {M, K}, stream), Tensor::from_host(h.b, {K, N}, stream),
            Tensor::from_host(h.x, {fft_batch, fft_n}, stream)};
}

}  // namespace

TEST(CaptureGpu, EveryEntryPointReplaysItsEagerResultBitwise) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const Data h = make_data(rng);
    core::Stream stream;
    Inputs in = upload(h, stream);
    Tensor &a = in.a, &b = in.b, &x = in.x;
    Tensor d_eager = Tensor::empty(DataType::f32, {M, N}, stream),
           d_graph = Tensor::empty(DataType::f32, {M, N}, stream);
    Tensor d2_eager = Tensor::empty(DataType::f32, {M, N}, stream),
           d2_graph = Tensor::empty(DataType::f32, {M, N}, stream);
    Tensor y_eager = Tensor::empty(DataType::c32, {fft_batch, fft_n}, stream);
    Tensor y_graph = Tensor::empty(DataType::c32, {fft_batch, fft_n}, stream);
    Tensor z_eager = Tensor::empty(DataType::c32, {fft_batch, fft_n}, stream);
    Tensor z_graph = Tensor::empty(DataType::c32, {fft_batch, fft_n}, stream);

    // A fresh Matmul plans inside the capture (host-only work); the FFT plan is made before it.
    Matmul mm(a.view(), b.view());
    FFT plan(x.view());
    plan.plan();
    gpumath::fft(x.view(), z_eager.view(), {}, stream);  // puts the stateless plan in the cache

    for (Tensor* t : {&d_graph, &d2_graph, &y_graph, &z_graph}) fill_poison(stream, *t);
    core::Graph g = core::Graph::capture(stream, [&](core::StreamRef s) {
        mm.execute(a.view(), b.view(), d_graph.view(), {}, s);
        matmul(a.view(), b.view(), d2_graph.view(), {}, {}, s);
        plan.execute(x.view(), y_graph.view(), Direction::forward, s);
        gpumath::fft(x.view(), z_graph.view(), {}, s);
    });
    EXPECT_GE(g.node_count(), 4u);
    // The FFT of this length needs a work area: the captured executions took a graph-owned one.
    EXPECT_GE(detail::capture_area_stats(core::Device::current().ordinal()).areas, 1u);
    // Nothing ran during the capture: the outputs still hold the poison.
    EXPECT_TRUE(std::isnan(d_graph.to_host<float>(stream)[0]));
    g.launch(stream);

    mm.execute(a.view(), b.view(), d_eager.view(), {}, stream);
    matmul(a.view(), b.view(), d2_eager.view(), {}, {}, stream);
    plan.execute(x.view(), y_eager.view(), Direction::forward, stream);
    gpumath::fft(x.view(), z_eager.view(), {}, stream);

    const auto want = reference_product(h.a, h.b);
    const auto dg = d_graph.to_host<float>(stream);
    EXPECT_LT(test::relative_error(dg, want), 1e-5);
    EXPECT_TRUE(bitwise_equal(dg, d_eager.to_host<float>(stream)));
    EXPECT_TRUE(bitwise_equal(d2_graph.to_host<float>(stream), d2_eager.to_host<float>(stream)));
    const auto yg = y_graph.to_host<c32>(stream);
    const auto row = naive_dft_row(h.x, 3, 64);
    EXPECT_LT(test::relative_error(std::vector<c32>(yg.begin() + 3 * fft_n, yg.begin() + 3 * fft_n + 64), row), 1e-4);
    EXPECT_TRUE(bitwise_equal(yg, y_eager.to_host<c32>(stream)));
    EXPECT_TRUE(bitwise_equal(z_graph.to_host<c32>(stream), z_eager.to_host<c32>(stream)));
    EXPECT_TRUE(bitwise_equal(yg, z_graph.to_host<c32>(stream)));
}

TEST(CaptureGpu, ReplaysOnOtherStreamsRunBesideEagerCallsWithoutSharingWorkspace) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const Data h1 = make_data(rng), h2 = make_data(rng);
    core::Stream capture_stream, other1, other2;
    Tensor a1 = Tensor::from_host(h1.a, {M, K}, capture_stream), b1 = Tensor::from_host(h1.b, {K, N}, capture_stream);
    Tensor a2 = Tensor::from_host(h2.a, {M, K}, capture_stream), b2 = Tensor::from_host(h2.b, {K, N}, capture_stream);
    Tensor x1 = Tensor::from_host(h1.x, {fft_batch, fft_n}, capture_stream);
    Tensor x2 = Tensor::from_host(h2.x, {fft_batch, fft_n}, capture_stream);
    auto f32_out = [&] { return Tensor::empty(DataType::f32, {M, N}, capture_stream); };
    auto c32_out = [&] { return Tensor::empty(DataType::c32, {fft_batch, fft_n}, capture_stream); };
    Tensor dg1 = f32_out(), dg2 = f32_out(), de = f32_out(), yg1 = c32_out(), yg2 = c32_out(), ye = c32_out();

    Matmul mm(a1.view(), b1.view());
    FFT plan(x1.view());
    plan.plan();
    mm.execute(a2.view(), b2.view(), de.view(), {}, capture_stream);  // eager areas exist before capture
    capture_stream.synchronize();

    // Two graphs captured on one stream, each over its own inputs.
    core::Graph g1 = core::Graph::capture(capture_stream, [&](core::StreamRef s) {
        mm.execute(a1.view(), b1.view(), dg1.view(), {}, s);
        plan.execute(x1.view(), yg1.view(), Direction::forward, s);
    });
    core::Graph g2 = core::Graph::capture(capture_stream, [&](core::StreamRef s) {
        mm.execute(a2.view(), b2.view(), dg2.view(), {}, s);
        plan.execute(x2.view(), yg2.view(), Direction::forward, s);
    });

    // Serial results first.
    g1.launch(capture_stream);
    g2.launch(capture_stream);
    const auto d1_serial = dg1.to_host<float>(capture_stream), d2_serial = dg2.to_host<float>(capture_stream);
    const auto y1_serial = yg1.to_host<c32>(capture_stream), y2_serial = yg2.to_host<c32>(capture_stream);
    EXPECT_LT(test::relative_error(d1_serial, reference_product(h1.a, h1.b)), 1e-5);

    // Now the replays run on two other streams while eager calls run on the capture stream, over and
    // over; every result must match the serial one bit for bit.
    capture_stream.synchronize();
    for (int round = 0; round < 20; ++round) {
        for (int i = 0; i < 5; ++i) {
            g1.launch(other1);
            g2.launch(other2);
            mm.execute(a1.view(), b1.view(), de.view(), {}, capture_stream);
            plan.execute(x2.view(), ye.view(), Direction::forward, capture_stream);
        }
    }
    other1.synchronize();
    other2.synchronize();
    EXPECT_TRUE(bitwise_equal(dg1.to_host<float>(other1), d1_serial));
    EXPECT_TRUE(bitwise_equal(dg2.to_host<float>(other2), d2_serial));
    EXPECT_TRUE(bitwise_equal(yg1.to_host<c32>(other1), y1_serial));
    EXPECT_TRUE(bitwise_equal(yg2.to_host<c32>(other2), y2_serial));
    EXPECT_TRUE(bitwise_equal(de.to_host<float>(capture_stream), d1_serial));
    EXPECT_TRUE(bitwise_equal(ye.to_host<c32>(capture_stream), y2_serial));
}

/// Waits (up to 5 s) until gpumath's release thread has dropped everything CUDA released.
detail::GraphHoldStats settled_holds() {
    detail::GraphHoldStats s = detail::graph_hold_stats();
    for (int i = 0; i < 500 && s.dropped != s.held; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        s = detail::graph_hold_stats();
    }
    return s;
}

constexpr const char* k_add_one = R"(extern "C" __global__ void add_one(float* v, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] += 1.0f;
})";

// A graph replays correctly after everything its nodes use was destroyed by the caller: the
// module of a launched kernel, a Matmul, FFT plans (one with callback kernels of its own) and the
// cached plans of stateless calls. The graph holds them; they are dropped when it is destroyed.
TEST(CaptureGpu, GraphsKeepTheCodeAndPlansTheyUseAlive) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const Data h = make_data(rng);
    core::Stream stream;
    Inputs in = upload(h, stream);
    Tensor &a = in.a, &b = in.b, &x = in.x;
    Tensor d1 = Tensor::empty(DataType::f32, {M, N}, stream), d2 = Tensor::empty(DataType::f32, {M, N}, stream);
    std::vector<Tensor> y;
    for (int i = 0; i < 3; ++i) y.push_back(Tensor::empty(DataType::c32, {fft_batch, fft_n}, stream));
    constexpr int n = 1000;
    Tensor v = Tensor::from_host(std::vector<float>(n, 0.0f), {n}, stream);

    const detail::GraphHoldStats before = settled_holds();
    std::optional<core::Graph> g;
    {
        const core::Module module(core::Program(k_add_one).compile(core::CodeType::cubin));
        const core::Kernel add_one = module.kernel("add_one");
        Matmul mm(a.view(), b.view());
        FFT plan(x.view());
        FFTOptions twice{.callback_mode = CallbackMode::separate};
        twice.epilog = {.source =
                            "#include <cufftXt.h>\n"
                            "__device__ void twice(void* data, unsigned long long offset, cufftComplex e, "
                            "void*, void*) {\n    e.x *= 2.0f; e.y *= 2.0f;\n"
                            "    static_cast<cufftComplex*>(data)[offset] = e;\n}\n",
                        .symbol = "twice"};
        FFT doubled(x.view(), twice);
        plan.plan();
        doubled.plan();
        matmul(a.view(), b.view(), d2.view(), {}, {}, stream);  // puts the stateless plans in the caches
        gpumath::fft(x.view(), y[2].view(), {}, stream);
        stream.synchronize();
        g.emplace(core::Graph::capture(stream, [&](core::StreamRef s) {
            for (int i = 0; i < 10; ++i) core::launch(s, {.grid = (n + 255) / 256, .block = 256}, add_one, v.data(), n);
            mm.execute(a.view(), b.view(), d1.view(), {}, s);
            matmul(a.view(), b.view(), d2.view(), {}, {}, s);
            plan.execute(x.view(), y[0].view(), Direction::forward, s);
            doubled.execute(x.view(), y[1].view(), Direction::forward, s);
            gpumath::fft(x.view(), y[2].view(), {}, s);
        }));
        // The module once (not once per launch), the three FFT plans and the callback kernels'
        // module; gpumath's own pass kernels may add a hold each, ten launches of one kernel not.
        const std::size_t held = detail::graph_hold_stats().held - before.held;
        EXPECT_GE(held, 5U);
        EXPECT_LE(held, 7U);
    }
    fft_plan_cache().clear();
    matmul_plan_cache().clear();
    for (Tensor* t : {&d1, &d2, &y[0], &y[1], &y[2]}) fill_poison(stream, *t);
    for (int replay = 0; replay < 2; ++replay) g->launch(stream);

    EXPECT_EQ(v.to_host<float>(stream), std::vector<float>(n, 20.0f));
    const auto want = reference_product(h.a, h.b);
    EXPECT_LT(test::relative_error(d1.to_host<float>(stream), want), 1e-5);
    EXPECT_LT(test::relative_error(d2.to_host<float>(stream), want), 1e-5);
    const auto y0 = y[0].to_host<c32>(stream);
    const auto row = naive_dft_row(h.x, 5, 64);
    EXPECT_LT(test::relative_error(std::vector<c32>(y0.begin() + 5 * fft_n, y0.begin() + 5 * fft_n + 64), row), 1e-4);
    std::vector<c32> y0_twice = y0;
    for (c32& e : y0_twice) e *= 2.0f;
    EXPECT_LT(test::relative_error(y[1].to_host<c32>(stream), y0_twice), 1e-6);
    EXPECT_TRUE(bitwise_equal(y[2].to_host<c32>(stream), y0));

    g.reset();
    const detail::GraphHoldStats after = settled_holds();
    EXPECT_EQ(after.held, after.dropped) << "held " << after.held << ", released by CUDA " << after.released;
    EXPECT_EQ(after.released, after.held);
}

TEST(CaptureGpu, ThousandCaptureCyclesDoNotGrowDeviceMemory) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const Data h = make_data(rng);
    core::Stream stream;
    Inputs in = upload(h, stream);
    Tensor &a = in.a, &b = in.b, &x = in.x;
    Tensor d = Tensor::empty(DataType::f32, {M, N}, stream),
           y = Tensor::empty(DataType::c32, {fft_batch, fft_n}, stream);
    Matmul mm(a.view(), b.view());
    FFT plan(x.view());
    plan.plan();
    auto cycle = [&] {
        core::Graph g = core::Graph::capture(stream, [&](core::StreamRef s) {
            mm.execute(a.view(), b.view(), d.view(), {}, s);
            plan.execute(x.view(), y.view(), Direction::forward, s);
            matmul(a.view(), b.view(), d.view(), {}, {}, s);
        });
        g.launch(stream);
        stream.synchronize();
    };
    for (int i = 0; i < 20; ++i) cycle();
    const detail::CaptureAreaStats warm = settled_capture_areas();
    const std::size_t free_before = free_device_memory();
    for (int i = 0; i < 1000; ++i) cycle();
    const detail::CaptureAreaStats after = settled_capture_areas();
    // Areas are recycled once CUDA releases the user object of their destroyed graph, which it does
    // on a thread of its own some time later: a tight loop of captures may run a few cycles ahead of
    // it (the areas it adds are idle once counted), but never needs an area per cycle.
    EXPECT_LE(after.areas, warm.areas + 32) << "capture areas: " << warm.areas << " -> " << after.areas;
    EXPECT_EQ(after.idle, after.areas);
    // Idle areas are memory gpumath holds, not leaks: release_workspaces() gives every one back.
    core::release_workspaces();
    EXPECT_EQ(detail::capture_area_stats(core::Device::current().ordinal()).areas, 0U);
    const std::size_t free_after = free_device_memory();
    const double grown = double(free_before) - double(free_after);
    EXPECT_LT(grown, double(std::size_t(32) << 20)) << "device memory in use grew by " << grown << " bytes";
    const auto want = reference_product(h.a, h.b);
    EXPECT_LT(test::relative_error(d.to_host<float>(stream), want), 1e-5);
}

TEST(CaptureGpu, WhatCannotRunInACaptureSaysSoAndLeavesTheCaptureIntact) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const Data h = make_data(rng);
    core::Stream stream;
    Inputs in = upload(h, stream);
    Tensor &a = in.a, &b = in.b, &x = in.x;
    Tensor d = Tensor::empty(DataType::f32, {M, N}, stream),
           y = Tensor::empty(DataType::c32, {fft_batch, fft_n}, stream);
    stream.synchronize();
    Matmul mm(a.view(), b.view());
    FFT unplanned(x.view());
    core::Graph g = core::Graph::capture(stream, [&](core::StreamRef s) {
        expect_throw_with<InvalidArgument>([&] { mm.autotune(a.view(), b.view(), d.view(), {}, s); },
                                           {"Matmul::autotune", "capturing", "before the capture"});
        expect_throw_with<InvalidArgument>([&] { (void)mm.execute(a.view(), b.view(), {}, s); },
                                           {"capturing", "pass d"});
        expect_throw_with<InvalidArgument>([&] { (void)matmul(a.view(), b.view(), {}, {}, s); },
                                           {"capturing", "pass d"});
        // Bad input is reported as such first, before the capture is even looked at.
        expect_throw_with<InvalidArgument>([&] { (void)matmul(a.view(), b.view(), {}, {.epilog = Epilog::bias}, s); },
                                           {"bias"});
        expect_throw_with<InvalidArgument>([&] { (void)mm.execute(a.view(), b.view(), {.bias = a.view()}, s); },
                                           {"bias"});
        expect_throw_with<InvalidArgument>([&] { unplanned.execute(x.view(), y.view(), Direction::forward, s); },
                                           {"capturing", "plan"});
        expect_throw_with<InvalidArgument>([&] { (void)gpumath::fft(x.view(), {}, s); }, {"capturing"});
        // The capture is still valid: work after the refusals is captured and replays.
        mm.execute(a.view(), b.view(), d.view(), {}, s);
    });
    g.launch(stream);
    EXPECT_LT(test::relative_error(d.to_host<float>(stream), reference_product(h.a, h.b)), 1e-5);
    EXPECT_FALSE(unplanned.planned());
}

// Plans an FFT builds lazily after plan() (the other direction of a fused plan, the variant for a
// real operand at an odd element offset) are planning too: refused inside a capture, before any
// cuFFT call, and the capture stays usable. So is a stateless call whose plan is not cached yet.
TEST(CaptureGpu, LazyPlansAndCacheMissesAreRefusedInsideACapture) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    core::Stream stream;
    const auto hx = test::random_vector<c32>(3 * 256, rng);
    Tensor x = Tensor::from_host(hx, {3, 256}, stream), y = Tensor::empty(DataType::c32, {3, 256}, stream);
    FFT fused(x.view(), {.callback_mode = CallbackMode::fused});
    fused.plan();  // plans the forward direction only

    const auto hr = test::random_vector<float>(2 * 513 + 1, rng);
    Tensor real = Tensor::from_host(hr, {2 * 513 + 1}, stream);
    Tensor spectrum = Tensor::empty(DataType::c32, {2, 257}, stream);
    const TensorView aligned(real.data(), DataType::f32, {2, 512});
    const TensorView odd(static_cast<float*>(real.data()) + 1, {2, 512});
    gpumath::rfft(aligned, spectrum.view(), {}, stream);  // caches the plan for aligned operands
    stream.synchronize();

    Tensor d = Tensor::empty(DataType::c32, {5, 96}, stream);
    const auto hz = test::random_vector<c32>(5 * 96, rng);
    Tensor z = Tensor::from_host(hz, {5, 96}, stream);
    stream.synchronize();
    core::Graph g = core::Graph::capture(stream, [&](core::StreamRef s) {
        expect_throw_with<InvalidArgument>([&] { fused.execute(y.view(), x.view(), Direction::inverse, s); },
                                           {"capturing", "plan"});
        expect_throw_with<InvalidArgument>([&] { gpumath::rfft(odd, spectrum.view(), {}, s); }, {"capturing"});
        expect_throw_with<InvalidArgument>([&] { gpumath::fft(z.view(), d.view(), {}, s); },
                                           {"capturing", "once before the capture"});
        fused.execute(x.view(), y.view(), Direction::forward, s);  // planned: captured
    });
    g.launch(stream);
    const auto got = y.to_host<c32>(stream);
    // Row 1 of the forward transform, bin 3, against the definition.
    std::complex<double> want = 0;
    for (int j = 0; j < 256; ++j)
        want += std::complex<double>(hx[std::size_t(256 + j)]) * std::polar(1.0, -2.0 * M_PI * double(3 * j) / 256.0);
    EXPECT_LT(std::abs(std::complex<double>(got[256 + 3]) - want), 1e-3 * std::abs(want) + 1e-3);
}

// Idle areas are freed by core::release_workspaces(); areas of live graphs are not, so a graph captured
// before the release replays correctly after it.
TEST(CaptureGpu, ReleasingWorkspacesKeepsTheAreasOfLiveGraphs) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const Data h = make_data(rng);
    core::Stream stream;
    Tensor x = Tensor::from_host(h.x, {fft_batch, fft_n}, stream);
    Tensor y = Tensor::empty(DataType::c32, {fft_batch, fft_n}, stream);
    Tensor want = Tensor::empty(DataType::c32, {fft_batch, fft_n}, stream);
    FFT plan(x.view());
    plan.plan();
    plan.execute(x.view(), want.view(), Direction::forward, stream);
    const std::size_t areas_before = detail::capture_area_stats(core::Device::current().ordinal()).areas;
    core::Graph g = core::Graph::capture(
        stream, [&](core::StreamRef s) { plan.execute(x.view(), y.view(), Direction::forward, s); });
    const detail::CaptureAreaStats during = detail::capture_area_stats(core::Device::current().ordinal());
    // The capture used a graph-owned area (a new one, or an idle one taken back into use).
    EXPECT_GE(during.areas, std::max<std::size_t>(areas_before, 1));
    EXPECT_LT(during.idle, during.areas);
    core::release_workspaces();
    fill_poison(stream, y);
    g.launch(stream);
    EXPECT_TRUE(bitwise_equal(y.to_host<c32>(stream), want.to_host<c32>(stream)));
}
