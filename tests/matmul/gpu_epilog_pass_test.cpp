// SPDX-License-Identifier: Apache-2.0
// gpumath's elementwise epilog pass on a GPU against a double reference on fresh random data, into
// poisoned outputs: SiLU with and without a bias (fused or in the pass), the bias orientation
// cuBLASLt refuses (per row of a row-major D, per column of a column-major D) for every epilog
// that takes a bias, matching the fused orientation, with alpha, beta and c; user functions
// reading a gate through user_info with D's row and column (both D layouts, batched, scalar and
// vector paths), the stateless cache, graph capture and replay of the pass with SiLU and GELU.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <gpumath/core.hpp>
#include <gpumath/matmul.hpp>

#include "common/test_util.hpp"
#include "reference.hpp"

using namespace gpumath;
using namespace gpumath::test::mm;

namespace {

void expect_close(const Host& got, const Host& want, double tol, const std::string& what) {
    const double err = relative_error(got, want);
    EXPECT_LE(err, tol) << what << ": relative error " << err << worst_elements(got, want);
}

/// Row-major D, or column-major in its last two dimensions.
std::vector<std::int64_t> d_strides(const std::vector<std::int64_t>& shape, bool row_major) {
    return strides_for(shape, !row_major);
}

std::string name(Epilog e, DataType t, bool row_major) {
    return std::string(to_string(e)) + " " + std::string(to_string(t)) + (row_major ? " row-major d" : " col-major d");
}

/// A function multiplying by a gate of D's shape (M, N) per product, read through user_info, so
/// that a wrong row, column or batch index reads a wrong gate value.
MatmulEpilogFunction gate_function(std::int64_t M, std::int64_t N) {
    return {.source =
                "namespace user {\n"
                "__device__ float gated(float v, long long batch, long long row, long long col, void* info) {\n"
                "    const float* g = static_cast<const float*>(info);\n"
                "    return v * g[(batch * " +
                std::to_string(M) + " + row) * " + std::to_string(N) +
                " + col];\n"
                "}\n"
                "}  // namespace user\n",
            .symbol = "user::gated"};
}

}  // namespace

TEST(MatmulEpilogPass, SiluAndSiluBiasMatchTheReference) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 96, N = 136, K = 72;
    for (DataType t : {DataType::bf16, DataType::f16, DataType::f32})
        for (bool row_major : {true, false})
            for (Epilog e : {Epilog::silu, Epilog::silu_bias}) {
                SCOPED_TRACE(name(e, t, row_major));
                const Host a = random_host(t, {M, K}, rng, -2, 2), b = random_host(t, {K, N}, rng, -2, 2);
                // The fused orientation: per column of a row-major D, per row of a column-major one.
                const Host bias = random_host(
                    t, row_major ? std::vector<std::int64_t>{N} : std::vector<std::int64_t>{M, 1}, rng, -2, 2);
                const Dev da = upload(a), db = upload(b), dbias = upload(bias);
                const Dev d = poisoned(t, {M, N}, d_strides({M, N}, row_major));
                MatmulArgs args;
                if (e == Epilog::silu_bias) args.bias = dbias.view;
                Matmul mm(da.view, db.view, {.epilog = e});
                mm.execute(da.view, db.view, d.view, args);
                const RefResult want = reference(a, b, t, {.bias = &bias, .epilog = e});
                expect_close(download(d.view), want.d, tolerance(t, t), "D");
                // The stateless call agrees.
                const Dev d2 = poisoned(t, {M, N}, d_strides({M, N}, row_major));
                matmul(da.view, db.view, d2.view, args, {.epilog = e});
                expect_close(download(d2.view), want.d, tolerance(t, t), "matmul()");
            }
}

