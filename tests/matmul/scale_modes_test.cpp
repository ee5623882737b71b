// SPDX-License-Identifier: Apache-2.0
// The finer FP8 scale modes on the host: every rule is checked before any GPU work (pointers here
// are never dereferenced), the scale modes follow the operands through cuBLASLt's swap, batched
// problems run one product at a time, and the modes are part of plan keys.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include <gpumath/matmul.hpp>

#include "common/test_util.hpp"
#include "matmul/internal.hpp"
#include "matmul/scales.hpp"

using namespace gpumath;
using namespace gpumath::detail;
using gpumath::test::expect_throw_with;

namespace {

constexpr auto e4m3 = DataType::e4m3;
constexpr auto bf16 = DataType::bf16;
constexpr auto f32 = DataType::f32;
constexpr auto tensor = ScaleMode::tensor;
constexpr auto outer = ScaleMode::outer_vector;
constexpr auto b1 = ScaleMode::block_1x128;
constexpr auto b2 = ScaleMode::block_128x128;

void* addr(int slot, std::uintptr_t offset = 0) {
    return reinterpret_cast<void*>((std::uintptr_t(slot) + 1) * (std::uintptr_t(1) << 24) + offset);
}

// A valid FP8 problem: a (M, K) row-major, b (K, N) column-major, d (M, N) row-major bf16, with
// the scale tensors of docs/matmul.md for a_mode and b_mode.
struct Fp8 {
    static constexpr std::int64_t M = 256, N = 384, K = 320;  // L = 3, L4 = 4
    TensorView a{addr(0), e4m3, {M, K}};
    TensorView b{addr(1), e4m3, {K, N}, {1, K}};
    TensorView d{addr(2), bf16, {M, N}};

    static TensorView scales_of(ScaleMode m, bool is_b, int slot = 3) {
        const std::int64_t outer_n = is_b ? N : M;
        switch (m) {
            case ScaleMode::outer_vector:
                return TensorView(addr(slot), f32, {outer_n});
            case ScaleMode::block_1x128:
                return is_b ? TensorView(addr(slot), f32, {3, N}, {N, 1}) : TensorView(addr(slot), f32, {M, 3}, {1, M});
            case ScaleMode::block_128x128:
                return is_b ? TensorView(addr(slot), f32, {3, 3}, {1, 4}) : TensorView(addr(slot), f32, {2, 3}, {4, 1});
            default:
                return {};
        }
    }
    MatmulArgs args(ScaleMode am, ScaleMode bm) const {
        MatmulArgs x;
        x.scales.a_mode = am;
        x.scales.b_mode = bm;
        if (am != tensor) x.scales.a_tensor = scales_of(am, false, 3);
        if (bm != tensor) x.scales.b_tensor = scales_of(bm, true, 4);
        return x;
    }
};

MatmulProblem analyze_call(const TensorView& a, const TensorView& b, const TensorView& d, const MatmulArgs& args,
                           const MatmulOptions& options = {}) {
    const MatmulCall call = call_of(a, b, &d, args);
    return analyze(MatmulSignature::of(call), options, "test");
}

}  // namespace

// ---- layouts ----------------------------------------------------------------------------------

TEST(ScaleModes, LayoutsFollowTheDocumentedTable) {
    const std::int64_t batch[] = {2};
    // a (M = 200, K = 300): L = 3, L4 = 4, ceil(M / 128) = 2.
    EXPECT_EQ(scale_layout(outer, {}, 200, 300), TensorLayout(f32, {200}));
    EXPECT_EQ(scale_layout(b1, {}, 200, 300), TensorLayout(f32, {200, 3}, {1, 200}));
    EXPECT_EQ(scale_layout(b2, {}, 200, 300), TensorLayout(f32, {2, 3}, {4, 1}));
    EXPECT_EQ(scale_layout(b1, batch, 200, 300), TensorLayout(f32, {2, 200, 3}, {600, 1, 200}));
    EXPECT_EQ(scale_layout(b2, batch, 200, 300), TensorLayout(f32, {2, 2, 3}, {8, 4, 1}));
    EXPECT_EQ(scale_layout(tensor, {}, 200, 300).rank(), 0);
    // b (K = 300, N = 200) column-major: the transposes of the layouts of W = b^T as an a.
    const TensorLayout b(e4m3, {300, 200}, {1, 300});
    EXPECT_EQ(expected_scale_layout(b1, b, true), TensorLayout(f32, {3, 200}, {200, 1}));
    EXPECT_EQ(expected_scale_layout(b2, b, true), TensorLayout(f32, {3, 2}, {1, 4}));
    EXPECT_EQ(expected_scale_layout(outer, b, true), TensorLayout(f32, {200}));
}

