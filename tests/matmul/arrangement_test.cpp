// SPDX-License-Identifier: Apache-2.0
// How gpumath arranges problems on cuBLASLt (swap for row-major D, ops, leading dimensions, batch
// strides, epilog vectors, FP8's TN rule), its plan keys and tuning-file text. Host only.
#include <gtest/gtest.h>

#include <sstream>

#include "common/test_util.hpp"
#include "matmul/internal.hpp"
#include "matmul/tuning.hpp"

using namespace gpumath;
using namespace gpumath::detail;

namespace {

constexpr auto f32 = DataType::f32;

MatmulProblem analyze_layouts(const TensorLayout& a, const TensorLayout& b, std::optional<TensorLayout> d,
                              const MatmulOptions& options = {}, std::optional<TensorLayout> bias = std::nullopt,
                              std::optional<TensorLayout> c = std::nullopt) {
    MatmulSignature s;
    s.a = a;
    s.b = b;
    s.d = std::move(d);
    s.bias = std::move(bias);
    s.c = std::move(c);
    s.from_layouts = !s.d.has_value();
    return analyze(s, options, "test");
}

}  // namespace

TEST(MatmulArrangement, RowMajorUsesTheSwap) {
    const auto p = analyze_layouts(TensorLayout(f32, {8, 4}), TensorLayout(f32, {4, 6}), TensorLayout(f32, {8, 6}));
    EXPECT_TRUE(p.lt.swap);
    // cuBLASLt's A is B^T (6 x 4), stored column-major with ld 6; its B is A^T (4 x 8), ld 4.
    EXPECT_EQ(p.lt.op_a, CUBLAS_OP_N);
    EXPECT_EQ(p.lt.op_b, CUBLAS_OP_N);
    EXPECT_EQ(p.lt.a.rows, 6u);
    EXPECT_EQ(p.lt.a.cols, 4u);
    EXPECT_EQ(p.lt.a.ld, 6);
    EXPECT_EQ(p.lt.b.rows, 4u);
    EXPECT_EQ(p.lt.b.cols, 8u);
    EXPECT_EQ(p.lt.b.ld, 4);
    EXPECT_EQ(p.lt.d.rows, 6u);
    EXPECT_EQ(p.lt.d.cols, 8u);
    EXPECT_EQ(p.lt.d.ld, 6);
    EXPECT_FALSE(p.lt.has_c);
}

TEST(MatmulArrangement, ColumnMajorDKeepsTheOrder) {
    const auto p = analyze_layouts(TensorLayout(f32, {8, 4}), TensorLayout(f32, {4, 6}, {1, 4}),
                                   TensorLayout(f32, {8, 6}, {1, 8}));
    EXPECT_FALSE(p.lt.swap);
    EXPECT_EQ(p.lt.op_a, CUBLAS_OP_T);  // A row-major: stored as A^T (4 x 8)
    EXPECT_EQ(p.lt.a.rows, 4u);
    EXPECT_EQ(p.lt.a.cols, 8u);
    EXPECT_EQ(p.lt.op_b, CUBLAS_OP_N);  // B column-major
    EXPECT_EQ(p.lt.b.ld, 4);
    EXPECT_EQ(p.lt.d.rows, 8u);
    EXPECT_EQ(p.lt.d.ld, 8);
}

TEST(MatmulArrangement, PaddedLeadingDimensions) {
    // A is a (8, 4) slice of a (8, 10) row-major buffer; D a slice of (8, 16).
    const auto p = analyze_layouts(TensorLayout(f32, {8, 4}, {10, 1}), TensorLayout(f32, {4, 6}),
                                   TensorLayout(f32, {8, 6}, {16, 1}));
    EXPECT_TRUE(p.lt.swap);
    EXPECT_EQ(p.lt.b.ld, 10);
    EXPECT_EQ(p.lt.d.ld, 16);
}

