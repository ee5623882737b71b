// SPDX-License-Identifier: Apache-2.0
// Multi-GPU FFTs against gpumath's one-GPU FFT on the same fresh random data (f32: 1e-5 relative):
// c2c 1-D/2-D/3-D, r2c and c2r, each direction and normalization, through the host path, the
// FFTData path (shuffled, then natural order) and the stateless calls; with one device, and with 2
// and all devices where the machine has them. Skips with a reason without a GPU.
#include <gtest/gtest.h>

#include <complex>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <gpumath/core/device.hpp>
#include <gpumath/core/graph.hpp>
#include <gpumath/core/launch.hpp>
#include <gpumath/core/module.hpp>
#include <gpumath/core/program.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/dist/fft.hpp>
#include <gpumath/error.hpp>
#include <gpumath/fft/fft.hpp>
#include <gpumath/tensor.hpp>

#include "common/test_util.hpp"

namespace gpumath {
namespace {

using C = std::complex<float>;
constexpr double tolerance = 1e-5;

std::vector<int> first_devices(int n) {
    std::vector<int> d(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) d[static_cast<std::size_t>(i)] = i;
    return d;
}

// The device lists every test runs on: one device, 2 devices, and all of them (when more than 2
// and `all_ok`, e.g. a power of two for 1-D transforms).
std::vector<std::vector<int>> device_sets(bool all_ok = true) {
    std::vector<std::vector<int>> sets{{0}};
    const int count = core::Device::count();
    if (count >= 2) sets.push_back(first_devices(2));
    if (count > 2 && all_ok) sets.push_back(first_devices(count));
    return sets;
}

std::string text(const std::vector<int>& devices) { return fmt::format("devices [{}]", fmt::join(devices, ", ")); }

std::vector<Normalization> all_normalizations() {
    return {Normalization::backward, Normalization::forward, Normalization::ortho, Normalization::none};
}

FFTAxes all_axes(int rank) {
    if (rank == 1) return {0};
    if (rank == 2) return {0, 1};
    return {0, 1, 2};
}

std::int64_t count_of(const TensorLayout& l) { return l.size(); }

// `host` copied into a new device tensor of `layout` on the current device (device 0).
template <class T>
Tensor to_device(const std::vector<T>& host, const TensorLayout& layout) {
    Tensor t = Tensor::empty(layout);
    EXPECT_EQ(cudaMemcpy(t.view().data(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
    return t;
}

// The one-GPU reference of a transform of `in` (host data of `in_layout`).
template <class Out, class In>
std::vector<Out> reference(FFTKind kind, Direction direction, const std::vector<In>& in, const TensorLayout& in_layout,
                           Normalization norm, std::int64_t last_axis_size = 0) {
    core::Device(0).set_current();
    const Tensor x = to_device(in, in_layout);
    FFTOptions o{.axes = all_axes(in_layout.rank()), .last_axis_size = last_axis_size, .normalization = norm};
    Tensor y;
    switch (kind) {
        case FFTKind::r2c:
            y = gpumath::rfft(x.view(), o);
            break;
        case FFTKind::c2r:
            y = gpumath::irfft(x.view(), o);
            break;
        default:
            y = direction == Direction::forward ? gpumath::fft(x.view(), o) : gpumath::ifft(x.view(), o);
            break;
    }
    return y.template to_host<Out>();
}

// Runs `kind`/`direction` of `in` on `devices` every way the API offers and compares each result with
// `want` (the one-GPU result), within the f32 tolerance.
template <class Out, class In>
void check_all_paths(FFTKind kind, Direction direction, const std::vector<In>& in, const TensorLayout& in_layout,
                     const std::vector<int>& devices, Normalization norm, const std::vector<Out>& want,
                     std::int64_t last_axis_size = 0) {
    SCOPED_TRACE(fmt::format("{} {} {} {} {}", text(devices), to_string(kind), to_string(direction), to_string(norm),
                             to_string(in_layout)));
    const dist::FFTOptions o{.devices = devices, .kind = kind, .normalization = norm, .last_axis_size = last_axis_size};
    dist::FFT plan(in_layout, o);
    const TensorLayout out_layout = plan.output_layout();
    ASSERT_EQ(count_of(out_layout), static_cast<std::int64_t>(want.size()));

    // Host path.
    std::vector<Out> out(want.size(), Out(-7));
    plan.execute(TensorView(in.data(), in_layout), TensorView(out.data(), out_layout), direction);
    EXPECT_LT(test::relative_error(out, want), tolerance) << "host path";
    EXPECT_TRUE(plan.planned());
    EXPECT_EQ(plan.workspace_sizes().size(), devices.size());

    // FFTData path: copy in, transform, read back directly (copy_to reorders) and through to_natural.
    dist::FFTData data = plan.allocate();
    ASSERT_EQ(data.parts(), static_cast<int>(devices.size()));
    for (int i = 0; i < data.parts(); ++i) {
        EXPECT_EQ(data.part(i).device, devices[static_cast<std::size_t>(i)]);
        EXPECT_NE(data.part(i).data, nullptr);
        EXPECT_GT(data.part(i).bytes, 0u);
    }
    data.copy_from(TensorView(in.data(), in_layout));
    if (kind != FFTKind::c2r) {
        EXPECT_EQ(data.order(), dist::DataOrder::natural);
    }
    plan.execute(data, direction);
    if (devices.size() > 1 && kind != FFTKind::c2r) {
        EXPECT_EQ(data.order(), dist::DataOrder::shuffled);
    }
    if (devices.size() == 1) {
        EXPECT_EQ(data.order(), dist::DataOrder::natural);
    }
    std::vector<Out> direct(want.size(), Out(-7));
    data.copy_to(TensorView(direct.data(), out_layout));
    EXPECT_LT(test::relative_error(direct, want), tolerance) << "FFTData copy_to";
    dist::FFTData natural = plan.to_natural(data);
    EXPECT_EQ(natural.order(), dist::DataOrder::natural);
    std::vector<Out> from_natural(want.size(), Out(-7));
    natural.copy_to(TensorView(from_natural.data(), out_layout));
    EXPECT_LT(test::relative_error(from_natural, want), tolerance) << "FFTData to_natural";

    // Stateless, through the cache (twice: a miss, then a hit).
    for (int i = 0; i < 2; ++i) {
        std::vector<Out> stateless(want.size(), Out(-7));
        const TensorView vin(in.data(), in_layout), vout(stateless.data(), out_layout);
        dist::FFTOptions so = o;
        so.kind = FFTKind::automatic;
        switch (kind) {
            case FFTKind::r2c:
                dist::rfft(vin, vout, so);
                break;
            case FFTKind::c2r:
                dist::irfft(vin, vout, so);
                break;
            default:
                if (direction == Direction::forward) dist::fft(vin, vout, so);
                else dist::ifft(vin, vout, so);
                break;
        }
        EXPECT_LT(test::relative_error(stateless, want), tolerance) << "stateless call " << i;
    }
}

TEST(DistFftGpu, SkipsVisiblyWithoutAGpu) {
    GPUMATH_REQUIRE_GPU();
    EXPECT_GE(core::Device::count(), 1);
}

void run_c2c(const std::vector<std::int64_t>& shape, bool all_ok) {
    auto rng = test::rng_for_test();
    const TensorLayout layout(DataType::c32, shape);
    for (const auto& devices : device_sets(all_ok))
        for (const Normalization norm : all_normalizations())
            for (const Direction d : {Direction::forward, Direction::inverse}) {
                const auto in = test::random_vector<C>(static_cast<std::size_t>(layout.size()), rng);
                const auto want = reference<C>(FFTKind::c2c, d, in, layout, norm);
                check_all_paths(FFTKind::c2c, d, in, layout, devices, norm, want);
            }
}

bool is_power_of_two(int v) { return v > 0 && (v & (v - 1)) == 0; }

TEST(DistFftGpu, C2c1dMatchesOneGpu) {
    GPUMATH_REQUIRE_GPU();
    // cuFFT Xt spreads single 1-D transforms over 2, 4, 8 or 16 GPUs, power-of-two lengths.
    const int count = core::Device::count();
    run_c2c({1024}, is_power_of_two(count) && count <= 16);
}

TEST(DistFftGpu, C2c2dMatchesOneGpu) {
    GPUMATH_REQUIRE_GPU();
    run_c2c({64, 48}, true);
}

TEST(DistFftGpu, C2c3dMatchesOneGpu) {
    GPUMATH_REQUIRE_GPU();
    run_c2c({32, 40, 36}, true);
}

TEST(DistFftGpu, C2cOddSizesOnOneDevice) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    for (const auto& shape : std::vector<std::vector<std::int64_t>>{{7}, {5, 3}, {3, 4, 5}}) {
        const TensorLayout layout(DataType::c32, shape);
        const auto in = test::random_vector<C>(static_cast<std::size_t>(layout.size()), rng);
        const auto want = reference<C>(FFTKind::c2c, Direction::inverse, in, layout, Normalization::backward);
        check_all_paths(FFTKind::c2c, Direction::inverse, in, layout, {0}, Normalization::backward, want);
    }
}

void run_r2c(const std::vector<std::int64_t>& shape, bool one_device_only) {
    auto rng = test::rng_for_test();
    const TensorLayout layout(DataType::f32, shape);
    const auto sets = one_device_only ? std::vector<std::vector<int>>{{0}} : device_sets();
    for (const auto& devices : sets)
        for (const Normalization norm : all_normalizations()) {
            const auto in = test::random_vector<float>(static_cast<std::size_t>(layout.size()), rng);
            const auto want = reference<C>(FFTKind::r2c, Direction::forward, in, layout, norm);
            check_all_paths(FFTKind::r2c, Direction::forward, in, layout, devices, norm, want);
        }
}

TEST(DistFftGpu, R2c1dOnOneDevice) {
    GPUMATH_REQUIRE_GPU();
    run_r2c({100}, true);
}

TEST(DistFftGpu, R2c2dMatchesOneGpu) {
    GPUMATH_REQUIRE_GPU();
    run_r2c({64, 50}, false);
}

TEST(DistFftGpu, R2c3dMatchesOneGpu) {
    GPUMATH_REQUIRE_GPU();
    run_r2c({32, 36, 34}, false);
}

// c2r of Hermitian data (the one-GPU rfft of random reals), so that every algorithm agrees.
void run_c2r(const std::vector<std::int64_t>& real_shape, bool one_device_only) {
    auto rng = test::rng_for_test();
    const TensorLayout real_layout(DataType::f32, real_shape);
    std::vector<std::int64_t> half = real_shape;
    half.back() = real_shape.back() / 2 + 1;
    const TensorLayout layout(DataType::c32, half);
    const std::int64_t n = real_shape.back();
    const auto sets = one_device_only ? std::vector<std::vector<int>>{{0}} : device_sets();
    for (const auto& devices : sets)
        for (const Normalization norm : all_normalizations()) {
            const auto real = test::random_vector<float>(static_cast<std::size_t>(real_layout.size()), rng);
            const auto in = reference<C>(FFTKind::r2c, Direction::forward, real, real_layout, Normalization::none);
            const auto want = reference<float>(FFTKind::c2r, Direction::inverse, in, layout, norm, n);
            check_all_paths(FFTKind::c2r, Direction::inverse, in, layout, devices, norm, want, n);
        }
}

TEST(DistFftGpu, C2r1dOnOneDevice) {
    GPUMATH_REQUIRE_GPU();
    run_c2r({99}, true);
}

TEST(DistFftGpu, C2r2dMatchesOneGpu) {
    GPUMATH_REQUIRE_GPU();
    run_c2r({64, 50}, false);
}

TEST(DistFftGpu, C2r3dMatchesOneGpu) {
    GPUMATH_REQUIRE_GPU();
    run_c2r({32, 36, 34}, false);
}

TEST(DistFftGpu, RoundTripRestoresTheInput) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const TensorLayout layout(DataType::c32, {64, 64});
    for (const auto& devices : device_sets()) {
        SCOPED_TRACE(text(devices));
        dist::FFT plan(layout, {.devices = devices});
        const auto in = test::random_vector<C>(static_cast<std::size_t>(layout.size()), rng);
        dist::FFTData data = plan.allocate();
        data.copy_from(TensorView(in.data(), layout));
        plan.execute(data, Direction::forward);
        plan.execute(data, Direction::inverse);  // shuffled in, natural out
        std::vector<C> back(in.size());
        data.copy_to(TensorView(back.data(), layout));
        EXPECT_LT(test::relative_error(back, in), tolerance);
    }
}

// A 1-D transform's output across GPUs is in cuFFT's 1-D factor order; the inverse takes it back.
TEST(DistFftGpu, OneDimensionalRoundTripAcrossGpusRestoresTheInput) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const TensorLayout layout(DataType::c32, {std::int64_t(1) << 12});
    for (const auto& devices : device_sets(core::Device::count() == 4 || core::Device::count() == 8)) {
        SCOPED_TRACE(text(devices));
        dist::FFT plan(layout, {.devices = devices});
        const auto in = test::random_vector<C>(static_cast<std::size_t>(layout.size()), rng);
        const auto want = reference<C>(FFTKind::c2c, Direction::forward, in, layout, Normalization::backward);
        dist::FFTData data = plan.allocate();
        data.copy_from(TensorView(in.data(), layout));
        plan.execute(data, Direction::forward);
        std::vector<C> spectrum(in.size());
        data.copy_to(TensorView(spectrum.data(), layout));
        EXPECT_LT(test::relative_error(spectrum, want), tolerance) << "forward";
        plan.execute(data, Direction::inverse);  // from the forward's order
        std::vector<C> back(in.size());
        data.copy_to(TensorView(back.data(), layout));
        EXPECT_LT(test::relative_error(back, in), tolerance) << "round trip";
    }
}

// New data written through part(i) after a transform: set_order says it is natural again.
TEST(DistFftGpu, SetOrderDeclaresDataWrittenThroughParts) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const TensorLayout layout(DataType::c32, {64, 48});
    for (const auto& devices : device_sets()) {
        if (64 % devices.size() != 0) continue;
        SCOPED_TRACE(text(devices));
        dist::FFT plan(layout, {.devices = devices});
        dist::FFTData data = plan.allocate();
        const auto first = test::random_vector<C>(static_cast<std::size_t>(layout.size()), rng);
        data.copy_from(TensorView(first.data(), layout));
        plan.execute(data, Direction::forward);
        EXPECT_EQ(data.order(), devices.size() > 1 ? dist::DataOrder::shuffled : dist::DataOrder::natural);
        const auto in = test::random_vector<C>(static_cast<std::size_t>(layout.size()), rng);
        const auto want = reference<C>(FFTKind::c2c, Direction::forward, in, layout, Normalization::backward);
        const std::size_t slab = in.size() / devices.size();
        for (int i = 0; i < data.parts(); ++i) {
            const dist::FFTPart p = data.part(i);
            const gpumath::detail::DeviceGuard on(p.device);  // restored even when an assertion returns
            ASSERT_EQ(cudaMemcpy(p.data, in.data() + std::size_t(i) * slab, slab * sizeof(C), cudaMemcpyHostToDevice),
                      cudaSuccess);
        }
        data.set_order(dist::DataOrder::natural);
        EXPECT_EQ(data.order(), dist::DataOrder::natural);
        plan.execute(data, Direction::forward);
        std::vector<C> out(in.size());
        data.copy_to(TensorView(out.data(), layout));
        EXPECT_LT(test::relative_error(out, want), tolerance);
        if (devices.size() == 1) {
            test::expect_throw_with<InvalidArgument>([&] { data.set_order(dist::DataOrder::shuffled); },
                                                     {"order", "one device"});
        }
        test::expect_throw_with<InvalidArgument>([&] { data.set_order(static_cast<dist::DataOrder>(5)); },
                                                 {"order", "5", "natural, shuffled"});
    }
}

// The stateless irfft takes its output length from out's shape, as the one-GPU irfft does.
TEST(DistFftGpu, StatelessIrfftTakesAnOddLengthFromOut) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const TensorLayout real(DataType::f32, {32, 33});
    const auto x = test::random_vector<float>(static_cast<std::size_t>(real.size()), rng);
    const auto spectrum = reference<C>(FFTKind::r2c, Direction::forward, x, real, Normalization::backward);
    const TensorLayout half(DataType::c32, {32, 17});
    for (const auto& devices : device_sets()) {
        SCOPED_TRACE(text(devices));
        std::vector<float> out(x.size(), -7.0f);
        dist::irfft(TensorView(spectrum.data(), half), TensorView(out.data(), real), {.devices = devices});
        EXPECT_LT(test::relative_error(out, x), tolerance);
    }
}