TEST(MatmulEpilogPass, BiasAlongTheStridedDimensionMatchesTheFusedOrientation) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 80, N = 120, K = 64;
    for (DataType t : {DataType::bf16, DataType::f32})
        for (bool row_major : {true, false})
            for (Epilog e : {Epilog::bias, Epilog::relu_bias, Epilog::gelu_bias, Epilog::silu_bias}) {
                SCOPED_TRACE(name(e, t, row_major));
                const Host a = random_host(t, {M, K}, rng, -2, 2), b = random_host(t, {K, N}, rng, -2, 2);
                // The orientation cuBLASLt refuses: per row of a row-major D, per column of a column-major one.
                const std::vector<std::int64_t> bias_shape =
                    row_major ? std::vector<std::int64_t>{M, 1} : std::vector<std::int64_t>{N};
                const Host bias = random_host(t, bias_shape, rng, -2, 2);
                const Dev da = upload(a), db = upload(b), dbias = upload(bias);
                const Dev d = poisoned(t, {M, N}, d_strides({M, N}, row_major));
                matmul(da.view, db.view, d.view, {.bias = dbias.view}, {.epilog = e});
                const RefResult want = reference(a, b, t, {.bias = &bias, .epilog = e});
                const Host got = download(d.view);
                expect_close(got, want.d, tolerance(t, t), "D");
                // The fused orientation of the same numbers: D in the other layout (cuBLASLt adds
                // the bias), compared element by element.
                const Dev fused = poisoned(t, {M, N}, d_strides({M, N}, !row_major));
                matmul(da.view, db.view, fused.view, {.bias = dbias.view}, {.epilog = e});
                expect_close(got, download(fused.view), tolerance(t, t), "pass against fused");
            }
}

TEST(MatmulEpilogPass, BiasAlongTheStridedDimensionWithAlphaAndC) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 72, N = 144, K = 56;
    const DataType t = DataType::bf16;
    const Host a = random_host(t, {M, K}, rng, -2, 2), b = random_host(t, {K, N}, rng, -2, 2);
    const Host c = random_host(t, {M, N}, rng, -2, 2), bias = random_host(t, {M, 1}, rng, -2, 2);
    const Dev da = upload(a), db = upload(b), dc = upload(c), dbias = upload(bias);
    for (Epilog e : {Epilog::bias, Epilog::relu_bias, Epilog::gelu_bias}) {
        SCOPED_TRACE(std::string(to_string(e)));
        // alpha scales only A @ B.
        const Dev d = poisoned(t, {M, N});
        matmul(da.view, db.view, d.view, {.alpha = 0.5, .bias = dbias.view}, {.epilog = e});
        expect_close(download(d.view), reference(a, b, t, {.alpha = 0.5, .bias = &bias, .epilog = e}).d,
                     tolerance(t, t), "alpha 0.5");
        // beta scales only c.
        const Dev dd = poisoned(t, {M, N});
        const MatmulArgs args{.alpha = 0.5, .beta = -0.75, .c = dc.view, .bias = dbias.view};
        matmul(da.view, db.view, dd.view, args, {.epilog = e});
        const RefResult want = reference(a, b, t, {.alpha = 0.5, .beta = -0.75, .c = &c, .bias = &bias, .epilog = e});
        expect_close(download(dd.view), want.d, tolerance(t, t), "alpha 0.5, beta -0.75, c");
    }
}

TEST(MatmulEpilogPass, BatchedBiasWithStridesAndOddShapesTakeTheScalarPath) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    // N = 37: rows of a row-major bf16 D are not 16-byte multiples, so the pass goes element by element.
    const std::int64_t B = 3, M = 29, N = 37, K = 40;
    const DataType t = DataType::bf16;
    const Host a = random_host(t, {B, M, K}, rng, -2, 2), b = random_host(t, {B, K, N}, rng, -2, 2);
    const Host bias = random_host(t, {B, M, 1}, rng, -2, 2);
    const Dev da = upload(a), db = upload(b);
    // The bias with stride 2 between its values.
    const Dev dbias = upload(bias, {2 * M, 2, 1});
    const Dev d = poisoned(t, {B, M, N});
    matmul(da.view, db.view, d.view, {.bias = dbias.view}, {.epilog = Epilog::gelu_bias});
    const RefResult want = reference(a, b, t, {.bias = &bias, .epilog = Epilog::gelu_bias});
    expect_close(download(d.view), want.d, tolerance(t, t), "D");
}

