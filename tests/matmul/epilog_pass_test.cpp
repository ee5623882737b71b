// SPDX-License-Identifier: Apache-2.0
// gpumath's elementwise epilog pass without a GPU: which part of an epilog cuBLASLt runs and which
// the pass runs (SiLU, a bias along D's strided dimension, the user's function), the rules the pass
// checks before any CUDA call, the plan key of a user function, and the generated kernels compiling
// with NVRTC. Pointers are fake device addresses, never dereferenced.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include <gpumath/matmul.hpp>

#include "common/test_util.hpp"
#include "matmul/epilog_pass.hpp"
#include "matmul/internal.hpp"
#include "matmul/row_parts.hpp"

#ifndef GPUMATH_TEST_ARCH
#define GPUMATH_TEST_ARCH "sm_90"
#endif

using namespace gpumath;
using namespace gpumath::detail;
using gpumath::test::expect_throw_with;
using Activation = EpilogPass::Activation;

namespace {

constexpr auto bf16 = DataType::bf16;
constexpr std::int64_t M = 64, N = 96, K = 32;

void* addr(int slot) { return reinterpret_cast<void*>((std::uintptr_t(slot) + 1) * (std::uintptr_t(1) << 24)); }

TensorView a_view(DataType t = bf16) { return TensorView(addr(0), t, {M, K}); }
TensorView b_view(DataType t = bf16) { return TensorView(addr(1), t, {K, N}); }
TensorView d_row(DataType t = bf16) { return TensorView(addr(2), t, {M, N}); }
TensorView d_col(DataType t = bf16) { return TensorView(addr(2), t, {M, N}, {1, M}); }
TensorView bias_per_col(DataType t = bf16) { return TensorView(addr(3), t, {N}); }
TensorView bias_per_row(DataType t = bf16) { return TensorView(addr(3), t, {M, 1}); }

MatmulProblem analyze_call(const TensorView& d, const MatmulArgs& args, const MatmulOptions& options,
                           DataType in = bf16) {
    // A MatmulCall points at its views: they outlive it here.
    const TensorView a = a_view(in), b = b_view(in);
    const MatmulCall call = call_of(a, b, &d, args);
    return analyze(MatmulSignature::of(call), options, "test");
}

const MatmulEpilogFunction gate{
    .source =
        "__device__ float gate(float v, long long, long long row, long long col, void* info) {\n"
        "    return v * static_cast<const float*>(info)[row * 96 + col];\n}\n",
    .symbol = "gate"};

}  // namespace

// ---- routing: cuBLASLt's share and the pass's --------------------------------------------------

TEST(EpilogPass, BuiltInEpilogsInTheirFusedOrientationHaveNoPass) {
    for (Epilog e : {Epilog::none, Epilog::relu, Epilog::gelu_bias, Epilog::bias}) {
        SCOPED_TRACE(std::string(to_string(e)));
        MatmulArgs args;
        if (epilog_takes_bias(e)) args.bias = bias_per_col();
        const MatmulProblem p = analyze_call(d_row(), args, {.epilog = e});
        EXPECT_FALSE(p.pass.on);
        EXPECT_EQ(p.inputs.effective, e);
    }
}

TEST(EpilogPass, SiluRunsInThePassWithTheBiasFusedWhereCuBLASLtCanAddIt) {
    const MatmulProblem silu = analyze_call(d_row(), {}, {.epilog = Epilog::silu});
    EXPECT_TRUE(silu.pass.on);
    EXPECT_EQ(silu.pass.act, Activation::silu);
    EXPECT_FALSE(silu.pass.bias);
    EXPECT_EQ(silu.inputs.effective, Epilog::none);
    EXPECT_EQ(silu.lt.epilog, CUBLASLT_EPILOGUE_DEFAULT);

    const MatmulProblem fused = analyze_call(d_row(), {.bias = bias_per_col()}, {.epilog = Epilog::silu_bias});
    EXPECT_EQ(fused.pass.act, Activation::silu);
    EXPECT_FALSE(fused.pass.bias);
    EXPECT_TRUE(fused.inputs.bias_vector);
    EXPECT_EQ(fused.lt.epilog, CUBLASLT_EPILOGUE_BIAS);

    // A full (M, N) bias goes through C; the pass applies SiLU.
    const MatmulProblem full =
        analyze_call(d_row(), {.bias = TensorView(addr(3), bf16, {M, N})}, {.epilog = Epilog::silu_bias});
    EXPECT_TRUE(full.inputs.c_from_bias);
    EXPECT_EQ(full.pass.act, Activation::silu);
    EXPECT_EQ(full.lt.epilog, CUBLASLT_EPILOGUE_DEFAULT);
}

