// SPDX-License-Identifier: Apache-2.0
// FFT argument validation: every bad request throws the right typed exception, naming the operand,
// before any GPU work (these tests run on machines without a GPU).
#include <gpumath/core/program.hpp>
#include <gpumath/fft.hpp>
#include "fft/fft_impl.hpp"
#include "fft/plan_cache.hpp"

#include <complex>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "common/test_util.hpp"
#include "detail/identifier.hpp"

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
    // An empty last transform axis has no c2r length at all (n / 2 + 1 >= 1).
    expect_throw_with<InvalidArgument>(
        [] {
            (void)FFT(TensorLayout(DataType::c32, {4, 0}), {.kind = FFTKind::c2r});
        },
        {"input", "extent 0", "last transform axis 1", "at least one element"});
    // An output view fixes the length; a contradicting one is a shape error.
    expect_throw_with<InvalidArgument>(
        [] {
            irfft(fake<c32>({3, 5}), fake<float>({3, 10}, {}, 0x20000));
        },
        {"last_axis_size", "10"});
    expect_throw_with<InvalidArgument>([] { FFT(TensorLayout(DataType::c32, {8}), {.last_axis_size = 14}); },
                                       {"last_axis_size", "c2c", "complex-to-real"});
}

TEST(FftValidation, TransformSizePastInt64) {
    // An empty batch bounds no extent by its bytes: the transform size 2^31 * 2 * (2^32 - 2)
    // overflowed int64 (a UBSan report).
    expect_throw_with<InvalidArgument>(
        [] {
            FFT f(TensorLayout(DataType::c32, {0, INT64_C(1) << 31, (INT64_C(2) << 31) - 1}),
                  {.axes = {1, 2}, .kind = FFTKind::c2r});
        },
        {"input:", "transform size does not fit in int64"});
    // So did the default c2r output length 2 * (m - 1).
    expect_throw_with<InvalidArgument>(
        [] {
            FFT f(TensorLayout(DataType::c32, {0, INT64_MAX}), {.kind = FFTKind::c2r});
        },
        {"input:", "2 * (m - 1)", "int64"});
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
    // Strides that put two elements of the output at one address: results would overwrite each
    // other (whether the strides are refused by cuFFT or written by gpumath's own pass).
    for (std::int64_t outer : {1, 4, 7}) {  // strides (outer, 1) of an 8 x 8 output
        expect_throw_with<InvalidArgument>(
            [&] {
                fft(fake<c32>({8, 8}),
                    TensorView(reinterpret_cast<void*>(std::uintptr_t(0x20000)), DataType::c32, {8, 8}, {outer, 1}));
            },
            {"out", "one address", "(8, 8)"});
    }
    expect_throw_with<InvalidArgument>(
        [] {
            (void)FFT(TensorLayout(DataType::c32, {4, 4, 4}), TensorLayout(DataType::c32, {4, 4, 4}, {3, 4, 1}));
        },
        {"out", "one address"});  // indices (1, 0, 0) and (0, 0, 3) both at offset 3
}

TEST(FftValidation, InPlaceLayoutsWhoseElementsShareAnAddress) {
    // In place the input's layout is the output's: a broadcast or strides that meet are refused too.
    for (std::int64_t outer : {0, 4})
        expect_throw_with<InvalidArgument>(
            [&] {
                (void)FFT(TensorLayout(DataType::c32, {8, 8}, {outer, 1}), {.inplace = true});
            },
            {"FFT: in: ", "in-place transform writes its results through in", outer == 0 ? "stride 0" : "one address"});
}

