// SPDX-License-Identifier: Apache-2.0
// Plans on a GPU: candidate algorithms, autotune and its save/load round trip, plans for other
// operand layouts, concurrency (8 threads on 4 streams == serial, bitwise), the stateless
// cache's eviction and counters, workspace limits, memory resources and logging.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gpumath/core.hpp>
#include <gpumath/log.hpp>
#include <gpumath/matmul.hpp>

#include "common/test_util.hpp"
#include "matmul/internal.hpp"
#include "reference.hpp"

using namespace gpumath;
using namespace gpumath::test::mm;

namespace {

void expect_close(const Host& got, const Host& want, double tol, const std::string& what) {
    const double err = relative_error(got, want);
    EXPECT_LE(err, tol) << what << ": relative error " << err << worst_elements(got, want);
}

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()) + ".txt")).string();
}

bool same_algorithm(const AlgorithmInfo& x, const AlgorithmInfo& y) {
    return x.id == y.id && x.tile_id == y.tile_id && x.stages_id == y.stages_id && x.split_k == y.split_k &&
           x.reduction_scheme == y.reduction_scheme && x.cta_swizzling == y.cta_swizzling &&
           x.custom_option == y.custom_option && x.cluster_shape == y.cluster_shape;
}

std::string text(const AlgorithmInfo& a) {
    std::ostringstream s;
    s << "algorithm " << a.id << " tile " << a.tile << " stages " << a.stages << " split-k " << a.split_k << " cluster "
      << a.cluster_shape << " swizzle " << a.cta_swizzling << " custom " << a.custom_option;
    return s.str();
}

}  // namespace

TEST(MatmulPlans, CandidatesAreListedAndEachOneComputesTheProduct) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 256, N = 192, K = 320;
    const Host a = random_host(DataType::bf16, {M, K}, rng), b = random_host(DataType::bf16, {K, N}, rng);
    const Host bias = random_host(DataType::bf16, {N}, rng);
    const Dev da = upload(a), db = upload(b), dbias = upload(bias);
    const RefResult want = reference(a, b, DataType::bf16, {.bias = &bias, .epilog = Epilog::gelu_bias});
    Matmul mm(da.view, db.view, {.epilog = Epilog::gelu_bias});
    const auto& algorithms = mm.plan({.max_algorithms = 6});
    ASSERT_FALSE(algorithms.empty());
    EXPECT_LE(algorithms.size(), 6u);
    EXPECT_TRUE(same_algorithm(mm.algorithm(), algorithms.front()));
    for (std::size_t i = 0; i < algorithms.size(); ++i) {
        const AlgorithmInfo& info = algorithms[i];
        SCOPED_TRACE("candidate " + std::to_string(i) + ": " + text(info));
        EXPECT_GE(info.id, 0);
        EXPECT_FALSE(info.tile.empty());
        EXPECT_FALSE(info.stages.empty());
        EXPECT_GE(info.split_k, 1);
        EXPECT_LE(info.workspace_bytes, default_workspace_limit);
        EXPECT_LT(info.time_ms, 0.0) << "not measured before autotune";
        mm.select_algorithm(i);
        const Dev d = poisoned(DataType::bf16, {M, N});
        mm.execute(da.view, db.view, d.view, {.bias = dbias.view});
        expect_close(download(d.view), want.d, 1e-2, "D");
    }
    EXPECT_THROW(mm.select_algorithm(algorithms.size()), InvalidArgument);
}

