// SPDX-License-Identifier: Apache-2.0
// Bad grouped-product input is rejected before any GPU work, on any machine, with an exception that
// names the operand and the group. Pointers here are never dereferenced: every call is invalid (or,
// for the constructors, needs no device).
#include <gtest/gtest.h>

#include <array>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <gpumath/matmul.hpp>

#include "common/test_util.hpp"
#include "matmul/grouped.hpp"
#include "matmul/grouped_cublas.hpp"
#include "matmul/grouped_kernel_source.hpp"
#include "matmul/grouped_scales.hpp"
#include "matmul/grouped_streams.hpp"

#ifndef GPUMATH_TEST_ARCH
#define GPUMATH_TEST_ARCH "sm_90"
#endif

using namespace gpumath;
using test::expect_throw_with;

namespace {

// Distinct, 256-byte aligned fake device addresses, 16 MiB apart.
void* addr(int slot, std::uintptr_t offset = 0) {
    return reinterpret_cast<void*>((std::uintptr_t(slot) + 1) * (std::uintptr_t(1) << 24) + offset);
}

TensorView v(int slot, DataType t, std::initializer_list<std::int64_t> shape,
             std::initializer_list<std::int64_t> strides = {}, std::uintptr_t offset = 0) {
    return TensorView(addr(slot, offset), t, shape, strides);
}

constexpr auto f32 = DataType::f32;
constexpr auto f16 = DataType::f16;
constexpr auto bf16 = DataType::bf16;
constexpr std::int64_t K = 8, N = 16;

/// Three groups of M = 4, 0, 1, bf16, each operand in its own fake allocation.
struct Groups {
    std::vector<TensorView> a{v(0, bf16, {4, K}), v(1, bf16, {0, K}), v(2, bf16, {1, K})};
    std::vector<TensorView> b{v(3, bf16, {K, N}), v(4, bf16, {K, N}), v(5, bf16, {K, N})};
    std::vector<TensorView> d{v(6, bf16, {4, N}), v(7, bf16, {0, N}), v(8, bf16, {1, N})};
    [[nodiscard]] std::vector<TensorLayout> a_layouts() const { return {a.begin(), a.end()}; }
    [[nodiscard]] std::vector<TensorLayout> b_layouts() const { return {b.begin(), b.end()}; }
};

/// The mixture-of-experts form: 3 experts, sizes 2, 0, 3 (T = 5).
struct Moe {
    std::vector<std::int64_t> sizes{2, 0, 3};
    TensorView a = v(0, bf16, {5, K});
    TensorView b = v(1, bf16, {3, K, N});
    TensorView d = v(2, bf16, {5, N});
};

}  // namespace

// ---- construction ------------------------------------------------------------------------------

TEST(GroupedValidation, ConstructorsNeedNoDevice) {
    const Groups g;
    const auto al = g.a_layouts(), bl = g.b_layouts();
    GroupedMatmul list(al, bl);
    EXPECT_EQ(list.group_count(), 3);
    EXPECT_EQ(list.n(), N);
    EXPECT_EQ(list.k(), K);
    EXPECT_FALSE(list.contiguous());
    EXPECT_EQ(list.backend(), GroupedBackend::automatic);
    EXPECT_EQ(list.result_type(), bf16);
    const Moe m;
    GroupedMatmul moe(m.a, m.b, m.sizes, {.epilog = Epilog::gelu_bias, .result_type = f32});
    EXPECT_TRUE(moe.contiguous());
    EXPECT_EQ(moe.group_count(), 3);
    EXPECT_EQ(moe.result_type(), f32);
    EXPECT_EQ(moe.options().epilog, Epilog::gelu_bias);
}

TEST(GroupedValidation, SizesComeInAnyRangeOfIntegers) {
    const Moe m;
    const GroupedMatmul ints(m.a, m.b, std::vector<int>{2, 0, 3});
    EXPECT_EQ(ints.group_count(), 3);
    const GroupedMatmul sizes(m.a, m.b, std::array<std::size_t, 3>{2, 0, 3});
    EXPECT_EQ(sizes.group_count(), 3);
    test::expect_throw_with<InvalidArgument>(
        [&] {
            (void)GroupedMatmul(m.a, m.b, std::vector<std::uint64_t>{2, ~std::uint64_t(0), 3});
        },
        {"GroupedMatmul", "group_sizes[1]: 18446744073709551615 does not fit in a signed 64-bit integer"});
    // The allocating form checks the sizes before anything is allocated (so also without a GPU).
    test::expect_throw_with<InvalidArgument>(
        [&] {
            (void)grouped_matmul(m.a, m.b, std::vector<int>{2, 0, 4});
        },
        {"grouped_matmul", "group_sizes"});
    test::expect_throw_with<InvalidArgument>(
        [&] {
            (void)grouped_matmul(m.a, m.b, std::vector<int>{2, 3});
        },
        {"grouped_matmul", "group_sizes"});
}

TEST(GroupedValidation, ZeroGroups) {
    const std::vector<TensorLayout> none;
    expect_throw_with<InvalidArgument>([&] { GroupedMatmul mm(none, none); }, {"GroupedMatmul", "a:", "0 groups"});
    expect_throw_with<InvalidArgument>(
        [&] {
            GroupedMatmul mm(TensorLayout(bf16, {0, K}), TensorLayout(bf16, {0, K, N}), std::vector<std::int64_t>{});
        },
        {"b:", "0 groups"});
    const std::vector<TensorView> empty;
    expect_throw_with<InvalidArgument>([&] { grouped_matmul(empty, empty, empty); }, {"grouped_matmul", "0 groups"});
}

TEST(GroupedValidation, GroupCountsDiffer) {
    const Groups g;
    const auto al = g.a_layouts();
    const std::vector<TensorLayout> b2{g.b[0], g.b[1]};
    expect_throw_with<InvalidArgument>([&] { GroupedMatmul mm(al, b2); }, {"b:", "2 layouts", "3 groups"});
    const std::vector<TensorView> d2{g.d[0], g.d[1]};
    expect_throw_with<InvalidArgument>([&] { grouped_matmul(g.a, g.b, d2); }, {"d:", "2 views", "G = 3"});
}

TEST(GroupedValidation, MismatchedK) {
    Groups g;
    g.a[2] = v(2, bf16, {1, K + 1});
    expect_throw_with<InvalidArgument>([&] { grouped_matmul(g.a, g.b, g.d); }, {"a[2]:", "K = 9", "K = 8"});
    g = Groups{};
    g.b[1] = v(4, bf16, {K + 2, N});
    expect_throw_with<InvalidArgument>([&] { GroupedMatmul mm(g.a_layouts(), g.b_layouts()); },
                                       {"b[1]:", "(10, 16)", "(K, N) = (8, 16)"});
    const Moe m;
    expect_throw_with<InvalidArgument>(
        [&] {
            grouped_matmul(v(0, bf16, {5, K + 1}), m.b, m.d, m.sizes);
        },
        {"a:", "K = 9", "K = 8"});
}

TEST(GroupedValidation, MismatchedN) {
    Groups g;
    g.b[2] = v(5, bf16, {K, N + 1});
    expect_throw_with<InvalidArgument>([&] { grouped_matmul(g.a, g.b, g.d); }, {"b[2]:", "(8, 17)"});
    g = Groups{};
    g.d[0] = v(6, bf16, {4, N + 1});
    expect_throw_with<InvalidArgument>([&] { grouped_matmul(g.a, g.b, g.d); }, {"d[0]:", "(4, 17)", "(4, 16)"});
    const Moe m;
    expect_throw_with<InvalidArgument>(
        [&] {
            grouped_matmul(m.a, m.b, v(2, bf16, {5, N - 1}), m.sizes);
        },
        {"d:", "(5, 15)", "(5, 16)"});
}

TEST(GroupedValidation, RowsOfDMustMatchGroup) {
    Groups g;
    g.d[2] = v(8, bf16, {2, N});
    expect_throw_with<InvalidArgument>([&] { grouped_matmul(g.a, g.b, g.d); }, {"d[2]:", "(1, 16)"});
}

TEST(GroupedValidation, Ranks) {
    Groups g;
    g.a[1] = v(1, bf16, {1, 0, K});
    expect_throw_with<InvalidArgument>([&] { grouped_matmul(g.a, g.b, g.d); }, {"a[1]:", "rank 3", "(M_g, K)"});
    const Moe m;
    expect_throw_with<InvalidArgument>(
        [&] {
            GroupedMatmul mm(m.a, TensorLayout(bf16, {K, N}), m.sizes);
        },
        {"b:", "rank 2", "(G, K, N)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            grouped_matmul(v(0, bf16, {1, 5, K}), m.b, m.d, m.sizes);
        },
        {"a:", "rank 3", "(T, K)"});
}