// Data placed on each GPU by the caller (per-GPU buffers): in natural order part i holds the i-th slab
// of the first axis (X divisible by the device count here).
TEST(DistFftGpu, PerGpuPartsHoldNaturalOrderSlabs) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const TensorLayout layout(DataType::c32, {64, 48});
    for (const auto& devices : device_sets()) {
        if (64 % devices.size() != 0) continue;
        SCOPED_TRACE(text(devices));
        const auto in = test::random_vector<C>(static_cast<std::size_t>(layout.size()), rng);
        const auto want = reference<C>(FFTKind::c2c, Direction::forward, in, layout, Normalization::backward);
        dist::FFT plan(layout, {.devices = devices});
        dist::FFTData data = plan.allocate();
        const std::size_t slab = in.size() / devices.size();
        for (int i = 0; i < data.parts(); ++i) {
            const dist::FFTPart p = data.part(i);
            ASSERT_GE(p.bytes, slab * sizeof(C));
            const gpumath::detail::DeviceGuard on(p.device);  // restored even when an assertion returns
            ASSERT_EQ(cudaMemcpy(p.data, in.data() + std::size_t(i) * slab, slab * sizeof(C), cudaMemcpyHostToDevice),
                      cudaSuccess);
        }
        EXPECT_EQ(data.order(), dist::DataOrder::natural);
        plan.execute(data, Direction::forward);
        dist::FFTData natural = plan.to_natural(data);
        std::vector<C> out(in.size());
        for (int i = 0; i < natural.parts(); ++i) {
            const dist::FFTPart p = natural.part(i);
            const gpumath::detail::DeviceGuard on(p.device);  // restored even when an assertion returns
            ASSERT_EQ(cudaMemcpy(out.data() + std::size_t(i) * slab, p.data, slab * sizeof(C), cudaMemcpyDeviceToHost),
                      cudaSuccess);
        }
        EXPECT_LT(test::relative_error(out, want), tolerance);
    }
}

