// SPDX-License-Identifier: Apache-2.0
// Bad matmul input is rejected before any GPU work, on any machine, with an exception that names
// the operand. Pointers here are never dereferenced: every call is invalid (or, for the Matmul
// constructor, needs no device).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <sys/stat.h>

#include <gpumath/matmul.hpp>

#include "common/test_util.hpp"
#include "matmul/checks.hpp"
#include "matmul/shapes.hpp"

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

// A valid f32 problem: a (8, 4), b (4, 6), d (8, 6), all row-major.
struct Problem {
    TensorView a = v(0, f32, {8, 4});
    TensorView b = v(1, f32, {4, 6});
    TensorView d = v(2, f32, {8, 6});
};

}  // namespace

// ---- shapes and batches -------------------------------------------------------------------------

TEST(MatmulValidation, RankOneA) {
    Problem p;
    expect_throw_with<InvalidArgument>([&] { matmul(v(0, f32, {4}), p.b, p.d); }, {"a:", "rank 1", "(..., M, K)"});
}

TEST(MatmulValidation, RankOneB) {
    Problem p;
    expect_throw_with<InvalidArgument>([&] { Matmul mm(p.a, TensorLayout(f32, {4})); }, {"b:", "rank 1"});
}

TEST(MatmulValidation, InnerDimensionMismatch) {
    Problem p;
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, v(1, f32, {5, 6}), p.d); }, {"b:", "(5, 6)", "K = 4"});
}

TEST(MatmulValidation, EmptyOperand) {
    expect_throw_with<InvalidArgument>(
        [&] {
            Matmul mm(TensorLayout(f32, {0, 4}), TensorLayout(f32, {4, 6}));
        },
        {"a:", "(0, 4)", "empty"});
}

TEST(MatmulValidation, BatchesDoNotBroadcast) {
    expect_throw_with<InvalidArgument>(
        [&] {
            Matmul mm(TensorLayout(f32, {3, 8, 4}), TensorLayout(f32, {2, 4, 6}));
        },
        {"b:", "broadcast", "(2, 4, 6)"});
}

TEST(MatmulValidation, BatchCountPastInt64) {
    // 2^33 x 2^31 broadcast products: the batch count overflowed int64 (a UBSan report).
    expect_throw_with<InvalidArgument>(
        [&] {
            Matmul mm(TensorLayout(f32, {INT64_C(1) << 33, 1, 1, 1}), TensorLayout(f32, {INT64_C(1) << 31, 1, 1}));
        },
        {"Matmul", "a, b:", "(8589934592, 2147483648)", "does not fit in int64"});
}

TEST(MatmulValidation, ResultPastInt64) {
    // D of 2^30 (2^20, 2^20) matrices: its column-major batch strides overflowed (a UBSan report).
    const TensorLayout a(f32, {INT64_C(1) << 30, INT64_C(1) << 20, 1}), b(f32, {1, INT64_C(1) << 20});
    const TensorLayout c(f32, {INT64_C(1) << 20, INT64_C(1) << 20}, {1, INT64_C(1) << 20});
    expect_throw_with<InvalidArgument>([&] { Matmul mm(a, b, c); },
                                       {"Matmul", "a, b:", "(1073741824, 1048576, 1048576)", "int64"});
    // Without c (row-major D), and through the allocating calls' result layout.
    expect_throw_with<InvalidArgument>([&] { Matmul mm(a, b); }, {"a, b:", "int64"});
    expect_throw_with<InvalidArgument>(
        [&] {
            Matmul mm(TensorLayout(f32, {INT64_C(1) << 40, 1}), TensorLayout(f32, {1, INT64_C(1) << 40}));
        },
        {"a, b:", "(1099511627776, 1099511627776)", "int64"});
}

TEST(MatmulValidation, OneColumnOfRowsNearInt64Max) {
    // One column of 2^63 - 1 rows: the leading dimension made up for it (the rows rounded up to a
    // multiple of 16) overflowed int64 (signed overflow; it wrapped negative, so the column read as
    // no column-major matrix at all).
    constexpr std::int64_t big = std::numeric_limits<std::int64_t>::max();
    const auto column = detail::col_major(big, 1, 1, big);
    ASSERT_TRUE(column.has_value());
    EXPECT_EQ(column->ld, big);
    const auto aligned = detail::col_major(big - 15, 1, 1, big);
    ASSERT_TRUE(aligned.has_value());
    EXPECT_EQ(aligned->ld, big - 15);
    // i8 a (1, K) with K = 2^63 - 1 reads a^T as such a column.
    Matmul mm(TensorLayout(DataType::i8, {1, big}), TensorLayout(DataType::i8, {big, 1}));
    EXPECT_EQ(mm.k(), big);
}

TEST(MatmulValidation, BatchNotOneStridedBatch) {
    // a's batch dimensions (2, 3) with strides that are not one sequence.
    expect_throw_with<NotSupported>(
        [&] {
            Matmul mm(TensorLayout(f32, {2, 3, 8, 4}, {1000, 32, 4, 1}), TensorLayout(f32, {4, 6}));
        },
        {"a:", "one strided batch"});
    // A batch stride whose multiple past the batch would not fit in int64 (one-byte elements let
    // the layout itself fit): one batch dimension is still one strided batch, two are not one
    // sequence, and no overflow on the way to either answer.
    const std::int64_t huge = std::numeric_limits<std::int64_t>::max() - 1000;
    detail::BatchShape two;
    two.rank = 1;
    two.dims[0] = 2;
    EXPECT_EQ(detail::single_batch_stride(TensorLayout(DataType::i8, {2, 16, 16}, {huge, 16, 1}), two, 2), huge);
    expect_throw_with<NotSupported>(
        [&] {
            Matmul mm(TensorLayout(DataType::i8, {2, 2, 16, 16}, {huge / 2 - 7, huge / 2 - 7, 16, 1}),
                      TensorLayout(DataType::i8, {16, 16}));
        },
        {"a:", "one strided batch"});
}

TEST(MatmulValidation, DShapeWrong) {
    Problem p;
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, v(2, f32, {8, 5})); }, {"d:", "(8, 5)", "(8, 6)"});
}

TEST(MatmulValidation, DBroadcastStride) {
    Problem p;
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, v(2, f32, {8, 6}, {0, 1})); }, {"d:", "stride of 0"});
}

