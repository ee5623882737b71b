// SPDX-License-Identifier: Apache-2.0
// Every rule of gpumath::linalg's plans and calls, checked before any CUDA call: these run without
// a GPU (the pointers are never dereferenced).
#include <gpumath/linalg.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <unistd.h>
#include <string>

#include "common/test_util.hpp"

namespace gpumath::linalg {
namespace {

using test::expect_throw_with;

// Addresses that are never dereferenced: every check runs before any CUDA call.
std::byte* fake(std::uintptr_t offset = 0) { return reinterpret_cast<std::byte*>(std::uintptr_t(1) << 40) + offset; }

const TensorLayout batch4(DataType::f64, {2, 2, 4, 4});

TEST(LinalgValidation, PlansTakeSquareMatricesOfTheFourSolverTypes) {
    expect_throw_with<InvalidArgument>([] { Cholesky c(TensorLayout(DataType::f32, {4})); },
                                       {"linalg::Cholesky", "a: rank 1", "(..., n, n)"});
    expect_throw_with<InvalidArgument>(
        [] {
            Eigh e(TensorLayout(DataType::f32, {3, 4, 5}));
        },
        {"linalg::Eigh", "4 x 5", "square"});
    for (const DataType t : {DataType::f16, DataType::bf16, DataType::i32, DataType::e4m3, DataType::i8})
        expect_throw_with<NotSupported>(
            [&] {
                Cholesky c(TensorLayout(t, {4, 4}));
            },
            {"a: dtype", std::string(to_string(t)), "f32, f64, c32 and c64"});
    expect_throw_with<InvalidArgument>(
        [] {
            Cholesky c(TensorLayout(DataType::f32, {4, 4}), {.triangle = Triangle(7)});
        },
        {"options.triangle", "7", "lower, upper"});
    expect_throw_with<InvalidArgument>(
        [] {
            Eigh e(TensorLayout(DataType::f32, {4, 4}), {.backend = Backend(9)});
        },
        {"options.backend", "9", "automatic, looped, batched"});
    for (const DataType t : {DataType::f32, DataType::f64, DataType::c32, DataType::c64}) {
        const Cholesky c(TensorLayout(t, {3, 5, 5}));
        EXPECT_FALSE(c.planned());
        EXPECT_EQ(c.workspace_size(), 0U);
        EXPECT_EQ(c.backend(), Backend::automatic);
        EXPECT_EQ(c.info_layout().dtype(), DataType::i32);
        ASSERT_EQ(c.info_layout().rank(), 1);
        EXPECT_EQ(c.info_layout().shape(0), 3);
        const Eigh e(TensorLayout(t, {2, 3, 5, 5}));
        EXPECT_EQ(e.values_layout().dtype(), t == DataType::f64 || t == DataType::c64 ? DataType::f64 : DataType::f32);
        ASSERT_EQ(e.values_layout().rank(), 3);
        EXPECT_EQ(e.values_layout().shape(2), 5);
    }
    EXPECT_EQ(Cholesky(TensorLayout(DataType::f32, {4, 4})).info_layout().rank(), 0);  // one matrix
}

TEST(LinalgValidation, FactorizeChecksEveryOperandFirst) {
    Cholesky c(batch4);
    const TensorView a(fake(), batch4);
    const TensorView factor(fake(1 << 20), batch4);
    const TensorView info(fake(2 << 20), c.info_layout());
    const char* api = "linalg::Cholesky::factorize";
    expect_throw_with<InvalidArgument>(
        [&] {
            c.factorize(TensorView(fake(), TensorLayout(DataType::f64, {2, 2, 5, 5})), factor, info);
        },
        {api, "a: shape (2, 2, 5, 5)", "(2, 2, 4, 4)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            c.factorize(a, TensorView(fake(1 << 20), TensorLayout(DataType::f32, {2, 2, 4, 4})), info);
        },
        {api, "factor: dtype f32", "f64"});
    expect_throw_with<InvalidArgument>(
        [&] {
            c.factorize(a, factor, TensorView(fake(2 << 20), TensorLayout(DataType::f32, {2, 2})));
        },
        {api, "info: dtype f32", "i32"});
    expect_throw_with<InvalidArgument>(
        [&] { c.factorize(a, factor, TensorView(fake(2 << 20), TensorLayout(DataType::i32, {4}))); },
        {api, "info: shape (4,)", "(2, 2)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            c.factorize(a, factor, TensorView(fake(2 << 20), TensorLayout(DataType::i32, {2, 2}, {1, 2})));
        },
        {api, "info: strides (1, 2)", "contiguous"});
    expect_throw_with<InvalidArgument>([&] { c.factorize(TensorView(fake(3), batch4), factor, info); },
                                       {api, "a: data", "not aligned", "8-byte"});
    expect_throw_with<InvalidArgument>([&] { c.factorize(a, TensorView(fake(64), batch4), info); },
                                       {api, "factor: its memory", "overlaps a's"});
    expect_throw_with<InvalidArgument>([&] { c.factorize(a, factor, TensorView(fake(8), c.info_layout())); },
                                       {api, "info: its memory", "overlaps a's"});
    expect_throw_with<InvalidArgument>(
        [&] {
            c.factorize(a, TensorView(fake(1 << 20), TensorLayout(DataType::f64, {2, 2, 4, 4}, {0, 16, 4, 1})), info);
        },
        {api, "factor: strides", "share one address"});
    expect_throw_with<InvalidArgument>([&] { c.factorize(TensorView(nullptr, batch4), factor, info); }, {"null"});
}

TEST(LinalgValidation, SolveChecksTheRightHandSides) {
    Cholesky c(TensorLayout(DataType::f32, {3, 4, 4}));
    const TensorView factor(fake(), c.layout());
    const char* api = "linalg::Cholesky::solve";
    const TensorView b(fake(1 << 20), TensorLayout(DataType::f32, {3, 4, 2}));
    expect_throw_with<InvalidArgument>(
        [&] { c.solve(factor, TensorView(fake(1 << 20), TensorLayout(DataType::f32, {2})), b); },
        {api, "b: shape (2,)", "(..., n, k) or (..., n)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            c.solve(factor, TensorView(fake(1 << 20), TensorLayout(DataType::f32, {3, 5, 2})), b);
        },
        {api, "b: shape (3, 5, 2)", "(3, 4, 2)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            c.solve(factor, TensorView(fake(1 << 20), TensorLayout(DataType::f32, {2, 4})), b);
        },
        {api, "b: shape (2, 4)", "(3, 4)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            c.solve(factor, b, TensorView(fake(1 << 20), TensorLayout(DataType::f64, {3, 4, 2})));
        },
        {api, "x: dtype f64", "f32"});
    expect_throw_with<InvalidArgument>([&] { c.solve(factor, b, TensorView(fake(16), b)); },
                                       {api, "x: its memory", "overlaps factor's"});
    expect_throw_with<InvalidArgument>([&] { c.solve(factor, b, TensorView(fake((1 << 20) + 8), b)); },
                                       {api, "x: its memory", "overlaps b's"});
}

TEST(LinalgValidation, EighChecksValuesAndVectors) {
    const TensorLayout l(DataType::c32, {2, 3, 3});
    Eigh e(l);
    const TensorView a(fake(), l);
    const TensorView v(fake(1 << 20), l);
    const TensorView info(fake(3 << 20), e.info_layout());
    const char* api = "linalg::Eigh::execute";
    expect_throw_with<InvalidArgument>(
        [&] {
            e.execute(a, TensorView(fake(2 << 20), TensorLayout(DataType::c32, {2, 3})), v, info);
        },
        {api, "values: dtype c32", "f32"});
    expect_throw_with<InvalidArgument>(
        [&] {
            e.execute(a, TensorView(fake(2 << 20), TensorLayout(DataType::f32, {2, 4})), v, info);
        },
        {api, "values: shape (2, 4)", "(2, 3)"});
    const TensorView w(fake(2 << 20), e.values_layout());
    expect_throw_with<InvalidArgument>(
        [&] { e.execute(a, TensorView(fake((1 << 20) + 8), e.values_layout()), v, info); },
        {api, "values: its memory", "overlaps vectors'"});
    expect_throw_with<InvalidArgument>([&] { e.execute(a, w, TensorView(fake(8), l), info); },
                                       {api, "vectors: its memory", "overlaps a's"});
    Eigh values_only(l, {.vectors = false});
    expect_throw_with<InvalidArgument>([&] { values_only.execute(a, w, v, info); },
                                       {api, "vectors: given", "values only", "TensorView{}"});
}

TEST(LinalgValidation, LUChecksItsFactorAndPivots) {
    const TensorLayout l(DataType::f32, {2, 4, 4});
    LU plan(l);
    const char* api = "linalg::LU::factorize";
    const TensorView a(fake(), l);
    const TensorView lu(fake(1 << 20), l);
    const TensorView pivots(fake(2 << 20), plan.pivots_layout());
    const TensorView info(fake(3 << 20), plan.info_layout());
    EXPECT_EQ(plan.pivots_layout().dtype(), DataType::i32);
    EXPECT_EQ(plan.pivots_layout().shape(1), 4);
    expect_throw_with<InvalidArgument>(
        [&] {
            plan.factorize(a, TensorView(fake(1 << 20), TensorLayout(DataType::f32, {2, 4, 4}, {32, 8, 2})), pivots,
                           info);
        },
        {api, "lu: strides (32, 8, 2)", "factorizes in place"});
    expect_throw_with<InvalidArgument>(
        [&] {
            plan.factorize(a, lu, TensorView(fake(2 << 20), TensorLayout(DataType::i32, {2, 3})), info);
        },
        {api, "pivots: shape (2, 3)", "(2, 4)"});
    expect_throw_with<InvalidArgument>([&] { plan.factorize(a, lu, TensorView(fake(64), plan.pivots_layout()), info); },
                                       {api, "pivots: its memory", "overlaps a's"});
    const TensorView b(fake(4 << 20), TensorLayout(DataType::f32, {2, 4}));
    expect_throw_with<InvalidArgument>([&] { plan.solve(lu, pivots, b, TensorView(fake((2 << 20) + 4), b)); },
                                       {"linalg::LU::solve", "x: its memory", "overlaps pivots'"});
    EXPECT_EQ(LU(l, {.backend = Backend::batched}).backend(), Backend::batched);
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)solve(a, TensorView(fake(4 << 20), TensorLayout(DataType::f32, {3, 4})));
        },
        {"linalg::solve", "b: shape (3, 4)", "(2, 4)"});
    expect_throw_with<NotSupported>(
        [&] {
            (void)det(TensorView(fake(), TensorLayout(DataType::bf16, {3, 3})));
        },
        {"linalg::LU", "bf16"});
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)inv(TensorView(fake(), TensorLayout(DataType::f64, {3, 2})));
        },
        {"linalg::LU", "3 x 2"});
}