TEST(DistFftGpu, DataOfAnotherPlanAndMovedFromObjectsAreRefused) {
    GPUMATH_REQUIRE_GPU();
    const TensorLayout layout(DataType::c32, {64, 64});
    dist::FFT a(layout, {.devices = {0}});
    dist::FFT b(layout, {.devices = {0}});
    dist::FFTData data = a.allocate();
    test::expect_throw_with<InvalidArgument>([&] { b.execute(data, Direction::forward); },
                                             {"gpumath::dist::FFT::execute", "data", "another dist::FFT plan"});
    test::expect_throw_with<InvalidArgument>([&] { (void)b.to_natural(data); }, {"src", "another"});
    dist::FFTData moved = std::move(data);
    EXPECT_EQ(data.parts(), 0);  // NOLINT(bugprone-use-after-move): the moved-from state
    test::expect_throw_with<InvalidArgument>([&] { a.execute(data, Direction::forward); }, {"FFTData", "moved"});
    test::expect_throw_with<InvalidArgument>([&] { (void)data.order(); }, {"FFTData", "moved"});
    test::expect_throw_with<InvalidArgument>([&] { (void)moved.part(1); }, {"part 1", "1 part"});
    std::vector<float> wrong(64 * 64);
    test::expect_throw_with<InvalidArgument>(
        [&] {
            moved.copy_from(TensorView(wrong.data(), {64, 64}));
        },
        {"host", "f32"});
    dist::FFT c(std::move(a));
    test::expect_throw_with<InvalidArgument>([&] { (void)a.allocate(); }, {"FFT", "moved"});  // NOLINT
    EXPECT_TRUE(a.devices().empty());                                                         // NOLINT
    EXPECT_EQ(c.devices().size(), 1u);
    // The data keeps its plan's cuFFT state: usable through the plan it moved to.
    c.execute(moved, Direction::forward);
    // The stream form checks the same, and a moved-from plan, before looking at the stream.
    core::Stream stream;
    test::expect_throw_with<InvalidArgument>([&] { a.execute(moved, Direction::forward, stream); },  // NOLINT
                                             {"FFT", "moved"});
    test::expect_throw_with<InvalidArgument>([&] { c.execute(data, Direction::forward, stream); },  // NOLINT
                                             {"FFTData", "moved"});
    test::expect_throw_with<InvalidArgument>([&] { b.execute(moved, Direction::forward, stream); },
                                             {"data", "another dist::FFT plan"});
    c.execute(moved, Direction::inverse, stream);
    stream.synchronize();
}