TEST(MatmulArrangement, Fp8IsTnInBothArrangements) {
    const TensorLayout a(DataType::e4m3, {32, 64});           // row-major: K contiguous
    const TensorLayout b(DataType::e4m3, {64, 16}, {1, 64});  // column-major: K contiguous
    const auto row = analyze_layouts(a, b, TensorLayout(DataType::bf16, {32, 16}));
    EXPECT_TRUE(row.lt.swap);
    EXPECT_EQ(row.lt.op_a, CUBLAS_OP_T);
    EXPECT_EQ(row.lt.op_b, CUBLAS_OP_N);
    const auto col = analyze_layouts(a, b, TensorLayout(DataType::bf16, {32, 16}, {1, 32}));
    EXPECT_FALSE(col.lt.swap);
    EXPECT_EQ(col.lt.op_a, CUBLAS_OP_T);
    EXPECT_EQ(col.lt.op_b, CUBLAS_OP_N);
    EXPECT_EQ(row.types.c, DataType::bf16);
    EXPECT_EQ(row.types.bias, DataType::bf16);
}

TEST(MatmulArrangement, Fp8ResultTypes) {
    const TensorLayout a(DataType::e4m3, {32, 64}), b(DataType::e4m3, {64, 16}, {1, 64});
    const auto fp8_out = analyze_layouts(a, b, TensorLayout(DataType::e4m3, {32, 16}));
    EXPECT_EQ(fp8_out.types.c, DataType::bf16);
    EXPECT_FALSE(fp8_out.lt.has_c);
    const auto f32_out = analyze_layouts(a, b, TensorLayout(f32, {32, 16}));
    EXPECT_EQ(f32_out.types.bias, DataType::bf16);
    EXPECT_EQ(f32_out.types.c, f32);
}

TEST(MatmulArrangement, BiasFollowsNumpyBroadcasting) {
    const TensorLayout a(f32, {8, 4}), b(f32, {4, 6});
    const MatmulOptions bias{.epilog = Epilog::bias};
    const auto per_col = analyze_layouts(a, b, TensorLayout(f32, {8, 6}), bias, TensorLayout(f32, {6}));
    EXPECT_TRUE(per_col.lt.swap);
    EXPECT_TRUE(per_col.inputs.bias_vector);
    EXPECT_EQ(per_col.lt.epilog, CUBLASLT_EPILOGUE_BIAS);
    const auto per_row = analyze_layouts(a, b, TensorLayout(f32, {8, 6}, {1, 8}), bias, TensorLayout(f32, {8, 1}));
    EXPECT_FALSE(per_row.lt.swap);
    EXPECT_TRUE(per_row.inputs.bias_vector);
    // A full bias goes through C with the plain epilog.
    const auto full =
        analyze_layouts(a, b, TensorLayout(f32, {8, 6}), {.epilog = Epilog::relu_bias}, TensorLayout(f32, {8, 6}));
    EXPECT_TRUE(full.inputs.c_from_bias);
    EXPECT_TRUE(full.lt.has_c);
    EXPECT_FALSE(full.inputs.bias_vector);
    EXPECT_EQ(full.inputs.effective, Epilog::relu);
    EXPECT_EQ(full.lt.epilog, CUBLASLT_EPILOGUE_RELU);
}

TEST(MatmulArrangement, BatchedBiasAndBroadcastOperands) {
    const auto p =
        analyze_layouts(TensorLayout(f32, {3, 8, 4}), TensorLayout(f32, {4, 6}), TensorLayout(f32, {3, 8, 6}),
                        {.epilog = Epilog::bias}, TensorLayout(f32, {3, 1, 6}));
    EXPECT_EQ(p.shape.batch, 3);
    EXPECT_EQ(p.lt.a.batch_stride, 0);   // B broadcast over the batch
    EXPECT_EQ(p.lt.b.batch_stride, 32);  // A
    EXPECT_EQ(p.lt.d.batch_stride, 48);
    EXPECT_EQ(p.lt.bias_batch_stride, 6);
    const auto shared = analyze_layouts(TensorLayout(f32, {3, 8, 4}), TensorLayout(f32, {4, 6}),
                                        TensorLayout(f32, {3, 8, 6}), {.epilog = Epilog::bias}, TensorLayout(f32, {6}));
    EXPECT_EQ(shared.lt.bias_batch_stride, 0);
}