TEST(FftValidation, OutputsWhoseElementsAreDistinctAreTaken) {
    // Strides that do not nest but still give every element its own address plan fine.
    EXPECT_NO_THROW((void)FFT(TensorLayout(DataType::c32, {3, 3}), TensorLayout(DataType::c32, {3, 3}, {3, 4})));
    EXPECT_NO_THROW((void)FFT(TensorLayout(DataType::c32, {4, 8}), TensorLayout(DataType::c32, {4, 8}, {1, 4})));
    EXPECT_NO_THROW((void)FFT(TensorLayout(DataType::c32, {4, 8}), TensorLayout(DataType::c32, {4, 8}, {9, 1})));
    // An empty output has no element to share; a large batch of a small one-to-one layout that does
    // not nest is listed only as far as its inner dimensions.
    EXPECT_NO_THROW(
        (void)FFT(TensorLayout(DataType::c32, {0, 4, 4}), TensorLayout(DataType::c32, {0, 4, 4}, {1, 1, 1})));
    EXPECT_NO_THROW((void)FFT(TensorLayout(DataType::c32, {1 << 21, 3, 3}, {16, 3, 1}),
                              TensorLayout(DataType::c32, {1 << 21, 3, 3}, {16, 3, 4}), {.axes = {2}}));
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

// cuFFT does not support half-precision transforms spanning more than 4 billion (2^32) elements:
// refused up front rather than as a CufftError from planning. Complex pairs count once.
TEST(FftValidation, HalfPrecisionElementLimit) {
    constexpr std::int64_t k64 = 65536;
    expect_throw_with<NotSupported>(
        [] {
            FFT(TensorLayout(DataType::f16, {k64, k64, 2}), {.kind = FFTKind::c2c});
        },
        {"gpumath::FFT", "input: f16 transforms of 2^32 or more elements", "4 billion",
         "has 4294967296 elements (complex pairs)", "(65536, 65536)"});
    // r2c: the real input is the larger side; batch dimensions count too.
    expect_throw_with<NotSupported>(
        [] {
            FFT(TensorLayout(DataType::bf16, {4, k64 * k64 / 4}));
        },
        {"input: bf16 transforms", "has 4294967296 elements (shape (4, 1073741824))"});
    // c2r: the real output is the larger side (the input has 2 * (2^30 + 1) pairs).
    expect_throw_with<NotSupported>(
        [] {
            FFT(TensorLayout(DataType::f16, {4, k64 * k64 / 8 + 1, 2}), {.kind = FFTKind::c2r});
        },
        {"out: f16 transforms of 2^32 or more elements",
         "the output has 4294967296 elements (shape (4, "
         "1073741824))"});
    expect_throw_with<NotSupported>(
        [] {
            (void)fft(TensorView(reinterpret_cast<const void*>(0x10000), DataType::f16, {k64, k64, 2}));
        },
        {"gpumath::fft", "2^32 or more elements"});
    // Half the size is allowed, as are f32 transforms of any count.
    FFT half_ok(TensorLayout(DataType::f16, {k64 / 2, k64, 2}), {.kind = FFTKind::c2c});
    EXPECT_EQ(half_ok.output_layout(), TensorLayout(DataType::f16, {k64 / 2, k64, 2}));
    FFT single(TensorLayout(DataType::c32, {k64, k64}));
    EXPECT_EQ(single.output_layout(), TensorLayout(DataType::c32, {k64, k64}));
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
    int info = 0;
    expect_throw_with<InvalidArgument>(
        [&] { FFT(TensorLayout(DataType::c32, {16}), {.epilog = {.user_info = &info}}); },
        {"options.epilog.user_info", "without a callback"});
    // The symbol is pasted into the generated entry: it must be a (qualified) C++ name.
    // Keywords are identifiers in form but name nothing ("int" pasted as a function's name).
    for (const char* bad :
         {"f(x)", "1f", "a::", "::", "a:::b", "f; g", "f\n", "return", "int", "std::delete", "and::f", "::new"})
        expect_throw_with<InvalidArgument>(
            [&] { FFT(TensorLayout(DataType::c32, {16}), {.prolog = {.source = "x", .symbol = bad}}); },
            {"options.prolog.symbol", "is not a C++ name"});
    expect_throw_with<InvalidArgument>(
        [] { (void)compile_fft_callback({.source = "x", .symbol = "a b"}, FFTCallbackKind::load, DataType::c32); },
        {"callback.symbol", "is not a C++ name"});
    // NVRTC reads C strings: a NUL byte in a source is refused before anything compiles.
    const std::string nul("x\0y", 3);
    expect_throw_with<InvalidArgument>(
        [&] { FFT(TensorLayout(DataType::c32, {16}), {.epilog = {.source = nul, .symbol = "f"}}); },
        {"options.epilog.source", "NUL byte at offset 1"});
    expect_throw_with<InvalidArgument>(
        [&] { (void)compile_fft_callback({.source = nul, .symbol = "f"}, FFTCallbackKind::load, DataType::c32); },
        {"callback.source", "NUL byte"});
    EXPECT_TRUE(detail::is_qualified_identifier("::ns::inner::load_2"));
    EXPECT_TRUE(detail::is_qualified_identifier("_f"));
    EXPECT_TRUE(detail::is_qualified_identifier("integer::returned"));  // keywords inside names are fine
    EXPECT_TRUE(detail::is_qualified_identifier("Int"));
    EXPECT_FALSE(detail::is_qualified_identifier("ns::while"));
    EXPECT_TRUE(detail::is_qualified_identifier("ns::requires"));  // callbacks are C++17: not a keyword there
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
    expect_throw_with<InvalidArgument>(
        [] { (void)fft_callback_signature(FFTCallbackKind::load, DataType::c32, "a b;("); },
        {"name", "not a C++ name"});
    for (const char* keyword : {"int", "std::delete"})
        expect_throw_with<InvalidArgument>(
            [&] { (void)fft_callback_signature(FFTCallbackKind::store, DataType::f32, keyword); },
            {"name", keyword, "not a keyword"});
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

// Enum fields hold any value of their underlying type; one outside the enumerators is named.
TEST(FftValidation, EnumsOutOfRange) {
    const TensorLayout c(DataType::c32, {4, 8});
    expect_throw_with<InvalidArgument>(
        [&] { FFT(c, {.kind = static_cast<FFTKind>(9)}); },
        {"gpumath::FFT", "options.kind: 9 is not an FFTKind", "automatic, c2c, r2c, c2r"});
    expect_throw_with<InvalidArgument>([] { (void)rfft(fake<float>({16}), {.kind = static_cast<FFTKind>(9)}); },
                                       {"gpumath::rfft", "options.kind: 9 is not an FFTKind"});
    expect_throw_with<InvalidArgument>(
        [&] { FFT(c, {.normalization = static_cast<Normalization>(7)}); },
        {"gpumath::FFT", "options.normalization: 7 is not a Normalization", "backward, forward, ortho, none"});
    expect_throw_with<InvalidArgument>(
        [&] { FFT(c, {.callback_mode = static_cast<CallbackMode>(200)}); },
        {"gpumath::FFT", "options.callback_mode: 200 is not a CallbackMode", "automatic, fused, separate"});
    expect_throw_with<InvalidArgument>(
        [] {
            fft(fake<c32>({4, 8}), fake<c32>({4, 8}, {}, 0x20000), {.normalization = static_cast<Normalization>(4)});
        },
        {"gpumath::fft", "options.normalization: 4 is not a Normalization"});

    FFT plan(c);
    expect_throw_with<InvalidArgument>(
        [&] {
            plan.execute(fake<c32>({4, 8}), fake<c32>({4, 8}, {}, 0x20000), static_cast<Direction>(3));
        },
        {"gpumath::FFT", "direction: 3 is not a Direction", "forward, inverse"});
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)plan.execute(fake<c32>({4, 8}), static_cast<Direction>(2));
        },
        {"direction: 2 is not a Direction"});

    expect_throw_with<InvalidArgument>(
        [] { (void)fft_callback_signature(static_cast<FFTCallbackKind>(4), DataType::c32); },
        {"gpumath::fft_callback_signature", "kind: 4 is not an FFTCallbackKind", "load, store"});
    expect_throw_with<InvalidArgument>(
        [] {
            (void)compile_fft_callback({.source = "x", .symbol = "f"}, static_cast<FFTCallbackKind>(2), DataType::c32,
                                       "sm_90");
        },
        {"gpumath::compile_fft_callback", "kind: 2 is not an FFTCallbackKind"});
}

