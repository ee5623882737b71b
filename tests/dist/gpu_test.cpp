// SPDX-License-Identifier: Apache-2.0
// Collectives and tensor-parallel products on every GPU of the machine (one rank per GPU, all in
// this process; a one-GPU machine runs every path with a communicator of size 1), checked against
// host references on fresh random data, outputs poisoned first. Capture and replay of each entry point.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <vector>

#include <gpumath/core.hpp>
#include <gpumath/dist/communicator.hpp>
#include <gpumath/dist/matmul.hpp>
#include <gpumath/error.hpp>

#include "common/test_util.hpp"
#include "matmul/reference.hpp"

using namespace gpumath;
using namespace gpumath::test::mm;
using gpumath::dist::Communicator;
using gpumath::dist::OutputCollective;
using gpumath::dist::Parallelism;
using gpumath::dist::RankOperands;
using gpumath::dist::ReduceOp;

namespace {

// One stream per local rank, on its device.
std::vector<core::Stream> rank_streams(const Communicator& comm) {
    std::vector<core::Stream> s;
    for (int i = 0; i < comm.local_size(); ++i) s.push_back(core::Device(comm.device(i)).create_stream());
    return s;
}

std::vector<core::StreamRef> refs(const std::vector<core::Stream>& s) { return {s.begin(), s.end()}; }

Dev upload_on(int device, const Host& h, std::vector<std::int64_t> strides = {}) {
    const gpumath::detail::DeviceGuard guard(device);
    return upload(h, std::move(strides));
}

Dev poisoned_on(int device, DataType t, std::vector<std::int64_t> shape, std::vector<std::int64_t> strides = {}) {
    const gpumath::detail::DeviceGuard guard(device);
    return poisoned(t, std::move(shape), std::move(strides));
}

Host download_on(int device, const TensorView& v) {
    const gpumath::detail::DeviceGuard guard(device);
    return download(v);
}

// Columns [first, first + count) of a row-major host matrix, or rows when `rows`.
Host slice(const Host& m, std::int64_t first, std::int64_t count, bool rows) {
    Host out(m.dtype,
             rows ? std::vector<std::int64_t>{count, m.shape[1]} : std::vector<std::int64_t>{m.shape[0], count});
    for (std::int64_t i = 0; i < out.shape[0]; ++i)
        for (std::int64_t j = 0; j < out.shape[1]; ++j)
            out.at({i, j}) = rows ? m.at({first + i, j}) : m.at({i, first + j});
    return out;
}

void synchronize(const std::vector<core::Stream>& streams) {
    for (const auto& s : streams) s.synchronize();
}

}  // namespace