TEST(MatmulArrangement, BiasGradientsFollowTheUsersOperands) {
    // bgrada needs a column-major a, bgradb a row-major b; either D works. cuBLASLt sees BGRADA
    // with its A not transposed or BGRADB with its B transposed.
    const TensorLayout a_col(f32, {8, 4}, {1, 8}), a_row(f32, {8, 4}), b_row(f32, {4, 6}), b_col(f32, {4, 6}, {1, 4});
    const TensorLayout d_row(f32, {8, 6}), d_col(f32, {8, 6}, {1, 8});
    const auto ga_row_d = analyze_layouts(a_col, b_row, d_row, {.epilog = Epilog::bgrada});
    EXPECT_TRUE(ga_row_d.lt.swap);
    EXPECT_EQ(ga_row_d.lt.epilog, CUBLASLT_EPILOGUE_BGRADB);
    EXPECT_EQ(ga_row_d.lt.op_b, CUBLAS_OP_T);
    EXPECT_EQ(ga_row_d.inputs.bias_grad_length, 8);
    const auto ga_col_d = analyze_layouts(a_col, b_col, d_col, {.epilog = Epilog::bgrada});
    EXPECT_FALSE(ga_col_d.lt.swap);
    EXPECT_EQ(ga_col_d.lt.epilog, CUBLASLT_EPILOGUE_BGRADA);
    EXPECT_EQ(ga_col_d.lt.op_a, CUBLAS_OP_N);
    const auto gb_row_d = analyze_layouts(a_row, b_row, d_row, {.epilog = Epilog::bgradb});
    EXPECT_EQ(gb_row_d.lt.epilog, CUBLASLT_EPILOGUE_BGRADA);
    EXPECT_EQ(gb_row_d.lt.op_a, CUBLAS_OP_N);
    EXPECT_EQ(gb_row_d.inputs.bias_grad_length, 6);
    EXPECT_EQ(gb_row_d.inputs.bias_grad_storage, TensorLayout(f32, {6}));
    const auto gb_col_d = analyze_layouts(a_col, b_row, d_col, {.epilog = Epilog::bgradb});
    EXPECT_EQ(gb_col_d.lt.epilog, CUBLASLT_EPILOGUE_BGRADB);
    EXPECT_EQ(gb_col_d.lt.op_b, CUBLAS_OP_T);
    for (const auto& d : {d_row, d_col}) {
        gpumath::test::expect_throw_with<NotSupported>(
            [&] { (void)analyze_layouts(a_row, b_row, d, {.epilog = Epilog::bgrada}); },
            {"a: strides", "bgrada needs a column-major a"});
        gpumath::test::expect_throw_with<NotSupported>(
            [&] { (void)analyze_layouts(a_row, b_col, d, {.epilog = Epilog::bgradb}); },
            {"b: strides", "bgradb needs a row-major b"});
    }
}

TEST(MatmulArrangement, AuxDefaults) {
    const TensorLayout a(f32, {2, 10, 4}), b(f32, {4, 6});
    const auto gelu = analyze_layouts(a, b, TensorLayout(f32, {2, 10, 6}), {.epilog = Epilog::gelu_aux});
    EXPECT_EQ(gelu.inputs.aux, AuxKind::gelu);
    EXPECT_EQ(gelu.lt.aux_ld, 8);  // rows of D^T (6) rounded up to 8
    EXPECT_EQ(gelu.lt.aux_batch_stride, 80);
    EXPECT_EQ(gelu.inputs.aux_storage, TensorLayout(f32, {2, 10, 8}));
    EXPECT_EQ(gelu.inputs.aux_view, TensorLayout(f32, {2, 10, 6}, {80, 8, 1}));
    const auto relu = analyze_layouts(a, b, TensorLayout(f32, {2, 10, 6}), {.epilog = Epilog::relu_aux});
    EXPECT_EQ(relu.inputs.aux, AuxKind::relu_mask);
    EXPECT_EQ(relu.lt.aux_ld, 128);  // bits: 6 rows -> 1 byte, padded to 16 bytes
    EXPECT_EQ(relu.lt.aux_batch_stride, 16 * 10 * 8);
    EXPECT_EQ(relu.inputs.aux_storage, TensorLayout(DataType::i8, {2, 10, 16}));
    // A backward call planned from layouts expects the forward's aux view.
    const auto dgelu = analyze_layouts(a, b, std::nullopt, {.epilog = Epilog::dgelu});
    ASSERT_TRUE(dgelu.signature.aux.has_value());
    EXPECT_EQ(*dgelu.signature.aux, gelu.inputs.aux_view);
}