// A moved-from FFT: methods that may throw say so, noexcept accessors report an empty plan.
TEST(FftValidation, MovedFrom) {
    FFT a(TensorLayout(DataType::f32, {4, 16}), {.normalization = Normalization::ortho});
    FFT b(std::move(a));
    EXPECT_EQ(b.kind(), FFTKind::r2c);
    EXPECT_EQ(b.output_layout(), TensorLayout(DataType::c32, {4, 9}));
    EXPECT_EQ(b.options().normalization, Normalization::ortho);

    // NOLINTBEGIN(bugprone-use-after-move,hicpp-invalid-access-moved): what this test is about
    EXPECT_FALSE(a.planned());
    EXPECT_EQ(a.kind(), FFTKind::automatic);
    EXPECT_EQ(a.input_layout(), TensorLayout());
    EXPECT_EQ(a.output_layout(), TensorLayout());
    EXPECT_EQ(a.options().normalization, Normalization::backward);
    EXPECT_TRUE(a.options().prolog.empty());
    EXPECT_EQ(a.callback_mode(), CallbackMode::automatic);
    EXPECT_EQ(a.workspace_size(), 0u);
    EXPECT_FALSE(a.copies());
    EXPECT_EQ(a.executions_per_transform(), 0);
    expect_throw_with<InvalidArgument>([&] { a.plan(); }, {"gpumath::FFT::plan", "this FFT was moved from"});
    expect_throw_with<InvalidArgument>(
        [&] {
            a.execute(fake<float>({4, 16}), fake<c32>({4, 9}, {}, 0x20000), Direction::forward);
        },
        {"gpumath::FFT::execute", "this FFT was moved from"});
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)a.execute(fake<float>({4, 16}), Direction::forward);
        },
        {"gpumath::FFT::execute", "this FFT was moved from"});

    // Move assignment leaves the source moved from too; assigning to it makes it usable again.
    FFT c(TensorLayout(DataType::c32, {8}));
    c = std::move(b);
    EXPECT_EQ(c.kind(), FFTKind::r2c);
    EXPECT_EQ(b.kind(), FFTKind::automatic);
    expect_throw_with<InvalidArgument>([&] { b.plan(); }, {"moved from"});
    a = FFT(TensorLayout(DataType::c32, {8}));
    EXPECT_EQ(a.kind(), FFTKind::c2c);
    EXPECT_EQ(a.input_layout(), TensorLayout(DataType::c32, {8}));
    // NOLINTEND(bugprone-use-after-move,hicpp-invalid-access-moved)
}