TEST(DistCollectives, AllReduceReduceScatterAllGatherAndBroadcastMatchTheHost) {
    GPUMATH_REQUIRE_GPU();
    Communicator comm = Communicator::all_devices();
    const int p = comm.size();
    ASSERT_EQ(comm.local_size(), p);
    auto streams = rank_streams(comm);
    auto rng = test::rng_for_test();
    const std::int64_t block = 1031;  // odd, so that no count is a multiple of a vector width
    std::vector<Host> data;
    std::vector<Dev> send, recv;
    for (int i = 0; i < p; ++i) {
        data.push_back(random_host(DataType::i32, {block * p}, rng));
        send.push_back(upload_on(comm.device(i), data.back()));
    }
    const auto views = [&](std::vector<Dev>& v) {
        std::vector<TensorView> out;
        for (auto& d : v) out.push_back(d.view);
        return out;
    };
    // all_reduce (sum and max), exact in i32.
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max}) {
        recv.clear();
        for (int i = 0; i < p; ++i) recv.push_back(poisoned_on(comm.device(i), DataType::i32, {block * p}));
        comm.all_reduce(views(send), views(recv), op, refs(streams));
        synchronize(streams);
        for (int i = 0; i < p; ++i) {
            const Host got = download_on(comm.device(i), recv[std::size_t(i)].view);
            for (std::int64_t e = 0; e < block * p; ++e) {
                double want = data[0].v[std::size_t(e)].real();
                for (int r = 1; r < p; ++r) {
                    const double x = data[std::size_t(r)].v[std::size_t(e)].real();
                    want = op == ReduceOp::sum ? want + x : std::max(want, x);
                }
                ASSERT_EQ(got.v[std::size_t(e)].real(), want) << "rank " << i << " element " << e;
            }
        }
    }
    // reduce_scatter: rank r gets block r of the sum.
    recv.clear();
    for (int i = 0; i < p; ++i) recv.push_back(poisoned_on(comm.device(i), DataType::i32, {block}));
    comm.reduce_scatter(views(send), views(recv), ReduceOp::sum, refs(streams));
    synchronize(streams);
    for (int i = 0; i < p; ++i) {
        const Host got = download_on(comm.device(i), recv[std::size_t(i)].view);
        for (std::int64_t e = 0; e < block; ++e) {
            double want = 0;
            for (int r = 0; r < p; ++r) want += data[std::size_t(r)].v[std::size_t(comm.rank(i) * block + e)].real();
            ASSERT_EQ(got.v[std::size_t(e)].real(), want) << "rank " << i << " element " << e;
        }
    }
    // all_gather of each rank's first block.
    std::vector<TensorView> firsts;
    for (int i = 0; i < p; ++i) firsts.push_back(TensorView(send[std::size_t(i)].view.data(), DataType::i32, {block}));
    recv.clear();
    for (int i = 0; i < p; ++i) recv.push_back(poisoned_on(comm.device(i), DataType::i32, {block * p}));
    comm.all_gather(firsts, views(recv), refs(streams));
    synchronize(streams);
    for (int i = 0; i < p; ++i) {
        const Host got = download_on(comm.device(i), recv[std::size_t(i)].view);
        for (int r = 0; r < p; ++r)
            for (std::int64_t e = 0; e < block; ++e)
                ASSERT_EQ(got.v[std::size_t(r * block + e)], data[std::size_t(r)].v[std::size_t(e)]);
    }
    // broadcast from the last rank, in place on the others.
    const int root = p - 1;
    comm.broadcast(views(send), views(send), root, refs(streams));
    synchronize(streams);
    for (int i = 0; i < p; ++i) {
        const Host got = download_on(comm.device(i), send[std::size_t(i)].view);
        for (std::int64_t e = 0; e < block * p; ++e)
            ASSERT_EQ(got.v[std::size_t(e)], data[std::size_t(root)].v[std::size_t(e)]);
    }
}

TEST(DistCollectives, ComplexSumsAndF32AveragesMatchTheHost) {
    GPUMATH_REQUIRE_GPU();
    Communicator comm = Communicator::all_devices();
    const int p = comm.size();
    auto streams = rank_streams(comm);
    auto rng = test::rng_for_test();
    const std::int64_t n = 777;
    for (DataType t : {DataType::c32, DataType::f32}) {
        const ReduceOp op = t == DataType::c32 ? ReduceOp::sum : ReduceOp::avg;
        std::vector<Host> data;
        std::vector<Dev> buffers;
        std::vector<TensorView> views;
        for (int i = 0; i < p; ++i) {
            data.push_back(random_host(t, {n}, rng));
            buffers.push_back(upload_on(comm.device(i), data.back()));
            views.push_back(buffers.back().view);
        }
        comm.all_reduce(views, views, op, refs(streams));  // in place
        synchronize(streams);
        Host want(t, {n});
        for (std::int64_t e = 0; e < n; ++e) {
            cd s = 0;
            for (int r = 0; r < p; ++r) s += data[std::size_t(r)].v[std::size_t(e)];
            want.v[std::size_t(e)] = op == ReduceOp::avg ? s / double(p) : s;
        }
        for (int i = 0; i < p; ++i) {
            const Host got = download_on(comm.device(i), views[std::size_t(i)]);
            EXPECT_LT(relative_error(got, want), 1e-6) << to_string(t) << " rank " << i;
        }
    }
}

