// SPDX-License-Identifier: Apache-2.0
// Grouped products on a GPU against a double-precision reference: every form (per-group views,
// mixture of experts; GroupedMatmul and grouped_matmul()), f16/bf16/f32, uneven group sizes with
// groups of 0 and 1 rows, row- and column-major weights and D, bias epilogs; bitwise equality with
// per-group matmul() calls; the streams backend and automatic's measured choice; graph capture and
// replay (also of side streams, beside eager calls); 8 threads on 4 streams; FP8 with per-group
// scales and amax. Outputs are poisoned (0xFF bytes) before every run, and rows no group owns must
// stay poisoned.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gpumath/core.hpp>
#include <gpumath/matmul.hpp>

#include "common/test_util.hpp"
#include "matmul/grouped_kernel.hpp"
#include "reference.hpp"

using namespace gpumath;
using namespace gpumath::test::mm;

namespace {

/// Rows [row, row + m) of a row-major host matrix (T, C).
Host rows_of(const Host& x, std::int64_t row, std::int64_t m) {
    const std::int64_t C = x.shape[1];
    Host out(x.dtype, {m, C});
    for (std::int64_t i = 0; i < m * C; ++i) out.v[std::size_t(i)] = x.v[std::size_t(row * C + i)];
    return out;
}

/// Matrix g of a host (G, R, C) tensor.
Host matrix_of(const Host& x, std::int64_t g) {
    const std::int64_t R = x.shape[1], C = x.shape[2];
    Host out(x.dtype, {R, C});
    for (std::int64_t i = 0; i < R * C; ++i) out.v[std::size_t(i)] = x.v[std::size_t(g * R * C + i)];
    return out;
}

/// Row g of a host (G, N) bias, as (N,).
Host bias_of(const Host& x, std::int64_t g) {
    const std::int64_t N = x.shape[1];
    Host out(x.dtype, {N});
    for (std::int64_t i = 0; i < N; ++i) out.v[std::size_t(i)] = x.v[std::size_t(g * N + i)];
    return out;
}

/// A view of `rows` rows (and `cols` columns) starting at row `row` of a (T, C) view, same strides.
TensorView slice_rows(const TensorView& x, std::int64_t row, std::int64_t rows) {
    const std::int64_t shape[] = {rows, x.shape(1)};
    const std::int64_t strides[] = {x.stride(0), x.stride(1)};
    auto* p = static_cast<unsigned char*>(x.data()) + row * x.stride(0) * std::int64_t(size_of(x.dtype()));
    return TensorView(p, x.dtype(), shape, strides);
}

/// Matrix g of a (G, R, C) view.
TensorView matrix_view(const TensorView& x, std::int64_t g) {
    const std::int64_t shape[] = {x.shape(1), x.shape(2)};
    const std::int64_t strides[] = {x.stride(1), x.stride(2)};
    auto* p = static_cast<unsigned char*>(x.data()) + g * x.stride(0) * std::int64_t(size_of(x.dtype()));
    return TensorView(p, x.dtype(), shape, strides);
}

/// Skips the test, with the reason, unless the device runs the Hopper grouped kernel (compute
/// capability 9.0 exactly: it is compiled for sm_90a).
#define REQUIRE_HOPPER_GROUPED_KERNEL()                                                                             \
    do {                                                                                                            \
        GPUMATH_REQUIRE_GPU();                                                                                      \
        const auto cc = core::Device::current().compute_capability();                                               \
        if (cc.major != 9 || cc.minor != 0)                                                                         \
            GTEST_SKIP() << "the Hopper grouped kernel runs on compute capability 9.0; this device is " << cc.major \
                         << "." << cc.minor;                                                                        \
    } while (0)

/// Every epilog of a grouped product but none.
constexpr Epilog grouped_epilogs[] = {Epilog::relu,      Epilog::gelu,      Epilog::silu,     Epilog::bias,
                                      Epilog::relu_bias, Epilog::gelu_bias, Epilog::silu_bias};

struct Case {
    DataType input = DataType::bf16;
    DataType result = DataType::bf16;
    std::vector<std::int64_t> sizes;
    std::int64_t k = 64, n = 96;
    bool b_col = false;  // column-major weights
    bool d_col = false;  // column-major D
    Epilog epilog = Epilog::none;
    Scalar alpha = 1.0;

    [[nodiscard]] std::int64_t rows() const {
        std::int64_t t = 0;
        for (std::int64_t m : sizes) t += m;
        return t;
    }
    [[nodiscard]] std::string describe() const {
        std::string s(to_string(input));
        s.append(" -> ").append(to_string(result));
        s.append(" K=").append(std::to_string(k)).append(" N=").append(std::to_string(n)).append(" sizes");
        for (std::int64_t m : sizes) s.append(" ").append(std::to_string(m));
        s.append(b_col ? ", column-major B" : ", row-major B").append(d_col ? ", column-major D" : ", row-major D");
        s.append(", epilog ").append(to_string(epilog));
        return s;
    }
};

/// Inputs on the host and the device, and the expected D (T, N) in double.
struct Prepared {
    Host a, b, bias, want;
    Dev da, db, dbias;
};

/// The reference D (T, N) of `c` for host inputs a (T, K), b (G, K, N) and a (G, N) bias.
Host expected(const Case& c, const Host& a, const Host& b, const Host& bias) {
    Host want(c.result, {c.rows(), c.n});
    std::int64_t row = 0;
    for (std::size_t g = 0; g < c.sizes.size(); ++g) {
        const std::int64_t M = c.sizes[g];
        if (M == 0) continue;
        const Host ag = rows_of(a, row, M), bg = matrix_of(b, std::int64_t(g));
        const Host biasg = epilog_takes_bias(c.epilog) ? bias_of(bias, std::int64_t(g)) : Host{};
        const RefResult r = reference(ag, bg, c.result,
                                      {.alpha = cd(c.alpha.real, c.alpha.imag),
                                       .bias = epilog_takes_bias(c.epilog) ? &biasg : nullptr,
                                       .epilog = c.epilog});
        for (std::int64_t i = 0; i < M * c.n; ++i) want.v[std::size_t(row * c.n + i)] = r.d.v[std::size_t(i)];
        row += M;
    }
    return want;
}

Prepared prepare(const Case& c, core::StreamRef stream = {}) {
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t G = std::int64_t(c.sizes.size()), T = c.rows();
    Prepared p;
    p.a = random_host(c.input, {T, c.k}, rng);
    p.b = random_host(c.input, {G, c.k, c.n}, rng);
    p.da = upload(p.a, {}, 0, stream);
    p.db = upload(p.b, strides_for(p.b.shape, c.b_col), 0, stream);
    if (epilog_takes_bias(c.epilog)) {
        p.bias = random_host(c.result, {G, c.n}, rng);
        p.dbias = upload(p.bias, {}, 0, stream);
    }
    p.want = expected(c, p.a, p.b, p.bias);
    return p;
}

/// D (T, N) with one extra poisoned row after the last when row-major (no group may write it).
struct Output {
    Dev storage;
    TensorView view;
};

Output output(const Case& c, core::StreamRef stream = {}) {
    const std::int64_t T = c.rows();
    Output o;
    if (c.d_col) {
        o.storage = poisoned(c.result, {T, c.n}, strides_for({T, c.n}, true), 0, stream);
        o.view = o.storage.view;
    } else {
        o.storage = poisoned(c.result, {T + 1, c.n}, {}, 0, stream);
        o.view = slice_rows(o.storage.view, 0, T);
    }
    return o;
}

void expect_result(const Case& c, const Output& o, const Host& want, const std::string& path,
                   core::StreamRef stream = {}) {
    SCOPED_TRACE(path);
    const Host got = download(o.view, stream);
    const double err = relative_error(got, want);
    const double tol = tolerance(c.input, c.result);
    EXPECT_LE(err, tol) << "relative error " << err << worst_elements(got, want);
    if (!c.d_col) {
        const Host guard = download(slice_rows(o.storage.view, c.rows(), 1), stream);
        for (const cd& x : guard.v) ASSERT_TRUE(std::isnan(x.real())) << "a row past the last group was written";
    }
}

/// The G per-group views of a mixture-of-experts problem.
struct GroupViews {
    std::vector<TensorView> a, b, d;
};

GroupViews group_views(const Case& c, const Prepared& p, const TensorView& d) {
    GroupViews v;
    std::int64_t row = 0;
    for (std::size_t g = 0; g < c.sizes.size(); ++g) {
        const std::int64_t M = c.sizes[g];
        v.a.push_back(slice_rows(p.da.view, row, M));
        v.b.push_back(matrix_view(p.db.view, std::int64_t(g)));
        v.d.push_back(slice_rows(d, row, M));
        row += M;
    }
    return v;
}

/// Runs the case through all four entry points (stateless and GroupedMatmul, both forms), each into
/// freshly poisoned outputs, and compares each with the reference.
void expect_case(const Case& c) {
    SCOPED_TRACE(c.describe());
    const Prepared p = prepare(c);
    const MatmulOptions options{.epilog = c.epilog, .result_type = c.result};
    GroupedMatmulArgs args{.alpha = c.alpha};
    if (epilog_takes_bias(c.epilog)) args.bias = p.dbias.view;
    {
        const Output o = output(c);
        grouped_matmul(p.da.view, p.db.view, o.view, c.sizes, args, options);
        expect_result(c, o, p.want, "grouped_matmul, mixture-of-experts form");
    }
    {
        const Output o = output(c);
        GroupedMatmul mm(p.da.view, p.db.view, c.sizes, options);
        mm.execute(p.da.view, p.db.view, o.view, c.sizes, args);
        expect_result(c, o, p.want, "GroupedMatmul, mixture-of-experts form");
    }
    {
        const Output o = output(c);
        const GroupViews v = group_views(c, p, o.view);
        grouped_matmul(v.a, v.b, v.d, args, options);
        expect_result(c, o, p.want, "grouped_matmul, per-group views");
    }
    {
        const Output o = output(c);
        const GroupViews v = group_views(c, p, o.view);
        const std::vector<TensorLayout> al(v.a.begin(), v.a.end()), bl(v.b.begin(), v.b.end());
        GroupedMatmul mm(al, bl, options);
        mm.plan();
        mm.execute(v.a, v.b, v.d, args);
        expect_result(c, o, p.want, "GroupedMatmul, per-group views");
    }
}

/// The sizes of `sizes` as a device (G,) i32 tensor.
Dev device_sizes(const std::vector<std::int64_t>& sizes, core::StreamRef stream = {}) {
    Host h(DataType::i32, {std::int64_t(sizes.size())});
    for (std::size_t g = 0; g < sizes.size(); ++g) h.v[g] = cd(double(sizes[g]));
    return upload(h, {}, 0, stream);
}

/// Sets every byte of `v` to 0xFF (NaN in every float type) on `stream`.
void poison_bytes(const TensorView& v, core::StreamRef stream) {
    ASSERT_EQ(cudaMemsetAsync(v.data(), 0xFF, std::size_t(v.span_bytes()), stream.handle()), cudaSuccess);
}

/// After run_on_threads: no thread threw, and `same(call)` holds for every call of every thread
/// (`work[t]` lists thread t's calls).
template <class Work, class Same>
void expect_threads_match(const std::vector<std::string>& errors, const Work& work, Same same) {
    for (std::size_t t = 0; t < work.size(); ++t) {
        ASSERT_TRUE(errors[t].empty()) << "thread " << t << ": " << errors[t];
        for (std::size_t i = 0; i < work[t].size(); ++i) {
            SCOPED_TRACE("thread " + std::to_string(t) + " call " + std::to_string(i));
            same(work[t][i]);
        }
    }
}

/// The case with group sizes in device memory, through grouped_matmul() and GroupedMatmul. With
/// `unused_rows` > 0 the device sizes give the last group that many rows fewer than `c.sizes` does:
/// the bound (A's rows) then exceeds the sizes' sum, and those rows of D must stay poisoned.
void expect_device_case(const Case& c, std::int64_t unused_rows = 0) {
    std::string trace = c.describe();
    trace.append(", device sizes, ").append(std::to_string(unused_rows)).append(" rows past the sizes' sum");
    SCOPED_TRACE(trace);
    const Prepared p = prepare(c);
    std::vector<std::int64_t> sizes = c.sizes;
    sizes.back() -= unused_rows;
    const Dev ds = device_sizes(sizes);
    const std::int64_t T = c.rows(), used = T - unused_rows;
    const MatmulOptions options{.epilog = c.epilog, .result_type = c.result};
    GroupedMatmulArgs args{.alpha = c.alpha};
    if (epilog_takes_bias(c.epilog)) args.bias = p.dbias.view;
    const DeviceGroupSizes dsizes{.sizes = ds.view, .max_total_rows = T};
    for (int path = 0; path < 2; ++path) {
        SCOPED_TRACE(path == 0 ? "grouped_matmul" : "GroupedMatmul");
        const Output o = output(c);
        if (path == 0) {
            grouped_matmul(p.da.view, p.db.view, o.view, dsizes, args, options);
        } else {
            GroupedMatmul mm(p.da.view, p.db.view, c.sizes, options);
            mm.execute(p.da.view, p.db.view, o.view, dsizes, args);
        }
        const Host got = download(slice_rows(o.view, 0, used));
        const Host want = rows_of(p.want, 0, used);
        const double err = relative_error(got, want);
        EXPECT_LE(err, tolerance(c.input, c.result)) << "relative error " << err << worst_elements(got, want);
        if (unused_rows > 0) {
            const Host rest = download(slice_rows(o.view, used, unused_rows));
            for (const cd& x : rest.v) ASSERT_TRUE(std::isnan(x.real())) << "a row past the sizes' sum was written";
        }
    }
}

/// The case through the `kernel` backend (host sizes in the launch): GroupedMatmul, after plan() on
/// every other path, into freshly poisoned outputs.
void expect_kernel_case(const Case& c) {
    SCOPED_TRACE(c.describe() + ", backend kernel");
    const Prepared p = prepare(c);
    const MatmulOptions options{.epilog = c.epilog, .result_type = c.result};
    GroupedMatmulArgs args{.alpha = c.alpha};
    if (epilog_takes_bias(c.epilog)) args.bias = p.dbias.view;
    for (bool planned : {false, true}) {
        const Output o = output(c);
        GroupedMatmul mm(p.da.view, p.db.view, c.sizes, options, {.backend = GroupedBackend::kernel});
        EXPECT_EQ(mm.backend(), GroupedBackend::kernel);
        if (planned) mm.plan();
        mm.execute(p.da.view, p.db.view, o.view, c.sizes, args);
        expect_result(c, o, p.want, planned ? "planned" : "not planned");
    }
}

}  // namespace