// A kernel that keeps `stream` busy for `cycles` clock cycles (about half a second for 10^9).
void delay(core::StreamRef stream, long long cycles) {
    static const core::Module module(core::Program(R"(
extern "C" __global__ void gm_test_spin(long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) {}
})")
                                         .compile(core::CodeType::cubin));
    static const core::Kernel spin = module.kernel("gm_test_spin");
    core::launch(stream, {.grid = 1, .block = 1}, spin, cycles);
}

constexpr long long long_delay = 1'000'000'000;

TEST(DistFftGpu, ExecuteOnAStreamReturnsBeforeTheWorkAndMatchesOnceSynchronized) {
    GPUMATH_REQUIRE_GPU();
    core::Device(0).set_current();
    auto rng = test::rng_for_test();
    const TensorLayout layout(DataType::c32, {128, 256});
    const auto in = test::random_vector<C>(static_cast<std::size_t>(layout.size()), rng);
    // The inverse under the default (backward) normalization: the scale runs after cuFFT.
    const auto want = reference<C>(FFTKind::c2c, Direction::inverse, in, layout, Normalization::backward);
    dist::FFT plan(layout, {.devices = {0}});
    dist::FFTData data = plan.allocate();
    core::Stream stream(core::StreamOptions{.non_blocking = true});
    for (const bool synchronize_first : {true, false}) {
        SCOPED_TRACE(synchronize_first ? "stream synchronized, then copy_to" : "copy_to at once (it waits)");
        data.copy_from(TensorView(in.data(), layout));
        delay(stream, long_delay);
        plan.execute(data, Direction::inverse, stream);
        EXPECT_FALSE(stream.ready()) << "execute waited for the device";
        if (synchronize_first) stream.synchronize();
        std::vector<C> out(want.size(), C(-7));
        data.copy_to(TensorView(out.data(), layout));
        EXPECT_LT(test::relative_error(out, want), tolerance);
    }
    // The default stream still works as before: execute, then the (waiting) copy.
    data.copy_from(TensorView(in.data(), layout));
    plan.execute(data, Direction::inverse);
    std::vector<C> out(want.size(), C(-7));
    data.copy_to(TensorView(out.data(), layout));
    EXPECT_LT(test::relative_error(out, want), tolerance) << "default stream";
}

