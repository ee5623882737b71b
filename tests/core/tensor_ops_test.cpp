// SPDX-License-Identifier: Apache-2.0
// The tensor utilities on any machine: every kernel instantiation they can ask for compiles with
// NVRTC, and every bad call is refused before any CUDA call (so also without a GPU).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gpumath/core.hpp>
#include <gpumath/tensor_io.hpp>
#include <gpumath/tensor_ops.hpp>

#include "common/philox.hpp"
#include "common/test_util.hpp"
#include "core/jit_test_util.hpp"
#include "core/tensor_ops_internal.hpp"

using namespace gpumath;

namespace {

constexpr DataType k_types[] = {DataType::f16, DataType::bf16, DataType::f32,  DataType::f64, DataType::c32,
                                DataType::c64, DataType::e4m3, DataType::e5m2, DataType::i8,  DataType::i32};

int widest_vector(DataType a, DataType b) {
    const std::size_t widest = std::max(size_of(a), size_of(b));
    return widest >= 16 ? 1 : int(16 / widest);
}

// A device address that is never dereferenced: the checks run before any CUDA call.
template <class T = void>
T* fake(std::uintptr_t at = 1 << 20) {
    return reinterpret_cast<T*>(at);
}

TensorView view(DataType t, std::initializer_list<std::int64_t> shape, std::initializer_list<std::int64_t> strides = {},
                std::uintptr_t at = 1 << 20) {
    return {fake(at), TensorLayout(t, shape, strides)};
}

}  // namespace

TEST(TensorKernels, EveryInstantiationCompiles) {
    // Each family in one NVRTC run, for every element type (pair) a call can ask for.
    using detail::TensorKernel;
    std::vector<std::vector<std::string>> families(4);
    for (const DataType out : k_types) {
        families[0].push_back(detail::tensor_kernel_name(TensorKernel::fill_flat, out, out, 1));
        families[0].push_back(detail::tensor_kernel_name(TensorKernel::fill_flat, out, out, widest_vector(out, out)));
        families[0].push_back(detail::tensor_kernel_name(TensorKernel::fill_strided, out, out, 1));
        for (const DataType in : k_types) {
            families[1].push_back(detail::tensor_kernel_name(TensorKernel::convert_flat, in, out, 1));
            families[1].push_back(
                detail::tensor_kernel_name(TensorKernel::convert_flat, in, out, widest_vector(in, out)));
            families[2].push_back(detail::tensor_kernel_name(TensorKernel::convert_strided, in, out, 1));
            families[3].push_back(detail::tensor_kernel_name(TensorKernel::transpose, in, out, 1));
        }
    }
    for (const DataType out : {DataType::f16, DataType::bf16, DataType::f32, DataType::f64})
        for (const int distribution : {0, 1, 2})
            families[0].push_back(detail::tensor_kernel_name(TensorKernel::random_flat, out, out, distribution));
    for (const DataType out : {DataType::f16, DataType::bf16, DataType::f32})
        families[0].push_back(
            detail::tensor_kernel_name(TensorKernel::random_flat, out, out, kernels::random_uniform_f32));
    for (const std::vector<std::string>& names : families) {
        core::ProgramOptions options = detail::tensor_kernels_options();
        options.arch = "sm_90";
        core::Program compiler(std::string(detail::tensor_kernels_source()), options);
        for (const std::string& n : names) compiler.add_name_expression(n);
        const core::ObjectCode code = compiler.compile(core::CodeType::cubin);
        for (const std::string& n : names) EXPECT_FALSE(code.lowered_name(n).empty()) << n;
    }
}

TEST(TensorOpsValidation, BadOutputsAreRefusedBeforeAnyCudaCall) {
    // A stride of 0 writes several elements to one address; strides that step inside each other too.
    test::expect_throw_with<InvalidArgument>(
        [] {
            fill(view(DataType::f32, {4, 3}, {0, 1}), 1.0);
        },
        {"gpumath::fill", "out: strides (0, 1)", "share one address"});
    test::expect_throw_with<InvalidArgument>(
        [] {
            fill(view(DataType::f32, {4, 3}, {2, 1}), 1.0);
        },
        {"gpumath::fill", "share one address"});
    // Interleaved but disjoint, and a broadcast over an extent of 1, are writable: refused only for
    // want of a GPU here.
    for (const TensorView& ok : {view(DataType::f32, {4, 3}, {3, 1}), view(DataType::f32, {4, 3}, {1, 4}),
                                 view(DataType::f32, {1, 3}, {0, 1})}) {
        EXPECT_EQ(detail::self_overlap(ok), "") << to_string(ok);
    }
    EXPECT_NO_THROW(fill(TensorView(static_cast<float*>(nullptr), {0}), 1.0));  // nothing to write
}