TEST(ScaleModes, ModesAndTensorsSwapWithTheOperands) {
    Fp8 p;
    // Row-major D: cuBLASLt computes D^T = B^T A^T, so its A is the user's b.
    const auto swapped = analyze_call(p.a, p.b, p.d, p.args(b1, b2));
    ASSERT_TRUE(swapped.lt.swap);
    EXPECT_EQ(swapped.lt.a_scale_mode, CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F);
    EXPECT_EQ(swapped.lt.b_scale_mode, CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F);
    EXPECT_TRUE(swapped.scales.fine);
    EXPECT_FALSE(swapped.lt.loop.on);
    // Column-major D: no swap, cuBLASLt's A is the user's a.
    const TensorView dcol(addr(2), bf16, {Fp8::M, Fp8::N}, {1, Fp8::M});
    const auto straight = analyze_call(p.a, p.b, dcol, p.args(b1, b2));
    ASSERT_FALSE(straight.lt.swap);
    EXPECT_EQ(straight.lt.a_scale_mode, CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F);
    EXPECT_EQ(straight.lt.b_scale_mode, CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F);
    const auto rowwise = analyze_call(p.a, p.b, p.d, p.args(outer, outer));
    EXPECT_EQ(rowwise.lt.a_scale_mode, CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F);
    EXPECT_EQ(rowwise.lt.b_scale_mode, CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F);
}

TEST(ScaleModes, BatchedProblemsLoopOverProducts) {
    constexpr std::int64_t M = 128, N = 256, K = 256;  // L = 2, L4 = 4
    const TensorView a(addr(0), e4m3, {3, M, K});
    const TensorView b(addr(1), e4m3, {3, K, N}, {K * N, 1, K});
    const TensorView d(addr(2), bf16, {3, M, N});
    MatmulArgs args;
    args.scales = {.a_mode = b1,
                   .b_mode = b2,
                   .a_tensor = TensorView(addr(3), f32, {3, M, 2}, {M * 2, 1, M}),
                   .b_tensor = TensorView(addr(4), f32, {3, 2, 2}, {8, 1, 4})};
    const auto p = analyze_call(a, b, d, args);
    ASSERT_TRUE(p.lt.loop.on);
    EXPECT_EQ(p.lt.loop[slot_a], M * K);
    EXPECT_EQ(p.lt.loop[slot_b], K * N);
    EXPECT_EQ(p.lt.loop[slot_d], M * N * 2);
    EXPECT_EQ(p.lt.loop[slot_a_scale], M * 2 * 4);
    EXPECT_EQ(p.lt.loop[slot_b_scale], 8 * 4);
    // A broadcast b (no batch dimension) and its scales stay put.
    MatmulArgs shared = args;
    shared.scales.b_tensor = TensorView(addr(4), f32, {2, 2}, {1, 4});
    const auto q = analyze_call(a, TensorView(addr(1), e4m3, {K, N}, {1, K}), d, shared);
    ASSERT_TRUE(q.lt.loop.on);
    EXPECT_EQ(q.lt.loop[slot_b], 0);
    EXPECT_EQ(q.lt.loop[slot_b_scale], 0);
}

TEST(ScaleModes, ModesArePartOfTheKey) {
    Fp8 p;
    const MatmulArgs x = p.args(b1, b2);
    MatmulArgs y = x;  // the same tensors with other modes: their layouts alone would not tell
    y.scales.a_mode = b2;
    y.scales.b_mode = b1;
    const MatmulCall cx = call_of(p.a, p.b, &p.d, x);
    const MatmulCall cy = call_of(p.a, p.b, &p.d, y);
    EXPECT_FALSE(make_key(cx, {}, 0) == make_key(cy, {}, 0));
    EXPECT_FALSE(plan_serves(cx, cy));
    EXPECT_TRUE(plan_serves(cx, call_of(p.a, p.b, &p.d, x)));
    MatmulArgs z = x;
    z.scales.a_mode = outer;
    z.scales.b_mode = outer;
    z.scales.a_tensor = Fp8::scales_of(outer, false, 3);
    z.scales.b_tensor = Fp8::scales_of(outer, true, 4);
    EXPECT_FALSE(make_key(call_of(p.a, p.b, &p.d, z), {}, 0) == make_key(cx, {}, 0));
    // Tuning files keep the modes: a saved key reads back equal, and differs from the other modes'.
    MatmulKey parsed;
    ASSERT_TRUE(parse_key(key_to_text(make_key(cx, {}, -1)), parsed));
    EXPECT_TRUE(parsed == make_key(cx, {}, -1));
    EXPECT_FALSE(parsed == make_key(cy, {}, -1));
}

// ---- rejected before any GPU work -------------------------------------------------------------

