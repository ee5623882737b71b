// SPDX-License-Identifier: Apache-2.0
// FP8 products with finer scale modes (outer_vector, block_1x128, block_128x128) on a Hopper GPU,
// against a double-precision reference that applies every scale to its row, column or block of
// the inputs. Scales differ by up to 64x between rows and blocks, so a product that ignores them,
// or applies them to the wrong operand or block, fails. Layouts of the scale tensors are built
// here from docs/matmul.md's table, independently of gpumath's own.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include <gpumath/core.hpp>
#include <gpumath/matmul.hpp>

#include "common/test_util.hpp"
#include "matmul/fp8_test_util.hpp"
#include "reference.hpp"

using namespace gpumath;
using namespace gpumath::test::mm;
using gpumath::test::fp8::blk;
using gpumath::test::fp8::ceil_div;

namespace {

#define REQUIRE_HOPPER()                                                                                 \
    do {                                                                                                 \
        GPUMATH_REQUIRE_GPU();                                                                           \
        const auto cc = core::Device::current().compute_capability();                                    \
        if (cc.major != 9) GTEST_SKIP() << "finer FP8 scale modes need compute capability 9.x (Hopper)"; \
    } while (0)

/// One operand's scales: values by (batch, row-or-block, k-block) and the device tensor.
struct Scales {
    ScaleMode mode = ScaleMode::tensor;
    std::int64_t outer = 0, k = 0, batch = 1;  // outer = M for a, N for b
    std::vector<double> values;                // indexed [batch][outer_index][k_block] (dense, as used)
    Dev dev;

