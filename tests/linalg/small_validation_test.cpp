// SPDX-License-Identifier: Apache-2.0
// Backend::warp (gpumath's small-matrix kernels) without a GPU: every kernel compiles with NVRTC
// for every element type, and the plans and stateless calls refuse what the kernels do not take
// before any CUDA call.
#include <gpumath/linalg.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <gpumath/core/program.hpp>

#include "common/test_util.hpp"
#include "linalg/small.hpp"

#ifndef GPUMATH_TEST_ARCH
#define GPUMATH_TEST_ARCH "sm_90"
#endif

namespace gpumath::linalg {
namespace {

using test::expect_throw_with;

std::byte* fake(std::uintptr_t offset = 0) { return reinterpret_cast<std::byte*>(std::uintptr_t(1) << 40) + offset; }

TEST(LinalgSmallKernels, EveryKernelCompilesAndIsFoundByItsName) {
    core::ProgramOptions options = detail::small_kernel_options();
    options.arch = GPUMATH_TEST_ARCH;
    core::Program program(std::string(detail::small_kernel_source()), options);
    const auto names = detail::small_kernel_names();
    ASSERT_EQ(names.size(), 12U);  // Cholesky, LU and eigh for f32, f64, c32 and c64
    for (const std::string& name : names) program.add_name_expression(name);
    const core::ObjectCode code = program.compile(core::CodeType::cubin);
    for (const std::string& name : names) {
        SCOPED_TRACE(name);
        EXPECT_FALSE(code.lowered_name(name).empty());
    }
}

TEST(LinalgSmallKernels, SupportedUpToOrder32OfTheFourSolverTypes) {
    using detail::SmallOp;
    for (const SmallOp op : {SmallOp::cholesky, SmallOp::lu, SmallOp::eigh})
        for (const DataType t : {DataType::f32, DataType::f64, DataType::c32, DataType::c64}) {
            EXPECT_TRUE(detail::small_kernel_supported(op, t, 0));
            EXPECT_TRUE(detail::small_kernel_supported(op, t, 1));
            EXPECT_TRUE(detail::small_kernel_supported(op, t, 32));
            EXPECT_FALSE(detail::small_kernel_supported(op, t, 33));
            EXPECT_FALSE(detail::small_kernel_supported(op, DataType::f16, 4));
        }
}

TEST(LinalgSmallValidation, TheWarpBackendIsAnEnumerator) {
    EXPECT_EQ(backend_count, 7);
    EXPECT_EQ(to_string(Backend::warp), "warp");
    expect_throw_with<InvalidArgument>(
        [] {
            LU lu(TensorLayout(DataType::f32, {4, 4}), {.backend = Backend(7)});
        },
        {"linalg::LU", "options.backend", "7", "automatic, looped, batched, jacobi, approximate, warp"});
}

TEST(LinalgSmallValidation, SVDAndEigRefuseTheWarpBackend) {
    const TensorLayout small(DataType::f32, {8, 4, 4});
    expect_throw_with<NotSupported>([&] { SVD s(small, {.backend = Backend::warp}); },
                                    {"linalg::SVD", "options.backend: warp", "Cholesky, LU and eigh only"});
    expect_throw_with<NotSupported>([&] { Eig e(small, {.backend = Backend::warp}); },
                                    {"linalg::Eig", "options.backend: warp", "Cholesky, LU and eigh only"});
}

TEST(LinalgSmallValidation, PlansRefuseTheWarpBackendAbove32) {
    const TensorLayout big(DataType::f64, {8, 33, 33});
    expect_throw_with<NotSupported>(
        [&] { Cholesky c(big, {.backend = Backend::warp}); },
        {"linalg::Cholesky", "options.backend: warp", "n <= 32", "this plan has n 33 of f64", "looped or automatic"});
    expect_throw_with<NotSupported>([&] { LU lu(big, {.backend = Backend::warp}); },
                                    {"linalg::LU", "options.backend: warp", "n <= 32", "this plan has n 33 of f64"});
    expect_throw_with<NotSupported>([&] { Eigh e(big, {.backend = Backend::warp}); },
                                    {"linalg::Eigh", "options.backend: warp", "n <= 32", "this plan has n 33 of f64"});
    // Other dtypes are refused by the plans' own rule first.
    expect_throw_with<NotSupported>(
        [] {
            Eigh e(TensorLayout(DataType::f16, {4, 4}), {.backend = Backend::warp});
        },
        {"linalg::Eigh", "a: dtype f16", "f32, f64, c32 and c64"});
    // The stateless calls validate through the same plans, before any CUDA call.
    const TensorView a(fake(), big);
    expect_throw_with<NotSupported>([&] { (void)cholesky(a, {.backend = Backend::warp}); },
                                    {"linalg::Cholesky", "warp", "n 33"});
    expect_throw_with<NotSupported>([&] { (void)eigh(a, {.backend = Backend::warp}); }, {"linalg::Eigh", "warp"});
    expect_throw_with<NotSupported>([&] { (void)det(a, {.backend = Backend::warp}); }, {"linalg::LU", "warp"});
    expect_throw_with<NotSupported>([&] { (void)inv(a, {.backend = Backend::warp}); }, {"linalg::LU", "warp"});
}

TEST(LinalgSmallValidation, PlansTakeTheWarpBackendUpTo32InEveryType) {
    for (const DataType t : {DataType::f32, DataType::f64, DataType::c32, DataType::c64})
        for (const std::int64_t n : {1, 3, 32}) {
            const TensorLayout l(t, {2, 5, n, n});
            const Cholesky c(l, {.triangle = Triangle::upper, .backend = Backend::warp});
            EXPECT_EQ(c.backend(), Backend::warp);
            EXPECT_FALSE(c.planned());
            const LU lu(l, {.backend = Backend::warp});
            EXPECT_EQ(lu.backend(), Backend::warp);
            const Eigh e(l, {.vectors = false, .backend = Backend::warp});
            EXPECT_EQ(e.backend(), Backend::warp);
        }
    EXPECT_EQ(LU(TensorLayout(DataType::f32, {4, 4})).backend(), Backend::automatic);
}

TEST(LinalgSmallValidation, ChoicesOfTheWarpBackendAndOfLULoad) {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("gpumath_linalg_small_choices_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string header = "# gpumath linalg backend choices 1\n";
    const std::string path = (dir / "in.txt").string();
    std::ofstream(path, std::ios::binary) << header << "Test_GPU\tlu\tf64\t3\t512\twarp\n"
                                          << "Test_GPU\teigh\tc32\t8\t100\twarp\n";
    EXPECT_EQ(load_backend_choices(path), 2U);
    const std::string out = (dir / "out.txt").string();
    save_backend_choices(out);
    std::ifstream in(out);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("Test_GPU\tlu\tf64\t3\t512\twarp\n"), std::string::npos) << text;
    EXPECT_NE(text.find("Test_GPU\teigh\tc32\t8\t100\twarp\n"), std::string::npos) << text;
    const std::string bad = (dir / "bad.txt").string();
    std::ofstream(bad, std::ios::binary) << header << "G\tlu\tf64\t3\t4\tautomatic\n";
    expect_throw_with<InvalidArgument>(
        [&] { (void)load_backend_choices(bad); },
        {"linalg::load_backend_choices", "line 2", "looped, batched, jacobi and approximate", "warp"});
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpumath::linalg