TEST(MatmulEpilogPass, AUserFunctionSeesRowColumnBatchAndUserInfo) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t B = 2, M = 64, N = 96, K = 48;
    for (DataType t : {DataType::bf16, DataType::f32})
        for (bool row_major : {true, false}) {
            SCOPED_TRACE(std::string(to_string(t)) + (row_major ? " row-major d" : " col-major d"));
            const Host a = random_host(t, {B, M, K}, rng, -2, 2), b = random_host(t, {B, K, N}, rng, -2, 2);
            const Host bias = random_host(t, {N}, rng, -2, 2);
            const Host gate = random_host(DataType::f32, {B, M, N}, rng, 0.5, 2);
            const Dev da = upload(a), db = upload(b), dbias = upload(bias), dgate = upload(gate);
            const Dev d = poisoned(t, {B, M, N}, d_strides({B, M, N}, row_major));
            // relu_bias stays in cuBLASLt (a row-major D) or moves to the pass (column-major):
            // the function runs after it either way.
            Matmul mm(da.view, db.view, {.epilog = Epilog::relu_bias, .epilog_function = gate_function(M, N)});
            mm.execute(da.view, db.view, d.view, {.bias = dbias.view, .epilog_user_info = dgate.view.data()});
            RefResult want = reference(a, b, t, {.bias = &bias, .epilog = Epilog::relu_bias});
            for (std::int64_t i = 0; i < want.d.size(); ++i) want.d.v[std::size_t(i)] *= gate.v[std::size_t(i)];
            expect_close(download(d.view), want.d, tolerance(t, t), "D");
        }
}

TEST(MatmulEpilogPass, FunctionsArePartOfTheStatelessCacheKey) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 32, N = 64, K = 32;
    const auto [a, b, da, db, want] = random_product(DataType::f32, M, N, K, rng);
    auto scaled_by = [&](int factor) {
        return MatmulEpilogFunction{.source =
                                        "__device__ float f(float v, long long, long long, long long, void*) "
                                        "{ return v * " +
                                        std::to_string(factor) + ".0f; }",
                                    .symbol = "f"};
    };
    for (int factor : {2, 3, 2}) {
        SCOPED_TRACE("factor " + std::to_string(factor));
        const Dev d = poisoned(DataType::f32, {M, N});
        matmul(da.view, db.view, d.view, {}, {.epilog_function = scaled_by(factor)});
        Host scaled = want.d;
        for (cd& x : scaled.v) x *= double(factor);
        expect_close(download(d.view), scaled, 1e-5, "D");
    }
    // A function that does not compile: CompileError when the plan is made, naming the function.
    const Dev d = poisoned(DataType::f32, {M, N});
    gpumath::test::expect_throw_with<CompileError>(
        [&] {
            matmul(da.view, db.view, d.view, {},
                   {.epilog_function =
                        MatmulEpilogFunction{.source = "__device__ float g(float v) { return w; }", .symbol = "g"}});
        },
        {"options.epilog_function \"g\"", "long long row"});
}