// Outputs must not alias inputs, except a c2c transform in place (the same view twice).
TEST(FftValidation, PartialOverlap) {
    FFT c2c(TensorLayout(DataType::c32, {4, 8}));  // 256 bytes
    expect_throw_with<InvalidArgument>(
        [&] {
            c2c.execute(fake<c32>({4, 8}), fake<c32>({4, 8}, {}, 0x10008), Direction::forward);
        },
        {"gpumath::FFT", "out: its memory overlaps in's", "[0x10008, 0x10108)", "[0x10000, 0x10100)", "in place"});
    // Disjoint elements whose byte ranges interleave count as overlapping (as for Matmul).
    FFT strided(TensorLayout(DataType::c32, {8}, {2}), TensorLayout(DataType::c32, {8}, {2}));
    expect_throw_with<InvalidArgument>(
        [&] { strided.execute(fake<c32>({8}, {2}), fake<c32>({8}, {2}, 0x10008), Direction::inverse); },
        {"out: its memory overlaps in's"});
    // r2c: the complex output inside the real input.
    FFT r2c(TensorLayout(DataType::f32, {16}));  // 64 bytes in, 72 out
    expect_throw_with<InvalidArgument>(
        [&] { r2c.execute(fake<float>({16}), fake<c32>({9}, {}, 0x10020), Direction::forward); },
        {"out: its memory overlaps in's"});
    // c2r: the input inside the real output.
    FFT c2r(TensorLayout(DataType::c32, {9}), TensorLayout(DataType::f32, {16}));
    expect_throw_with<InvalidArgument>(
        [&] { c2r.execute(fake<c32>({9}, {}, 0x10010), fake<float>({16}), Direction::inverse); },
        {"out: its memory overlaps in's"});
    // The free functions, both directions of c2c.
    expect_throw_with<InvalidArgument>(
        [] {
            fft(fake<c32>({4, 8}), fake<c32>({4, 8}, {}, 0x100f8));
        },
        {"gpumath::fft", "out: its memory overlaps in's"});
    expect_throw_with<InvalidArgument>(
        [] {
            ifft(fake<c32>({4, 8}, {}, 0x100f8), fake<c32>({4, 8}));
        },
        {"gpumath::ifft", "out: its memory overlaps in's"});
    expect_throw_with<InvalidArgument>([] { rfft(fake<float>({16}), fake<c32>({9}, {}, 0x10008)); },
                                       {"gpumath::rfft", "out: its memory overlaps in's"});
    expect_throw_with<InvalidArgument>([] { irfft(fake<c32>({9}, {}, 0x10008), fake<float>({16})); },
                                       {"gpumath::irfft", "out: its memory overlaps in's"});
    if (!test::has_gpu()) {
        // Allowed (they reach the device): in place, and adjacent but disjoint memory.
        expect_throw_with<CudaError>([] { fft(fake<c32>({4, 8}), fake<c32>({4, 8})); }, {"no CUDA driver"});
        expect_throw_with<CudaError>(
            [&] {
                c2c.execute(fake<c32>({4, 8}), fake<c32>({4, 8}), Direction::forward);
            },
            {"no CUDA driver"});
        expect_throw_with<CudaError>(
            [] {
                fft(fake<c32>({4, 8}), fake<c32>({4, 8}, {}, 0x10100));
            },
            {"no CUDA driver"});
        expect_throw_with<CudaError>([] { rfft(fake<float>({16}), fake<c32>({9}, {}, 0x10040)); }, {"no CUDA driver"});
    }
}

// Views whose data pointer does not hold whole elements.
TEST(FftValidation, MisalignedPointers) {
    FFT r2c(TensorLayout(DataType::f32, {16}));
    expect_throw_with<InvalidArgument>(
        [&] { r2c.execute(fake<float>({16}, {}, 0x10001), fake<c32>({9}, {}, 0x20000), Direction::forward); },
        {"gpumath::FFT", "in: data pointer 0x10001 is not aligned to the 4-byte size of an f32 element"});
    expect_throw_with<InvalidArgument>(
        [&] { r2c.execute(fake<float>({16}), fake<c32>({9}, {}, 0x20004), Direction::forward); },
        {"out: data pointer 0x20004 is not aligned to the 8-byte size of a c32 element"});
    expect_throw_with<InvalidArgument>([&] { (void)r2c.execute(fake<float>({16}, {}, 0x10002), Direction::forward); },
                                       {"in: data pointer 0x10002", "4-byte size of an f32 element"});
    FFT c2c(TensorLayout(DataType::c64, {8}));
    expect_throw_with<InvalidArgument>(
        [&] {
            c2c.execute(fake<std::complex<double>>({8}, {}, 0x10008), fake<std::complex<double>>({8}, {}, 0x20000),
                        Direction::forward);
        },
        {"in: data pointer 0x10008 is not aligned to the 16-byte size of a c64 element"});
    // Complex half data: whole (real, imaginary) pairs.
    FFT half(TensorLayout(DataType::f16, {8, 2}), {.kind = FFTKind::c2c});
    expect_throw_with<InvalidArgument>(
        [&] {
            half.execute(TensorView(reinterpret_cast<void*>(0x10002), DataType::f16, {8, 2}),
                         TensorView(reinterpret_cast<void*>(0x20000), DataType::f16, {8, 2}), Direction::forward);
        },
        {"in: data pointer 0x10002 is not aligned to the 4-byte size of an f16 complex element (a real/imaginary "
         "pair)"});
    // Every free function, before the device.
    const TensorView c_odd = fake<c32>({9}, {}, 0x10004);
    const TensorView r_odd = fake<float>({16}, {}, 0x10003);
    for (const auto& call : std::vector<std::function<void()>>{
             [&] { fft(c_odd, fake<c32>({9}, {}, 0x20000)); }, [&] { (void)fft(c_odd); },
             [&] { ifft(c_odd, fake<c32>({9}, {}, 0x20000)); }, [&] { (void)ifft(c_odd); },
             [&] { irfft(c_odd, fake<float>({16}, {}, 0x20000)); }, [&] { (void)irfft(c_odd); }})
        expect_throw_with<InvalidArgument>(call, {"in: data pointer 0x10004", "8-byte size of a c32 element"});
    expect_throw_with<InvalidArgument>([&] { rfft(r_odd, fake<c32>({9}, {}, 0x20000)); },
                                       {"gpumath::rfft", "in: data pointer 0x10003", "4-byte size of an f32 element"});
    expect_throw_with<InvalidArgument>([&] { (void)rfft(r_odd); }, {"gpumath::rfft", "in: data pointer 0x10003"});
    expect_throw_with<InvalidArgument>(
        [] { irfft(fake<c32>({9}), fake<float>({16}, {}, 0x20002)); },
        {"gpumath::irfft", "out: data pointer 0x20002", "4-byte size of an f32 element"});
    if (!test::has_gpu()) {
        // A real operand at an odd element offset is aligned to its element: it passes (and is
        // copied when executed, see RealOperandsAtOddOffsets).
        expect_throw_with<CudaError>([] { (void)rfft(fake<float>({16}, {}, 0x10004)); }, {"no CUDA driver"});
        expect_throw_with<CudaError>([] { irfft(fake<c32>({9}), fake<float>({16}, {}, 0x20004)); }, {"no CUDA driver"});
    }
}