TEST(GroupedValidation, MixtureOfExpertsResultTooLargeForInt64) {
    // D (T, N) of 2^40 x 2^24 bf16 elements: each operand fits, their product's result does not.
    const std::int64_t T = std::int64_t(1) << 40, wide = std::int64_t(1) << 24;
    const TensorLayout a(bf16, {T, K}), b(bf16, {1, K, wide});
    const std::vector<std::int64_t> sizes = {T};
    expect_throw_with<InvalidArgument>([&] { GroupedMatmul mm(a, b, sizes); },
                                       {"a, b:", "(1099511627776, 16777216)", "int64"});
}

TEST(GroupedValidation, SizesMustSumToRows) {
    const Moe m;
    expect_throw_with<InvalidArgument>(
        [&] {
            grouped_matmul(m.a, m.b, m.d, std::vector<std::int64_t>{2, 0, 2});
        },
        {"group_sizes:", "sum to 4", "5 rows"});
    expect_throw_with<InvalidArgument>(
        [&] {
            grouped_matmul(m.a, m.b, m.d, std::vector<std::int64_t>{2, 4, 3});
        },
        {"group_sizes", "past a's 5 rows"});
    expect_throw_with<InvalidArgument>(
        [&] {
            GroupedMatmul mm(m.a, m.b, std::vector<std::int64_t>{1, 1, 1});
        },
        {"GroupedMatmul", "sum to 3"});
    GroupedMatmul mm(m.a, m.b, m.sizes);
    expect_throw_with<InvalidArgument>(
        [&] {
            mm.execute(m.a, m.b, m.d, std::vector<std::int64_t>{5, 0, 1});
        },
        {"GroupedMatmul::execute", "group_sizes"});
}

TEST(GroupedValidation, SizeCountMustBeG) {
    const Moe m;
    expect_throw_with<InvalidArgument>(
        [&] {
            grouped_matmul(m.a, m.b, m.d, std::vector<std::int64_t>{2, 3});
        },
        {"group_sizes:", "2 values", "G = 3"});
}

TEST(GroupedValidation, NegativeSizes) {
    const Moe m;
    expect_throw_with<InvalidArgument>(
        [&] {
            grouped_matmul(m.a, m.b, m.d, std::vector<std::int64_t>{3, -1, 3});
        },
        {"group_sizes[1]:", "-1", "negative"});
    expect_throw_with<InvalidArgument>(
        [&] {
            GroupedMatmul mm(m.a, m.b, std::vector<std::int64_t>{-2, 4, 3});
        },
        {"group_sizes[0]:", "negative"});
}

TEST(GroupedValidation, DtypeMixes) {
    Groups g;
    g.a[2] = v(2, f16, {1, K});
    expect_throw_with<InvalidArgument>([&] { grouped_matmul(g.a, g.b, g.d); }, {"a[2]:", "f16", "a[0]'s bf16"});
    g = Groups{};
    g.b[0] = v(3, f16, {K, N});
    expect_throw_with<InvalidArgument>([&] { GroupedMatmul mm(g.a_layouts(), g.b_layouts()); },
                                       {"b[0]:", "f16", "bf16"});
    g = Groups{};
    g.d[2] = v(8, f32, {1, N});
    expect_throw_with<InvalidArgument>([&] { grouped_matmul(g.a, g.b, g.d); }, {"d[2]:", "f32", "result type is bf16"});
    const Moe m;
    expect_throw_with<InvalidArgument>(
        [&] {
            grouped_matmul(m.a, v(1, f16, {3, K, N}), m.d, m.sizes);
        },
        {"b:", "f16", "a's bf16"});
    expect_throw_with<InvalidArgument>([&] { grouped_matmul(m.a, m.b, m.d, m.sizes, {}, {.result_type = f32}); },
                                       {"d:", "bf16", "result type is f32"});
}

TEST(GroupedValidation, TypesOutsideTheGroupedSet) {
    const std::vector<TensorLayout> a{TensorLayout(DataType::f64, {2, K})}, b{TensorLayout(DataType::f64, {K, N})};
    expect_throw_with<NotSupported>([&] { GroupedMatmul mm(a, b); }, {"a[0]:", "f64", "f16, bf16, f32 or FP8"});
    expect_throw_with<NotSupported>(
        [&] {
            grouped_matmul(std::vector<TensorView>{v(0, DataType::c64, {2, K})},
                           std::vector<TensorView>{v(1, DataType::c64, {K, N})},
                           std::vector<TensorView>{v(2, DataType::c64, {2, N})});
        },
        {"a[0]:", "c64"});
}

namespace {

constexpr auto e4m3 = DataType::e4m3;
constexpr std::int64_t K8 = 32;  // FP8 needs K (and N) in multiples of 16

/// The mixture-of-experts form in FP8: sizes 2, 0, 3, A row-major (5, K), weights column-major per
/// expert (K the unit-stride dimension, as cuBLASLt's FP8 kernels need), scales in slots 3..6.
struct Fp8Moe {
    std::vector<std::int64_t> sizes{2, 0, 3};
    TensorView a = v(0, e4m3, {5, K8});
    TensorView b = v(1, e4m3, {3, K8, N}, {K8 * N, 1, K8});
    TensorView d = v(2, bf16, {5, N});
    TensorView d8 = v(2, e4m3, {5, N});
    TensorView scale_a = v(3, f32, {3});
    TensorView scale_b = v(4, f32, {3});
    TensorView scale_d = v(5, f32, {3});
    TensorView amax = v(6, f32, {3});
};

}  // namespace

TEST(GroupedValidation, Fp8ScaleRules) {
    const Fp8Moe m;
    const MatmulOptions to_bf16{.result_type = bf16}, to_e4m3{.result_type = e4m3};
    // FP8 constructs (no device needed); the cublas backend does not take it.
    GroupedMatmul mm(m.a, m.b, m.sizes, to_bf16);
    EXPECT_EQ(mm.result_type(), bf16);
    expect_throw_with<NotSupported>(
        [&] { GroupedMatmul c(m.a, m.b, m.sizes, to_bf16, {.backend = GroupedBackend::cublas}); },
        {"grouped.backend:", "cublas", "e4m3"});
    // Scales only with FP8 inputs.
    const Moe h;
    expect_throw_with<InvalidArgument>([&] { grouped_matmul(h.a, h.b, h.d, h.sizes, {.scales = {.a = m.scale_a}}); },
                                       {"scales.a:", "FP8 inputs only"});
    auto call = [&](const GroupedScales& s, const TensorView& d, const MatmulOptions& o) {
        grouped_matmul(m.a, m.b, d, m.sizes, {.scales = s}, o);
    };
    // (G,) f32, 4-byte aligned.
    expect_throw_with<InvalidArgument>([&] { call({.b = v(4, f32, {4})}, m.d, to_bf16); },
                                       {"scales.b:", "(G,) = (3,)"});
    expect_throw_with<InvalidArgument>([&] { call({.a = v(3, f32, {3, 1})}, m.d, to_bf16); }, {"scales.a:", "(G,)"});
    expect_throw_with<InvalidArgument>([&] { call({.a = v(3, f16, {3})}, m.d, to_bf16); }, {"scales.a:", "f16", "f32"});
    expect_throw_with<InvalidArgument>([&] { call({.a = v(3, f32, {3}, {}, 2)}, m.d, to_bf16); },
                                       {"scales.a:", "4 bytes"});
    // d and amax_d only with an FP8 result; amax_d an element per group, apart from everything.
    expect_throw_with<InvalidArgument>([&] { call({.d = m.scale_d}, m.d, to_bf16); },
                                       {"scales.d:", "FP8 result only", "bf16"});
    expect_throw_with<InvalidArgument>([&] { call({.amax_d = m.amax}, m.d, to_bf16); },
                                       {"scales.amax_d:", "FP8 result only"});
    expect_throw_with<InvalidArgument>([&] { call({.amax_d = v(6, f32, {3}, {0})}, m.d8, to_e4m3); },
                                       {"scales.amax_d:", "stride 0", "its own"});
    expect_throw_with<InvalidArgument>([&] { call({.amax_d = v(2, f32, {3}, {}, 16)}, m.d8, to_e4m3); },
                                       {"scales.amax_d:", "overlaps d"});
    expect_throw_with<InvalidArgument>([&] { call({.a = m.scale_a, .amax_d = v(3, f32, {3}, {}, 4)}, m.d8, to_e4m3); },
                                       {"scales.amax_d:", "overlaps scales.a"});
    expect_throw_with<InvalidArgument>([&] { call({.b = v(2, f32, {3}, {}, 32)}, m.d, to_bf16); },
                                       {"d:", "overlaps scales.b"});
    // The per-group form checks the same, naming the group's D.
    const std::vector<TensorView> a{v(0, e4m3, {2, K8}), v(1, e4m3, {3, K8})};
    const std::vector<TensorView> b{v(2, e4m3, {K8, N}, {1, K8}), v(3, e4m3, {K8, N}, {1, K8})};
    const std::vector<TensorView> d{v(4, e4m3, {2, N}), v(5, e4m3, {3, N})};
    expect_throw_with<InvalidArgument>(
        [&] { grouped_matmul(a, b, d, {.scales = {.amax_d = v(5, f32, {2}, {}, 8)}}, to_e4m3); },
        {"scales.amax_d:", "overlaps d[1]"});
    expect_throw_with<InvalidArgument>([&] { grouped_matmul(a, b, d, {.scales = {.a = v(6, f32, {3})}}, to_e4m3); },
                                       {"scales.a:", "(G,) = (2,)"});
    // Device group sizes run gpumath's kernel, which has no FP8.
    const TensorView sizes = v(7, DataType::i32, {3});
    expect_throw_with<NotSupported>(
        [&] { mm.execute(m.a, m.b, m.d, DeviceGroupSizes{.sizes = sizes, .max_total_rows = 5}); },
        {"a:", "e4m3", "device memory"});
    // A strided batch has one scale per operand and one amax.
    const TensorView a6 = v(0, e4m3, {6, K8}), d6 = v(2, bf16, {6, N});
    const std::vector<std::int64_t> even{2, 2, 2};
    GroupedMatmul batched(a6, m.b, even, to_bf16, {.backend = GroupedBackend::strided_batched});
    expect_throw_with<NotSupported>([&] { batched.execute(a6, m.b, d6, even, {.scales = {.b = m.scale_b}}); },
                                    {"strided_batched", "shared by every group"});
}

