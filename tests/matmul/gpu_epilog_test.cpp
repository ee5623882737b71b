// SPDX-License-Identifier: Apache-2.0
// Every epilog on a GPU against a double reference: bias broadcasting (per column, per row,
// batched, full through C), aux outputs (ReLU bit mask, GELU input) allocated or in caller views,
// the gradient epilogs reading them, and bias gradients. GELU is cuBLASLt's tanh approximation.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <gpumath/core.hpp>
#include <gpumath/matmul.hpp>

#include "common/test_util.hpp"
#include "reference.hpp"

using namespace gpumath;
using namespace gpumath::test::mm;

namespace {

std::string name(Epilog e, DataType t) { return std::string(to_string(e)) + " " + std::string(to_string(t)); }

/// Bit (m, n) of batch `b` of a ReLU mask: cuBLASLt's column-major bit matrix over D as cuBLASLt
/// sees it (D^T for a row-major D), bit i of a column in byte i / 8, least significant bit first.
bool mask_bit(const std::vector<unsigned char>& bytes, const TensorView& mask, bool d_row_major, std::int64_t b,
              std::int64_t m, std::int64_t n) {
    const std::int64_t row = d_row_major ? n : m, col = d_row_major ? m : n;
    const std::int64_t batch_stride = mask.rank() == 3 ? mask.stride(0) : 0;
    const std::int64_t off = b * batch_stride + col * mask.stride(-2) + row / 8;
    return ((bytes[std::size_t(off)] >> (row % 8)) & 1) != 0;
}

/// Checks a ReLU mask against the reference pre-activation; entries too close to 0 to have a
/// certain sign are skipped.
void expect_mask(const TensorView& mask, bool d_row_major, const Host& pre) {
    ASSERT_EQ(mask.dtype(), DataType::i8);
    const auto bytes = download_bytes(mask);
    const std::int64_t M = pre.shape[pre.shape.size() - 2], N = pre.shape.back();
    const std::int64_t batch = pre.size() / (M * N);
    double scale = 0;
    for (const cd& x : pre.v) scale = std::max(scale, std::abs(x));
    int wrong = 0, wrong_if_msb_first = 0;
    std::string first;
    for (std::int64_t b = 0; b < batch; ++b)
        for (std::int64_t m = 0; m < M; ++m)
            for (std::int64_t n = 0; n < N; ++n) {
                const double x = pre.v[std::size_t((b * M + m) * N + n)].real();
                if (std::abs(x) < 1e-3 * scale) continue;
                const bool want = x > 0;
                if (mask_bit(bytes, mask, d_row_major, b, m, n) != want) {
                    if (wrong++ == 0) first = fmt::format("({}, {}, {})", b, m, n);
                }
                const std::int64_t row = d_row_major ? n : m, col = d_row_major ? m : n;
                const std::int64_t off = b * (mask.rank() == 3 ? mask.stride(0) : 0) + col * mask.stride(-2) + row / 8;
                if ((((bytes[std::size_t(off)] >> (7 - row % 8)) & 1) != 0) != want) ++wrong_if_msb_first;
            }
    EXPECT_EQ(wrong, 0) << "ReLU mask bits differ from sign(pre-activation), first at " << first
                        << "; with most-significant-bit-first order " << wrong_if_msb_first << " would differ";
}

void expect_close(const Host& got, const Host& want, double tol, const std::string& what) {
    const double err = relative_error(got, want);
    EXPECT_LE(err, tol) << what << ": relative error " << err << worst_elements(got, want);
}

struct Operands {
    Host a, b, bias;
    Dev da, db, dbias;
};

Operands make_operands(DataType t, std::vector<std::int64_t> a_shape, std::vector<std::int64_t> b_shape,
                       std::vector<std::int64_t> bias_shape, std::mt19937_64& rng) {
    Operands o;
    o.a = random_host(t, std::move(a_shape), rng);
    o.b = random_host(t, std::move(b_shape), rng);
    o.da = upload(o.a);
    o.db = upload(o.b);
    if (!bias_shape.empty()) {
        o.bias = random_host(t, std::move(bias_shape), rng);
        o.dbias = upload(o.bias);
    }
    return o;
}

const Epilog forward_epilogs[] = {Epilog::none,          Epilog::relu,         Epilog::gelu,     Epilog::bias,
                                  Epilog::relu_bias,     Epilog::gelu_bias,    Epilog::relu_aux, Epilog::gelu_aux,
                                  Epilog::relu_aux_bias, Epilog::gelu_aux_bias};

}  // namespace

