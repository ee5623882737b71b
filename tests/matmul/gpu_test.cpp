// SPDX-License-Identifier: Apache-2.0
// Matmul on a GPU against a double-precision reference: every dtype, row/column/mixed/transposed
// and padded layouts, batches with broadcasting, alpha/beta/C (C aliasing D), misaligned
// pointers, allocating calls. Outputs are poisoned (0xFF bytes) before every run.
#include <gtest/gtest.h>

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

struct Layouts {
    bool a_col = false, b_col = false, d_col = false;
    std::int64_t pad = 0;                         // extra elements per leading dimension
    std::size_t a_off = 0, b_off = 0, d_off = 0;  // bytes past a 256-byte boundary
};

struct Shape {
    std::int64_t m, n, k;
    std::vector<std::int64_t> a_batch{}, b_batch{};
};

std::vector<std::int64_t> with_batch(std::vector<std::int64_t> batch, std::int64_t r, std::int64_t c) {
    batch.push_back(r);
    batch.push_back(c);
    return batch;
}

std::vector<std::int64_t> broadcast_batch(const std::vector<std::int64_t>& x, const std::vector<std::int64_t>& y) {
    const std::size_t r = std::max(x.size(), y.size());
    std::vector<std::int64_t> out(r, 1);
    for (std::size_t i = 0; i < r; ++i) {
        const std::int64_t ex = i + x.size() >= r ? x[i + x.size() - r] : 1;
        const std::int64_t ey = i + y.size() >= r ? y[i + y.size() - r] : 1;
        out[i] = std::max(ex, ey);
    }
    return out;
}

std::string describe(DataType a, DataType b, DataType d, const Shape& s, const Layouts& l, const MatmulOptions& o) {
    return std::string(to_string(a)) + " x " + std::string(to_string(b)) + " -> " + std::string(to_string(d)) +
           " M=" + std::to_string(s.m) + " N=" + std::to_string(s.n) + " K=" + std::to_string(s.k) + " a " +
           (l.a_col ? "col" : "row") + " b " + (l.b_col ? "col" : "row") + " d " + (l.d_col ? "col" : "row") + " pad " +
           std::to_string(l.pad) + " offsets " + std::to_string(l.a_off) + "/" + std::to_string(l.b_off) + "/" +
           std::to_string(l.d_off) + " compute " + std::string(to_string(o.compute_type));
}

/// Runs the product through matmul() and through a Matmul built from the layouts, each into a
/// poisoned D, and compares both with the reference.
void expect_product(DataType at, DataType bt, DataType dt, const Shape& s, const Layouts& l = {},
                    const MatmulOptions& options = {}, Scalar alpha = 1.0) {
    SCOPED_TRACE(describe(at, bt, dt, s, l, options));
    auto rng = gpumath::test::rng_for_test();
    const double hi = is_fp8(at) ? 2.0 : 1.0;
    const Host a = random_host(at, with_batch(s.a_batch, s.m, s.k), rng, -hi, hi);
    const Host b = random_host(bt, with_batch(s.b_batch, s.k, s.n), rng, -hi, hi);
    const auto dshape = with_batch(broadcast_batch(s.a_batch, s.b_batch), s.m, s.n);
    const Dev da = upload(a, strides_for(a.shape, l.a_col, l.pad), l.a_off);
    const Dev db = upload(b, strides_for(b.shape, l.b_col, l.pad), l.b_off);
    const RefResult want = reference(a, b, dt, {.alpha = cd(alpha.real, alpha.imag)});
    const double tol = tolerance(at, dt, options.compute_type);

    for (int path = 0; path < 2; ++path) {
        SCOPED_TRACE(path == 0 ? "gpumath::matmul" : "gpumath::Matmul");
        const Dev d = poisoned(dt, dshape, strides_for(dshape, l.d_col, l.pad), l.d_off);
        if (path == 0) {
            matmul(da.view, db.view, d.view, {.alpha = alpha}, options);
        } else {
            Matmul mm(da.view, db.view, options);
            mm.execute(da.view, db.view, d.view, {.alpha = alpha});
        }
        const Host got = download(d.view);
        const double err = relative_error(got, want.d);
        if (tol == 0.0) {
            EXPECT_EQ(err, 0.0) << worst_elements(got, want.d);
        } else {
            EXPECT_LE(err, tol) << "relative error " << err << worst_elements(got, want.d);
        }
    }
}