// The free functions check the operands of the call (not only the request) before the device.
TEST(FftValidation, FreeFunctionsCheckOperandsBeforeTheDevice) {
    const TensorView x = fake<float>({16});
    expect_throw_with<InvalidArgument>([&] { rfft(x, TensorView(x.data(), DataType::c32, {9})); },
                                       {"gpumath::rfft", "out", "same memory as in", "only supported for c2c"});
    const TensorView z = fake<c32>({9});
    expect_throw_with<InvalidArgument>([&] { irfft(z, TensorView(z.data(), DataType::f32, {16})); },
                                       {"gpumath::irfft", "out", "same memory as in"});
    // The stateful plan's allocating execute checks before it allocates.
    FFT plan(TensorLayout(DataType::c32, {8}));
    expect_throw_with<InvalidArgument>([&] { (void)plan.execute(fake<c32>({4}), Direction::forward); },
                                       {"gpumath::FFT", "in: layout c32 (4,)", "plan was made for c32 (8,)"});
}

// Callback code cuFFT cannot link (anything but LTO-IR) is refused when the FFT is made.
TEST(FftValidation, CallbackCodeMustBeLtoIr) {
    // cufftComplex is float2 (gpumath provides the cuFFT types only to callbacks it compiles).
    const std::string src = R"(
        __device__ float2 load(void* d, unsigned long long o, void*, void*) {
            return static_cast<float2*>(d)[o];
        })";
    const core::Program program(src, core::ProgramOptions{.name = "fft_callback", .arch = "sm_90"});
    const core::ObjectCode ptx = program.compile(core::CodeType::ptx);
    const core::ObjectCode cubin = program.compile(core::CodeType::cubin);
    ASSERT_EQ(ptx.type(), core::CodeType::ptx);
    ASSERT_EQ(cubin.type(), core::CodeType::cubin);
    const TensorLayout c(DataType::c32, {16});
    expect_throw_with<InvalidArgument>([&] { FFT(c, {.prolog = {.symbol = "load", .code = ptx}}); },
                                       {"gpumath::FFT", "options.prolog: ObjectCode of type ptx given",
                                        "CUDA C++ source or LTO-IR (CodeType::ltoir)"});
    expect_throw_with<InvalidArgument>([&] { FFT(c, {.epilog = {.symbol = "store", .code = cubin}}); },
                                       {"options.epilog: ObjectCode of type cubin given"});
    expect_throw_with<InvalidArgument>([&] { (void)fft(fake<c32>({16}), {.prolog = {.symbol = "load", .code = ptx}}); },
                                       {"gpumath::fft", "options.prolog: ObjectCode of type ptx given"});
    expect_throw_with<InvalidArgument>(
        [&] { (void)compile_fft_callback({.symbol = "load", .code = ptx}, FFTCallbackKind::load, DataType::c32); },
        {"gpumath::compile_fft_callback", "given as ptx code", "LTO-IR"});
    // LTO-IR passes validation.
    const core::ObjectCode lto =
        compile_fft_callback({.source = src, .symbol = "load"}, FFTCallbackKind::load, DataType::c32, "sm_90");
    FFT ok(c, {.prolog = {.symbol = "load", .code = lto}});
    EXPECT_EQ(ok.kind(), FFTKind::c2c);
}

// A callback is source or LTO-IR, never both: neither would be the obvious one to run, and the plan
// cache identifies code by its address alone, so a second source could not be told apart.
TEST(FftValidation, CallbackSourceAndCodeTogether) {
    const std::string src = R"(
        __device__ float2 load(void* d, unsigned long long o, void*, void*) {
            return static_cast<float2*>(d)[o];
        })";
    const core::ObjectCode lto =
        compile_fft_callback({.source = src, .symbol = "load"}, FFTCallbackKind::load, DataType::c32, "sm_90");
    ASSERT_EQ(lto.type(), core::CodeType::ltoir);
    const TensorLayout c(DataType::c32, {16});
    expect_throw_with<InvalidArgument>([&] { FFT(c, {.prolog = {.source = src, .symbol = "load", .code = lto}}); },
                                       {"gpumath::FFT", "options.prolog: give source or code, not both"});
    const std::string store = "__device__ void store(void*, unsigned long long, float2, void*, void*) {}";
    expect_throw_with<InvalidArgument>([&] { FFT(c, {.epilog = {.source = store, .symbol = "store", .code = lto}}); },
                                       {"options.epilog: give source or code, not both"});
    // Refused before the source is looked at (a NUL byte would be reported otherwise).
    const std::string nul("x\0y", 3);
    expect_throw_with<InvalidArgument>(
        [&] { (void)fft(fake<c32>({16}), {.prolog = {.source = nul, .symbol = "load", .code = lto}}); },
        {"gpumath::fft", "options.prolog: give source or code, not both"});
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)compile_fft_callback({.source = src, .symbol = "load", .code = lto}, FFTCallbackKind::load,
                                       DataType::c32, "sm_90");
        },
        {"gpumath::compile_fft_callback", "callback: give source or code, not both"});
    // Each alone is valid.
    EXPECT_EQ(FFT(c, {.prolog = {.source = src, .symbol = "load"}}).kind(), FFTKind::c2c);
    EXPECT_EQ(FFT(c, {.prolog = {.symbol = "load", .code = lto}}).kind(), FFTKind::c2c);
}