TEST(GroupedValidation, EpilogRules) {
    const Moe m;
    for (Epilog e : {Epilog::relu_aux, Epilog::gelu_aux_bias, Epilog::drelu, Epilog::dgelu_bgrad, Epilog::bgrada})
        expect_throw_with<NotSupported>([&] { GroupedMatmul mm(m.a, m.b, m.sizes, {.epilog = e}); },
                                        {"options.epilog:", std::string(to_string(e)), "grouped"});
    expect_throw_with<NotSupported>(
        [&] {
            GroupedMatmul mm(m.a, m.b, m.sizes, {.epilog_function = MatmulEpilogFunction{"", "f"}});
        },
        {"options.epilog_function:", "not supported"});
    // A bias: required by *_bias, refused otherwise, (G, N).
    expect_throw_with<InvalidArgument>([&] { grouped_matmul(m.a, m.b, m.d, m.sizes, {}, {.epilog = Epilog::bias}); },
                                       {"bias:", "needs", "(G, N) = (3, 16)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            grouped_matmul(m.a, m.b, m.d, m.sizes, {.bias = v(3, bf16, {3, N})});
        },
        {"bias:", "takes no bias"});
    expect_throw_with<InvalidArgument>(
        [&] { grouped_matmul(m.a, m.b, m.d, m.sizes, {.bias = v(3, bf16, {N})}, {.epilog = Epilog::relu_bias}); },
        {"bias:", "(G, N)"});
}

TEST(GroupedValidation, OutOfRangeEnums) {
    const Moe m;
    expect_throw_with<InvalidArgument>(
        [&] { GroupedMatmul mm(m.a, m.b, m.sizes, {}, {.backend = static_cast<GroupedBackend>(7)}); },
        {"grouped.backend:", "7", "automatic, loop"});
    expect_throw_with<InvalidArgument>(
        [&] { grouped_matmul(m.a, m.b, m.d, m.sizes, {}, {.epilog = static_cast<Epilog>(99)}); },
        {"options.epilog:", "99"});
    expect_throw_with<InvalidArgument>(
        [&] { GroupedMatmul mm(m.a, m.b, m.sizes, {.compute_type = static_cast<ComputeType>(42)}); },
        {"options.compute_type:", "42"});
    EXPECT_EQ(to_string(GroupedBackend::loop), "loop");
    EXPECT_EQ(to_string(GroupedBackend::streams), "streams");
    // Both forms take the streams backend (it needs no particular layout).
    const Groups g;
    const auto al = g.a_layouts(), bl = g.b_layouts();
    EXPECT_EQ(GroupedMatmul(al, bl, {}, {.backend = GroupedBackend::streams}).backend(), GroupedBackend::streams);
    EXPECT_EQ(GroupedMatmul(m.a, m.b, m.sizes, {}, {.backend = GroupedBackend::streams}).backend(),
              GroupedBackend::streams);
    EXPECT_EQ(to_string(static_cast<GroupedBackend>(9)), "invalid GroupedBackend");
}

TEST(GroupedValidation, OperandsPastEndOfAddressSpace) {
    // Memory that runs past the end of the address space: its byte range wrapped around to low
    // addresses, so the overlap checks saw nothing and the call went on to the GPU.
    const auto top = [](std::uintptr_t below) { return reinterpret_cast<void*>(~std::uintptr_t(0) - below + 1); };
    const Groups g;
    std::vector<TensorView> d = g.d;
    d[2] = TensorView(top(16), bf16, {1, N});
    expect_throw_with<InvalidArgument>([&] { grouped_matmul(g.a, g.b, d); },
                                       {"grouped_matmul", "group 2: d:", "32 bytes", "end of the address space"});
    std::vector<TensorView> b = g.b;
    b[1] = TensorView(top(16), bf16, {K, N});
    expect_throw_with<InvalidArgument>([&] { grouped_matmul(g.a, b, g.d); },
                                       {"group 1: b:", "end of the address space"});
    const Moe m;
    expect_throw_with<InvalidArgument>(
        [&] {
            grouped_matmul(m.a, m.b, TensorView(top(16), bf16, {5, N}), m.sizes);
        },
        {"d:", "160 bytes", "end of the address space"});
    expect_throw_with<InvalidArgument>(
        [&] {
            grouped_matmul(m.a, m.b, m.d, m.sizes, {.bias = TensorView(top(16), bf16, {3, N})},
                           {.epilog = Epilog::bias});
        },
        {"bias:", "end of the address space"});
    expect_throw_with<InvalidArgument>(
        [&] {
            grouped_matmul(m.a, m.b, m.d,
                           DeviceGroupSizes{.sizes = TensorView(top(8), DataType::i32, {3}), .max_total_rows = 5});
        },
        {"group_sizes.sizes:", "end of the address space"});
    const std::int64_t K8 = 16;
    const std::vector<TensorView> a8{v(0, DataType::e4m3, {2, K8})};
    const std::vector<TensorView> b8{v(2, DataType::e4m3, {K8, N}, {1, K8})};
    const std::vector<TensorView> d8{v(4, bf16, {2, N})};
    expect_throw_with<InvalidArgument>(
        [&] { grouped_matmul(a8, b8, d8, {.scales = {.b = TensorView(top(4), f32, {1})}}); },
        {"scales.b:", "end of the address space"});
}

TEST(GroupedValidation, OverlappingOutputs) {
    Groups g;
    g.d[2] = v(6, bf16, {1, N}, {}, 64);  // inside d[0]
    expect_throw_with<InvalidArgument>([&] { grouped_matmul(g.a, g.b, g.d); }, {"d[2]:", "overlaps d[0]"});
    g = Groups{};
    g.d[0] = v(2, bf16, {4, N});  // on a[2]
    expect_throw_with<InvalidArgument>([&] { grouped_matmul(g.a, g.b, g.d); }, {"d[0]:", "overlaps a[2]"});
    g = Groups{};
    g.d[2] = v(3, bf16, {1, N}, {}, 32);  // inside b[0]
    expect_throw_with<InvalidArgument>([&] { grouped_matmul(g.a, g.b, g.d); }, {"d[2]:", "overlaps b[0]"});
    g = Groups{};
    expect_throw_with<InvalidArgument>(
        [&] {
            grouped_matmul(g.a, g.b, g.d, {.bias = v(6, bf16, {3, N})}, {.epilog = Epilog::bias});
        },
        {"d[0]:", "overlaps bias"});
    // Column-major blocks of one (5, N) D interleave in memory: rows 0-3 and row 4 share no element,
    // rows 0-3 and row 3 do.
    g = Groups{};
    g.d[0] = v(6, bf16, {4, N}, {1, 5});
    g.d[2] = v(6, bf16, {1, N}, {1, 5}, 4 * 2);
    try {
        grouped_matmul(g.a, g.b, g.d);  // past validation: CudaError without a device
    } catch (const InvalidArgument& e) {
        ADD_FAILURE() << "disjoint column-major blocks refused: " << e.what();
    } catch (const Error&) {}
    g.d[2] = v(6, bf16, {1, N}, {1, 5}, 3 * 2);
    expect_throw_with<InvalidArgument>([&] { grouped_matmul(g.a, g.b, g.d); }, {"d[2]:", "overlaps d[0]"});
    const Moe m;
    expect_throw_with<InvalidArgument>(
        [&] {
            grouped_matmul(m.a, m.b, v(1, bf16, {5, N}), m.sizes);
        },
        {"d:", "overlaps b"});
    // Rows of one D that share memory would be written by two groups.
    expect_throw_with<InvalidArgument>(
        [&] {
            grouped_matmul(m.a, m.b, v(2, bf16, {5, N}, {4, 1}), m.sizes);
        },
        {"d:", "strides (4, 1)", "share memory"});
}