TEST(TensorOpsPaths, ContiguousFillsAreOneFlatRun) {
    // Contiguous outputs (any rank, extents of 1 anywhere) take the memset or the flat kernel; only
    // views with gaps walk the strided kernel.
    EXPECT_TRUE(detail::fills_flat(TensorLayout(DataType::f32, {1 << 20})));
    EXPECT_TRUE(detail::fills_flat(TensorLayout(DataType::bf16, {7, 129})));
    EXPECT_TRUE(detail::fills_flat(TensorLayout(DataType::i8, {2, 1, 3, 4})));
    EXPECT_TRUE(detail::fills_flat(TensorLayout(DataType::c64, {1})));
    EXPECT_FALSE(detail::fills_flat(TensorLayout(DataType::f32, {3, 5}, {10, 1})));
    EXPECT_FALSE(detail::fills_flat(TensorLayout(DataType::f32, {4, 4}, {1, 4})));
}

TEST(TensorOpsPaths, UniformInF32OnlyWhereItGivesTheDocumentedValues) {
    // Where the f32 path is chosen, its value (one f32 fused multiply-add, capped at high) equals
    // the documented one (an f64 fused multiply-add capped at high, rounded to f32) for every u:
    // checked here with the host's correctly rounded fma and fmaf over u's extremes and a sweep.
    const std::array<std::array<double, 2>, 9> ranges{{{0.0, 1.0},
                                                       {-1.0, 1.0},
                                                       {-3.5, 1e6},
                                                       {1.0, 1.0},
                                                       {100.0, 100.5},
                                                       {-0x1p-10, 0x1p-12},
                                                       {1.5e9, 1.5e9 + 256},
                                                       {0.0, 0x1p127},
                                                       {-7.0, -0.125}}};
    for (const auto& [low, high] : ranges) {
        ASSERT_TRUE(detail::uniform_exact_in_f32(low, high)) << low << ", " << high;
        const auto lowf = float(low), highf = float(high), width = float(high - low);
        for (std::uint32_t m = 1; m <= (1u << 24); m += (m < 4096 || m > (1u << 24) - 4096) ? 1u : 997u) {
            const double u = double(m) * 0x1p-24;
            const auto documented = float(std::fmin(std::fma(high - low, u, low), high));
            const float in_f32 = std::fmin(std::fmaf(width, float(u), lowf), highf);
            ASSERT_EQ(documented, in_f32) << "[" << low << ", " << high << "], m = " << m;
        }
    }
    // Ranges whose width or ends are not f32 values, or whose sum spans more than f64's 53 bits,
    // stay in f64.
    EXPECT_FALSE(detail::uniform_exact_in_f32(0.0, 0.1));
    EXPECT_FALSE(detail::uniform_exact_in_f32(-1e30, 1e-30));
    EXPECT_FALSE(detail::uniform_exact_in_f32(1e20, 1e20 + 1e5));
    EXPECT_FALSE(detail::uniform_exact_in_f32(-3.0e38, 3.0e38));
}

TEST(TensorOpsValidation, CastAndCopyCheckShapesOverlapAndTypes) {
    const TensorView a = view(DataType::f32, {4, 8}, {}, 1 << 20);
    test::expect_throw_with<InvalidArgument>(
        [&] {
            cast(a, view(DataType::f16, {8, 4}, {}, 1 << 24));
        },
        {"gpumath::cast", "out: shape (8, 4) differs from in's (4, 8)"});
    // Overlapping memory: the second half of a written over by the first half of out.
    test::expect_throw_with<InvalidArgument>(
        [&] {
            cast(a, view(DataType::f32, {4, 8}, {}, (1 << 20) + 64));
        },
        {"gpumath::cast", "out: its memory", "overlaps in's"});
    test::expect_throw_with<InvalidArgument>(
        [&] {
            copy(a, view(DataType::f16, {4, 8}, {}, 1 << 24));
        },
        {"gpumath::copy", "out: holds f16 elements and in f32", "cast converts"});
    test::expect_throw_with<InvalidArgument>(
        [&] {
            copy(a, view(DataType::f32, {4, 8}, {0, 1}, 1 << 24));
        },
        {"gpumath::copy", "out: strides (0, 1)"});
    test::expect_throw_with<InvalidArgument>([&] { (void)cast(a, static_cast<DataType>(42)); },
                                             {"gpumath::cast", "to: 42 is not a DataType"});
    test::expect_throw_with<InvalidArgument>(
        [&] { (void)transpose(a, 0, 2); }, {"TensorLayout::transposed", "axis1: 2 is not an axis of a rank-2 layout"});
}

TEST(TensorOpsValidation, TransposedSwapsAnyTwoAxes) {
    const TensorLayout l(DataType::f32, {2, 3, 4});
    const TensorLayout t = l.transposed(0, -1);
    EXPECT_EQ(std::vector<std::int64_t>(t.shape().begin(), t.shape().end()), (std::vector<std::int64_t>{4, 3, 2}));
    EXPECT_EQ(std::vector<std::int64_t>(t.strides().begin(), t.strides().end()), (std::vector<std::int64_t>{1, 4, 12}));
    EXPECT_EQ(l.transposed(-2, -1), l.transposed());
    EXPECT_EQ(l.transposed(1, 1), l);
    EXPECT_THROW((void)l.transposed(-4, 0), InvalidArgument);
}