TEST(EpilogPass, ABiasAlongTheStridedDimensionOfDRunsInThePass) {
    struct Case {
        Epilog epilog;
        Activation act;
    };
    for (const Case c : {Case{Epilog::bias, Activation::none}, Case{Epilog::relu_bias, Activation::relu},
                         Case{Epilog::gelu_bias, Activation::gelu}, Case{Epilog::silu_bias, Activation::silu}}) {
        SCOPED_TRACE(std::string(to_string(c.epilog)));
        // Per row of a row-major D: cuBLASLt computes D^T (swap) and the bias runs across D_lt's rows.
        const MatmulProblem row = analyze_call(d_row(), {.bias = bias_per_row()}, {.epilog = c.epilog});
        EXPECT_TRUE(row.pass.on && row.pass.bias);
        EXPECT_TRUE(row.lt.swap);
        EXPECT_FALSE(row.pass.bias_inner);
        EXPECT_EQ(row.pass.bias_stride, 1);
        EXPECT_EQ(row.pass.act, c.act);
        EXPECT_FALSE(row.inputs.bias_vector);
        EXPECT_EQ(row.lt.epilog, CUBLASLT_EPILOGUE_DEFAULT);
        EXPECT_EQ(row.pass.inner, N);
        EXPECT_EQ(row.pass.outer, M);
        // Per column of a column-major D.
        const MatmulProblem col = analyze_call(d_col(), {.bias = bias_per_col()}, {.epilog = c.epilog});
        EXPECT_TRUE(col.pass.bias);
        EXPECT_FALSE(col.lt.swap);
        EXPECT_FALSE(col.pass.bias_inner);
        EXPECT_EQ(col.pass.inner, M);
        EXPECT_EQ(col.lt.epilog, CUBLASLT_EPILOGUE_DEFAULT);
    }
    // The pass reads a bias with any stride, and a bias per batch.
    const TensorView strided(addr(3), bf16, {M, 1}, {3, 1});
    EXPECT_EQ(analyze_call(d_row(), {.bias = strided}, {.epilog = Epilog::bias}).pass.bias_stride, 3);
    const TensorView a3(addr(0), bf16, {2, M, K}), b3(addr(1), bf16, {2, K, N}), d3(addr(2), bf16, {2, M, N});
    const TensorView bias3(addr(3), bf16, {2, M, 1});
    const MatmulProblem batched =
        analyze(MatmulSignature::of(call_of(a3, b3, &d3, {.bias = bias3})), {.epilog = Epilog::gelu_bias}, "test");
    EXPECT_TRUE(batched.pass.bias);
    EXPECT_EQ(batched.pass.batch, 2);
    EXPECT_EQ(batched.pass.batch_stride, M * N);
    EXPECT_EQ(batched.pass.bias_batch_stride, M);
}

TEST(EpilogPass, AuxEpilogsStillNeedTheOrientationCuBLASLtTakes) {
    // The aux holds x + bias as cuBLASLt computes it: no pass can add the bias for it.
    expect_throw_with<InvalidArgument>(
        [&] { (void)analyze_call(d_row(), {.bias = bias_per_row()}, {.epilog = Epilog::gelu_aux_bias}); },
        {"bias", "per row", "unit-stride"});
}

TEST(EpilogPass, AUserFunctionRunsLastWithTheBiasStillFused) {
    const MatmulProblem p =
        analyze_call(d_row(), {.bias = bias_per_col()}, {.epilog = Epilog::relu_bias, .epilog_function = gate});
    EXPECT_TRUE(p.pass.on && p.pass.function);
    EXPECT_FALSE(p.pass.bias);
    EXPECT_EQ(p.pass.act, Activation::none);
    EXPECT_EQ(p.lt.epilog, CUBLASLT_EPILOGUE_RELU_BIAS);
    EXPECT_TRUE(p.pass.swap);
}

// ---- rules ------------------------------------------------------------------------------------