TEST(GroupedValidation, OutputsAsBlocksOfOneParent) {
    // Per-group outputs that are blocks of one row-major parent (64, W) of bf16, checked without
    // running anything: each (rows, cols) block starting at (row, col) of the parent.
    constexpr std::int64_t W = 64;
    auto block = [](std::int64_t row, std::int64_t col, std::int64_t rows, std::int64_t cols) {
        return v(6, bf16, {rows, cols}, {W, 1}, std::uintptr_t(row * W + col) * 2);
    };
    auto check = [](const std::vector<TensorView>& d) {
        std::vector<TensorView> a, b;
        for (const TensorView& x : d) {
            a.push_back(v(0, bf16, {x.shape(0), 1}));
            b.push_back(v(1, bf16, {1, x.shape(1)}));
        }
        const detail::GroupedShape shape =
            detail::check_group_layouts(std::span<const TensorView>(a), std::span<const TensorView>(b), {}, "test");
        detail::check_group_call(a, b, d, {}, shape, Epilog::none, "test");
    };
    // Blocks of 5 columns that interleave in memory but share no element: side by side, one below
    // another, one running past the parent's last column into the next rows' first, and one that
    // starts left of another in rows below it (its first rows' elements lie right of the other's
    // start in memory).
    EXPECT_NO_THROW(check({block(0, 0, 8, 5), block(0, 5, 8, 5), block(8, 0, 4, 5), block(12, 62, 2, 5)}));
    EXPECT_NO_THROW(check({block(0, 5, 1, 5), block(5, 2, 3, 5)}));
    // The same with an element shared: a corner, one reached past the parent's width, and one below
    // another's start on its left.
    expect_throw_with<InvalidArgument>(
        [&] {
            check({block(0, 0, 8, 5), block(7, 4, 2, 5)});
        },
        {"d[1]:", "overlaps d[0]"});
    expect_throw_with<InvalidArgument>(
        [&] {
            check({block(12, 62, 2, 5), block(13, 1, 1, 5)});
        },
        {"d[1]:", "overlaps d[0]"});
    expect_throw_with<InvalidArgument>(
        [&] {
            check({block(0, 5, 8, 5), block(1, 2, 3, 5)});
        },
        {"d[1]:", "overlaps d[0]"});
    // A block of another lattice (column-major) over the same memory: refused outright.
    expect_throw_with<InvalidArgument>(
        [&] {
            check({block(0, 0, 2, 5), v(6, bf16, {2, 5}, {1, W}, 2 * 40)});
        },
        {"overlaps d[0]"});
    // Many single columns of the parent, every one interleaved with every other: accepted, and one
    // more column equal to an earlier one refused, naming both (the check sorts, it does not compare
    // every pair).
    std::vector<TensorView> columns;
    for (std::int64_t c = 0; c < W; ++c) columns.push_back(block(0, c, 64, 1));
    EXPECT_NO_THROW(check(columns));
    columns.push_back(block(10, 37, 2, 1));
    expect_throw_with<InvalidArgument>([&] { check(columns); }, {"d[64]:", "overlaps d[37]"});
}

TEST(GroupedValidation, SharedWeightsAndZeroRowGroupsNeedNoGpuToValidate) {
    // Every group empty: nothing to do, nothing touched, no device needed.
    const std::vector<std::int64_t> zeros{0, 0, 0};
    const TensorView a(nullptr, bf16, {0, K}), d(nullptr, bf16, {0, N});
    const TensorView b = v(1, bf16, {3, K, N});
    EXPECT_NO_THROW(grouped_matmul(a, b, d, zeros));
    GroupedMatmul mm(a, b, zeros);
    EXPECT_NO_THROW(mm.execute(a, b, d, zeros));
}

TEST(GroupedValidation, FormsMustMatchTheConstructor) {
    const Groups g;
    GroupedMatmul list(g.a_layouts(), g.b_layouts());
    const Moe m;
    expect_throw_with<InvalidArgument>([&] { list.execute(m.a, m.b, m.d, m.sizes); },
                                       {"GroupedMatmul::execute", "per-group layouts"});
    GroupedMatmul moe(m.a, m.b, m.sizes);
    expect_throw_with<InvalidArgument>([&] { moe.execute(g.a, g.b, g.d); }, {"mixture-of-experts form"});
    // Layouts other than constructed.
    std::vector<TensorView> a2 = g.a;
    a2[0] = v(0, bf16, {4, K}, {1, 4});
    expect_throw_with<InvalidArgument>([&] { list.execute(a2, g.b, g.d); }, {"a[0]:", "differs"});
    expect_throw_with<InvalidArgument>(
        [&] {
            moe.execute(m.a, v(1, bf16, {3, K, N}, {1, 1, K}), m.d, m.sizes);
        },
        {"b:", "differs"});
    expect_throw_with<InvalidArgument>(
        [&] {
            moe.execute(v(0, bf16, {5, K}, {1, 5}), m.b, m.d, m.sizes);
        },
        {"a:", "more than its number of rows"});
}

TEST(GroupedValidation, MisalignedPointers) {
    Groups g;
    g.a[2] = v(2, bf16, {1, K}, {}, 1);
    expect_throw_with<InvalidArgument>([&] { grouped_matmul(g.a, g.b, g.d); }, {"group 2: a:", "not aligned"});
    g = Groups{};
    g.d[0] = v(6, bf16, {4, N}, {}, 1);
    expect_throw_with<InvalidArgument>([&] { grouped_matmul(g.a, g.b, g.d); }, {"d[0]:", "not aligned"});
}

TEST(GroupedValidation, AlphaMustBeReal) {
    const Moe m;
    expect_throw_with<InvalidArgument>(
        [&] { grouped_matmul(m.a, m.b, m.d, m.sizes, {.alpha = std::complex<double>(1.0, 2.0)}); },
        {"alpha:", "complex"});
}

TEST(GroupedValidation, DeviceSizes) {
    const Moe m;
    const TensorView sizes = v(5, DataType::i32, {3});
    expect_throw_with<InvalidArgument>([&] { grouped_matmul(m.a, m.b, m.d, DeviceGroupSizes{.sizes = sizes}); },
                                       {"group_sizes.max_total_rows:", "not given", "upper bound"});
    expect_throw_with<InvalidArgument>(
        [&] { grouped_matmul(m.a, m.b, m.d, DeviceGroupSizes{.sizes = sizes, .max_total_rows = 6}); },
        {"max_total_rows:", "6 exceeds", "5 rows"});
    expect_throw_with<InvalidArgument>(
        [&] {
            grouped_matmul(m.a, m.b, m.d, DeviceGroupSizes{.sizes = v(5, DataType::i32, {2}), .max_total_rows = 5});
        },
        {"group_sizes.sizes:", "(G,) = (3,)"});
    expect_throw_with<InvalidArgument>(
        [&] { grouped_matmul(m.a, m.b, m.d, DeviceGroupSizes{.sizes = v(5, f32, {3}), .max_total_rows = 5}); },
        {"group_sizes.sizes:", "f32", "i32"});
    expect_throw_with<InvalidArgument>(
        [&] {
            grouped_matmul(m.a, m.b, m.d, DeviceGroupSizes{.sizes = v(2, DataType::i32, {3}), .max_total_rows = 5});
        },
        {"group_sizes.sizes:", "overlaps d"});
    // The kernel reads the sizes as one packed array: any other stride would read the wrong values
    // (or, broadcast with stride 0, past the allocation).
    for (std::int64_t stride : {0, 2})
        expect_throw_with<InvalidArgument>(
            [&] {
                grouped_matmul(m.a, m.b, m.d,
                               DeviceGroupSizes{.sizes = v(5, DataType::i32, {3}, {stride}, 16), .max_total_rows = 5});
            },
            {"group_sizes.sizes:", "stride", "contiguous"});
    // Bad operands are reported before anything runs.
    GroupedMatmul mm(m.a, m.b, m.sizes);
    expect_throw_with<InvalidArgument>(
        [&] {
            mm.execute(m.a, m.b, v(2, bf16, {5, N + 1}), DeviceGroupSizes{.sizes = sizes, .max_total_rows = 4});
        },
        {"d:", "(5, 17)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            grouped_matmul(m.a, m.b, m.d, DeviceGroupSizes{.sizes = sizes, .max_total_rows = 5},
                           {.bias = v(3, f32, {3, N})}, {.epilog = Epilog::bias});
        },
        {"bias:", "f32", "result type bf16"});
    // Valid input on a machine without a GPU: the kernel cannot run.
    if (!test::has_gpu()) {
        EXPECT_THROW(grouped_matmul(m.a, m.b, m.d, DeviceGroupSizes{.sizes = sizes, .max_total_rows = 5}), CudaError);
    }
}