    /// The scale of element (batch, outer row/column o, k).
    [[nodiscard]] double at(std::int64_t bi, std::int64_t o, std::int64_t kk) const {
        const std::int64_t l = ceil_div(k, blk);
        switch (mode) {
            case ScaleMode::outer_vector:
                return values[std::size_t(bi * outer + o)];
            case ScaleMode::block_1x128:
                return values[std::size_t((bi * outer + o) * l + kk / blk)];
            case ScaleMode::block_128x128:
                return values[std::size_t((bi * ceil_div(outer, blk) + o / blk) * l + kk / blk)];
            default:
                return 1.0;
        }
    }
};

/// Random scales 2^e * f, e in [-3, 3], f in [0.5, 1): up to 64x apart.
Scales make_scales(ScaleMode mode, bool is_b, std::int64_t outer, std::int64_t k, std::int64_t batch,
                   std::mt19937_64& rng) {
    Scales s;
    s.mode = mode;
    s.outer = outer;
    s.k = k;
    s.batch = batch;
    const std::int64_t l = ceil_div(k, blk), l4 = (l + 3) / 4 * 4, ob = ceil_div(outer, blk);
    std::int64_t per = 0;
    std::vector<std::int64_t> shape, strides;  // of the device tensor, in the operand's orientation
    if (batch > 1) shape.push_back(batch);
    std::uniform_int_distribution<int> e(-3, 3);
    std::uniform_real_distribution<double> f(0.5, 1.0);
    switch (mode) {
        case ScaleMode::outer_vector:
            per = outer;
            shape.push_back(outer);
            strides = {1};
            break;
        case ScaleMode::block_1x128:
            per = outer * l;
            shape.push_back(is_b ? l : outer);  // a: (M, L) with M running fastest; b: (L, N) row-major
            shape.push_back(is_b ? outer : l);
            strides = is_b ? std::vector<std::int64_t>{outer, 1} : std::vector<std::int64_t>{1, outer};
            break;
        case ScaleMode::block_128x128:
            per = ob * l;
            shape.push_back(is_b ? l : ob);  // a: (ceil(M/128), L) in rows of L4; b: (L, ceil(N/128)) in columns of L4
            shape.push_back(is_b ? ob : l);
            strides = is_b ? std::vector<std::int64_t>{1, l4} : std::vector<std::int64_t>{l4, 1};
            break;
        default:
            break;
    }
    const std::int64_t matrix_span = mode == ScaleMode::block_128x128 ? ob * l4 : per;
    if (batch > 1) strides.insert(strides.begin(), matrix_span);
    s.values.resize(std::size_t(per * batch));
    for (double& v : s.values) v = std::ldexp(f(rng), e(rng));
    // The device tensor: place each value at its strided position.
    Host h(DataType::f32, shape);
    for (std::int64_t bi = 0; bi < batch; ++bi)
        for (std::int64_t o = 0; o < (mode == ScaleMode::block_128x128 ? ob : outer); ++o)
            for (std::int64_t kb = 0; kb < (mode == ScaleMode::outer_vector ? 1 : l); ++kb) {
                const double v = s.values[std::size_t(mode == ScaleMode::outer_vector ? bi * outer + o
                                                                                      : (bi * (per / l) + o) * l + kb)];
                std::vector<std::int64_t> idx;
                idx.reserve(3);
                if (batch > 1) idx.push_back(bi);
                idx.push_back(mode == ScaleMode::outer_vector || !is_b ? o : kb);
                if (mode != ScaleMode::outer_vector) idx.push_back(is_b ? o : kb);
                h.at(idx) = v;
            }
    s.dev = upload(h, strides);
    return s;
}

struct Case {
    ScaleMode am, bm;
    std::int64_t m, n, k;
    std::int64_t batch = 1;
    bool d_col = false;
    DataType dt = DataType::bf16;
    Epilog epilog = Epilog::none;
};

std::string describe(const Case& c) {
    return std::string(to_string(c.am)) + " x " + std::string(to_string(c.bm)) + " M=" + std::to_string(c.m) +
           " N=" + std::to_string(c.n) + " K=" + std::to_string(c.k) + " batch=" + std::to_string(c.batch) + " d " +
           (c.d_col ? "col" : "row") + " " + std::string(to_string(c.dt)) + " epilog " +
           std::string(to_string(c.epilog));
}

std::vector<std::int64_t> shape3(std::int64_t batch, std::int64_t r, std::int64_t c) {
    if (batch > 1) return {batch, r, c};
    return {r, c};
}

/// Runs a scaled product through matmul() and Matmul and compares both with the reference.
void expect_scaled(const Case& c) {
    SCOPED_TRACE(describe(c));
    auto rng = gpumath::test::rng_for_test();
    const Host a = random_host(DataType::e4m3, shape3(c.batch, c.m, c.k), rng, -2, 2);
    const Host b = random_host(DataType::e4m3, shape3(c.batch, c.k, c.n), rng, -2, 2);
    const Dev da = upload(a), db = upload(b, strides_for(b.shape, true));
    const Scales sa = make_scales(c.am, false, c.m, c.k, c.batch, rng);
    const Scales sb = make_scales(c.bm, true, c.n, c.k, c.batch, rng);

    // The inputs with their scales applied, in double: the reference multiplies these.
    Host as(DataType::f64, a.shape), bs(DataType::f64, b.shape);
    for (std::int64_t bi = 0; bi < c.batch; ++bi)
        for (std::int64_t i = 0; i < c.m; ++i)
            for (std::int64_t kk = 0; kk < c.k; ++kk) {
                const std::size_t at = std::size_t((bi * c.m + i) * c.k + kk);
                as.v[at] = a.v[at] * sa.at(bi, i, kk);
            }
    for (std::int64_t bi = 0; bi < c.batch; ++bi)
        for (std::int64_t kk = 0; kk < c.k; ++kk)
            for (std::int64_t j = 0; j < c.n; ++j) {
                const std::size_t at = std::size_t((bi * c.k + kk) * c.n + j);
                bs.v[at] = b.v[at] * sb.at(bi, j, kk);
            }
    const bool has_bias = c.epilog == Epilog::bias || c.epilog == Epilog::relu_bias || c.epilog == Epilog::gelu_bias;
    const DataType bias_type = c.dt == DataType::f16 ? DataType::f16 : DataType::bf16;
    const Host bias = random_host(bias_type, {c.n}, rng, -4, 4);
    const Dev dbias = upload(bias);
    const RefResult want = reference(as, bs, c.dt, {.bias = has_bias ? &bias : nullptr, .epilog = c.epilog});

    MatmulArgs args;
    if (has_bias) args.bias = dbias.view;
    args.scales = {.a_mode = c.am, .b_mode = c.bm, .a_tensor = sa.dev.view, .b_tensor = sb.dev.view};
    const MatmulOptions options{.epilog = c.epilog};
    const auto dshape = shape3(c.batch, c.m, c.n);
    const double tol = c.dt == DataType::f32 ? 2e-3 : 1.5e-2;
    for (int path = 0; path < 2; ++path) {
        SCOPED_TRACE(path == 0 ? "gpumath::matmul" : "gpumath::Matmul");
        const Dev d = poisoned(c.dt, dshape, strides_for(dshape, c.d_col));
        if (path == 0) {
            matmul(da.view, db.view, d.view, args, options);
        } else {
            Matmul mm(da.view, db.view, options);
            mm.execute(da.view, db.view, d.view, args);
        }
        const Host got = download(d.view);
        EXPECT_LE(relative_error(got, want.d), tol) << worst_elements(got, want.d);
    }
}

}  // namespace