TEST(MatmulValidation, DWithoutUnitStride) {
    Problem p;
    expect_throw_with<NotSupported>(
        [&] {
            matmul(p.a, p.b, v(2, f32, {8, 6}, {12, 2}));
        },
        {"d:", "(12, 2)", "unit stride"});
}

TEST(MatmulValidation, AWithoutUnitStride) {
    Problem p;
    expect_throw_with<NotSupported>(
        [&] {
            matmul(v(0, f32, {8, 4}, {8, 2}), p.b, p.d);
        },
        {"a:", "(8, 2)", "unit stride"});
}

TEST(MatmulValidation, DBatchesOverlap) {
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(v(0, f32, {2, 8, 4}), v(1, f32, {4, 6}), v(2, f32, {2, 8, 6}, {10, 6, 1}));
        },
        {"d:", "batch stride 10"});
}

// ---- dtypes and compute types -----------------------------------------------------------------

TEST(MatmulValidation, InputDtypesDiffer) {
    Problem p;
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(p.a, v(1, f16, {4, 6}), p.d);
        },
        {"b:", "f16", "f32", "same dtype"});
}

TEST(MatmulValidation, I32IsNotAnInput) {
    expect_throw_with<InvalidArgument>(
        [&] {
            Matmul mm(TensorLayout(DataType::i32, {8, 4}), TensorLayout(DataType::i32, {4, 6}));
        },
        {"a:", "i32", "not a matmul input"});
}

TEST(MatmulValidation, ComputeTypeNotForInputs) {
    Problem p;
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, {}, {.compute_type = ComputeType::f16}); },
                                       {"compute_type", "f16", "f32 inputs", "f32_fast_tf32"});
    expect_throw_with<InvalidArgument>(
        [&] {
            Matmul mm(TensorLayout(bf16, {8, 4}), TensorLayout(bf16, {4, 6}),
                      {.compute_type = ComputeType::f32_fast_tf32});
        },
        {"compute_type", "f32_fast_tf32", "bf16"});
}

TEST(MatmulValidation, ResultTypeNotAllowed) {
    expect_throw_with<InvalidArgument>(
        [&] {
            Matmul mm(TensorLayout(f32, {8, 4}), TensorLayout(f32, {4, 6}), {.result_type = f16});
        },
        {"result_type", "f16", "allowed: f32"});
    expect_throw_with<InvalidArgument>(
        [&] {
            Matmul mm(TensorLayout(f16, {8, 4}), TensorLayout(f16, {4, 6}),
                      {.compute_type = ComputeType::f16, .result_type = f32});
        },
        {"result_type", "f32", "compute type f16"});
}

TEST(MatmulValidation, DDtypeNotAResult) {
    Problem p;
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, v(2, bf16, {8, 6})); }, {"d:", "bf16", "allowed: f32"});
}

TEST(MatmulValidation, ResultTypeDisagreesWithD) {
    Problem p;
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, {}, {.result_type = f16}); },
                                       {"result_type", "d has dtype f32"});
}

TEST(MatmulValidation, FastAccumulationWithoutFp8) {
    Problem p;
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, {}, {.fast_accumulation = true}); },
                                       {"fast_accumulation", "FP8"});
}

// ---- C ----------------------------------------------------------------------------------------

TEST(MatmulValidation, CDtype) {
    Problem p;
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(p.a, p.b, p.d, {.beta = 1.0, .c = v(3, f16, {8, 6})});
        },
        {"c:", "f16", "f32"});
}

TEST(MatmulValidation, CShape) {
    Problem p;
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(p.a, p.b, p.d, {.beta = 1.0, .c = v(3, f32, {8, 1})});
        },
        {"c:", "(8, 1)", "(..., M, N)"});
}

TEST(MatmulValidation, COrientationDiffersFromD) {
    Problem p;
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(p.a, p.b, p.d, {.beta = 1.0, .c = v(3, f32, {8, 6}, {1, 8})});
        },
        {"c:", "(1, 8)", "row-major like d"});
}

TEST(MatmulValidation, BetaWithoutC) {
    Problem p;
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, {.beta = 0.5}); }, {"beta:", "without c"});
}

// ---- aliasing ---------------------------------------------------------------------------------

TEST(MatmulValidation, DOverlapsA) {
    Problem p;
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, v(0, f32, {8, 6}, {}, 64)); }, {"d:", "overlaps a"});
}

TEST(MatmulValidation, CPartlyOverlapsD) {
    Problem p;
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(p.a, p.b, p.d, {.beta = 1.0, .c = v(2, f32, {8, 6}, {}, 16)});
        },
        {"c:", "overlaps d", "d itself"});
}

TEST(MatmulValidation, OperandsPastEndOfAddressSpace) {
    // d's 4 KiB start 256 bytes below the end of the address space: its byte range wrapped around to
    // [top, 0xf00), so the overlap checks missed a at 0x100 and the call went on to the GPU.
    const auto top = [](std::uintptr_t below) { return reinterpret_cast<void*>(~std::uintptr_t(0) - below + 1); };
    const TensorView a(reinterpret_cast<void*>(0x100), f32, {8, 4});
    const TensorView b = v(1, f32, {4, 128});
    const TensorView d(top(256), f32, {8, 128});
    expect_throw_with<InvalidArgument>([&] { matmul(a, b, d); },
                                       {"matmul", "d:", "4096 bytes", "end of the address space"});
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)matmul(TensorView(top(64), f32, {8, 4}), b);
        },
        {"matmul", "a:", "128 bytes", "end of the address space"});
    // A per-tensor scale in the last 4 bytes: its range [top - 4, 0) held nothing.
    const TensorView a8 = v(0, DataType::e4m3, {16, 16}), b8 = v(1, DataType::e4m3, {16, 16});
    const TensorView d8 = v(2, bf16, {16, 16});
    expect_throw_with<InvalidArgument>(
        [&] { matmul(a8, b8, d8, {.scales = {.a = static_cast<const float*>(top(4))}}); },
        {"scales.a:", "end of the address space"});
}

TEST(MatmulValidation, BiasOverlapsD) {
    Problem p;
    expect_throw_with<InvalidArgument>(
        [&] { matmul(p.a, p.b, p.d, {.bias = v(2, f32, {6}, {}, 32)}, {.epilog = Epilog::bias}); },
        {"bias:", "overlaps d"});
}

// ---- epilog inputs and outputs ------------------------------------------------------------------