#define REQUIRE_CC(major, minor)                                                         \
    do {                                                                                 \
        if (!device_at_least(major, minor))                                              \
            GTEST_SKIP() << "needs compute capability >= " << (major) << "." << (minor); \
    } while (0)

}  // namespace

// ---- every dtype --------------------------------------------------------------------------------

TEST(MatmulGpu, HalfPrecision) {
    GPUMATH_REQUIRE_GPU();
    const Shape s{40, 24, 32};
    expect_product(DataType::f16, DataType::f16, DataType::f16, s);
    expect_product(DataType::f16, DataType::f16, DataType::f32, s, {}, {.result_type = DataType::f32});
    expect_product(DataType::f16, DataType::f16, DataType::f16, s, {}, {.compute_type = ComputeType::f16});
    expect_product(DataType::bf16, DataType::bf16, DataType::bf16, s);
    expect_product(DataType::bf16, DataType::bf16, DataType::f32, s, {}, {.result_type = DataType::f32});
}

TEST(MatmulGpu, SinglePrecisionAndFastComputeTypes) {
    GPUMATH_REQUIRE_GPU();
    const Shape s{37, 29, 23};
    expect_product(DataType::f32, DataType::f32, DataType::f32, s);
    for (ComputeType c : {ComputeType::f32_fast_tf32, ComputeType::f32_fast_f16, ComputeType::f32_fast_bf16})
        expect_product(DataType::f32, DataType::f32, DataType::f32, {64, 48, 32}, {}, {.compute_type = c});
}

TEST(MatmulGpu, DoubleAndComplex) {
    GPUMATH_REQUIRE_GPU();
    const Shape s{37, 29, 23};
    expect_product(DataType::f64, DataType::f64, DataType::f64, s);
    expect_product(DataType::c32, DataType::c32, DataType::c32, s, {}, {}, std::complex<double>(0.5, -1.5));
    expect_product(DataType::c64, DataType::c64, DataType::c64, s, {}, {}, std::complex<double>(-0.25, 2.0));
    expect_product(DataType::c32, DataType::c32, DataType::c32, {32, 32, 32}, {},
                   {.compute_type = ComputeType::f32_fast_tf32});
}

TEST(MatmulGpu, Int8ToInt32IsExact) {
    GPUMATH_REQUIRE_GPU();
    // A row-major and B column-major (K contiguous), the layout integer tensor cores take.
    expect_product(DataType::i8, DataType::i8, DataType::i32, {64, 48, 80}, {.b_col = true});
    expect_product(DataType::i8, DataType::i8, DataType::i32, {64, 48, 80}, {.b_col = true}, {}, 3);
}