// ---- against the reference ------------------------------------------------------------------------

TEST(GroupedGpu, LoopBf16UnevenGroups) {
    GPUMATH_REQUIRE_GPU();
    for (bool b_col : {false, true}) expect_case({.sizes = {37, 0, 1, 128, 0, 5, 64, 1}, .b_col = b_col});
}

TEST(GroupedGpu, LoopF16AndF32) {
    GPUMATH_REQUIRE_GPU();
    for (bool b_col : {false, true}) {
        expect_case({.input = DataType::f16, .result = DataType::f16, .sizes = {3, 0, 17, 1}, .b_col = b_col});
        expect_case({.input = DataType::f32, .result = DataType::f32, .sizes = {1, 40, 0, 9}, .b_col = b_col});
        expect_case({.input = DataType::bf16, .result = DataType::f32, .sizes = {0, 33, 2}, .b_col = b_col});
    }
}

TEST(GroupedGpu, LoopOddShapesAndAlpha) {
    GPUMATH_REQUIRE_GPU();
    // K and N odd: group offsets leave pointers 2-byte aligned; every group gets a plan for its alignment.
    expect_case({.sizes = {3, 5, 0, 1, 7}, .k = 23, .n = 31, .alpha = 0.5});
    expect_case({.input = DataType::f32, .result = DataType::f32, .sizes = {2, 1, 3}, .k = 9, .n = 5, .b_col = true});
}

TEST(GroupedGpu, LoopColumnMajorD) {
    GPUMATH_REQUIRE_GPU();
    expect_case({.sizes = {12, 0, 1, 30}, .d_col = true});
    expect_case({.sizes = {12, 0, 1, 30}, .b_col = true, .d_col = true, .epilog = Epilog::relu});
}

TEST(GroupedGpu, LoopEpilogs) {
    GPUMATH_REQUIRE_GPU();
    for (Epilog e : grouped_epilogs)
        expect_case({.sizes = {9, 0, 1, 24}, .b_col = e == Epilog::gelu_bias, .epilog = e});
}

TEST(GroupedGpu, AllGroupsEmptyAndOneGroup) {
    GPUMATH_REQUIRE_GPU();
    expect_case({.sizes = {0, 0, 16, 0}});
    expect_case({.sizes = {20}});
    // Nothing to do: no plan, no product, no error.
    const TensorView b(reinterpret_cast<void*>(std::uintptr_t(1) << 20), DataType::bf16, {2, 8, 8});
    const TensorView a(nullptr, DataType::bf16, {0, 8}), d(nullptr, DataType::bf16, {0, 8});
    EXPECT_NO_THROW(grouped_matmul(a, b, d, std::vector<std::int64_t>{0, 0}));
}

TEST(GroupedGpu, EqualSizesRunAsOneStridedBatch) {
    GPUMATH_REQUIRE_GPU();
    // automatic picks the strided-batched product for the mixture-of-experts forms (the per-group
    // forms loop): both against the reference, M = 1 with a bias included.
    for (bool b_col : {false, true}) {
        expect_case({.sizes = {48, 48, 48, 48}, .b_col = b_col, .epilog = Epilog::gelu_bias});
        expect_case({.sizes = {1, 1, 1}, .b_col = b_col, .epilog = Epilog::relu_bias});
        expect_case({.input = DataType::f32, .result = DataType::f32, .sizes = {7, 7}, .b_col = b_col});
    }
    expect_case({.sizes = {16, 16, 16}, .d_col = true, .epilog = Epilog::bias});
    // Asked for explicitly, and against the loop on the same data.
    const Case c{.sizes = {32, 32, 32, 32}, .k = 96, .n = 64, .epilog = Epilog::silu_bias};
    const Prepared p = prepare(c);
    const MatmulOptions options{.epilog = c.epilog};
    const GroupedMatmulArgs args{.bias = p.dbias.view};
    GroupedMatmul batched(p.da.view, p.db.view, c.sizes, options, {.backend = GroupedBackend::strided_batched});
    GroupedMatmul loop(p.da.view, p.db.view, c.sizes, options, {.backend = GroupedBackend::loop});
    batched.plan();
    const Output ob = output(c), ol = output(c);
    batched.execute(p.da.view, p.db.view, ob.view, c.sizes, args);
    loop.execute(p.da.view, p.db.view, ol.view, c.sizes, args);
    expect_result(c, ob, p.want, "strided_batched");
    expect_result(c, ol, p.want, "loop");
}

TEST(GroupedGpu, MatchesPerGroupMatmulBitwise) {
    GPUMATH_REQUIRE_GPU();
    // Each group of the loop is the product matmul() would run: the same plan, so the same bits.
    const Case c{.sizes = {64, 0, 1, 17, 128}, .k = 128, .n = 64, .epilog = Epilog::gelu_bias};
    const Prepared p = prepare(c);
    const Output grouped = output(c), single = output(c);
    GroupedMatmul mm(p.da.view, p.db.view, c.sizes, {.epilog = c.epilog}, {.backend = GroupedBackend::loop});
    mm.execute(p.da.view, p.db.view, grouped.view, c.sizes, {.bias = p.dbias.view});
    const GroupViews v = group_views(c, p, single.view);
    for (std::size_t g = 0; g < c.sizes.size(); ++g) {
        if (c.sizes[g] == 0) continue;
        const std::int64_t shape[] = {c.n}, strides[] = {1};
        const TensorView bias(static_cast<unsigned char*>(p.dbias.view.data()) + std::int64_t(g) * c.n * 2,
                              DataType::bf16, shape, strides);
        matmul(v.a[g], v.b[g], v.d[g], {.bias = bias}, {.epilog = c.epilog});
    }
    EXPECT_EQ(download_bytes(grouped.view), download_bytes(single.view));
}

TEST(GroupedGpu, StatelessSharesMatmulPlanCache) {
    GPUMATH_REQUIRE_GPU();
    // The per-group form: every backend automatic can choose for it runs cuBLASLt plans (the
    // mixture-of-experts form may choose gpumath's grouped kernel, which looks up none).
    const Case c{.sizes = {32, 32, 0, 32}, .k = 64, .n = 32};
    const Prepared p = prepare(c);
    const Output o = output(c);
    const GroupViews v = group_views(c, p, o.view);
    grouped_matmul(v.a, v.b, v.d);  // plans (or finds) the group shape
    matmul_plan_cache().reset_stats();
    grouped_matmul(v.a, v.b, v.d);
    const core::CacheStats s = matmul_plan_cache().stats();
    EXPECT_EQ(s.misses, 0u);
    EXPECT_EQ(s.hits, 3u) << "one lookup per non-empty group";
    expect_result(c, o, p.want, "second call");
}