TEST(MatmulEpilogs, ForwardRowMajorWithColumnBias) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    for (DataType t : {DataType::f32, DataType::bf16, DataType::f16}) {
        const std::int64_t M = 48, N = 40, K = 32;
        const Operands o = make_operands(t, {M, K}, {K, N}, {N}, rng);
        for (Epilog e : forward_epilogs) {
            SCOPED_TRACE(name(e, t));
            const bool bias = epilog_takes_bias(e);
            const RefResult want = reference(o.a, o.b, t, {.bias = bias ? &o.bias : nullptr, .epilog = e});
            for (int path = 0; path < 2; ++path) {
                const Dev d = poisoned(t, {M, N});
                MatmulArgs args;
                if (bias) args.bias = o.dbias.view;
                MatmulOutputs out;
                if (path == 0) {
                    out = matmul(o.da.view, o.db.view, d.view, args, {.epilog = e});
                } else {
                    Matmul mm(o.da.view, o.db.view, {.epilog = e});
                    out = mm.execute(o.da.view, o.db.view, d.view, args);
                }
                expect_close(download(d.view), want.d, tolerance(t, t), path == 0 ? "matmul D" : "Matmul D");
                if (epilog_writes_aux(e)) {
                    ASSERT_TRUE(out.aux.has_data());
                    ASSERT_GT(out.aux.size(), 0) << "an aux output is allocated when none is passed";
                    if (epilog_aux_is_relu_mask(e)) expect_mask(out.aux_view, true, want.pre);
                    else expect_close(download(out.aux_view), want.pre, tolerance(t, t), "GELU aux (pre-activation)");
                } else {
                    EXPECT_FALSE(out.aux.has_data()) << "absent output";
                    EXPECT_EQ(out.aux.size(), 0);
                }
            }
        }
    }
}

TEST(MatmulEpilogs, AuxInCallerViews) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 36, N = 20, K = 24;  // N not a multiple of 8: the GELU aux needs a padded ld
    const Operands o = make_operands(DataType::f32, {2, M, K}, {K, N}, {N}, rng);
    {
        const RefResult want = reference(o.a, o.b, DataType::f32, {.bias = &o.bias, .epilog = Epilog::gelu_aux_bias});
        const Dev d = poisoned(DataType::f32, {2, M, N});
        const Dev aux = poisoned(DataType::f32, {2, M, N}, {M * 24, 24, 1});  // ld 24 >= N, multiple of 8
        const MatmulOutputs out = matmul(o.da.view, o.db.view, d.view, {.bias = o.dbias.view, .aux = aux.view},
                                         {.epilog = Epilog::gelu_aux_bias});
        EXPECT_FALSE(out.aux.has_data()) << "absent output";
        EXPECT_EQ(out.aux.size(), 0) << "nothing is allocated when the caller passes aux";
        expect_close(download(d.view), want.d, 1e-5, "D");
        expect_close(download(aux.view), want.pre, 1e-5, "GELU aux in the caller's view");
    }
    {
        const RefResult want = reference(o.a, o.b, DataType::f32, {.bias = &o.bias, .epilog = Epilog::relu_aux_bias});
        const Dev d = poisoned(DataType::f32, {2, M, N});
        // Bit mask of D^T (20 rows -> 3 bytes, padded to 32 per column), 36 columns, 2 batches.
        const Dev mask = poisoned(DataType::i8, {2, M, 32});
        matmul(o.da.view, o.db.view, d.view, {.bias = o.dbias.view, .aux = mask.view},
               {.epilog = Epilog::relu_aux_bias});
        expect_close(download(d.view), want.d, 1e-5, "D");
        expect_mask(mask.view, true, want.pre);
    }
}

TEST(MatmulEpilogs, PerRowBiasWithColumnMajorD) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 40, N = 24, K = 16;
    for (DataType t : {DataType::f32, DataType::bf16}) {
        const Operands o = make_operands(t, {M, K}, {K, N}, {M, 1}, rng);
        for (Epilog e : {Epilog::bias, Epilog::relu_aux_bias, Epilog::gelu_aux_bias}) {
            SCOPED_TRACE(name(e, t));
            const RefResult want = reference(o.a, o.b, t, {.bias = &o.bias, .epilog = e});
            const Dev d = poisoned(t, {M, N}, strides_for({M, N}, true));
            const MatmulOutputs out = matmul(o.da.view, o.db.view, d.view, {.bias = o.dbias.view}, {.epilog = e});
            expect_close(download(d.view), want.d, tolerance(t, t), "D");
            if (e == Epilog::relu_aux_bias) expect_mask(out.aux_view, false, want.pre);
            if (e == Epilog::gelu_aux_bias) expect_close(download(out.aux_view), want.pre, tolerance(t, t), "GELU aux");
        }
    }
}