TEST(GroupedValidation, DeviceSizesMisaligned) {
    // The grouped kernel reads the sizes as i32: a misaligned pointer would fault on the device.
    const Moe m;
    const TensorView sizes = v(5, DataType::i32, {3}, {}, 2);
    expect_throw_with<InvalidArgument>(
        [&] { grouped_matmul(m.a, m.b, m.d, DeviceGroupSizes{.sizes = sizes, .max_total_rows = 5}); },
        {"grouped_matmul", "group_sizes.sizes:", "not aligned", "4 bytes of an i32"});
    GroupedMatmul mm(m.a, m.b, m.sizes);
    expect_throw_with<InvalidArgument>(
        [&] { mm.execute(m.a, m.b, m.d, DeviceGroupSizes{.sizes = sizes, .max_total_rows = 5}); },
        {"GroupedMatmul::execute", "group_sizes.sizes:", "not aligned"});
}

TEST(GroupedValidation, DeviceSizesPastTheKernelsGrid) {
    // 2^40 rows make 2^34 row tiles: more than a grid holds, refused before the kernel is compiled.
    constexpr std::int64_t t = std::int64_t(1) << 40;
    const auto at = [](int shift) { return reinterpret_cast<void*>(std::uintptr_t(1) << shift); };
    const TensorView a(at(50), bf16, {t, K}), b = v(1, bf16, {3, K, N}), d(at(52), bf16, {t, N});
    const DeviceGroupSizes sizes{.sizes = v(5, DataType::i32, {3}), .max_total_rows = t};
    expect_throw_with<NotSupported>([&] { grouped_matmul(a, b, d, sizes); },
                                    {"group_sizes.max_total_rows:", "2^31 - 1 row tiles", "host"});
}

TEST(GroupedValidation, DeviceSizesOfTooManyGroups) {
    // Each tile scans the sizes before it: 10^6 groups of 8 x 8 products kept the GPU busy for
    // minutes. Refused before anything is compiled; the limit itself passes validation.
    const auto at = [](int shift) { return reinterpret_cast<void*>(std::uintptr_t(1) << shift); };
    const TensorView a(at(40), bf16, {64, K}), d(at(41), bf16, {64, N});
    for (const std::int64_t groups : {std::int64_t(16385), std::int64_t(1) << 20}) {
        const TensorView b(at(42), bf16, {groups, K, N});
        const DeviceGroupSizes sizes{.sizes = TensorView(at(43), DataType::i32, {groups}), .max_total_rows = 64};
        expect_throw_with<NotSupported>([&] { grouped_matmul(a, b, d, sizes); },
                                        {"grouped_matmul", "b:", "groups", "at most 16384 groups", "host"});
        std::vector<std::int64_t> host(std::size_t(groups), 0);
        host[0] = 64;
        GroupedMatmul mm(a, b, host);
        expect_throw_with<NotSupported>([&] { mm.execute(a, b, d, sizes); },
                                        {"GroupedMatmul::execute", "at most 16384 groups"});
    }
    if (!test::has_gpu()) {
        const TensorView b(at(42), bf16, {16384, K, N});
        const DeviceGroupSizes sizes{.sizes = TensorView(at(43), DataType::i32, {16384}), .max_total_rows = 64};
        EXPECT_THROW(grouped_matmul(a, b, d, sizes), CudaError) << "valid: stops at the missing device";
    }
}

TEST(GroupedValidation, StridedBatchedRules) {
    const Groups g;
    expect_throw_with<NotSupported>(
        [&] { GroupedMatmul mm(g.a_layouts(), g.b_layouts(), {}, {.backend = GroupedBackend::strided_batched}); },
        {"grouped.backend:", "strided_batched", "mixture-of-experts form"});
    const Moe m;
    GroupedMatmul mm(m.a, m.b, m.sizes, {}, {.backend = GroupedBackend::strided_batched});
    EXPECT_EQ(mm.backend(), GroupedBackend::strided_batched);
    expect_throw_with<NotSupported>([&] { mm.execute(m.a, m.b, m.d, m.sizes); },
                                    {"GroupedMatmul::execute", "group_sizes:", "same number of rows"});
    EXPECT_EQ(to_string(GroupedBackend::strided_batched), "strided_batched");
}

TEST(GroupedKernel, EqualSizesAreOneStridedBatch) {
    // Row-major A and D, column-major weights, a bias: views of the whole tensors with a batch of G.
    const TensorView a = v(0, bf16, {6, K}), b = v(1, bf16, {3, K, N}, {K * N, 1, K}), d = v(2, bf16, {6, N});
    const TensorView bias = v(3, bf16, {3, N});
    const std::vector<std::int64_t> equal{2, 2, 2};
    const auto o = detail::batched_of(a, b, d, equal, {.bias = bias});
    ASSERT_TRUE(o.has_value());
    EXPECT_EQ(o->group, -1);
    EXPECT_EQ(o->a, TensorLayout(bf16, {3, 2, K}, {2 * K, K, 1}));
    EXPECT_EQ(o->a.data(), a.data());
    EXPECT_EQ(static_cast<const TensorLayout&>(o->b), static_cast<const TensorLayout&>(b));
    EXPECT_EQ(o->d, TensorLayout(bf16, {3, 2, N}, {2 * N, N, 1}));
    ASSERT_TRUE(o->bias.has_value());
    EXPECT_EQ(*o->bias, TensorLayout(bf16, {3, 1, N}, {N, N, 1}));
    // Column-major A: the batch stride is M elements.
    const TensorView ac = v(0, bf16, {6, K}, {1, 6});
    EXPECT_EQ(detail::batched_of(ac, b, d, equal, {})->a, TensorLayout(bf16, {3, 2, K}, {2, 1, 6}));
    // A column-major D interleaves the groups' outputs, which no batched product may: a loop.
    EXPECT_FALSE(detail::batched_of(a, b, v(2, bf16, {6, N}, {1, 6}), equal, {}).has_value());
    // Uneven sizes, empty groups and a single group run as a loop.
    EXPECT_FALSE(detail::batched_of(a, b, d, std::vector<std::int64_t>{2, 3, 1}, {}).has_value());
    EXPECT_FALSE(detail::batched_of(v(0, bf16, {0, K}), b, v(2, bf16, {0, N}), std::vector<std::int64_t>{0, 0, 0}, {})
                     .has_value());
    EXPECT_FALSE(detail::batched_of(a, v(1, bf16, {1, K, N}), d, std::vector<std::int64_t>{6}, {}).has_value());
    // A bias whose strides would overflow the batched view's: no batch (the per-group path reports
    // what is wrong with it, here its type).
    const TensorView wide_bias(reinterpret_cast<void*>(std::uintptr_t(4) << 32), DataType::i8, {3, N},
                               {0, std::numeric_limits<std::int64_t>::max() / (N - 1)});
    EXPECT_FALSE(detail::batched_of(a, b, d, equal, {.bias = wide_bias}).has_value());
    expect_throw_with<InvalidArgument>(
        [&] { grouped_matmul(a, b, d, equal, {.bias = wide_bias}, {.epilog = Epilog::bias}); }, {"bias"});
}

TEST(GroupedKernel, CallCarriesStridesAndBound) {
    // Column-major A, column-major weights, row-major D, a bias; the kernel's parameters are the
    // views' pointers and strides in elements.
    const TensorView a = v(0, bf16, {5, K}, {1, 5});
    const TensorView b = v(1, bf16, {3, K, N}, {K * N, 1, K});
    const TensorView d = v(2, f32, {5, N});
    const TensorView bias = v(3, f32, {3, N});
    const TensorView sizes = v(4, DataType::i32, {3});
    const MatmulOptions options{.epilog = Epilog::gelu_bias, .result_type = f32};
    const detail::GroupedShape shape = detail::check_moe_layouts(a, b, options, "test");
    const GroupedMatmulArgs args{.alpha = 0.5, .bias = bias};
    const detail::GroupedKernelCall c =
        detail::device_sizes_call(a, b, d, {.sizes = sizes, .max_total_rows = 4}, args, shape, options, "test");
    EXPECT_EQ(c.variant.input, bf16);
    EXPECT_EQ(c.variant.result, f32);
    EXPECT_EQ(c.variant.epilog, Epilog::gelu_bias);
    const detail::GroupedKernelParams& p = c.params;
    EXPECT_EQ(p.a, a.data());
    EXPECT_EQ(p.b, b.data());
    EXPECT_EQ(p.d, d.data());
    EXPECT_EQ(p.bias, bias.data());
    EXPECT_EQ(static_cast<const void*>(p.sizes), sizes.data());
    EXPECT_EQ(p.groups, 3);
    EXPECT_EQ(p.max_rows, 4);
    EXPECT_EQ(p.n, N);
    EXPECT_EQ(p.k, K);
    EXPECT_EQ(p.a_row, 1);
    EXPECT_EQ(p.a_col, 5);
    EXPECT_EQ(p.b_group, K * N);
    EXPECT_EQ(p.b_row, 1);
    EXPECT_EQ(p.b_col, K);
    EXPECT_EQ(p.d_row, N);
    EXPECT_EQ(p.d_col, 1);
    EXPECT_EQ(p.bias_group, N);
    EXPECT_EQ(p.bias_col, 1);
    EXPECT_EQ(p.alpha, 0.5f);
    // Enough row tiles for any sizes within the bound: one per 64 rows plus a partial one per group.
    EXPECT_EQ(detail::grouped_row_tiles(4, 3), 4);
    EXPECT_EQ(detail::grouped_row_tiles(128, 2), 4);
    EXPECT_EQ(detail::grouped_row_tiles(0, 5), 5);
}