TEST(LinalgValidation, MovedFromPlansSayWhatHappened) {
    Cholesky c(TensorLayout(DataType::f32, {4, 4}));
    const Cholesky taken(std::move(c));
    EXPECT_EQ(taken.layout().shape(0), 4);
    expect_throw_with<InvalidArgument>([&] { c.plan(); },
                                       {"linalg::Cholesky", "moved"});  // NOLINT(bugprone-use-after-move)
    EXPECT_FALSE(c.planned());
    EXPECT_EQ(c.layout().rank(), 0);
    EXPECT_EQ(c.workspace_size(), 0U);
    Eigh e(TensorLayout(DataType::f32, {4, 4}));
    Eigh other = std::move(e);
    expect_throw_with<InvalidArgument>(  // NOLINT(bugprone-use-after-move)
        [&] { e.execute(TensorView(), TensorView(), TensorView(), TensorView()); }, {"linalg::Eigh", "moved"});
    EXPECT_EQ(other.values_layout().rank(), 1);
}

TEST(LinalgValidation, StatelessCallsRejectBadInputWithoutADevice) {
    expect_throw_with<InvalidArgument>(
        [] {
            (void)cholesky(TensorView(fake(), TensorLayout(DataType::f32, {4, 3})));
        },
        {"linalg::Cholesky", "4 x 3"});
    expect_throw_with<NotSupported>(
        [] {
            (void)eigh(TensorView(fake(), TensorLayout(DataType::f16, {4, 4})));
        },
        {"linalg::Eigh", "f16"});
    expect_throw_with<InvalidArgument>(
        [] { check_info(TensorView(fake(), TensorLayout(DataType::f32, {3})), "linalg::cholesky"); },
        {"linalg::check_info", "info: dtype f32", "i32"});
}

