// SPDX-License-Identifier: Apache-2.0
// Every host-side rule of sparse::DirectSolver, checked before any CUDA call (the pointers are never
// dereferenced, and the streams passed are the default stream so that no default argument touches
// CUDA), and the checked loading of cuDSS: a missing file and a file that is no shared library are
// typed errors, never a crash.
#include <gpumath/sparse.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "common/test_util.hpp"
#include "sparse/cudss_api.hpp"

namespace gpumath::sparse {
namespace {

using test::expect_throw_with;

std::byte* fake(std::uintptr_t offset = 0) { return reinterpret_cast<std::byte*>(std::uintptr_t(1) << 40) + offset; }

// A 4 × 4 CSR matrix with 7 entries, each array in its own range of fake addresses.
TensorView offsets(DataType t = DataType::i32, std::int64_t n = 5) { return {fake(0), t, {n}}; }
TensorView indices(DataType t = DataType::i32, std::int64_t n = 7) { return {fake(1 << 20), t, {n}}; }
TensorView values(DataType t = DataType::f64, std::int64_t n = 7) { return {fake(2 << 20), t, {n}}; }
MatrixView square(DataType t = DataType::f64) { return MatrixView::csr(4, 4, offsets(), indices(), values(t)); }

// Dense operands in their own ranges.
TensorView dense(std::uintptr_t at, std::initializer_list<std::int64_t> shape,
                 std::initializer_list<std::int64_t> strides = {}, DataType t = DataType::f64) {
    return {fake(at), t, shape, strides};
}
constexpr std::uintptr_t b_at = 4 << 20, x_at = 6 << 20;

const core::StreamRef no_stream{};

TEST(SparseDirectSolver, EnumNames) {
    EXPECT_EQ(to_string(MatrixType::spd), "spd");
    EXPECT_EQ(to_string(MatrixType::hpd), "hpd");
    EXPECT_EQ(to_string(MatrixType(9)), "unknown");
    EXPECT_EQ(to_string(MatrixPart::lower), "lower");
    EXPECT_EQ(to_string(MatrixPart(7)), "unknown");
}

TEST(SparseDirectSolver, ConstructorRefusesWhatTheHostCanSee) {
    const char* api = "sparse::DirectSolver";
    expect_throw_with<InvalidArgument>([] { DirectSolver s{MatrixView()}; }, {api, "a: an empty MatrixView"});
    expect_throw_with<InvalidArgument>([] { DirectSolver s{MatrixView::csc(4, 4, offsets(), indices(), values())}; },
                                       {api, "a: format csc", "sparse::to_csr"});
    expect_throw_with<InvalidArgument>(
        [] { DirectSolver s{MatrixView::coo(4, 4, TensorView(fake(0), DataType::i32, {7}), indices(), values())}; },
        {api, "a: format coo", "CSR"});
    expect_throw_with<InvalidArgument>([] { DirectSolver s{MatrixView::csr(4, 5, offsets(), indices(), values())}; },
                                       {api, "4 × 5 is not square"});
    expect_throw_with<NotSupported>([] { DirectSolver s{square(DataType::f16)}; },
                                    {api, "a: values of dtype f16", "f32, f64, c32 and c64"});
    expect_throw_with<NotSupported>(
        [] { DirectSolver s{MatrixView::csr(4, 4, offsets(DataType::i64), indices(DataType::i64), values())}; },
        {api, "a: indices of dtype i64", "i32"});
    expect_throw_with<NotSupported>(
        [] {
            DirectSolver s{
                MatrixView::csr(4, 4, offsets(), indices(), TensorView(fake(2 << 20), DataType::f64, {3, 7}))};
        },
        {api, "a batch of 3 value arrays"});
}

TEST(SparseDirectSolver, ConstructorRefusesBadOptions) {
    const char* api = "sparse::DirectSolver";
    expect_throw_with<InvalidArgument>([] { DirectSolver s(square(), {.type = MatrixType(5)}); },
                                       {api, "options.type: 5 is not a MatrixType", "general, symmetric"});
    expect_throw_with<InvalidArgument>(
        [] { DirectSolver s(square(), {.type = MatrixType::spd, .part = MatrixPart(3)}); },
        {api, "options.part: 3 is not a MatrixPart", "full, lower, upper"});
    expect_throw_with<InvalidArgument>([] { DirectSolver s(square(), {.part = MatrixPart::lower}); },
                                       {api, "options.part: lower for a general matrix"});
    expect_throw_with<InvalidArgument>([] { DirectSolver s(square(), {.refinement_steps = -1}); },
                                       {api, "options.refinement_steps: -1", "0 to 100"});
    expect_throw_with<InvalidArgument>([] { DirectSolver s(square(), {.refinement_steps = 101}); },
                                       {api, "options.refinement_steps: 101"});
}

TEST(SparseDirectSolver, WithoutTheHeaderConstructionSaysHowToGetCudss) {
    if (DirectSolver::supported()) GTEST_SKIP() << "this gpumath was built with cudss.h";
    expect_throw_with<NotSupported>([] { DirectSolver s{square()}; },
                                    {"sparse::DirectSolver", "cudss.h", "pip install nvidia-cudss-cu13"});
    expect_throw_with<NotSupported>([] { (void)DirectSolver::library_version(); }, {"cudss.h"});
}

class SparseDirectSolverBuilt : public ::testing::Test {
protected:
    void SetUp() override {
        if (!DirectSolver::supported())
            GTEST_SKIP() << "gpumath was built without cuDSS's header (scripts/deps.sh fetches it); no solver exists";
    }
};

TEST_F(SparseDirectSolverBuilt, ConstructsWithNoGpuWork) {
    const DirectSolver s(square(DataType::c64), {.type = MatrixType::hpd, .part = MatrixPart::upper});
    EXPECT_FALSE(s.analyzed());
    EXPECT_EQ(s.matrix().rows(), 4);
    EXPECT_EQ(s.options().type, MatrixType::hpd);
    EXPECT_EQ(s.options().part, MatrixPart::upper);
}

TEST_F(SparseDirectSolverBuilt, SolveRefusesBadOperandsBeforeAnyCudaCall) {
    DirectSolver s{square()};
    const char* api = "sparse::DirectSolver::solve";
    auto solve = [&](const TensorView& b, const TensorView& x) { s.solve(b, x, no_stream); };
    expect_throw_with<InvalidArgument>([&] { solve(dense(b_at, {4}, {}, DataType::f32), dense(x_at, {4})); },
                                       {api, "b: dtype f32", "holds f64"});
    expect_throw_with<InvalidArgument>([&] { solve(dense(b_at, {4}), dense(x_at, {4}, {}, DataType::c64)); },
                                       {api, "x: dtype c64"});
    expect_throw_with<InvalidArgument>([&] { solve(dense(b_at, {2, 4, 1}), dense(x_at, {4})); }, {api, "b: rank 3"});
    expect_throw_with<InvalidArgument>([&] { solve(dense(b_at, {5}), dense(x_at, {4})); }, {api, "b: 5 rows", "n = 4"});
    expect_throw_with<InvalidArgument>([&] { solve(dense(b_at, {4}, {2}), dense(x_at, {4})); },
                                       {api, "b: row stride 2", "column-major"});
    // (4, 3) row-major: unit stride along columns, not rows.
    expect_throw_with<InvalidArgument>(
        [&] {
            solve(dense(b_at, {4, 3}), dense(x_at, {4, 3}, {1, 4}));
        },
        {api, "b: row stride 3"});
    expect_throw_with<InvalidArgument>(
        [&] {
            solve(dense(b_at, {4, 3}, {1, 4}), dense(x_at, {4, 3}, {1, 2}));
        },
        {api, "x: column stride 2 below n = 4"});
    expect_throw_with<InvalidArgument>(
        [&] {
            solve(dense(b_at, {4, 3}, {1, 4}), dense(x_at, {4, 2}, {1, 4}));
        },
        {api, "x: shape", "one shape"});
    expect_throw_with<InvalidArgument>(
        [&] {
            solve(dense(b_at, {4, 1}, {1, 4}), dense(x_at, {4}));
        },
        {api, "x: shape"});
    expect_throw_with<InvalidArgument>([&] { solve(dense(b_at, {4}), dense(b_at + 8, {4})); },
                                       {api, "x: overlaps b", "own memory"});
    expect_throw_with<InvalidArgument>([&] { solve(dense(b_at, {4}), dense(b_at, {4})); }, {api, "x: overlaps b"});
    expect_throw_with<InvalidArgument>([&] { solve(dense(b_at, {4}), dense(2 << 20, {4})); },
                                       {api, "x: overlaps the matrix's values"});
    expect_throw_with<InvalidArgument>([&] { solve(dense(b_at, {4}), TensorView(fake(0), DataType::f64, {4})); },
                                       {api, "x: overlaps the matrix's row offsets"});
    // Good operands, but nothing factorized yet: refused on the host too.
    expect_throw_with<InvalidArgument>(
        [&] {
            solve(dense(b_at, {4, 3}, {1, 8}), dense(x_at, {4, 3}, {1, 4}));
        },
        {api, "not factorized", "factorize()"});
    expect_throw_with<InvalidArgument>([&] { solve(dense(b_at, {4}), dense(x_at, {4})); }, {api, "not factorized"});
}

TEST_F(SparseDirectSolverBuilt, RefactorizeRefusesOtherValues) {
    DirectSolver s{square()};
    const char* api = "sparse::DirectSolver::refactorize";
    expect_throw_with<InvalidArgument>([&] { s.refactorize(TensorView(fake(8 << 20), DataType::f32, {7}), no_stream); },
                                       {api, "values:", "f32"});
    expect_throw_with<InvalidArgument>([&] { s.refactorize(TensorView(fake(8 << 20), DataType::f64, {6}), no_stream); },
                                       {api, "values:"});
    expect_throw_with<InvalidArgument>(
        [&] {
            s.refactorize(TensorView(fake(8 << 20), DataType::f64, {2, 7}), no_stream);
        },
        {api, "values:"});
    // Same dtype and shape but on top of the column indices.
    expect_throw_with<InvalidArgument>([&] { s.refactorize(TensorView(fake(1 << 20), DataType::f64, {7}), no_stream); },
                                       {"overlap"});
}

TEST_F(SparseDirectSolverBuilt, MovedFromSolverRefusesEveryMethod) {
    DirectSolver s{square()};
    DirectSolver t = std::move(s);
    EXPECT_EQ(t.matrix().rows(), 4);
    EXPECT_FALSE(s.analyzed());  // NOLINT(bugprone-use-after-move,clang-analyzer-cplusplus.Move): what is tested
    EXPECT_TRUE(s.matrix().empty());
    EXPECT_EQ(s.options().type, MatrixType::general);
    expect_throw_with<InvalidArgument>([&] { s.analyze(no_stream); }, {"sparse::DirectSolver::analyze", "moved"});
    expect_throw_with<InvalidArgument>([&] { s.factorize(no_stream); }, {"sparse::DirectSolver::factorize", "moved"});
    expect_throw_with<InvalidArgument>([&] { s.refactorize(values(), no_stream); },
                                       {"sparse::DirectSolver::refactorize", "moved"});
    expect_throw_with<InvalidArgument>([&] { s.solve(dense(b_at, {4}), dense(x_at, {4}), no_stream); },
                                       {"sparse::DirectSolver::solve", "moved"});
    expect_throw_with<InvalidArgument>([&] { (void)s.info(no_stream); }, {"sparse::DirectSolver::info", "moved"});
    expect_throw_with<InvalidArgument>([&] { s.check(no_stream); }, {"sparse::DirectSolver::check", "moved"});
    DirectSolver u{square(DataType::f32)};
    t = std::move(u);
    EXPECT_EQ(t.matrix().value_type(), DataType::f32);
}

// The checked loader: every failure is a reason naming the file and how to install cuDSS.
TEST(SparseCudssLoader, DefaultLibraryIsTheHeadersSoname) {
    EXPECT_EQ(detail::default_cudss_library(), "libcudss.so.1");
}

TEST(SparseCudssLoader, MissingFileIsAReason) {
    const std::string error = detail::cudss_load_error("/nonexistent/folder/libcudss.so.1", true);
    EXPECT_NE(error.find("/nonexistent/folder/libcudss.so.1"), std::string::npos) << error;
    EXPECT_NE(error.find("GPUMATH_CUDSS_LIBRARY"), std::string::npos) << error;
    EXPECT_NE(error.find("pip install nvidia-cudss-cu13"), std::string::npos) << error;
    const std::string bare = detail::cudss_load_error("libcudss_not_installed_anywhere.so.1", false);
    EXPECT_NE(bare.find("could not be loaded"), std::string::npos) << bare;
    EXPECT_EQ(bare.find("(GPUMATH_CUDSS_LIBRARY)"), std::string::npos) << bare;
}

TEST(SparseCudssLoader, FilesThatAreNoLibraryAreRefusedWithoutLoading) {
    const std::string folder = ::testing::TempDir();
    const std::string text = folder + "gpumath_cudss_not_elf.so";
    {
        std::ofstream out(text);
        out << "this is not a shared library\n";
    }
    const std::string error = detail::cudss_load_error(text, true);
    EXPECT_NE(error.find(text), std::string::npos) << error;
    EXPECT_NE(error.find("could not be loaded"), std::string::npos) << error;
    std::remove(text.c_str());
    // A truncated ELF header: dlopen would fault mapping it; the checked loader refuses it.
    const std::string truncated = folder + "gpumath_cudss_truncated.so";
    {
        std::ofstream out(truncated, std::ios::binary);
        out.write(
            "\x7f"
            "ELF\x02\x01\x01",
            7);
    }
    EXPECT_NE(detail::cudss_load_error(truncated, true).find("could not be loaded"), std::string::npos);
    std::remove(truncated.c_str());
    // A FIFO: dlopen would block forever opening it.
    const std::string fifo = folder + "gpumath_cudss_fifo.so";
    std::remove(fifo.c_str());
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_NE(detail::cudss_load_error(fifo, true).find("could not be loaded"), std::string::npos);
    std::remove(fifo.c_str());
    // A real shared library without cuDSS's functions: the first missing one is named.
    const std::string libc_error = detail::cudss_load_error("libc.so.6", false);
    EXPECT_NE(libc_error.find("lacks the function cudssGetProperty"), std::string::npos) << libc_error;
}

TEST(SparseCudssLoader, LibraryVersionIsTypedWhenCudssIsMissing) {
    if (!DirectSolver::supported()) GTEST_SKIP() << "gpumath was built without cudss.h";
    try {
        const int version = DirectSolver::library_version();
        EXPECT_GE(version, 10000);  // cuDSS 1.x is installed on this machine
    } catch (const CudssError& e) {
        EXPECT_EQ(e.status(), 0);
        EXPECT_EQ(e.api(), "dlopen");
        EXPECT_NE(std::string(e.what()).find("pip install nvidia-cudss-cu13"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace gpumath::sparse