// ---- the streams backend and automatic's measured choice -------------------------------------------

TEST(GroupedGpu, StreamsBackendMatchesReferenceAndLoopBitwise) {
    GPUMATH_REQUIRE_GPU();
    // The same plans on side streams: the loop's bits, in both forms, whatever the stream of a group.
    for (bool b_col : {false, true}) {
        const Case c{
            .sizes = {12, 0, 1, 30, 5, 64, 3, 17}, .k = 96, .n = 80, .b_col = b_col, .epilog = Epilog::gelu_bias};
        SCOPED_TRACE(c.describe());
        const Prepared p = prepare(c);
        const MatmulOptions options{.epilog = c.epilog};
        const GroupedMatmulArgs args{.bias = p.dbias.view};
        GroupedMatmul streams(p.da.view, p.db.view, c.sizes, options, {.backend = GroupedBackend::streams});
        GroupedMatmul loop(p.da.view, p.db.view, c.sizes, options, {.backend = GroupedBackend::loop});
        EXPECT_EQ(streams.backend(), GroupedBackend::streams);
        const Output os = output(c), ol = output(c), ov = output(c);
        streams.execute(p.da.view, p.db.view, os.view, c.sizes, args);
        loop.execute(p.da.view, p.db.view, ol.view, c.sizes, args);
        expect_result(c, os, p.want, "streams");
        EXPECT_EQ(download_bytes(os.view), download_bytes(ol.view)) << "streams == loop, bitwise";
        const GroupViews v = group_views(c, p, ov.view);
        const std::vector<TensorLayout> al(v.a.begin(), v.a.end()), bl(v.b.begin(), v.b.end());
        GroupedMatmul per_group(al, bl, options, {.backend = GroupedBackend::streams});
        per_group.execute(v.a, v.b, v.d, args);
        expect_result(c, ov, p.want, "streams, per-group views");
        EXPECT_EQ(download_bytes(ov.view), download_bytes(ol.view));
    }
}

TEST(GroupedGpu, StreamsPartitionedBackendAgainstReference) {
    GPUMATH_REQUIRE_GPU();
    // Plans of their own (cuBLASLt's SM count target set to a share of the device): other
    // algorithms than the loop's, the same product. Both forms, captured and replayed too.
    for (bool d_col : {false, true}) {
        const Case c{.sizes = {12, 0, 1, 30, 5, 64, 3, 17},
                     .k = 96,
                     .n = 80,
                     .b_col = true,
                     .d_col = d_col,
                     .epilog = Epilog::gelu_bias};
        SCOPED_TRACE(c.describe());
        const Prepared p = prepare(c);
        const MatmulOptions options{.epilog = c.epilog};
        const GroupedMatmulArgs args{.bias = p.dbias.view};
        const GroupedOptions partitioned{.backend = GroupedBackend::streams_partitioned};
        GroupedMatmul mm(p.da.view, p.db.view, c.sizes, options, partitioned);
        const Output o = output(c), ov = output(c), graph = output(c);
        mm.execute(p.da.view, p.db.view, o.view, c.sizes, args);
        expect_result(c, o, p.want, "streams_partitioned");
        const GroupViews v = group_views(c, p, ov.view);
        const std::vector<TensorLayout> al(v.a.begin(), v.a.end()), bl(v.b.begin(), v.b.end());
        GroupedMatmul per_group(al, bl, options, partitioned);
        per_group.execute(v.a, v.b, v.d, args);
        expect_result(c, ov, p.want, "streams_partitioned, per-group views");
        core::Stream stream;
        core::Graph g = core::Graph::capture(
            stream, [&](core::StreamRef s) { mm.execute(p.da.view, p.db.view, graph.view, c.sizes, args, s); });
        g.launch(stream);
        stream.synchronize();
        EXPECT_EQ(download_bytes(graph.view), download_bytes(o.view)) << "replay == eager, bitwise";
    }
}

TEST(GroupedGpu, StreamsBackendOrdersLaterWorkOnTheCallersStream) {
    GPUMATH_REQUIRE_GPU();
    // Work enqueued on the caller's stream after the call sees every group's rows: a copy of D right
    // after the call, with no synchronization in between, holds the whole result.
    const Case c{.sizes = {200, 3, 0, 150, 1, 90}, .k = 256, .n = 192};
    core::Stream stream;
    const Prepared p = prepare(c, stream);
    const Output o = output(c, stream), copy = output(c, stream);
    GroupedMatmul mm(p.da.view, p.db.view, c.sizes, {}, {.backend = GroupedBackend::streams});
    mm.plan();
    stream.synchronize();
    for (int round = 0; round < 3; ++round) {
        mm.execute(p.da.view, p.db.view, o.view, c.sizes, {}, stream);
        ASSERT_EQ(cudaMemcpyAsync(copy.view.data(), o.view.data(), std::size_t(o.view.span_bytes()),
                                  cudaMemcpyDeviceToDevice, stream.handle()),
                  cudaSuccess);
    }
    expect_result(c, copy, p.want, "copied after the call", stream);
}

TEST(GroupedGpu, AutomaticMeasuresOnceAndComputesTheProduct) {
    GPUMATH_REQUIRE_GPU();
    // The first call of a class measures loop against streams on the caller's operands (its D is the
    // product); later calls reuse the choice, with the same bits.
    const Case c{.sizes = {40, 2, 0, 9, 33}, .k = 128, .n = 64, .epilog = Epilog::relu_bias};
    const Prepared p = prepare(c);
    const MatmulOptions options{.epilog = c.epilog};
    const GroupedMatmulArgs args{.bias = p.dbias.view};
    GroupedMatmul mm(p.da.view, p.db.view, c.sizes, options);
    EXPECT_EQ(mm.backend(), GroupedBackend::automatic);
    const Output first = output(c), second = output(c), stateless = output(c);
    mm.execute(p.da.view, p.db.view, first.view, c.sizes, args);
    expect_result(c, first, p.want, "measured call");
    mm.execute(p.da.view, p.db.view, second.view, c.sizes, args);
    EXPECT_EQ(download_bytes(second.view), download_bytes(first.view));
    // The stateless call measures its own choice (process-wide), which may be another backend.
    grouped_matmul(p.da.view, p.db.view, stateless.view, c.sizes, args, options);
    expect_result(c, stateless, p.want, "stateless call");
}

TEST(GroupedGpu, AutomaticRunsWhatItChoseOnLaterCalls) {
    GPUMATH_REQUIRE_GPU();
    // Whatever automatic measured fastest (the grouped kernel among the candidates here: bf16,
    // aligned, host sizes), later calls of the class run it: bitwise the same D as the measured call,
    // and as the chosen backend run explicitly. The log names the choice; the explicit run of each
    // backend that could have been chosen tells which one matched.
    const Case c{.sizes = {33, 0, 1, 70, 5, 19}, .k = 256, .n = 192, .epilog = Epilog::silu_bias};
    const Prepared p = prepare(c);
    const MatmulOptions options{.epilog = c.epilog};
    const GroupedMatmulArgs args{.bias = p.dbias.view};
    GroupedMatmul mm(p.da.view, p.db.view, c.sizes, options);
    const Output measured = output(c), later = output(c);
    mm.execute(p.da.view, p.db.view, measured.view, c.sizes, args);
    expect_result(c, measured, p.want, "measured call");
    mm.execute(p.da.view, p.db.view, later.view, c.sizes, args);
    const std::vector<unsigned char> bits = download_bytes(measured.view);
    EXPECT_EQ(download_bytes(later.view), bits);
    int matching = 0;
    for (GroupedBackend b : {GroupedBackend::loop, GroupedBackend::streams_partitioned, GroupedBackend::kernel}) {
        const Output o = output(c);
        GroupedMatmul explicit_backend(p.da.view, p.db.view, c.sizes, options, {.backend = b});
        explicit_backend.execute(p.da.view, p.db.view, o.view, c.sizes, args);
        if (download_bytes(o.view) == bits) ++matching;
    }
    EXPECT_GE(matching, 1) << "the measured call's D is no backend's D";
}

TEST(GroupedGpu, StreamsBackendCapturedWhileOtherCallsRunEagerly) {
    GPUMATH_REQUIRE_GPU();
    // The capture takes a set of side streams into the graph; an eager call on another stream in the
    // middle of the capture must get other side streams (enqueuing on a capturing one would break
    // the capture or put eager work into the graph).
    const Case c{.sizes = {24, 0, 1, 40, 7, 12}, .b_col = true, .epilog = Epilog::bias};
    core::Stream stream, other;
    const Prepared p = prepare(c, stream);
    const GroupedMatmulArgs args{.bias = p.dbias.view};
    const MatmulOptions options{.epilog = c.epilog};
    GroupedMatmul mm(p.da.view, p.db.view, c.sizes, options, {.backend = GroupedBackend::streams});
    mm.plan();
    const Output graph = output(c, stream), eager = output(c, stream), during = output(c, stream);
    stream.synchronize();
    core::Graph g = core::Graph::capture(stream, [&](core::StreamRef s) {
        mm.execute(p.da.view, p.db.view, graph.view, c.sizes, args, s);
        mm.execute(p.da.view, p.db.view, during.view, c.sizes, args, other);
    });
    other.synchronize();
    expect_result(c, during, p.want, "eager call during the capture", other);
    EXPECT_TRUE(std::isnan(download(graph.view, stream).v[0].real())) << "nothing ran during the capture";
    for (int replay = 0; replay < 3; ++replay) g.launch(stream);
    mm.execute(p.da.view, p.db.view, eager.view, c.sizes, args, stream);
    stream.synchronize();
    expect_result(c, graph, p.want, "replayed", stream);
    EXPECT_EQ(download_bytes(graph.view, stream), download_bytes(eager.view, stream)) << "replay == eager, bitwise";
}

// ---- the cublas backend (cublasGemmGroupedBatchedEx) ----------------------------------------------