TEST(DistCollectives, AnAllReduceCapturedIntoAGraphReplays) {
    GPUMATH_REQUIRE_GPU();
    Communicator comm = Communicator::all_devices();
    const int p = comm.size();
    auto streams = rank_streams(comm);
    auto rng = test::rng_for_test();
    const std::int64_t n = 4096;
    std::vector<Host> data;
    std::vector<Dev> send, recv;
    std::vector<TensorView> sv, rv;
    for (int i = 0; i < p; ++i) {
        data.push_back(random_host(DataType::i32, {n}, rng));
        send.push_back(upload_on(comm.device(i), data.back()));
        recv.push_back(poisoned_on(comm.device(i), DataType::i32, {n}));
        sv.push_back(send.back().view);
        rv.push_back(recv.back().view);
    }
    // Rank 0's stream captures; the others join the capture through an event and rejoin it.
    const core::Graph graph = core::Graph::capture(streams[0], [&](core::StreamRef s0) {
        for (int i = 1; i < p; ++i) streams[std::size_t(i)].wait(s0);
        comm.all_reduce(sv, rv, ReduceOp::sum, refs(streams));
        for (int i = 1; i < p; ++i) s0.wait(streams[std::size_t(i)]);
    });
    for (int i = 0; i < p; ++i) {
        const Host got = download_on(comm.device(i), rv[std::size_t(i)]);
        EXPECT_TRUE(std::isnan(got.v[0].real()) || got.v[0].real() == -1) << "capture ran the collective";
    }
    for (int replay = 0; replay < 2; ++replay) {
        graph.launch(streams[0]);
        streams[0].synchronize();
        for (int i = 0; i < p; ++i) {
            const Host got = download_on(comm.device(i), rv[std::size_t(i)]);
            for (std::int64_t e = 0; e < n; ++e) {
                double want = 0;
                for (int r = 0; r < p; ++r) want += data[std::size_t(r)].v[std::size_t(e)].real();
                ASSERT_EQ(got.v[std::size_t(e)].real(), want) << "replay " << replay << " rank " << i;
            }
        }
    }
}

TEST(DistCollectives, OperandsOnTheWrongDeviceOrHostAreRefusedBeforeNccl) {
    GPUMATH_REQUIRE_GPU();
    Communicator comm{0};
    EXPECT_EQ(comm.size(), 1);
    EXPECT_EQ(comm.rank(), 0);
    EXPECT_EQ(comm.device(), 0);
    EXPECT_NE(comm.native_handle(), nullptr);
    std::vector<std::int32_t> host(16, 1);
    const TensorView on_host(host.data(), {16});
    auto dev = upload_on(0, Host(DataType::i32, {16}));
    test::expect_throw_with<InvalidArgument>([&] { comm.all_reduce(on_host, dev.view, ReduceOp::sum); },
                                             {"send[0] is host memory"});
    if (core::Device::count() >= 2) {
        // Memory of device 1 given to the rank on device 0, and a stream of device 1.
        auto other = upload_on(1, Host(DataType::i32, {16}));
        test::expect_throw_with<InvalidArgument>([&] { comm.all_reduce(dev.view, other.view, ReduceOp::sum); },
                                                 {"recv[0] is memory of device 1", "runs on device 0"});
        const core::Stream stream1 = core::Device(1).create_stream();
        test::expect_throw_with<InvalidArgument>([&] { comm.all_reduce(dev.view, dev.view, ReduceOp::sum, stream1); },
                                                 {"streams[0] belongs to device 1"});
    }
    test::expect_throw_with<InvalidArgument>([&] { (void)comm.rank(1); }, {"local rank 1"});
    Communicator moved = std::move(comm);
    EXPECT_EQ(comm.size(), 0);  // NOLINT(bugprone-use-after-move): the moved-from state is the point
    test::expect_throw_with<InvalidArgument>([&] { comm.all_reduce(dev.view, dev.view, ReduceOp::sum); },
                                             {"moved-from Communicator"});
    EXPECT_EQ(moved.size(), 1);
}

