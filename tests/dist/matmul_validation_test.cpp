// SPDX-License-Identifier: Apache-2.0
// The rules of a tensor-parallel product that need no GPU: which collective joins which split,
// the shapes, the epilogs a row split can take, the chunked pipeline's limits, and what each
// rank's product is planned with.
#include <gtest/gtest.h>

#include <gpumath/dist/matmul.hpp>
#include <gpumath/error.hpp>

#include "common/test_util.hpp"
#include "dist/matmul_checks.hpp"

using namespace gpumath;
using gpumath::dist::OutputCollective;
using gpumath::dist::Parallelism;
using gpumath::dist::ParallelOptions;
using gpumath::test::expect_throw_with;
namespace d = gpumath::detail;

namespace {
const TensorLayout a(DataType::bf16, {96, 64});
const TensorLayout b(DataType::bf16, {64, 32});

d::ParallelShape check(const ParallelOptions& p, const MatmulOptions& o = {}, int size = 4, const TensorLayout& la = a,
                       const TensorLayout& lb = b) {
    return d::check_parallel(la, lb, false, o, p, size, "dist::Matmul");
}
}  // namespace

TEST(ParallelChecks, EachSplitTakesTheCollectivesThatJoinIt) {
    for (auto c : {OutputCollective::none, OutputCollective::all_gather})
        EXPECT_NO_THROW(check({Parallelism::column, c}));
    for (auto c : {OutputCollective::none, OutputCollective::all_reduce, OutputCollective::reduce_scatter})
        EXPECT_NO_THROW(check({Parallelism::row, c}));
    expect_throw_with<InvalidArgument>(
        [] {
            check({Parallelism::column, OutputCollective::all_reduce});
        },
        {"all_reduce does not join column-parallel", "none or all_gather"});
    expect_throw_with<InvalidArgument>(
        [] {
            check({Parallelism::row, OutputCollective::all_gather});
        },
        {"all_gather does not join row-parallel", "partial sums"});
}

TEST(ParallelChecks, EnumValuesOutsideTheirEnumeratorsAreRefused) {
    expect_throw_with<InvalidArgument>([] { check({static_cast<Parallelism>(2)}); },
                                       {"parallel.parallelism", "2", "column, row"});
    expect_throw_with<InvalidArgument>(
        [] {
            check({Parallelism::row, static_cast<OutputCollective>(7)});
        },
        {"parallel.collective", "7", "none, all_gather, all_reduce, reduce_scatter"});
}

TEST(ParallelChecks, OperandsAreMatricesThatMultiply) {
    const TensorLayout batched(DataType::bf16, {2, 96, 64});
    expect_throw_with<InvalidArgument>([&] { check({}, {}, 4, batched, b); }, {"rank 2"});
    const TensorLayout other_k(DataType::bf16, {48, 32});
    expect_throw_with<InvalidArgument>([&] { check({}, {}, 4, a, other_k); }, {"K = 64", "b's rows (48)"});
    const d::ParallelShape s = check({});
    EXPECT_EQ(s.m, 96);
    EXPECT_EQ(s.n, 32);
    EXPECT_EQ(s.k, 64);
    EXPECT_EQ(s.chunk_rows, 96);
    EXPECT_EQ(s.last_rows, 96);
}

TEST(ParallelChecks, ARowSplitTakesNoNonlinearEpilog) {
    const ParallelOptions row{Parallelism::row, OutputCollective::all_reduce};
    EXPECT_NO_THROW(check(row, {.epilog = Epilog::bias}));
    for (Epilog e : {Epilog::relu, Epilog::gelu_bias, Epilog::silu}) {
        expect_throw_with<NotSupported>([&] { check(row, {.epilog = e}); },
                                        {"options.epilog", std::string(to_string(e)), "after the reduction"});
    }
    MatmulOptions with_function;
    with_function.epilog_function = MatmulEpilogFunction{};
    expect_throw_with<NotSupported>([&] { check(row, with_function); }, {"options.epilog_function"});
    // A column split's slices are exact: any epilog.
    EXPECT_NO_THROW(check({Parallelism::column}, {.epilog = Epilog::gelu_bias}));
}