TEST(MatmulGpu, Fp8) {
    GPUMATH_REQUIRE_GPU();
    REQUIRE_CC(8, 9);
    const Shape s{64, 48, 96};
    const Layouts tn{.b_col = true};
    expect_product(DataType::e4m3, DataType::e4m3, DataType::bf16, s, tn);
    expect_product(DataType::e4m3, DataType::e4m3, DataType::f16, s, tn, {.result_type = DataType::f16});
    expect_product(DataType::e4m3, DataType::e4m3, DataType::f32, s, tn, {.result_type = DataType::f32});
    expect_product(DataType::e5m2, DataType::e4m3, DataType::bf16, s, tn);
    expect_product(DataType::e4m3, DataType::e5m2, DataType::bf16, s, tn, {.fast_accumulation = true});
    // Column-major D: no operand swap, still TN for cuBLASLt.
    expect_product(DataType::e4m3, DataType::e4m3, DataType::bf16, s, {.b_col = true, .d_col = true});
    // Any M with a row-major D (cuBLASLt's columns), any N with a column-major one: 1, 37 and 100
    // tokens, as a mixture-of-experts group or a decoding step has.
    for (std::int64_t m : {1, 37, 100}) expect_product(DataType::e4m3, DataType::e4m3, DataType::bf16, {m, 48, 96}, tn);
    expect_product(DataType::e4m3, DataType::e4m3, DataType::e4m3, {37, 48, 96}, tn, {.result_type = DataType::e4m3});
    // A column-major D of N = 37 through matmul() (a Matmul built from a and b alone plans for a
    // row-major D, where N = 37 breaks the rule).
    auto rng = gpumath::test::rng_for_test();
    const Host a = random_host(DataType::e4m3, {64, 96}, rng, -2, 2),
               b = random_host(DataType::e4m3, {96, 37}, rng, -2, 2);
    const Dev da = upload(a), db = upload(b, strides_for(b.shape, true));
    const Dev d = poisoned(DataType::bf16, {64, 37}, strides_for({64, 37}, true));
    matmul(da.view, db.view, d.view);
    const Host got = download(d.view);
    const RefResult want = reference(a, b, DataType::bf16, {});
    EXPECT_LE(relative_error(got, want.d), tolerance(DataType::e4m3, DataType::bf16)) << worst_elements(got, want.d);
}

TEST(MatmulGpu, Fp8ScalesAmaxAndFp8Result) {
    GPUMATH_REQUIRE_GPU();
    REQUIRE_CC(8, 9);
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 32, N = 64, K = 48;
    const Host a = random_host(DataType::e4m3, {M, K}, rng, -2, 2);
    const Host b = random_host(DataType::e4m3, {K, N}, rng, -2, 2);
    const Dev da = upload(a), db = upload(b, strides_for(b.shape, true));
    // Each scale in its own 16-byte slot: a, b, d, amax (output); slot 4 holds b's scale again
    // at a 4-byte offset, for the misaligned case below.
    const std::vector<float> scales_host = {0.5f, 0, 0, 0, 4.0f, 0, 0, 0, 0.25f, 0, 0, 0, 0.0f, 0, 0, 0, 0, 4.0f, 0, 0};
    core::Buffer scales = core::Buffer::from_host(std::span<const float>(scales_host));
    const float* sa = scales.data_as<float>();
    const float* sb = sa + 4;
    const float* sd = sa + 8;
    float* amax = scales.data_as<float>() + 12;
    const float* sb_4byte = sa + 17;

    // bf16 result with a and b scales.
    {
        const Dev d = poisoned(DataType::bf16, {M, N});
        matmul(da.view, db.view, d.view, {.scales = {.a = sa, .b = sb}});
        const RefResult want = reference(a, b, DataType::bf16, {.scale_ab = 2.0});
        const Host got = download(d.view);
        EXPECT_LE(relative_error(got, want.d), 5e-2) << "scales a*b = 2.0" << worst_elements(got, want.d);
    }
    // e4m3 result with a d scale and amax.
    {
        const Dev d = poisoned(DataType::e4m3, {M, N});
        matmul(da.view, db.view, d.view, {.scales = {.a = sa, .b = sb, .d = sd, .amax_d = amax}});
        const RefResult want = reference(a, b, DataType::e4m3, {.scale_ab = 2.0, .scale_d = 0.25});
        const Host got = download(d.view);
        EXPECT_LE(relative_error(got, want.d), 8e-2) << worst_elements(got, want.d);
        const auto host = scales.to_host<float>();
        EXPECT_NEAR(host[12], want.amax, 0.02 * want.amax)
            << "amax of D before the d scale is " << want.amax << ", after it " << want.amax * 0.25;
    }
    // A scale pointer only 4-byte aligned: cublasLtMatmul refuses it for every algorithm its
    // heuristic offers, so gpumath says NotSupported, naming the 16-byte rule, before any GPU work.
    gpumath::test::expect_throw_with<NotSupported>(
        [&] {
            const Dev d = poisoned(DataType::bf16, {M, N});
            matmul(da.view, db.view, d.view, {.scales = {.a = sa, .b = sb_4byte}});
        },
        {"scales:", "4-byte aligned", "16-byte aligned"});
    // The C scale applies to FP8 C only, which gpumath's FP8 products never have.
    gpumath::test::expect_throw_with<InvalidArgument>(
        [&] {
            const Dev d = poisoned(DataType::bf16, {M, N});
            matmul(da.view, db.view, d.view, {.scales = {.a = sa, .c = sd}});
        },
        {"scales.c"});
}

