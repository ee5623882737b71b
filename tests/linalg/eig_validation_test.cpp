// SPDX-License-Identifier: Apache-2.0
// Every rule of gpumath::linalg's general eigendecomposition (Eig, eig) and mixed-precision solve
// (RefinedSolve, refined_solve), checked before any CUDA call: these run without a GPU (the
// pointers are never dereferenced). Also: the eigenvector kernel compiles with NVRTC.
#include <gpumath/linalg.hpp>

#include <cstdint>
#include <limits>
#include <string>

#include <gpumath/core/program.hpp>

#include "common/test_util.hpp"
#include "linalg/eig_kernels.hpp"

#ifndef GPUMATH_TEST_ARCH
#define GPUMATH_TEST_ARCH "sm_90"
#endif

namespace gpumath::linalg {
namespace {

using test::expect_throw_with;

// Addresses that are never dereferenced: every check runs before any CUDA call.
std::byte* fake(std::uintptr_t offset = 0) { return reinterpret_cast<std::byte*>(std::uintptr_t(1) << 40) + offset; }

TEST(EigValidation, PlansTakeSquareMatricesOfTheFourSolverTypes) {
    expect_throw_with<InvalidArgument>([] { Eig e(TensorLayout(DataType::f32, {4})); },
                                       {"linalg::Eig", "a: rank 1", "(..., n, n)"});
    expect_throw_with<InvalidArgument>(
        [] {
            Eig e(TensorLayout(DataType::f64, {2, 4, 5}));
        },
        {"linalg::Eig", "4 x 5", "square"});
    for (const DataType t : {DataType::f16, DataType::bf16, DataType::i32})
        expect_throw_with<NotSupported>(
            [&] {
                Eig e(TensorLayout(t, {4, 4}));
            },
            {"linalg::Eig", "a: dtype", std::string(gpumath::to_string(t))});
}

TEST(EigValidation, OptionsAreChecked) {
    const TensorLayout l(DataType::f32, {3, 4, 4});
    expect_throw_with<InvalidArgument>([&] { Eig e(l, {.vectors = EigVectors(7)}); },
                                       {"linalg::Eig", "options.vectors", "7", "none, complex, real_packed"});
    expect_throw_with<InvalidArgument>([&] { Eig e(l, {.backend = Backend(9)}); },
                                       {"linalg::Eig", "options.backend", "9", "automatic, looped, batched"});
    expect_throw_with<NotSupported>([&] { Eig e(l, {.backend = Backend::batched}); },
                                    {"linalg::Eig", "options.backend", "no batched Xgeev", "looped or automatic"});
    for (const DataType t : {DataType::c32, DataType::c64})
        expect_throw_with<InvalidArgument>(
            [&] {
                Eig e(TensorLayout(t, {4, 4}), {.vectors = EigVectors::real_packed});
            },
            {"linalg::Eig", "options.vectors", "real_packed", std::string(gpumath::to_string(t)), "complex"});
    EXPECT_EQ(to_string(EigVectors::real_packed), "real_packed");
    EXPECT_EQ(to_string(EigVectors(5)), "?");
}

TEST(EigValidation, LayoutsOfTheOutputs) {
    for (const DataType t : {DataType::f32, DataType::f64, DataType::c32, DataType::c64}) {
        const DataType ct = t == DataType::f32 || t == DataType::c32 ? DataType::c32 : DataType::c64;
        const Eig e(TensorLayout(t, {2, 3, 5, 5}));
        EXPECT_FALSE(e.planned());
        EXPECT_EQ(e.workspace_size(), 0U);
        EXPECT_EQ(e.values_layout().dtype(), ct);
        ASSERT_EQ(e.values_layout().rank(), 3);
        EXPECT_EQ(e.values_layout().shape(2), 5);
        EXPECT_EQ(e.vectors_layout().dtype(), ct);
        ASSERT_EQ(e.vectors_layout().rank(), 4);
        EXPECT_EQ(e.info_layout().dtype(), DataType::i32);
        EXPECT_EQ(e.info_layout().rank(), 2);
        EXPECT_EQ(e.options().vectors, EigVectors::complex);
        EXPECT_EQ(Eig(TensorLayout(t, {5, 5}), {.vectors = EigVectors::none}).vectors_layout().rank(), 0);
    }
    const Eig packed(TensorLayout(DataType::f64, {4, 4}), {.vectors = EigVectors::real_packed});
    EXPECT_EQ(packed.vectors_layout().dtype(), DataType::f64);
    EXPECT_EQ(packed.info_layout().rank(), 0);  // one matrix
}

TEST(EigValidation, ExecuteChecksEveryOperandFirst) {
    const TensorLayout l(DataType::f64, {2, 3, 3});
    Eig e(l);
    const char* api = "linalg::Eig::execute";
    const TensorView a(fake(), l);
    const TensorView w(fake(1 << 20), e.values_layout());
    const TensorView v(fake(2 << 20), e.vectors_layout());
    const TensorView info(fake(3 << 20), e.info_layout());
    expect_throw_with<InvalidArgument>(
        [&] {
            e.execute(TensorView(fake(), TensorLayout(DataType::f64, {2, 4, 4})), w, v, info);
        },
        {api, "a: shape (2, 4, 4)", "(2, 3, 3)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            e.execute(TensorView(fake(), TensorLayout(DataType::f32, {2, 3, 3})), w, v, info);
        },
        {api, "a: dtype f32", "f64"});
    expect_throw_with<InvalidArgument>(
        [&] {
            e.execute(a, TensorView(fake(1 << 20), TensorLayout(DataType::f64, {2, 3})), v, info);
        },
        {api, "values: dtype f64", "c64"});
    expect_throw_with<InvalidArgument>(
        [&] {
            e.execute(a, TensorView(fake(1 << 20), TensorLayout(DataType::c64, {2, 4})), v, info);
        },
        {api, "values: shape (2, 4)", "(2, 3)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            e.execute(a, w, TensorView(fake(2 << 20), TensorLayout(DataType::f64, {2, 3, 3})), info);
        },
        {api, "vectors: dtype f64", "c64"});
    expect_throw_with<InvalidArgument>(
        [&] { e.execute(a, w, v, TensorView(fake(3 << 20), TensorLayout(DataType::i32, {3}))); },
        {api, "info: shape (3,)", "(2,)"});
    expect_throw_with<InvalidArgument>(
        [&] { e.execute(a, w, v, TensorView(fake(3 << 20), TensorLayout(DataType::f32, {2}))); },
        {api, "info: dtype f32", "i32"});
    expect_throw_with<InvalidArgument>([&] { e.execute(TensorView(fake(4), l), w, v, info); },
                                       {api, "a: data", "not aligned", "8-byte"});
    expect_throw_with<InvalidArgument>([&] { e.execute(a, w, TensorView(fake(64), e.vectors_layout()), info); },
                                       {api, "vectors: its memory", "overlaps a's"});
    expect_throw_with<InvalidArgument>(
        [&] { e.execute(a, TensorView(fake((2 << 20) + 16), e.values_layout()), v, info); },
        {api, "values: its memory", "overlaps vectors'"});
    expect_throw_with<InvalidArgument>([&] { e.execute(a, TensorView(fake(32), e.values_layout()), v, info); },
                                       {api, "values: its memory", "overlaps a's"});
    expect_throw_with<InvalidArgument>([&] { e.execute(a, w, v, TensorView(fake((1 << 20) + 8), e.info_layout())); },
                                       {api, "info: its memory", "overlaps values'"});
    expect_throw_with<InvalidArgument>(
        [&] {
            e.execute(a, w, TensorView(fake(2 << 20), e.vectors_layout().dtype(), {2, 3, 3}, {0, 3, 1}), info);
        },
        {api, "vectors: strides", "share one address"});
    Eig values_only(l, {.vectors = EigVectors::none});
    expect_throw_with<InvalidArgument>([&] { values_only.execute(a, w, v, info); },
                                       {api, "vectors: given", "eigenvalues only", "TensorView{}"});
    Eig packed(l, {.vectors = EigVectors::real_packed});
    expect_throw_with<InvalidArgument>([&] { packed.execute(a, w, v, info); }, {api, "vectors: dtype c64", "f64"});
}

TEST(EigValidation, MovedFromAndStateless) {
    Eig e(TensorLayout(DataType::f32, {4, 4}));
    const Eig taken(std::move(e));
    EXPECT_EQ(taken.layout().shape(0), 4);
    expect_throw_with<InvalidArgument>([&] { e.plan(); }, {"linalg::Eig", "moved"});  // NOLINT(bugprone-use-after-move)
    expect_throw_with<InvalidArgument>([&] { e.execute(TensorView(), TensorView(), TensorView(), TensorView()); },
                                       {"linalg::Eig", "moved"});
    EXPECT_FALSE(e.planned());
    EXPECT_EQ(e.layout().rank(), 0);
    EXPECT_EQ(e.vectors_layout().rank(), 0);
    EXPECT_EQ(e.workspace_size(), 0U);
    expect_throw_with<InvalidArgument>(
        [] {
            (void)eig(TensorView(fake(), TensorLayout(DataType::f32, {4, 3})));
        },
        {"linalg::Eig", "4 x 3"});
    expect_throw_with<InvalidArgument>(
        [] {
            (void)eig(TensorView(fake(), TensorLayout(DataType::c32, {4, 4})), {.vectors = EigVectors::real_packed});
        },
        {"linalg::Eig", "real_packed"});
}

TEST(EigValidation, TheEigenvectorKernelCompilesAndIsFoundByItsName) {
    core::ProgramOptions options = gpumath::detail::eig_kernel_options();
    options.arch = GPUMATH_TEST_ARCH;
    core::Program program(std::string(gpumath::detail::eig_kernel_source()), options);
    const auto names = gpumath::detail::eig_kernel_names();
    ASSERT_EQ(names.size(), 2U);
    for (const std::string& name : names) program.add_name_expression(name);
    const core::ObjectCode code = program.compile(core::CodeType::cubin);
    for (const std::string& name : names) {
        SCOPED_TRACE(name);
        EXPECT_FALSE(code.lowered_name(name).empty());
    }
}

const TensorLayout systems(DataType::f64, {3, 8, 8});
const TensorLayout rhs(DataType::f64, {3, 8, 2});
const TensorLayout rhs1(DataType::f64, {3, 8});

TEST(RefinedSolveValidation, TheRightHandSidesMatchTheMatrices) {
    const char* api = "linalg::RefinedSolve";
    expect_throw_with<InvalidArgument>(
        [] {
            RefinedSolve s(TensorLayout(DataType::f64, {8, 7}), rhs1);
        },
        {api, "8 x 7", "square"});
    expect_throw_with<NotSupported>(
        [] {
            RefinedSolve s(TensorLayout(DataType::f16, {8, 8}), TensorLayout(DataType::f16, {8}));
        },
        {api, "a: dtype f16"});
    expect_throw_with<InvalidArgument>(
        [] {
            RefinedSolve s(systems, TensorLayout(DataType::f64, {3, 7}));
        },
        {api, "b: shape (3, 7)", "(..., n, k) or (..., n)", "n 8"});
    expect_throw_with<InvalidArgument>(
        [] {
            RefinedSolve s(systems, TensorLayout(DataType::f64, {2, 8, 2}));
        },
        {api, "b: shape (2, 8, 2)", "batch shape (3,)"});
    expect_throw_with<InvalidArgument>([] { RefinedSolve s(systems, TensorLayout(DataType::f64, {8})); },
                                       {api, "b: shape (8,)"});
    expect_throw_with<InvalidArgument>(
        [] {
            RefinedSolve s(systems, TensorLayout(DataType::f64, {3, 8, 2, 1}));
        },
        {api, "b: shape (3, 8, 2, 1)"});
    expect_throw_with<InvalidArgument>(
        [] {
            RefinedSolve s(systems, TensorLayout(DataType::f32, {3, 8}));
        },
        {api, "b: dtype f32", "f64"});
    const RefinedSolve ok(systems, rhs);
    EXPECT_FALSE(ok.planned());
    EXPECT_EQ(ok.workspace_size(), 0U);
    EXPECT_EQ(ok.rhs_layout().shape(2), 2);
    EXPECT_EQ(ok.info_layout().shape(0), 3);
    EXPECT_EQ(ok.options().lowest, LowestPrecision::f16);
    EXPECT_EQ(ok.options().refinement, Refinement::automatic);
    EXPECT_EQ(ok.options().max_iterations, 50);
    EXPECT_TRUE(ok.options().fallback);
    EXPECT_EQ(RefinedSolve(TensorLayout(DataType::c32, {5, 5}), TensorLayout(DataType::c32, {5})).info_layout().rank(),
              0);
}

TEST(RefinedSolveValidation, OptionsAreChecked) {
    const char* api = "linalg::RefinedSolve";
    expect_throw_with<InvalidArgument>([] { RefinedSolve s(systems, rhs1, {.lowest = LowestPrecision(9)}); },
                                       {api, "options.lowest", "9", "f16, bf16, tf32, f32, f64"});
    expect_throw_with<InvalidArgument>(
        [] { RefinedSolve s(systems, rhs1, {.refinement = Refinement(8)}); },
        {api, "options.refinement", "8", "automatic, classical, gmres, classical_gmres, gmres_gmres"});
    for (const int bad : {0, -3})
        expect_throw_with<InvalidArgument>([&] { RefinedSolve s(systems, rhs1, {.max_iterations = bad}); },
                                           {api, "options.max_iterations", std::to_string(bad), "at least 1"});
    for (const double bad : {-1e-9, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()})
        expect_throw_with<InvalidArgument>([&] { RefinedSolve s(systems, rhs1, {.tolerance = bad}); },
                                           {api, "options.tolerance", "finite value of 0 or more"});
    EXPECT_EQ(to_string(LowestPrecision::tf32), "tf32");
    EXPECT_EQ(to_string(Refinement::classical_gmres), "classical_gmres");
    EXPECT_EQ(to_string(Refinement(12)), "?");
}

TEST(RefinedSolveValidation, PrecisionsAndRefinementsCuSolverDoesNotTake) {
    const char* api = "linalg::RefinedSolve";
    for (const DataType t : {DataType::f32, DataType::c32})
        expect_throw_with<NotSupported>(
            [&] {
                RefinedSolve s(TensorLayout(t, {4, 4}), TensorLayout(t, {4}), {.lowest = LowestPrecision::f64});
            },
            {api, "options.lowest", "f64 is above", std::string(gpumath::to_string(t))});
    for (const DataType t : {DataType::f64, DataType::c64})  // a plain LU with refinement
        EXPECT_NO_THROW(RefinedSolve(TensorLayout(t, {4, 4}), TensorLayout(t, {4}), {.lowest = LowestPrecision::f64}));
    for (const LowestPrecision p :
         {LowestPrecision::f16, LowestPrecision::bf16, LowestPrecision::tf32, LowestPrecision::f32})
        for (const DataType t : {DataType::f32, DataType::f64, DataType::c32, DataType::c64})
            EXPECT_NO_THROW(RefinedSolve(TensorLayout(t, {4, 4}), TensorLayout(t, {4, 3}), {.lowest = p}));
    for (const Refinement r : {Refinement::gmres, Refinement::classical_gmres, Refinement::gmres_gmres}) {
        expect_throw_with<NotSupported>([&] { RefinedSolve s(systems, rhs, {.refinement = r}); },
                                        {api, "options.refinement", std::string(to_string(r)), "b has 2", "classical"});
        EXPECT_NO_THROW(RefinedSolve(systems, rhs1, {.refinement = r}));
    }
    EXPECT_NO_THROW(RefinedSolve(systems, rhs, {.refinement = Refinement::classical}));
    // cuSOLVER's IRS takes 32-bit sizes.
    expect_throw_with<NotSupported>(
        [] {
            RefinedSolve s(TensorLayout(DataType::f32, {4, 4}), TensorLayout(DataType::f32, {4, std::int64_t(1) << 31}),
                           {.refinement = Refinement::classical});
        },
        {api, "32-bit sizes", "2147483648"});
}

TEST(RefinedSolveValidation, ExecuteChecksEveryOperandFirst) {
    RefinedSolve s(systems, rhs);
    const char* api = "linalg::RefinedSolve::execute";
    const TensorView a(fake(), systems);
    const TensorView b(fake(1 << 20), rhs);
    const TensorView x(fake(2 << 20), rhs);
    const TensorView info(fake(3 << 20), s.info_layout());
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)s.execute(TensorView(fake(), TensorLayout(DataType::f64, {3, 8, 9})), b, x, info);
        },
        {api, "a: shape (3, 8, 9)", "(3, 8, 8)"});
    expect_throw_with<InvalidArgument>([&] { (void)s.execute(a, TensorView(fake(1 << 20), rhs1), x, info); },
                                       {api, "b: shape (3, 8)", "(3, 8, 2)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)s.execute(a, b, TensorView(fake(2 << 20), TensorLayout(DataType::f32, {3, 8, 2})), info);
        },
        {api, "x: dtype f32", "f64"});
    expect_throw_with<InvalidArgument>(
        [&] { (void)s.execute(a, b, x, TensorView(fake(3 << 20), TensorLayout(DataType::i32, {3}, {2}))); },
        {api, "info: strides (2,)", "contiguous"});
    expect_throw_with<InvalidArgument>([&] { (void)s.execute(a, b, b, info); }, {api, "x: its memory", "overlaps b's"});
    expect_throw_with<InvalidArgument>([&] { (void)s.execute(a, b, TensorView(fake(64), rhs), info); },
                                       {api, "x: its memory", "overlaps a's"});
    expect_throw_with<InvalidArgument>(
        [&] { (void)s.execute(a, b, x, TensorView(fake((2 << 20) + 8), s.info_layout())); },
        {api, "info: its memory", "overlaps x's"});
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)s.execute(a, b, TensorView(fake(2 << 20), DataType::f64, {3, 8, 2}, {16, 0, 1}), info);
        },
        {api, "x: strides", "share one address"});
    RefinedSolve taken(std::move(s));
    expect_throw_with<InvalidArgument>([&] { (void)s.execute(a, b, x, info); },  // NOLINT(bugprone-use-after-move)
                                       {"linalg::RefinedSolve", "moved"});
    expect_throw_with<InvalidArgument>([&] { s.plan(); }, {"linalg::RefinedSolve", "moved"});
    EXPECT_FALSE(s.planned());
    EXPECT_EQ(s.rhs_layout().rank(), 0);
    EXPECT_EQ(taken.rhs_layout().rank(), 3);
}

TEST(RefinedSolveValidation, TheStatelessCallChecksBeforeAnyCudaCall) {
    expect_throw_with<InvalidArgument>(
        [] {
            (void)refined_solve(TensorView(fake(), systems),
                                TensorView(fake(1 << 20), TensorLayout(DataType::f64, {3, 9})));
        },
        {"linalg::RefinedSolve", "b: shape (3, 9)"});
    expect_throw_with<NotSupported>(
        [] {
            (void)refined_solve(TensorView(fake(), TensorLayout(DataType::f32, {8, 8})),
                                TensorView(fake(1 << 20), TensorLayout(DataType::f32, {8})),
                                {.lowest = LowestPrecision::f64});
        },
        {"linalg::RefinedSolve", "options.lowest"});
}

}  // namespace
}  // namespace gpumath::linalg
