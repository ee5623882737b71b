// SPDX-License-Identifier: Apache-2.0
// FFT argument validation: every bad request throws the right typed exception, naming the operand,
// before any GPU work (these tests run on machines without a GPU).
#include <gpumath/fft.hpp>

#include <complex>
#include <cstdint>
#include <vector>

#include "common/test_util.hpp"

namespace gpumath {
namespace {

using test::expect_throw_with;
using c32 = std::complex<float>;

// Views over fake device addresses: validation never dereferences them.
template <class T>
TensorView fake(std::initializer_list<std::int64_t> shape, std::initializer_list<std::int64_t> strides = {},
                std::uintptr_t address = 0x10000) {
    return TensorView(reinterpret_cast<T*>(address), shape, strides);
}

TEST(FftValidation, AxesOutOfRange) {
    expect_throw_with<InvalidArgument>(
        [] {
            FFT(TensorLayout(DataType::c32, {4, 8}), {.axes = {2}});
        },
        {"gpumath::FFT", "axes", "axis 2 is out of range", "rank 2", "-2..1"});
    expect_throw_with<InvalidArgument>(
        [] {
            FFT(TensorLayout(DataType::c32, {4, 8}), {.axes = {-3}});
        },
        {"axes", "axis -3 is out of range"});
}

TEST(FftValidation, AxesRepeated) {
    expect_throw_with<InvalidArgument>(
        [] {
            FFT(TensorLayout(DataType::c32, {4, 8, 2}), {.axes = {1, -2}});
        },
        {"axes", "axis 1 is repeated"});
}

TEST(FftValidation, MoreThanThreeAxes) {
    expect_throw_with<InvalidArgument>(
        [] {
            FFT(TensorLayout(DataType::c32, {2, 2, 2, 2}), {.axes = {0, 1, 2, 3}});
        },
        {"axes", "4 given", "1 to 3"});
    expect_throw_with<InvalidArgument>([] { FFTAxes({0, 1, 2, 3, 4, 5, 6, 7, 8}); }, {"axes", "9 given"});
}

TEST(FftValidation, RfftOfComplexInput) {
    expect_throw_with<InvalidArgument>([] { (void)rfft(fake<c32>({16})); },
                                       {"gpumath::rfft", "input", "c32 is complex", "real"});
    expect_throw_with<InvalidArgument>([] { FFT(TensorLayout(DataType::c32, {16}), {.kind = FFTKind::r2c}); },
                                       {"input", "complex"});
}

TEST(FftValidation, FftOfRealInput) {
    expect_throw_with<InvalidArgument>([] { (void)fft(fake<float>({16})); },
                                       {"gpumath::fft", "input", "f32 is real", "rfft"});
    expect_throw_with<InvalidArgument>([] { (void)irfft(fake<double>({16})); }, {"gpumath::irfft", "input", "real"});
}

TEST(FftValidation, UnsupportedDtype) {
    expect_throw_with<InvalidArgument>([] { FFT(TensorLayout(DataType::i32, {16})); }, {"input", "i32"});
}

TEST(FftValidation, KindContradictsFunction) {
    expect_throw_with<InvalidArgument>([] { (void)fft(fake<c32>({16}), {.kind = FFTKind::r2c}); },
                                       {"gpumath::fft", "options.kind", "r2c", "c2c"});
}

TEST(FftValidation, IrfftLength) {
    // Input extent 5 fits output lengths 8 and 9 only.
    expect_throw_with<InvalidArgument>(
        [] {
            (void)irfft(fake<c32>({3, 5}), {.last_axis_size = 7});
        },
        {"gpumath::irfft", "last_axis_size", "7", "extent of 7 / 2 + 1 = 4", "8 and 9"});
    expect_throw_with<InvalidArgument>(
        [] {
            (void)irfft(fake<c32>({3, 5}), {.last_axis_size = -1});
        },
        {"last_axis_size", "negative"});
    expect_throw_with<InvalidArgument>(
        [] {
            (void)irfft(fake<c32>({3, 1}));
        },
        {"input", "2 * (m - 1) = 0", "last_axis_size"});
    // An output view fixes the length; a contradicting one is a shape error.
    expect_throw_with<InvalidArgument>(
        [] {
            irfft(fake<c32>({3, 5}), fake<float>({3, 10}, {}, 0x20000));
        },
        {"last_axis_size", "10"});
    expect_throw_with<InvalidArgument>([] { FFT(TensorLayout(DataType::c32, {8}), {.last_axis_size = 14}); },
                                       {"last_axis_size", "c2c", "complex-to-real"});
}

TEST(FftValidation, IrfftOddLengthAccepted) {
    FFT plan(TensorLayout(DataType::c32, {3, 5}), {.kind = FFTKind::c2r, .last_axis_size = 9});
    EXPECT_EQ(plan.kind(), FFTKind::c2r);
    EXPECT_EQ(plan.output_layout(), TensorLayout(DataType::f32, {3, 9}));
    FFT even(TensorLayout(DataType::c32, {3, 5}), {.kind = FFTKind::c2r});
    EXPECT_EQ(even.output_layout(), TensorLayout(DataType::f32, {3, 8}));
    EXPECT_FALSE(even.planned());
    // Kind automatic with an explicit real output: c2r, its length taken from the output (or
    // from a consistent last_axis_size).
    FFT inferred(TensorLayout(DataType::c32, {3, 5}), TensorLayout(DataType::f32, {3, 9}));
    EXPECT_EQ(inferred.kind(), FFTKind::c2r);
    FFT given(TensorLayout(DataType::c32, {3, 5}), TensorLayout(DataType::f32, {3, 9}), {.last_axis_size = 9});
    EXPECT_EQ(given.kind(), FFTKind::c2r);
    // Without an output layout, automatic stays c2c, so a length is an error naming the kind.
    expect_throw_with<InvalidArgument>(
        [] {
            FFT(TensorLayout(DataType::c32, {3, 5}), {.last_axis_size = 9});
        },
        {"last_axis_size", "c2c"});
}

TEST(FftValidation, OutputShapeAndDtype) {
    expect_throw_with<InvalidArgument>(
        [] {
            fft(fake<c32>({4, 8}), fake<c32>({4, 9}, {}, 0x20000));
        },
        {"gpumath::fft", "out", "shape (4, 9)", "(4, 8)"});
    expect_throw_with<InvalidArgument>(
        [] {
            fft(fake<c32>({4, 8}), fake<std::complex<double>>({4, 8}, {}, 0x20000));
        },
        {"out", "dtype c64", "c32"});
    expect_throw_with<InvalidArgument>(
        [] {
            rfft(fake<float>({4, 8}), fake<c32>({4, 8}, {}, 0x20000));
        },
        {"gpumath::rfft", "out", "(4, 5)"});
    expect_throw_with<InvalidArgument>(
        [] {
            rfft(fake<float>({4, 8}), fake<float>({4, 5}, {}, 0x20000));
        },
        {"out", "dtype f32", "c32"});
    expect_throw_with<InvalidArgument>(
        [] {
            fft(fake<c32>({4, 8}), fake<c32>({4, 8}, {0, 1}, 0x20000));
        },
        {"out", "stride 0", "broadcast"});
}

TEST(FftValidation, InPlaceOnlyC2C) {
    expect_throw_with<InvalidArgument>([] { FFT(TensorLayout(DataType::f32, {16}), {.inplace = true}); },
                                       {"inplace", "only supported for c2c", "r2c"});
    // The same memory as input and output of an r2c plan.
    FFT plan(TensorLayout(DataType::f32, {16}), TensorLayout(DataType::c32, {9}));
    const TensorView in = fake<float>({16});
    const TensorView out(in.data(), DataType::c32, {9});
    expect_throw_with<InvalidArgument>([&] { plan.execute(in, out, Direction::forward); },
                                       {"out", "same memory as in", "only supported for c2c"});
    expect_throw_with<InvalidArgument>([] { (void)fft(fake<c32>({16}), {.inplace = true}); },
                                       {"options.inplace", "fft(x, x"});
}

TEST(FftValidation, ExecuteChecksLayoutsAndDirection) {
    FFT plan(TensorLayout(DataType::f32, {4, 16}));
    expect_throw_with<InvalidArgument>(
        [&] {
            plan.execute(fake<float>({4, 8}), fake<c32>({4, 9}, {}, 0x20000), Direction::forward);
        },
        {"in", "layout f32 (4, 8)", "plan was made for f32 (4, 16)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            plan.execute(fake<float>({4, 16}), fake<c32>({4, 9}, {}, 0x20000), Direction::inverse);
        },
        {"direction", "inverse", "r2c", "forward only"});
    FFT inplace(TensorLayout(DataType::c32, {16}), {.inplace = true});
    expect_throw_with<InvalidArgument>([&] { (void)inplace.execute(fake<c32>({16}), Direction::forward); },
                                       {"in-place", "execute(x, x"});
}

TEST(FftValidation, HalfPrecisionSizes) {
    expect_throw_with<NotSupported>(
        [] {
            FFT(TensorLayout(DataType::f16, {4, 12}));
        },
        {"input", "f16", "power-of-two", "length 12"});
    expect_throw_with<NotSupported>(
        [] {
            FFT(TensorLayout(DataType::bf16, {6, 16, 2}), {.axes = {0, 1}, .kind = FFTKind::c2c});
        },
        {"bf16", "power-of-two", "length 6"});
    // Complex half data needs the trailing pair dimension.
    expect_throw_with<InvalidArgument>(
        [] {
            FFT(TensorLayout(DataType::f16, {4, 16}), {.kind = FFTKind::c2c});
        },
        {"input", "trailing dimension of 2"});
    // Power-of-two sizes validate; output is the (.., n/2+1, 2) pair layout.
    FFT ok(TensorLayout(DataType::f16, {4, 16}));
    EXPECT_EQ(ok.output_layout(), TensorLayout(DataType::f16, {4, 9, 2}));
    FFT c2c(TensorLayout(DataType::bf16, {8, 2}), {.kind = FFTKind::c2c});
    EXPECT_EQ(c2c.output_layout(), TensorLayout(DataType::bf16, {8, 2}));
}

TEST(FftValidation, HalfPrecisionCallbacks) {
    expect_throw_with<NotSupported>(
        [] { FFT(TensorLayout(DataType::f16, {16}), {.prolog = {.source = "x", .symbol = "f"}}); },
        {"options.prolog", "f32/c32/f64/c64"});
}

TEST(FftValidation, CallbackFields) {
    expect_throw_with<InvalidArgument>([] { FFT(TensorLayout(DataType::c32, {16}), {.epilog = {.source = "x"}}); },
                                       {"options.epilog.symbol", "empty"});
    expect_throw_with<InvalidArgument>([] { FFT(TensorLayout(DataType::c32, {16}), {.prolog = {.symbol = "f"}}); },
                                       {"options.prolog", "without source"});
}

TEST(FftValidation, CallbackCompileError) {
    const FFTCallback bad{.source =
                              "__device__ cufftComplex broken(void* d, unsigned long long o, void* i, void* s) "
                              "{ return undefined_thing; }",
                          .symbol = "broken"};
    try {
        (void)compile_fft_callback(bad, FFTCallbackKind::load, DataType::c32, "sm_90");
        ADD_FAILURE() << "expected CompileError";
    } catch (const CompileError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("prolog (load) callback \"broken\""), std::string::npos) << what;
        EXPECT_NE(what.find("cufftComplex broken(void* data_in, unsigned long long offset"), std::string::npos) << what;
        EXPECT_NE(e.log().find("undefined_thing"), std::string::npos) << e.log();
        EXPECT_NE(e.status(), 0);
    }
    // A symbol the source does not define fails in the generated entry.
    expect_throw_with<CompileError>(
        [] {
            (void)compile_fft_callback({.source = "__device__ void other() {}", .symbol = "missing"},
                                       FFTCallbackKind::store, DataType::f32, "sm_90");
        },
        {"epilog (store) callback \"missing\"", "cufftReal element"});
    expect_throw_with<InvalidArgument>(
        [] {
            (void)compile_fft_callback({.source = "x", .symbol = "f"}, FFTCallbackKind::load, DataType::f16, "sm_90");
        },
        {"element", "f16"});
}

TEST(FftValidation, CallbackCompilesWithoutGpu) {
    const std::string src = R"(
        #include <cufftXt.h>
        extern "C" __device__ cufftComplex window(void* d, unsigned long long o, void* info, void*) {
            cufftComplex v = static_cast<cufftComplex*>(d)[o];
            const float w = static_cast<const float*>(info)[o % 64];
            v.x *= w; v.y *= w;
            return v;
        })";
    const core::ObjectCode code =
        compile_fft_callback({.source = src, .symbol = "window"}, FFTCallbackKind::load, DataType::c32, "sm_90");
    EXPECT_EQ(code.type(), core::CodeType::ltoir);
    EXPECT_GT(code.bytes().size(), 0u);
    EXPECT_EQ(fft_callback_signature(FFTCallbackKind::store, DataType::c64, "s"),
              "__device__ void s(void* data_out, unsigned long long offset, cufftDoubleComplex element, void* "
              "user_info, void* shared)");
}