TEST(MatmulPlans, AutotuneSaveAndLoadRoundTrip) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 512, N = 384, K = 256;
    const auto [a, b, da, db, want] = random_product(DataType::f32, M, N, K, rng);
    const std::string path = temp_path("gpumath-tuning");
    std::filesystem::remove(path);

    AlgorithmInfo tuned;
    {
        Matmul mm(da.view, db.view, {.compute_type = ComputeType::f32_fast_tf32});
        const Dev d = poisoned(DataType::f32, {M, N});
        const auto& ranked = mm.autotune(da.view, db.view, d.view, {}, {}, 5);
        ASSERT_FALSE(ranked.empty());
        for (std::size_t i = 1; i < ranked.size(); ++i) {
            if (ranked[i].time_ms >= 0) {
                EXPECT_LE(ranked[0].time_ms, ranked[i].time_ms) << "fastest first";
            }
        }
        EXPECT_GT(ranked[0].time_ms, 0.0);
        expect_close(download(d.view), want.d, 5e-4, "D after autotune");
        // Pick a candidate other than the heuristic's first, so loading it is observable.
        if (ranked.size() > 1) mm.select_algorithm(ranked.size() - 1);
        tuned = mm.algorithm();
        mm.save_tuning(path);
        mm.save_tuning(path);  // saving twice keeps one entry
    }
    {
        std::ifstream in(path);
        std::string line;
        int entries = 0;
        while (std::getline(in, line))
            if (!line.empty() && line[0] != '#') ++entries;
        EXPECT_EQ(entries, 1);
    }
    {
        Matmul mm(da.view, db.view, {.compute_type = ComputeType::f32_fast_tf32});
        EXPECT_TRUE(mm.load_tuning(path));
        const Dev d = poisoned(DataType::f32, {M, N});
        mm.execute(da.view, db.view, d.view);
        EXPECT_TRUE(same_algorithm(mm.algorithm(), tuned))
            << "loaded " << text(mm.algorithm()) << "\nsaved  " << text(tuned);
        expect_close(download(d.view), want.d, 5e-4, "D with the loaded algorithm");
        // Loading after planning applies to the current plan.
        Matmul again(da.view, db.view, {.compute_type = ComputeType::f32_fast_tf32});
        again.plan();
        EXPECT_TRUE(again.load_tuning(path));
        EXPECT_TRUE(same_algorithm(again.algorithm(), tuned));
    }
    {
        // Another problem finds nothing in the file.
        Matmul other(da.view, db.view, {.compute_type = ComputeType::f32_fast_bf16});
        EXPECT_FALSE(other.load_tuning(path));
    }
    {
        // A stale entry (another cuBLASLt version) is ignored, never misused.
        std::ifstream in(path);
        std::stringstream all;
        all << in.rdbuf();
        std::string content = all.str();
        std::string out;
        std::istringstream lines(content);
        std::string line;
        while (std::getline(lines, line)) {
            if (!line.empty() && line[0] != '#') {
                // Fields: name, cc, version, key, algo, workspace, time.
                std::vector<std::string> f;
                std::size_t start = 0, tab;
                while ((tab = line.find('\t', start)) != std::string::npos) {
                    f.push_back(line.substr(start, tab - start));
                    start = tab + 1;
                }
                f.push_back(line.substr(start));
                f[2] = "1";
                line.clear();
                for (std::size_t i = 0; i < f.size(); ++i) line += (i ? "\t" : "") + f[i];
            }
            out += line + "\n";
        }
        std::ofstream(path, std::ios::trunc) << out;
        Matmul mm(da.view, db.view, {.compute_type = ComputeType::f32_fast_tf32});
        EXPECT_FALSE(mm.load_tuning(path));
        const auto& fresh = mm.plan();
        EXPECT_TRUE(same_algorithm(mm.algorithm(), fresh.front()));
    }
    {
        // save_tuning keeps other GPUs' lines, but never grows a file past what load_tuning reads.
        std::ofstream out(path, std::ios::trunc);
        out << "# gpumath matmul tuning v1\n";
        const std::string other = "Other GPU\t8.0\t1\t0:/\t" + std::string(128, '0') + "\t0\t1\n";
        const std::uintmax_t limit = std::uintmax_t(64) << 20;
        for (std::uintmax_t written = 27; written + other.size() < limit; written += other.size()) out << other;
        out.close();
        ASSERT_LE(std::filesystem::file_size(path), limit);
        Matmul mm(da.view, db.view, {.compute_type = ComputeType::f32_fast_tf32});
        mm.plan();
        const auto before = std::filesystem::file_size(path);
        gpumath::test::expect_throw_with<InvalidArgument>([&] { mm.save_tuning(path); },
                                                          {"Matmul::save_tuning", "64 MiB", "new tuning file"});
        EXPECT_EQ(std::filesystem::file_size(path), before) << "left as it was";
        EXPECT_FALSE(mm.load_tuning(path));  // still readable: nothing for this GPU
    }
    {
        // A FIFO at the old fixed temporary name neither blocks save_tuning nor is written through;
        // saving leaves no temporary file behind.
        std::filesystem::remove(path);
        const std::string fifo = path + ".tmp";
        (void)std::remove(fifo.c_str());
        ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
        Matmul mm(da.view, db.view, {.compute_type = ComputeType::f32_fast_tf32});
        mm.plan();
        mm.save_tuning(path);
        EXPECT_TRUE(std::filesystem::is_fifo(fifo));
        std::size_t files = 0;
        for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
            files += e.path().string().rfind(path, 0) == 0 ? 1 : 0;
        EXPECT_EQ(files, 2u) << "the tuning file and the FIFO, no temporary file";
        Matmul again(da.view, db.view, {.compute_type = ComputeType::f32_fast_tf32});
        EXPECT_TRUE(again.load_tuning(path));
        (void)std::remove(fifo.c_str());
    }
    EXPECT_FALSE(Matmul(da.view, db.view).load_tuning(path + ".missing"));
    std::filesystem::remove(path);
}