TEST(MatmulArrangement, ComputeAndScaleTypes) {
    const auto tf32 = analyze_layouts(TensorLayout(f32, {8, 4}), TensorLayout(f32, {4, 6}), std::nullopt,
                                      {.compute_type = ComputeType::f32_fast_tf32});
    EXPECT_EQ(tf32.lt.compute, CUBLAS_COMPUTE_32F_FAST_TF32);
    EXPECT_EQ(tf32.lt.scale_type, CUDA_R_32F);
    const auto c64 =
        analyze_layouts(TensorLayout(DataType::c64, {8, 4}), TensorLayout(DataType::c64, {4, 6}), std::nullopt);
    EXPECT_EQ(c64.lt.compute, CUBLAS_COMPUTE_64F);
    EXPECT_EQ(c64.lt.scale_type, CUDA_C_64F);
    const auto i8 =
        analyze_layouts(TensorLayout(DataType::i8, {8, 4}), TensorLayout(DataType::i8, {4, 8}), std::nullopt);
    EXPECT_EQ(i8.lt.compute, CUBLAS_COMPUTE_32I);
    EXPECT_EQ(i8.lt.scale_type, CUDA_R_32I);
    EXPECT_EQ(i8.types.d, DataType::i32);
    const auto h = analyze_layouts(TensorLayout(DataType::f16, {8, 4}), TensorLayout(DataType::f16, {4, 6}),
                                   std::nullopt, {.compute_type = ComputeType::f16});
    EXPECT_EQ(h.lt.compute, CUBLAS_COMPUTE_16F);
    EXPECT_EQ(h.lt.scale_type, CUDA_R_16F);
}

TEST(MatmulArrangement, VectorsTakeEitherOrientation) {
    // M = 1: D (1, 6) is both row- and column-major; a per-row bias (1, 1)... and (6,) both work.
    const auto p = analyze_layouts(TensorLayout(f32, {1, 4}), TensorLayout(f32, {4, 6}), TensorLayout(f32, {1, 6}),
                                   {.epilog = Epilog::bias}, TensorLayout(f32, {6}));
    EXPECT_TRUE(p.lt.swap);
    // N = 1 with a column vector b (4, 1) of any stride.
    const auto q =
        analyze_layouts(TensorLayout(f32, {8, 4}), TensorLayout(f32, {4, 1}, {3, 7}), TensorLayout(f32, {8, 1}));
    EXPECT_EQ(q.lt.d.rows, 1u);
}

