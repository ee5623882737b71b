// SPDX-License-Identifier: Apache-2.0
// The mapping of FFT requests onto cuFFT's advanced layout, checked on the CPU: a model of how
// cuFFT addresses memory (embed/stride/dist, batch, gpumath's host loops) must visit exactly the
// logical elements, each transform line along the requested axes, input and output batches
// paired. Random layouts (permuted, padded, broadcast, strided outputs) and the named cases.
#include "fft/geometry.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "common/test_util.hpp"

namespace gpumath::detail {
namespace {

using Index = std::vector<std::int64_t>;

std::int64_t offset_of(const Index& x, const std::array<std::int64_t, max_rank>& strides) {
    std::int64_t o = 0;
    for (std::size_t d = 0; d < x.size(); ++d) o += x[d] * strides[d];
    return o;
}

template <class F>
void for_each_index(const FftOperand& op, F&& f) {
    std::int64_t total = 1;
    for (int d = 0; d < op.rank; ++d) total *= op.shape[std::size_t(d)];
    Index x(std::size_t(op.rank), 0);
    for (std::int64_t i = 0; i < total; ++i) {
        f(x);
        for (int d = op.rank - 1; d >= 0; --d) {
            if (++x[std::size_t(d)] < op.shape[std::size_t(d)]) break;
            x[std::size_t(d)] = 0;
        }
    }
}

// Checks one side: returns, per (execution, batch), the batch coordinates cuFFT's line 0 maps to.
std::vector<Index> check_side(const FftProblem& p, const FftGeometry& g, const FftOperand& op, const FftSide& side,
                              const std::array<std::int64_t, max_rank>& loop_stride, const char* name) {
    std::map<std::int64_t, Index> where;
    for_each_index(op, [&](const Index& x) {
        const auto [it, fresh] = where.emplace(offset_of(x, side.strides), x);
        EXPECT_TRUE(fresh) << name << ": two logical elements share offset " << it->first;
    });
    // cuFFT's own rules.
    EXPECT_GE(side.stride, 1) << name;
    for (int k = 1; k < g.rank; ++k)
        EXPECT_GE(side.embed[std::size_t(k)], op.shape[std::size_t(g.dims[std::size_t(k)])]) << name << " embed " << k;

    std::set<std::int64_t> visited;
    std::vector<Index> batches;
    std::vector<std::int64_t> extent(static_cast<std::size_t>(g.rank));
    for (int k = 0; k < g.rank; ++k) extent[std::size_t(k)] = op.shape[std::size_t(g.dims[std::size_t(k)])];
    const std::int64_t line = std::accumulate(extent.begin(), extent.end(), std::int64_t(1), std::multiplies<>());
    Index loop(std::size_t(g.loop_rank), 0);
    for (std::int64_t e = 0; e < g.executions(); ++e) {
        std::int64_t base = 0;
        for (int k = 0; k < g.loop_rank; ++k) base += loop[std::size_t(k)] * loop_stride[std::size_t(k)];
        for (std::int64_t b = 0; b < g.batch; ++b) {
            Index batch_coords;
            for (std::int64_t t = 0; t < line; ++t) {
                // t -> per-dimension index, inner dimension fastest.
                std::vector<std::int64_t> tk(static_cast<std::size_t>(g.rank));
                std::int64_t rem = t;
                for (int k = g.rank - 1; k >= 0; --k) {
                    tk[std::size_t(k)] = rem % extent[std::size_t(k)];
                    rem /= extent[std::size_t(k)];
                }
                std::int64_t addr = base + b * side.dist;
                std::int64_t scale = side.stride;
                for (int k = g.rank - 1; k >= 0; --k) {
                    addr += tk[std::size_t(k)] * scale;
                    scale *= side.embed[std::size_t(k)];
                }
                auto it = where.find(addr);
                if (it == where.end()) {
                    ADD_FAILURE() << name << ": cuFFT would address offset " << addr << " that holds no element";
                    return {};
                }
                EXPECT_TRUE(visited.insert(addr).second) << name << ": offset " << addr << " visited twice";
                Index x = it->second;
                for (int k = 0; k < g.rank; ++k) {
                    EXPECT_EQ(x[std::size_t(g.dims[std::size_t(k)])], tk[std::size_t(k)])
                        << name << ": transform index " << k << " lands on the wrong logical position";
                    x[std::size_t(g.dims[std::size_t(k)])] = 0;
                }
                if (t == 0) batch_coords = x;
                else if (x != batch_coords) {
                    ADD_FAILURE() << name << ": one transform line spans two batch positions";
                    return {};
                }
            }
            batches.push_back(batch_coords);
        }
        for (int k = g.loop_rank - 1; k >= 0; --k) {
            if (++loop[std::size_t(k)] < g.loop_extent[std::size_t(k)]) break;
            loop[std::size_t(k)] = 0;
        }
    }
    EXPECT_EQ(visited.size(), where.size()) << name << ": not every element is transformed";
    (void)p;
    return batches;
}

void check_geometry(const FftProblem& p, const FftGeometry& g) {
    SCOPED_TRACE(::testing::Message() << "in " << to_string(p.in_layout) << " out " << to_string(p.out_layout) << " "
                                      << to_string(p.kind));
    // Transform lengths: the problem's, in cuFFT order.
    for (int k = 0; k < g.rank; ++k) {
        const int d = g.dims[std::size_t(k)];
        const FftOperand& real_side = p.kind == FFTKind::c2r ? p.out : p.in;
        EXPECT_EQ(g.n[std::size_t(k)], real_side.shape[std::size_t(d)]);
    }
    if (p.kind != FFTKind::c2c) {
        EXPECT_EQ(g.dims[std::size_t(g.rank - 1)], p.axes[std::size_t(p.naxes - 1)]) << "halved axis innermost";
    }
    EXPECT_TRUE(real_loops_aligned(p, g)) << "a host-loop execution starts the real operand at an odd offset";
    const auto in = check_side(p, g, p.in, g.in, g.loop_in_stride, "input");
    const auto out = check_side(p, g, p.out, g.out, g.loop_out_stride, "output");
    EXPECT_EQ(in, out) << "input and output batches are not paired";
}

FftProblem problem(const TensorLayout& in, const FFTOptions& o = {}, const TensorLayout* out = nullptr) {
    return make_fft_problem(in, out, o, FFTKind::automatic, "test");
}

TEST(FftGeometry, ContiguousLastAxis) {
    const FftProblem p = problem(TensorLayout(DataType::c32, {16, 64}));
    const FftGeometry g = make_fft_geometry(p, false, false);
    EXPECT_EQ(g.rank, 1);
    EXPECT_EQ(g.n[0], 64);
    EXPECT_EQ(g.batch, 16);
    EXPECT_EQ(g.in.stride, 1);
    EXPECT_EQ(g.in.dist, 64);
    EXPECT_FALSE(g.in.temp || g.out.temp);
    EXPECT_EQ(g.executions(), 1);
    check_geometry(p, g);
}

TEST(FftGeometry, FirstAxisUsesStrideAndUnitDistance) {
    const FftProblem p = problem(TensorLayout(DataType::c32, {64, 16}), {.axes = {0}});
    const FftGeometry g = make_fft_geometry(p, false, false);
    EXPECT_EQ(g.in.stride, 16);
    EXPECT_EQ(g.in.dist, 1);
    EXPECT_EQ(g.batch, 16);
    EXPECT_FALSE(g.in.temp);
    check_geometry(p, g);
}

TEST(FftGeometry, TwoAndThreeAxes) {
    const FftProblem p2 = problem(TensorLayout(DataType::f32, {3, 8, 10}), {.axes = {1, 2}});
    const FftGeometry g2 = make_fft_geometry(p2, false, false);
    EXPECT_EQ(g2.rank, 2);
    EXPECT_EQ(g2.n[0], 8);
    EXPECT_EQ(g2.n[1], 10);
    EXPECT_EQ(g2.out.embed[1], 6);
    EXPECT_EQ(g2.batch, 3);
    check_geometry(p2, g2);
    const FftProblem p3 = problem(TensorLayout(DataType::c64, {4, 5, 6}), {.axes = {0, 1, 2}});
    const FftGeometry g3 = make_fft_geometry(p3, false, false);
    EXPECT_EQ(g3.rank, 3);
    EXPECT_EQ(g3.batch, 1);
    check_geometry(p3, g3);
}

TEST(FftGeometry, ColumnMajorC2CNestsWithoutCopy) {
    const FftProblem p = problem(TensorLayout(DataType::c32, {8, 6}, {1, 8}), {.axes = {0, 1}});
    const FftGeometry g = make_fft_geometry(p, false, false);
    EXPECT_FALSE(g.in.temp);
    EXPECT_EQ(g.dims[0], 1);  // the larger stride outermost
    EXPECT_EQ(g.dims[1], 0);
    check_geometry(p, g);
}

TEST(FftGeometry, ColumnMajorR2CCopiesTheInput) {
    // The halved axis (1) must be cuFFT's innermost, but its stride is the larger one.
    const FftProblem p = problem(TensorLayout(DataType::f32, {8, 6}, {1, 8}), {.axes = {0, 1}});
    const FftGeometry g = make_fft_geometry(p, false, false);
    EXPECT_TRUE(g.in.temp);
    EXPECT_EQ(g.in.temp_elements, 48);
    check_geometry(p, g);
}

TEST(FftGeometry, MiddleAxisLoopsOverTheSmallerBatch) {
    const FftProblem p = problem(TensorLayout(DataType::c32, {4, 32, 8}), {.axes = {1}});
    const FftGeometry g = make_fft_geometry(p, false, false);
    EXPECT_FALSE(g.in.temp || g.out.temp);
    EXPECT_EQ(g.batch, 8);
    EXPECT_EQ(g.in.stride, 8);
    EXPECT_EQ(g.in.dist, 1);
    EXPECT_EQ(g.executions(), 4);
    check_geometry(p, g);
}

TEST(FftGeometry, RealOperandsNeverLoopAtOddOffsets) {
    // r2c along the middle axis of (6, 5, 7): a loop over axis 0 would start executions 35 reals
    // apart, which cuFFT refuses; the real side is copied instead.
    const FftProblem p = problem(TensorLayout(DataType::f32, {6, 5, 7}), {.axes = {1}});
    const FftGeometry g = make_fft_geometry(p, false, false);
    EXPECT_TRUE(g.in.temp || g.executions() == 1);
    check_geometry(p, g);
    // c2r: the real output side.
    const FftProblem q = problem(TensorLayout(DataType::c32, {6, 3, 7}),
                                 {.axes = {1}, .kind = FFTKind::c2r, .last_axis_size = 5, .overwrite_input = true});
    const FftGeometry h = make_fft_geometry(q, false, false);
    EXPECT_TRUE(h.out.temp || h.executions() == 1);
    check_geometry(q, h);
    // Even offsets keep the loop: (4, 32, 8) along the middle axis loops 256 reals apart.
    const FftProblem e = problem(TensorLayout(DataType::f32, {4, 32, 8}), {.axes = {1}});
    const FftGeometry ge = make_fft_geometry(e, false, false);
    EXPECT_FALSE(ge.in.temp);
    EXPECT_EQ(ge.executions(), 4);
    check_geometry(e, ge);
}

TEST(FftGeometry, ManySmallLoopsCopyInstead) {
    const FftProblem p = problem(TensorLayout(DataType::c32, {24, 8, 32}), {.axes = {1}});
    const FftGeometry g = make_fft_geometry(p, false, false);
    EXPECT_EQ(g.executions(), 1);
    EXPECT_TRUE(g.in.temp || g.out.temp);
    check_geometry(p, g);
    // Fused callbacks rule out any loop.
    const FftProblem q = problem(TensorLayout(DataType::c32, {4, 32, 8}), {.axes = {1}});
    EXPECT_EQ(make_fft_geometry(q, false, false, 1).executions(), 1);
}

TEST(FftGeometry, BroadcastInputIsGathered) {
    const FftProblem p = problem(TensorLayout(DataType::c32, {5, 16}, {0, 1}));
    const FftGeometry g = make_fft_geometry(p, false, false);
    EXPECT_TRUE(g.in.temp);
    EXPECT_FALSE(g.out.temp);
    check_geometry(p, g);
}

TEST(FftGeometry, C2RPreservesItsInputUnlessAllowed) {
    const FftProblem p = problem(TensorLayout(DataType::c32, {4, 9}), {.kind = FFTKind::c2r});
    EXPECT_TRUE(make_fft_geometry(p, false, false).in.temp);
    check_geometry(p, make_fft_geometry(p, false, false));
    const FftProblem q = problem(TensorLayout(DataType::c32, {4, 9}), {.kind = FFTKind::c2r, .overwrite_input = true});
    EXPECT_FALSE(make_fft_geometry(q, false, false).in.temp);
    EXPECT_EQ(make_fft_geometry(q, false, false).n[0], 16);
}

TEST(FftGeometry, HalfR2CNeedsUnitInnerStride) {
    const FftProblem p = problem(TensorLayout(DataType::f16, {8, 16}, {32, 2}));
    EXPECT_TRUE(make_fft_geometry(p, false, false).in.temp);
    const FftProblem q = problem(TensorLayout(DataType::f16, {8, 16}, {32, 1}));
    const FftGeometry g = make_fft_geometry(q, false, false);
    EXPECT_FALSE(g.in.temp);
    EXPECT_EQ(g.in.dist, 32);
    check_geometry(q, g);
}

TEST(FftGeometry, HalfComplexPairsCountWholeElements) {
    const FftProblem p = problem(TensorLayout(DataType::bf16, {4, 8, 2}), {.kind = FFTKind::c2c});
    EXPECT_EQ(p.in.rank, 2);
    EXPECT_EQ(p.in.strides[0], 8);
    EXPECT_EQ(p.in.strides[1], 1);
    check_geometry(p, make_fft_geometry(p, false, false));
}

TEST(FftGeometry, ForcedTempsStillMap) {
    const FftProblem p = problem(TensorLayout(DataType::c32, {3, 4, 5}, {1, 15, 3}), {.axes = {2, 0}});
    for (bool i : {false, true})
        for (bool o : {false, true}) check_geometry(p, make_fft_geometry(p, i, o));
}

// A layout of `shape` whose dimensions are laid out in `order` (outer to inner) with padding.
TensorLayout strided(DataType dt, const std::vector<std::int64_t>& shape, const std::vector<int>& order,
                     const std::vector<std::int64_t>& pad) {
    std::vector<std::int64_t> strides(shape.size());
    std::int64_t s = 1;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
        strides[std::size_t(*it)] = s;
        s *= shape[std::size_t(*it)] + pad[std::size_t(*it)];
    }
    return TensorLayout(dt, shape, strides);
}

TEST(FftGeometry, RandomLayoutsMapExactly) {
    std::mt19937_64 rng(12345);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    int checked = 0;
    for (int iter = 0; iter < 600; ++iter) {
        const int rank = pick(1, 4);
        std::vector<std::int64_t> shape(static_cast<std::size_t>(rank));
        for (auto& e : shape) e = pick(1, 5);
        const FFTKind kind = std::array{FFTKind::c2c, FFTKind::r2c, FFTKind::c2r}[std::size_t(pick(0, 2))];
        const int naxes = pick(1, std::min(rank, 3));
        std::vector<int> dims(static_cast<std::size_t>(rank));
        std::iota(dims.begin(), dims.end(), 0);
        std::shuffle(dims.begin(), dims.end(), rng);
        std::vector<int> axes(dims.begin(), dims.begin() + naxes);
        std::vector<int> in_order(dims);
        std::shuffle(in_order.begin(), in_order.end(), rng);
        std::vector<std::int64_t> pad(static_cast<std::size_t>(rank));
        for (auto& v : pad) v = pick(0, 1) ? 0 : pick(0, 2);
        const DataType in_dt = kind == FFTKind::r2c ? DataType::f32 : DataType::c32;
        if (kind == FFTKind::c2r && shape[std::size_t(axes.back())] < 2) shape[std::size_t(axes.back())] = 2;
        TensorLayout in = strided(in_dt, shape, in_order, pad);
        if (pick(0, 5) == 0) {  // a broadcast batch dimension
            std::vector<std::int64_t> s(in.strides().begin(), in.strides().end());
            s[std::size_t(pick(0, rank - 1))] = 0;
            in = TensorLayout(in_dt, shape, s);
        }
        FFTOptions o{.kind = kind};
        o.axes = FFTAxes(std::span<const int>(axes));
        // The output: default row-major, or permuted/padded.
        FftProblem p = make_fft_problem(in, nullptr, o, FFTKind::automatic, "test");
        if (pick(0, 1)) {
            std::vector<std::int64_t> oshape(p.out.shape.begin(), p.out.shape.begin() + rank);
            std::vector<int> out_order(dims);
            std::shuffle(out_order.begin(), out_order.end(), rng);
            std::vector<std::int64_t> opad(static_cast<std::size_t>(rank));
            for (auto& v : opad) v = pick(0, 1) ? 0 : pick(0, 2);
            const TensorLayout out =
                strided(kind == FFTKind::c2r ? DataType::f32 : DataType::c32, oshape, out_order, opad);
            p = make_fft_problem(in, &out, o, FFTKind::automatic, "test");
        }
        const bool force_in = pick(0, 4) == 0;
        const bool force_out = pick(0, 4) == 0;
        const std::int64_t max_exec = pick(0, 1) ? fft_max_loop_executions : 1;
        check_geometry(p, make_fft_geometry(p, force_in, force_out, max_exec));
        if (::testing::Test::HasFailure()) {
            ADD_FAILURE() << "case " << iter << " failed";
            return;
        }
        ++checked;
    }
    EXPECT_EQ(checked, 600);
}

// Passes visit every element once with the right source and destination offsets.
TEST(FftGeometry, PassesVisitEveryElement) {
    std::mt19937_64 rng(777);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    for (int iter = 0; iter < 300; ++iter) {
        FftOperand op;
        op.rank = pick(1, 5);
        std::array<std::int64_t, max_rank> src{}, dst{};
        for (int d = 0; d < op.rank; ++d) op.shape[std::size_t(d)] = pick(1, 4);
        auto layout = [&](std::array<std::int64_t, max_rank>& s) {
            std::vector<int> order(static_cast<std::size_t>(op.rank));
            std::iota(order.begin(), order.end(), 0);
            if (pick(0, 1)) std::shuffle(order.begin(), order.end(), rng);
            std::int64_t v = 1;
            for (auto it = order.rbegin(); it != order.rend(); ++it) {
                s[std::size_t(*it)] = v;
                v *= op.shape[std::size_t(*it)] + (pick(0, 2) == 0 ? 1 : 0);
            }
        };
        layout(src);
        layout(dst);
        const FftPass pass = make_fft_pass(op, src, dst);
        std::multiset<std::pair<std::int64_t, std::int64_t>> want, got;
        for_each_index(op, [&](const Index& x) { want.emplace(offset_of(x, src), offset_of(x, dst)); });
        for (std::int64_t i = 0; i < pass.total; ++i) {
            std::int64_t rem = i, so = 0, dof = 0;
            for (int d = pass.rank - 1; d >= 0; --d) {
                const std::int64_t k = rem % pass.extent[std::size_t(d)];
                rem /= pass.extent[std::size_t(d)];
                so += k * pass.src_stride[std::size_t(d)];
                dof += k * pass.dst_stride[std::size_t(d)];
            }
            got.emplace(so, dof);
        }
        ASSERT_EQ(got, want) << "case " << iter;
    }
    // Contiguous data collapses to one dimension.
    FftOperand c;
    c.rank = 3;
    c.shape = {2, 3, 4};
    const std::array<std::int64_t, max_rank> rm{12, 4, 1};
    EXPECT_EQ(make_fft_pass(c, rm, rm).rank, 1);
    EXPECT_EQ(make_fft_pass(c, rm, rm).total, 24);
}

TEST(FftGeometry, Scales) {
    const FftProblem p = problem(TensorLayout(DataType::c32, {4, 8}), {.axes = {0, 1}});
    EXPECT_EQ(p.n_total, 32);
    EXPECT_EQ(fft_scale(p, Direction::forward), 1.0);
    EXPECT_EQ(fft_scale(p, Direction::inverse), 1.0 / 32);
    FftProblem q = p;
    q.normalization = Normalization::ortho;
    EXPECT_DOUBLE_EQ(fft_scale(q, Direction::forward), 1.0 / std::sqrt(32.0));
    q.normalization = Normalization::forward;
    EXPECT_EQ(fft_scale(q, Direction::forward), 1.0 / 32);
    EXPECT_EQ(fft_scale(q, Direction::inverse), 1.0);
    q.normalization = Normalization::none;
    EXPECT_EQ(fft_scale(q, Direction::inverse), 1.0);
    // c2r normalizes by the output lengths.
    const FftProblem r = problem(TensorLayout(DataType::c32, {5}), {.kind = FFTKind::c2r, .last_axis_size = 9});
    EXPECT_EQ(r.n_total, 9);
}

}  // namespace
}  // namespace gpumath::detail