namespace {

// A tensor-parallel linear layer of bf16 inputs on every rank, checked against the whole product
// on the host. Column: B's columns split, D (M, N/p) column-major so the gathered D is (M, N)
// column-major; row: A's columns and B's rows split, f32 partial sums reduced.
struct LinearCase {
    Parallelism parallelism = Parallelism::column;
    OutputCollective collective = OutputCollective::none;
    int chunks = 1;
    bool bias = false;
    bool residual = false;  // C (beta = 1): each rank's slice (column), the whole, added once (row)
};

void run_linear(const LinearCase& c, bool capture) {
    Communicator comm = Communicator::all_devices();
    const int p = comm.size();
    auto streams = rank_streams(comm);
    auto rng = test::rng_for_test();
    const std::int64_t m = 96 + 3, k = 64 * p, n = 48 * p;
    const bool row = c.parallelism == Parallelism::row;
    const DataType out_type = row ? DataType::f32 : DataType::bf16;
    const Host a = random_host(DataType::bf16, {m, k}, rng);
    const Host b = random_host(DataType::bf16, {k, n}, rng);
    const Host bias_full = random_host(out_type, {n}, rng);
    const Host c_full = random_host(out_type, {m, n}, rng);
    RefArgs ref_args;
    if (c.bias) {
        ref_args.bias = &bias_full;
        ref_args.epilog = Epilog::bias;
    }
    if (c.residual) {
        ref_args.c = &c_full;
        ref_args.beta = 1.0;
    }
    const Host want = reference(a, b, out_type, ref_args).d;  // (m, n)
    const std::int64_t kl = row ? k / p : k, nl = row ? n : n / p;
    MatmulOptions options{.epilog = c.bias ? Epilog::bias : Epilog::none, .result_type = out_type};
    const TensorLayout a_layout(DataType::bf16, {m, kl});
    const TensorLayout b_layout(DataType::bf16, {kl, nl});
    const bool col_major_d = !row;
    // C shares D's unit-stride dimension: column-major like D's slices in a column split.
    const std::vector<std::int64_t> c_shape{m, nl}, c_strides = strides_for({m, nl}, col_major_d);
    const TensorLayout c_layout(out_type, c_shape, c_strides);
    const dist::ParallelOptions parallel{c.parallelism, c.collective, c.chunks};
    dist::Matmul mm = c.residual ? dist::Matmul(comm, a_layout, b_layout, c_layout, options, parallel)
                                 : dist::Matmul(comm, a_layout, b_layout, options, parallel);
    mm.plan();
    struct Rank {
        Dev a, b, bias, c, d, out;
    };
    std::vector<Rank> data(std::size_t(comm.local_size()));
    std::vector<RankOperands> ops;
    for (int i = 0; i < comm.local_size(); ++i) {
        const int r = comm.rank(i), dev = comm.device(i);
        Rank& x = data[std::size_t(i)];
        x.a = upload_on(dev, row ? slice(a, r * kl, kl, false) : a);
        x.b = upload_on(dev, row ? slice(b, r * kl, kl, true) : slice(b, r * nl, nl, false));
        Host bias_l(out_type, {nl});
        for (std::int64_t j = 0; j < nl; ++j) bias_l.v[std::size_t(j)] = bias_full.v[std::size_t(row ? j : r * nl + j)];
        x.bias = upload_on(dev, bias_l);
        x.d = poisoned_on(dev, out_type, {m, nl}, strides_for({m, nl}, col_major_d));
        if (c.residual)
            x.c = upload_on(dev, row ? c_full : slice(c_full, r * nl, nl, false), strides_for({m, nl}, col_major_d));
        std::int64_t out_count = 0;
        switch (c.collective) {
            case OutputCollective::none:
                break;
            case OutputCollective::all_gather:
                out_count = m * nl * p;
                break;
            case OutputCollective::all_reduce:
                out_count = m * nl;
                break;
            case OutputCollective::reduce_scatter:
                out_count = m * nl / p;
                break;
        }
        if (c.collective == OutputCollective::all_reduce)  // laid out as d
            x.out = poisoned_on(dev, out_type, {m, nl}, strides_for({m, nl}, col_major_d));
        else if (out_count > 0) x.out = poisoned_on(dev, out_type, {out_count});
        MatmulArgs args;
        if (c.bias) args.bias = x.bias.view;
        if (c.residual) {
            args.c = x.c.view;
            args.beta = 1.0;
        }
        ops.push_back({x.a.view, x.b.view, x.d.view, x.out.view, args, streams[std::size_t(i)]});
    }
    if (capture) {
        const core::Graph graph = core::Graph::capture(streams[0], [&](core::StreamRef s0) {
            for (int i = 1; i < p; ++i) streams[std::size_t(i)].wait(s0);
            (void)mm.execute(ops);
            for (int i = 1; i < p; ++i) s0.wait(streams[std::size_t(i)]);
        });
        graph.launch(streams[0]);
        graph.launch(streams[0]);
        streams[0].synchronize();
    } else {
        (void)mm.execute(ops);
        synchronize(streams);
    }
    const double tol = tolerance(DataType::bf16, out_type) * (row ? 2.0 : 1.0);
    for (int i = 0; i < comm.local_size(); ++i) {
        const int r = comm.rank(i), dev = comm.device(i);
        const Rank& x = data[std::size_t(i)];
        // The rank's own D: its column slice, or (row, rank 0 with the bias) a partial sum.
        if (!row) {
            const Host d = download_on(dev, x.d.view);
            const Host want_slice = slice(want, r * nl, nl, false);
            EXPECT_LT(relative_error(d, want_slice), tol) << "rank " << r << ": " << worst_elements(d, want_slice);
        }
        if (c.collective == OutputCollective::none) continue;
        const Host out = download_on(dev, x.out.view);
        Host expected(out_type, {out.size()});
        for (std::int64_t e = 0; e < out.size(); ++e) {
            std::int64_t row_i = 0, col_j = 0;
            if (c.collective == OutputCollective::all_gather) {
                // Rank q's column-major (m, nl) block after rank q-1's: the (m, n) column-major D.
                col_j = e / m;
                row_i = e % m;
            } else {
                // Row-major (m, n) D; reduce_scatter keeps block r of its elements (of each chunk's).
                std::int64_t flat = e;
                if (c.collective == OutputCollective::reduce_scatter) {
                    const std::int64_t per_chunk = out.size() / c.chunks;  // this rank's elements of one chunk
                    flat = (e / per_chunk) * per_chunk * p + r * per_chunk + e % per_chunk;
                }
                row_i = flat / n;
                col_j = flat % n;
            }
            expected.v[std::size_t(e)] = want.at({row_i, col_j});
        }
        EXPECT_LT(relative_error(out, expected), tol)
            << "rank " << r << " " << to_string(c.collective) << ": " << worst_elements(out, expected);
    }
}

}  // namespace

