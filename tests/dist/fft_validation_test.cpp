// SPDX-License-Identifier: Apache-2.0
// Multi-GPU FFT validation on any machine: every rule that needs no GPU (device list, kind and dtype,
// rank, layout, sizes cuFFT Xt refuses for the number of devices), the device-range check (every
// ordinal is out of range without a driver), moved-from objects and the plan cache's controls.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include <gpumath/core/device.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/dist/fft.hpp>
#include <gpumath/error.hpp>

#include <gpumath/core/object_code.hpp>
#include <gpumath/core/program.hpp>

#include "dist/fft_problem.hpp"
#include "dist/fft_scale.hpp"
#include "fft/geometry.hpp"

namespace gpumath {
namespace {

using dist::detail::check_direction;
using dist::detail::check_host_view;
using dist::detail::FftProblem;
using dist::detail::make_fft_problem_host;

// Runs `f`, expects exception E whose message contains every one of `needles`.
template <class E, class F>
void expect_throw(F&& f, std::initializer_list<std::string> needles) {
    try {
        f();
        FAIL() << "no exception";
    } catch (const E& e) {
        const std::string what = e.what();
        for (const std::string& n : needles) EXPECT_NE(what.find(n), std::string::npos) << "message: " << what;
    } catch (const std::exception& e) {
        FAIL() << "wrong exception type: " << e.what();
    }
}

FftProblem host_problem(const TensorLayout& in, const dist::FFTOptions& o, FFTKind forced = FFTKind::automatic) {
    return make_fft_problem_host(in, o, forced, "test");
}

// ---------------------------------------------------------------------------------------------
// Devices

TEST(DistFftValidation, EmptyDeviceListIsRefusedNamingTheField) {
    expect_throw<InvalidArgument>([] { (void)host_problem(TensorLayout(DataType::c32, {64}), {}); },
                                  {"options.devices", "empty"});
}

TEST(DistFftValidation, NegativeDeviceIsRefused) {
    expect_throw<InvalidArgument>(
        [] {
            (void)host_problem(TensorLayout(DataType::c32, {64}), {.devices = {0, -3}});
        },
        {"options.devices", "-3", "negative"});
}

TEST(DistFftValidation, RepeatedDeviceIsRefused) {
    expect_throw<InvalidArgument>(
        [] {
            (void)host_problem(TensorLayout(DataType::c32, {64, 64}), {.devices = {1, 0, 1}});
        },
        {"options.devices", "device 1 is repeated", "indices 0 and 2"});
}

TEST(DistFftValidation, MoreThanSixteenDevicesAreNotSupported) {
    std::vector<int> many(17);
    for (int i = 0; i < 17; ++i) many[std::size_t(i)] = i;
    expect_throw<NotSupported>(
        [&] {
            (void)host_problem(TensorLayout(DataType::c32, {64, 64}), {.devices = many});
        },
        {"options.devices", "17 devices", "at most 16"});
    // A hostile list (all repeats) is refused by its length at once, not searched.
    const std::vector<int> hostile(1'000'000, 0);
    expect_throw<NotSupported>(
        [&] {
            (void)host_problem(TensorLayout(DataType::c32, {64, 64}), {.devices = hostile});
        },
        {"1000000 devices"});
}

TEST(DistFftValidation, DeviceOutOfRangeIsInvalidArgument) {
    expect_throw<InvalidArgument>(
        [] {
            dist::detail::check_device_range({0, 1, 5}, 2, "test");
        },
        {"options.devices", "device 5", "index 2", "2 CUDA devices"});
    expect_throw<InvalidArgument>([] { dist::detail::check_device_range({0}, 0, "test"); },
                                  {"options.devices", "device 0", "no driver or no device"});
    EXPECT_NO_THROW(dist::detail::check_device_range({1, 0}, 2, "test"));
}

TEST(DistFftValidation, ConstructorChecksTheRangeAfterTheShapeRules) {
    const int count = core::Device::count();
    const int beyond = count + 3;
    // A valid shape on a device past the machine's: the range check refuses it.
    expect_throw<InvalidArgument>(
        [&] {
            dist::FFT plan(TensorLayout(DataType::c32, {64, 64}), {.devices = {beyond}});
        },
        {"gpumath::dist::FFT", "options.devices", std::to_string(beyond), "out of range"});
    // A bad dtype is reported first, whatever the devices.
    expect_throw<InvalidArgument>(
        [&] {
            dist::FFT plan(TensorLayout(DataType::i32, {64, 64}), {.devices = {beyond}});
        },
        {"input", "i32"});
}

// ---------------------------------------------------------------------------------------------
// Kind, dtype, rank, layout

TEST(DistFftValidation, KindFollowsTheDtype) {
    EXPECT_EQ(host_problem(TensorLayout(DataType::c32, {8}), {.devices = {0}}).kind, FFTKind::c2c);
    EXPECT_EQ(host_problem(TensorLayout(DataType::f64, {8}), {.devices = {0}}).kind, FFTKind::r2c);
    const FftProblem p = host_problem(TensorLayout(DataType::c64, {8, 5}), {.devices = {0}, .kind = FFTKind::c2r});
    EXPECT_EQ(p.kind, FFTKind::c2r);
    EXPECT_EQ(p.precision, DataType::f64);
    EXPECT_EQ(p.out_layout, TensorLayout(DataType::f64, {8, 8}));
    EXPECT_EQ(p.n_total, 64);
}

TEST(DistFftValidation, DtypeNotAllowedForTheKind) {
    expect_throw<InvalidArgument>(
        [] { (void)host_problem(TensorLayout(DataType::f32, {64}), {.devices = {0}, .kind = FFTKind::c2c}); },
        {"input", "f32 is real", "c2c"});
    expect_throw<InvalidArgument>(
        [] { (void)host_problem(TensorLayout(DataType::c32, {64}), {.devices = {0}, .kind = FFTKind::r2c}); },
        {"input", "c32 is complex"});
    expect_throw<InvalidArgument>(
        [] { (void)host_problem(TensorLayout(DataType::f64, {64}), {.devices = {0}, .kind = FFTKind::c2r}); },
        {"input", "f64 is real", "c2r"});
    expect_throw<InvalidArgument>([] { (void)host_problem(TensorLayout(DataType::i8, {64}), {.devices = {0}}); },
                                  {"input", "i8", "c32/c64"});
    expect_throw<NotSupported>([] { (void)host_problem(TensorLayout(DataType::f16, {64}), {.devices = {0}}); },
                               {"input", "f16", "half-precision"});
}

TEST(DistFftValidation, KindContradictingTheFunction) {
    expect_throw<InvalidArgument>(
        [] {
            (void)host_problem(TensorLayout(DataType::c32, {64}), {.devices = {0}, .kind = FFTKind::c2r}, FFTKind::c2c);
        },
        {"options.kind", "c2r given", "computes c2c"});
}

TEST(DistFftValidation, EnumsOutsideTheirEnumerators) {
    expect_throw<InvalidArgument>(
        [] {
            (void)host_problem(TensorLayout(DataType::c32, {64}), {.devices = {0}, .kind = static_cast<FFTKind>(9)});
        },
        {"options.kind", "9", "FFTKind"});
    expect_throw<InvalidArgument>(
        [] {
            (void)host_problem(TensorLayout(DataType::c32, {64}),
                               {.devices = {0}, .normalization = static_cast<Normalization>(7)});
        },
        {"options.normalization", "7"});
    const FftProblem p = host_problem(TensorLayout(DataType::f32, {64}), {.devices = {0}});
    expect_throw<InvalidArgument>([&] { check_direction(p, static_cast<Direction>(5), "test"); }, {"direction", "5"});
    expect_throw<InvalidArgument>([&] { check_direction(p, Direction::inverse, "test"); },
                                  {"direction", "inverse", "r2c", "forward only"});
    EXPECT_NO_THROW(check_direction(p, Direction::forward, "test"));
}

TEST(DistFftValidation, RankOutsideOneToThree) {
    expect_throw<InvalidArgument>([] { (void)host_problem(TensorLayout(DataType::c32, {}), {.devices = {0}}); },
                                  {"input", "rank 0"});
    expect_throw<InvalidArgument>(
        [] {
            (void)host_problem(TensorLayout(DataType::c32, {2, 64, 64, 64}), {.devices = {0}});
        },
        {"input", "rank 4", "no batch"});
}

TEST(DistFftValidation, NonDenseOrNonRowMajorInput) {
    expect_throw<InvalidArgument>(
        [] {
            (void)host_problem(TensorLayout(DataType::c32, {64, 64}, {1, 64}), {.devices = {0}});
        },
        {"input", "strides", "dense row-major"});
    expect_throw<InvalidArgument>(
        [] {
            (void)host_problem(TensorLayout(DataType::c32, {64, 64}, {128, 1}), {.devices = {0}});
        },
        {"input", "(128, 1)"});
    expect_throw<InvalidArgument>(
        [] {
            (void)host_problem(TensorLayout(DataType::c32, {64, 0}), {.devices = {0}});
        },
        {"input", "extent 0", "axis 1"});
    expect_throw<NotSupported>(
        [] { (void)host_problem(TensorLayout(DataType::c32, {std::int64_t(1) << 32}), {.devices = {0}}); },
        {"input", "4294967296"});
}

TEST(DistFftValidation, LastAxisSize) {
    const FftProblem odd =
        host_problem(TensorLayout(DataType::c32, {4, 5}), {.devices = {0}, .kind = FFTKind::c2r, .last_axis_size = 9});
    EXPECT_EQ(odd.n[1], 9);
    EXPECT_EQ(odd.out_layout, TensorLayout(DataType::f32, {4, 9}));
    EXPECT_EQ(odd.stored_row_reals(), 10);
    expect_throw<InvalidArgument>(
        [] {
            (void)host_problem(TensorLayout(DataType::c32, {4, 5}),
                               {.devices = {0}, .kind = FFTKind::c2r, .last_axis_size = 12});
        },
        {"options.last_axis_size", "12", "8 and 9"});
    expect_throw<InvalidArgument>(
        [] {
            (void)host_problem(TensorLayout(DataType::c32, {4, 5}), {.devices = {0}, .last_axis_size = 8});
        },
        {"options.last_axis_size", "c2c"});
    expect_throw<InvalidArgument>(
        [] {
            (void)host_problem(TensorLayout(DataType::c32, {4, 5}),
                               {.devices = {0}, .kind = FFTKind::c2r, .last_axis_size = -2});
        },
        {"options.last_axis_size", "negative"});
    expect_throw<InvalidArgument>(
        [] {
            (void)host_problem(TensorLayout(DataType::c32, {4, 1}), {.devices = {0}, .kind = FFTKind::c2r});
        },
        {"2 * (m - 1) = 0"});
}

TEST(DistFftValidation, TheOneGpuValidationDecidesKindLengthsAndOutput) {
    // dist::FFT validates through the fft module: its problem is the one-GPU problem of every axis.
    struct Case {
        TensorLayout in;
        FFTKind kind;
        std::int64_t last_axis_size;
    };
    for (const Case& c : {Case{TensorLayout(DataType::c32, {8, 6}), FFTKind::automatic, 0},
                          Case{TensorLayout(DataType::f64, {4, 6, 10}), FFTKind::automatic, 0},
                          Case{TensorLayout(DataType::c64, {3, 5}), FFTKind::c2r, 9},
                          Case{TensorLayout(DataType::c32, {7}), FFTKind::c2r, 0}}) {
        const FftProblem p = host_problem(c.in, {.devices = {0}, .kind = c.kind, .last_axis_size = c.last_axis_size});
        std::vector<int> axes(std::size_t(c.in.rank()));
        for (int i = 0; i < c.in.rank(); ++i) axes[std::size_t(i)] = i;
        const detail::FftProblem one = detail::make_fft_problem(
            c.in, nullptr,
            {.axes = FFTAxes(std::span<const int>(axes)), .kind = c.kind, .last_axis_size = c.last_axis_size},
            FFTKind::automatic, "test");
        EXPECT_EQ(p.kind, one.kind);
        EXPECT_EQ(p.precision, one.precision);
        EXPECT_EQ(p.naxes, c.in.rank());
        EXPECT_EQ(p.n, one.n);
        EXPECT_EQ(p.n_total, one.n_total);
        EXPECT_EQ(p.out_layout, one.out_layout);
    }
    // The one-GPU messages, with cuFFT Xt's types.
    expect_throw<InvalidArgument>(
        [] { (void)host_problem(TensorLayout(DataType::f32, {64}), {.devices = {0}, .kind = FFTKind::c2c}); },
        {"complex-to-complex (c2c)", "(c32 or c64)"});
    expect_throw<InvalidArgument>(
        [] { (void)host_problem(TensorLayout(DataType::c32, {64}), {.devices = {0}, .kind = FFTKind::r2c}); },
        {"real input (f32 or f64)"});
}

// ---------------------------------------------------------------------------------------------
// Sizes cuFFT Xt refuses for the number of devices

TEST(DistFftValidation, OneDeviceTakesAnySize) {
    for (const std::int64_t n : {1, 3, 7, 100, 1000}) {
        const FftProblem p = host_problem(TensorLayout(DataType::c32, {n}), {.devices = {0}});
        EXPECT_EQ(p.n_total, n);
    }
    EXPECT_EQ(host_problem(TensorLayout(DataType::f32, {5}), {.devices = {2}}).out_layout,
              TensorLayout(DataType::c32, {3}));
}

TEST(DistFftValidation, OneDimensionalAcrossGpusNeedsPowerOfTwoC2c) {
    EXPECT_EQ(host_problem(TensorLayout(DataType::c32, {64}), {.devices = {0, 1}}).n_total, 64);
    EXPECT_EQ(host_problem(TensorLayout(DataType::c64, {1024}), {.devices = {0, 1, 2, 3, 4, 5, 6, 7}}).n_total, 1024);
    expect_throw<NotSupported>(
        [] {
            (void)host_problem(TensorLayout(DataType::c32, {96}), {.devices = {0, 1}});
        },
        {"input", "96", "power of two"});
    expect_throw<NotSupported>(
        [] {
            (void)host_problem(TensorLayout(DataType::c32, {32}), {.devices = {0, 1}});
        },
        {"input", "32", "at least 64"});
    expect_throw<NotSupported>(
        [] {
            (void)host_problem(TensorLayout(DataType::c32, {64}), {.devices = {0, 1, 2, 3, 4, 5, 6, 7}});
        },
        {"at least 128"});
    expect_throw<NotSupported>(
        [] {
            (void)host_problem(TensorLayout(DataType::c32, {1024}), {.devices = {0, 1, 2}});
        },
        {"options.devices", "3 devices", "2, 4, 8 or 16"});
    expect_throw<NotSupported>(
        [] {
            (void)host_problem(TensorLayout(DataType::f32, {1024}), {.devices = {0, 1}});
        },
        {"1-D r2c", "2 GPUs"});
    expect_throw<NotSupported>(
        [] {
            (void)host_problem(TensorLayout(DataType::c32, {513}), {.devices = {0, 1}, .kind = FFTKind::c2r});
        },
        {"1-D c2r"});
}

TEST(DistFftValidation, MultiDimensionalAcrossGpusNeedsThirtyTwoPerAxis) {
    EXPECT_EQ(host_problem(TensorLayout(DataType::c32, {32, 40}), {.devices = {0, 1, 2}}).n_total, 32 * 40);
    EXPECT_EQ(host_problem(TensorLayout(DataType::f32, {33, 32, 64}), {.devices = {1, 0}}).out_layout,
              TensorLayout(DataType::c32, {33, 32, 33}));
    expect_throw<NotSupported>(
        [] {
            (void)host_problem(TensorLayout(DataType::c32, {64, 16}), {.devices = {0, 1}});
        },
        {"input", "length 16 along axis 1", "at least 32"});
    // c2r: the output length counts (here 2 * (17 - 1) = 32 passes, 31 would not).
    EXPECT_EQ(host_problem(TensorLayout(DataType::c32, {32, 17}), {.devices = {0, 1}, .kind = FFTKind::c2r}).n[1], 32);
    expect_throw<NotSupported>(
        [] {
            (void)host_problem(TensorLayout(DataType::c32, {32, 16}),
                               {.devices = {0, 1}, .kind = FFTKind::c2r, .last_axis_size = 31});
        },
        {"length 31 along axis 1"});
}

// ---------------------------------------------------------------------------------------------
// Host views, normalization, stored sizes

TEST(DistFftValidation, HostViewsMustMatchThePlan) {
    const FftProblem p = host_problem(TensorLayout(DataType::f32, {4, 6}), {.devices = {0}});
    std::vector<float> real(24);
    std::vector<std::complex<float>> spectrum(16);
    EXPECT_EQ(check_host_view(p, TensorView(real.data(), {4, 6}), 0, "in", "test"), 0);
    EXPECT_EQ(check_host_view(p, TensorView(spectrum.data(), {4, 4}), 1, "out", "test"), 1);
    EXPECT_EQ(check_host_view(p, TensorView(spectrum.data(), {4, 4}), -1, "host", "test"), 1);
    expect_throw<InvalidArgument>(
        [&] {
            (void)check_host_view(p, TensorView(spectrum.data(), {4, 4}), 0, "in", "test");
        },
        {"in", "c32", "input"});
    expect_throw<InvalidArgument>(
        [&] {
            (void)check_host_view(p, TensorView(real.data(), {6, 4}), 0, "in", "test");
        },
        {"in", "(6, 4)"});
    expect_throw<InvalidArgument>(
        [&] {
            (void)check_host_view(p, TensorView(real.data(), {4, 6}, {1, 4}), 0, "in", "test");
        },
        {"in"});
    expect_throw<InvalidArgument>(
        [&] {
            (void)check_host_view(p, TensorView(static_cast<float*>(nullptr), {4, 6}), 0, "in", "test");
        },
        {"in", "null"});
    expect_throw<InvalidArgument>(
        [&] {
            auto* odd = reinterpret_cast<float*>(reinterpret_cast<char*>(real.data()) + 2);
            (void)check_host_view(p, TensorView(odd, {4, 6}), 0, "in", "test");
        },
        {"in", "not aligned"});
}

TEST(DistFftValidation, NormalizationMatchesTheOneGpuRules) {
    dist::FFTOptions o{.devices = {0}};
    o.normalization = Normalization::backward;
    FftProblem p = host_problem(TensorLayout(DataType::c32, {8, 2}), o);
    EXPECT_DOUBLE_EQ(dist::detail::fft_scale(p, Direction::forward), 1.0);
    EXPECT_DOUBLE_EQ(dist::detail::fft_scale(p, Direction::inverse), 1.0 / 16);
    o.normalization = Normalization::forward;
    p = host_problem(TensorLayout(DataType::c32, {8, 2}), o);
    EXPECT_DOUBLE_EQ(dist::detail::fft_scale(p, Direction::forward), 1.0 / 16);
    EXPECT_DOUBLE_EQ(dist::detail::fft_scale(p, Direction::inverse), 1.0);
    o.normalization = Normalization::ortho;
    p = host_problem(TensorLayout(DataType::c32, {8, 2}), o);
    EXPECT_DOUBLE_EQ(dist::detail::fft_scale(p, Direction::inverse), 0.25);
    o.normalization = Normalization::none;
    p = host_problem(TensorLayout(DataType::c32, {8, 2}), o);
    EXPECT_DOUBLE_EQ(dist::detail::fft_scale(p, Direction::inverse), 1.0);
    // c2r: n counts the output lengths.
    p = host_problem(TensorLayout(DataType::c32, {3, 5}), {.devices = {0}, .kind = FFTKind::c2r});
    EXPECT_DOUBLE_EQ(dist::detail::fft_scale(p, Direction::inverse), 1.0 / 24);
}

TEST(DistFftValidation, StoredBytesIncludeTheInPlacePadding) {
    EXPECT_EQ(host_problem(TensorLayout(DataType::c32, {4, 6}), {.devices = {0}}).stored_bytes(), 4u * 6 * 8);
    EXPECT_EQ(host_problem(TensorLayout(DataType::f32, {4, 6}), {.devices = {0}}).stored_bytes(), 4u * 8 * 4);
    EXPECT_EQ(host_problem(TensorLayout(DataType::f64, {3, 4, 7}), {.devices = {0}}).stored_bytes(), 12u * 8 * 8);
}

// ---------------------------------------------------------------------------------------------
// The stream of an execution

// Stand-in streams whose device is written in their handle, and whether they capture (device + 8).
core::StreamRef stream_of(int device, bool capturing = false) {
    return core::StreamRef(reinterpret_cast<cudaStream_t>(std::uintptr_t(0x100 + device + (capturing ? 8 : 0))));
}
int asked_device = 0, asked_capture = 0;
int fake_device(core::StreamRef s) {
    ++asked_device;
    return int((reinterpret_cast<std::uintptr_t>(s.handle()) - 0x100) % 8);
}
bool fake_capturing(core::StreamRef s, int device, const char*) {
    ++asked_capture;
    const auto h = reinterpret_cast<std::uintptr_t>(s.handle());
    EXPECT_TRUE(h < 0x100 || int((h - 0x100) % 8) == device) << "asked with another device than the stream's";
    return h >= 0x100 + 8;
}
constexpr dist::detail::StreamLookups fake_lookups{&fake_device, &fake_capturing};

TEST(DistFftValidation, TheStreamBelongsToADeviceOfThePlan) {
    using dist::detail::check_execute_stream;
    const FftProblem one = host_problem(TensorLayout(DataType::c32, {64, 64}), {.devices = {2}});
    const FftProblem two = host_problem(TensorLayout(DataType::c32, {64, 64}), {.devices = {0, 3}});
    // A default stream means the first device's.
    for (const cudaStream_t h : {cudaStream_t{}, cudaStreamLegacy, cudaStreamPerThread}) {
        EXPECT_EQ(check_execute_stream(one, core::StreamRef(h), fake_lookups, "t").device, 2);
        const dist::detail::ExecuteStream w = check_execute_stream(two, core::StreamRef(h), fake_lookups, "t");
        EXPECT_EQ(w.device, 0);
        EXPECT_EQ(w.index, 0U);
    }
    EXPECT_EQ(check_execute_stream(one, stream_of(2), fake_lookups, "t").device, 2);
    EXPECT_EQ(check_execute_stream(two, stream_of(3), fake_lookups, "t").index, 1U);
    expect_throw<InvalidArgument>([&] { (void)check_execute_stream(one, stream_of(1), fake_lookups, "t"); },
                                  {"t", "stream: belongs to device 1", "device [2]", "that device"});
    expect_throw<InvalidArgument>([&] { (void)check_execute_stream(two, stream_of(1), fake_lookups, "t"); },
                                  {"stream: belongs to device 1", "devices [0, 3]", "device 0's"});
}

TEST(DistFftValidation, OnlyAOneDevicePlanRunsInACapture) {
    using dist::detail::check_execute_stream;
    const FftProblem one = host_problem(TensorLayout(DataType::c32, {64, 64}), {.devices = {2}});
    const FftProblem two = host_problem(TensorLayout(DataType::c32, {64, 64}), {.devices = {0, 3}});
    asked_capture = 0;
    EXPECT_EQ(check_execute_stream(one, stream_of(2, true), fake_lookups, "t").device, 2);
    EXPECT_EQ(asked_capture, 0) << "a one-device plan may capture: nothing to ask";
    expect_throw<InvalidArgument>([&] { (void)check_execute_stream(two, stream_of(3, true), fake_lookups, "t"); },
                                  {"t", "stream: is capturing", "2 GPUs cannot be captured", "one device"});
    EXPECT_EQ(asked_capture, 1);
    // The device rule first: a capturing stream of another device is refused for its device.
    expect_throw<InvalidArgument>([&] { (void)check_execute_stream(two, stream_of(1, true), fake_lookups, "t"); },
                                  {"stream: belongs to device 1"});
    EXPECT_NO_THROW((void)check_execute_stream(two, stream_of(0), fake_lookups, "t"));
}

TEST(DistFftValidation, StreamChecksWithoutADeviceReportTheMissingDevice) {
    // As the collectives' stream checks: the stream's device is a CUDA query, which reports the
    // missing driver or device (the plan's own rules came before; no plan exists without a device).
    if (core::Device::count() > 0) GTEST_SKIP() << "stand-in streams must not reach a real device";
    const FftProblem two = host_problem(TensorLayout(DataType::c32, {64, 64}), {.devices = {0, 1}});
    expect_throw<CudaError>(
        [&] { (void)dist::detail::check_execute_stream(two, stream_of(1), dist::detail::cuda_stream_lookups(), "t"); },
        {"no CUDA driver/device"});
    expect_throw<CudaError>(
        [&] {
            (void)dist::detail::check_execute_stream(two, core::StreamRef{}, dist::detail::cuda_stream_lookups(), "t");
        },
        {"no CUDA driver/device"});
}

// ---------------------------------------------------------------------------------------------
// The public types without a plan on a device

TEST(DistFftValidation, StatelessFunctionsValidateBeforeAnyGpuWork) {
    std::vector<std::complex<float>> x(64), y(64);
    expect_throw<InvalidArgument>([&] { dist::fft(TensorView(x.data(), {64}), TensorView(y.data(), {64}), {}); },
                                  {"gpumath::dist::fft", "options.devices", "empty"});
    expect_throw<InvalidArgument>(
        [&] { dist::rfft(TensorView(x.data(), {64}), TensorView(y.data(), {33}), {.devices = {0}}); },
        {"gpumath::dist::rfft", "input", "c32 is complex"});
    expect_throw<InvalidArgument>(
        [&] {
            dist::ifft(TensorView(x.data(), {64}), TensorView(y.data(), {64}),
                       {.devices = {core::Device::count() + 1}});
        },
        {"gpumath::dist::ifft", "options.devices", "out of range"});
    // Nothing invalid was cached.
    EXPECT_EQ(dist::fft_plan_cache().stats().size, 0u);
}

TEST(DistFftValidation, PlanCacheControls) {
    dist::FFTPlanCache& cache = dist::fft_plan_cache();
    EXPECT_EQ(cache.capacity(), dist::FFTPlanCache::default_capacity);
    cache.reset_stats();
    std::vector<std::complex<float>> x(64);
    for (int i = 0; i < 2; ++i)
        EXPECT_THROW(dist::fft(TensorView(x.data(), {64}), TensorView(x.data(), {64}), {.devices = {-1}}),
                     InvalidArgument);
    const core::CacheStats s = cache.stats();
    EXPECT_EQ(s.misses, 2u);  // a refused request is never cached: both calls missed
    EXPECT_EQ(s.hits, 0u);
    EXPECT_EQ(s.size, 0u);
    cache.set_capacity(3);
    EXPECT_EQ(cache.stats().capacity, 3u);
    cache.clear();
    cache.set_capacity(dist::FFTPlanCache::default_capacity);
    core::CacheControl& control = cache;
    EXPECT_EQ(control.capacity(), dist::FFTPlanCache::default_capacity);
}

TEST(DistFftValidation, MovedFromPlanThrowsInvalidArgumentAndReportsEmpty) {
    if (core::Device::count() == 0) {
        // No plan can be constructed without a device (the range check); the accessors of a moved-from
        // plan are reached through a real plan on GPU machines (fft_gpu_test), the messages here.
        expect_throw<InvalidArgument>([] { dist::FFT plan(TensorLayout(DataType::c32, {64}), {.devices = {0}}); },
                                      {"options.devices", "out of range"});
        return;
    }
    dist::FFT a(TensorLayout(DataType::c32, {64}), {.devices = {0}});
    dist::FFT b(std::move(a));
    EXPECT_EQ(b.input_layout(), TensorLayout(DataType::c32, {64}));
    EXPECT_EQ(a.input_layout(), TensorLayout());  // NOLINT(bugprone-use-after-move): the moved-from state
    EXPECT_EQ(a.kind(), FFTKind::automatic);
    EXPECT_TRUE(a.devices().empty());
    EXPECT_FALSE(a.planned());
    expect_throw<InvalidArgument>([&] { a.plan(); }, {"gpumath::dist::FFT::plan", "moved"});
    expect_throw<InvalidArgument>([&] { (void)a.allocate(); }, {"moved"});
}

}  // namespace
}  // namespace gpumath

TEST(DistFftScale, TheScaleKernelsCompileFromTheirFile) {
    // NVRTC compiles the embedded kernels/fft_scale.cu here as it does for each device.
    const gpumath::detail::DeviceProgram& program = gpumath::dist::detail::scale_program();
    EXPECT_NE(program.source().find("src/dist/kernels/fft_scale.cu"), std::string_view::npos);
    EXPECT_EQ(&program, &gpumath::dist::detail::scale_program());
    gpumath::core::ProgramOptions options = program.options();
    options.arch = "sm_90";
    const gpumath::core::ObjectCode code =
        gpumath::core::Program(std::string(program.source()), options).compile(gpumath::core::CodeType::cubin);
    const std::vector<std::string> names = code.kernel_names();
    for (const char* k : {"gm_dist_scale_f32", "gm_dist_scale_f64"})
        EXPECT_NE(std::find(names.begin(), names.end(), k), names.end()) << k;
}
