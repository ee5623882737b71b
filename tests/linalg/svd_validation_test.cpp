// SPDX-License-Identifier: Apache-2.0
// Every rule of gpumath::linalg's SVD plans and call, checked before any CUDA call: these run
// without a GPU (the pointers are never dereferenced).
#include <gpumath/linalg.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "common/test_util.hpp"

namespace gpumath::linalg {
namespace {

using test::expect_throw_with;

// Addresses that are never dereferenced: every check runs before any CUDA call.
std::byte* fake(std::uintptr_t offset = 0) {
    return reinterpret_cast<std::byte*>(std::uintptr_t(1) << 40) + offset;  // NOLINT(performance-no-int-to-ptr)
}

constexpr std::uintptr_t mib = std::uintptr_t(1) << 20;

TEST(SvdValidation, PlansTakeMatricesOfTheFourSolverTypes) {
    expect_throw_with<InvalidArgument>([] { SVD s(TensorLayout(DataType::f32, {4})); },
                                       {"linalg::SVD", "a: rank 1", "(..., m, n)"});
    expect_throw_with<InvalidArgument>([] { TruncatedSVD s(TensorLayout(DataType::f64, {7}), 1); },
                                       {"linalg::TruncatedSVD", "a: rank 1", "(..., m, n)"});
    for (const DataType t : {DataType::f16, DataType::bf16, DataType::i32, DataType::e4m3, DataType::i8}) {
        expect_throw_with<NotSupported>(
            [&] {
                SVD s(TensorLayout(t, {4, 3}));
            },
            {"linalg::SVD", "a: dtype", std::string(to_string(t)), "f32, f64, c32 and c64"});
        expect_throw_with<NotSupported>(
            [&] {
                TruncatedSVD s(TensorLayout(t, {4, 3}), 1);
            },
            {"linalg::TruncatedSVD", "a: dtype", std::string(to_string(t))});
    }
    expect_throw_with<InvalidArgument>(
        [] {
            SVD s(TensorLayout(DataType::f32, {4, 4}), {.job = SVDJob(7)});
        },
        {"linalg::SVD", "options.job", "7", "values, thin, full"});
    expect_throw_with<InvalidArgument>(
        [] {
            SVD s(TensorLayout(DataType::f32, {4, 4}), {.backend = Backend(9)});
        },
        {"linalg::SVD", "options.backend", "9", "automatic, looped, batched, jacobi, approximate"});
}

TEST(SvdValidation, LayoutsFollowNumPy) {
    for (const DataType t : {DataType::f32, DataType::f64, DataType::c32, DataType::c64}) {
        const DataType real = t == DataType::f64 || t == DataType::c64 ? DataType::f64 : DataType::f32;
        for (const auto& [m, n] : {std::pair<std::int64_t, std::int64_t>{7, 3}, {3, 7}, {5, 5}}) {
            const std::int64_t k = std::min(m, n);
            const SVD thin(TensorLayout(t, {2, 3, m, n}));
            EXPECT_FALSE(thin.planned());
            EXPECT_EQ(thin.workspace_size(), 0U);
            EXPECT_EQ(thin.backend(), Backend::automatic);
            EXPECT_EQ(thin.values_layout().dtype(), real);
            EXPECT_EQ(gpumath::to_string(thin.values_layout().shape()),
                      gpumath::to_string(std::vector<std::int64_t>{2, 3, k}));
            EXPECT_EQ(gpumath::to_string(thin.u_layout().shape()),
                      gpumath::to_string(std::vector<std::int64_t>{2, 3, m, k}));
            EXPECT_EQ(gpumath::to_string(thin.vh_layout().shape()),
                      gpumath::to_string(std::vector<std::int64_t>{2, 3, k, n}));
            EXPECT_EQ(thin.u_layout().dtype(), t);
            EXPECT_EQ(thin.info_layout().dtype(), DataType::i32);
            EXPECT_EQ(gpumath::to_string(thin.info_layout().shape()),
                      gpumath::to_string(std::vector<std::int64_t>{2, 3}));
            const SVD full(TensorLayout(t, {m, n}), {.job = SVDJob::full});
            EXPECT_EQ(gpumath::to_string(full.u_layout().shape()), gpumath::to_string(std::vector<std::int64_t>{m, m}));
            EXPECT_EQ(gpumath::to_string(full.vh_layout().shape()),
                      gpumath::to_string(std::vector<std::int64_t>{n, n}));
            EXPECT_EQ(full.info_layout().rank(), 0);
        }
    }
    const SVD approx(TensorLayout(DataType::f32, {4, 40, 12}), {.backend = Backend::approximate, .rank = 5});
    EXPECT_EQ(approx.values_layout().shape(1), 5);
    EXPECT_EQ(approx.u_layout().shape(2), 5);
    EXPECT_EQ(approx.vh_layout().shape(1), 5);
    const TruncatedSVD t(TensorLayout(DataType::c64, {3, 20, 12}), 5);
    EXPECT_EQ(t.rank(), 5);
    EXPECT_EQ(t.oversampling(), 7);  // min(10, min(m, n) - k)
    EXPECT_EQ(t.values_layout().dtype(), DataType::f64);
    EXPECT_EQ(t.u_layout().shape(2), 5);
    EXPECT_EQ(t.vh_layout().shape(1), 5);
    EXPECT_EQ(TruncatedSVD(TensorLayout(DataType::f32, {100, 50}), 3).oversampling(), 10);
    EXPECT_EQ(TruncatedSVD(TensorLayout(DataType::f32, {100, 50}), 3, {.oversampling = 0}).oversampling(), 0);
}

TEST(SvdValidation, BackendsSayWhatTheyTake) {
    const TensorLayout l(DataType::f64, {8, 40, 12});
    expect_throw_with<NotSupported>(
        [&] { SVD s(l, {.backend = Backend::batched}); },
        {"linalg::SVD", "options.backend: batched", "gesvdjBatched", "at most 32", "40 x 12"});
    EXPECT_NO_THROW(SVD(TensorLayout(DataType::f64, {8, 32, 12}), {.backend = Backend::batched}));
    expect_throw_with<NotSupported>([&] { SVD s(l, {.job = SVDJob::full, .backend = Backend::approximate}); },
                                    {"linalg::SVD", "approximate", "thin vectors only"});
    expect_throw_with<InvalidArgument>([&] { SVD s(l, {.backend = Backend::looped, .rank = 2}); },
                                       {"linalg::SVD", "options.rank: 2", "Backend::approximate only"});
    expect_throw_with<InvalidArgument>([&] { SVD s(l, {.rank = 2}); },
                                       {"options.rank: 2", "Backend::approximate only", "automatic"});
    expect_throw_with<InvalidArgument>([&] { SVD s(l, {.backend = Backend::approximate, .rank = 13}); },
                                       {"linalg::SVD", "options.rank: 13", "min(m, n) = 12"});
    expect_throw_with<InvalidArgument>([&] { SVD s(l, {.backend = Backend::approximate, .rank = -1}); },
                                       {"options.rank: -1", "1 to min(m, n)"});
    // The other plans take none of SVD's backends.
    expect_throw_with<NotSupported>(
        [] {
            Cholesky c(TensorLayout(DataType::f32, {4, 4}), {.backend = Backend::jacobi});
        },
        {"linalg::Cholesky", "options.backend: jacobi", "linalg::SVD only"});
    expect_throw_with<NotSupported>(
        [] {
            Eigh e(TensorLayout(DataType::f32, {4, 4}), {.backend = Backend::approximate});
        },
        {"linalg::Eigh", "options.backend: approximate", "linalg::SVD only"});
    expect_throw_with<NotSupported>(
        [] {
            LU lu(TensorLayout(DataType::f32, {4, 4}), {.backend = Backend::jacobi});
        },
        {"linalg::LU", "jacobi"});
}

TEST(SvdValidation, SizesAboveIntRangeAreRefusedForTheIntRoutines) {
    const TensorLayout big(DataType::f32, {70000, 40000});  // 70000² does not fit in int
    for (const Backend b : {Backend::jacobi, Backend::approximate})
        expect_throw_with<NotSupported>([&] { SVD s(big, {.backend = b}); },
                                        {"linalg::SVD", std::string("options.backend: ") + std::string(to_string(b)),
                                         "int", "70000 x 40000", "use looped"});
    const TensorLayout many(DataType::f32, {std::int64_t(3) << 30, 2, 2});
    expect_throw_with<NotSupported>([&] { SVD s(many, {.backend = Backend::batched}); },
                                    {"linalg::SVD", "batched", "int", "3221225472 of them"});
    EXPECT_NO_THROW(SVD(big, {.backend = Backend::looped}));  // the 64-bit API
    EXPECT_NO_THROW(SVD{big});
}

TEST(SvdValidation, TruncatedRankOversamplingAndIterations) {
    const TensorLayout l(DataType::f32, {2, 30, 12});
    const char* api = "linalg::TruncatedSVD";
    expect_throw_with<InvalidArgument>([&] { TruncatedSVD t(l, 0); }, {api, "rank: 0", "1 to min(m, n) = 12"});
    expect_throw_with<InvalidArgument>([&] { TruncatedSVD t(l, 13); }, {api, "rank: 13", "30 x 12"});
    expect_throw_with<InvalidArgument>([&] { TruncatedSVD t(l, 4, {.oversampling = -2}); },
                                       {api, "options.oversampling: -2", "0 or more"});
    expect_throw_with<InvalidArgument>([&] { TruncatedSVD t(l, 4, {.oversampling = 9}); },
                                       {api, "options.oversampling: 9 with rank 4", "must not exceed", "12"});
    expect_throw_with<InvalidArgument>([&] { TruncatedSVD t(l, 4, {.power_iterations = -1}); },
                                       {api, "options.power_iterations: -1"});
    EXPECT_NO_THROW(TruncatedSVD(l, 4, {.oversampling = 8}));
    EXPECT_NO_THROW(TruncatedSVD(l, 12, {.oversampling = 0}));
}

TEST(SvdValidation, ExecuteChecksEveryOperandFirst) {
    const TensorLayout l(DataType::c32, {2, 6, 4});
    SVD plan(l);
    const char* api = "linalg::SVD::execute";
    const TensorView a(fake(), l);
    const TensorView u(fake(mib), plan.u_layout());
    const TensorView s(fake(2 * mib), plan.values_layout());
    const TensorView vh(fake(3 * mib), plan.vh_layout());
    const TensorView info(fake(4 * mib), plan.info_layout());
    expect_throw_with<InvalidArgument>(
        [&] {
            plan.execute(TensorView(fake(), TensorLayout(DataType::c32, {2, 4, 6})), u, s, vh, info);
        },
        {api, "a: shape (2, 4, 6)", "(2, 6, 4)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            plan.execute(a, u, TensorView(fake(2 * mib), TensorLayout(DataType::c32, {2, 4})), vh, info);
        },
        {api, "s: dtype c32", "f32"});
    expect_throw_with<InvalidArgument>(
        [&] {
            plan.execute(a, TensorView(fake(mib), TensorLayout(DataType::c32, {2, 6, 6})), s, vh, info);
        },
        {api, "u: shape (2, 6, 6)", "(2, 6, 4)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            plan.execute(a, u, s, TensorView(fake(3 * mib), TensorLayout(DataType::c64, {2, 4, 4})), info);
        },
        {api, "vh: dtype c64", "c32"});
    expect_throw_with<InvalidArgument>(
        [&] {
            plan.execute(a, u, s, vh, TensorView(fake(4 * mib), TensorLayout(DataType::i32, {2, 1})));
        },
        {api, "info: shape (2, 1)", "(2,)"});
    expect_throw_with<InvalidArgument>([&] { plan.execute(TensorView(fake(4), l), u, s, vh, info); },
                                       {api, "a: data", "not aligned", "8-byte"});
    expect_throw_with<InvalidArgument>(
        [&] { plan.execute(a, TensorView(fake(mib + 4), plan.u_layout()), s, vh, info); },
        {api, "u: data", "not aligned"});
    expect_throw_with<InvalidArgument>([&] { plan.execute(a, TensorView(fake(64), plan.u_layout()), s, vh, info); },
                                       {api, "u: its memory", "overlaps a's"});
    expect_throw_with<InvalidArgument>(
        [&] { plan.execute(a, u, TensorView(fake(mib + 8), plan.values_layout()), vh, info); },
        {api, "s: its memory", "overlaps u's"});
    expect_throw_with<InvalidArgument>(
        [&] { plan.execute(a, u, s, TensorView(fake(mib + 64), plan.vh_layout()), info); },
        {api, "u: its memory", "overlaps vh's"});
    expect_throw_with<InvalidArgument>(
        [&] { plan.execute(a, u, s, vh, TensorView(fake(3 * mib + 8), plan.info_layout())); },
        {api, "info: its memory", "overlaps vh's"});
    expect_throw_with<InvalidArgument>(
        [&] {
            plan.execute(a, TensorView(fake(mib), TensorLayout(DataType::c32, {2, 6, 4}, {0, 4, 1})), s, vh, info);
        },
        {api, "u: strides", "share one address"});
    expect_throw_with<InvalidArgument>([&] { plan.execute(TensorView(nullptr, l), u, s, vh, info); }, {"null"});
    SVD values(l, {.job = SVDJob::values});
    expect_throw_with<InvalidArgument>([&] { values.execute(a, u, s, TensorView(), info); },
                                       {api, "u: given", "singular values only", "TensorView{}"});
    expect_throw_with<InvalidArgument>([&] { values.execute(a, TensorView(), s, vh, info); }, {api, "vh: given"});
    TruncatedSVD t(TensorLayout(DataType::f64, {2, 30, 12}), 3, {.vectors = false});
    expect_throw_with<InvalidArgument>(
        [&] {
            t.execute(TensorView(fake(), t.layout()), TensorView(fake(mib), t.u_layout()),
                      TensorView(fake(2 * mib), t.values_layout()), TensorView(),
                      TensorView(fake(3 * mib), t.info_layout()));
        },
        {"linalg::TruncatedSVD::execute", "u: given"});
    expect_throw_with<InvalidArgument>(
        [&] {
            t.execute(TensorView(fake(), t.layout()), TensorView(),
                      TensorView(fake(2 * mib), TensorLayout(DataType::f64, {2, 4})), TensorView(),
                      TensorView(fake(3 * mib), t.info_layout()));
        },
        {"linalg::TruncatedSVD::execute", "s: shape (2, 4)", "(2, 3)"});
}

TEST(SvdValidation, MovedFromPlansSayWhatHappened) {
    SVD s(TensorLayout(DataType::f32, {4, 3}));
    const SVD taken(std::move(s));
    EXPECT_EQ(taken.layout().shape(0), 4);
    expect_throw_with<InvalidArgument>([&] { s.plan(); }, {"linalg::SVD", "moved"});  // NOLINT(bugprone-use-after-move)
    expect_throw_with<InvalidArgument>(
        [&] {
            s.execute(TensorView(), TensorView(), TensorView(), TensorView(), TensorView());
        },  // NOLINT(bugprone-use-after-move)
        {"linalg::SVD::execute", "moved"});
    EXPECT_FALSE(s.planned());
    EXPECT_EQ(s.layout().rank(), 0);
    EXPECT_EQ(s.workspace_size(), 0U);
    EXPECT_EQ(s.backend(), Backend::automatic);
    TruncatedSVD t(TensorLayout(DataType::f32, {8, 6}), 2);
    TruncatedSVD other = std::move(t);
    expect_throw_with<InvalidArgument>([&] { t.plan(); },
                                       {"linalg::TruncatedSVD", "moved"});  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(t.rank(), 0);
    EXPECT_EQ(other.rank(), 2);
}

TEST(SvdValidation, StatelessSvdRejectsBadInputWithoutADevice) {
    expect_throw_with<NotSupported>(
        [] {
            (void)svd(TensorView(fake(), TensorLayout(DataType::f16, {4, 4})));
        },
        {"linalg::SVD", "f16"});
    expect_throw_with<InvalidArgument>([] { (void)svd(TensorView(fake(), TensorLayout(DataType::f32, {4}))); },
                                       {"linalg::SVD", "rank 1"});
    expect_throw_with<NotSupported>(
        [] {
            (void)svd(TensorView(fake(), TensorLayout(DataType::f32, {64, 40, 40})), {.backend = Backend::batched});
        },
        {"linalg::SVD", "at most 32"});
}

TEST(SvdValidation, ChoicesOfSvdRoundTripThroughAFile) {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("gpumath_svd_choices_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string header = "# gpumath linalg backend choices 1\n";
    const std::string line = "Test_GPU\tsvd thin m=100\tf32\t16\t1000\tjacobi\n";
    const std::string in = (dir / "in.txt").string();
    std::ofstream(in, std::ios::binary) << header << line << "Test_GPU\tsvd full m=8\tc64\t8\t50\tbatched\n";
    EXPECT_EQ(load_backend_choices(in), 2U);
    const std::string out = (dir / "out.txt").string();
    save_backend_choices(out);
    std::ifstream saved(out);
    const std::string text((std::istreambuf_iterator<char>(saved)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find(line), std::string::npos) << text;
    std::ofstream(in, std::ios::binary) << header << "G\tsvd thin m=1\tf32\t1\t2\tautomatic\n";
    expect_throw_with<InvalidArgument>([&] { (void)load_backend_choices(in); },
                                       {"linalg::load_backend_choices", "line 2", "a backend other than"});
    std::filesystem::remove_all(dir);
    EXPECT_EQ(to_string(Backend::jacobi), "jacobi");
    EXPECT_EQ(to_string(Backend::approximate), "approximate");
    EXPECT_EQ(to_string(SVDJob::full), "full");
    EXPECT_EQ(to_string(SVDJob(5)), "?");
}

}  // namespace
}  // namespace gpumath::linalg