TEST(DistMatmul, ColumnParallelSlicesAndTheirAllGatherMatchTheWholeProduct) {
    GPUMATH_REQUIRE_GPU();
    run_linear({Parallelism::column, OutputCollective::none, 1, true}, false);
    run_linear({Parallelism::column, OutputCollective::all_gather, 1, true}, false);
}

TEST(DistMatmul, RowParallelAllReduceAndReduceScatterMatchTheWholeProductWithTheBiasOnce) {
    GPUMATH_REQUIRE_GPU();
    run_linear({Parallelism::row, OutputCollective::all_reduce, 1, true}, false);
    run_linear({Parallelism::row, OutputCollective::reduce_scatter, 1, false}, false);
}

TEST(DistMatmul, ChunkedRowParallelPipelineMatchesTheWholeProduct) {
    GPUMATH_REQUIRE_GPU();
    run_linear({Parallelism::row, OutputCollective::all_reduce, 3, true}, false);
    run_linear({Parallelism::row, OutputCollective::all_reduce, 4, false}, false);
    run_linear({Parallelism::row, OutputCollective::reduce_scatter, 3, true}, false);
}

TEST(DistMatmul, AResidualCIsAddedOnceByARowSplitAndPerSliceByAColumnSplit) {
    GPUMATH_REQUIRE_GPU();
    run_linear({Parallelism::row, OutputCollective::all_reduce, 1, true, true}, false);
    run_linear({Parallelism::column, OutputCollective::all_gather, 1, false, true}, false);
}