TEST(DistFftGpu, ExecutionsOfOnePlanOnTwoStreamsRunSideBySide) {
    GPUMATH_REQUIRE_GPU();
    core::Device(0).set_current();
    auto rng = test::rng_for_test();
    const TensorLayout layout(DataType::c32, {3 * 5 * 7, 11 * 13});  // several kernels with a work area
    const auto x = test::random_vector<C>(static_cast<std::size_t>(layout.size()), rng);
    const auto y = test::random_vector<C>(static_cast<std::size_t>(layout.size()), rng);
    const auto want_x = reference<C>(FFTKind::c2c, Direction::forward, x, layout, Normalization::ortho);
    const auto want_y = reference<C>(FFTKind::c2c, Direction::forward, y, layout, Normalization::ortho);
    dist::FFT plan(layout, {.devices = {0}, .normalization = Normalization::ortho});
    dist::FFTData dx = plan.allocate(), dy = plan.allocate();
    dx.copy_from(TensorView(x.data(), layout));
    dy.copy_from(TensorView(y.data(), layout));
    core::Stream s1(core::StreamOptions{.non_blocking = true}), s2(core::StreamOptions{.non_blocking = true});
    delay(s1, long_delay);
    plan.execute(dx, Direction::forward, s1);
    plan.execute(dy, Direction::forward, s2);  // its own work area: not behind s1's delay
    s2.synchronize();
    EXPECT_FALSE(s1.ready()) << "the second stream's execution waited for the first's";
    std::vector<C> out_x(want_x.size(), C(-7)), out_y(want_y.size(), C(-7));
    dy.copy_to(TensorView(out_y.data(), layout));
    dx.copy_to(TensorView(out_x.data(), layout));
    EXPECT_LT(test::relative_error(out_x, want_x), tolerance);
    EXPECT_LT(test::relative_error(out_y, want_y), tolerance);
}

