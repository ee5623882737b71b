// SPDX-License-Identifier: Apache-2.0
// The rules of a tensor-parallel product that need no GPU: which collective joins which split,
// the shapes, the epilogs a row split can take, the chunked pipeline's limits, and what each
// rank's product is planned with.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

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

// Stand-in device queries: devices 0 and 3 are Hopper (9.x), device 1 Ada (8.x); `asked` counts them.
int asked = 0;
int fake_major(int device) {
    ++asked;
    return device == 1 ? 8 : 9;
}
int no_device(int) {
    ++asked;
    throw CudaError("no CUDA driver/device: cudaDeviceGetAttribute: stand-in", 35, "cudaDeviceGetAttribute");
}
constexpr d::CollectiveLookups fake_majors{nullptr, nullptr, &fake_major};
constexpr d::CollectiveLookups without_device{nullptr, nullptr, &no_device};

TEST(ParallelChecks, Fp8CollectivesNeedNccl224AndHopper) {
    const std::vector<d::LocalRank> hopper{{0, 0}, {1, 3}}, mixed{{0, 0}, {1, 1}};
    EXPECT_NO_THROW(d::check_fp8_collective(DataType::e4m3, 22803, hopper, fake_majors, "t"));
    expect_throw_with<NotSupported>([&] { d::check_fp8_collective(DataType::e4m3, 22304, hopper, fake_majors, "t"); },
                                    {"options.result_type", "NCCL 2.24", "22304"});
    expect_throw_with<NotSupported>([&] { d::check_fp8_collective(DataType::e5m2, 22803, mixed, fake_majors, "t"); },
                                    {"options.result_type", "rank 1 runs on device 1 of 8.x"});
}

TEST(ParallelChecks, Fp8CollectivesCheckTheNcclVersionBeforeAskingTheDevices) {
    // NCCL's version needs no device: without one, an old NCCL is still what is reported, and no
    // device is asked.
    const std::vector<d::LocalRank> ranks{{0, 0}, {1, 1}};
    asked = 0;
    expect_throw_with<NotSupported>([&] { d::check_fp8_collective(DataType::e4m3, 22304, ranks, without_device, "t"); },
                                    {"options.result_type", "NCCL 2.24", "22304"});
    EXPECT_EQ(asked, 0);
    // A NCCL with the types asks each device.
    expect_throw_with<CudaError>([&] { d::check_fp8_collective(DataType::e4m3, 22803, ranks, without_device, "t"); },
                                 {"no CUDA driver/device"});
    asked = 0;
    EXPECT_NO_THROW(d::check_fp8_collective(DataType::e4m3, 22803, {{{0, 0}}}, fake_majors, "t"));
    EXPECT_EQ(asked, 1);
}

namespace {

// Distinct, 256-byte aligned fake device addresses, 16 MiB apart (never dereferenced).
void* addr(int slot, std::uintptr_t offset = 0) {
    return reinterpret_cast<void*>((std::uintptr_t(slot) + 1) * (std::uintptr_t(1) << 24) + offset);
}

// A row-parallel FP8 rank: a e4m3 (96, 64) row-major, b e4m3 (64, 32) column-major, d bf16 (96, 32).
struct Fp8Rank {
    TensorView a{addr(0), DataType::e4m3, {96, 64}};
    TensorView b{addr(1), DataType::e4m3, {64, 32}, {1, 64}};
    TensorView d{addr(2), DataType::bf16, {96, 32}};
    MatmulArgs args{};
    MatmulOptions options{};

    void check(int chunks) const {
        const ParallelOptions p{Parallelism::row, OutputCollective::all_reduce, chunks};
        const d::ParallelShape shape = d::check_parallel(a.layout(), b.layout(), false, options, p, 1, "dist::Matmul");
        d::check_chunked_products(a, b, d, args, options, shape, chunks, 0, "dist::Matmul::execute");
    }
};

float* scale(int slot, std::uintptr_t offset = 0) { return static_cast<float*>(addr(slot, offset)); }

}  // namespace

TEST(ParallelChecks, AChunkedFp8PipelineKeepsEachChunksProductValid) {
    Fp8Rank r;
    r.args.scales = {.a = scale(5), .b = scale(5, 16)};
    for (int chunks : {1, 2, 4, 5}) EXPECT_NO_THROW(r.check(chunks)) << chunks << " chunks";

    // amax_d: each chunk's product would overwrite the previous chunk's max.
    Fp8Rank amax;
    amax.d = TensorView(addr(2), DataType::e4m3, {96, 32});
    amax.options.result_type = DataType::e4m3;
    amax.args.scales = {.d = scale(5), .amax_d = scale(6)};
    EXPECT_NO_THROW(amax.check(1));
    expect_throw_with<InvalidArgument>([&] { amax.check(4); },
                                       {"dist::Matmul::execute", "ranks[0].args.scales.amax_d", "chunks = 1"});

    // The finer scale modes' tensors cover all M rows, not a chunk's.
    Fp8Rank outer;
    outer.args.scales = {.a_mode = ScaleMode::outer_vector,
                         .b_mode = ScaleMode::outer_vector,
                         .a_tensor = TensorView(addr(5), DataType::f32, {96}),
                         .b_tensor = TensorView(addr(6), DataType::f32, {32})};
    EXPECT_NO_THROW(outer.check(1));
    expect_throw_with<NotSupported>(
        [&] { outer.check(2); },
        {"ranks[0].args.scales.a_mode", "outer_vector x outer_vector", "96 rows", "48 rows", "chunks = 1"});

    // A column-major FP8 a (datacenter Blackwell takes it): 24-row chunks start 24 bytes apart, so
    // the second chunk's a is 8-byte aligned, which FP8 products refuse; 32-row chunks are fine.
    Fp8Rank column;
    column.a = TensorView(addr(0), DataType::e4m3, {96, 64}, {1, 96});
    EXPECT_NO_THROW(column.check(1));
    EXPECT_NO_THROW(column.check(3));
    expect_throw_with<NotSupported>([&] { column.check(4); },
                                    {"ranks[0], the chunk of rows 24 to 47", "a:", "8-byte aligned", "16-byte"});
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