TEST(MatmulValidation, BiasGradOverlapsAuxWithoutD) {
    // dgelu_bgrad reads aux while it writes bias_grad. The allocating calls (no d view) skipped the
    // check that keeps them apart and went on to the GPU.
    const TensorView a = v(0, f32, {8, 4}), b = v(1, f32, {4, 6});
    const TensorView aux = v(3, f32, {8, 6}, {8, 1});
    const TensorView bias_grad = v(3, f32, {6}, {}, 16);  // inside aux's first row
    const MatmulArgs args{.aux = aux, .bias_grad = bias_grad};
    const MatmulOptions options{.epilog = Epilog::dgelu_bgrad};
    expect_throw_with<InvalidArgument>([&] { (void)matmul(a, b, args, options); },
                                       {"matmul", "bias_grad: its memory overlaps aux's"});
    Matmul mm(a, b, options);
    expect_throw_with<InvalidArgument>([&] { (void)mm.execute(a, b, args); },
                                       {"Matmul::execute", "bias_grad: its memory overlaps aux's"});
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(a, b, v(2, f32, {8, 6}), args, options);
        },
        {"matmul", "bias_grad: its memory overlaps aux's"});
}

TEST(MatmulValidation, BiasWithoutBiasEpilog) {
    Problem p;
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, {.bias = v(3, f32, {6})}); },
                                       {"bias:", "epilog none takes no bias"});
}

TEST(MatmulValidation, MissingBias) {
    Problem p;
    for (Epilog e : {Epilog::bias, Epilog::relu_bias, Epilog::gelu_bias, Epilog::relu_aux_bias, Epilog::gelu_aux_bias})
        expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, {}, {.epilog = e}); },
                                           {"bias:", std::string(to_string(e)), "MatmulArgs::bias"});
}

TEST(MatmulValidation, BiasShape) {
    Problem p;
    expect_throw_with<InvalidArgument>(
        [&] { matmul(p.a, p.b, p.d, {.bias = v(3, f32, {7})}, {.epilog = Epilog::bias}); },
        {"bias:", "(7,)", "per-column"});
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(p.a, p.b, p.d, {.bias = v(3, f32, {6, 8})}, {.epilog = Epilog::bias});
        },
        {"bias:", "(6, 8)"});
}

TEST(MatmulValidation, BiasDtype) {
    Problem p;
    expect_throw_with<InvalidArgument>(
        [&] { matmul(p.a, p.b, p.d, {.bias = v(3, f16, {6})}, {.epilog = Epilog::bias}); },
        {"bias:", "f16", "take a f32 bias"});
}

TEST(MatmulValidation, BiasNotPacked) {
    Problem p;
    expect_throw_with<InvalidArgument>(
        [&] { matmul(p.a, p.b, p.d, {.bias = v(3, f32, {6}, {2})}, {.epilog = Epilog::bias}); },
        {"bias:", "stride 2", "packed"});
}

// bias, relu_bias, gelu_bias and silu_bias take a bias in either orientation (the one cuBLASLt
// refuses runs in gpumath's elementwise pass: epilog_pass_test.cpp); the *_aux_bias epilogs store
// x + bias as cuBLASLt computes it, so they still need the orientation cuBLASLt takes.
TEST(MatmulValidation, PerRowBiasWithAuxNeedsColumnMajorD) {
    Problem p;
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(p.a, p.b, p.d, {.bias = v(3, f32, {8, 1})}, {.epilog = Epilog::gelu_aux_bias});
        },
        {"bias:", "(8, 1)", "one value per row", "column-major d"});
    // The allocating call returns a row-major d, so the same holds there.
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(p.a, p.b, {.bias = v(3, f32, {8, 1})}, {.epilog = Epilog::relu_aux_bias});
        },
        {"bias:", "one value per row"});
}

TEST(MatmulValidation, PerColumnBiasWithAuxNeedsRowMajorD) {
    Problem p;
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(p.a, p.b, v(2, f32, {8, 6}, {1, 8}), {.bias = v(3, f32, {6})}, {.epilog = Epilog::gelu_aux_bias});
        },
        {"bias:", "(6,)", "one value per column", "row-major d"});
}

// A bias along d's strided dimension is added in gpumath's elementwise pass, which writes f16, bf16
// and f32 d only: an f64 product with one is refused naming the bias.
TEST(MatmulValidation, BiasAlongTheStridedDimensionOfAnF64DNamesTheBias) {
    constexpr auto f64 = DataType::f64;
    for (Epilog e : {Epilog::bias, Epilog::relu_bias, Epilog::gelu_bias, Epilog::silu_bias}) {
        expect_throw_with<NotSupported>(
            [&] {
                matmul(v(0, f64, {8, 4}), v(1, f64, {4, 6}), v(2, f64, {8, 6}), {.bias = v(3, f64, {8, 1})},
                       {.epilog = e});
            },
            {"matmul: bias: ", "elementwise pass", "strided dimension", "d is f64"});
        expect_throw_with<NotSupported>(
            [&] {
                matmul(v(0, f64, {8, 4}), v(1, f64, {4, 6}), v(2, f64, {8, 6}, {1, 8}), {.bias = v(3, f64, {6})},
                       {.epilog = e});
            },
            {"matmul: bias: ", "elementwise pass", "d is f64"});
    }
}

TEST(MatmulValidation, FullBiasAndC) {
    Problem p;
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(p.a, p.b, p.d, {.beta = 1.0, .c = v(3, f32, {8, 6}), .bias = v(4, f32, {8, 6})},
                   {.epilog = Epilog::bias});
        },
        {"bias:", "full (M, N)", "c is given"});
}

TEST(MatmulValidation, BiasBatchDoesNotBroadcast) {
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(v(0, f32, {3, 8, 4}), v(1, f32, {4, 6}), v(2, f32, {3, 8, 6}), {.bias = v(3, f32, {2, 1, 6})},
                   {.epilog = Epilog::bias});
        },
        {"bias:", "(2, 1, 6)", "broadcast"});
}

TEST(MatmulValidation, AuxWithoutAuxEpilog) {
    Problem p;
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(p.a, p.b, p.d, {.bias = v(3, f32, {6}), .aux = v(4, f32, {8, 6})}, {.epilog = Epilog::bias});
        },
        {"aux:", "epilog bias has no aux"});
}

TEST(MatmulValidation, GradientEpilogsNeedAux) {
    Problem p;
    for (Epilog e : {Epilog::drelu, Epilog::drelu_bgrad, Epilog::dgelu, Epilog::dgelu_bgrad})
        expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, {}, {.epilog = e}); },
                                           {"aux:", std::string(to_string(e)), "MatmulArgs::aux"});
}