TEST(ScaleModes, DimensionsMultipleOf16) {
    // Per-tensor FP8 takes any M with a row-major D; the finer modes keep M, N and K multiples of 16.
    const TensorView a(addr(0), e4m3, {24, 128}), b(addr(1), e4m3, {128, 16}, {1, 128}), d(addr(2), bf16, {24, 16});
    EXPECT_EQ(analyze_call(a, b, d, {}).shape.m, 24);
    MatmulArgs args;
    args.scales.a_mode = outer;
    args.scales.b_mode = outer;
    args.scales.a_tensor = TensorView(addr(3), f32, {24});
    args.scales.b_tensor = TensorView(addr(4), f32, {16});
    expect_throw_with<NotSupported>([&] { (void)analyze_call(a, b, d, args); }, {"finer than a tensor", "M = 24"});
}

TEST(ScaleModes, OnlyForFp8Inputs) {
    const TensorView a(addr(0), bf16, {64, 64}), b(addr(1), bf16, {64, 64}), d(addr(2), bf16, {64, 64});
    MatmulArgs args;
    args.scales.a_mode = b1;
    args.scales.a_tensor = TensorView(addr(3), f32, {64, 1}, {1, 64});
    expect_throw_with<InvalidArgument>([&] { matmul(a, b, d, args); },
                                       {"scales.a_mode", "block_1x128", "FP8 inputs only", "bf16"});
}

TEST(ScaleModes, UnsupportedPairsAreNotSupported) {
    Fp8 p;
    for (const auto& [am, bm] : {std::pair{b2, b2}, std::pair{outer, b1}, std::pair{b1, outer},
                                 std::pair{tensor, outer}, std::pair{outer, tensor}, std::pair{tensor, b1}})
        expect_throw_with<NotSupported>([&] { matmul(p.a, p.b, p.d, p.args(am, bm)); },
                                        {"scales:", "a_mode", std::string(to_string(am)), "both outer_vector"});
}

TEST(ScaleModes, ResultsAndEpilogs) {
    Fp8 p;
    const TensorView d8(addr(2), e4m3, {Fp8::M, Fp8::N});
    expect_throw_with<NotSupported>([&] { matmul(p.a, p.b, d8, p.args(b1, b1)); }, {"d:", "e4m3", "bf16, f16 or f32"});
    for (const Epilog e : {Epilog::gelu_aux, Epilog::gelu_aux_bias, Epilog::relu_aux_bias}) {
        MatmulArgs args = p.args(b1, b2);
        if (e != Epilog::gelu_aux) args.bias = TensorView(addr(5), bf16, {Fp8::N});
        expect_throw_with<NotSupported>([&] { matmul(p.a, p.b, p.d, args, {.epilog = e}); },
                                        {"epilog:", std::string(to_string(e)), "relu_aux"});
    }
    // Accepted: the epilogs cuBLASLt runs with every pair.
    MatmulArgs with_bias = p.args(outer, outer);
    with_bias.bias = TensorView(addr(5), bf16, {Fp8::N});
    EXPECT_NO_THROW((void)analyze_call(p.a, p.b, p.d, with_bias, {.epilog = Epilog::gelu_bias}));
    EXPECT_NO_THROW((void)analyze_call(p.a, p.b, p.d, p.args(b2, b1), {.epilog = Epilog::relu_aux}));
}

TEST(ScaleModes, TensorsMustMatchTheirMode) {
    Fp8 p;
    // Missing tensor.
    MatmulArgs missing = p.args(b1, b1);
    missing.scales.b_tensor.reset();
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, missing); },
                                       {"scales.b_tensor", "block_1x128 needs the scale tensor", "(3, 384)"});
    // A per-tensor pointer with a finer mode.
    MatmulArgs both = p.args(b1, b1);
    both.scales.a = static_cast<const float*>(addr(6));
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, both); },
                                       {"scales.a:", "per-tensor", "scales.a_tensor"});
    // A tensor with mode `tensor`.
    MatmulArgs stray = p.args(tensor, tensor);
    stray.scales.a_tensor = Fp8::scales_of(b1, false);
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, stray); }, {"scales.a_tensor", "a_mode is tensor"});
    // Wrong shape: (M, L) row-major instead of M-major.
    MatmulArgs rowmajor = p.args(b1, b1);
    rowmajor.scales.a_tensor = TensorView(addr(3), f32, {Fp8::M, 3});
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, rowmajor); },
                                       {"scales.a_tensor", "(256, 3)", "strides (1, 256)"});
    // Wrong orientation for b: (N, L) instead of (L, N).
    MatmulArgs transposed = p.args(b1, b1);
    transposed.scales.b_tensor = TensorView(addr(4), f32, {Fp8::N, 3}, {1, Fp8::N});
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, transposed); }, {"scales.b_tensor", "(3, 384)"});
    // 128x128 without the padded row stride L4.
    MatmulArgs unpadded = p.args(b2, b1);
    unpadded.scales.a_tensor = TensorView(addr(3), f32, {2, 3}, {3, 1});
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, unpadded); }, {"scales.a_tensor", "strides (4, 1)"});
    // Wrong dtype.
    MatmulArgs f16_scales = p.args(outer, outer);
    f16_scales.scales.a_tensor = TensorView(addr(3), DataType::f16, {Fp8::M});
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, f16_scales); }, {"scales.a_tensor", "f32"});
    // 8-byte aligned.
    MatmulArgs misaligned = p.args(outer, outer);
    misaligned.scales.b_tensor = TensorView(static_cast<char*>(addr(4)) + 8, f32, {Fp8::N});
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, misaligned); },
                                       {"scales.b_tensor", "8-byte aligned", "16-byte"});
    // Overlapping d.
    MatmulArgs overlapping = p.args(outer, outer);
    overlapping.scales.a_tensor = TensorView(addr(2), f32, {Fp8::M});
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, overlapping); }, {"scales.a_tensor", "overlaps d"});
}