TEST(GroupedKernel, MatmulRulesApplyToTheKernel) {
    // A matrix without a unit stride is refused as matmul() refuses it, before any launch.
    const Moe m;
    const TensorView sizes = v(5, DataType::i32, {3});
    EXPECT_THROW(
        grouped_matmul(v(0, bf16, {5, K}, {2 * K, 2}), m.b, m.d, DeviceGroupSizes{.sizes = sizes, .max_total_rows = 5}),
        NotSupported);
}

TEST(GroupedKernel, CublasPointerKernelCompilesWithNvrtc) {
    // The kernel that writes cublasGemmGroupedBatchedEx's pointer arrays; NVRTC needs no device.
    const core::ObjectCode code = detail::compile_pointer_kernel("sm_90");
    EXPECT_FALSE(code.bytes().empty());
    const std::vector<std::string> names = code.kernel_names();
    EXPECT_NE(std::find(names.begin(), names.end(), "gm_write_pointers"), names.end());
}

TEST(GroupedValidation, KernelBackendRules) {
    // The grouped kernel runs the mixture-of-experts form with f16, bf16 or f32 and at most 512
    // groups; anything else is refused at construction, naming the rule.
    const Moe m;
    EXPECT_EQ(to_string(GroupedBackend::kernel), "kernel");
    EXPECT_EQ(
        GroupedMatmul(m.a, m.b, m.sizes, {.epilog = Epilog::silu_bias}, {.backend = GroupedBackend::kernel}).backend(),
        GroupedBackend::kernel);
    const Groups g;
    const auto al = g.a_layouts(), bl = g.b_layouts();
    expect_throw_with<NotSupported>([&] { GroupedMatmul mm(al, bl, {}, {.backend = GroupedBackend::kernel}); },
                                    {"GroupedMatmul:", "grouped.backend:", "kernel", "mixture-of-experts form"});
    const Fp8Moe f;
    expect_throw_with<NotSupported>(
        [&] { GroupedMatmul mm(f.a, f.b, f.sizes, {.result_type = bf16}, {.backend = GroupedBackend::kernel}); },
        {"grouped.backend:", "kernel", "e4m3", "f16, bf16 and f32"});
    std::vector<std::int64_t> many(513, 0);
    many[0] = 5;
    expect_throw_with<NotSupported>(
        [&] {
            GroupedMatmul mm(m.a, v(1, bf16, {513, K, N}), many, {}, {.backend = GroupedBackend::kernel});
        },
        {"grouped.backend:", "kernel", "513 groups", "at most 512"});
    many.resize(512);
    EXPECT_NO_THROW(GroupedMatmul(m.a, v(1, bf16, {512, K, N}), many, {}, {.backend = GroupedBackend::kernel}));
    // What every backend checks comes first: sizes, shapes, overlap.
    GroupedMatmul mm(m.a, m.b, m.sizes, {}, {.backend = GroupedBackend::kernel});
    expect_throw_with<InvalidArgument>(
        [&] {
            mm.execute(m.a, m.b, m.d, std::vector<std::int64_t>{2, 0, 2});
        },
        {"group_sizes", "5"});
    expect_throw_with<InvalidArgument>([&] { mm.execute(m.a, m.b, v(0, bf16, {5, N}), m.sizes); }, {"d:", "overlap"});
}

TEST(GroupedValidation, CallClassFromSizesMatchesTheProducts) {
    // automatic looks its choice up from the host sizes before slicing the call into products: both
    // ways must give the same class.
    const std::vector<std::int64_t> sizes{0, 3, 5, 0, 9, 1};
    const detail::GroupedCallClass c = detail::call_class(std::span<const std::int64_t>(sizes));
    EXPECT_EQ(c.products, 4);
    EXPECT_EQ(c.max_rows_log2, 4);   // 9 rows: 2^4
    EXPECT_EQ(c.mean_rows_log2, 2);  // 18 / 4 = 4 rows: 2^2
    const std::int64_t T = 18;
    std::vector<detail::GroupOperands> groups;
    detail::groups_of(v(0, bf16, {T, K}), v(1, bf16, {6, K, N}), v(2, bf16, {T, N}), sizes, {}, groups);
    EXPECT_EQ(detail::call_class(std::span<const detail::GroupOperands>(groups)), c);
    const std::vector<std::int64_t> empty{0, 0};
    EXPECT_EQ(detail::call_class(std::span<const std::int64_t>(empty)).products, 0);
}

TEST(GroupedValidation, CallClassOfRowsSummingPastInt64) {
    // Per-group views bound only their own rows: three groups of 2^62 - 1 rows summed past int64
    // (signed overflow; the total wrapped negative and the mean read as 2^0 rows).
    constexpr std::int64_t rows = (std::int64_t(1) << 62) - 1;
    std::vector<detail::GroupOperands> groups(3);
    for (int g = 0; g < 3; ++g) groups[std::size_t(g)].d = v(g, bf16, {rows, 1});
    const detail::GroupedCallClass c = detail::call_class(std::span<const detail::GroupOperands>(groups));
    EXPECT_EQ(c.products, 3);
    EXPECT_EQ(c.max_rows_log2, 62);
    EXPECT_EQ(c.mean_rows_log2, 62);
}

TEST(GroupedKernel, HostSizesVariantsCompileWithNvrtc) {
    // The kernels that take the host's sizes in their parameters (the kernel backend): portable and
    // Hopper, distinct programs from the device-sizes ones.
    const detail::GroupedKernelVariant portable{
        .input = bf16, .result = bf16, .epilog = Epilog::gelu_bias, .inline_sizes = true};
    EXPECT_EQ(detail::grouped_kernel_options(portable).defines.at("GM_INLINE_SIZES"), "1");
    EXPECT_EQ(detail::grouped_kernel_options({}).defines.at("GM_INLINE_SIZES"), "0");
    EXPECT_EQ(detail::grouped_wgmma_options(portable, detail::GroupedWgmmaLayout::b_cols).defines.at("GM_INLINE_SIZES"),
              "1");
    for (const detail::GroupedKernelVariant& x :
         {portable, detail::GroupedKernelVariant{.input = f32, .result = f32, .inline_sizes = true}}) {
        const core::ObjectCode code = detail::compile_grouped_kernel(x, GPUMATH_TEST_ARCH);
        const std::vector<std::string> names = code.kernel_names();
        EXPECT_NE(std::find(names.begin(), names.end(), detail::grouped_kernel_name), names.end());
    }
    const core::ObjectCode hopper =
        detail::compile_grouped_wgmma_kernel(portable, detail::GroupedWgmmaLayout::b_cols, 128, "sm_90a");
    const std::vector<std::string> names = hopper.kernel_names();
    EXPECT_NE(std::find(names.begin(), names.end(), detail::grouped_wgmma_kernel_name), names.end());
    EXPECT_EQ(sizeof(detail::GroupedInlineSizes), 4U * detail::grouped_inline_groups);
}

TEST(GroupedValidation, CublasBackendRules) {
    // cublasGemmGroupedBatchedEx has no epilogs: refused at construction, naming the backend.
    const Moe m;
    expect_throw_with<NotSupported>(
        [&] { GroupedMatmul mm(m.a, m.b, m.sizes, {.epilog = Epilog::relu}, {.backend = GroupedBackend::cublas}); },
        {"grouped.backend:", "cublas", "no epilogs", "relu"});
    EXPECT_EQ(GroupedMatmul(m.a, m.b, m.sizes, {}, {.backend = GroupedBackend::cublas}).backend(),
              GroupedBackend::cublas);
    EXPECT_EQ(to_string(GroupedBackend::cublas), "cublas");
}