TEST(MatmulPlans, AutotuneTriesOtherSplitKFactorsAndEachComputesTheProduct) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    // Few output tiles and a long K: the shape split-K exists for.
    const std::int64_t M = 64, N = 256, K = 8192;
    const auto [a, b, da, db, want] = random_product(DataType::bf16, M, N, K, rng);
    Matmul mm(da.view, db.view);
    const std::size_t planned = mm.plan().size();
    const Dev d = poisoned(DataType::bf16, {M, N});
    const auto ranked = mm.autotune(da.view, db.view, d.view, {}, {}, 3);
    EXPECT_GT(ranked.size(), planned) << "autotune adds split-K variants of the first candidate";
    std::vector<int> factors;
    for (const AlgorithmInfo& info : ranked)
        if (std::find(factors.begin(), factors.end(), info.split_k) == factors.end()) factors.push_back(info.split_k);
    EXPECT_GE(factors.size(), 3u) << "split-K factors among the candidates";
    for (std::size_t i = 0; i < ranked.size(); ++i) {
        SCOPED_TRACE("candidate " + std::to_string(i) + ": " + text(ranked[i]));
        EXPECT_LE(ranked[i].workspace_bytes, default_workspace_limit);
        mm.select_algorithm(i);
        const Dev di = poisoned(DataType::bf16, {M, N});
        mm.execute(da.view, db.view, di.view);
        expect_close(download(di.view), want.d, 1e-2, "D");
    }
}

TEST(MatmulPlans, ReplannedPlansAreFreedAndTheNewPlanComputesTheProduct) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 96, N = 64, K = 128;
    const auto [a, b, da, db, want] = random_product(DataType::f32, M, N, K, rng);
    Matmul mm(da.view, db.view);
    mm.plan();
    const std::size_t live = gpumath::detail::live_matmul_plans();
    for (int i = 0; i < 50; ++i) mm.plan({.max_algorithms = 1 + i % 4});
    EXPECT_EQ(gpumath::detail::live_matmul_plans(), live) << "each plan() replaces the plan before it";
    const Dev d = poisoned(DataType::f32, {M, N});
    for (int i = 0; i < 3; ++i) (void)mm.autotune(da.view, db.view, d.view, {}, {}, 2);
    EXPECT_EQ(gpumath::detail::live_matmul_plans(), live) << "so does each autotune()";
    const Dev d2 = poisoned(DataType::f32, {M, N});
    mm.execute(da.view, db.view, d2.view);
    expect_close(download(d2.view), want.d, 5e-4, "D after 50 plans and 3 autotunes");
}

TEST(MatmulPlans, AutotuneInPlaceRestoresC) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 128, N = 96, K = 64;
    const Host a = random_host(DataType::f32, {M, K}, rng), b = random_host(DataType::f32, {K, N}, rng);
    const Host c = random_host(DataType::f32, {M, N}, rng);
    const Dev da = upload(a), db = upload(b), d = upload(c);
    const RefResult want = reference(a, b, DataType::f32, {.beta = 1.0, .c = &c});
    Matmul mm(da.view, db.view, d.view);
    mm.autotune(da.view, db.view, d.view, {.beta = 1.0, .c = d.view}, {}, 3);
    expect_close(download(d.view), want.d, 1e-5, "D = A B + C after autotune in place");
}