TEST(DistFftGpu, AOneDeviceExecuteCapturedIntoAGraphReplays) {
    GPUMATH_REQUIRE_GPU();
    core::Device(0).set_current();
    auto rng = test::rng_for_test();
    const TensorLayout layout(DataType::c32, {64, 96});
    const auto in = test::random_vector<C>(static_cast<std::size_t>(layout.size()), rng);
    const auto want = reference<C>(FFTKind::c2c, Direction::forward, in, layout, Normalization::ortho);
    std::optional<dist::FFT> plan(std::in_place, layout,
                                  dist::FFTOptions{.devices = {0}, .normalization = Normalization::ortho});
    dist::FFTData data = plan->allocate();
    core::Stream stream;
    const core::Graph graph =
        core::Graph::capture(stream, [&](core::StreamRef s) { plan->execute(data, Direction::forward, s); });
    plan.reset();  // the graph and the data keep the plan's cuFFT state
    for (int replay = 0; replay < 2; ++replay) {
        data.copy_from(TensorView(in.data(), layout));
        graph.launch(stream);
        stream.synchronize();  // a replay is not an execution copy_to knows of
        std::vector<C> out(want.size(), C(-7));
        data.copy_to(TensorView(out.data(), layout));
        EXPECT_LT(test::relative_error(out, want), tolerance) << "replay " << replay;
    }
}