TEST(MatmulEpilogs, BatchedAndSharedBias) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t B = 3, M = 24, N = 32, K = 16;
    for (std::vector<std::int64_t> bias_shape :
         {std::vector<std::int64_t>{B, 1, N}, std::vector<std::int64_t>{N}, std::vector<std::int64_t>{1, N}}) {
        const Operands o = make_operands(DataType::f32, {B, M, K}, {K, N}, bias_shape, rng);
        SCOPED_TRACE("bias shape " + std::to_string(bias_shape.size()) + "-D, first extent " +
                     std::to_string(bias_shape[0]));
        const RefResult want = reference(o.a, o.b, DataType::f32, {.bias = &o.bias, .epilog = Epilog::relu_bias});
        const Dev d = poisoned(DataType::f32, {B, M, N});
        matmul(o.da.view, o.db.view, d.view, {.bias = o.dbias.view}, {.epilog = Epilog::relu_bias});
        expect_close(download(d.view), want.d, 1e-5, "D");
    }
}

TEST(MatmulEpilogs, FullBiasGoesThroughC) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 24, N = 32, K = 16;
    for (std::vector<std::int64_t> bias_shape : {std::vector<std::int64_t>{M, N}, std::vector<std::int64_t>{2, M, N}}) {
        const Operands o = make_operands(DataType::f32, {2, M, K}, {K, N}, bias_shape, rng);
        for (Epilog e : {Epilog::bias, Epilog::relu_bias, Epilog::gelu_aux_bias}) {
            SCOPED_TRACE(name(e, DataType::f32) + (bias_shape.size() == 3 ? " batched" : " shared"));
            const RefResult want = reference(o.a, o.b, DataType::f32, {.alpha = 0.5, .bias = &o.bias, .epilog = e});
            const Dev d = poisoned(DataType::f32, {2, M, N});
            const MatmulOutputs out =
                matmul(o.da.view, o.db.view, d.view, {.alpha = 0.5, .bias = o.dbias.view}, {.epilog = e});
            expect_close(download(d.view), want.d, 1e-5, "D");
            if (e == Epilog::gelu_aux_bias) expect_close(download(out.aux_view), want.pre, 1e-5, "GELU aux");
        }
    }
}

TEST(MatmulEpilogs, GeluIsTheTanhApproximation) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    // Inputs large enough that tanh-GELU and erf-GELU differ by ~1e-3.
    const Host a = random_host(DataType::f32, {64, 8}, rng, -1.5, 1.5);
    const Host b = random_host(DataType::f32, {8, 64}, rng, -1.5, 1.5);
    const Dev da = upload(a), db = upload(b);
    const Dev d = poisoned(DataType::f32, {64, 64});
    matmul(da.view, db.view, d.view, {}, {.epilog = Epilog::gelu});
    const RefResult want = reference(a, b, DataType::f32, {.epilog = Epilog::gelu});
    Host erf_version = want.d;
    for (std::size_t i = 0; i < erf_version.v.size(); ++i) erf_version.v[i] = gelu_erf(want.pre.v[i].real());
    const Host got = download(d.view);
    EXPECT_LE(relative_error(got, want.d), 1e-5) << "tanh GELU; the erf GELU would give relative error "
                                                 << relative_error(got, erf_version) << worst_elements(got, want.d);
}