// The work area of a variant is cuFFT's plus the temps, each rounded up to 256 bytes; a sum that
// does not fit in size_t is NotSupported naming the part, never a wrapped (too small) size.
TEST(FftValidation, WorkAreaSizeOverflow) {
    detail::FFTImpl impl;
    impl.p = detail::make_fft_problem(TensorLayout(DataType::c32, {16}), nullptr, {}, FFTKind::automatic, impl.api);
    {
        detail::FftVariant v;
        v.cufft_work = 1000;
        v.g.in.temp = true;
        v.g.in.temp_elements = 10;  // 80 bytes of c32
        v.g.out.temp = true;
        v.g.out.temp_elements = 3;
        impl.layout_work_area(v);
        EXPECT_EQ(v.temp_in_offset, 1024u);
        EXPECT_EQ(v.temp_out_offset, 1280u);
        EXPECT_EQ(v.bytes, 1536u);
    }
    {
        detail::FftVariant v;
        v.cufft_work = std::numeric_limits<std::size_t>::max() - 100;
        expect_throw_with<NotSupported>([&] { impl.layout_work_area(v); },
                                        {"gpumath::FFT", "workspace: cuFFT's work area", "does not fit in size_t"});
    }
    {
        detail::FftVariant v;
        v.cufft_work = 256;
        v.g.out.temp = true;
        v.g.out.temp_elements = std::numeric_limits<std::int64_t>::max() / 2;  // times 8 bytes overflows
        expect_throw_with<NotSupported>([&] { impl.layout_work_area(v); },
                                        {"workspace: the output temp of 4611686018427387903 elements of 8 bytes"});
    }
    {
        detail::FftVariant v;
        v.cufft_work = std::numeric_limits<std::size_t>::max() / 2;
        v.g.in.temp = true;
        v.g.in.temp_elements = std::numeric_limits<std::int64_t>::max() / 8;  // fits alone, not after cuFFT's
        expect_throw_with<NotSupported>([&] { impl.layout_work_area(v); },
                                        {"workspace: the input temp", "does not fit in size_t"});
    }
}

// Fused callbacks of one source need functions of different names: each fused module renames the
// other function by the last component of its name, which cannot tell "a::f" from "b::f".
TEST(FftValidation, FusedCallbacksOfOneSourceNeedDifferentNames) {
    const std::string src = R"(
        namespace a { __device__ float2 f(void* d, unsigned long long o, void*, void*) { return static_cast<float2*>(d)[o]; } }
        namespace b { __device__ void f(void* d, unsigned long long o, float2 e, void*, void*) { static_cast<float2*>(d)[o] = e; } })";
    const TensorLayout c(DataType::c32, {16});
    FFTOptions o{.prolog = {.source = src, .symbol = "a::f"},
                 .epilog = {.source = src, .symbol = "b::f"},
                 .callback_mode = CallbackMode::fused};
    expect_throw_with<InvalidArgument>([&] { FFT(c, o); }, {"gpumath::FFT",
                                                            "options.epilog.symbol: \"b::f\" ends in the same name as "
                                                            "options.prolog.symbol \"a::f\"",
                                                            "CallbackMode::separate"});
    expect_throw_with<InvalidArgument>([&] { (void)fft(fake<c32>({16}), o); },
                                       {"gpumath::fft", "options.epilog.symbol", "ends in the same name"});
    // Separate passes compile each callback on its own; automatic runs them that way.
    o.callback_mode = CallbackMode::separate;
    EXPECT_EQ(FFT(c, o).kind(), FFTKind::c2c);
    o.callback_mode = CallbackMode::automatic;
    EXPECT_EQ(FFT(c, o).kind(), FFTKind::c2c);
    // Different last names, or different sources, fuse.
    o.callback_mode = CallbackMode::fused;
    o.epilog.symbol = "b::g";
    EXPECT_EQ(FFT(c, o).kind(), FFTKind::c2c);
    o.epilog = {.source = src + "\n", .symbol = "b::f"};
    EXPECT_EQ(FFT(c, o).kind(), FFTKind::c2c);
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
    EXPECT_EQ(before, FFTPlanCache::default_capacity);
    cache.set_capacity(3);
    EXPECT_EQ(cache.capacity(), 3u);
    EXPECT_EQ(cache.stats().capacity, 3u);
    cache.clear();
    EXPECT_EQ(cache.stats().size, 0u);
    cache.reset_stats();
    EXPECT_EQ(cache.stats().hits + cache.stats().misses + cache.stats().disk_hits, 0u);
    // The same controls through the interface every cache shares.
    core::CacheControl& control = cache;
    control.set_capacity(before);
    EXPECT_EQ(cache.capacity(), before);
}