TEST(GroupedKernel, CompilesWithNvrtc) {
    // Every input type, result type and activation, with and without a bias; NVRTC needs no device.
    const std::pair<DataType, DataType> types[] = {{bf16, bf16}, {bf16, f32}, {f16, f16}, {f16, f32}, {f32, f32}};
    for (auto [input, result] : types)
        for (Epilog e : {Epilog::none, Epilog::relu, Epilog::gelu, Epilog::silu, Epilog::bias, Epilog::relu_bias,
                         Epilog::gelu_bias, Epilog::silu_bias}) {
            SCOPED_TRACE(std::string(to_string(input)) + " -> " + std::string(to_string(result)) + " " +
                         std::string(to_string(e)));
            const core::ObjectCode code =
                detail::compile_grouped_kernel({.input = input, .result = result, .epilog = e}, GPUMATH_TEST_ARCH);
            EXPECT_EQ(code.arch(), GPUMATH_TEST_ARCH);
            const std::vector<std::string> names = code.kernel_names();
            EXPECT_NE(std::find(names.begin(), names.end(), detail::grouped_kernel_name), names.end());
        }
    expect_throw_with<InvalidArgument>([] { (void)detail::grouped_kernel_options({.input = DataType::f64}); }, {"f64"});
    expect_throw_with<InvalidArgument>(
        [] { (void)detail::grouped_wgmma_options({.input = f32, .result = f32}, detail::GroupedWgmmaLayout::b_rows); },
        {"f32", "f16 and bf16"});
    expect_throw_with<InvalidArgument>(
        [] { (void)detail::grouped_wgmma_options({}, detail::GroupedWgmmaLayout::none); }, {"none"});
    expect_throw_with<InvalidArgument>([] { (void)detail::grouped_kernel_options({.epilog = Epilog::relu_aux}); },
                                       {"relu_aux"});
}

TEST(GroupedKernel, HopperKernelCompilesWithNvrtc) {
    // The warpgroup-MMA kernel for sm_90a: both input types, both weight layouts, both block widths,
    // with and without a bias and activation.
    using detail::GroupedWgmmaLayout;
    struct Variant {
        DataType input, result;
        Epilog epilog;
        int block_n;
    };
    const Variant variants[] = {{bf16, bf16, Epilog::none, 128},
                                {bf16, bf16, Epilog::silu_bias, 256},
                                {f16, f32, Epilog::gelu_bias, 128},
                                {f16, f16, Epilog::relu, 256}};
    for (const Variant& x : variants)
        for (GroupedWgmmaLayout layout : {GroupedWgmmaLayout::b_rows, GroupedWgmmaLayout::b_cols})
            for (int cluster : {1, 2}) {
                SCOPED_TRACE(std::string(to_string(x.input)) + " -> " + std::string(to_string(x.result)) + " " +
                             std::string(to_string(x.epilog)) + " n" + std::to_string(x.block_n) +
                             (layout == GroupedWgmmaLayout::b_rows ? " b_rows" : " b_cols") + " cluster " +
                             std::to_string(cluster));
                const core::ObjectCode code = detail::compile_grouped_wgmma_kernel(
                    {.input = x.input, .result = x.result, .epilog = x.epilog}, layout, x.block_n, "sm_90a", cluster);
                EXPECT_EQ(code.arch(), "sm_90a");
                const std::vector<std::string> names = code.kernel_names();
                EXPECT_NE(std::find(names.begin(), names.end(), detail::grouped_wgmma_kernel_name), names.end());
            }
    for (int bad : {0, 64, 192, 512})
        expect_throw_with<InvalidArgument>(
            [&] { (void)detail::grouped_wgmma_options({}, GroupedWgmmaLayout::b_rows, bad); },
            {"block_n:", std::to_string(bad) + " columns per block", "128 or 256"});
    for (int bad : {0, 3, 4})
        expect_throw_with<InvalidArgument>(
            [&] { (void)detail::grouped_wgmma_options({}, GroupedWgmmaLayout::b_rows, 128, bad); },
            {"cluster:", std::to_string(bad) + " blocks per cluster", "1 or 2"});
    // Shared memory within the H200's 227 KiB per block for both widths.
    EXPECT_EQ(detail::grouped_wgmma_shared_bytes(128), 6U * 32768U + 1024U + 128U);
    EXPECT_EQ(detail::grouped_wgmma_shared_bytes(256), 4U * 49152U + 1024U + 128U);
}

TEST(GroupedKernel, HopperKernelWidthFollowsTheWork) {
    // 256 columns per block only where the bound's rows give two waves of such blocks.
    detail::GroupedKernelParams p{.groups = 8, .max_rows = 8 * 128, .n = 14336};
    EXPECT_EQ(detail::grouped_wgmma_columns(p, 132), 256);  // 8 x 56 = 448 blocks
    p.max_rows = 8 * 16;
    EXPECT_EQ(detail::grouped_wgmma_columns(p, 132), 128);  // 1 x 56
    p.n = 2048;
    p.max_rows = 64 * 128;
    EXPECT_EQ(detail::grouped_wgmma_columns(p, 132), 256);  // 64 x 8 = 512
    p.max_rows = 33 * 128;
    EXPECT_EQ(detail::grouped_wgmma_columns(p, 132), 256);  // 33 x 8 = 264: exactly two waves
    p.max_rows = 32 * 128;
    EXPECT_EQ(detail::grouped_wgmma_columns(p, 132), 128);  // 32 x 8 = 256
}

TEST(GroupedKernel, HopperKernelPairsEvenColumnTiles) {
    // Clusters of two blocks where the column tiles of the call's width come in pairs.
    detail::GroupedKernelParams p{.groups = 8, .max_rows = 1024, .n = 14336};
    EXPECT_EQ(detail::grouped_wgmma_cluster(p, 256), 2);  // 56 column tiles
    EXPECT_EQ(detail::grouped_wgmma_cluster(p, 128), 2);  // 112
    p.n = 384;
    EXPECT_EQ(detail::grouped_wgmma_cluster(p, 128), 1);  // 3
    EXPECT_EQ(detail::grouped_wgmma_cluster(p, 256), 2);  // 2, the second partial
    p.n = 96;
    EXPECT_EQ(detail::grouped_wgmma_cluster(p, 128), 1);  // 1
    p.n = 2296;
    EXPECT_EQ(detail::grouped_wgmma_cluster(p, 128), 2);  // 18, the last partial
}

TEST(GroupedKernel, HopperKernelTakesAlignedContiguousOperandsOnly) {
    using detail::GroupedWgmmaLayout;
    alignas(16) static const std::uint16_t storage[64] = {};
    const auto* aligned = static_cast<const void*>(storage);
    const auto* odd = static_cast<const void*>(storage + 1);  // 2 bytes past a 16-byte boundary
    // A (T, K) row-major, weights (G, K, N) row-major: contiguous along N.
    const detail::GroupedKernelParams rows{.a = aligned,
                                           .b = aligned,
                                           .groups = 2,
                                           .max_rows = 64,
                                           .n = 128,
                                           .k = 64,
                                           .a_row = 64,
                                           .a_col = 1,
                                           .b_group = 64 * 128,
                                           .b_row = 128,
                                           .b_col = 1};
    const detail::GroupedKernelVariant bf{};
    EXPECT_EQ(detail::grouped_wgmma_layout(bf, rows), GroupedWgmmaLayout::b_rows);
    // Weights column-major per expert: contiguous along K.
    detail::GroupedKernelParams cols = rows;
    cols.b_row = 1;
    cols.b_col = 64;
    EXPECT_EQ(detail::grouped_wgmma_layout(bf, cols), GroupedWgmmaLayout::b_cols);
    EXPECT_EQ(detail::grouped_wgmma_layout({.input = f16, .result = f32}, cols), GroupedWgmmaLayout::b_cols);
    // What the portable kernel runs instead.
    auto none = [&](detail::GroupedKernelParams p, const detail::GroupedKernelVariant& v = {}) {
        EXPECT_EQ(detail::grouped_wgmma_layout(v, p), GroupedWgmmaLayout::none);
    };
    none(rows, {.input = f32, .result = f32});
    auto p = rows;
    p.k = 60;  // K not a multiple of 8 (16 bytes)
    p.a_row = 60;
    none(p);
    p = rows;
    p.a = odd;
    none(p);
    p = rows;
    p.b = odd;
    none(p);
    p = rows;
    p.a_row = 1;  // A column-major
    p.a_col = 64;
    none(p);
    p = rows;
    p.a_row = 68;  // rows of A 136 bytes apart
    none(p);
    p = rows;
    p.n = 124;  // N not a multiple of 8 with weights contiguous along N
    p.b_row = 124;
    none(p);
    p = rows;
    p.b_group = 64 * 128 + 4;  // experts not 16 bytes apart
    none(p);
    p = cols;
    p.b_col = 66;  // columns of the weights 132 bytes apart
    none(p);
    p = rows;
    p.b_row = 256;  // weights strided along both dimensions
    p.b_col = 2;
    none(p);
    // Past the tensor memory accelerator's 32-bit coordinates (the last 16-row box of A included)
    // and its strides below 2^40 bytes.
    p = rows;
    p.max_rows = std::int64_t(std::numeric_limits<std::int32_t>::max()) - 100;
    none(p);
    p.max_rows = std::int64_t(std::numeric_limits<std::int32_t>::max()) - 128;
    EXPECT_EQ(detail::grouped_wgmma_layout(bf, p), GroupedWgmmaLayout::b_rows);
    p = rows;
    p.b_group = std::int64_t(1) << 39;
    none(p);
    p = cols;
    p.b_col = std::int64_t(1) << 39;
    none(p);
}