TEST(MatmulEpilogs, ReluGradientsFromTheForwardMask) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t B = 2, M = 40, N = 24, K1 = 16, K2 = 32;
    const Operands fwd = make_operands(DataType::f32, {B, M, K1}, {K1, N}, {N}, rng);
    const RefResult pre = reference(fwd.a, fwd.b, DataType::f32, {.bias = &fwd.bias, .epilog = Epilog::relu_aux_bias});
    const Dev y = poisoned(DataType::f32, {B, M, N});
    const MatmulOutputs forward =
        matmul(fwd.da.view, fwd.db.view, y.view, {.bias = fwd.dbias.view}, {.epilog = Epilog::relu_aux_bias});
    const Operands bwd = make_operands(DataType::f32, {B, M, K2}, {K2, N}, {}, rng);
    for (Epilog e : {Epilog::drelu, Epilog::drelu_bgrad}) {
        SCOPED_TRACE(name(e, DataType::f32));
        const RefResult want = reference(bwd.a, bwd.b, DataType::f32, {.epilog = e, .grad_pre = &pre.pre});
        const Dev d = poisoned(DataType::f32, {B, M, N});
        const MatmulOutputs out = matmul(bwd.da.view, bwd.db.view, d.view, {.aux = forward.aux_view}, {.epilog = e});
        expect_close(download(d.view), want.d, 1e-5, "D = x * relu'(forward pre-activation)");
        if (e == Epilog::drelu_bgrad) {
            ASSERT_TRUE(out.bias_grad.has_data());
            ASSERT_GT(out.bias_grad.size(), 0);
            EXPECT_EQ(out.bias_grad.layout(), TensorLayout(DataType::f32, {B, N}));
            expect_close(download(out.bias_grad.view()), want.bias_grad, 1e-5, "bias gradient (sum over rows of D)");
        }
    }
}

TEST(MatmulEpilogs, GeluGradientsFromTheForwardAux) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 48, N = 40, K1 = 16, K2 = 24;
    for (DataType t : {DataType::f32, DataType::bf16}) {
        SCOPED_TRACE(std::string(to_string(t)));
        const Operands fwd = make_operands(t, {M, K1}, {K1, N}, {N}, rng);
        const Dev y = poisoned(t, {M, N});
        const MatmulOutputs forward =
            matmul(fwd.da.view, fwd.db.view, y.view, {.bias = fwd.dbias.view}, {.epilog = Epilog::gelu_aux_bias});
        const Host aux = download(forward.aux_view);  // what the backward product reads
        const Operands bwd = make_operands(t, {M, K2}, {K2, N}, {}, rng);
        for (Epilog e : {Epilog::dgelu, Epilog::dgelu_bgrad}) {
            SCOPED_TRACE(name(e, t));
            const RefResult want = reference(bwd.a, bwd.b, t, {.epilog = e, .grad_pre = &aux});
            const Dev d = poisoned(t, {M, N});
            const Dev g = poisoned(t, {N});
            MatmulArgs args{.aux = forward.aux_view};
            if (e == Epilog::dgelu_bgrad) args.bias_grad = g.view;
            Matmul mm(bwd.da.view, bwd.db.view, {.epilog = e});
            const MatmulOutputs out = mm.execute(bwd.da.view, bwd.db.view, d.view, args);
            EXPECT_FALSE(out.bias_grad.has_data()) << "absent output";
            EXPECT_EQ(out.bias_grad.size(), 0);
            expect_close(download(d.view), want.d, tolerance(t, t), "D = x * gelu'(aux)");
            if (e == Epilog::dgelu_bgrad)
                expect_close(download(g.view), want.bias_grad, tolerance(t, t), "bias gradient in the caller's view");
        }
    }
}

TEST(MatmulEpilogs, ColumnMajorGradientsReduceOverColumns) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 40, N = 24, K = 16;
    const Operands fwd = make_operands(DataType::f32, {M, K}, {K, N}, {M, 1}, rng);
    const RefResult pre = reference(fwd.a, fwd.b, DataType::f32, {.bias = &fwd.bias, .epilog = Epilog::relu_aux_bias});
    const Dev y = poisoned(DataType::f32, {M, N}, strides_for({M, N}, true));
    const MatmulOutputs forward =
        matmul(fwd.da.view, fwd.db.view, y.view, {.bias = fwd.dbias.view}, {.epilog = Epilog::relu_aux_bias});
    const Operands bwd = make_operands(DataType::f32, {M, K}, {K, N}, {}, rng);
    const RefResult want =
        reference(bwd.a, bwd.b, DataType::f32,
                  {.epilog = Epilog::drelu_bgrad, .grad_pre = &pre.pre, .bias_grad_per_column = false});
    const Dev d = poisoned(DataType::f32, {M, N}, strides_for({M, N}, true));
    const MatmulOutputs out =
        matmul(bwd.da.view, bwd.db.view, d.view, {.aux = forward.aux_view}, {.epilog = Epilog::drelu_bgrad});
    expect_close(download(d.view), want.d, 1e-5, "D");
    EXPECT_EQ(out.bias_grad.layout(), TensorLayout(DataType::f32, {M}));
    expect_close(download(out.bias_grad.view()), want.bias_grad, 1e-5, "bias gradient (one value per row)");
}