/// `c` through GroupedMatmul with the cublas backend, both forms, against the reference.
void expect_cublas_case(const Case& c) {
    SCOPED_TRACE(c.describe() + ", cublas backend");
    const Prepared p = prepare(c);
    const MatmulOptions options{.result_type = c.result};
    const GroupedMatmulArgs args{.alpha = c.alpha};
    const GroupedOptions cublas{.backend = GroupedBackend::cublas};
    {
        const Output o = output(c);
        GroupedMatmul mm(p.da.view, p.db.view, c.sizes, options, cublas);
        mm.execute(p.da.view, p.db.view, o.view, c.sizes, args);
        expect_result(c, o, p.want, "mixture-of-experts form");
    }
    {
        const Output o = output(c);
        const GroupViews v = group_views(c, p, o.view);
        const std::vector<TensorLayout> al(v.a.begin(), v.a.end()), bl(v.b.begin(), v.b.end());
        GroupedMatmul mm(al, bl, options, cublas);
        mm.execute(v.a, v.b, v.d, args);
        expect_result(c, o, p.want, "per-group views");
    }
}

TEST(GroupedGpu, CublasBackendAgainstReference) {
    GPUMATH_REQUIRE_GPU();
    expect_cublas_case({.sizes = {12, 0, 1, 30, 5}});
    expect_cublas_case({.sizes = {12, 0, 1, 30, 5}, .b_col = true, .alpha = 0.75});
    expect_cublas_case({.sizes = {9, 1, 0, 24}, .d_col = true});
    expect_cublas_case({.sizes = {9, 1, 0, 24}, .b_col = true, .d_col = true});
    expect_cublas_case({.sizes = {7, 0, 16}, .k = 72, .n = 40});
    expect_cublas_case({.input = DataType::f16, .result = DataType::f16, .sizes = {3, 17, 0, 1}});
    expect_cublas_case({.input = DataType::f32, .result = DataType::f32, .sizes = {5, 0, 33}, .k = 40, .n = 24});
}

TEST(GroupedGpu, CublasBackendMoreGroupsThanOneCallTakes) {
    GPUMATH_REQUIRE_GPU();
    // 300 groups: three cublasGemmGroupedBatchedEx calls of up to 128 groups, pointer arrays written
    // in chunks; sizes 0 to 3 rows.
    std::vector<std::int64_t> sizes(300);
    for (std::size_t g = 0; g < sizes.size(); ++g) sizes[g] = std::int64_t((g * 7) % 4);
    expect_cublas_case({.sizes = sizes, .k = 32, .n = 48});
}

TEST(GroupedGpu, CublasBackendRefusesWhatItCannotRun) {
    GPUMATH_REQUIRE_GPU();
    // A compute type outside f32's, and bf16 into f32 (which cuBLAS refuses): NotSupported at
    // execute, before any GPU work (D stays poisoned). automatic leaves cublas out of its measurement.
    const Case c{.input = DataType::f16, .result = DataType::f16, .sizes = {4, 2}};
    const Prepared p = prepare(c);
    const Output o = output(c);
    GroupedMatmul mm(p.da.view, p.db.view, c.sizes, {.compute_type = ComputeType::f16},
                     {.backend = GroupedBackend::cublas});
    EXPECT_THROW(mm.execute(p.da.view, p.db.view, o.view, c.sizes), NotSupported);
    EXPECT_TRUE(std::isnan(download(o.view).v[0].real())) << "nothing ran";
    const Case wide{.result = DataType::f32, .sizes = {7, 0, 16}};
    const Prepared pw = prepare(wide);
    const Output ow = output(wide), oa = output(wide);
    const MatmulOptions to_f32{.result_type = DataType::f32};
    GroupedMatmul refused(pw.da.view, pw.db.view, wide.sizes, to_f32, {.backend = GroupedBackend::cublas});
    EXPECT_THROW(refused.execute(pw.da.view, pw.db.view, ow.view, wide.sizes), NotSupported);
    EXPECT_TRUE(std::isnan(download(ow.view).v[0].real())) << "nothing ran";
    GroupedMatmul automatic(pw.da.view, pw.db.view, wide.sizes, to_f32);
    automatic.execute(pw.da.view, pw.db.view, oa.view, wide.sizes);
    expect_result(wide, oa, pw.want, "automatic, bf16 -> f32");
}

TEST(GroupedGpu, CublasBackendCapturedAndReplayed) {
    GPUMATH_REQUIRE_GPU();
    const Case c{.sizes = {24, 0, 1, 40, 7}, .b_col = true};
    core::Stream stream;
    const Prepared p = prepare(c, stream);
    GroupedMatmul mm(p.da.view, p.db.view, c.sizes, {}, {.backend = GroupedBackend::cublas});
    mm.plan();
    const Output graph = output(c, stream), eager = output(c, stream);
    mm.execute(p.da.view, p.db.view, eager.view, c.sizes, {}, stream);  // cuBLAS's handle made outside
    stream.synchronize();
    core::Graph g = core::Graph::capture(
        stream, [&](core::StreamRef s) { mm.execute(p.da.view, p.db.view, graph.view, c.sizes, {}, s); });
    EXPECT_TRUE(std::isnan(download(graph.view, stream).v[0].real())) << "nothing ran during the capture";
    for (int replay = 0; replay < 3; ++replay) g.launch(stream);
    stream.synchronize();
    expect_result(c, graph, p.want, "replayed", stream);
    EXPECT_EQ(download_bytes(graph.view, stream), download_bytes(eager.view, stream)) << "replay == eager, bitwise";
}

TEST(GroupedGpu, CublasBackendLeasesFromTheOptionsMemoryResourceWithinTheLimit) {
    // The cublas backend took its 32 MiB from the device's default pool whatever the options said.
    GPUMATH_REQUIRE_GPU();
    const Case c{.sizes = {24, 0, 1, 40, 7}};
    core::Stream stream;
    const Prepared p = prepare(c, stream);
    auto pool = std::make_shared<core::DeviceMemoryResource>();
    auto small = std::make_shared<core::DeviceMemoryResource>();
    GroupedMatmul full(p.da.view, p.db.view, c.sizes, {.memory_resource = pool}, {.backend = GroupedBackend::cublas});
    GroupedMatmul none(p.da.view, p.db.view, c.sizes, {.workspace_limit = 0, .memory_resource = small},
                       {.backend = GroupedBackend::cublas});
    const Output a = output(c, stream), b = output(c, stream);
    full.execute(p.da.view, p.db.view, a.view, c.sizes, {}, stream);
    none.execute(p.da.view, p.db.view, b.view, c.sizes, {}, stream);
    stream.synchronize();
    expect_result(c, a, p.want, "cublas, own memory resource", stream);
    expect_result(c, b, p.want, "cublas, no workspace", stream);
    EXPECT_GE(pool->used_bytes(), std::size_t(32) << 20) << "cuBLAS's workspace came from the options' resource";
    EXPECT_GT(small->used_bytes(), 0u) << "the pointer arrays came from the options' resource";
    EXPECT_LT(small->used_bytes(), std::size_t(32) << 20) << "workspace_limit 0: no cuBLAS workspace";
}

// ---- graph capture -------------------------------------------------------------------------------

TEST(GroupedGpu, CapturedAndReplayedLikeEagerCalls) {
    GPUMATH_REQUIRE_GPU();
    const Case c{.sizes = {24, 0, 1, 40, 7}, .b_col = true, .epilog = Epilog::relu_bias};
    core::Stream stream;
    const Prepared p = prepare(c, stream);
    const Output eager = output(c, stream), graph = output(c, stream), stateless = output(c, stream);
    const GroupedMatmulArgs args{.bias = p.dbias.view};
    const MatmulOptions options{.epilog = c.epilog};
    GroupedMatmul planned(p.da.view, p.db.view, c.sizes, options);
    planned.plan();
    // Other sizes than planned: the plans for them are made inside the capture, which allocates nothing.
    const std::vector<std::int64_t> other{7, 1, 24, 0, 40};
    const Output graph_other = output(c, stream), eager_other = output(c, stream);
    stream.synchronize();
    core::Graph g = core::Graph::capture(stream, [&](core::StreamRef s) {
        planned.execute(p.da.view, p.db.view, graph.view, c.sizes, args, s);
        planned.execute(p.da.view, p.db.view, graph_other.view, other, args, s);
        grouped_matmul(p.da.view, p.db.view, stateless.view, c.sizes, args, options, s);
    });
    EXPECT_TRUE(std::isnan(download(graph.view, stream).v[0].real())) << "nothing ran during the capture";
    for (int replay = 0; replay < 3; ++replay) g.launch(stream);
    planned.execute(p.da.view, p.db.view, eager.view, c.sizes, args, stream);
    planned.execute(p.da.view, p.db.view, eager_other.view, other, args, stream);
    stream.synchronize();
    expect_result(c, graph, p.want, "replayed", stream);
    EXPECT_EQ(download_bytes(graph.view, stream), download_bytes(eager.view, stream)) << "replay == eager, bitwise";
    EXPECT_EQ(download_bytes(stateless.view, stream), download_bytes(eager.view, stream));
    EXPECT_EQ(download_bytes(graph_other.view, stream), download_bytes(eager_other.view, stream));
}

// ---- group sizes in device memory: gpumath's grouped kernel ---------------------------------------

TEST(GroupedGpu, DeviceSizesAgainstReference) {
    GPUMATH_REQUIRE_GPU();
    for (bool b_col : {false, true}) {
        expect_device_case({.sizes = {37, 0, 1, 128, 0, 5, 64, 1}, .b_col = b_col});
        expect_device_case({.input = DataType::f16, .result = DataType::f32, .sizes = {3, 0, 17, 1}, .b_col = b_col});
        expect_device_case({.input = DataType::f32, .result = DataType::f32, .sizes = {1, 70, 0, 9}, .b_col = b_col});
    }
    // Several K steps, column tiles and row tiles per group (the tensor-core kernel's 128 x 128
    // tiles, 16-byte loads of A and row-major weights, element loads of column-major ones).
    for (bool b_col : {false, true})
        expect_device_case(
            {.sizes = {130, 0, 257, 3}, .k = 264, .n = 392, .b_col = b_col, .epilog = Epilog::gelu_bias});
    // On compute capability 9.0 the warpgroup-MMA kernel runs these (16-byte aligned, K and N
    // multiples of 8): many K steps through its stages, a last partial step, fewer steps than it
    // prefetches, and N ending inside a 64-column block.
    for (bool b_col : {false, true}) {
        expect_device_case({.sizes = {300, 0, 129, 1, 64}, .k = 1024, .n = 384, .b_col = b_col});
        expect_device_case({.input = DataType::f16,
                            .result = DataType::f32,
                            .sizes = {5, 131, 0, 2},
                            .k = 200,
                            .n = 200,
                            .b_col = b_col});
        expect_device_case({.sizes = {1, 17, 0}, .k = 8, .n = 8, .b_col = b_col, .alpha = -2.0});
        // Enough rows and columns for 256 columns per block (two waves of such blocks on a 132-SM
        // H200: 33 row tiles x 8 column tiles).
        expect_device_case({.sizes = {2000, 0, 1, 2223}, .k = 32, .n = 2048, .b_col = b_col});
    }
    // Odd K and N (partial tiles everywhere), alpha, column-major D: K % 8 != 0, so the portable
    // kernel runs this one on Hopper too.
    expect_device_case({.sizes = {3, 5, 0, 1, 7}, .k = 23, .n = 31, .alpha = 0.5});
    expect_device_case({.sizes = {12, 0, 1, 30}, .b_col = true, .d_col = true});
}