TEST(ScaleModes, EnumsOutsideTheirEnumerators) {
    Fp8 p;
    MatmulArgs args = p.args(b1, b1);
    args.scales.b_mode = static_cast<ScaleMode>(9);
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, args); },
                                       {"scales.b_mode", "9 is not a ScaleMode", "block_128x128"});
    // 18 = 16 + block_1x128: keys keep four bits per mode, so the whole value is checked first.
    args.scales.b_mode = static_cast<ScaleMode>(18);
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, args); },
                                       {"scales.b_mode", "18 is not a ScaleMode"});
    args.scales.b_mode = b1;
    args.scales.a_mode = static_cast<ScaleMode>(16);
    expect_throw_with<InvalidArgument>([&] { Matmul(p.a, p.b).execute(p.a, p.b, p.d, args); },
                                       {"scales.a_mode", "16 is not a ScaleMode"});
}

TEST(ScaleModes, AuxSharesNoMemoryWithTheInputs) {
    Fp8 p;
    MatmulArgs args = p.args(b1, b2);
    // A relu_aux mask over b's scale tensor would be written while cuBLASLt reads the scales.
    args.aux = TensorView(addr(4), DataType::i8, {Fp8::N, 32});
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, args, {.epilog = Epilog::relu_aux}); },
                                       {"aux:", "overlaps scales.b_tensor's"});
    args.aux = TensorView(addr(0), DataType::i8, {Fp8::N, 32});
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, args, {.epilog = Epilog::relu_aux}); },
                                       {"aux:", "overlaps a's"});
}

TEST(ScaleModes, TuningKeysFromBeforeTheScaleTensorSlots) {
    // A key written with 8 alignment classes (the layout slots up to bias_grad, then the per-tensor
    // scales) reads back with the scale tensors absent.
    Fp8 p;
    MatmulArgs x;
    x.scales.a = static_cast<const float*>(addr(6, 16));
    const MatmulKey k = make_key(call_of(p.a, p.b, &p.d, x), {}, -1);
    std::string text = key_to_text(k);
    const std::string tail = "/100.100.100.100.100.100.100.10.";  // a b c d bias aux bias_grad scales (hex)
    text = text.substr(0, text.find('/')) + tail;
    MatmulKey parsed;
    ASSERT_TRUE(parse_key(text, parsed));
    EXPECT_TRUE(parsed == k);
    EXPECT_FALSE(parse_key(text.substr(0, text.size() - 3), parsed)) << "7 classes are malformed";
}

TEST(ScaleModes, BatchStridesKeepEveryProductAligned) {
    // d's batch stride of 64 * 72 bf16 elements is 9216 bytes (fine), but a scale tensor whose
    // batches are 2 floats apart would put every other product's scales 8 bytes off.
    constexpr std::int64_t M = 64, N = 64, K = 128;
    const TensorView a(addr(0), e4m3, {2, M, K});
    const TensorView b(addr(1), e4m3, {2, K, N}, {K * N, 1, K});
    const TensorView d(addr(2), bf16, {2, M, N});
    MatmulArgs args;
    args.scales = {.a_mode = outer,
                   .b_mode = outer,
                   .a_tensor = TensorView(addr(3), f32, {2, M}, {M + 2, 1}),
                   .b_tensor = TensorView(addr(4), f32, {2, N})};
    expect_throw_with<NotSupported>([&] { matmul(a, b, d, args); },
                                    {"scales.a_tensor", "batch stride of 264 bytes", "multiple of 16"});
}