TEST(RandomReference, PhiloxMatchesRandom123KnownAnswers) {
    // Random123's published known-answer vectors (its tests/kat_vectors) for Philox4x32-10: the host
    // reference that the GPU tests compare gpumath's random tensors with.
    using W4 = std::array<std::uint32_t, 4>;
    EXPECT_EQ(test::philox4x32_10({0, 0, 0, 0}, {0, 0}), (W4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
    EXPECT_EQ(test::philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
              (W4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
    EXPECT_EQ(test::philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
              (W4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
    // The documented uniforms: the extremes of a word map to 2^-24 and 1.
    EXPECT_EQ(test::unit_f32(0), 0x1p-24f);
    EXPECT_EQ(test::unit_f32(0xffffffffu), 1.0f);
    EXPECT_EQ(test::unit_f64(0, 0), 0x1p-53);
    EXPECT_EQ(test::unit_f64(0xffffffffu, 0xffffffffu), 1.0);
}

TEST(TensorOpsValidation, RandomRulesComeFirst) {
    const TensorView f32 = view(DataType::f32, {16});
    test::expect_throw_with<InvalidArgument>(
        [] { random::uniform(view(DataType::e4m3, {16})); },
        {"gpumath::random::uniform", "out: e4m3 elements", "f16, bf16, f32 or f64"});
    test::expect_throw_with<InvalidArgument>(
        [] {
            random::normal(view(DataType::f32, {4, 4}, {1, 4}));
        },
        {"gpumath::random::normal", "not row-major"});
    test::expect_throw_with<InvalidArgument>([&] { random::uniform(f32, 2.0, 1.0); },
                                             {"gpumath::random::uniform", "low: 2 is above high (1)"});
    test::expect_throw_with<InvalidArgument>([&] { random::normal(f32, 0.0, -1.0); },
                                             {"gpumath::random::normal", "stddev: -1 is negative"});
    test::expect_throw_with<InvalidArgument>(
        [&] { random::lognormal(f32, std::numeric_limits<double>::infinity(), 1.0); },
        {"gpumath::random::lognormal", "must be finite"});
    test::expect_throw_with<InvalidArgument>([] { (void)random::uniform(DataType::i32, {4}); },
                                             {"gpumath::random::uniform", "out: i32 elements"});
    // A sequence holds 2^64 values: a call that would run past its end is refused.
    test::expect_throw_with<InvalidArgument>(
        [&] { random::uniform(f32, 0.0, 1.0, {.seed = 1, .offset = std::numeric_limits<std::uint64_t>::max() - 8}); },
        {"gpumath::random::uniform", "options.offset: 18446744073709551607 with 16 values",
         "runs past the end of the seed's sequence"});
    test::expect_throw_with<InvalidArgument>(
        [] {
            (void)random::normal(DataType::f32, {4}, 0.0, 1.0, {.offset = std::numeric_limits<std::uint64_t>::max()});
        },
        {"gpumath::random::normal", "options.offset"});
}

TEST(TensorOpsValidation, PreviewOptionsAreChecked) {
    const TensorView f32 = view(DataType::f32, {16});
    test::expect_throw_with<InvalidArgument>([&] { (void)preview(f32, {.edge_items = 0}); },
                                             {"gpumath::preview", "options.edge_items: 0"});
    test::expect_throw_with<InvalidArgument>([&] { (void)preview(f32, {.precision = 18}); },
                                             {"gpumath::preview", "options.precision: 18"});
    test::expect_throw_with<InvalidArgument>([&] { (void)preview(f32, {.threshold = -1}); },
                                             {"gpumath::preview", "options.threshold: -1"});
    EXPECT_EQ(preview(TensorView(static_cast<float*>(nullptr), {0, 3})), "tensor(shape (0, 3), f32)\n[]");
}

TEST(TensorOpsValidation, FromHostTakesAnyRangesOfDataAndShape) {
    // The count is checked before anything is allocated, whatever the ranges (so also without a GPU).
    const std::array<float, 6> six{};
    test::expect_throw_with<InvalidArgument>(
        [&] {
            (void)Tensor::from_host(six, std::vector<int>{2, 4});
        },
        {"Tensor::from_host", "data: 6 host elements given for shape (2, 4), which holds 8"});
    test::expect_throw_with<InvalidArgument>(
        [&] { (void)Tensor::from_host(six, std::vector<std::uint64_t>{~std::uint64_t(0)}); },
        {"Tensor::from_host", "shape[0]: 18446744073709551615 does not fit"});
}