TEST(MatmulValidation, ReluMaskPastInt64Bits) {
    // D (2^57, 1) f16 spans 2^58 bytes, and its ReLU mask 16 bytes per row of D: 2^61 bytes, 2^64
    // bits, and cuBLASLt addresses the mask in int64 bits.
    constexpr std::int64_t m = std::int64_t(1) << 57;
    const auto at = [](int shift) { return reinterpret_cast<void*>(std::uintptr_t(1) << shift); };
    const TensorView a(at(40), f16, {m, 8}), b(at(39), f16, {8, 1});
    expect_throw_with<NotSupported>([&] { Matmul mm(a, b, {.epilog = Epilog::relu_aux}); },
                                    {"aux:", "int64", "split the product"});
    const TensorView d(at(62), f16, {m, 1});
    expect_throw_with<NotSupported>([&] { matmul(a, b, d, {}, {.epilog = Epilog::relu_aux}); }, {"aux:", "int64"});
}

TEST(MatmulValidation, AuxStoragePastInt64) {
    // D (2^61, 1) f16 spans 2^62 bytes; the aux gpumath allocates for it pads each row of D to 16
    // mask bytes or 8 GELU elements: past int64 bytes. Its layout was refused as
    // "TensorLayout: shape: (2305843009213693952, 16) has more elements than fit in int64", naming
    // neither aux nor a remedy.
    constexpr std::int64_t m = std::int64_t(1) << 61;
    for (Epilog e : {Epilog::relu_aux, Epilog::gelu_aux, Epilog::relu_aux_bias, Epilog::gelu_aux_bias}) {
        SCOPED_TRACE(std::string(to_string(e)));
        expect_throw_with<NotSupported>(
            [&] {
                Matmul mm(TensorLayout(f16, {m, 1}), TensorLayout(f16, {1, 1}), {.epilog = e});
            },
            {"Matmul", "aux:", "does not fit in int64", "split the product"});
    }
    // Batched: each matrix's aux fits, all of them do not.
    expect_throw_with<NotSupported>(
        [&] {
            Matmul mm(TensorLayout(f16, {16, m / 16, 1}), TensorLayout(f16, {1, 1}), {.epilog = Epilog::gelu_aux});
        },
        {"aux:", "size in bytes", "does not fit in int64"});
}

TEST(MatmulValidation, GeluAuxLayout) {
    Problem p;
    // Leading dimension 6 is not a multiple of 8.
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(p.a, p.b, p.d, {.aux = v(4, f32, {8, 6})}, {.epilog = Epilog::gelu_aux});
        },
        {"aux:", "(6, 1)", "multiple of 8"});
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(p.a, p.b, p.d, {.aux = v(4, f16, {8, 6}, {8, 1})}, {.epilog = Epilog::gelu_aux});
        },
        {"aux:", "f16", "f32"});
}

TEST(MatmulValidation, ReluMaskLayout) {
    Problem p;
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(p.a, p.b, p.d, {.aux = v(4, f32, {8, 16})}, {.epilog = Epilog::relu_aux});
        },
        {"aux:", "ReLU bit mask", "i8"});
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(p.a, p.b, p.d, {.aux = v(4, DataType::i8, {8, 8})}, {.epilog = Epilog::relu_aux});
        },
        {"aux:", "multiple of 16"});
}

TEST(MatmulValidation, BiasGradWithoutGradientEpilog) {
    Problem p;
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, {.bias_grad = v(4, f32, {6})}); },
                                       {"bias_grad:", "computes no bias gradient"});
}

TEST(MatmulValidation, BiasGradShape) {
    Problem p;
    // bgrada: one value per row of A (M = 8); bgrada takes a column-major a.
    const TensorView a_col = v(0, f32, {8, 4}, {1, 8});
    expect_throw_with<InvalidArgument>(
        [&] { matmul(a_col, p.b, p.d, {.bias_grad = v(4, f32, {6})}, {.epilog = Epilog::bgrada}); },
        {"bias_grad:", "(6,)", "length 8"});
    expect_throw_with<InvalidArgument>(
        [&] { matmul(p.a, p.b, p.d, {.bias_grad = v(4, f16, {6})}, {.epilog = Epilog::bgradb}); },
        {"bias_grad:", "f16"});
}

TEST(MatmulValidation, EpilogsNeedRealFloatingPoint) {
    expect_throw_with<NotSupported>(
        [&] {
            Matmul mm(TensorLayout(DataType::c32, {8, 4}), TensorLayout(DataType::c32, {4, 6}),
                      {.epilog = Epilog::relu});
        },
        {"epilog", "relu", "c32"});
    expect_throw_with<NotSupported>(
        [&] {
            Matmul mm(TensorLayout(DataType::i8, {8, 4}), TensorLayout(DataType::i8, {4, 6}), {.epilog = Epilog::bias});
        },
        {"epilog", "bias", "i8"});
}

TEST(MatmulValidation, GradientEpilogWithKOne) {
    expect_throw_with<NotSupported>(
        [&] {
            Matmul mm(TensorLayout(f32, {8, 1}), TensorLayout(f32, {1, 6}), {.epilog = Epilog::dgelu});
        },
        {"epilog", "K = 1"});
}

// ---- FP8 ----------------------------------------------------------------------------------------

TEST(MatmulValidation, Fp8DimensionsMultipleOf16) {
    // A row-major D takes any M (cuBLASLt's columns); N and K are multiples of 16.
    const Matmul any_m(TensorLayout(DataType::e4m3, {24, 32}), TensorLayout(DataType::e4m3, {32, 16}, {1, 32}));
    EXPECT_EQ(any_m.result_layout().shape(0), 24);
    expect_throw_with<NotSupported>(
        [&] {
            Matmul mm(TensorLayout(DataType::e4m3, {16, 32}), TensorLayout(DataType::e4m3, {32, 24}, {1, 32}));
        },
        {"K and N to be multiples of 16", "N = 24"});
    expect_throw_with<NotSupported>(
        [&] {
            Matmul mm(TensorLayout(DataType::e4m3, {16, 40}), TensorLayout(DataType::e4m3, {40, 16}, {1, 40}));
        },
        {"multiples of 16", "K = 40"});
}