TEST(ParallelChecks, ChunksPipelineARowAllReduceOfEnoughRows) {
    const ParallelOptions ok{Parallelism::row, OutputCollective::all_reduce, 4};
    const d::ParallelShape s = check(ok);
    EXPECT_EQ(s.chunk_rows, 24);
    EXPECT_EQ(s.last_rows, 24);
    const d::ParallelShape uneven = check({Parallelism::row, OutputCollective::all_reduce, 5});
    EXPECT_EQ(uneven.chunk_rows, 20);
    EXPECT_EQ(uneven.last_rows, 16);
    for (int chunks : {0, -1, 65})
        expect_throw_with<InvalidArgument>(
            [&] {
                check({Parallelism::row, OutputCollective::all_reduce, chunks});
            },
            {"parallel.chunks", std::to_string(chunks), "1 to 64"});
    expect_throw_with<InvalidArgument>(
        [] {
            check({Parallelism::row, OutputCollective::none, 2});
        },
        {"row-parallel all_reduce or reduce_scatter only", "none"});
    expect_throw_with<InvalidArgument>(
        [] {
            check({Parallelism::column, OutputCollective::all_gather, 2});
        },
        {"row-parallel all_reduce or reduce_scatter only", "column"});
    // A chunked reduce_scatter: equal chunks, each divisible over the ranks.
    EXPECT_EQ(check({Parallelism::row, OutputCollective::reduce_scatter, 4}).chunk_rows, 24);
    expect_throw_with<InvalidArgument>(
        [] {
            check({Parallelism::row, OutputCollective::reduce_scatter, 5});
        },
        {"5 chunks must be equal", "96 rows"});
    const TensorLayout n3(DataType::bf16, {64, 3});
    expect_throw_with<InvalidArgument>(
        [&] {
            check({Parallelism::row, OutputCollective::reduce_scatter, 32}, {}, 4, a, n3);
        },
        {"3 rows of 3", "divisible by the rank count"});
    const TensorLayout few(DataType::bf16, {3, 64});
    expect_throw_with<InvalidArgument>(
        [&] {
            check({Parallelism::row, OutputCollective::all_reduce, 4}, {}, 4, few, b);
        },
        {"4 chunks of M = 3 rows"});
    const TensorLayout five(DataType::bf16, {5, 64});
    expect_throw_with<InvalidArgument>(
        [&] {
            check({Parallelism::row, OutputCollective::all_reduce, 4}, {}, 4, five, b);
        },
        {"M = 5 rows do not split into 4 chunks of 2 rows"});
}

TEST(ParallelChecks, AReduceScatterSplitsDIntoEqualBlocks) {
    const TensorLayout odd(DataType::bf16, {5, 64});
    const TensorLayout n3(DataType::bf16, {64, 3});
    expect_throw_with<InvalidArgument>(
        [&] {
            check({Parallelism::row, OutputCollective::reduce_scatter}, {}, 2, odd, n3);
        },
        {"reduce_scatter", "15 elements", "2 ranks"});
    EXPECT_NO_THROW(check({Parallelism::row, OutputCollective::reduce_scatter}, {}, 3, odd, n3));
}

TEST(ParallelChecks, AChunkedPipelineTakesNoC) {
    const ParallelOptions chunked{Parallelism::row, OutputCollective::all_reduce, 2};
    expect_throw_with<InvalidArgument>([&] { (void)d::check_parallel(a, b, true, {}, chunked, 4, "dist::Matmul"); },
                                       {"parallel.chunks", "takes no C"});
    EXPECT_NO_THROW((void)d::check_parallel(a, b, true, {}, {Parallelism::row, OutputCollective::all_reduce}, 4, "t"));
}

TEST(ParallelChecks, Fp8CollectivesNeedNccl224AndHopper) {
    const std::vector<d::LocalRank> ranks{{0, 0}, {1, 3}};
    const std::vector<int> hopper{9, 9}, mixed{9, 8};
    EXPECT_NO_THROW(d::check_fp8_collective(DataType::e4m3, 22803, ranks, hopper, "t"));
    expect_throw_with<NotSupported>([&] { d::check_fp8_collective(DataType::e4m3, 22304, ranks, hopper, "t"); },
                                    {"options.result_type", "NCCL 2.24", "22304"});
    expect_throw_with<NotSupported>([&] { d::check_fp8_collective(DataType::e5m2, 22803, ranks, mixed, "t"); },
                                    {"options.result_type", "rank 1 runs on device 3 of 8.x"});
}

TEST(ParallelChecks, ProductsWhoseElementCountOverflowsAreRefused) {
    const std::int64_t big = std::int64_t(1) << 40;
    const TensorLayout tall(DataType::bf16, {big, 4});
    const TensorLayout wide(DataType::bf16, {4, big});
    expect_throw_with<InvalidArgument>(
        [&] {
            check({Parallelism::row, OutputCollective::all_reduce}, {}, 4, tall, wide);
        },
        {"overflow a 64-bit count"});
}

TEST(ParallelChecks, RowSplitRanksOtherThanZeroDropTheBias) {
    const ParallelOptions row{Parallelism::row, OutputCollective::all_reduce};
    const MatmulOptions o{.epilog = Epilog::bias};
    EXPECT_EQ(d::rank_options(o, row, 0).epilog, Epilog::bias);
    EXPECT_EQ(d::rank_options(o, row, 1).epilog, Epilog::none);
    EXPECT_EQ(d::rank_options(o, row, 3).epilog, Epilog::none);
    EXPECT_EQ(d::rank_options(o, {Parallelism::column}, 3).epilog, Epilog::bias);
}