// ---- layouts --------------------------------------------------------------------------------------

TEST(MatmulGpu, RowColumnAndMixedLayouts) {
    GPUMATH_REQUIRE_GPU();
    for (int mask = 0; mask < 8; ++mask) {
        const Layouts l{.a_col = (mask & 1) != 0, .b_col = (mask & 2) != 0, .d_col = (mask & 4) != 0};
        expect_product(DataType::f32, DataType::f32, DataType::f32, {33, 19, 27}, l);
        expect_product(DataType::bf16, DataType::bf16, DataType::bf16, {48, 40, 24}, l);
    }
}

TEST(MatmulGpu, PaddedLeadingDimensions) {
    GPUMATH_REQUIRE_GPU();
    expect_product(DataType::f32, DataType::f32, DataType::f32, {33, 19, 27}, {.pad = 5});
    expect_product(DataType::f16, DataType::f16, DataType::f16, {40, 24, 32}, {.a_col = true, .d_col = true, .pad = 8});
}

TEST(MatmulGpu, TransposedViews) {
    GPUMATH_REQUIRE_GPU();
    // A^T as a view of a row-major (K, M) buffer: a (M, K) with strides (1, M).
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 21, N = 17, K = 13;
    const Host a = random_host(DataType::f32, {M, K}, rng);
    const Host b = random_host(DataType::f32, {K, N}, rng);
    const Dev da = upload(a, {1, M});
    const Dev db = upload(b, {1, K});
    const Dev d = poisoned(DataType::f32, {M, N});
    matmul(da.view, db.view, d.view);
    const RefResult want = reference(a, b, DataType::f32, {});
    const Host got = download(d.view);
    EXPECT_LE(relative_error(got, want.d), 1e-5) << worst_elements(got, want.d);
}

TEST(MatmulGpu, VectorShapes) {
    GPUMATH_REQUIRE_GPU();
    expect_product(DataType::f32, DataType::f32, DataType::f32, {1, 29, 23});
    expect_product(DataType::f32, DataType::f32, DataType::f32, {37, 1, 23});
    expect_product(DataType::f32, DataType::f32, DataType::f32, {37, 29, 1});
    expect_product(DataType::bf16, DataType::bf16, DataType::bf16, {1, 256, 512});
}

// ---- batches ----------------------------------------------------------------------------------------

TEST(MatmulGpu, BatchesAndBroadcasting) {
    GPUMATH_REQUIRE_GPU();
    expect_product(DataType::f32, DataType::f32, DataType::f32, {17, 13, 11, {3}, {3}});
    expect_product(DataType::f32, DataType::f32, DataType::f32, {17, 13, 11, {4}, {}});
    expect_product(DataType::f32, DataType::f32, DataType::f32, {17, 13, 11, {}, {5}});
    expect_product(DataType::f32, DataType::f32, DataType::f32, {17, 13, 11, {2, 3}, {2, 3}}, {.pad = 3});
    expect_product(DataType::f32, DataType::f32, DataType::f32, {17, 13, 11, {2, 3}, {1, 1}});
    expect_product(DataType::bf16, DataType::bf16, DataType::bf16, {32, 24, 16, {6}, {6}},
                   {.a_col = true, .d_col = true});
}

// ---- alpha, beta, C -------------------------------------------------------------------------------

