// SPDX-License-Identifier: Apache-2.0
// The rules of LU's Backend::batched (cuBLAS's getrfBatched and getrsBatched, whose sizes are int),
// checked before any CUDA call: these run without a GPU (the pointers are never dereferenced).
#include <gpumath/linalg.hpp>

#include <climits>
#include <cstdint>

#include "common/test_util.hpp"

namespace gpumath::linalg {
namespace {

using test::expect_throw_with;

// Addresses that are never dereferenced: every check runs before any CUDA call.
std::byte* fake(std::uintptr_t offset = 0) {
    return reinterpret_cast<std::byte*>(std::uintptr_t(1) << 40) + offset;  // NOLINT(performance-no-int-to-ptr)
}

constexpr std::int64_t above_int = std::int64_t(INT_MAX) + 1;

TEST(LUBatchedValidation, PlansOfEveryDtypeAndBatchShapeAreMade) {
    for (const DataType t : {DataType::f32, DataType::f64, DataType::c32, DataType::c64}) {
        const LU plan(TensorLayout(t, {2, 3, 5, 5}), {.backend = Backend::batched});
        EXPECT_EQ(plan.backend(), Backend::batched);
        EXPECT_EQ(plan.options().backend, Backend::batched);
        EXPECT_FALSE(plan.planned());
        EXPECT_EQ(plan.workspace_size(), 0U);
        EXPECT_EQ(plan.pivots_layout().dtype(), DataType::i32);
        EXPECT_EQ(plan.pivots_layout().rank(), 3);
        EXPECT_EQ(plan.info_layout().rank(), 2);
    }
    // One matrix and n past 32 (the warp kernel's limit) are the batched backend's too.
    EXPECT_EQ(LU(TensorLayout(DataType::f64, {100, 100}), {.backend = Backend::batched}).backend(), Backend::batched);
    // Automatic stays automatic until planned.
    EXPECT_EQ(LU(TensorLayout(DataType::f32, {64, 8, 8})).backend(), Backend::automatic);
}

TEST(LUBatchedValidation, SizesAboveIntMaxAreNotSupported) {
    // (An n above INT_MAX has no layout: n² elements take more bytes than an int64 counts.)
    expect_throw_with<NotSupported>(
        [] {
            LU plan(TensorLayout(DataType::c64, {above_int, 1, 1}), {.backend = Backend::batched});
        },
        {"linalg::LU", "options.backend", "getrfBatched", "INT_MAX", "2147483647", "n 1 and 2147483648 matrices",
         "use looped or automatic"});
    // The other backends take such layouts (looped runs the 64-bit API).
    EXPECT_NO_THROW(LU(TensorLayout(DataType::f32, {above_int, 1, 1}), {.backend = Backend::looped}));
    EXPECT_NO_THROW(LU(TensorLayout(DataType::f32, {above_int, 1, 1})));
}

TEST(LUBatchedValidation, LeadingDimensionsAndRightHandSidesAboveIntMaxAreNotSupported) {
    // Two 2 × 2 matrices whose rows are 2^31 elements apart, factorized in place.
    const TensorLayout l(DataType::f32, {2, 2, 2});
    LU plan(l, {.backend = Backend::batched});
    const TensorView wide(fake(), TensorLayout(DataType::f32, {2, 2, 2}, {2 * above_int, above_int, 1}));
    const std::uintptr_t past = std::uintptr_t(1) << 36;  // beyond the 24 GiB wide spans
    const TensorView pivots(fake(past), plan.pivots_layout());
    const TensorView info(fake(past + 4096), plan.info_layout());
    expect_throw_with<NotSupported>([&] { plan.factorize(wide, wide, pivots, info); },
                                    {"linalg::LU::factorize", "lu: the leading dimension is 2147483648", "INT_MAX",
                                     "getrfBatched", "use looped or automatic"});
    const TensorView packed(fake(past + 8192), l);
    expect_throw_with<NotSupported>(
        [&] {
            plan.solve(wide, pivots, TensorView(fake(past + 16384), TensorLayout(DataType::f32, {2, 2})),
                       TensorView(fake(past + 32768), TensorLayout(DataType::f32, {2, 2})));
        },
        {"linalg::LU::solve", "lu: the leading dimension is 2147483648", "INT_MAX"});
    // x column-major with columns 2^31 elements apart.
    const TensorView xwide(fake(past * 2), TensorLayout(DataType::f32, {2, 2, 2}, {2 * above_int, 1, above_int}));
    const TensorView b(fake(past + 65536), l);
    expect_throw_with<NotSupported>([&] { plan.solve(packed, pivots, b, xwide); },
                                    {"linalg::LU::solve", "x: the leading dimension is 2147483648", "INT_MAX"});
    // More right-hand sides than an int counts, solved in place.
    LU ones(TensorLayout(DataType::f32, {2, 1, 1}), {.backend = Backend::batched});
    const TensorView many(fake(past * 2), TensorLayout(DataType::f32, {2, 1, above_int}));
    expect_throw_with<NotSupported>(
        [&] {
            ones.solve(TensorView(fake(past), ones.layout()), TensorView(fake(past + 4096), ones.pivots_layout()), many,
                       many);
        },
        {"linalg::LU::solve", "b: the number of right-hand sides is 2147483648", "INT_MAX", "getrsBatched"});
}

TEST(LUBatchedValidation, TheOperandRulesAreTheOtherBackends) {
    const TensorLayout l(DataType::f64, {3, 4, 4});
    LU plan(l, {.backend = Backend::batched});
    const TensorView a(fake(), l);
    const TensorView lu(fake(1 << 20), l);
    const TensorView pivots(fake(2 << 20), plan.pivots_layout());
    const TensorView info(fake(3 << 20), plan.info_layout());
    expect_throw_with<InvalidArgument>(
        [&] {
            plan.factorize(a, TensorView(fake(1 << 20), TensorLayout(DataType::f64, {3, 4, 4}, {32, 8, 2})), pivots,
                           info);
        },
        {"linalg::LU::factorize", "lu: strides (32, 8, 2)", "factorizes in place"});
    expect_throw_with<InvalidArgument>(
        [&] {
            plan.factorize(a, lu, TensorView(fake(2 << 20), TensorLayout(DataType::i32, {3, 3})), info);
        },
        {"linalg::LU::factorize", "pivots: shape (3, 3)", "(3, 4)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            plan.solve(lu, pivots, TensorView(fake(4 << 20), TensorLayout(DataType::f64, {3, 5})),
                       TensorView(fake(5 << 20), TensorLayout(DataType::f64, {3, 5})));
        },
        {"linalg::LU::solve", "b: shape (3, 5)"});
    LU moved(l, {.backend = Backend::batched});
    const LU taken(std::move(moved));
    EXPECT_EQ(taken.backend(), Backend::batched);
    EXPECT_EQ(taken.options().backend, Backend::batched);
}

}  // namespace
}  // namespace gpumath::linalg