TEST(MatmulArrangement, AllocatedResultIsTheDefaultResult) {
    // One rule for the D of a call without a d view: what Matmul plans for (result_layout) and what
    // the allocating calls allocate.
    const TensorLayout a(f32, {2, 8, 4}), b(f32, {4, 6});
    const std::optional<TensorLayout> cs[] = {std::nullopt, TensorLayout(f32, {2, 8, 6}),
                                              TensorLayout(f32, {2, 8, 6}, {200, 16, 1}), TensorLayout(f32, {8, 6}),
                                              TensorLayout(f32, {1, 8, 6}, {0, 6, 1})};
    for (const auto& c : cs) {
        const TensorLayout allocated = allocated_result_layout(a, b, c, {}, "test");
        EXPECT_EQ(allocated, TensorLayout(f32, {2, 8, 6}));
        EXPECT_EQ(*analyze_layouts(a, b, std::nullopt, {}, std::nullopt, c).signature.d, allocated);
        Matmul mm = c ? Matmul(a, b, *c) : Matmul(a, b);
        EXPECT_EQ(mm.result_layout(), allocated);
    }
    // result_type and batch broadcasting of both operands.
    EXPECT_EQ(
        allocated_result_layout(TensorLayout(DataType::bf16, {4, 1, 8, 4}), TensorLayout(DataType::bf16, {3, 4, 6}),
                                std::nullopt, {.result_type = f32}, "test"),
        TensorLayout(f32, {4, 3, 8, 6}));
    // A column-major C makes D column-major: Matmul plans for it, the allocating calls refuse it.
    const TensorLayout c_col(f32, {2, 8, 6}, {48, 1, 8});
    EXPECT_EQ(*analyze_layouts(a, b, std::nullopt, {}, std::nullopt, c_col).signature.d, c_col);
    gpumath::test::expect_throw_with<InvalidArgument>([&] { (void)allocated_result_layout(a, b, c_col, {}, "test"); },
                                                      {"test", "c:", "column-major", "d view"});
    // Invalid operands get analyze's message.
    gpumath::test::expect_throw_with<InvalidArgument>(
        [&] {
            (void)allocated_result_layout(a, TensorLayout(f32, {3, 4, 6}), std::nullopt, {}, "test");
        },
        {"b: batch dimensions", "extent 3 vs 2"});
}

TEST(MatmulKeys, TextRoundTripAndComparisons) {
    MatmulSignature s;
    s.a = TensorLayout(f32, {3, 8, 4});
    s.b = TensorLayout(f32, {4, 6});
    s.d = TensorLayout(f32, {3, 8, 6});
    s.align[slot_b] = 16;
    const MatmulOptions options{.epilog = Epilog::relu};
    const MatmulKey k = make_key(s.call(), options, -1);
    MatmulKey parsed;
    ASSERT_TRUE(parse_key(key_to_text(k), parsed));
    EXPECT_TRUE(parsed == k);
    EXPECT_EQ(parsed.hash, k.hash);
    EXPECT_FALSE(parse_key("garbage", parsed));

    MatmulSignature t = s;
    t.d = TensorLayout(f32, {3, 8, 6}, {48, 1, 8});
    const MatmulKey k2 = make_key(t.call(), options, -1);
    EXPECT_TRUE(k2.same_problem(k));
    EXPECT_FALSE(k2.same_layouts(k));
    EXPECT_FALSE(make_key(s.call(), {.epilog = Epilog::gelu}, -1).same_problem(k));
    EXPECT_FALSE(make_key(s.call(), options, 0) ==
                 make_key(s.call(), options, 1));  // device is part of the stateless key

    Alignments actual = unaligned_nothing;
    EXPECT_TRUE(k.aligned_enough(actual));
    actual[slot_b] = 8;
    EXPECT_FALSE(k.aligned_enough(actual));
}