TEST(MatmulGpu, AlphaBetaAndC) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 37, N = 29, K = 23;
    const Host a = random_host(DataType::f32, {2, M, K}, rng);
    const Host b = random_host(DataType::f32, {K, N}, rng);
    const Host c = random_host(DataType::f32, {2, M, N}, rng);
    const Host c_shared = random_host(DataType::f32, {M, N}, rng);
    const Dev da = upload(a), db = upload(b), dc = upload(c), dc_shared = upload(c_shared);
    const cd alpha = 0.75, beta = -1.25;

    const RefResult want = reference(a, b, DataType::f32, {.alpha = alpha, .beta = beta, .c = &c});
    {  // separate C
        const Dev d = poisoned(DataType::f32, {2, M, N});
        matmul(da.view, db.view, d.view, {.alpha = 0.75, .beta = -1.25, .c = dc.view});
        const Host got = download(d.view);
        EXPECT_LE(relative_error(got, want.d), 1e-5) << "separate c" << worst_elements(got, want.d);
    }
    {  // C aliasing D: in place, through both paths
        for (int path = 0; path < 2; ++path) {
            const Dev d = upload(c);
            if (path == 0) {
                matmul(da.view, db.view, d.view, {.alpha = 0.75, .beta = -1.25, .c = d.view});
            } else {
                Matmul mm(da.view, db.view, d.view);
                mm.execute(da.view, db.view, d.view, {.alpha = 0.75, .beta = -1.25, .c = d.view});
            }
            const Host got = download(d.view);
            EXPECT_LE(relative_error(got, want.d), 1e-5) << "c is d, path " << path << worst_elements(got, want.d);
        }
    }
    {  // C broadcast over the batch (batch stride 0)
        const RefResult shared = reference(a, b, DataType::f32, {.alpha = alpha, .beta = beta, .c = &c_shared});
        const Dev d = poisoned(DataType::f32, {2, M, N});
        matmul(da.view, db.view, d.view, {.alpha = 0.75, .beta = -1.25, .c = dc_shared.view});
        const Host got = download(d.view);
        EXPECT_LE(relative_error(got, shared.d), 1e-5) << "c broadcast over the batch" << worst_elements(got, shared.d);
    }
}

TEST(MatmulGpu, ComplexAndIntegerScalars) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    {
        const Host a = random_host(DataType::c32, {19, 11}, rng), b = random_host(DataType::c32, {11, 13}, rng);
        const Host c = random_host(DataType::c32, {19, 13}, rng);
        const Dev da = upload(a), db = upload(b), dc = upload(c);
        const Dev d = poisoned(DataType::c32, {19, 13});
        const std::complex<double> alpha(0.5, 1.0), beta(-1.0, 0.25);
        matmul(da.view, db.view, d.view, {.alpha = alpha, .beta = beta, .c = dc.view});
        const RefResult want = reference(a, b, DataType::c32, {.alpha = alpha, .beta = beta, .c = &c});
        const Host got = download(d.view);
        EXPECT_LE(relative_error(got, want.d), 1e-5) << worst_elements(got, want.d);
    }
    {
        const Host a = random_host(DataType::i8, {32, 64}, rng), b = random_host(DataType::i8, {64, 16}, rng);
        const Host c = random_host(DataType::i32, {32, 16}, rng);
        const Dev da = upload(a), db = upload(b, strides_for(b.shape, true)), dc = upload(c);
        const Dev d = poisoned(DataType::i32, {32, 16});
        matmul(da.view, db.view, d.view, {.alpha = 2, .beta = -3, .c = dc.view});
        const RefResult want = reference(a, b, DataType::i32, {.alpha = 2.0, .beta = -3.0, .c = &c});
        const Host got = download(d.view);
        EXPECT_EQ(relative_error(got, want.d), 0.0) << worst_elements(got, want.d);
    }
}