TEST(MatmulPlans, OtherOperandLayoutsGetTheirOwnPlan) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 64, N = 48, K = 32;
    const Host a = random_host(DataType::f32, {M, K}, rng), b = random_host(DataType::f32, {K, N}, rng);
    const Host col_bias = random_host(DataType::f32, {N}, rng), row_bias = random_host(DataType::f32, {M, 1}, rng);
    const Dev da = upload(a), db = upload(b), dcol = upload(col_bias), drow = upload(row_bias);
    Matmul mm(da.view, db.view, {.epilog = Epilog::relu_bias});
    const auto planned = mm.plan();
    for (int round = 0; round < 2; ++round) {
        {
            const RefResult want = reference(a, b, DataType::f32, {.bias = &col_bias, .epilog = Epilog::relu_bias});
            const Dev d = poisoned(DataType::f32, {M, N});
            mm.execute(da.view, db.view, d.view, {.bias = dcol.view});
            expect_close(download(d.view), want.d, 1e-5, "row-major d, bias per column");
        }
        {
            const RefResult want = reference(a, b, DataType::f32, {.bias = &row_bias, .epilog = Epilog::relu_bias});
            const Dev d = poisoned(DataType::f32, {M, N}, strides_for({M, N}, true));
            mm.execute(da.view, db.view, d.view, {.bias = drow.view});
            expect_close(download(d.view), want.d, 1e-5, "column-major d, bias per row");
        }
    }
    ASSERT_EQ(mm.algorithms().size(), planned.size());
    EXPECT_TRUE(same_algorithm(mm.algorithm(), planned.front())) << "the primary plan is unchanged";
}

TEST(MatmulPlans, ConcurrentCallsMatchSerialBitwise) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    constexpr int threads = 8, streams_n = 4, calls = 6;
    std::vector<core::Stream> streams;
    for (int i = 0; i < streams_n; ++i) streams.emplace_back();

    // Three problem kinds with fresh inputs per (thread, call).
    struct Call {
        int kind = 0;
        Dev a, b, bias, d;
        std::vector<unsigned char> serial_d, serial_aux;
    };
    auto make = [&](int kind) {
        Call c;
        c.kind = kind;
        if (kind == 0) {
            c.a = upload(random_host(DataType::f32, {192, 96}, rng));
            c.b = upload(random_host(DataType::f32, {96, 160}, rng));
            c.bias = upload(random_host(DataType::f32, {160}, rng));
            c.d = poisoned(DataType::f32, {192, 160});
        } else if (kind == 1) {
            c.a = upload(random_host(DataType::bf16, {128, 64}, rng));
            c.b = upload(random_host(DataType::bf16, {64, 256}, rng));
            c.bias = upload(random_host(DataType::bf16, {256}, rng));
            c.d = poisoned(DataType::bf16, {128, 256});
        } else {
            c.a = upload(random_host(DataType::f32, {4, 64, 48}, rng));
            c.b = upload(random_host(DataType::f32, {48, 32}, rng), strides_for({48, 32}, true));
            c.d = poisoned(DataType::f32, {4, 64, 32});
        }
        return c;
    };
    std::vector<std::vector<Call>> work(threads);
    for (int t = 0; t < threads; ++t)
        for (int i = 0; i < calls; ++i) work[std::size_t(t)].push_back(make((t + i) % 3));

    Matmul shared(work[0][0].a.view, work[0][0].b.view, {.epilog = Epilog::relu_bias});
    auto run = [&](Call& c, core::StreamRef s) -> std::vector<unsigned char> {
        if (c.kind == 0) {
            // The shared Matmul object, with a different bias pointer on every call.
            shared.execute(c.a.view, c.b.view, c.d.view, {.bias = c.bias.view}, s);
            return {};
        }
        if (c.kind == 1) {
            MatmulOutputs out =
                matmul(c.a.view, c.b.view, c.d.view, {.bias = c.bias.view}, {.epilog = Epilog::gelu_aux_bias}, s);
            s.synchronize();
            return download_bytes(out.aux_view, s);
        }
        matmul(c.a.view, c.b.view, c.d.view, {.alpha = 0.5}, {}, s);
        return {};
    };
    for (int t = 0; t < threads; ++t)
        for (Call& c : work[std::size_t(t)]) {
            c.serial_aux = run(c, streams[0]);
            c.serial_d = download_bytes(c.d.view, streams[0]);
            ASSERT_EQ(cudaMemsetAsync(c.d.view.data(), 0xFF, std::size_t(c.d.view.span_bytes()), streams[0].handle()),
                      cudaSuccess);
        }
    streams[0].synchronize();

    std::vector<std::vector<std::vector<unsigned char>>> aux(threads);
    const std::vector<std::string> errors =
        gpumath::test::run_on_threads(threads, streams, [&](int t, core::StreamRef s) {
            for (Call& c : work[std::size_t(t)]) aux[std::size_t(t)].push_back(run(c, s));
        });
    for (int t = 0; t < threads; ++t) {
        ASSERT_TRUE(errors[std::size_t(t)].empty()) << "thread " << t << ": " << errors[std::size_t(t)];
        for (std::size_t i = 0; i < work[std::size_t(t)].size(); ++i) {
            Call& c = work[std::size_t(t)][i];
            EXPECT_TRUE(download_bytes(c.d.view) == c.serial_d)
                << "thread " << t << " call " << i << " (kind " << c.kind << "): D differs from the serial run";
            EXPECT_TRUE(aux[std::size_t(t)][i] == c.serial_aux) << "thread " << t << " call " << i << ": aux differs";
        }
    }
}