TEST(MatmulKeys, OneDescriptionOfACall) {
    // A call's views, the owning signature copied from them and the plan's test all read one
    // MatmulCall: keys agree, and a plan serves exactly the calls with its layouts and scales whose
    // pointers are at least as aligned.
    auto* p = reinterpret_cast<char*>(0x10000000);
    const TensorView a(p, DataType::f32, {3, 8, 4}), b(p + 0x100000 + 16, DataType::f32, {4, 6}, {1, 4});
    const TensorView d(p + 0x200000, DataType::f32, {3, 8, 6});
    MatmulArgs args{.bias = TensorView(p + 0x300000 + 8, DataType::f32, {6}), .scales = {.a = nullptr}};
    const MatmulOptions options{.epilog = Epilog::bias};
    const MatmulCall call = call_of(a, b, &d, args);
    const MatmulSignature sig = MatmulSignature::of(call);
    for (int device : {-1, 0, 3}) {
        const MatmulKey k1 = make_key(call, options, device);
        const MatmulKey k2 = make_key(sig.call(), options, device);
        EXPECT_TRUE(k1 == k2);
        EXPECT_EQ(k1.hash, k2.hash);
        EXPECT_EQ(k1.align[slot_b], 16);
        EXPECT_EQ(k1.align[slot_bias], 8);
        EXPECT_EQ(k1.align[slot_c], 256);  // absent
    }
    EXPECT_TRUE(plan_serves(sig.call(), call));
    // More aligned pointers are served; less aligned ones are not.
    const TensorView b_more(p + 0x100000, DataType::f32, {4, 6}, {1, 4}),
        b_less(p + 0x100000 + 4, DataType::f32, {4, 6}, {1, 4});
    EXPECT_TRUE(plan_serves(sig.call(), call_of(a, b_more, &d, args)));
    EXPECT_FALSE(plan_serves(sig.call(), call_of(a, b_less, &d, args)));
    // Another d layout, a missing bias, an extra c, or other scales are other calls.
    const TensorView d_col(p + 0x200000, DataType::f32, {3, 8, 6}, {48, 1, 8});
    EXPECT_FALSE(plan_serves(sig.call(), call_of(a, b, &d_col, args)));
    EXPECT_FALSE(plan_serves(sig.call(), call_of(a, b, &d, {})));
    MatmulArgs with_c = args;
    with_c.c = TensorView(p + 0x400000, DataType::f32, {3, 8, 6});
    EXPECT_FALSE(plan_serves(sig.call(), call_of(a, b, &d, with_c)));
    MatmulArgs scaled = args;
    scaled.scales.a = reinterpret_cast<const float*>(p + 0x500000);
    EXPECT_FALSE(plan_serves(sig.call(), call_of(a, b, &d, scaled)));
    EXPECT_FALSE(make_key(call_of(a, b, &d, scaled), options, -1) == make_key(call, options, -1));
    // The key's problem words cover the options and a, b, c only.
    EXPECT_TRUE(make_key(call_of(a, b, &d_col, args), options, -1).same_problem(make_key(call, options, -1)));
    EXPECT_FALSE(make_key(call_of(a, b, &d, with_c), options, -1).same_problem(make_key(call, options, -1)));
}

TEST(MatmulKeys, AlignmentClasses) {
    EXPECT_EQ(alignment_class(nullptr), 256);
    EXPECT_EQ(alignment_class(reinterpret_cast<void*>(0x1000)), 256);
    EXPECT_EQ(alignment_class(reinterpret_cast<void*>(0x1010)), 16);
    EXPECT_EQ(alignment_class(reinterpret_cast<void*>(0x1002)), 2);
    EXPECT_EQ(alignment_class(reinterpret_cast<void*>(0x1001)), 1);
}

namespace {

MatmulKey tuning_test_key() {
    MatmulSignature s;
    s.a = TensorLayout(f32, {3, 8, 4});
    s.b = TensorLayout(f32, {4, 6});
    s.d = TensorLayout(f32, {3, 8, 6});
    s.align[slot_b] = 16;
    return make_key(s.call(), {.epilog = Epilog::relu}, -1);
}

}  // namespace