// The stateless functions validate a call in full only when its plan is not cached; a hit checks
// what the key does not fix (the pointers). Without a device the public functions never reach the
// cache, so these tests seed it with an unplanned plan and look calls up as a call on that device
// would. The device ordinal is one no test machine has, so nothing here meets a real plan.
class FftPlanCacheHit : public ::testing::Test {
protected:
    static constexpr int device = 63;
    void SetUp() override {
        fft_plan_cache().clear();
        fft_plan_cache().reset_stats();
    }
    void TearDown() override { fft_plan_cache().clear(); }

    static detail::FftCall call(FFTKind kind, const TensorView& in, const TensorView* out,
                                const FFTOptions& options = default_options()) {
        const char* api = kind == FFTKind::c2c   ? "gpumath::fft"
                          : kind == FFTKind::r2c ? "gpumath::rfft"
                                                 : "gpumath::irfft";
        const Direction direction = kind == FFTKind::c2r ? Direction::inverse : Direction::forward;
        return {kind, direction, &in, out, &options, {}, api};
    }
    // Caches a plan for `c`, as a valid first call would have.
    static std::shared_ptr<FFT> seed(const detail::FftCall& c) {
        auto plan = std::make_shared<FFT>(c.out != nullptr ? FFT(c.in->layout(), c.out->layout(), *c.options)
                                                           : FFT(c.in->layout(), *c.options));
        detail::put_cached_fft_plan(c, device, plan);
        return plan;
    }
    static const FFTOptions& default_options() {
        static const FFTOptions options;
        return options;
    }
};

TEST_F(FftPlanCacheHit, StillRejectsMisalignedPointers) {
    const TensorView in = fake<c32>({16}), out = fake<c32>({16}, {}, 0x20000);
    const std::shared_ptr<FFT> plan = seed(call(FFTKind::c2c, in, &out));
    EXPECT_EQ(detail::cached_fft_plan(call(FFTKind::c2c, in, &out), device), plan);
    EXPECT_EQ(fft_plan_cache().stats().hits, 1u);
    // Same layouts (the same key), other pointers.
    const TensorView in_odd = fake<c32>({16}, {}, 0x10004), out_odd = fake<c32>({16}, {}, 0x20002);
    expect_throw_with<InvalidArgument>(
        [&] { (void)detail::cached_fft_plan(call(FFTKind::c2c, in_odd, &out), device); },
        {"gpumath::fft", "in: data pointer 0x10004 is not aligned to the 8-byte size of a c32 element"});
    expect_throw_with<InvalidArgument>([&] { (void)detail::cached_fft_plan(call(FFTKind::c2c, in, &out_odd), device); },
                                       {"gpumath::fft", "out: data pointer 0x20002 is not aligned"});
    EXPECT_EQ(fft_plan_cache().stats().hits, 3u);  // both were hits
    EXPECT_EQ(fft_plan_cache().stats().misses, 0u);
    // The allocating form has its own key and checks its input the same way.
    (void)seed(call(FFTKind::c2c, in, nullptr));
    expect_throw_with<InvalidArgument>(
        [&] { (void)detail::cached_fft_plan(call(FFTKind::c2c, in_odd, nullptr), device); },
        {"in: data pointer 0x10004"});
    EXPECT_EQ(fft_plan_cache().stats().hits, 4u);
}

TEST_F(FftPlanCacheHit, StillRejectsOverlaps) {
    const TensorView in = fake<c32>({4, 8}), out = fake<c32>({4, 8}, {}, 0x20000);
    const std::shared_ptr<FFT> plan = seed(call(FFTKind::c2c, in, &out));
    const TensorView inside = fake<c32>({4, 8}, {}, 0x10008);
    expect_throw_with<InvalidArgument>([&] { (void)detail::cached_fft_plan(call(FFTKind::c2c, in, &inside), device); },
                                       {"gpumath::fft", "out: its memory overlaps in's", "in place"});
    // In place (the same view twice) is allowed for c2c with equal layouts.
    EXPECT_EQ(detail::cached_fft_plan(call(FFTKind::c2c, in, &in), device), plan);
    // r2c never runs in place.
    const TensorView r = fake<float>({16}), c = fake<c32>({9}, {}, 0x20000);
    (void)seed(call(FFTKind::r2c, r, &c));
    const TensorView c_same = fake<c32>({9}), c_inside = fake<c32>({9}, {}, 0x10020);
    expect_throw_with<InvalidArgument>([&] { (void)detail::cached_fft_plan(call(FFTKind::r2c, r, &c_same), device); },
                                       {"gpumath::rfft", "out: the same memory as in", "only supported for c2c"});
    expect_throw_with<InvalidArgument>([&] { (void)detail::cached_fft_plan(call(FFTKind::r2c, r, &c_inside), device); },
                                       {"gpumath::rfft", "out: its memory overlaps in's"});
    EXPECT_EQ(fft_plan_cache().stats().hits, 4u);
    EXPECT_EQ(fft_plan_cache().stats().misses, 0u);
}