TEST(MatmulPlans, StatelessCacheEvictsLeastRecentlyUsed) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const std::size_t capacity = matmul_plan_cache().capacity();
    matmul_plan_cache().set_capacity(2);
    matmul_plan_cache().clear();
    matmul_plan_cache().reset_stats();
    struct P {
        Host a, b;
        Dev da, db;
    };
    std::vector<P> problems;
    for (std::int64_t n : {16, 24, 40}) {
        P p;
        p.a = random_host(DataType::f32, {32, 16}, rng);
        p.b = random_host(DataType::f32, {16, n}, rng);
        p.da = upload(p.a);
        p.db = upload(p.b);
        problems.push_back(std::move(p));
    }
    auto run = [&](std::size_t i) {
        const P& p = problems[i];
        const Dev d = poisoned(DataType::f32, {32, p.b.shape[1]});
        matmul(p.da.view, p.db.view, d.view);
        expect_close(download(d.view), reference(p.a, p.b, DataType::f32, {}).d, 1e-5, "problem " + std::to_string(i));
    };
    run(0);
    run(1);
    run(1);
    auto s = matmul_plan_cache().stats();
    EXPECT_EQ(s.misses, 2u);
    EXPECT_EQ(s.hits, 1u);
    EXPECT_EQ(s.evictions, 0u);
    run(2);  // evicts problem 0
    s = matmul_plan_cache().stats();
    EXPECT_EQ(s.evictions, 1u);
    EXPECT_EQ(s.size, 2u);
    run(0);  // planned again, evicts problem 1
    s = matmul_plan_cache().stats();
    EXPECT_EQ(s.misses, 4u);
    EXPECT_EQ(s.evictions, 2u);
    run(2);
    EXPECT_EQ(matmul_plan_cache().stats().hits, 2u);
    matmul_plan_cache().clear();
    EXPECT_EQ(matmul_plan_cache().stats().size, 0u);
    matmul_plan_cache().set_capacity(capacity);
}

TEST(MatmulPlans, WorkspaceLimitAndMemoryResource) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const std::int64_t M = 512, N = 256, K = 2048;
    const auto [a, b, da, db, want] = random_product(DataType::bf16, M, N, K, rng);
    Matmul none(da.view, db.view, {.workspace_limit = 0});
    for (const AlgorithmInfo& info : none.plan()) EXPECT_EQ(info.workspace_bytes, 0u) << text(info);
    auto pool = std::make_shared<core::DeviceMemoryResource>();
    MatmulResult r = none.execute(da.view, db.view);
    expect_close(download(r.d.view()), want.d, 1e-2, "no workspace");
    MatmulResult pooled = matmul(da.view, db.view, {}, {.memory_resource = pool});
    EXPECT_EQ(pooled.d.buffer().memory_resource().get(), pool.get());
    expect_close(download(pooled.d.view()), want.d, 1e-2, "own memory resource");
    EXPECT_GT(pool->used_bytes(), 0u);
}

TEST(MatmulPlans, PlanChoicesAreLoggedAtDebugLevel) {
    GPUMATH_REQUIRE_GPU();
    auto rng = gpumath::test::rng_for_test();
    const Host a = random_host(DataType::f32, {24, 8}, rng), b = random_host(DataType::f32, {8, 40}, rng);
    const Dev da = upload(a), db = upload(b);
    const Dev d = poisoned(DataType::f32, {24, 40});
    const LogLevel before = log_level();
    set_log_level(LogLevel::debug);
    matmul_plan_cache().clear();
    ::testing::internal::CaptureStderr();
    matmul(da.view, db.view, d.view);
    matmul(da.view, db.view, d.view);
    const std::string log = ::testing::internal::GetCapturedStderr();
    set_log_level(before);
    EXPECT_NE(log.find("matmul plan: algorithm"), std::string::npos) << log;
    EXPECT_NE(log.find("tile"), std::string::npos) << log;
    EXPECT_NE(log.find("plan cache miss"), std::string::npos) << log;
    EXPECT_NE(log.find("plan cache hit"), std::string::npos) << log;
}