TEST(MatmulKeys, TextParsingTakesOnlyWhatKeyToTextWrites) {
    const MatmulKey k = tuning_test_key();
    const std::string text = key_to_text(k);
    MatmulKey parsed;
    ASSERT_TRUE(parse_key(text, parsed));
    const std::size_t colon = text.find(':');
    const std::size_t slash = text.find('/');
    const std::size_t first_class_end = text.find('.', slash);
    ASSERT_NE(first_class_end, std::string::npos);
    const auto with = [&](std::size_t at, const std::string& insert) {
        return text.substr(0, at) + insert + text.substr(at);
    };
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"sign before the count", "+" + text},
        {"space before the count", " " + text},
        {"minus before a word", with(colon + 1, "-")},
        {"plus before a word", with(colon + 1, "+")},
        {"0x before a word", with(colon + 1, "0x")},
        {"space before a word", with(colon + 1, " ")},
        {"minus before an alignment class", with(slash + 1, "-")},
        // strtoul read 0x10010 and the cast kept 16: the key matched an alignment it does not name.
        {"alignment class past 16 bits", text.substr(0, slash + 1) + "10010" + text.substr(first_class_end)},
        {"missing the last dot", text.substr(0, text.size() - 1)},
        {"trailing text", text + "x"},
        {"no slash", text.substr(0, slash)},
        {"word too long", with(colon + 1, "fffffffffffffffff")},
        // Other spellings of the same numbers: a damaged line must not read as a key.
        {"leading zero in a word", with(colon + 1, "0")},
        {"leading zero in the count", "0" + text},
        {"leading zero in an alignment class", with(slash + 1, "0")},
        {"capital hex digit", text.substr(0, colon + 1) + "F" + text.substr(colon + 2)},
    };
    for (const auto& [what, t] : bad) EXPECT_FALSE(parse_key(t, parsed)) << what << ": " << t;
}

TEST(TuningFiles, AlgorithmHexIsExactly128Digits) {
    cublasLtMatmulAlgo_t algo{};
    for (std::size_t i = 0; i < 8; ++i) algo.data[i] = 0x0123456789abcdefULL * (i + 1) + i;
    const std::string hex = algo_to_hex(algo);
    ASSERT_EQ(hex.size(), 128u);
    cublasLtMatmulAlgo_t back{};
    ASSERT_TRUE(hex_to_algo(hex, back));
    for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(back.data[i], algo.data[i]) << i;

    const auto at = [&](std::size_t i, const std::string& two) { return hex.substr(0, i) + two + hex.substr(i + 2); };
    const std::vector<std::pair<std::string, std::string>> bad =
        {
            {"127 digits", hex.substr(1)}, {"129 digits", hex + "0"},
            {"a sign", at(16, "-1")},  // strtoull took "-1..." and wrapped it
            {"a plus", at(16, "+1")},      {"0x", at(32, "0x")},
            {"a space", at(48, " 1")},     {"not hex", at(0, "g0")},
            {"a capital", at(62, "EF")},
        };
    for (const auto& [what, h] : bad) EXPECT_FALSE(hex_to_algo(h, back)) << what;
}

TEST(TuningFiles, TextParsingCountsStaleAndMalformedLines) {
    const MatmulKey k = tuning_test_key();
    cublasLtMatmulAlgo_t algo{};
    algo.data[0] = 42;
    algo.data[7] = 0xfeedULL;
    const std::string hex = algo_to_hex(algo);
    const std::string key = key_to_text(k);
    const TuningHost host{"NVIDIA H200", "9.0", "130000"};
    std::istringstream in(
        "# gpumath matmul tuning v1\n"
        "\n"
        "NVIDIA H200\t9.0\t130000\t" +
        key + "\t" + hex + "\t0\t0.5\n" +                                 // ours
        "NVIDIA H100\t9.0\t130000\t" + key + "\t" + hex + "\t0\t0.5\n" +  // another GPU
        "NVIDIA H200\t9.0\t120800\t" + key + "\t" + hex + "\t0\t0.5\n" +  // another cuBLASLt
        "NVIDIA H200\t9.0\t130000\t" + key + "\n" +                       // too few fields
        "NVIDIA H200\t9.0\t130000\t" + key + "\t-" + hex.substr(1) + "\t0\t0.5\n" + "NVIDIA H200\t9.0\t130000\t0x" +
        key + "\t" + hex + "\t0\t0.5\n" + "# a comment\n");
    const TuningText text = parse_tuning_text(in, host);
    ASSERT_EQ(text.entries.size(), 1u);
    EXPECT_TRUE(text.entries[0].key == k);
    EXPECT_EQ(text.entries[0].algo.data[0], 42u);
    EXPECT_EQ(text.entries[0].algo.data[7], 0xfeedu);
    EXPECT_EQ(text.stale, 2);
    EXPECT_EQ(text.malformed, 3);
}