TEST(MatmulValidation, Fp8BothE5m2) {
    expect_throw_with<NotSupported>(
        [&] {
            Matmul mm(TensorLayout(DataType::e5m2, {32, 32}), TensorLayout(DataType::e5m2, {32, 32}, {1, 32}));
        },
        {"e5m2", "e4m3"});
}

TEST(MatmulValidation, Fp8WithNonFp8) {
    expect_throw_with<InvalidArgument>(
        [&] {
            Matmul mm(TensorLayout(DataType::e4m3, {32, 32}), TensorLayout(f16, {32, 32}));
        },
        {"b:", "f16", "FP8"});
}

TEST(MatmulValidation, Fp8ResultTypes) {
    // e5m2 results need an e5m2 input.
    expect_throw_with<InvalidArgument>(
        [&] {
            Matmul mm(TensorLayout(DataType::e4m3, {32, 32}), TensorLayout(DataType::e4m3, {32, 32}, {1, 32}),
                      {.result_type = DataType::e5m2});
        },
        {"result_type", "e5m2", "allowed"});
}

TEST(MatmulValidation, Fp8BiasDtype) {
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(v(0, DataType::e4m3, {32, 32}), v(1, DataType::e4m3, {32, 32}, {1, 32}), v(2, f32, {32, 32}),
                   {.bias = v(3, f32, {32})}, {.epilog = Epilog::bias});
        },
        {"bias:", "f32", "bf16"});
}

TEST(MatmulValidation, Fp8InPlaceCNeedsDsDtype) {
    // An FP8 product may read a bf16 c; one at d's address passed as "c is d" though its elements
    // sit at other bytes than d's, which the product overwrites while reading them.
    const auto a8 = v(0, DataType::e4m3, {16, 16}), b8 = v(1, DataType::e4m3, {16, 16}, {1, 16});
    const auto d8 = v(2, DataType::e4m3, {16, 16});
    const MatmulOptions to_e4m3{.result_type = DataType::e4m3};
    const MatmulArgs args{.beta = 1.0, .c = v(2, bf16, {16, 16})};
    const std::initializer_list<std::string> needles = {"c:", "bf16 at d's address", "d is e4m3", "d's dtype"};
    expect_throw_with<InvalidArgument>([&] { matmul(a8, b8, d8, args, to_e4m3); }, needles);
    Matmul mm(a8.layout(), b8.layout(), args.c->layout(), to_e4m3);
    expect_throw_with<InvalidArgument>([&] { mm.execute(a8, b8, d8, args); }, needles);
    // Separate memory is fine (validation passes; without a GPU the call stops at the device).
    if (!test::has_gpu()) {
        EXPECT_THROW(matmul(a8, b8, d8, {.beta = 1.0, .c = v(3, bf16, {16, 16})}, to_e4m3), CudaError);
    }
}

TEST(MatmulValidation, Fp8Alignment) {
    expect_throw_with<NotSupported>(
        [&] {
            matmul(v(0, DataType::e4m3, {32, 32}, {}, 8), v(1, DataType::e4m3, {32, 32}, {1, 32}),
                   v(2, bf16, {32, 32}));
        },
        {"a:", "8-byte aligned", "16-byte"});
}

TEST(MatmulValidation, Fp8ScalesAndAmaxApartFromTheOutputs) {
    // The product reads the scales while it writes d and amax_d: no scale inside an output, and
    // amax_d apart from every operand and scale.
    const auto a8 = v(0, DataType::e4m3, {32, 32}), b8 = v(1, DataType::e4m3, {32, 32}, {1, 32});
    const auto d8 = v(2, DataType::e4m3, {32, 32});
    const MatmulOptions to_e4m3{.result_type = DataType::e4m3};
    auto* inside_d = static_cast<float*>(addr(2, 64));
    auto* inside_a = static_cast<float*>(addr(0, 256));
    auto* scale = static_cast<float*>(addr(9));
    expect_throw_with<InvalidArgument>([&] { matmul(a8, b8, d8, {.scales = {.amax_d = inside_d}}, to_e4m3); },
                                       {"scales.amax_d", "d's memory"});
    expect_throw_with<InvalidArgument>([&] { matmul(a8, b8, d8, {.scales = {.amax_d = inside_a}}, to_e4m3); },
                                       {"scales.amax_d", "a's memory"});
    expect_throw_with<InvalidArgument>(
        [&] { matmul(a8, b8, d8, {.scales = {.a = scale, .d = scale + 4, .amax_d = scale}}, to_e4m3); },
        {"scales.amax_d", "scales.a"});
    expect_throw_with<InvalidArgument>([&] { matmul(a8, b8, d8, {.scales = {.a = inside_d}}, to_e4m3); },
                                       {"scales.a", "d's memory"});
    Matmul mm(a8, b8, to_e4m3);
    expect_throw_with<InvalidArgument>([&] { mm.execute(a8, b8, d8, {.scales = {.d = inside_d}}); },
                                       {"scales.d", "d's memory"});
}

TEST(MatmulValidation, F16ScaleTypeRangeBeforeAnyCudaCall) {
    // Compute type f16 scales by f16 alpha and beta (|x| <= 65504): refused before planning.
    const auto a = v(0, DataType::f16, {64, 64}), b = v(1, DataType::f16, {64, 64}), d = v(2, DataType::f16, {64, 64});
    const MatmulOptions f16_compute{.compute_type = ComputeType::f16};
    expect_throw_with<InvalidArgument>([&] { matmul(a, b, d, {.alpha = 1e6}, f16_compute); },
                                       {"alpha", "1000000", "65504"});
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(a, b, d, {.beta = -70000.0, .c = v(3, DataType::f16, {64, 64})}, f16_compute);
        },
        {"beta", "-70000", "compute type f32"});
    Matmul mm(a, b, f16_compute);
    expect_throw_with<InvalidArgument>([&] { mm.execute(a, b, d, {.alpha = 65505.0}); }, {"alpha", "65504"});
    const std::vector<std::int64_t> sizes{32, 32};
    expect_throw_with<InvalidArgument>(
        [&] {
            grouped_matmul(a, v(4, DataType::f16, {2, 64, 64}), d, sizes, {.alpha = 1e5}, f16_compute);
        },
        {"alpha", "65504"});
}