TEST(EpilogPass, RulesAreCheckedBeforeAnyCudaCall) {
    expect_throw_with<InvalidArgument>(
        [&] { (void)analyze_call(d_row(), {}, {.epilog_function = MatmulEpilogFunction{.source = "x"}}); },
        {"options.epilog_function.symbol", "empty", "__device__ float epilog(float value"});
    expect_throw_with<InvalidArgument>(
        [&] { (void)analyze_call(d_row(), {}, {.epilog_function = MatmulEpilogFunction{.symbol = "f"}}); },
        {"options.epilog_function.source", "empty"});
    // NVRTC reads C strings: what follows a NUL byte would silently not be compiled.
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)analyze_call(
                d_row(), {},
                {.epilog_function = MatmulEpilogFunction{.source = std::string("x\0y", 3), .symbol = "f"}});
        },
        {"options.epilog_function.source", "NUL byte at offset 1"});
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)analyze_call(d_row(), {},
                               {.epilog_function = MatmulEpilogFunction{.source = "x", .symbol = "f(v); //"}});
        },
        {"options.epilog_function.symbol", "\"f(v); //\"", "is not a C++ name"});
    // The pass writes f16, bf16 and f32 D only.
    expect_throw_with<NotSupported>(
        [&] {
            const TensorView a(addr(0), DataType::f64, {M, K}), b(addr(1), DataType::f64, {K, N});
            const MatmulCall call = call_of(a, b, nullptr, {});
            MatmulSignature sig = MatmulSignature::of(call);
            sig.d = TensorLayout(DataType::f64, {M, N});
            (void)analyze(sig, {.epilog_function = gate}, "test");
        },
        {"options.epilog_function", "f16, bf16 or f32", "f64"});
    expect_throw_with<NotSupported>(
        [&] {
            const TensorView a(addr(0), DataType::f64, {M, K}), b(addr(1), DataType::f64, {K, N});
            const MatmulCall call = call_of(a, b, nullptr, {});
            MatmulSignature sig = MatmulSignature::of(call);
            sig.d = TensorLayout(DataType::f64, {M, N});
            (void)analyze(sig, {.epilog = Epilog::silu}, "test");
        },
        {"epilog silu", "f64"});
    // Integer and complex products take no epilog, SiLU included.
    expect_throw_with<NotSupported>(
        [&] {
            (void)analyze_call(TensorView(addr(2), DataType::i32, {M, N}), {}, {.epilog = Epilog::silu}, DataType::i8);
        },
        {"silu"});
    // A bias still needs an epilog that takes one, and an epilog that takes one needs it.
    expect_throw_with<InvalidArgument>([&] { (void)analyze_call(d_row(), {}, {.epilog = Epilog::silu_bias}); },
                                       {"bias", "silu_bias"});
    expect_throw_with<InvalidArgument>(
        [&] { (void)analyze_call(d_row(), {.bias = bias_per_col()}, {.epilog = Epilog::silu}); }, {"bias", "silu"});
    // Out-of-range epilogs, one past the last enumerator included.
    expect_throw_with<InvalidArgument>(
        [&] { (void)analyze_call(d_row(), {}, {.epilog = static_cast<Epilog>(int(Epilog::silu_bias) + 1)}); },
        {"options.epilog", "Epilog"});
    // The pass's grid covers D_lt's unit-stride dimension in at most 2^31 - 1 blocks of 256 threads:
    // a longer one is refused when the problem is analyzed, not after the product was enqueued.
    {
        const std::int64_t limit = std::int64_t(2147483647) * 256;
        const TensorView a(addr(0), bf16, {4, 1}), b_ok(addr(1), bf16, {1, limit}),
            b_long(addr(1), bf16, {1, limit + 1});
        const TensorView d_ok(addr(2), bf16, {4, limit}), d_long(addr(2), bf16, {4, limit + 1});
        const MatmulProblem ok =
            analyze(MatmulSignature::of(call_of(a, b_ok, &d_ok, {})), {.epilog = Epilog::silu}, "test");
        EXPECT_EQ(ok.pass.inner, limit);
        expect_throw_with<NotSupported>(
            [&] {
                (void)analyze(MatmulSignature::of(call_of(a, b_long, &d_long, {})), {.epilog = Epilog::silu}, "test");
            },
            {"test", "d: 549755813633 elements along its unit-stride dimension", "at most 549755813632"});
    }
    EXPECT_EQ(to_string(Epilog::silu), "silu");
    EXPECT_EQ(to_string(Epilog::silu_bias), "silu_bias");
    EXPECT_TRUE(epilog_takes_bias(Epilog::silu_bias));
    EXPECT_FALSE(epilog_takes_bias(Epilog::silu));
}