TEST(GroupedGpu, DeviceSizesRunTheHopperKernelOnHopper) {
    REQUIRE_HOPPER_GROUPED_KERNEL();
    // The portable kernel computes the same values, so only the count tells which kernel ran: every
    // eligible call (bf16 and f16, both weight layouts, both block widths) must launch the Hopper one.
    const std::uint64_t before = detail::grouped_hopper_launches();
    int calls = 0;
    for (bool b_col : {false, true}) {
        expect_device_case({.sizes = {300, 0, 129, 1, 64}, .k = 1024, .n = 384, .b_col = b_col});
        expect_device_case({.input = DataType::f16,
                            .result = DataType::f32,
                            .sizes = {5, 131},
                            .k = 200,
                            .n = 200,
                            .b_col = b_col,
                            .epilog = Epilog::silu_bias});
        expect_device_case({.sizes = {2000, 0, 1, 2223}, .k = 32, .n = 2048, .b_col = b_col});
        calls += 6;  // three cases, each through grouped_matmul and GroupedMatmul
    }
    EXPECT_EQ(detail::grouped_hopper_launches() - before, std::uint64_t(calls));
}

namespace {

// 41 groups, most of them of a few rows (a partial tile each), one of 300 (full 128-row tiles), 3 K
// steps (the last partial) so that the stages' phases run on across tiles out of step with them,
// and `n` columns: enough tiles for persistent blocks on an H200.
Case many_tiles_case(std::int64_t n) {
    Case c{.sizes = {300}, .k = 136, .n = n};
    for (int g = 0; g < 40; ++g) c.sizes.push_back(g % 5 == 0 ? 0 : (g * 37) % 61 + 1);
    return c;
}

// `c` with row-major weights and no epilog, then column-major weights and gelu_bias, each through
// the device-sizes calls and the kernel backend: eight calls of the kernel.
void expect_both_weight_layouts(Case c) {
    for (bool b_col : {false, true}) {
        c.b_col = b_col;
        c.epilog = b_col ? Epilog::gelu_bias : Epilog::none;
        expect_device_case(c);
        expect_kernel_case(c);
    }
}

}  // namespace

TEST(GroupedGpu, HopperKernelPersistentBlocksTakeManyTiles) {
    REQUIRE_HOPPER_GROUPED_KERNEL();
    // Persistent blocks (one per SM, each taking tile after tile), N ending inside a 64-column
    // block. The host-side bound's tiles must reach the persistent threshold however wide the blocks.
    const Case c = many_tiles_case(2312);
    const std::int64_t tiles =
        detail::grouped_row_tiles(c.rows(), std::int64_t(c.sizes.size()), 128) * ((c.n + 255) / 256);
    ASSERT_GE(tiles, detail::grouped_wgmma_persistent_waves * core::Device::current().multiprocessor_count())
        << "the case no longer makes persistent blocks on this device";
    const std::uint64_t before = detail::grouped_hopper_launches();
    expect_both_weight_layouts(c);
    EXPECT_EQ(detail::grouped_hopper_launches() - before, 8U) << "two layouts, four calls each";
}

TEST(GroupedGpu, HopperKernelClustersOfTwoShareA) {
    REQUIRE_HOPPER_GROUPED_KERNEL();
    // Where the column tiles pair up, clusters of two blocks take a row tile's two adjacent column
    // tiles and each block loads half of A's tile for both (multicast): partial tiles of 1, 17 and
    // 40 rows (one, two and three 16-row boxes, so one block loads more than the other or nothing),
    // full tiles, several K steps, both weight layouts, both block widths, and persistent clusters
    // taking pair after pair (41 groups, N ending inside a 64-column block).
    const int sms = core::Device::current().multiprocessor_count();
    auto cluster_of = [&](const Case& c) {
        detail::GroupedKernelParams params;
        params.n = c.n;
        params.max_rows = c.rows();
        params.groups = std::int64_t(c.sizes.size());
        return detail::grouped_wgmma_cluster(params, detail::grouped_wgmma_columns(params, sms));
    };
    const Case persistent = many_tiles_case(2296);
    const std::int64_t persistent_tiles = detail::grouped_row_tiles(persistent.rows(), 41, 128) * ((2296 + 127) / 128);
    ASSERT_GE(persistent_tiles, detail::grouped_wgmma_persistent_waves * sms)
        << "the last case no longer makes persistent clusters on this device";
    const std::vector<Case> cases = {
        {.sizes = {1, 17, 0, 40, 128, 300}, .k = 200, .n = 256},
        {.sizes = {2000, 0, 1, 2223}, .k = 136, .n = 2048},  // 256 columns per block
        persistent,
    };
    const std::uint64_t before = detail::grouped_hopper_launches();
    for (const Case& c : cases) {
        ASSERT_EQ(cluster_of(c), 2) << c.describe() << ": its column tiles no longer pair up";
        expect_both_weight_layouts(c);
    }
    EXPECT_EQ(detail::grouped_hopper_launches() - before, 24U) << "three cases, eight calls each";
    // An odd number of column tiles: one block per cluster, the same values.
    const Case odd{.sizes = {1, 17, 0, 40, 128}, .k = 200, .n = 384};
    ASSERT_EQ(cluster_of(odd), 1);
    expect_kernel_case(odd);
}

TEST(GroupedGpu, DeviceSizesEpilogs) {
    GPUMATH_REQUIRE_GPU();
    for (Epilog e : grouped_epilogs)
        expect_device_case({.sizes = {9, 0, 1, 70}, .b_col = e == Epilog::gelu_bias, .epilog = e});
}

TEST(GroupedGpu, DeviceSizesBelowTheBound) {
    GPUMATH_REQUIRE_GPU();
    // The router sent fewer tokens than the buffers hold: rows past the sizes' sum are not written.
    expect_device_case({.sizes = {20, 0, 1, 50}}, 30);
    expect_device_case({.sizes = {64, 64}}, 64);
}

TEST(GroupedGpu, DeviceSizesPastTheBoundAreCutAtIt) {
    GPUMATH_REQUIRE_GPU();
    // Sizes summing past max_total_rows: rows at or past the bound are never computed (nor written).
    const Case c{.sizes = {40, 40}, .k = 32, .n = 48};
    const Prepared p = prepare(c);
    const Dev ds = device_sizes({40, 60});
    const Output o = output(c);
    grouped_matmul(p.da.view, p.db.view, o.view, DeviceGroupSizes{.sizes = ds.view, .max_total_rows = 50});
    const Host got = download(slice_rows(o.view, 0, 50));
    const double err = relative_error(got, rows_of(p.want, 0, 50));
    EXPECT_LE(err, tolerance(c.input, c.result)) << "relative error " << err;
    for (const cd& x : download(slice_rows(o.view, 50, 30)).v) ASSERT_TRUE(std::isnan(x.real()));
}

TEST(GroupedGpu, DeviceSizesOutOfRangeAreClampedInsideTheBuffers) {
    GPUMATH_REQUIRE_GPU();
    // Whatever a router writes, the kernel stays inside the operands: a negative size counts as 0 and
    // a size past the bound is cut at it; the rows are summed in 64 bits, so INT32_MAX twice does
    // not wrap. `c.sizes` is what the kernel must compute; the portable kernel (K = 24) and the
    // Hopper one (K = 64), one block and clusters (N = 96 and 256), both weight layouts.
    const std::vector<std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>> cases = {
        {{-5, 40, INT32_MIN, 30, INT32_MAX}, {0, 40, 0, 30, 10}},
        {{INT32_MAX, INT32_MAX, -1}, {80, 0, 0}},
    };
    for (const auto& [written, computed] : cases)
        for (const std::int64_t k : {24, 64})
            for (const std::int64_t n : {96, 256})
                for (bool b_col : {false, true}) {
                    const Case c{.sizes = computed, .k = k, .n = n, .b_col = b_col};
                    const Prepared p = prepare(c);
                    const Dev ds = device_sizes(written);
                    const Output o = output(c);
                    grouped_matmul(p.da.view, p.db.view, o.view,
                                   DeviceGroupSizes{.sizes = ds.view, .max_total_rows = c.rows()});
                    expect_result(c, o, p.want, "sizes as written: " + c.describe());
                }
}

namespace {

/// The two sets of sizes the grouped kernel's capture tests switch between on the same operands
/// (empty groups in both, GELU + bias): the captured call's first, then other sizes.
std::pair<Case, Case> capture_cases() {
    const Case first{.sizes = {24, 0, 1, 40, 7}, .b_col = true, .epilog = Epilog::gelu_bias};
    Case second = first;
    second.sizes = {0, 50, 2, 0, 20};
    return {first, second};
}

}  // namespace