TEST(MatmulEpilogs, BiasGradientsOfAAndB) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 40, N = 24, K = 32;
    // bgrada needs a column-major A and bgradb a row-major B (cuBLASLt's BGRADA runs with its A
    // not transposed, BGRADB with its B transposed); either D works. Those orientations are
    // checked against the reference; the others must throw NotSupported stating the rule before
    // any GPU work.
    for (Epilog e : {Epilog::bgrada, Epilog::bgradb}) {
        for (bool natural : {true, false}) {
            for (bool d_col : {false, true}) {
                for (std::vector<std::int64_t> batch : {std::vector<std::int64_t>{}, std::vector<std::int64_t>{3}}) {
                    std::vector<std::int64_t> as = batch, bs = batch, ds = batch;
                    as.insert(as.end(), {M, K});
                    bs.insert(bs.end(), {K, N});
                    ds.insert(ds.end(), {M, N});
                    const bool a_col = e == Epilog::bgrada ? natural : false;
                    const bool b_col = e == Epilog::bgradb ? !natural : false;
                    const std::string what = name(e, DataType::f32) + (a_col ? " a column-major" : " a row-major") +
                                             (b_col ? ", b column-major" : ", b row-major") +
                                             (d_col ? ", d column-major" : ", d row-major") +
                                             (batch.empty() ? "" : ", batch 3");
                    SCOPED_TRACE(what);
                    const Host a = random_host(DataType::f32, as, rng), b = random_host(DataType::f32, bs, rng);
                    const Dev da = upload(a, strides_for(as, a_col)), db = upload(b, strides_for(bs, b_col));
                    const RefResult want = reference(a, b, DataType::f32, {.epilog = e});
                    const Dev d = poisoned(DataType::f32, ds, strides_for(ds, d_col));
                    if (!natural) {
                        const std::vector<std::string> rule =
                            e == Epilog::bgrada
                                ? std::vector<std::string>{"a: strides", "bgrada needs a column-major a"}
                                : std::vector<std::string>{"b: strides", "bgradb needs a row-major b"};
                        try {
                            (void)matmul(da.view, db.view, d.view, {}, {.epilog = e});
                            ADD_FAILURE() << "expected NotSupported stating the operand rule";
                        } catch (const NotSupported& ex) {
                            for (const std::string& r : rule)
                                EXPECT_NE(std::string(ex.what()).find(r), std::string::npos)
                                    << "message lacks \"" << r << "\": " << ex.what();
                            EXPECT_EQ(std::string(ex.what()).find("cublasLt"), std::string::npos)
                                << "the rule is enforced before calling cuBLASLt: " << ex.what();
                        }
                        continue;
                    }
                    const MatmulOutputs out = matmul(da.view, db.view, d.view, {}, {.epilog = e});
                    expect_close(download(d.view), want.d, 1e-5, "D");
                    ASSERT_TRUE(out.bias_grad.has_data());
                    ASSERT_GT(out.bias_grad.size(), 0);
                    expect_close(download(out.bias_grad.view()), want.bias_grad, 1e-5,
                                 e == Epilog::bgrada ? "sum over K of A" : "sum over K of B");
                }
            }
        }
    }
}

TEST(MatmulEpilogs, Fp8WithBiasAndGelu) {
    GPUMATH_REQUIRE_GPU();
    if (!device_at_least(8, 9)) GTEST_SKIP() << "FP8 needs compute capability >= 8.9";
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 64, N = 48, K = 64;
    const Host a = random_host(DataType::e4m3, {M, K}, rng), b = random_host(DataType::e4m3, {K, N}, rng);
    const Host bias = random_host(DataType::bf16, {N}, rng);
    const Dev da = upload(a), db = upload(b, strides_for(b.shape, true)), dbias = upload(bias);
    for (Epilog e : {Epilog::bias, Epilog::gelu_bias, Epilog::relu}) {
        SCOPED_TRACE(name(e, DataType::e4m3));
        const bool with_bias = epilog_takes_bias(e);
        const RefResult want = reference(a, b, DataType::bf16, {.bias = with_bias ? &bias : nullptr, .epilog = e});
        const Dev d = poisoned(DataType::bf16, {M, N});
        MatmulArgs args;
        if (with_bias) args.bias = dbias.view;
        matmul(da.view, db.view, d.view, args, {.epilog = e});
        expect_close(download(d.view), want.d, 5e-2, "D");
    }
}