TEST(EpilogPass, TheFunctionIsPartOfThePlanKey) {
    const TensorView a = a_view(), b = b_view();
    const MatmulCall call = call_of(a, b, nullptr, {});
    const MatmulKey none = make_key(call, {}, -1);
    const MatmulKey f = make_key(call, {.epilog_function = gate}, -1);
    MatmulEpilogFunction other = gate;
    other.source += "// another version\n";
    const MatmulKey g = make_key(call, {.epilog_function = other}, -1);
    MatmulEpilogFunction renamed = gate;
    renamed.symbol = "::gate";
    EXPECT_FALSE(none == f);
    EXPECT_FALSE(f == g);
    EXPECT_FALSE(f == make_key(call, {.epilog_function = renamed}, -1));
    EXPECT_TRUE(f == make_key(call, {.epilog_function = gate}, -1));
    // Keys with a function survive a tuning file's text form.
    MatmulKey parsed;
    ASSERT_TRUE(parse_key(key_to_text(f), parsed));
    EXPECT_TRUE(parsed == f);
}

// ---- generated kernels --------------------------------------------------------------------------

TEST(EpilogPass, EveryVariantCompiles) {
    for (DataType d : {DataType::f16, DataType::bf16, DataType::f32})
        for (Activation act : {Activation::none, Activation::relu, Activation::gelu, Activation::silu})
            for (int bias = 0; bias < 3; ++bias)
                for (bool function : {false, true}) {
                    EpilogPass pass;
                    pass.on = true;
                    pass.act = act;
                    pass.bias = bias > 0;
                    pass.bias_inner = bias == 2;
                    pass.bias_type = d;
                    pass.swap = function;
                    SCOPED_TRACE(std::string(to_string(d)) + " act " + std::to_string(int(act)) + " bias " +
                                 std::to_string(bias) + (function ? " function" : ""));
                    EXPECT_NO_THROW((void)compile_epilog_pass(pass, d, function ? &gate : nullptr, GPUMATH_TEST_ARCH));
                }
}

TEST(EpilogPass, AFunctionThatDoesNotCompileNamesItselfAndItsSignature) {
    EpilogPass pass;
    pass.on = pass.function = true;
    const MatmulEpilogFunction broken{.source = "__device__ float swish(float v) { return v * undefined_name; }",
                                      .symbol = "swish"};
    try {
        (void)compile_epilog_pass(pass, bf16, &broken, GPUMATH_TEST_ARCH);
        FAIL() << "expected CompileError";
    } catch (const CompileError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("options.epilog_function \"swish\""), std::string::npos) << what;
        EXPECT_NE(what.find(matmul_epilog_signature("swish")), std::string::npos) << what;
        EXPECT_NE(e.log().find("undefined_name"), std::string::npos) << e.log();
    }
    expect_throw_with<InvalidArgument>([] { (void)matmul_epilog_signature("1;x"); },
                                       {"symbol", "\"1;x\"", "not a C++ name"});
    expect_throw_with<InvalidArgument>([] { (void)matmul_epilog_signature("float"); },
                                       {"symbol", "\"float\"", "not a keyword"});
    EXPECT_EQ(matmul_epilog_signature("f"),
              "__device__ float f(float value, long long batch, long long row, long long col, void* user_info)");
}

// ---- large products with a pass: blocks of D's rows on two streams -----------------------------

