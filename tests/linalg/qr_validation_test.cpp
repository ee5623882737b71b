// SPDX-License-Identifier: Apache-2.0
// Every rule of the QR and LeastSquares plans and of qr and lstsq, checked before any CUDA call:
// these run without a GPU (the pointers are never dereferenced).
#include <gpumath/linalg.hpp>

#include <climits>
#include <cstdint>
#include <string>

#include "common/test_util.hpp"

namespace gpumath::linalg {
namespace {

using test::expect_throw_with;

// Addresses that are never dereferenced: every check runs before any CUDA call.
std::byte* fake(std::uintptr_t offset = 0) { return reinterpret_cast<std::byte*>(std::uintptr_t(1) << 40) + offset; }

constexpr std::int64_t above_int = std::int64_t(INT_MAX) + 1;

const TensorLayout tall(DataType::f64, {2, 3, 6, 4});  // batch (2, 3) of 6 × 4

TEST(QRValidation, PlansTakeMatricesOfTheFourSolverTypes) {
    expect_throw_with<InvalidArgument>([] { QR q(TensorLayout(DataType::f32, {4})); },
                                       {"linalg::QR", "a: rank 1", "(..., m, n)"});
    expect_throw_with<InvalidArgument>([] { LeastSquares l(TensorLayout(DataType::f32, {4})); },
                                       {"linalg::LeastSquares", "a: rank 1", "(..., m, n)"});
    for (const DataType t : {DataType::f16, DataType::bf16, DataType::i32, DataType::e4m3})
        expect_throw_with<NotSupported>(
            [&] {
                QR q(TensorLayout(t, {4, 3}));
            },
            {"linalg::QR", "a: dtype", std::string(to_string(t)), "f32, f64, c32 and c64"});
    expect_throw_with<NotSupported>(
        [] {
            LeastSquares l(TensorLayout(DataType::f16, {4, 3}));
        },
        {"linalg::LeastSquares", "a: dtype f16"});
    expect_throw_with<InvalidArgument>(
        [] {
            QR q(TensorLayout(DataType::f32, {4, 3}), {.mode = QRMode(7)});
        },
        {"linalg::QR", "options.mode", "7", "reduced, complete, r"});
    // The legacy routines' int sizes: least squares always runs ormqr.
    expect_throw_with<NotSupported>(
        [] {
            LeastSquares l(TensorLayout(DataType::f32, {above_int, 2}));
        },
        {"linalg::LeastSquares", "m (the rows of A) is 2147483648", "INT_MAX", "cusolverDn<t>ormqr"});
    expect_throw_with<NotSupported>(
        [] {
            LeastSquares l(TensorLayout(DataType::f32, {2, above_int}));
        },
        {"linalg::LeastSquares", "n (the columns of A)", "INT_MAX"});
    for (const DataType t : {DataType::f32, DataType::f64, DataType::c32, DataType::c64}) {
        const QR q(TensorLayout(t, {3, 7, 5}));
        EXPECT_FALSE(q.planned());
        EXPECT_EQ(q.workspace_size(), 0U);
        EXPECT_EQ(q.tau_layout().dtype(), t);
        ASSERT_EQ(q.tau_layout().rank(), 2);
        EXPECT_EQ(q.tau_layout().shape(1), 5);
        EXPECT_TRUE(q.tau_layout().is_contiguous());
        ASSERT_EQ(q.q_layout().rank(), 3);
        EXPECT_EQ(q.q_layout().shape(1), 7);
        EXPECT_EQ(q.q_layout().shape(2), 5);  // reduced: m × k
        const LeastSquares l(TensorLayout(t, {2, 3, 4, 6}));
        EXPECT_FALSE(l.planned());
        EXPECT_EQ(l.info_layout().dtype(), DataType::i32);
        ASSERT_EQ(l.info_layout().rank(), 2);
        EXPECT_EQ(l.info_layout().shape(1), 3);
    }
    const QR complete(TensorLayout(DataType::f32, {7, 5}), {.mode = QRMode::complete});
    EXPECT_EQ(complete.q_layout().shape(0), 7);
    EXPECT_EQ(complete.q_layout().shape(1), 7);
    const QR wide(TensorLayout(DataType::f32, {3, 8}));
    EXPECT_EQ(wide.tau_layout().shape(0), 3);
    EXPECT_EQ(wide.q_layout().shape(1), 3);
    // Sizes 0 are matrices too.
    const QR empty(TensorLayout(DataType::f32, {0, 4}));
    EXPECT_EQ(empty.tau_layout().shape(0), 0);
    EXPECT_EQ(to_string(QRMode::complete), "complete");
    EXPECT_EQ(to_string(QRMode::r), "r");
    EXPECT_EQ(to_string(Side::right), "right");
    EXPECT_EQ(to_string(Side(4)), "?");
    EXPECT_EQ(to_string(QRMode(9)), "?");
}

TEST(QRValidation, FactorizeChecksEveryOperandFirst) {
    QR q(tall);
    const char* api = "linalg::QR::factorize";
    const TensorView a(fake(), tall);
    const TensorView f(fake(1 << 20), tall);
    const TensorView tau(fake(2 << 20), q.tau_layout());
    expect_throw_with<InvalidArgument>(
        [&] {
            q.factorize(TensorView(fake(), TensorLayout(DataType::f64, {2, 3, 4, 6})), f, tau);
        },
        {api, "a: shape (2, 3, 4, 6)", "(2, 3, 6, 4)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            q.factorize(a, TensorView(fake(1 << 20), TensorLayout(DataType::c64, {2, 3, 6, 4})), tau);
        },
        {api, "qr: dtype c64", "f64"});
    expect_throw_with<InvalidArgument>(
        [&] {
            q.factorize(a, f, TensorView(fake(2 << 20), TensorLayout(DataType::f64, {2, 3, 6})));
        },
        {api, "tau: shape (2, 3, 6)", "(2, 3, 4)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            q.factorize(a, f, TensorView(fake(2 << 20), TensorLayout(DataType::f32, {2, 3, 4})));
        },
        {api, "tau: dtype f32", "f64"});
    expect_throw_with<InvalidArgument>(
        [&] {
            q.factorize(a, f, TensorView(fake(2 << 20), TensorLayout(DataType::f64, {2, 3, 4}, {1, 2, 6})));
        },
        {api, "tau: strides (1, 2, 6)", "contiguous"});
    expect_throw_with<InvalidArgument>([&] { q.factorize(TensorView(fake(4), tall), f, tau); },
                                       {api, "a: data", "not aligned", "8-byte"});
    expect_throw_with<InvalidArgument>([&] { q.factorize(a, TensorView(fake(64), tall), tau); },
                                       {api, "qr: its memory", "overlaps a's"});
    expect_throw_with<InvalidArgument>([&] { q.factorize(a, f, TensorView(fake(8), q.tau_layout())); },
                                       {api, "tau: its memory", "overlaps a's"});
    expect_throw_with<InvalidArgument>([&] { q.factorize(a, f, TensorView(fake((1 << 20) + 8), q.tau_layout())); },
                                       {api, "tau: its memory", "overlaps qr's"});
    expect_throw_with<InvalidArgument>(
        [&] {
            q.factorize(a, TensorView(fake(1 << 20), TensorLayout(DataType::f64, {2, 3, 6, 4}, {0, 24, 4, 1})), tau);
        },
        {api, "qr: strides", "share one address"});
    expect_throw_with<InvalidArgument>([&] { q.factorize(TensorView(nullptr, tall), f, tau); }, {"a: null"});
}

TEST(QRValidation, FormQChecksItsModeAndSizes) {
    const TensorLayout l(DataType::c32, {2, 6, 4});
    QR q(l);
    const char* api = "linalg::QR::form_q";
    const TensorView f(fake(), l);
    const TensorView tau(fake(1 << 20), q.tau_layout());
    expect_throw_with<InvalidArgument>(
        [&] {
            q.form_q(f, tau, TensorView(fake(2 << 20), TensorLayout(DataType::c32, {2, 6, 6})));
        },
        {api, "q: shape (2, 6, 6)", "(2, 6, 4)"});
    expect_throw_with<InvalidArgument>([&] { q.form_q(f, tau, TensorView(fake(16), q.q_layout())); },
                                       {api, "q: its memory", "overlaps qr's"});
    expect_throw_with<InvalidArgument>([&] { q.form_q(f, tau, TensorView(fake((1 << 20) + 8), q.q_layout())); },
                                       {api, "q: its memory", "overlaps tau's"});
    QR r_only(l, {.mode = QRMode::r});
    expect_throw_with<InvalidArgument>([&] { r_only.form_q(f, tau, TensorView(fake(2 << 20), q.q_layout())); },
                                       {api, "QRMode::r", "forms no Q"});
    // orgqr takes int sizes; the 64-bit factorization does not.
    const TensorLayout huge(DataType::f32, {above_int, 2});
    QR big(huge);
    const TensorView hq(fake(), huge);
    const TensorView ht(fake(std::uintptr_t(1) << 36), big.tau_layout());
    expect_throw_with<NotSupported>([&] { big.form_q(hq, ht, TensorView(fake(std::uintptr_t(1) << 37), huge)); },
                                    {api, "m (the rows of A and Q) is 2147483648", "INT_MAX", "cusolverDn<t>orgqr"});
    expect_throw_with<NotSupported>([&] { (void)qr(hq); }, {"linalg::qr", "INT_MAX"});
}

TEST(QRValidation, ApplyQChecksCAndOut) {
    const TensorLayout l(DataType::f32, {3, 6, 4});
    QR q(l);
    const char* api = "linalg::QR::apply_q";
    const TensorView f(fake(), l);
    const TensorView tau(fake(1 << 20), q.tau_layout());
    const TensorView c(fake(2 << 20), TensorLayout(DataType::f32, {3, 6, 2}));
    const TensorView out(fake(3 << 20), c);
    expect_throw_with<InvalidArgument>(
        [&] {
            q.apply_q(f, tau, TensorView(fake(2 << 20), TensorLayout(DataType::f32, {3, 4, 2})), out);
        },
        {api, "c: shape (3, 4, 2)", "(3, 6, 2)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            q.apply_q(f, tau, TensorView(fake(2 << 20), TensorLayout(DataType::f32, {2, 6, 2})), out);
        },
        {api, "c: shape (2, 6, 2)", "(3, 6, 2)"});
    expect_throw_with<InvalidArgument>([&] { q.apply_q(f, tau, c, out, {.side = Side::right}); },
                                       {api, "c: shape (3, 6, 2)", "(3, 6, 6)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            const TensorView v(fake(2 << 20), TensorLayout(DataType::f32, {3, 6}));
            q.apply_q(f, tau, v, TensorView(fake(3 << 20), v), {.side = Side::right});
        },
        {api, "c: shape (3, 6)", "(..., p, m)"});
    expect_throw_with<InvalidArgument>([&] { q.apply_q(f, tau, c, out, {.side = Side(5)}); },
                                       {api, "how.side", "5", "left, right"});
    expect_throw_with<InvalidArgument>(
        [&] {
            q.apply_q(f, tau, c, TensorView(fake(3 << 20), TensorLayout(DataType::f64, {3, 6, 2})));
        },
        {api, "out: dtype f64", "f32"});
    expect_throw_with<InvalidArgument>([&] { q.apply_q(f, tau, c, TensorView(fake(8), c)); },
                                       {api, "out: its memory", "overlaps qr's"});
    expect_throw_with<InvalidArgument>([&] { q.apply_q(f, tau, c, TensorView(fake((2 << 20) + 4), c)); },
                                       {api, "out: its memory", "overlaps c's"});
    expect_throw_with<InvalidArgument>([&] { q.apply_q(f, TensorView(fake(1 << 20), l), c, out); },
                                       {api, "tau: shape (3, 6, 4)", "(3, 4)"});
    // ormqr's int sizes: p past INT_MAX columns.
    const TensorLayout wide_c(DataType::f32, {3, 6, above_int});
    expect_throw_with<NotSupported>(
        [&] {
            q.apply_q(f, tau, TensorView(fake(std::uintptr_t(1) << 36), wide_c),
                      TensorView(fake(std::uintptr_t(1) << 38), wide_c));
        },
        {api, "p (the columns of c) is 2147483648", "INT_MAX", "cusolverDn<t>ormqr"});
}

TEST(QRValidation, LeastSquaresChecksItsOperands) {
    const TensorLayout l(DataType::c64, {2, 6, 4});
    LeastSquares plan(l);
    const char* api = "linalg::LeastSquares::execute";
    const TensorView a(fake(), l);
    const TensorView b(fake(1 << 20), TensorLayout(DataType::c64, {2, 6, 3}));
    const TensorView x(fake(2 << 20), TensorLayout(DataType::c64, {2, 4, 3}));
    const TensorView res(fake(3 << 20), TensorLayout(DataType::f64, {2, 3}));
    const TensorView info(fake(4 << 20), plan.info_layout());
    expect_throw_with<InvalidArgument>(
        [&] {
            plan.execute(a, TensorView(fake(1 << 20), TensorLayout(DataType::c64, {2, 4, 3})), x, res, info);
        },
        {api, "b: shape (2, 4, 3)", "(2, 6, 3)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            plan.execute(a, TensorView(fake(1 << 20), TensorLayout(DataType::c64, {3, 6, 3})), x, res, info);
        },
        {api, "b: shape (3, 6, 3)", "(2, 6, 3)"});
    expect_throw_with<InvalidArgument>(
        [&] { plan.execute(a, TensorView(fake(1 << 20), TensorLayout(DataType::c64, {6})), x, res, info); },
        {api, "b: shape (6,)", "(..., m, p) or (..., m)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            plan.execute(a, TensorView(fake(1 << 20), TensorLayout(DataType::c32, {2, 6, 3})), x, res, info);
        },
        {api, "b: dtype c32", "c64"});
    expect_throw_with<InvalidArgument>(
        [&] {
            plan.execute(a, b, TensorView(fake(2 << 20), TensorLayout(DataType::c64, {2, 6, 3})), res, info);
        },
        {api, "x: shape (2, 6, 3)", "(2, 4, 3)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            plan.execute(a, b, x, TensorView(fake(3 << 20), TensorLayout(DataType::c64, {2, 3})), info);
        },
        {api, "residuals: dtype c64", "f64"});
    expect_throw_with<InvalidArgument>(
        [&] {
            plan.execute(a, b, x, TensorView(fake(3 << 20), TensorLayout(DataType::f64, {2, 3}, {1, 2})), info);
        },
        {api, "residuals: strides (1, 2)", "contiguous"});
    expect_throw_with<InvalidArgument>(
        [&] { plan.execute(a, b, x, res, TensorView(fake(4 << 20), TensorLayout(DataType::i32, {3}))); },
        {api, "info: shape (3,)", "(2,)"});
    expect_throw_with<InvalidArgument>([&] { plan.execute(a, b, TensorView(fake((1 << 20) + 16), x), res, info); },
                                       {api, "x: its memory", "overlaps b's"});
    expect_throw_with<InvalidArgument>([&] { plan.execute(a, b, x, TensorView(fake((2 << 20) + 8), res), info); },
                                       {api, "residuals: its memory", "overlaps x's"});
    expect_throw_with<InvalidArgument>([&] { plan.execute(a, b, x, res, TensorView(fake(64), info)); },
                                       {api, "info: its memory", "overlaps a's"});
    expect_throw_with<InvalidArgument>([&] { plan.execute(a, TensorView(fake((1 << 20) + 8), b), x, res, info); },
                                       {api, "b: data", "not aligned", "16-byte"});
    // A vector b takes a vector x and residuals of the batch shape; residuals are optional.
    const TensorView bv(fake(1 << 20), TensorLayout(DataType::c64, {2, 6}));
    expect_throw_with<InvalidArgument>([&] { plan.execute(a, bv, x, TensorView(), info); },
                                       {api, "x: shape (2, 4, 3)", "(2, 4)"});
    expect_throw_with<InvalidArgument>(
        [&] {
            plan.execute(a, bv, TensorView(fake(2 << 20), TensorLayout(DataType::c64, {2, 4})), res, info);
        },
        {api, "residuals: shape (2, 3)", "(2,)"});
    // ormqr's int sizes: p past INT_MAX right-hand sides.
    const TensorLayout many(DataType::c64, {2, 6, above_int});
    expect_throw_with<NotSupported>(
        [&] { plan.execute(a, TensorView(fake(std::uintptr_t(1) << 36), many), x, res, info); },
        {api, "p (the columns of b) is 2147483648", "INT_MAX"});
}

TEST(QRValidation, MovedFromPlansSayWhatHappened) {
    QR q(TensorLayout(DataType::f32, {5, 3}));
    const QR taken(std::move(q));
    EXPECT_EQ(taken.layout().shape(0), 5);
    expect_throw_with<InvalidArgument>([&] { q.plan(); }, {"linalg::QR", "moved"});  // NOLINT(bugprone-use-after-move)
    expect_throw_with<InvalidArgument>([&] { q.factorize(TensorView(), TensorView(), TensorView()); },
                                       {"linalg::QR::factorize", "moved"});
    expect_throw_with<InvalidArgument>([&] { q.apply_q(TensorView(), TensorView(), TensorView(), TensorView()); },
                                       {"linalg::QR::apply_q", "moved"});
    EXPECT_FALSE(q.planned());
    EXPECT_EQ(q.layout().rank(), 0);
    EXPECT_EQ(q.tau_layout().rank(), 0);
    EXPECT_EQ(q.workspace_size(), 0U);
    LeastSquares l(TensorLayout(DataType::f32, {5, 3}));
    LeastSquares other = std::move(l);
    expect_throw_with<InvalidArgument>(  // NOLINT(bugprone-use-after-move)
        [&] { l.execute(TensorView(), TensorView(), TensorView(), TensorView(), TensorView()); },
        {"linalg::LeastSquares::execute", "moved"});
    EXPECT_EQ(l.info_layout().rank(), 0);
    EXPECT_EQ(other.layout().shape(1), 3);
}

TEST(QRValidation, StatelessCallsRejectBadInputWithoutADevice) {
    expect_throw_with<NotSupported>(
        [] {
            (void)qr(TensorView(fake(), TensorLayout(DataType::bf16, {4, 3})));
        },
        {"linalg::QR", "bf16"});
    expect_throw_with<InvalidArgument>(
        [] {
            (void)qr(TensorView(fake(), TensorLayout(DataType::f32, {4, 3})), {.mode = QRMode(3)});
        },
        {"linalg::QR", "options.mode"});
    const TensorView a(fake(), TensorLayout(DataType::f32, {4, 3}));
    expect_throw_with<InvalidArgument>(
        [&] {
            (void)lstsq(a, TensorView(fake(1 << 20), TensorLayout(DataType::f32, {3, 2})));
        },
        {"linalg::lstsq", "b: shape (3, 2)", "(4, 2)"});
    expect_throw_with<InvalidArgument>(
        [&] { (void)lstsq(a, TensorView(fake(1 << 20), TensorLayout(DataType::f64, {4}))); },
        {"linalg::lstsq", "b: dtype f64", "f32"});
    expect_throw_with<NotSupported>(
        [&] {
            (void)lstsq(a, TensorView(fake(1 << 20), TensorLayout(DataType::f32, {4, above_int})));
        },
        {"linalg::lstsq", "p (the columns of b)", "INT_MAX"});
    expect_throw_with<InvalidArgument>(
        [] { (void)lstsq(TensorView(fake(), TensorLayout(DataType::f32, {4})), TensorView()); },
        {"linalg::LeastSquares", "rank 1"});
}

}  // namespace
}  // namespace gpumath::linalg