TEST(FftValidation, FreeFunctionsValidateBeforeTheDevice) {
    // Bad arguments are reported as such even where there is no device.
    expect_throw_with<InvalidArgument>([] { (void)fft(fake<c32>({4, 8}), {.axes = {5}}); }, {"axes", "axis 5"});
    if (!test::has_gpu()) {
        expect_throw_with<CudaError>([] { (void)fft(fake<c32>({4, 8})); }, {"no CUDA driver/device"});
        FFT plan(TensorLayout(DataType::c32, {8}));
        expect_throw_with<CudaError>([&] { plan.plan(); }, {"no CUDA driver/device"});
    }
}

TEST(FftValidation, EnumNames) {
    EXPECT_EQ(to_string(Normalization::ortho), "ortho");
    EXPECT_EQ(to_string(CallbackMode::separate), "separate");
    EXPECT_EQ(to_string(FFTKind::c2r), "c2r");
    EXPECT_EQ(to_string(Direction::inverse), "inverse");
}

TEST(FftValidation, PlanCacheControls) {
    FFTPlanCache& cache = fft_plan_cache();
    const std::size_t before = cache.capacity();
    cache.set_capacity(3);
    EXPECT_EQ(cache.capacity(), 3u);
    EXPECT_EQ(cache.stats().capacity, 3u);
    cache.clear();
    EXPECT_EQ(cache.stats().size, 0u);
    cache.set_capacity(before);
}

}  // namespace
}  // namespace gpumath