TEST(MatmulValidation, Fp8ScalesAndAmax) {
    float* fake = static_cast<float*>(addr(9));
    Problem p;
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, {.scales = {.a = fake}}); },
                                       {"scales.a", "FP8 inputs only"});
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(v(0, DataType::e4m3, {32, 32}), v(1, DataType::e4m3, {32, 32}, {1, 32}), v(2, bf16, {32, 32}),
                   {.scales = {.amax_d = fake}});
        },
        {"scales.amax_d", "FP8 result"});
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(v(0, DataType::e4m3, {32, 32}), v(1, DataType::e4m3, {32, 32}, {1, 32}), v(2, bf16, {32, 32}),
                   {.scales = {.c = fake}});
        },
        {"scales.c", "FP8 c", "beta"});
    // cublasLtMatmul refuses FP8 scale pointers that are less than 16-byte aligned.
    expect_throw_with<NotSupported>(
        [&] {
            matmul(v(0, DataType::e4m3, {32, 32}), v(1, DataType::e4m3, {32, 32}, {1, 32}), v(2, bf16, {32, 32}),
                   {.scales = {.a = fake, .b = static_cast<float*>(addr(9, 4))}});
        },
        {"scales:", "4-byte aligned", "16-byte"});
}

TEST(MatmulValidation, BiasGradientOperandOrientation) {
    Problem p;  // row-major a and b
    expect_throw_with<NotSupported>([&] { matmul(p.a, p.b, p.d, {}, {.epilog = Epilog::bgrada}); },
                                    {"a: strides (4, 1)", "bgrada needs a column-major a", "(1, 8)"});
    expect_throw_with<NotSupported>(
        [&] {
            matmul(p.a, v(1, f32, {4, 6}, {1, 4}), p.d, {}, {.epilog = Epilog::bgradb});
        },
        {"b: strides (1, 4)", "bgradb needs a row-major b", "(6, 1)"});
    expect_throw_with<NotSupported>(
        [&] {
            Matmul mm(TensorLayout(f32, {8, 4}), TensorLayout(f32, {4, 6}), {.epilog = Epilog::bgrada});
        },
        {"bgrada needs a column-major a"});
}

TEST(MatmulValidation, Fp8GradientEpilogs) {
    expect_throw_with<NotSupported>(
        [&] {
            Matmul mm(TensorLayout(DataType::e4m3, {32, 32}), TensorLayout(DataType::e4m3, {32, 32}, {1, 32}),
                      {.epilog = Epilog::bgradb});
        },
        {"epilog", "bgradb", "FP8"});
}

// ---- alpha and beta -----------------------------------------------------------------------------

TEST(MatmulValidation, IntegerAlphaBeta) {
    const auto a = v(0, DataType::i8, {8, 4}), b = v(1, DataType::i8, {4, 8}, {1, 4});
    const auto d = v(2, DataType::i32, {8, 8});
    expect_throw_with<InvalidArgument>([&] { matmul(a, b, d, {.alpha = 0.5}); }, {"alpha:", "0.5", "integer"});
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(a, b, d, {.beta = 1.25, .c = v(3, DataType::i32, {8, 8})});
        },
        {"beta:", "1.25", "integer"});
    // The scale type's whole range, INT32_MIN included (checked where no device would run the
    // product on these made-up addresses); one past either end is not.
    for (double ok : {-2147483648.0, 2147483647.0}) {
        if (test::has_gpu()) break;
        try {
            matmul(a, b, d, {.alpha = ok});
        } catch (const InvalidArgument& e) {
            ADD_FAILURE() << "alpha " << ok << ": " << e.what();
        } catch (const Error&) {  // no device here: fine, the scalar passed
        }
    }
    for (double bad : {-2147483649.0, 2147483648.0})
        expect_throw_with<InvalidArgument>([&] { matmul(a, b, d, {.alpha = bad}); }, {"alpha:", "integer"});
}

TEST(MatmulValidation, ComplexAlphaForRealProblem) {
    Problem p;
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, {.alpha = std::complex<double>(1.0, 2.0)}); },
                                       {"alpha:", "complex", "real"});
}

TEST(MatmulValidation, ScalarsPastTheScaleTypesRange) {
    // f32 scale type: a finite double past its range would reach the GPU as infinity.
    Problem p;
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, {.alpha = 1e39}); },
                                       {"alpha:", "1e+39", "f32 range"});
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, {.beta = -1e300, .c = p.d}); },
                                       {"beta:", "f32 range"});
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, {.alpha = std::nan("")}); },
                                       {"alpha:", "not finite"});
    // An f64 product's scale type is f64.
    const TensorView a = v(0, DataType::f64, {8, 8}), b = v(1, DataType::f64, {8, 8}), d = v(2, DataType::f64, {8, 8});
    EXPECT_NO_THROW(detail::check_call(a, b, &d, {.alpha = 1e300}, "matmul"));
}

// ---- the Matmul object ---------------------------------------------------------------------------

TEST(MatmulValidation, ExecuteWithOtherLayouts) {
    Problem p;
    Matmul mm(p.a, p.b);
    expect_throw_with<InvalidArgument>(
        [&] {
            mm.execute(v(0, f32, {8, 4}, {1, 8}), p.b, p.d);
        },
        {"a:", "(1, 8)", "differs", "(4, 1)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            mm.execute(p.a, p.b, p.d, {.beta = 1.0, .c = v(3, f32, {8, 6})});
        },
        {"c:", "built without c"});
}

TEST(MatmulValidation, PlanPreferencesAndAutotuneArguments) {
    Problem p;
    Matmul mm(p.a, p.b);
    expect_throw_with<InvalidArgument>([&] { mm.plan({.max_algorithms = 0}); }, {"max_algorithms", "1..64"});
    expect_throw_with<InvalidArgument>([&] { mm.autotune(p.a, p.b, p.d, {}, {}, 0); }, {"iterations", "0"});
    expect_throw_with<InvalidArgument>([&] { mm.autotune(p.a, p.b, p.d, {}, {}, 10001); },
                                       {"iterations", "10001", "1 to 10000"});
    expect_throw_with<InvalidArgument>([&] { (void)mm.algorithm(); }, {"not planned"});
    EXPECT_TRUE(mm.algorithms().empty());
}

// ---- hostile input: enums, moved-from objects, misaligned pointers, tuning paths ----------------