TEST(GroupedGpu, DeviceSizesCapturedAndReplayedWithNewSizes) {
    GPUMATH_REQUIRE_GPU();
    // The point of device sizes: one graph, replayed after the router wrote other sizes.
    const std::pair<Case, Case> cases = capture_cases();
    const Case &first = cases.first, &second = cases.second;
    core::Stream stream;
    const Prepared p = prepare(first, stream);
    const Dev ds = device_sizes(first.sizes, stream);
    const Output o = output(first, stream);
    const GroupedMatmulArgs args{.bias = p.dbias.view};
    GroupedMatmul mm(p.da.view, p.db.view, first.sizes, {.epilog = first.epilog});
    const DeviceGroupSizes dsizes{.sizes = ds.view, .max_total_rows = first.rows()};
    stream.synchronize();
    core::Graph g = core::Graph::capture(stream, [&](core::StreamRef s) {
        mm.execute(p.da.view, p.db.view, o.view, dsizes, args, s);
        grouped_matmul(p.da.view, p.db.view, o.view, dsizes, args, {.epilog = first.epilog}, s);
    });
    EXPECT_TRUE(std::isnan(download(o.view, stream).v[0].real())) << "nothing ran during the capture";
    g.launch(stream);
    expect_result(first, o, p.want, "first sizes", stream);
    // New sizes written on the device (as a router kernel would), D poisoned again, same graph.
    const Dev ds2 = device_sizes(second.sizes, stream);
    ASSERT_EQ(cudaMemcpyAsync(ds.view.data(), ds2.view.data(), 4 * second.sizes.size(), cudaMemcpyDeviceToDevice,
                              stream.handle()),
              cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(o.storage.view.data(), 0xFF, std::size_t(o.storage.view.span_bytes()), stream.handle()),
              cudaSuccess);
    g.launch(stream);
    expect_result(second, o, expected(second, p.a, p.b, p.bias), "second sizes", stream);
}

// ---- host group sizes through gpumath's grouped kernel (the kernel backend) ----------------------

TEST(GroupedGpu, KernelBackendAgainstReference) {
    GPUMATH_REQUIRE_GPU();
    for (bool b_col : {false, true}) {
        expect_kernel_case({.sizes = {37, 0, 1, 128, 0, 5, 64, 1}, .b_col = b_col});
        expect_kernel_case({.input = DataType::f16, .result = DataType::f32, .sizes = {3, 0, 17, 1}, .b_col = b_col});
        expect_kernel_case({.input = DataType::f32, .result = DataType::f32, .sizes = {1, 70, 0, 9}, .b_col = b_col});
        // The Hopper kernel's shapes on compute capability 9.0: many K steps, a partial last one, N
        // ending inside a 64-column block, 256 columns per block.
        expect_kernel_case({.sizes = {300, 0, 129, 1, 64}, .k = 1024, .n = 384, .b_col = b_col, .alpha = -0.5});
        expect_kernel_case({.sizes = {2000, 0, 1, 2223}, .k = 32, .n = 2048, .b_col = b_col});
    }
    // Odd K and N (the portable kernel everywhere), column-major D, one group, all groups empty.
    expect_kernel_case({.sizes = {3, 5, 0, 1, 7}, .k = 23, .n = 31, .alpha = 0.5});
    expect_kernel_case({.sizes = {12, 0, 1, 30}, .b_col = true, .d_col = true});
    expect_kernel_case({.sizes = {45}, .k = 128, .n = 64});
    expect_kernel_case({.sizes = {0, 0, 16, 0}});
    // Nothing to do: no launch, no error.
    const TensorView b(reinterpret_cast<void*>(std::uintptr_t(1) << 20), DataType::bf16, {2, 8, 8});
    const TensorView a(nullptr, DataType::bf16, {0, 8}), d(nullptr, DataType::bf16, {0, 8});
    const std::vector<std::int64_t> none{0, 0};
    GroupedMatmul mm(a, b, none, {}, {.backend = GroupedBackend::kernel});
    EXPECT_NO_THROW(mm.execute(a, b, d, none));
}

TEST(GroupedGpu, KernelBackendEpilogs) {
    GPUMATH_REQUIRE_GPU();
    for (Epilog e : grouped_epilogs)
        expect_kernel_case({.sizes = {9, 0, 1, 70}, .b_col = e == Epilog::gelu_bias, .epilog = e});
}

TEST(GroupedGpu, KernelBackendManyGroups) {
    GPUMATH_REQUIRE_GPU();
    // 512 groups, the most a launch carries, most of them empty or of one row, and the sizes'
    // last entries in use.
    Case c{.sizes = {}, .k = 64, .n = 64};
    for (int g = 0; g < 512; ++g) c.sizes.push_back(g % 7 == 0 ? 3 : (g % 3 == 0 ? 1 : 0));
    c.sizes.back() = 17;
    expect_kernel_case(c);
}

TEST(GroupedGpu, KernelBackendRunsTheHopperKernelOnHopper) {
    REQUIRE_HOPPER_GROUPED_KERNEL();
    const std::uint64_t before = detail::grouped_hopper_launches();
    for (bool b_col : {false, true})
        expect_kernel_case({.sizes = {300, 0, 129, 1, 64}, .k = 1024, .n = 384, .b_col = b_col});
    EXPECT_EQ(detail::grouped_hopper_launches() - before, 4U) << "two cases, each planned and not";
}

TEST(GroupedGpu, KernelBackendCapturedReplaysTheSizesOfItsCapture) {
    GPUMATH_REQUIRE_GPU();
    // Host sizes travel in the launch's parameters: a replay computes the captured sizes, whatever
    // the host array holds by then, and equals the eager call bitwise.
    const std::pair<Case, Case> cases = capture_cases();
    const Case &c = cases.first, &other = cases.second;
    core::Stream stream;
    const Prepared p = prepare(c, stream);
    const GroupedMatmulArgs args{.bias = p.dbias.view};
    const MatmulOptions options{.epilog = c.epilog};
    GroupedMatmul mm(p.da.view, p.db.view, c.sizes, options, {.backend = GroupedBackend::kernel});
    std::vector<std::int64_t> sizes = c.sizes;
    const Output graph = output(c, stream), graph_other = output(c, stream), eager = output(c, stream);
    stream.synchronize();
    core::Graph g = core::Graph::capture(stream, [&](core::StreamRef s) {
        mm.execute(p.da.view, p.db.view, graph.view, sizes, args, s);
        mm.execute(p.da.view, p.db.view, graph_other.view, other.sizes, args, s);
    });
    EXPECT_TRUE(std::isnan(download(graph.view, stream).v[0].real())) << "nothing ran during the capture";
    sizes = other.sizes;  // the host array changes; the graph keeps what it captured
    for (int replay = 0; replay < 2; ++replay) g.launch(stream);
    mm.execute(p.da.view, p.db.view, eager.view, c.sizes, args, stream);
    stream.synchronize();
    expect_result(c, graph, p.want, "replayed", stream);
    expect_result(other, graph_other, expected(other, p.a, p.b, p.bias), "replayed, other sizes", stream);
    EXPECT_EQ(download_bytes(graph.view, stream), download_bytes(eager.view, stream)) << "replay == eager, bitwise";
}

// ---- concurrency ---------------------------------------------------------------------------------

namespace {

/// 8 threads on 4 streams, each running its calls (other sizes per call, so plans are made
/// concurrently) through one shared GroupedMatmul with `backend` and, every other call, the
/// stateless grouped_matmul(); every D must equal the serial run's bitwise.
void expect_concurrent_calls_match_serial(GroupedBackend backend, Epilog epilog) {
    SCOPED_TRACE(std::string("backend ") + std::string(to_string(backend)));
    constexpr int threads = 8, streams_n = 4, calls = 4;
    std::vector<core::Stream> streams;
    for (int i = 0; i < streams_n; ++i) streams.emplace_back();
    // One shared GroupedMatmul; sizes differ by call, so plans are made concurrently.
    const std::vector<std::vector<std::int64_t>> size_sets = {
        {16, 0, 1, 47}, {1, 1, 30, 32}, {0, 64, 0, 0}, {9, 17, 25, 13}};
    const Case c{.sizes = size_sets[0], .k = 96, .n = 80, .epilog = epilog};
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t T = 64;
    const Host a = random_host(c.input, {T, c.k}, rng), b = random_host(c.input, {4, c.k, c.n}, rng);
    const Host bias = random_host(c.input, {4, c.n}, rng);
    const Dev da = upload(a), db = upload(b), dbias = upload(bias);
    GroupedMatmul shared(da.view, db.view, c.sizes, {.epilog = c.epilog}, {.backend = backend});

    struct Call {
        std::size_t sizes = 0;
        bool stateless = false;
        Dev d;
        std::vector<unsigned char> serial;
    };
    std::vector<std::vector<Call>> work(threads);
    for (int t = 0; t < threads; ++t)
        for (int i = 0; i < calls; ++i) {
            Call call;
            call.sizes = std::size_t(t + i) % size_sets.size();
            call.stateless = (t + i) % 2 == 1;
            call.d = poisoned(c.input, {T, c.n});
            work[std::size_t(t)].push_back(std::move(call));
        }
    auto run = [&](const Call& call, core::StreamRef s) {
        GroupedMatmulArgs args;
        if (epilog_takes_bias(c.epilog)) args.bias = dbias.view;
        if (call.stateless)
            grouped_matmul(da.view, db.view, call.d.view, size_sets[call.sizes], args, {.epilog = c.epilog}, s);
        else shared.execute(da.view, db.view, call.d.view, size_sets[call.sizes], args, s);
    };
    for (auto& list : work)
        for (Call& call : list) {
            run(call, streams[0]);
            call.serial = download_bytes(call.d.view, streams[0]);
            poison_bytes(call.d.view, streams[0]);
        }
    streams[0].synchronize();

    const std::vector<std::string> errors =
        gpumath::test::run_on_threads(threads, streams, [&](int t, core::StreamRef s) {
            for (const Call& call : work[std::size_t(t)]) run(call, s);
        });
    expect_threads_match(errors, work, [](const Call& call) {
        EXPECT_TRUE(download_bytes(call.d.view) == call.serial) << "D differs from the serial run";
    });
}

}  // namespace

TEST(GroupedGpu, ConcurrentCallsMatchSerialBitwise) {
    GPUMATH_REQUIRE_GPU();
    expect_concurrent_calls_match_serial(GroupedBackend::automatic, Epilog::gelu_bias);
    // Side-stream sets leased by several threads at once, and the shared cuBLAS handle.
    expect_concurrent_calls_match_serial(GroupedBackend::streams, Epilog::gelu_bias);
    // Launches of the grouped kernel, each with its own sizes, from every thread.
    expect_concurrent_calls_match_serial(GroupedBackend::kernel, Epilog::gelu_bias);
    expect_concurrent_calls_match_serial(GroupedBackend::cublas, Epilog::none);
}

// ---- FP8 with per-group scales --------------------------------------------------------------------

#define REQUIRE_FP8()                                                                              \
    do {                                                                                           \
        if (!device_at_least(8, 9)) GTEST_SKIP() << "FP8 products need compute capability >= 8.9"; \
    } while (0)

