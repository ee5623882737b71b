// SPDX-License-Identifier: Apache-2.0
// The rules of Eigh's ranges (EighRange) and of Backend::jacobi_batched, checked before any CUDA
// call: these run without a GPU (the pointers are never dereferenced).
#include <gpumath/linalg.hpp>

#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include "common/test_util.hpp"

namespace gpumath::linalg {
namespace {

using test::expect_throw_with;

// Addresses that are never dereferenced: every check runs before any CUDA call.
std::byte* fake(std::uintptr_t offset = 0) { return reinterpret_cast<std::byte*>(std::uintptr_t(1) << 40) + offset; }

const char* const plan_api = "linalg::Eigh";
const char* const execute_api = "linalg::Eigh::execute";
const double nan = std::numeric_limits<double>::quiet_NaN();
const double inf = std::numeric_limits<double>::infinity();

TEST(LinalgEighRangeValidation, TheEnumeratorsHaveNames) {
    EXPECT_EQ(eigh_range_count, 3);
    EXPECT_EQ(to_string(EighRange::all), "all");
    EXPECT_EQ(to_string(EighRange::index), "index");
    EXPECT_EQ(to_string(EighRange::value), "value");
    EXPECT_EQ(to_string(EighRange(3)), "?");
    EXPECT_EQ(backend_count, 7);
    EXPECT_EQ(to_string(Backend::jacobi_batched), "jacobi_batched");
    const EighOptions defaults;
    EXPECT_EQ(defaults.range, EighRange::all);
    EXPECT_EQ(defaults.first, 0);
    EXPECT_EQ(defaults.last, 0);
    EXPECT_EQ(defaults.low, 0.0);
    EXPECT_EQ(defaults.high, 0.0);
}

TEST(LinalgEighRangeValidation, RefusesARangeOutsideItsEnumerators) {
    expect_throw_with<InvalidArgument>(
        [] {
            Eigh e(TensorLayout(DataType::f32, {4, 4}), {.range = EighRange(3)});
        },
        {plan_api, "options.range", "3", "all, index, value"});
}

TEST(LinalgEighRangeValidation, IndexRangesLieWithin0ToNMinus1InOrder) {
    const TensorLayout l(DataType::f64, {2, 5, 5});
    expect_throw_with<InvalidArgument>([&] { Eigh e(l, {.range = EighRange::index, .first = -1, .last = 2}); },
                                       {plan_api, "options.first: -1", "0 to n - 1"});
    expect_throw_with<InvalidArgument>([&] { Eigh e(l, {.range = EighRange::index, .first = 3, .last = 2}); },
                                       {plan_api, "options.first: 3 is above options.last: 2", "first <= last"});
    expect_throw_with<InvalidArgument>([&] { Eigh e(l, {.range = EighRange::index, .first = 1, .last = 5}); },
                                       {plan_api, "options.last: 5", "n 5", "n - 1 = 4"});
    // No eigenvalue to pick in matrices of order 0.
    expect_throw_with<InvalidArgument>(
        [] {
            Eigh e(TensorLayout(DataType::f32, {3, 0, 0}), {.range = EighRange::index});
        },
        {plan_api, "options.last: 0", "n 0"});
    EXPECT_NO_THROW(Eigh(l, {.range = EighRange::index, .first = 0, .last = 4}));
    EXPECT_NO_THROW(Eigh(l, {.range = EighRange::index, .first = 2, .last = 2}));
}

TEST(LinalgEighRangeValidation, ValueRangesAreNonEmptyIntervalsOfNumbers) {
    const TensorLayout l(DataType::c32, {4, 4});
    expect_throw_with<InvalidArgument>([&] { Eigh e(l, {.range = EighRange::value, .low = 1.0, .high = 1.0}); },
                                       {plan_api, "options.low: 1 is not below options.high: 1", "(low, high]"});
    expect_throw_with<InvalidArgument>([&] { Eigh e(l, {.range = EighRange::value, .low = 2.0, .high = -1.0}); },
                                       {plan_api, "options.low: 2 is not below options.high: -1"});
    expect_throw_with<InvalidArgument>([&] { Eigh e(l, {.range = EighRange::value, .low = nan, .high = 1.0}); },
                                       {plan_api, "options.low: NaN", "numbers"});
    expect_throw_with<InvalidArgument>([&] { Eigh e(l, {.range = EighRange::value, .low = 0.0, .high = nan}); },
                                       {plan_api, "options.high: NaN"});
    EXPECT_NO_THROW(Eigh(l, {.range = EighRange::value, .low = -inf, .high = 0.5}));
    EXPECT_NO_THROW(Eigh(l, {.range = EighRange::value, .low = -1.0, .high = inf}));
}

TEST(LinalgEighRangeValidation, BoundsOfAnotherRangeAreRefused) {
    const TensorLayout l(DataType::f32, {4, 4});
    expect_throw_with<InvalidArgument>([&] { Eigh e(l, {.last = 2}); },
                                       {plan_api, "options.last: 2", "EighRange::index only"});
    expect_throw_with<InvalidArgument>([&] { Eigh e(l, {.range = EighRange::value, .first = 1, .high = 1.0}); },
                                       {plan_api, "options.first: 1", "EighRange::index only"});
    expect_throw_with<InvalidArgument>([&] { Eigh e(l, {.range = EighRange::index, .last = 1, .low = -1.0}); },
                                       {plan_api, "options.low: -1", "EighRange::value only"});
    expect_throw_with<InvalidArgument>([&] { Eigh e(l, {.high = 3.0}); },
                                       {plan_api, "options.high: 3", "EighRange::value only"});
}

TEST(LinalgEighRangeValidation, RangesRunLoopedOnly) {
    const TensorLayout l(DataType::f32, {8, 4, 4});
    for (const Backend b : {Backend::batched, Backend::warp, Backend::jacobi_batched}) {
        expect_throw_with<NotSupported>(
            [&] { Eigh e(l, {.backend = b, .range = EighRange::index, .first = 0, .last = 1}); },
            {plan_api, "options.backend: " + std::string(to_string(b)), "options.range index", "Xsyevdx",
             "looped or automatic"});
        expect_throw_with<NotSupported>(
            [&] { Eigh e(l, {.backend = b, .range = EighRange::value, .low = 0.0, .high = 1.0}); },
            {plan_api, "options.backend: " + std::string(to_string(b)), "options.range value"});
    }
    EXPECT_NO_THROW(Eigh(l, {.backend = Backend::looped, .range = EighRange::index, .first = 0, .last = 1}));
    const Eigh automatic(l, {.range = EighRange::value, .low = 0.0, .high = 1.0});
    EXPECT_EQ(automatic.backend(), Backend::automatic);
    EXPECT_FALSE(automatic.planned());
}

TEST(LinalgEighRangeValidation, AccessorsGiveTheRangesLayouts) {
    for (const DataType t : {DataType::f32, DataType::f64, DataType::c32, DataType::c64}) {
        const DataType real = t == DataType::f64 || t == DataType::c64 ? DataType::f64 : DataType::f32;
        const TensorLayout l(t, {2, 3, 6, 6});
        const Eigh index(l, {.range = EighRange::index, .first = 1, .last = 3});
        EXPECT_EQ(index.values_layout(), TensorLayout(real, {2, 3, 3}));
        EXPECT_EQ(index.vectors_layout(), TensorLayout(t, {2, 3, 6, 3}));
        EXPECT_EQ(index.info_layout(), TensorLayout(DataType::i32, {2, 3}));
        const Eigh value(l, {.range = EighRange::value, .low = -1.0, .high = 1.0});
        EXPECT_EQ(value.values_layout(), TensorLayout(real, {2, 3, 6}));
        EXPECT_EQ(value.vectors_layout(), l);
        const Eigh all(l);
        EXPECT_EQ(all.values_layout(), TensorLayout(real, {2, 3, 6}));
        EXPECT_EQ(all.vectors_layout(), l);
    }
    const Eigh single(TensorLayout(DataType::f32, {4, 4}), {.range = EighRange::index, .first = 3, .last = 3});
    EXPECT_EQ(single.values_layout(), TensorLayout(DataType::f32, {1}));
    EXPECT_EQ(single.vectors_layout(), TensorLayout(DataType::f32, {4, 1}));
    Eigh moved(TensorLayout(DataType::f32, {4, 4}));
    const Eigh other = std::move(moved);
    EXPECT_EQ(moved.vectors_layout(), TensorLayout());  // NOLINT(bugprone-use-after-move): the empty plan
}

TEST(LinalgEighRangeValidation, ExecuteChecksTheRangesOperands) {
    const TensorLayout l(DataType::f64, {2, 5, 5});
    const TensorView a(fake(), l);
    const TensorView info(fake(4 << 20), TensorLayout(DataType::i32, {2}));
    Eigh index(l, {.range = EighRange::index, .first = 1, .last = 2});
    const TensorView w(fake(2 << 20), index.values_layout());
    const TensorView v(fake(1 << 20), index.vectors_layout());
    expect_throw_with<InvalidArgument>(
        [&] {
            index.execute(a, TensorView(fake(2 << 20), TensorLayout(DataType::f64, {2, 5})), v, info);
        },
        {execute_api, "values: shape (2, 5)", "(2, 2)"});
    expect_throw_with<InvalidArgument>([&] { index.execute(a, w, TensorView(fake(1 << 20), l), info); },
                                       {execute_api, "vectors: shape (2, 5, 5)", "(2, 5, 2)"});
    expect_throw_with<InvalidArgument>(
        [&] { index.execute(a, w, v, info, TensorView(fake(5 << 20), TensorLayout(DataType::i32, {2}))); },
        {execute_api, "counts: given", "options.range is index", "TensorView{}"});
    Eigh value(l, {.range = EighRange::value, .low = 0.0, .high = 1.0});
    const TensorView vw(fake(2 << 20), value.values_layout());
    const TensorView vv(fake(1 << 20), value.vectors_layout());
    expect_throw_with<InvalidArgument>([&] { value.execute(a, vw, vv, info); },
                                       {execute_api, "counts: none given", "(low, high]", "shape (2,)"});
    expect_throw_with<InvalidArgument>([&] { value.execute(a, vw, vv, info, TensorView()); },
                                       {execute_api, "counts: none given"});
    expect_throw_with<InvalidArgument>(
        [&] { value.execute(a, vw, vv, info, TensorView(fake(5 << 20), TensorLayout(DataType::i32, {3}))); },
        {execute_api, "counts: shape (3,)", "(2,)"});
    expect_throw_with<InvalidArgument>(
        [&] { value.execute(a, vw, vv, info, TensorView(fake(5 << 20), TensorLayout(DataType::f32, {2}))); },
        {execute_api, "counts: dtype f32", "i32"});
    expect_throw_with<InvalidArgument>(
        [&] { value.execute(a, vw, vv, info, TensorView(fake(5 << 20), DataType::i32, {2}, {2})); },
        {execute_api, "counts: strides", "contiguous"});
    expect_throw_with<InvalidArgument>(
        [&] { value.execute(a, vw, vv, info, TensorView(fake((4 << 20) + 4), TensorLayout(DataType::i32, {2}))); },
        {execute_api, "counts: its memory", "overlaps info's"});
    expect_throw_with<InvalidArgument>(
        [&] { value.execute(a, vw, vv, info, TensorView(fake(8), TensorLayout(DataType::i32, {2}))); },
        {execute_api, "counts: its memory", "overlaps a's"});
    Eigh all(l);
    expect_throw_with<InvalidArgument>(
        [&] { all.execute(a, vw, vv, info, TensorView(fake(5 << 20), TensorLayout(DataType::i32, {2}))); },
        {execute_api, "counts: given", "options.range is all"});
}

TEST(LinalgEighRangeValidation, StatelessEighValidatesRangesFirst) {
    const TensorView a(fake(), TensorLayout(DataType::f32, {3, 4, 4}));
    expect_throw_with<InvalidArgument>([&] { (void)eigh(a, {.range = EighRange::index, .first = 2, .last = 1}); },
                                       {plan_api, "options.first: 2 is above options.last: 1"});
    expect_throw_with<InvalidArgument>([&] { (void)eigh(a, {.range = EighRange::value, .low = 1.0, .high = 0.0}); },
                                       {plan_api, "options.low: 1 is not below"});
    expect_throw_with<NotSupported>(
        [&] { (void)eigh(a, {.backend = Backend::batched, .range = EighRange::value, .low = 0.0, .high = 1.0}); },
        {plan_api, "options.backend: batched"});
}

TEST(LinalgEighRangeValidation, JacobiBatchedIsEighsUpTo32) {
    for (const DataType t : {DataType::f32, DataType::f64, DataType::c32, DataType::c64})
        for (const std::int64_t n : {1, 3, 32}) {
            const Eigh e(TensorLayout(t, {5, n, n}), {.backend = Backend::jacobi_batched});
            EXPECT_EQ(e.backend(), Backend::jacobi_batched);
        }
    expect_throw_with<NotSupported>(
        [] {
            Eigh e(TensorLayout(DataType::f64, {4, 33, 33}), {.backend = Backend::jacobi_batched});
        },
        {plan_api, "options.backend: jacobi_batched", "syevjBatched", "n <= 32", "n 33", "4 matrices"});
    const TensorLayout l(DataType::f32, {4, 4});
    expect_throw_with<NotSupported>([&] { Cholesky c(l, {.backend = Backend::jacobi_batched}); },
                                    {"linalg::Cholesky", "options.backend: jacobi_batched", "linalg::Eigh only",
                                     "this plan takes automatic, looped, batched or warp"});
    expect_throw_with<NotSupported>(
        [&] { LU lu(l, {.backend = Backend::jacobi_batched}); },
        {"linalg::LU", "jacobi_batched", "linalg::Eigh only", "automatic, looped, batched or warp"});
    expect_throw_with<NotSupported>(
        [&] { SVD s(l, {.backend = Backend::jacobi_batched}); },
        {"linalg::SVD", "jacobi_batched", "linalg::Eigh only", "automatic, looped, batched, jacobi or approximate"});
    expect_throw_with<NotSupported>([&] { Eig e(l, {.backend = Backend::jacobi_batched}); },
                                    {"linalg::Eig", "jacobi_batched", "linalg::Eigh only", "automatic or looped"});
    // And Eigh takes none of SVD's own.
    expect_throw_with<NotSupported>([&] { Eigh e(l, {.backend = Backend::jacobi}); },
                                    {plan_api, "options.backend: jacobi", "linalg::SVD only",
                                     "automatic, looped, batched, warp or jacobi_batched"});
    const TensorView a(fake(), TensorLayout(DataType::f32, {3, 4, 4}));
    expect_throw_with<NotSupported>([&] { (void)cholesky(a, {.backend = Backend::jacobi_batched}); },
                                    {"linalg::Cholesky", "jacobi_batched"});
    expect_throw_with<NotSupported>([&] { (void)det(a, {.backend = Backend::jacobi_batched}); },
                                    {"linalg::LU", "jacobi_batched"});
}

TEST(LinalgEighRangeValidation, SavedChoicesMayNameJacobiBatched) {
    // A choices line naming jacobi_batched parses (the file is read and added; nothing runs).
    const std::string path = testing::TempDir() + "gpumath_eigh_range_choices.txt";
    {
        std::FILE* f = std::fopen(path.c_str(), "w");
        ASSERT_NE(f, nullptr);
        std::fputs("# gpumath linalg backend choices 1\nNVIDIA_Test_Card\teigh\tf64\t3\t512\tjacobi_batched\n", f);
        std::fclose(f);
    }
    EXPECT_EQ(load_backend_choices(path), 1U);
    std::remove(path.c_str());
}

}  // namespace
}  // namespace gpumath::linalg