TEST(MatmulValidation, EnumsOutsideTheirEnumerators) {
    Problem p;
    const auto bad_epilog = static_cast<Epilog>(99);
    const auto bad_compute = static_cast<ComputeType>(50);
    const auto bad_type = static_cast<DataType>(77);
    expect_throw_with<InvalidArgument>([&] { Matmul mm(p.a, p.b, {.epilog = bad_epilog}); },
                                       {"options.epilog", "99", "not an Epilog"});
    expect_throw_with<InvalidArgument>([&] { Matmul mm(p.a, p.b, {.compute_type = bad_compute}); },
                                       {"options.compute_type", "50", "not a ComputeType"});
    expect_throw_with<InvalidArgument>([&] { Matmul mm(p.a, p.b, {.result_type = bad_type}); },
                                       {"options.result_type", "77", "not a DataType"});
    // The stateless calls say so before asking for a device (no CudaError on a machine without one).
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, p.d, {}, {.epilog = bad_epilog}); }, {"options.epilog"});
    expect_throw_with<InvalidArgument>([&] { (void)matmul(p.a, p.b, {}, {.result_type = bad_type}); },
                                       {"options.result_type", "77"});
    expect_throw_with<InvalidArgument>([&] { (void)matmul(p.a, p.b, {}, {.compute_type = bad_compute}); },
                                       {"options.compute_type"});
}

TEST(MatmulValidation, MovedFromMatmul) {
    Problem p;
    Matmul mm(p.a, p.b);
    Matmul other(std::move(mm));
    EXPECT_EQ(other.m(), 8);
    // NOLINTBEGIN(bugprone-use-after-move): the moved-from state is specified
    EXPECT_EQ(mm.m(), 0);
    EXPECT_EQ(mm.n(), 0);
    EXPECT_EQ(mm.k(), 0);
    EXPECT_EQ(mm.batch_count(), 0);
    EXPECT_EQ(mm.result_layout().rank(), 0);
    EXPECT_EQ(mm.compute_type(), ComputeType::automatic);
    EXPECT_EQ(mm.options().epilog, Epilog::none);
    const std::initializer_list<std::string> moved = {"moved-from Matmul"};
    expect_throw_with<InvalidArgument>([&] { mm.execute(p.a, p.b, p.d); }, {"Matmul::execute", "moved-from Matmul"});
    expect_throw_with<InvalidArgument>([&] { (void)mm.execute(p.a, p.b); }, moved);
    expect_throw_with<InvalidArgument>([&] { mm.plan(); }, {"Matmul::plan", "moved-from Matmul"});
    expect_throw_with<InvalidArgument>([&] { (void)mm.algorithms(); }, moved);
    expect_throw_with<InvalidArgument>([&] { (void)mm.algorithm(); }, moved);
    expect_throw_with<InvalidArgument>([&] { mm.select_algorithm(0); }, moved);
    expect_throw_with<InvalidArgument>([&] { mm.autotune(p.a, p.b, p.d); }, moved);
    expect_throw_with<InvalidArgument>([&] { mm.save_tuning("x"); }, moved);
    expect_throw_with<InvalidArgument>([&] { (void)mm.load_tuning("x"); }, moved);
    Matmul assigned(p.a, p.b);
    assigned = std::move(other);
    EXPECT_EQ(assigned.n(), 6);
    EXPECT_EQ(other.n(), 0);
    // NOLINTEND(bugprone-use-after-move)
}

TEST(MatmulValidation, PointersNotAlignedToTheirElements) {
    Problem p;
    const TensorView a1 = v(0, f32, {8, 4}, {}, 1);
    expect_throw_with<InvalidArgument>([&] { matmul(a1, p.b, p.d); }, {"a:", "not aligned", "4-byte", "f32"});
    expect_throw_with<InvalidArgument>([&] { (void)matmul(p.a, v(1, f32, {4, 6}, {}, 2)); }, {"b:", "not aligned"});
    expect_throw_with<InvalidArgument>([&] { matmul(p.a, p.b, v(2, f32, {8, 6}, {}, 3)); }, {"d:", "not aligned"});
    Matmul mm(p.a, p.b);
    expect_throw_with<InvalidArgument>([&] { mm.execute(a1, p.b, p.d); }, {"a:", "not aligned"});
    expect_throw_with<InvalidArgument>([&] { (void)mm.execute(a1, p.b); }, {"a:", "not aligned"});
    expect_throw_with<InvalidArgument>([&] { mm.autotune(a1, p.b, p.d); }, {"a:", "not aligned"});
    expect_throw_with<InvalidArgument>(
        [&] { matmul(p.a, p.b, p.d, {.bias = v(3, f32, {6}, {}, 2)}, {.epilog = Epilog::bias}); },
        {"bias:", "not aligned"});
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(p.a, p.b, p.d, {.beta = 1.0, .c = v(4, f32, {8, 6}, {}, 1)});
        },
        {"c:", "not aligned"});
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(v(0, DataType::e4m3, {32, 32}), v(1, DataType::e4m3, {32, 32}, {1, 32}), v(2, bf16, {32, 32}),
                   {.scales = {.a = static_cast<const float*>(addr(9, 1))}});
        },
        {"scales.a", "not aligned"});
    // bf16 needs 2 bytes: an odd address is refused, an even one is an alignment class cuBLASLt takes.
    expect_throw_with<InvalidArgument>(
        [&] {
            matmul(v(0, bf16, {8, 4}, {}, 1), v(1, bf16, {4, 6}), v(2, bf16, {8, 6}));
        },
        {"a:", "2-byte", "bf16"});
}

TEST(MatmulValidation, TuningFilesThatAreNotThere) {
    Problem p;
    Matmul mm(p.a, p.b);
    // A missing file is "nothing saved yet" on any machine, never a device error.
    EXPECT_FALSE(mm.load_tuning("/nonexistent-gpumath-dir/tuning.txt"));
    const std::string dir = ::testing::TempDir();
    expect_throw_with<InvalidArgument>([&] { (void)mm.load_tuning(dir); }, {"path:", "not a regular file"});
    const std::string fifo = dir + "gpumath-tuning-fifo";
    (void)std::remove(fifo.c_str());
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    // Opening a FIFO would block until a writer appears: it is refused instead.
    expect_throw_with<InvalidArgument>([&] { (void)mm.load_tuning(fifo); }, {"path:", fifo, "not a regular file"});
    (void)std::remove(fifo.c_str());
    // A (sparse) file past 64 MiB is not a tuning file: refused before a line of it is read.
    const std::string huge = dir + "gpumath-tuning-huge";
    { std::ofstream(huge) << "# gpumath matmul tuning v1\n"; }
    std::filesystem::resize_file(huge, (std::uintmax_t(64) << 20) + 1);
    expect_throw_with<InvalidArgument>([&] { (void)mm.load_tuning(huge); }, {"path:", huge, "64 MiB"});
    (void)std::remove(huge.c_str());
    // A file of /proc reports size 0 and may not end for gigabytes: reading stops at 64 MiB.
    const std::string pagemap = "/proc/self/pagemap";
    if (std::ifstream(pagemap).good())
        expect_throw_with<InvalidArgument>([&] { (void)mm.load_tuning(pagemap); }, {"path:", pagemap, "64 MiB"});
}