TEST(GroupedValidation, ExecuteReportsBadGroupsBeforeTheDevice) {
    // What only a group's own analysis rejects (d's strides, the bias's dtype) is reported by
    // GroupedMatmul::execute as by grouped_matmul, on any machine: execute asked for the device
    // first, and without one threw CudaError for bad input.
    const Groups g;
    const auto al = g.a_layouts(), bl = g.b_layouts();
    GroupedMatmul list(al, bl);
    std::vector<TensorView> d = g.d;
    d[0] = v(6, bf16, {4, N}, {1, 2});
    expect_throw_with<NotSupported>([&] { list.execute(g.a, g.b, d); },
                                    {"GroupedMatmul::execute", "group 0: d:", "no unit stride"});
    expect_throw_with<NotSupported>([&] { grouped_matmul(g.a, g.b, d); }, {"grouped_matmul", "group 0: d:"});
    const Moe m;
    GroupedMatmul moe(m.a, m.b, m.sizes, {.epilog = Epilog::bias});
    const GroupedMatmulArgs args{.bias = v(5, f32, {3, N})};
    expect_throw_with<InvalidArgument>([&] { moe.execute(m.a, m.b, m.d, m.sizes, args); },
                                       {"GroupedMatmul::execute", "group 0: bias:", "dtype f32"});
    expect_throw_with<InvalidArgument>([&] { grouped_matmul(m.a, m.b, m.d, m.sizes, args, {.epilog = Epilog::bias}); },
                                       {"group 0: bias:", "f32"});
}

TEST(GroupedValidation, MovedFrom) {
    const Moe m;
    GroupedMatmul mm(m.a, m.b, m.sizes);
    GroupedMatmul other = std::move(mm);
    EXPECT_EQ(other.group_count(), 3);
    // NOLINTBEGIN(bugprone-use-after-move): the moved-from state is specified
    expect_throw_with<InvalidArgument>([&] { mm.execute(m.a, m.b, m.d, m.sizes); },
                                       {"GroupedMatmul::execute", "moved-from GroupedMatmul"});
    expect_throw_with<InvalidArgument>([&] { mm.plan(); }, {"GroupedMatmul::plan", "moved-from GroupedMatmul"});
    EXPECT_EQ(mm.group_count(), 0);
    EXPECT_EQ(mm.n(), 0);
    EXPECT_EQ(mm.k(), 0);
    EXPECT_FALSE(mm.contiguous());
    EXPECT_EQ(mm.backend(), GroupedBackend::automatic);
    EXPECT_EQ(mm.options().epilog, Epilog::none);
    // NOLINTEND(bugprone-use-after-move)
    mm = std::move(other);
    EXPECT_EQ(mm.group_count(), 3);
}

TEST(GroupedValidation, GroupAnalysisNamesTheGroup) {
    // Each group is analyzed as one matmul; its errors say which group. f16 inputs with an f16
    // compute type and an f32 result are refused by the matmul type table.
    const Moe m;
    const TensorView a = v(0, f16, {5, K});
    const TensorView b = v(1, f16, {3, K, N});
    try {
        GroupedMatmul mm(a, b, m.sizes, {.compute_type = ComputeType::i32});
        ADD_FAILURE() << "expected an exception";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("GroupedMatmul: group 0: "), std::string::npos) << what;
    }
}

TEST(GroupedKernel, ScaleKernelsCompileWithNvrtc) {
    // The kernels that copy per-group FP8 scales to 16-byte slots and amax values back.
    const core::ObjectCode code = detail::compile_scale_kernels(GPUMATH_TEST_ARCH);
    EXPECT_FALSE(code.bytes().empty());
    const std::vector<std::string> names = code.kernel_names();
    for (const char* k : {"gm_spread_scales", "gm_gather_amax"})
        EXPECT_NE(std::find(names.begin(), names.end(), k), names.end()) << k;
}

TEST(GroupedValidation, PartitionedPlansHaveKeysOfTheirOwn) {
    // streams_partitioned's plans are keyed apart from the loop's and per SM count target.
    EXPECT_EQ(to_string(GroupedBackend::streams_partitioned), "streams_partitioned");
    const Moe m;
    GroupedMatmul mm(m.a, m.b, m.sizes, {}, {.backend = GroupedBackend::streams_partitioned});
    EXPECT_EQ(mm.backend(), GroupedBackend::streams_partitioned);
    const TensorView a = v(0, bf16, {4, K}), b = v(1, bf16, {K, N}), d = v(2, bf16, {4, N});
    const detail::MatmulKey base = detail::make_key(detail::call_of(a, b, &d, {}), {}, -1);
    const detail::MatmulKey k26 = detail::partitioned_key(base, 26), k44 = detail::partitioned_key(base, 44);
    EXPECT_FALSE(k26.same_layouts(base));
    EXPECT_FALSE(k26.same_layouts(k44));
    EXPECT_TRUE(k26.same_layouts(detail::partitioned_key(base, 26)));
    EXPECT_EQ(k26.hash, detail::hash_key(k26));
    EXPECT_NE(k26.hash, base.hash);
}

TEST(GroupedChoices, MeasuredChoicesAreBoundedAndKeepTheRecentlyUsed) {
    // One choice per shape of call: a process meeting ever new shapes kept every one.
    detail::BackendChoices choices;
    const auto key = [](std::int64_t n) {
        detail::BackendChoiceKey k;
        k.n = n;
        k.k = 64;
        return k;
    };
    const auto max = std::int64_t(detail::BackendChoices::max_entries);
    // Filled in descending order, so that key order and age disagree.
    for (std::int64_t n = max; n >= 1; --n)
        choices.remember(key(n), n % 2 == 0 ? GroupedBackend::kernel : GroupedBackend::streams);
    EXPECT_EQ(choices.size(), detail::BackendChoices::max_entries);
    // Key max is the oldest; finding it makes key max - 1 the oldest instead.
    EXPECT_EQ(choices.find(key(max)), GroupedBackend::kernel);
    choices.remember(key(max + 1), GroupedBackend::cublas);
    EXPECT_EQ(choices.size(), detail::BackendChoices::max_entries);
    EXPECT_EQ(choices.find(key(max)), GroupedBackend::kernel) << "recently found: kept";
    EXPECT_FALSE(choices.find(key(max - 1)).has_value()) << "least recently used: dropped";
    EXPECT_EQ(choices.find(key(max + 1)), GroupedBackend::cublas);
    EXPECT_EQ(choices.find(key(1)), GroupedBackend::streams) << "the newest of the first fill";
    // Remembering a known key again replaces its choice without dropping another.
    choices.remember(key(1), GroupedBackend::loop);
    EXPECT_EQ(choices.size(), detail::BackendChoices::max_entries);
    EXPECT_EQ(choices.find(key(1)), GroupedBackend::loop);
}

TEST(GroupedChoices, ACublasChoiceIsKeptApartFromCallsCublasRefuses) {
    // automatic remembered cublas for a call class measured with f32 compute; a call of the same
    // class with an f16 compute type (which cublas refuses) found that choice and threw
    // NotSupported. Whether cublas can run the call is part of the key.
    detail::BackendChoices choices;
    detail::BackendChoiceKey runs;
    runs.n = 2048;
    runs.k = 7168;
    runs.cublas = true;
    choices.remember(runs, GroupedBackend::cublas);
    detail::BackendChoiceKey refused = runs;
    refused.cublas = false;
    EXPECT_FALSE(choices.find(refused).has_value());
    EXPECT_EQ(choices.find(runs), GroupedBackend::cublas);
}

TEST(GroupedKernel, F16AndBf16NeedComputeCapability8) {
    // ptxas refused the kernel's cp.async and bf16 MMA on older GPUs: a CompileError about
    // gpumath's own source instead of NotSupported before anything is compiled.
    for (const DataType t : {DataType::f16, DataType::bf16}) {
        const std::string why = detail::grouped_kernel_device_refusal(t, {7, 5});
        EXPECT_NE(why.find(std::string(to_string(t)) + " inputs on a device of compute capability 7.5"),
                  std::string::npos)
            << why;
        EXPECT_NE(why.find("from compute capability 8.0"), std::string::npos) << why;
        EXPECT_EQ(detail::grouped_kernel_device_refusal(t, {8, 0}), "");
        EXPECT_EQ(detail::grouped_kernel_device_refusal(t, {9, 0}), "");
    }
    EXPECT_EQ(detail::grouped_kernel_device_refusal(DataType::f32, {7, 0}), "") << "the SIMT kernel runs anywhere";
}