TEST(MatmulScaleModesGpu, EveryPairRowAndColumnMajorD) {
    REQUIRE_HOPPER();
    const std::pair<ScaleMode, ScaleMode> pairs[] = {{ScaleMode::outer_vector, ScaleMode::outer_vector},
                                                     {ScaleMode::block_1x128, ScaleMode::block_1x128},
                                                     {ScaleMode::block_1x128, ScaleMode::block_128x128},
                                                     {ScaleMode::block_128x128, ScaleMode::block_1x128}};
    for (const auto& [am, bm] : pairs)
        for (const bool d_col : {false, true}) expect_scaled({am, bm, 256, 384, 512, 1, d_col});
}

TEST(MatmulScaleModesGpu, PartialBlocksAndResultTypes) {
    REQUIRE_HOPPER();
    // M, N, K multiples of 16 but not of 128: partial blocks along every dimension.
    for (const DataType dt : {DataType::bf16, DataType::f16, DataType::f32}) {
        expect_scaled({ScaleMode::block_1x128, ScaleMode::block_128x128, 208, 144, 272, 1, false, dt});
        expect_scaled({ScaleMode::block_128x128, ScaleMode::block_1x128, 144, 208, 400, 1, true, dt});
        expect_scaled({ScaleMode::outer_vector, ScaleMode::outer_vector, 208, 144, 272, 1, false, dt});
    }
}

TEST(MatmulScaleModesGpu, EpilogsWithBias) {
    REQUIRE_HOPPER();
    for (const Epilog e : {Epilog::bias, Epilog::relu_bias, Epilog::gelu_bias, Epilog::relu}) {
        expect_scaled({ScaleMode::block_1x128, ScaleMode::block_128x128, 256, 256, 384, 1, false, DataType::bf16, e});
        expect_scaled({ScaleMode::outer_vector, ScaleMode::outer_vector, 128, 256, 256, 1, false, DataType::bf16, e});
    }
}

TEST(MatmulScaleModesGpu, BatchedRunsOneProductAtATime) {
    REQUIRE_HOPPER();
    expect_scaled({ScaleMode::block_1x128, ScaleMode::block_128x128, 256, 128, 384, 3, false});
    expect_scaled({ScaleMode::block_128x128, ScaleMode::block_1x128, 128, 256, 256, 2, true});
    expect_scaled(
        {ScaleMode::outer_vector, ScaleMode::outer_vector, 128, 256, 256, 2, false, DataType::bf16, Epilog::bias});
}