// ---- what a valid problem reports without a GPU ----------------------------------------------------

TEST(MatmulProblemInfo, DescribesTheProblem) {
    Matmul mm(TensorLayout(bf16, {3, 64, 32}), TensorLayout(bf16, {32, 48}), {.epilog = Epilog::gelu_bias});
    EXPECT_EQ(mm.m(), 64);
    EXPECT_EQ(mm.n(), 48);
    EXPECT_EQ(mm.k(), 32);
    EXPECT_EQ(mm.batch_count(), 3);
    EXPECT_EQ(mm.compute_type(), ComputeType::f32);
    EXPECT_EQ(mm.result_layout(), TensorLayout(bf16, {3, 64, 48}));
    EXPECT_EQ(mm.options().epilog, Epilog::gelu_bias);

    Matmul i8(TensorLayout(DataType::i8, {16, 32}), TensorLayout(DataType::i8, {32, 16}));
    EXPECT_EQ(i8.result_layout().dtype(), DataType::i32);
    EXPECT_EQ(i8.compute_type(), ComputeType::i32);

    Matmul fp8(TensorLayout(DataType::e4m3, {32, 64}), TensorLayout(DataType::e4m3, {64, 16}, {1, 64}));
    EXPECT_EQ(fp8.result_layout().dtype(), bf16);

    // D laid out like C (column-major here).
    Matmul with_c(TensorLayout(f32, {8, 4}), TensorLayout(f32, {4, 6}), TensorLayout(f32, {8, 6}, {1, 8}));
    EXPECT_EQ(with_c.result_layout(), TensorLayout(f32, {8, 6}, {1, 8}));
}

TEST(MatmulProblemInfo, ResultLayoutIsWhatTheAllocatingCallsReturn) {
    // D is dense and shares C's unit-stride dimension: a padded row-major C gives a dense row-major
    // D, a batched column-major C a dense column-major D (batch stride M * N).
    const TensorLayout a(f32, {3, 8, 4}), b(f32, {4, 6});
    Matmul padded(a, b, TensorLayout(f32, {3, 8, 6}, {160, 16, 1}));
    EXPECT_EQ(padded.result_layout(), TensorLayout(f32, {3, 8, 6}));
    Matmul broadcast_c(a, b, TensorLayout(f32, {8, 6}));
    EXPECT_EQ(broadcast_c.result_layout(), TensorLayout(f32, {3, 8, 6}));
    Matmul col(a, b, TensorLayout(f32, {3, 8, 6}, {48, 1, 8}));
    EXPECT_EQ(col.result_layout(), TensorLayout(f32, {3, 8, 6}, {48, 1, 8}));
    Matmul col_broadcast(a, b, TensorLayout(f32, {8, 6}, {1, 8}));
    EXPECT_EQ(col_broadcast.result_layout(), TensorLayout(f32, {3, 8, 6}, {48, 1, 8}));

    // A Tensor is row-major, so the allocating calls refuse a column-major C before any GPU work,
    // naming c and the d view to pass (they used to allocate a row-major D that C did not fit).
    const TensorView av = v(0, f32, {3, 8, 4}), bv = v(1, f32, {4, 6});
    const TensorView c_col = v(3, f32, {3, 8, 6}, {48, 1, 8});
    const std::initializer_list<std::string> refusal = {"c:", "(48, 1, 8)", "column-major", "row-major Tensor",
                                                        "d view"};
    expect_throw_with<InvalidArgument>([&] { (void)col.execute(av, bv, {.beta = 1.0, .c = c_col}); }, refusal);
    expect_throw_with<InvalidArgument>([&] { (void)matmul(av, bv, {.beta = 1.0, .c = c_col}); }, refusal);
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)matmul(av, bv, {.beta = 1.0, .c = v(3, f32, {8, 6}, {1, 8})});
        },
        {"c:", "column-major", "d view"});
}

TEST(MatmulProblemInfo, StringsOfEnumerators) {
    EXPECT_EQ(to_string(Epilog::dgelu_bgrad), "dgelu_bgrad");
    EXPECT_EQ(to_string(ComputeType::f32_fast_tf32), "f32_fast_tf32");
    EXPECT_TRUE(epilog_takes_bias(Epilog::relu_aux_bias));
    EXPECT_TRUE(epilog_writes_aux(Epilog::gelu_aux));
    EXPECT_TRUE(epilog_reads_aux(Epilog::drelu_bgrad));
    EXPECT_TRUE(epilog_writes_bias_grad(Epilog::bgradb));
    EXPECT_FALSE(epilog_writes_bias_grad(Epilog::drelu));
}

TEST(MatmulPlanCacheControls, CapacityAndCounters) {
    MatmulPlanCache& cache = matmul_plan_cache();
    const std::size_t before = cache.capacity();
    EXPECT_EQ(before, MatmulPlanCache::default_capacity);
    cache.set_capacity(3);
    EXPECT_EQ(cache.capacity(), 3u);
    EXPECT_EQ(cache.stats().capacity, 3u);
    cache.clear();
    EXPECT_EQ(cache.stats().size, 0u);
    cache.reset_stats();
    EXPECT_EQ(cache.stats().hits, 0u);
    EXPECT_EQ(cache.stats().disk_hits, 0u);  // a plan cache keeps nothing on disk
    // The same controls through the interface every cache shares.
    core::CacheControl& control = cache;
    control.set_capacity(before);
    EXPECT_EQ(cache.capacity(), before);
}

TEST(MatmulNoDevice, ValidCallSaysThereIsNoDevice) {
    if (test::has_gpu()) GTEST_SKIP() << "a CUDA device is present: the no-device behaviour cannot be observed here";
    Problem p;
    expect_throw_with<CudaError>([&] { matmul(p.a, p.b, p.d); }, {"no CUDA driver/device"});
    Matmul mm(p.a, p.b);
    expect_throw_with<CudaError>([&] { mm.plan(); }, {"no CUDA driver/device"});
}