TEST(MatmulEpilogPass, CapturedAndReplayedLikeEagerCalls) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 128, N = 256, K = 64;
    const DataType t = DataType::bf16;
    const Host a = random_host(t, {M, K}, rng, -2, 2), b = random_host(t, {K, N}, rng, -2, 2);
    const Host bias = random_host(t, {M, 1}, rng, -2, 2);
    core::Stream stream;
    const Dev da = upload(a, {}, 0, stream), db = upload(b, {}, 0, stream), dbias = upload(bias, {}, 0, stream);
    // The pass adds the bias and applies SiLU or GELU.
    for (Epilog e : {Epilog::silu_bias, Epilog::gelu_bias}) {
        SCOPED_TRACE(std::string(to_string(e)));
        const Dev eager = poisoned(t, {M, N}, {}, 0, stream), graph = poisoned(t, {M, N}, {}, 0, stream);
        const Dev stateless = poisoned(t, {M, N}, {}, 0, stream);
        const MatmulArgs args{.bias = dbias.view};
        // A fresh plan with a pass is made inside the capture; the stateless call's plan too.
        Matmul mm(da.view, db.view, {.epilog = e});
        core::Graph g = core::Graph::capture(stream, [&](core::StreamRef s) {
            mm.execute(da.view, db.view, graph.view, args, s);
            matmul(da.view, db.view, stateless.view, args, {.epilog = e}, s);
        });
        EXPECT_TRUE(std::isnan(download(graph.view, stream).v[0].real())) << "nothing ran during the capture";
        for (int replay = 0; replay < 3; ++replay) g.launch(stream);
        mm.execute(da.view, db.view, eager.view, args, stream);
        const RefResult want = reference(a, b, t, {.bias = &bias, .epilog = e});
        const Host got = download(graph.view, stream);
        expect_close(got, want.d, tolerance(t, t), "replayed D");
        EXPECT_EQ(download_bytes(graph.view, stream), download_bytes(eager.view, stream)) << "replay == eager, bitwise";
        EXPECT_EQ(download_bytes(stateless.view, stream), download_bytes(eager.view, stream));
    }
}

namespace {

/// Kernel nodes of `g`.
std::size_t kernel_nodes(const core::Graph& g) {
    std::size_t count = 0;
    EXPECT_EQ(cudaGraphGetNodes(g.graph(), nullptr, &count), cudaSuccess);
    std::vector<cudaGraphNode_t> nodes(count);
    EXPECT_EQ(cudaGraphGetNodes(g.graph(), nodes.data(), &count), cudaSuccess);
    std::size_t kernels = 0;
    for (cudaGraphNode_t n : nodes) {
        cudaGraphNodeType type{};
        EXPECT_EQ(cudaGraphNodeGetType(n, &type), cudaSuccess);
        if (type == cudaGraphNodeTypeKernel) ++kernels;
    }
    return kernels;
}

/// Rows `rows` of the (M, N) host matrix `m`.
Host rows_of(const Host& m, const std::vector<std::int64_t>& rows) {
    const std::int64_t n = m.shape[1];
    Host out(m.dtype, {std::int64_t(rows.size()), n});
    for (std::size_t i = 0; i < rows.size(); ++i)
        for (std::int64_t j = 0; j < n; ++j)
            out.v[i * std::size_t(n) + std::size_t(j)] = m.v[std::size_t(rows[i] * n + j)];
    return out;
}

}  // namespace