TEST(EpilogPass, OnlyLargeProductsWithABuiltInPassRunInRowBlocks) {
    // D (4096, 8192) bf16 is 64 MiB, the smallest split; x (4096, 2048) times b (2048, 8192), the
    // shortest product split for a bf16 D (2 K flops per 2-byte element of D: 2048).
    const std::int64_t m = 4096, n = 8192, k = 2048;
    const TensorView a(addr(0), bf16, {m, k}), b(addr(1), bf16, {k, n}), d(addr(2), bf16, {m, n});
    const TensorView per_row(addr(3), bf16, {m, 1}), per_col(addr(3), bf16, {n}), c(addr(4), bf16, {m, n});
    const auto parts = [&](const TensorView& av, const TensorView& dv, const MatmulArgs& args,
                           const MatmulOptions& options) {
        const MatmulProblem P = analyze(MatmulSignature::of(call_of(av, b, &dv, args)), options, "test");
        return runs_in_row_parts(P, av, dv, args);
    };
    EXPECT_TRUE(parts(a, d, {.bias = per_row}, {.epilog = Epilog::bias}));
    EXPECT_TRUE(parts(a, d, {.bias = per_row}, {.epilog = Epilog::gelu_bias}));
    EXPECT_TRUE(parts(a, d, {.bias = per_col}, {.epilog = Epilog::silu_bias}));
    EXPECT_TRUE(parts(a, d, {}, {.epilog = Epilog::silu}));
    EXPECT_TRUE(parts(a, d, {.alpha = 0.5, .bias = per_row}, {.epilog = Epilog::bias}));
    // No pass: cuBLASLt's epilog does it all.
    EXPECT_FALSE(parts(a, d, {.bias = per_col}, {.epilog = Epilog::gelu_bias}));
    EXPECT_FALSE(parts(a, d, {}, {}));
    // A column-major D (SiLU has a pass in either layout).
    const TensorView d_cm(addr(2), bf16, {m, n}, {1, m});
    EXPECT_FALSE(parts(a, d_cm, {}, {.epilog = Epilog::silu}));
    // A C operand, or the user's function (which sees each element's row).
    EXPECT_FALSE(parts(a, d, {.beta = 1.0, .c = c, .bias = per_row}, {.epilog = Epilog::bias}));
    EXPECT_FALSE(parts(a, d, {}, {.epilog_function = gate}));
    // D under 64 MiB, or rows that do not split into four blocks of a multiple of 16.
    const TensorView a_small(addr(0), bf16, {m / 2, k}), d_small(addr(2), bf16, {m / 2, n});
    EXPECT_FALSE(parts(a_small, d_small, {.bias = TensorView(addr(3), bf16, {m / 2, 1})}, {.epilog = Epilog::bias}));
    const TensorView a_odd(addr(0), bf16, {m + 8, k}), d_odd(addr(2), bf16, {m + 8, n});
    EXPECT_FALSE(parts(a_odd, d_odd, {.bias = TensorView(addr(3), bf16, {m + 8, 1})}, {.epilog = Epilog::bias}));
    // A single-column f32 D of 64 MiB with a bias per row (which is one per element there):
    // cuBLASLt is given D column-major (no swap), an arrangement row blocks were not measured in.
    const std::int64_t tall = std::int64_t(1) << 24, k32 = 4096;
    const TensorView a_tall(addr(0), DataType::f32, {tall, k32}), b_col(addr(1), DataType::f32, {k32, 1}),
        d_col(addr(2), DataType::f32, {tall, 1}, {1, 1}), bias_col(addr(3), DataType::f32, {tall, 1});
    const MatmulArgs col_args{.bias = bias_col};
    const MatmulProblem P_col =
        analyze(MatmulSignature::of(call_of(a_tall, b_col, &d_col, col_args)), {.epilog = Epilog::silu_bias}, "test");
    EXPECT_TRUE(P_col.pass.on);
    EXPECT_FALSE(P_col.lt.swap);
    EXPECT_FALSE(runs_in_row_parts(P_col, a_tall, d_col, col_args));
    // A product of fewer than 2048 flops per byte of D runs whole. An f32 D (4-byte elements) needs
    // K of 4096.
    const TensorView a_short(addr(0), bf16, {m, k - 1}), b_short(addr(1), bf16, {k - 1, n});
    const MatmulArgs row_args{.bias = per_row};
    const MatmulProblem P_short =
        analyze(MatmulSignature::of(call_of(a_short, b_short, &d, row_args)), {.epilog = Epilog::bias}, "test");
    EXPECT_FALSE(runs_in_row_parts(P_short, a_short, d, row_args));
    const TensorView d32(addr(2), DataType::f32, {m, n});
    const MatmulArgs silu_args{};
    const MatmulProblem P32 =
        analyze(MatmulSignature::of(call_of(a, b, &d32, silu_args)), {.epilog = Epilog::silu}, "test");
    EXPECT_FALSE(runs_in_row_parts(P32, a, d32, silu_args));
    const TensorView a_long(addr(0), bf16, {m, 2 * k}), b_long(addr(1), bf16, {2 * k, n});
    const MatmulProblem P32_long =
        analyze(MatmulSignature::of(call_of(a_long, b_long, &d32, silu_args)), {.epilog = Epilog::silu}, "test");
    EXPECT_TRUE(runs_in_row_parts(P32_long, a_long, d32, silu_args));
    // A batch of products.
    const TensorView a3(addr(0), bf16, {2, m, k}), b3(addr(1), bf16, {2, k, n}), d3(addr(2), bf16, {2, m, n});
    const MatmulArgs batched{.bias = TensorView(addr(3), bf16, {2, m, 1})};
    const MatmulProblem P3 =
        analyze(MatmulSignature::of(call_of(a3, b3, &d3, batched)), {.epilog = Epilog::bias}, "test");
    EXPECT_FALSE(runs_in_row_parts(P3, a3, d3, batched));
}