TEST(MatmulGpu, ScalarsPastAnF16ScaleTypeAreRefusedBeforeTheProduct) {
    GPUMATH_REQUIRE_GPU();
    // Compute type f16 scales in f16 (|x| <= 65504): a larger alpha or beta is InvalidArgument, and
    // D stays as it was; 65504 itself runs.
    auto rng = gpumath::test::rng_for_test();
    const Host a = random_host(DataType::f16, {16, 8}, rng), b = random_host(DataType::f16, {8, 16}, rng);
    const Dev da = upload(a), db = upload(b);
    const Dev d = poisoned(DataType::f16, {16, 16});
    const MatmulOptions f16{.compute_type = ComputeType::f16};
    gpumath::test::expect_throw_with<InvalidArgument>(
        [&] { matmul(da.view, db.view, d.view, {.alpha = 70000.0}, f16); }, {"alpha:", "70000", "65504"});
    gpumath::test::expect_throw_with<InvalidArgument>(
        [&] { matmul(da.view, db.view, d.view, {.beta = -1e5, .c = d.view}, f16); }, {"beta:", "65504"});
    for (const cd& x : download(d.view).v) ASSERT_TRUE(std::isnan(x.real())) << "D was written";
    const Dev ok = poisoned(DataType::f16, {16, 16});
    matmul(da.view, db.view, ok.view, {.alpha = 1.0 / 65504.0}, f16);
    EXPECT_FALSE(std::isnan(download(ok.view).v[0].real()));
}

// ---- alignment ----------------------------------------------------------------------------------------

TEST(MatmulGpu, MisalignedPointersArePlannedForNeverRunOnMore) {
    GPUMATH_REQUIRE_GPU();
    // f32 operands 4 bytes past a 256-byte boundary, f16 2 bytes past: stateless and stateful.
    expect_product(DataType::f32, DataType::f32, DataType::f32, {33, 19, 27}, {.a_off = 4, .b_off = 8, .d_off = 4});
    expect_product(DataType::f16, DataType::f16, DataType::f16, {40, 24, 32}, {.a_off = 2, .b_off = 2, .d_off = 2});
    expect_product(DataType::bf16, DataType::bf16, DataType::bf16, {48, 40, 24},
                   {.a_col = true, .a_off = 6, .d_off = 2});

    // A Matmul planned for aligned operands, then given misaligned ones (and back).
    auto rng = gpumath::test::rng_for_test();
    const Host a = random_host(DataType::f16, {64, 32}, rng), b = random_host(DataType::f16, {32, 48}, rng);
    const Dev da = upload(a), db = upload(b);
    const Dev da2 = upload(a, {}, 2), db2 = upload(b, {}, 6);
    const RefResult want = reference(a, b, DataType::f16, {});
    Matmul mm(da.view, db.view);
    mm.plan();
    for (int round = 0; round < 3; ++round) {
        const bool misaligned = round == 1;
        const Dev d = poisoned(DataType::f16, {64, 48}, {}, misaligned ? 2 : 0);
        mm.execute(misaligned ? da2.view : da.view, misaligned ? db2.view : db.view, d.view);
        const Host got = download(d.view);
        EXPECT_LE(relative_error(got, want.d), 1e-2) << "round " << round << worst_elements(got, want.d);
    }
}

// ---- allocating calls -----------------------------------------------------------------------------

TEST(MatmulGpu, AllocatingCallsReturnRowMajorD) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const Host a = random_host(DataType::bf16, {3, 32, 24}, rng), b = random_host(DataType::bf16, {24, 40}, rng);
    const Dev da = upload(a), db = upload(b);
    const RefResult want = reference(a, b, DataType::bf16, {});
    Tensor d1 = matmul(da.view, db.view);
    EXPECT_EQ(d1.layout(), TensorLayout(DataType::bf16, {3, 32, 40}));
    EXPECT_LE(relative_error(download(d1.view()), want.d), 1e-2);
    Matmul mm(da.view, db.view);
    Tensor d2 = mm.execute(da.view, db.view);
    EXPECT_LE(relative_error(download(d2.view()), want.d), 1e-2);
    MatmulResult r = matmul(da.view, db.view, {}, {.result_type = DataType::f32});
    EXPECT_EQ(r.d.dtype(), DataType::f32);
    EXPECT_LE(relative_error(download(r.d.view()), want.d), 1e-2);
    EXPECT_FALSE(r.aux.has_data()) << "absent output";
    EXPECT_EQ(r.aux.size(), 0);
    EXPECT_FALSE(r.bias_grad.has_data()) << "absent output";
    EXPECT_EQ(r.bias_grad.size(), 0);
}