TEST(DistMatmul, CapturedProductsAndCollectivesReplay) {
    GPUMATH_REQUIRE_GPU();
    run_linear({Parallelism::column, OutputCollective::all_gather, 1, false}, true);
    run_linear({Parallelism::row, OutputCollective::all_reduce, 3, true}, true);
}

TEST(DistMatmul, BadOperandsAreRefusedBeforeAnythingIsEnqueued) {
    GPUMATH_REQUIRE_GPU();
    Communicator comm{0};
    const TensorLayout a(DataType::bf16, {32, 64});
    const TensorLayout b(DataType::bf16, {64, 16});
    dist::Matmul mm(comm, a, b, {}, {Parallelism::row, OutputCollective::all_reduce});
    auto rng = test::rng_for_test();
    auto da = upload_on(0, random_host(DataType::bf16, {32, 64}, rng));
    auto db = upload_on(0, random_host(DataType::bf16, {64, 16}, rng));
    auto dd = poisoned_on(0, DataType::bf16, {32, 16});
    auto small = poisoned_on(0, DataType::bf16, {16});
    test::expect_throw_with<InvalidArgument>(
        [&] {
            (void)mm.execute({da.view, db.view, dd.view, small.view});
        },
        {"ranks[0].out", "laid out as d"});
    test::expect_throw_with<InvalidArgument>(
        [&] {
            (void)mm.execute({db.view, db.view, dd.view, dd.view});
        },
        {"ranks[0].a"});
    const Host untouched = download_on(0, dd.view);
    EXPECT_TRUE(std::isnan(untouched.v[0].real())) << "nothing ran";
    std::vector<RankOperands> two(2);
    test::expect_throw_with<InvalidArgument>([&] { (void)mm.execute(two); }, {"2 RankOperands", "1 local rank"});
    dist::Matmul moved = std::move(mm);
    test::expect_throw_with<InvalidArgument>([&] { mm.plan(); },
                                             {"moved-from dist::Matmul"});  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(moved.parallel().collective, OutputCollective::all_reduce);
}

TEST(DistMatmul, TheProductKeepsTheCommunicatorsNcclStateAfterTheCommunicatorIsGone) {
    GPUMATH_REQUIRE_GPU();
    auto rng = test::rng_for_test();
    const Host a = random_host(DataType::bf16, {40, 64}, rng);
    const Host b = random_host(DataType::bf16, {64, 24}, rng);
    const Host want = reference(a, b, DataType::f32, {}).d;
    std::optional<dist::Matmul> mm;
    {
        Communicator comm{0};
        mm.emplace(comm, TensorLayout(DataType::bf16, {40, 64}), TensorLayout(DataType::bf16, {64, 24}),
                   MatmulOptions{.result_type = DataType::f32},
                   dist::ParallelOptions{Parallelism::row, OutputCollective::all_reduce});
    }  // the Communicator object is gone; its NCCL communicator lives on in the product
    auto da = upload_on(0, a);
    auto db = upload_on(0, b);
    auto dd = poisoned_on(0, DataType::f32, {40, 24});
    (void)mm->execute({da.view, db.view, dd.view, dd.view});  // all_reduce in place
    const Host got = download_on(0, dd.view);
    EXPECT_LT(relative_error(got, want), tolerance(DataType::bf16, DataType::f32)) << worst_elements(got, want);
}