namespace {

/// An FP8 mixture-of-experts problem: e4m3 A (T, K) row-major and weights (G, K, N) column-major per
/// expert (cuBLASLt's FP8 layout), per-group f32 scales in [0.25, 2).
struct Fp8Case {
    std::vector<std::int64_t> sizes;
    DataType result = DataType::bf16;
    std::int64_t k = 64, n = 96;
    bool shared_a = false;  // one A scale for every group: a (G,) view of stride 0
    Epilog epilog = Epilog::none;

    [[nodiscard]] std::int64_t rows() const {
        std::int64_t t = 0;
        for (std::int64_t m : sizes) t += m;
        return t;
    }
    [[nodiscard]] std::int64_t groups() const { return std::int64_t(sizes.size()); }
    [[nodiscard]] Case as_case() const {
        return {
            .input = DataType::e4m3, .result = result, .sizes = sizes, .k = k, .n = n, .b_col = true, .epilog = epilog};
    }
};

std::vector<float> random_scales(std::size_t count, std::mt19937_64& rng) {
    std::uniform_real_distribution<float> u(0.25F, 2.0F);
    std::vector<float> s(count);
    for (float& x : s) x = u(rng);
    return s;
}

/// Inputs, scales (host values and device buffers) and the expected D and amax of each group.
struct Fp8Prepared {
    Host a, b, bias, want;
    Dev da, db, dbias;
    std::vector<float> sa, sb, sd;  // sa holds one value when shared
    core::Buffer bsa, bsb, bsd;
    std::vector<double> amax;  // per group; 0 for a group of no rows

    [[nodiscard]] GroupedScales scales(const Fp8Case& c, const TensorView* amax_d = nullptr) const {
        GroupedScales s;
        const std::int64_t G = c.groups();
        const std::int64_t shape[] = {G};
        const std::int64_t shared[] = {0};
        s.a = c.shared_a ? TensorView(bsa.data(), DataType::f32, shape, shared)
                         : TensorView(bsa.data(), DataType::f32, shape);
        s.b = TensorView(bsb.data(), DataType::f32, shape);
        if (is_fp8(c.result)) s.d = TensorView(bsd.data(), DataType::f32, shape);
        if (amax_d != nullptr) s.amax_d = *amax_d;
        return s;
    }
};

/// The expected D and amax for the current scale values.
void fp8_expected(const Fp8Case& c, Fp8Prepared& p) {
    p.want = Host(c.result, {c.rows(), c.n});
    p.amax.assign(c.sizes.size(), 0.0);
    std::int64_t row = 0;
    for (std::size_t g = 0; g < c.sizes.size(); ++g) {
        const std::int64_t M = c.sizes[g];
        if (M == 0) continue;
        const Host ag = rows_of(p.a, row, M), bg = matrix_of(p.b, std::int64_t(g));
        const Host biasg = epilog_takes_bias(c.epilog) ? bias_of(p.bias, std::int64_t(g)) : Host{};
        const double sa = c.shared_a ? p.sa[0] : p.sa[g];
        const RefResult r = reference(ag, bg, c.result,
                                      {.bias = epilog_takes_bias(c.epilog) ? &biasg : nullptr,
                                       .epilog = c.epilog,
                                       .scale_ab = sa * double(p.sb[g]),
                                       .scale_d = is_fp8(c.result) ? double(p.sd[g]) : 1.0});
        for (std::int64_t i = 0; i < M * c.n; ++i) p.want.v[std::size_t(row * c.n + i)] = r.d.v[std::size_t(i)];
        p.amax[g] = r.amax;
        row += M;
    }
}

Fp8Prepared fp8_prepare(const Fp8Case& c, core::StreamRef stream = {}) {
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t G = c.groups(), T = c.rows();
    Fp8Prepared p;
    p.a = random_host(DataType::e4m3, {T, c.k}, rng);
    p.b = random_host(DataType::e4m3, {G, c.k, c.n}, rng);
    p.da = upload(p.a, {}, 0, stream);
    p.db = upload(p.b, strides_for(p.b.shape, true), 0, stream);
    if (epilog_takes_bias(c.epilog)) {
        // cuBLASLt's FP8 bias is bf16 (f16 with an f16 D).
        p.bias = random_host(c.result == DataType::f16 ? DataType::f16 : DataType::bf16, {G, c.n}, rng);
        p.dbias = upload(p.bias, {}, 0, stream);
    }
    p.sa = random_scales(c.shared_a ? 1 : std::size_t(G), rng);
    p.sb = random_scales(std::size_t(G), rng);
    p.sd = random_scales(std::size_t(G), rng);
    p.bsa = core::Buffer::from_host(p.sa, stream);
    p.bsb = core::Buffer::from_host(p.sb, stream);
    p.bsd = core::Buffer::from_host(p.sd, stream);
    fp8_expected(c, p);
    return p;
}

/// A (G,) f32 amax output, poisoned.
Dev poisoned_amax(const Fp8Case& c, core::StreamRef stream = {}) {
    return poisoned(DataType::f32, {c.groups()}, {}, 0, stream);
}

void expect_amax(const Fp8Prepared& p, const Dev& amax, const std::string& path, core::StreamRef stream = {}) {
    SCOPED_TRACE(path);
    const Host got = download(amax.view, stream);
    for (std::size_t g = 0; g < p.amax.size(); ++g)
        EXPECT_NEAR(got.v[g].real(), p.amax[g], 1e-3 * std::max(1.0, p.amax[g])) << "amax of group " << g;
}

/// The case through GroupedMatmul (each backend that runs FP8) and grouped_matmul() in both forms.
void expect_fp8_case(const Fp8Case& c) {
    const Case cc = c.as_case();
    SCOPED_TRACE(cc.describe() + (c.shared_a ? ", one A scale" : ", per-group A scales"));
    const Fp8Prepared p = fp8_prepare(c);
    const MatmulOptions options{.epilog = c.epilog, .result_type = c.result};
    const bool amax = is_fp8(c.result);
    auto args_for = [&](const Dev* amax_d) {
        GroupedMatmulArgs args{.scales = p.scales(c, amax_d ? &amax_d->view : nullptr)};
        if (epilog_takes_bias(c.epilog)) args.bias = p.dbias.view;
        return args;
    };
    for (GroupedBackend backend : {GroupedBackend::loop, GroupedBackend::streams, GroupedBackend::automatic}) {
        const std::string path = std::string("GroupedMatmul, backend ") + std::string(to_string(backend));
        const Output o = output(cc);
        const Dev am = poisoned_amax(c);
        GroupedMatmul mm(p.da.view, p.db.view, c.sizes, options, {.backend = backend});
        mm.plan();
        mm.execute(p.da.view, p.db.view, o.view, c.sizes, args_for(amax ? &am : nullptr));
        expect_result(cc, o, p.want, path);
        if (amax) expect_amax(p, am, path);
    }
    {
        const Output o = output(cc);
        const Dev am = poisoned_amax(c);
        grouped_matmul(p.da.view, p.db.view, o.view, c.sizes, args_for(amax ? &am : nullptr), options);
        expect_result(cc, o, p.want, "grouped_matmul, mixture-of-experts form");
        if (amax) expect_amax(p, am, "grouped_matmul, mixture-of-experts form");
    }
    {
        const Output o = output(cc);
        const Dev am = poisoned_amax(c);
        std::vector<TensorView> a, b, d;
        std::int64_t row = 0;
        for (std::size_t g = 0; g < c.sizes.size(); ++g) {
            a.push_back(slice_rows(p.da.view, row, c.sizes[g]));
            b.push_back(matrix_view(p.db.view, std::int64_t(g)));
            d.push_back(slice_rows(o.view, row, c.sizes[g]));
            row += c.sizes[g];
        }
        grouped_matmul(a, b, d, args_for(amax ? &am : nullptr), options);
        expect_result(cc, o, p.want, "grouped_matmul, per-group views");
        if (amax) expect_amax(p, am, "grouped_matmul, per-group views");
    }
}

}  // namespace

TEST(GroupedGpu, Fp8PerGroupScalesIntoHalfPrecision) {
    GPUMATH_REQUIRE_GPU();
    REQUIRE_FP8();
    // Group sizes that are no multiples of 16 (cuBLASLt's FP8 rule is on N and K with a row-major D).
    expect_fp8_case({.sizes = {37, 0, 1, 64, 19, 128}});
    expect_fp8_case({.sizes = {37, 0, 1, 64, 19, 128}, .shared_a = true});
    expect_fp8_case({.sizes = {5, 48, 0, 3}, .result = DataType::f16, .k = 128, .n = 48});
    expect_fp8_case({.sizes = {5, 48, 0, 3}, .result = DataType::f32, .k = 32, .n = 64});
    expect_fp8_case({.sizes = {21, 0, 33}, .epilog = Epilog::relu_bias});
}

TEST(GroupedGpu, Fp8EqualSizesWithABiasPlanTheirStridedBatch) {
    GPUMATH_REQUIRE_GPU();
    REQUIRE_FP8();
    // plan() plans equal sizes as one strided batch whose bias it names itself: bf16 for an f32 or
    // FP8 result (it named the result type, which cuBLASLt's FP8 table refuses as a bias).
    expect_fp8_case({.sizes = {32, 32, 32}, .result = DataType::f32, .epilog = Epilog::bias});
    expect_fp8_case({.sizes = {16, 16}, .result = DataType::e4m3, .epilog = Epilog::relu_bias});
}

TEST(GroupedGpu, Fp8ResultWithPerGroupScaleAndAmax) {
    GPUMATH_REQUIRE_GPU();
    REQUIRE_FP8();
    // D scales per group, and each group's max |D| before its scale (0 for the empty group).
    expect_fp8_case({.sizes = {37, 0, 1, 64, 19}, .result = DataType::e4m3});
}

TEST(GroupedGpu, Fp8AmaxOfACallWithoutRowsIsZero) {
    GPUMATH_REQUIRE_GPU();
    REQUIRE_FP8();
    // Every group empty: no product runs, and every amax is still written (0).
    const Fp8Case c{.sizes = {5, 3}, .result = DataType::e4m3};
    const Fp8Prepared p = fp8_prepare(c);
    const std::vector<TensorView> a{slice_rows(p.da.view, 0, 0), slice_rows(p.da.view, 5, 0)};
    const std::vector<TensorView> b{matrix_view(p.db.view, 0), matrix_view(p.db.view, 1)};
    const Dev d = poisoned(DataType::e4m3, {1, c.n});
    const std::vector<TensorView> dv{slice_rows(d.view, 0, 0), slice_rows(d.view, 0, 0)};
    for (int path = 0; path < 2; ++path) {
        const Dev am = poisoned_amax(c);
        const GroupedMatmulArgs args{.scales = p.scales(c, &am.view)};
        if (path == 0) {
            grouped_matmul(a, b, dv, args, {.result_type = c.result});
        } else {
            const std::vector<TensorLayout> al(a.begin(), a.end()), bl(b.begin(), b.end());
            GroupedMatmul mm(al, bl, {.result_type = c.result});
            mm.execute(a, b, dv, args);
        }
        const Host got = download(am.view);
        for (const cd& x : got.v) EXPECT_EQ(x.real(), 0.0) << (path == 0 ? "grouped_matmul" : "GroupedMatmul");
    }
    EXPECT_TRUE(std::isnan(download(d.view).v[0].real())) << "no D written";
}