TEST(DistFftGpu, AnExecuteAcrossGpusRefusesACapturingStreamBeforeEnqueueing) {
    GPUMATH_REQUIRE_GPU();
    if (core::Device::count() < 2) GTEST_SKIP() << "needs 2 GPUs (a one-device plan may be captured)";
    const TensorLayout layout(DataType::c32, {64, 64});
    dist::FFT plan(layout, {.devices = {0, 1}});
    dist::FFTData data = plan.allocate();
    core::Device(0).set_current();
    core::Stream stream;
    const core::Graph graph = core::Graph::capture(stream, [&](core::StreamRef s) {
        test::expect_throw_with<InvalidArgument>([&] { plan.execute(data, Direction::forward, s); },
                                                 {"gpumath::dist::FFT::execute", "stream: is capturing"});
    });
    EXPECT_EQ(graph.node_count(), 0U) << "nothing was enqueued";
}

TEST(DistFftGpu, DeviceMemoryGivenToTheHostPathIsRefusedBeforeAnyCopy) {
    GPUMATH_REQUIRE_GPU();
    const TensorLayout real(DataType::f32, {32, 64});
    const TensorLayout spectrum(DataType::c32, {32, 33});
    core::Buffer on_device = core::Device(0).allocate(std::size_t(32 * 64 * 8));
    std::vector<std::complex<float>> host(32 * 33);
    // An r2c input would be padded row by row on the host: read from device memory, a crash.
    test::expect_throw_with<InvalidArgument>(
        [&] {
            dist::rfft(TensorView(on_device.data(), real), TensorView(host.data(), {32, 33}), {.devices = {0}});
        },
        {"in", "memory of device 0", "FFTData"});
    std::vector<float> host_real(32 * 64);
    test::expect_throw_with<InvalidArgument>(
        [&] {
            dist::rfft(TensorView(host_real.data(), {32, 64}), TensorView(on_device.data(), spectrum),
                       {.devices = {0}});
        },
        {"out", "memory of device 0"});
}

}  // namespace
}  // namespace gpumath