TEST(DistMatmul, AChunkedPipelineRefusesAnOutThatOverlapsD) {
    GPUMATH_REQUIRE_GPU();
    Communicator comm{0};
    const TensorLayout a(DataType::bf16, {32, 64});
    const TensorLayout b(DataType::bf16, {64, 16});
    dist::Matmul mm(comm, a, b, {.result_type = DataType::f32},
                    {Parallelism::row, OutputCollective::reduce_scatter, 2});
    auto rng = test::rng_for_test();
    auto da = upload_on(0, random_host(DataType::bf16, {32, 64}, rng));
    auto db = upload_on(0, random_host(DataType::bf16, {64, 16}, rng));
    auto dd = poisoned_on(0, DataType::f32, {32, 16});
    // With one rank, block 0 of D is all of D: the in-place form NCCL allows, which the pipeline cannot.
    test::expect_throw_with<InvalidArgument>(
        [&] {
            (void)mm.execute({da.view, db.view, dd.view, dd.view});
        },
        {"ranks[0].out overlaps d", "reduce_scatter"});
    auto out = poisoned_on(0, DataType::f32, {32 * 16});
    (void)mm.execute({da.view, db.view, dd.view, out.view});
    const Host got = download_on(0, out.view);
    const Host d = download_on(0, dd.view);
    const Host want = reference(download_on(0, da.view), download_on(0, db.view), DataType::f32, {}).d;
    EXPECT_LT(relative_error(d, want), tolerance(DataType::bf16, DataType::f32)) << worst_elements(d, want);
    // With one rank the scatter's block is all of D, chunk after chunk: out is D.
    for (std::int64_t e = 0; e < got.size(); ++e) ASSERT_EQ(got.v[std::size_t(e)], d.v[std::size_t(e)]) << e;
}

TEST(DistMatmul, AChunkedFp8PipelineRefusesAmaxAndFinerScalesBeforeAnyWork) {
    GPUMATH_REQUIRE_GPU();
    Communicator comm{0};
    const TensorLayout a(DataType::e4m3, {32, 64});
    const TensorLayout b(DataType::e4m3, {64, 16}, {1, 64});
    const dist::ParallelOptions chunked{Parallelism::row, OutputCollective::all_reduce, 2};
    auto rng = test::rng_for_test();
    auto da = upload_on(0, random_host(DataType::e4m3, {32, 64}, rng));
    auto db = upload_on(0, random_host(DataType::e4m3, {64, 16}, rng), {1, 64});
    auto sa = upload_on(0, random_host(DataType::f32, {32}, rng));
    auto sb = upload_on(0, random_host(DataType::f32, {16}, rng));
    // The finer scale modes' tensors cover all 32 rows; each chunk's product has 16.
    dist::Matmul mm(comm, a, b, {.result_type = DataType::bf16}, chunked);
    auto dd = poisoned_on(0, DataType::bf16, {32, 16});
    RankOperands op{da.view, db.view, dd.view, dd.view};
    op.args.scales = {
        .a_mode = ScaleMode::outer_vector, .b_mode = ScaleMode::outer_vector, .a_tensor = sa.view, .b_tensor = sb.view};
    test::expect_throw_with<NotSupported>([&] { (void)mm.execute(op); },
                                          {"ranks[0].args.scales.a_mode", "outer_vector", "chunks = 1"});
    const Host untouched = download_on(0, dd.view);
    EXPECT_TRUE(std::isnan(untouched.v[0].real())) << "nothing ran";
    // amax_d would hold the last chunk's max only. An e4m3 D joined by NCCL needs NCCL 2.24 and
    // compute capability 9.0 (refused at construction otherwise).
    std::optional<dist::Matmul> fp8_out;
    try {
        fp8_out.emplace(comm, a, b, MatmulOptions{.result_type = DataType::e4m3}, chunked);
    } catch (const NotSupported& e) {
        GTEST_SKIP() << "an e4m3 all_reduce is not available here: " << e.what();
    }
    auto d8 = poisoned_on(0, DataType::e4m3, {32, 16});
    auto amax = poisoned_on(0, DataType::f32, {4});
    RankOperands op8{da.view, db.view, d8.view, d8.view};
    op8.args.scales.amax_d = static_cast<float*>(amax.view.data());
    test::expect_throw_with<InvalidArgument>([&] { (void)fp8_out->execute(op8); },
                                             {"ranks[0].args.scales.amax_d", "chunks = 1"});
}