// Options that make a request invalid are part of the key: such a request misses, is validated and
// refused, and nothing is cached for it.
TEST_F(FftPlanCacheHit, InvalidRequestsMissAndAreNeverCached) {
    const TensorView in = fake<c32>({16}), out = fake<c32>({16}, {}, 0x20000);
    (void)seed(call(FFTKind::c2c, in, &out));
    const FFTOptions wrong_kind{.kind = FFTKind::c2r};
    expect_throw_with<InvalidArgument>(
        [&] { (void)detail::cached_fft_plan(call(FFTKind::c2c, in, &out, wrong_kind), device); },
        {"gpumath::fft", "options.kind: c2r given"});
    const FFTOptions symbol_only{.prolog = {.symbol = "load"}};
    expect_throw_with<InvalidArgument>(
        [&] { (void)detail::cached_fft_plan(call(FFTKind::c2c, in, &out, symbol_only), device); },
        {"options.prolog: symbol \"load\" given without source or code"});
    const FFTOptions bad_axis{.axes = {1}};
    expect_throw_with<InvalidArgument>(
        [&] { (void)detail::cached_fft_plan(call(FFTKind::c2c, in, &out, bad_axis), device); },
        {"axes: axis 1 is out of range"});
    // A callback with source and code misses as well (never served by a plan of the code alone).
    const core::ObjectCode lto =
        compile_fft_callback({.source = "__device__ float2 load(void* d, unsigned long long o, void*, void*) { "
                                        "return static_cast<float2*>(d)[o]; }",
                              .symbol = "load"},
                             FFTCallbackKind::load, DataType::c32, "sm_90");
    const FFTOptions code_only{.prolog = {.symbol = "load", .code = lto}};
    (void)seed(call(FFTKind::c2c, in, &out, code_only));
    const FFTOptions code_and_nul_source{.prolog = {.source = std::string("x\0y", 3), .symbol = "load", .code = lto}};
    expect_throw_with<InvalidArgument>(
        [&] { (void)detail::cached_fft_plan(call(FFTKind::c2c, in, &out, code_and_nul_source), device); },
        {"options.prolog: give source or code, not both"});
    const FFTOptions bad_enum{.normalization = static_cast<Normalization>(9)};
    expect_throw_with<InvalidArgument>(
        [&] { (void)detail::cached_fft_plan(call(FFTKind::c2c, in, &out, bad_enum), device); },
        {"options.normalization"});
    // Refused before counting as a miss or being cached; the seeded plan was never handed out.
    const core::CacheStats s = fft_plan_cache().stats();
    EXPECT_EQ(s.misses, 0u);
    EXPECT_EQ(s.hits, 0u);
    EXPECT_EQ(s.size, 2u);
}

// The key holds callbacks as 64-bit digests of their source. A cached plan whose digests match but
// whose code differs (a collision, made here by caching one callback's plan under another's key)
// is never served: the call plans for itself, which fails without a device (CudaError) or on device
// 63 (InvalidArgument), where a served plan would have returned without any CUDA call.
TEST_F(FftPlanCacheHit, APlanOfOtherCallbacksUnderTheSameKeyIsNotServed) {
    const TensorView in = fake<c32>({16}), out = fake<c32>({16}, {}, 0x20000);
    const std::string load_a =
        "__device__ float2 load(void* d, unsigned long long o, void*, void*) { "
        "return static_cast<float2*>(d)[o]; }";
    const std::string load_b =
        "__device__ float2 load(void* d, unsigned long long o, void*, void*) { "
        "float2 v = static_cast<float2*>(d)[o]; return {2 * v.x, 2 * v.y}; }";
    const FFTOptions a{.prolog = {.source = load_a, .symbol = "load"}};
    const FFTOptions b{.prolog = {.source = load_b, .symbol = "load"}};
    const FFTOptions b_epilog{.epilog = {.source = load_b, .symbol = "load"}};
    const auto plan_a = std::make_shared<FFT>(in.layout(), out.layout(), a);
    detail::put_cached_fft_plan(call(FFTKind::c2c, in, &out, b), device, plan_a);  // a's plan under b's key
    EXPECT_THROW((void)detail::cached_fft_plan(call(FFTKind::c2c, in, &out, b), device), Error);
    EXPECT_EQ(fft_plan_cache().stats().size, 1u) << "the call's own plan is not cached";
    EXPECT_EQ(fft_plan_cache().stats().hits, 1u);
    // The same plan under its own key is served.
    detail::put_cached_fft_plan(call(FFTKind::c2c, in, &out, a), device, plan_a);
    EXPECT_EQ(detail::cached_fft_plan(call(FFTKind::c2c, in, &out, a), device), plan_a);
    // Only equal callbacks count: another symbol, or the code in the epilog instead, is not served.
    const FFTOptions a_renamed{.prolog = {.source = load_a, .symbol = "load2"}};
    detail::put_cached_fft_plan(call(FFTKind::c2c, in, &out, a_renamed), device, plan_a);
    EXPECT_THROW((void)detail::cached_fft_plan(call(FFTKind::c2c, in, &out, a_renamed), device), Error);
    detail::put_cached_fft_plan(call(FFTKind::c2c, in, &out, b_epilog), device, plan_a);
    EXPECT_THROW((void)detail::cached_fft_plan(call(FFTKind::c2c, in, &out, b_epilog), device), Error);
}

}  // namespace
}  // namespace gpumath