TEST(MatmulEpilogPass, LargeProductsRunInRowBlocksOnTwoStreamsWithTheSameNumbers) {
    // D of 64 MiB with a pass (a bias per row of a row-major D; SiLU after a fused bias per column)
    // after a product long enough to split (K = 2048 for a bf16 D):
    // gpumath runs four blocks of D's rows, each product with its pass, alternately on the caller's
    // stream and a side stream. The numbers are those of the whole product's: against a double
    // reference on the rows at and beside every block boundary, and against the fused orientation
    // (a column-major D, whose bias cuBLASLt adds: one product, no pass) everywhere.
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 4096, N = 8192, K = 2048, r = M / 4;
    const DataType t = DataType::bf16;
    const Host a = random_host(t, {M, K}, rng, -2, 2), b = random_host(t, {K, N}, rng, -2, 2);
    const Host row_bias = random_host(t, {M, 1}, rng, -2, 2), col_bias = random_host(t, {N}, rng, -2, 2);
    core::Stream stream;
    const Dev da = upload(a, {}, 0, stream), db = upload(b, {}, 0, stream);
    const Dev drow = upload(row_bias, {}, 0, stream), dcol = upload(col_bias, {}, 0, stream);
    const std::vector<std::int64_t> sampled = {0, 1, r - 1, r, r + 1, 2 * r - 1, 2 * r, 3 * r - 1, 3 * r, M - 2, M - 1};
    Host a_rows = rows_of(a, sampled), row_bias_rows = rows_of(row_bias, sampled);
    struct Case {
        Epilog epilog;
        const Host* bias;
        const Dev* dbias;
        const Host* bias_rows;
    };
    for (const Case& c : {Case{Epilog::bias, &row_bias, &drow, &row_bias_rows},
                          Case{Epilog::gelu_bias, &row_bias, &drow, &row_bias_rows},
                          Case{Epilog::silu_bias, &col_bias, &dcol, &col_bias}}) {
        SCOPED_TRACE(std::string(to_string(c.epilog)) + (c.bias == &row_bias ? ", bias per row" : ", bias per column"));
        const MatmulArgs args{.bias = c.dbias->view};
        const Dev d = poisoned(t, {M, N}, {}, 0, stream), d2 = poisoned(t, {M, N}, {}, 0, stream);
        Matmul mm(da.view, db.view, {.epilog = c.epilog});
        mm.execute(da.view, db.view, d.view, args, stream);
        matmul(da.view, db.view, d2.view, args, {.epilog = c.epilog}, stream);
        const Host got = download(d.view, stream);
        const RefResult want = reference(a_rows, b, t, {.bias = c.bias_rows, .epilog = c.epilog});
        expect_close(rows_of(got, sampled), want.d, tolerance(t, t), "rows at the block boundaries");
        EXPECT_EQ(download_bytes(d2.view, stream), download_bytes(d.view, stream)) << "matmul() == Matmul, bitwise";
        if (c.bias == &row_bias) {
            const Dev fused = poisoned(t, {M, N}, d_strides({M, N}, false), 0, stream);
            matmul(da.view, db.view, fused.view, args, {.epilog = c.epilog}, stream);
            expect_close(got, download(fused.view, stream), tolerance(t, t), "blocks against the fused orientation");
        }
        // Captured: four products and four passes (and the side stream's fork and join), replayed
        // into the same bits as the eager call.
        const Dev graph = poisoned(t, {M, N}, {}, 0, stream);
        core::Graph g =
            core::Graph::capture(stream, [&](core::StreamRef s) { mm.execute(da.view, db.view, graph.view, args, s); });
        EXPECT_GE(kernel_nodes(g), 8U) << "four products, each with its pass";
        g.launch(stream);
        EXPECT_EQ(download_bytes(graph.view, stream), download_bytes(d.view, stream)) << "replay == eager, bitwise";
    }
    // Below 64 MiB of D the product runs whole: one product and one pass.
    const Dev small = poisoned(t, {M / 2, N}, {}, 0, stream);
    const TensorView a_half(da.view.data(), t, {M / 2, K});
    const TensorView bias_half(drow.view.data(), t, {M / 2, 1});
    Matmul half(a_half, db.view, {.epilog = Epilog::bias});
    core::Graph g = core::Graph::capture(
        stream, [&](core::StreamRef s) { half.execute(a_half, db.view, small.view, {.bias = bias_half}, s); });
    EXPECT_LE(kernel_nodes(g), 3U);
    // A short product (K = 32, under 2048 flops per byte of D) with the same 64 MiB D runs whole too.
    const TensorView a_short(da.view.data(), t, {M, 32}), b_short(db.view.data(), t, {32, N});
    const Dev short_d = poisoned(t, {M, N}, {}, 0, stream);
    Matmul short_mm(a_short, b_short, {.epilog = Epilog::bias});
    core::Graph g_short = core::Graph::capture(
        stream, [&](core::StreamRef s) { short_mm.execute(a_short, b_short, short_d.view, {.bias = drow.view}, s); });
    EXPECT_LE(kernel_nodes(g_short), 3U);
}