TEST(LinalgValidation, BackendChoicesRoundTripThroughAFile) {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("gpumath_linalg_choices_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto write = [&](const std::string& name, const std::string& text) {
        std::ofstream(dir / name, std::ios::binary) << text;
        return (dir / name).string();
    };
    const std::string header = "# gpumath linalg backend choices 1\n";
    const std::string saved = write("in.txt", header + "Test_GPU\tcholesky\tf64\t100\t500\tbatched\n" +
                                                  "Test_GPU\teigh values\tc32\t7\t3\tlooped\n");
    EXPECT_EQ(load_backend_choices(saved), 2U);
    EXPECT_EQ(load_backend_choices((dir / "missing.txt").string()), 0U);
    const std::string out = (dir / "out.txt").string();
    save_backend_choices(out);
    std::ifstream in(out);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text.rfind(header, 0), 0U) << text;
    EXPECT_NE(text.find("Test_GPU\tcholesky\tf64\t100\t500\tbatched\n"), std::string::npos) << text;
    EXPECT_NE(text.find("Test_GPU\teigh values\tc32\t7\t3\tlooped\n"), std::string::npos) << text;
    EXPECT_EQ(load_backend_choices(out), 2U);  // what was saved loads again

    const char* api = "linalg::load_backend_choices";
    expect_throw_with<InvalidArgument>([&] { (void)load_backend_choices(write("a.txt", "x\n")); },
                                       {api, "line 1", "header"});
    expect_throw_with<InvalidArgument>(
        [&] { (void)load_backend_choices(write("b.txt", header + "G\tcholesky\tf64\t1\t2\tfast\n")); },
        {api, "line 2", "a backend other than looped, batched, jacobi and approximate"});
    expect_throw_with<InvalidArgument>(
        [&] { (void)load_backend_choices(write("c.txt", header + "\nG\tqr\tf64\t1\t2\tlooped\n")); },
        {api, "line 3", "unknown operation"});
    expect_throw_with<InvalidArgument>(
        [&] { (void)load_backend_choices(write("d.txt", header + "G\teigh\tf16\t1\t2\tlooped\n")); },
        {api, "line 2", "dtype"});
    expect_throw_with<InvalidArgument>(
        [&] { (void)load_backend_choices(write("e.txt", header + "G\teigh\tf32\t-1\t2\tlooped\n")); },
        {api, "line 2", "not a count"});
    expect_throw_with<InvalidArgument>([&] { (void)load_backend_choices(write("f.txt", "")); }, {api, "empty"});
    expect_throw_with<InvalidArgument>([&] { (void)load_backend_choices(dir.string()); }, {api, "not a regular file"});
    expect_throw_with<InvalidArgument>([&] { save_backend_choices(dir.string()); },
                                       {"linalg::save_backend_choices", "not a regular file"});
    std::filesystem::remove_all(dir);
}

TEST(LinalgValidation, NumericalErrorCarriesTheMatrixAndItsInfo) {
    const NumericalError e("linalg::cholesky: matrix 3 is not positive definite", "linalg::cholesky", 3, 5);
    EXPECT_EQ(e.batch_index(), 3);
    EXPECT_EQ(e.info(), 5);
    EXPECT_EQ(e.status(), 0);
    EXPECT_EQ(e.api(), "linalg::cholesky");
    const Error& base = e;
    EXPECT_NE(std::string(base.what()).find("matrix 3"), std::string::npos);
    EXPECT_EQ(to_string(Triangle::upper), "upper");
    EXPECT_EQ(to_string(Backend::batched), "batched");
    EXPECT_EQ(to_string(Backend(9)), "?");
}

}  // namespace
}  // namespace gpumath::linalg