TEST(GroupedGpu, Fp8EqualSizesWithSharedScalesRunAsOneStridedBatch) {
    GPUMATH_REQUIRE_GPU();
    REQUIRE_FP8();
    // One A and one B scale for every expert (stride 0): a single strided-batched product.
    Fp8Case c{.sizes = {32, 32, 32, 32}, .shared_a = true};
    Fp8Prepared p = fp8_prepare(c);
    const std::vector<float> one_b(1, p.sb[0]);
    p.sb.assign(c.sizes.size(), one_b[0]);
    fp8_expected(c, p);
    const std::int64_t shape[] = {c.groups()};
    const std::int64_t shared[] = {0};
    const GroupedScales scales{.a = TensorView(p.bsa.data(), DataType::f32, shape, shared),
                               .b = TensorView(p.bsb.data(), DataType::f32, shape, shared)};
    const Case cc = c.as_case();
    const Output o = output(cc);
    GroupedMatmul mm(p.da.view, p.db.view, c.sizes, {.result_type = c.result},
                     {.backend = GroupedBackend::strided_batched});
    mm.execute(p.da.view, p.db.view, o.view, c.sizes, {.scales = scales});
    expect_result(cc, o, p.want, "strided_batched, shared scales");
    // Per-group B scales cannot share one batch.
    EXPECT_THROW(mm.execute(p.da.view, p.db.view, o.view, c.sizes,
                            {.scales = {.b = TensorView(p.bsb.data(), DataType::f32, shape)}}),
                 NotSupported);
}

TEST(GroupedGpu, Fp8CapturedReplaysReadTheScalesOfTheirLaunch) {
    GPUMATH_REQUIRE_GPU();
    REQUIRE_FP8();
    // The scales are copied to their slots inside the graph: new values written to the user's scale
    // tensors before a replay are the ones that replay uses.
    Fp8Case c{.sizes = {24, 0, 1, 40, 7}, .result = DataType::e4m3};
    core::Stream stream;
    Fp8Prepared p = fp8_prepare(c, stream);
    for (GroupedBackend backend : {GroupedBackend::loop, GroupedBackend::streams}) {
        SCOPED_TRACE(to_string(backend));
        const Case cc = c.as_case();
        const Output o = output(cc, stream);
        const Dev am = poisoned_amax(c, stream);
        GroupedMatmul mm(p.da.view, p.db.view, c.sizes, {.result_type = c.result}, {.backend = backend});
        mm.plan();
        const GroupedMatmulArgs args{.scales = p.scales(c, &am.view)};
        core::Graph g = core::Graph::capture(
            stream, [&](core::StreamRef s) { mm.execute(p.da.view, p.db.view, o.view, c.sizes, args, s); });
        EXPECT_TRUE(std::isnan(download(o.view, stream).v[0].real())) << "nothing ran during the capture";
        g.launch(stream);
        stream.synchronize();
        expect_result(cc, o, p.want, "first replay", stream);
        expect_amax(p, am, "first replay", stream);
        auto rng = gpumath::test::rng_for_test();
        p.sb = random_scales(p.sb.size(), rng);
        p.sd = random_scales(p.sd.size(), rng);
        p.bsb.copy_from(std::span<const float>(p.sb), stream);
        p.bsd.copy_from(std::span<const float>(p.sd), stream);
        fp8_expected(c, p);
        g.launch(stream);
        stream.synchronize();
        expect_result(cc, o, p.want, "replay with new scales", stream);
        expect_amax(p, am, "replay with new scales", stream);
    }
}

TEST(GroupedGpu, Fp8ConcurrentCallsMatchSerialBitwise) {
    GPUMATH_REQUIRE_GPU();
    REQUIRE_FP8();
    // Threads sharing streams: each call holds its stream's workspace while it enqueues its products
    // (the slots live there), so calls on one stream take turns and never see each other's scales.
    const Fp8Case c{.sizes = {37, 0, 1, 64, 19}, .result = DataType::e4m3};
    const Fp8Prepared p = fp8_prepare(c);
    const Case cc = c.as_case();
    constexpr int threads = 6, streams_n = 2, calls = 4;
    std::vector<core::Stream> streams(streams_n);
    GroupedMatmul shared(p.da.view, p.db.view, c.sizes, {.result_type = c.result},
                         {.backend = GroupedBackend::streams});
    struct Call {
        Output d;
        Dev amax;
        std::vector<unsigned char> serial, serial_amax;
    };
    std::vector<std::vector<Call>> work(threads);
    auto run = [&](const Call& call, core::StreamRef s) {
        const GroupedMatmulArgs args{.scales = p.scales(c, &call.amax.view)};
        shared.execute(p.da.view, p.db.view, call.d.view, c.sizes, args, s);
    };
    for (auto& list : work)
        for (int i = 0; i < calls; ++i) {
            Call call{.d = output(cc), .amax = poisoned_amax(c), .serial = {}, .serial_amax = {}};
            run(call, streams[0]);
            if (list.empty()) expect_result(cc, call.d, p.want, "serial", streams[0]);
            call.serial = download_bytes(call.d.view, streams[0]);
            call.serial_amax = download_bytes(call.amax.view, streams[0]);
            poison_bytes(call.d.view, streams[0]);
            poison_bytes(call.amax.view, streams[0]);
            list.push_back(std::move(call));
        }
    streams[0].synchronize();
    const std::vector<std::string> errors =
        gpumath::test::run_on_threads(threads, streams, [&](int t, core::StreamRef s) {
            for (const Call& call : work[std::size_t(t)]) run(call, s);
        });
    expect_threads_match(errors, work, [](const Call& call) {
        EXPECT_TRUE(download_bytes(call.d.view) == call.serial) << "D differs from the serial run";
        EXPECT_TRUE(download_bytes(call.amax.view) == call.serial_amax) << "amax differs from the serial run";
    });
}

TEST(GroupedGpu, Fp8ScalesAlreadyAlignedAreReadInPlace) {
    GPUMATH_REQUIRE_GPU();
    REQUIRE_FP8();
    // Scales 16 bytes apart (the first column of a (G, 4) tensor) and a shared one at an aligned
    // address: no copy to slots; the result is the same as for (G,) scales.
    const Fp8Case c{.sizes = {37, 0, 1, 64, 19}, .shared_a = true};
    const Fp8Prepared p = fp8_prepare(c);
    const Case cc = c.as_case();
    std::vector<float> padded(4 * p.sb.size(), -1.0F);
    for (std::size_t g = 0; g < p.sb.size(); ++g) padded[4 * g] = p.sb[g];
    const core::Buffer bsb = core::Buffer::from_host(padded);
    const std::int64_t shape[] = {c.groups()};
    const std::int64_t every_fourth[] = {4}, shared[] = {0};
    const GroupedScales scales{.a = TensorView(p.bsa.data(), DataType::f32, shape, shared),
                               .b = TensorView(bsb.data(), DataType::f32, shape, every_fourth)};
    for (GroupedBackend backend : {GroupedBackend::loop, GroupedBackend::streams}) {
        const Output o = output(cc), in_slots = output(cc);
        GroupedMatmul mm(p.da.view, p.db.view, c.sizes, {.result_type = c.result}, {.backend = backend});
        mm.execute(p.da.view, p.db.view, o.view, c.sizes, {.scales = scales});
        expect_result(cc, o, p.want, std::string("aligned scales, ") + std::string(to_string(backend)));
        mm.execute(p.da.view, p.db.view, in_slots.view, c.sizes, {.scales = p.scales(c)});
        EXPECT_EQ(download_bytes(o.view), download_bytes(in_slots.view)) << "in place == copied to slots, bitwise";
    }
}

TEST(GroupedGpu, TheAllocatingMoeFormMatchesTheFormWithAView) {
    GPUMATH_REQUIRE_GPU();
    core::Stream stream;
    constexpr std::int64_t K = 64, N = 96;
    const std::vector<int> sizes{5, 0, 17, 3};
    const std::int64_t T = 25;
    std::vector<float> a_host(std::size_t(T * K)), b_host(std::size_t(4 * K * N));
    for (std::size_t i = 0; i < a_host.size(); ++i) a_host[i] = float(int(i * 7 % 13) - 6) / 8;
    for (std::size_t i = 0; i < b_host.size(); ++i) b_host[i] = float(int(i * 5 % 11) - 5) / 4;
    const Tensor a = Tensor::from_host(a_host, std::array<std::int64_t, 2>{T, K}, stream);
    const Tensor b = Tensor::from_host(b_host, std::vector<int>{4, int(K), int(N)}, stream);
    const Tensor d = grouped_matmul(a, b, sizes, {}, {}, stream);
    ASSERT_EQ(d.view().shape(0), T);
    ASSERT_EQ(d.view().shape(1), N);
    EXPECT_EQ(d.dtype(), DataType::f32);
    Tensor e = Tensor::empty(DataType::f32, {T, N}, stream);
    grouped_matmul(a, b, e, std::vector<std::int64_t>{5, 0, 17, 3}, {}, {}, stream);
    EXPECT_EQ(d.to_host<float>(stream), e.to_host<float>(stream));
    // Exact integers in f32: each row against the host product of its group.
    const std::vector<float> got = d.to_host<float>(stream);
    std::int64_t row = 0;
    for (std::size_t g = 0; g < sizes.size(); ++g)
        for (int r = 0; r < sizes[g]; ++r, ++row)
            for (std::int64_t c = 0; c < N; ++c) {
                double want = 0;
                for (std::int64_t k = 0; k < K; ++k)
                    want += double(a_host[std::size_t(row * K + k)]) *
                            b_host[std::size_t((std::int64_t(g) * K + k) * N + c)];
                ASSERT_NEAR(got[std::size_t(row * N + c)], want, 1e-3) << row << ", " << c;
            }
}