TEST(MatmulScaleModesGpu, CaptureAndReplay) {
    REQUIRE_HOPPER();
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 256, N = 256, K = 384;
    const Host a = random_host(DataType::e4m3, {M, K}, rng, -2, 2);
    const Host b = random_host(DataType::e4m3, {K, N}, rng, -2, 2);
    const Dev da = upload(a), db = upload(b, strides_for(b.shape, true));
    const Scales sa = make_scales(ScaleMode::block_1x128, false, M, K, 1, rng);
    const Scales sb = make_scales(ScaleMode::block_128x128, true, N, K, 1, rng);
    const MatmulArgs args{.scales = {.a_mode = ScaleMode::block_1x128,
                                     .b_mode = ScaleMode::block_128x128,
                                     .a_tensor = sa.dev.view,
                                     .b_tensor = sb.dev.view}};
    core::Stream stream;
    const Dev eager = poisoned(DataType::bf16, {M, N});
    matmul(da.view, db.view, eager.view, args, {}, stream);  // plans outside the capture
    Matmul mm(da.view, db.view);
    const Dev planned = poisoned(DataType::bf16, {M, N});
    mm.execute(da.view, db.view, planned.view, args, stream);
    stream.synchronize();

    const Dev d1 = poisoned(DataType::bf16, {M, N}), d2 = poisoned(DataType::bf16, {M, N});
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamBeginCapture(stream.handle(), cudaStreamCaptureModeThreadLocal), cudaSuccess);
    matmul(da.view, db.view, d1.view, args, {}, stream);
    mm.execute(da.view, db.view, d2.view, args, stream);
    ASSERT_EQ(cudaStreamEndCapture(stream.handle(), &graph), cudaSuccess);
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(cudaGraphLaunch(exec, stream.handle()), cudaSuccess);
    stream.synchronize();
    const auto want = download_bytes(eager.view);
    EXPECT_EQ(download_bytes(d1.view), want) << "captured matmul() differs from the eager product";
    EXPECT_EQ(download_bytes(d2.view), download_bytes(planned.view)) << "captured Matmul::execute differs";
    (void)cudaGraphExecDestroy(exec);
    (void)cudaGraphDestroy(graph);
}

TEST(MatmulScaleModesGpu, QuantizedBlockwiseProductMatchesBf16) {
    REQUIRE_HOPPER();
    // bf16 activations (M, K) and weights W (N, K) -> quantize (1x128 and 128x128) -> FP8 product.
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 256, N = 384, K = 512;
    Host x = random_host(DataType::bf16, {M, K}, rng, -1, 1);
    Host w = random_host(DataType::bf16, {N, K}, rng, -1, 1);
    for (std::int64_t i = 0; i < M; ++i)  // rows of very different magnitude
        for (std::int64_t kk = 0; kk < K; ++kk) x.v[std::size_t(i * K + kk)] *= std::ldexp(1.0, int(i % 7) - 3);
    const Dev dx = upload(x), dw = upload(w);
    core::Stream stream;
    const QuantizedFP8 qx = quantize_fp8(dx.view, ScaleMode::block_1x128, {}, stream);
    const QuantizedFP8 qw = quantize_fp8(dw.view, ScaleMode::block_128x128, {}, stream);
    const Dev d = poisoned(DataType::bf16, {M, N});
    matmul(qx.data.view(), qw.data.view().transposed(), d.view,
           {.scales = {.a_mode = ScaleMode::block_1x128,
                       .b_mode = ScaleMode::block_128x128,
                       .a_tensor = qx.scales_view,
                       .b_tensor = qw.scales_view.transposed()}},
           {}, stream);
    // The bf16 product x @ W^T in double.
    Host wt(DataType::bf16, {K, N});
    for (std::int64_t j = 0; j < N; ++j)
        for (std::int64_t kk = 0; kk < K; ++kk) wt.v[std::size_t(kk * N + j)] = w.v[std::size_t(j * K + kk)];
    const RefResult want = reference(x, wt, DataType::bf16, {});
    const Host got = download(d.view, stream);
    // e4m3 keeps 3 mantissa bits: each input is within 2^-4 relative, the product within ~6%.
    EXPECT_LE(relative_error(got, want.d), 6e-2) << worst_elements(got, want.d);
}
