// SPDX-License-Identifier: Apache-2.0
// gpumath's matmul against raw cuBLASLt (the heuristic's top algorithm, descriptors kept) on the
// same buffers in the same process: large bf16 products (plain and after autotune), fused
// bias + GELU, linear layers, FP8, and the host cost per call of small products.
//
//   bench_matmul [--quick] [--json PATH] [name filters...]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <cublasLt.h>

#include <gpumath/core.hpp>
#include <gpumath/matmul.hpp>

#include "harness.hpp"

using namespace gpumath;
using bench::compare;
using bench::config_text;
using bench::random_device;
using bench::RawLt;
using bench::tflops;
using bench::Timing;

namespace {

std::string cube(std::int64_t n) { return std::to_string(n) + "^3"; }

}  // namespace

int main(int argc, char** argv) {
    bench::require_gpu("bench_matmul");
    bench::Reporter report("bench_matmul", argc, argv);
    bench::print_environment("bench_matmul");
    std::printf(
        "cuBLASLt %zu; inputs uniform in (-0.5, 0.5); raw = cublasLtMatmul with the heuristic's first "
        "algorithm and kept descriptors, same buffers\n",
        cublasLtGetVersion());
    core::Stream stream;
    const cudaStream_t s = stream.handle();
    const bool quick = report.quick();
    const Timing timing = quick ? Timing{2, 7, 4, 0.2} : Timing{5, 21, 6, 2.0};

    // ---- bf16 M = N = K, row-major: gpumath computes D^T = B^T A^T, as raw does here.
    const std::vector<std::int64_t> sizes =
        quick ? std::vector<std::int64_t>{2048, 1024} : std::vector<std::int64_t>{8192, 4096, 1024};
    for (std::int64_t n : sizes) {
        const std::string group = "bf16 " + cube(n);
        if (!report.selected(group)) continue;
        const auto count = std::size_t(n * n);
        core::Buffer a = random_device(DataType::bf16, count, 1, s), b = random_device(DataType::bf16, count, 2, s);
        core::Buffer d(count * 2, stream);
        const TensorView av(a.data(), DataType::bf16, {n, n}), bv(b.data(), DataType::bf16, {n, n}),
            dv(d.data(), DataType::bf16, {n, n});
        RawLt raw({.m = std::uint64_t(n), .n = std::uint64_t(n), .k = std::uint64_t(n)});
        Matmul mm(av, bv);
        mm.plan();
        const double flops = 2.0 * double(n) * double(n) * double(n);
        auto [raw_ms, ours_ms] = compare(
            s, [&](int) { raw.run(b.data(), a.data(), d.data(), s); }, [&](int) { mm.execute(av, bv, dv, {}, stream); },
            timing);
        report.add({group, "raw cuBLASLt", "TFLOP/s", tflops(flops, raw_ms), 0, raw.algorithm()});
        report.add({group, "Matmul.execute", "TFLOP/s", tflops(flops, ours_ms), raw_ms / ours_ms,
                    config_text(mm.algorithm()) + " tile " + mm.algorithm().tile});
        mm.autotune(av, bv, dv, {}, stream, quick ? 3 : 10);
        auto [raw2_ms, tuned_ms] = compare(
            s, [&](int) { raw.run(b.data(), a.data(), d.data(), s); }, [&](int) { mm.execute(av, bv, dv, {}, stream); },
            timing);
        report.add({group, "Matmul after autotune", "TFLOP/s", tflops(flops, tuned_ms), raw2_ms / tuned_ms,
                    config_text(mm.algorithm()) + " tile " + mm.algorithm().tile});
    }

    // ---- bf16 with fused bias + GELU.
    for (std::int64_t n : quick ? std::vector<std::int64_t>{2048} : std::vector<std::int64_t>{8192, 4096}) {
        const std::string group = "bf16 + bias + GELU " + cube(n);
        if (!report.selected(group)) continue;
        const auto count = std::size_t(n * n);
        core::Buffer a = random_device(DataType::bf16, count, 3, s), b = random_device(DataType::bf16, count, 4, s);
        core::Buffer bias = random_device(DataType::bf16, std::size_t(n), 5, s);
        core::Buffer d(count * 2, stream);
        const TensorView av(a.data(), DataType::bf16, {n, n}), bv(b.data(), DataType::bf16, {n, n}),
            dv(d.data(), DataType::bf16, {n, n});
        const TensorView biasv(bias.data(), DataType::bf16, {n});
        RawLt raw({.m = std::uint64_t(n),
                   .n = std::uint64_t(n),
                   .k = std::uint64_t(n),
                   .epilogue = CUBLASLT_EPILOGUE_GELU_BIAS});
        raw.set_pointer(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias.data());
        Matmul mm(av, bv, {.epilog = Epilog::gelu_bias});
        mm.plan();
        const double flops = 2.0 * double(n) * double(n) * double(n);
        auto [raw_ms, ours_ms] = compare(
            s, [&](int) { raw.run(b.data(), a.data(), d.data(), s); },
            [&](int) { mm.execute(av, bv, dv, {.bias = biasv}, stream); }, timing);
        report.add({group, "raw cuBLASLt GELU_BIAS", "TFLOP/s", tflops(flops, raw_ms), 0, raw.algorithm()});
        report.add({group, "Matmul.execute", "TFLOP/s", tflops(flops, ours_ms), raw_ms / ours_ms,
                    config_text(mm.algorithm())});
    }

    // ---- bf16 linear layer y = x W^T: x (m, k) row-major, W (n, k) row-major, n = k = 8192.
    {
        const std::int64_t n = quick ? 2048 : 8192, k = n;
        core::Buffer w = random_device(DataType::bf16, std::size_t(n * k), 6, s);
        for (std::int64_t m : {1, 16, 64, 256}) {
            const std::string group = "bf16 linear m=" + std::to_string(m) + " n=k=" + std::to_string(n);
            if (!report.selected(group)) continue;
            core::Buffer x = random_device(DataType::bf16, std::size_t(m * k), 7, s);
            core::Buffer y(std::size_t(m * n) * 2, stream);
            const TensorView xv(x.data(), DataType::bf16, {m, k});
            const TensorView wt(w.data(), DataType::bf16, {k, n}, {1, k});  // W^T
            const TensorView yv(y.data(), DataType::bf16, {m, n});
            // Column-major: y^T (n x m) = W (op T on the stored k x n) x^T (k x m).
            RawLt raw({.m = std::uint64_t(n), .n = std::uint64_t(m), .k = std::uint64_t(k), .op_a = CUBLAS_OP_T});
            Matmul mm(xv, wt);
            mm.plan();
            const Timing t = quick ? Timing{3, 11, 4, 0.2} : Timing{10, 51, 6, 2.0};
            auto [raw_ms, ours_ms] = compare(
                s, [&](int) { raw.run(w.data(), x.data(), y.data(), s); },
                [&](int) { mm.execute(xv, wt, yv, {}, stream); }, t);
            const double flops = 2.0 * double(m) * double(n) * double(k);
            report.add({group, "raw cuBLASLt", "ms", raw_ms, 0,
                        std::to_string(tflops(flops, raw_ms)) + " TFLOP/s; " + raw.algorithm()});
            report.add({group, "Matmul.execute", "ms", ours_ms, raw_ms / ours_ms,
                        std::to_string(tflops(flops, ours_ms)) + " TFLOP/s; " + config_text(mm.algorithm())});
        }
    }

    // ---- Epilogs in gpumath's elementwise pass: SiLU + bias (cuBLASLt adds the bias, the pass
    // applies SiLU) against cuBLASLt's fused GELU + bias, and a bias per row of a row-major D (the
    // orientation cuBLASLt refuses: added in the pass) against the fused bias per column. x (m, k)
    // row-major times W^T (W (n, k) row-major), D (m, n) row-major; ratios are fused time / pass time.
    {
        struct Shape {
            std::int64_t m, n, k;
        };
        std::vector<Shape> shapes;
        if (quick) shapes = {{2048, 2048, 2048}, {16, 2048, 2048}};
        else
            // The targets' shapes, then short products of 128 MiB of D, each beside the same shape
            // with one row fewer, which runs whole where the first may run in blocks of rows.
            shapes = {{8192, 8192, 8192}, {16, 8192, 8192},   {64, 8192, 8192},   {256, 8192, 8192},
                      {8192, 8192, 1024}, {8191, 8192, 1024}, {8192, 8192, 2048}, {8191, 8192, 2048}};
        for (const Shape& sh : shapes) {
            const std::int64_t m = sh.m, n = sh.n, k = sh.k;
            const std::string group =
                "bf16 epilog pass m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k);
            if (!report.selected(group)) continue;
            core::Buffer x = random_device(DataType::bf16, std::size_t(m * k), 31, s);
            core::Buffer w = random_device(DataType::bf16, std::size_t(n * k), 32, s);
            core::Buffer bias_n = random_device(DataType::bf16, std::size_t(n), 33, s);
            core::Buffer bias_m = random_device(DataType::bf16, std::size_t(m), 34, s);
            core::Buffer y(std::size_t(m * n) * 2, stream);
            const TensorView xv(x.data(), DataType::bf16, {m, k});
            const TensorView wt(w.data(), DataType::bf16, {k, n}, {1, k});
            const TensorView yv(y.data(), DataType::bf16, {m, n});
            const TensorView per_col(bias_n.data(), DataType::bf16, {n}),
                per_row(bias_m.data(), DataType::bf16, {m, 1});
            Matmul gelu(xv, wt, {.epilog = Epilog::gelu_bias}), silu(xv, wt, {.epilog = Epilog::silu_bias});
            Matmul fused_bias(xv, wt, {.epilog = Epilog::bias}), row_bias(xv, wt, {.epilog = Epilog::bias});
            gelu.execute(xv, wt, yv, {.bias = per_col}, stream);
            silu.execute(xv, wt, yv, {.bias = per_col}, stream);
            fused_bias.execute(xv, wt, yv, {.bias = per_col}, stream);
            row_bias.execute(xv, wt, yv, {.bias = per_row}, stream);
            const Timing t = m >= 4096 ? timing : (quick ? Timing{3, 11, 4, 0.2} : Timing{10, 51, 6, 2.0});
            const double flops = 2.0 * double(m) * double(n) * double(k);
            const bool big = m >= 4096 && k >= 4096;
            auto value = [&](double ms) { return big ? tflops(flops, ms) : ms; };
            const char* unit = big ? "TFLOP/s" : "ms";
            auto [gelu_ms, silu_ms] = compare(
                s, [&](int) { gelu.execute(xv, wt, yv, {.bias = per_col}, stream); },
                [&](int) { silu.execute(xv, wt, yv, {.bias = per_col}, stream); }, t);
            report.add({group, "GELU + bias (fused)", unit, value(gelu_ms), 0, config_text(gelu.algorithm())});
            report.add({group, "SiLU + bias (pass)", unit, value(silu_ms), gelu_ms / silu_ms,
                        "ratio = fused GELU+bias time / SiLU+bias time (target >= 0.95)"});
            auto [col_ms, row_ms] = compare(
                s, [&](int) { fused_bias.execute(xv, wt, yv, {.bias = per_col}, stream); },
                [&](int) { row_bias.execute(xv, wt, yv, {.bias = per_row}, stream); }, t);
            report.add({group, "bias per column (fused)", unit, value(col_ms), 0, config_text(fused_bias.algorithm())});
            report.add({group, "bias per row (pass)", unit, value(row_ms), col_ms / row_ms,
                        "ratio = fused per-column time / per-row time (target >= 0.97)"});
            // What the product costs without any epilog, against the fused per-column bias.
            Matmul plain(xv, wt);
            plain.execute(xv, wt, yv, {}, stream);
            auto [col2_ms, plain_ms] = compare(
                s, [&](int) { fused_bias.execute(xv, wt, yv, {.bias = per_col}, stream); },
                [&](int) { plain.execute(xv, wt, yv, {}, stream); }, t);
            // The fused figure of this pair is printed too: it moves between pairs with the clocks.
            char note[128];
            std::snprintf(note, sizeof note,
                          "ratio = fused per-column time (%.4g %s in this pair) / time without an epilog",
                          value(col2_ms), unit);
            report.add({group, "product alone", unit, value(plain_ms), col2_ms / plain_ms, note});
        }
    }

    // ---- FP8 e4m3 -> bf16 (A row-major, B column-major: cuBLASLt's TN).
    {
        cudaDeviceProp p{};
        bench::cuda_check(cudaGetDeviceProperties(&p, 0), "properties");
        const bool fp8 = p.major * 10 + p.minor >= 89;
        for (std::int64_t n : quick ? std::vector<std::int64_t>{2048} : std::vector<std::int64_t>{8192, 4096}) {
            const std::string group = "fp8 e4m3 -> bf16 " + cube(n);
            if (!report.selected(group) || !fp8) continue;
            const auto count = std::size_t(n * n);
            core::Buffer a = random_device(DataType::e4m3, count, 8, s), b = random_device(DataType::e4m3, count, 9, s);
            core::Buffer d(count * 2, stream);
            // Each scale its own allocation (as PyTorch's scale tensors are); cuBLASLt's A is the
            // user's B here, so raw's A scale is b's.
            const std::vector<float> one = {1.0f};
            core::Buffer scale_a = core::Buffer::from_host(std::span<const float>(one), stream);
            core::Buffer scale_b = core::Buffer::from_host(std::span<const float>(one), stream);
            const TensorView av(a.data(), DataType::e4m3, {n, n}), bv(b.data(), DataType::e4m3, {n, n}, {1, n});
            const TensorView dv(d.data(), DataType::bf16, {n, n});
            RawLt raw({.ab = CUDA_R_8F_E4M3,
                       .m = std::uint64_t(n),
                       .n = std::uint64_t(n),
                       .k = std::uint64_t(n),
                       .op_a = CUBLAS_OP_T,
                       .scale_a = scale_b.data_as<float>(),
                       .scale_b = scale_a.data_as<float>()});
            const MatmulScales sc{.a = scale_a.data_as<float>(), .b = scale_b.data_as<float>()};
            Matmul mm(av, bv);
            (void)mm.execute(av, bv, dv, {.scales = sc}, stream);  // plans for these scale pointers
            auto [raw_ms, ours_ms] = compare(
                s, [&](int) { raw.run(b.data(), a.data(), d.data(), s); },
                [&](int) { mm.execute(av, bv, dv, {.scales = sc}, stream); }, timing);
            const double flops = 2.0 * double(n) * double(n) * double(n);
            report.add({group, "raw cuBLASLt", "TFLOP/s", tflops(flops, raw_ms), 0, raw.algorithm()});
            report.add({group, "Matmul.execute", "TFLOP/s", tflops(flops, ours_ms), raw_ms / ours_ms,
                        config_text(mm.algorithm())});
        }
    }

    // ---- FP8 with finer scales -> bf16: block-scaled (1x128 activations, 128x128 weights) and
    // row-wise (outer_vector), D (M, N) row-major = a (M, K) row-major x b (K, N) column-major
    // (b = W^T of weights W (N, K)). gpumath computes D^T = B^T A^T; raw does the same with the
    // scale modes and tensors swapped by hand. A third row times gpumath's bf16 product of the
    // same shape, paired with the FP8 one: its ratio is the FP8 speedup (bf16 time / FP8 time).
    {
        cudaDeviceProp p{};
        bench::cuda_check(cudaGetDeviceProperties(&p, 0), "properties");
        struct Shape {
            std::int64_t m, n, k;
        };
        std::vector<Shape> shapes;
        if (quick) {
            shapes = {{2048, 2048, 2048}, {256, 7168, 7168}};
        } else {
            shapes = {{8192, 8192, 8192}, {4096, 4096, 4096}};
            for (std::int64_t m : {128, 256, 512, 1024, 2048, 4096}) shapes.push_back({m, 7168, 7168});
        }
        const std::pair<ScaleMode, ScaleMode> modes[] = {{ScaleMode::block_1x128, ScaleMode::block_128x128},
                                                         {ScaleMode::outer_vector, ScaleMode::outer_vector}};
        for (const auto& [am, bm] : modes)
            for (const Shape& sh : shapes) {
                const std::string kind = am == ScaleMode::outer_vector ? "fp8 rowwise" : "fp8 block 1x128/128x128";
                const std::string group = kind + " -> bf16 m=" + std::to_string(sh.m) + " n=" + std::to_string(sh.n) +
                                          " k=" + std::to_string(sh.k);
                if (!report.selected(group) || p.major != 9) continue;
                const std::int64_t m = sh.m, n = sh.n, k = sh.k;
                core::Buffer a = random_device(DataType::e4m3, std::size_t(m * k), 21, s);
                core::Buffer b = random_device(DataType::e4m3, std::size_t(k * n), 22, s);
                core::Buffer d(std::size_t(m * n) * 2, stream);
                const TensorView av(a.data(), DataType::e4m3, {m, k}), bv(b.data(), DataType::e4m3, {k, n}, {1, k});
                const TensorView dv(d.data(), DataType::bf16, {m, n});
                // Scale tensors of ones in the layouts docs/matmul.md tables (b's as the transpose
                // of its weights' layout).
                const TensorLayout sa_layout = fp8_scale_layout(am, av);
                const TensorLayout w_scales = fp8_scale_layout(bm, bv.transposed());
                const TensorLayout sb_layout = w_scales.rank() >= 2 ? w_scales.transposed() : w_scales;
                const std::vector<float> ones(
                    std::size_t(std::max(sa_layout.span_elements(), sb_layout.span_elements())), 1.0f);
                core::Buffer sa = core::Buffer::from_host(std::span<const float>(ones), stream);
                core::Buffer sb = core::Buffer::from_host(std::span<const float>(ones), stream);
                const MatmulArgs args{.scales = {.a_mode = am,
                                                 .b_mode = bm,
                                                 .a_tensor = TensorView(sa.data(), sa_layout),
                                                 .b_tensor = TensorView(sb.data(), sb_layout)}};
                auto lt_mode = [](ScaleMode x) {
                    return x == ScaleMode::outer_vector  ? std::int32_t(CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F)
                           : x == ScaleMode::block_1x128 ? std::int32_t(CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F)
                                                         : std::int32_t(CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F);
                };
                RawLt raw({.ab = CUDA_R_8F_E4M3,
                           .m = std::uint64_t(n),
                           .n = std::uint64_t(m),
                           .k = std::uint64_t(k),
                           .op_a = CUBLAS_OP_T,
                           .scale_a = sb.data_as<float>(),
                           .scale_b = sa.data_as<float>(),
                           .scale_mode_a = lt_mode(bm),
                           .scale_mode_b = lt_mode(am)});
                Matmul mm(av, bv);
                mm.execute(av, bv, dv, args, stream);  // plans for these scale tensors
                auto [raw_ms, ours_ms] = compare(
                    s, [&](int) { raw.run(b.data(), a.data(), d.data(), s); },
                    [&](int) { mm.execute(av, bv, dv, args, stream); }, timing);
                const double flops = 2.0 * double(m) * double(n) * double(k);
                report.add({group, "raw cuBLASLt", "TFLOP/s", tflops(flops, raw_ms), 0, raw.algorithm()});
                report.add({group, "Matmul.execute", "TFLOP/s", tflops(flops, ours_ms), raw_ms / ours_ms,
                            config_text(mm.algorithm())});
                // gpumath bf16 on the same shape and layouts.
                core::Buffer a16 = random_device(DataType::bf16, std::size_t(m * k), 23, s);
                core::Buffer b16 = random_device(DataType::bf16, std::size_t(k * n), 24, s);
                const TensorView a16v(a16.data(), DataType::bf16, {m, k});
                const TensorView b16v(b16.data(), DataType::bf16, {k, n}, {1, k});
                Matmul bf(a16v, b16v);
                bf.plan();
                auto [bf16_ms, fp8_ms] = compare(
                    s, [&](int) { bf.execute(a16v, b16v, dv, {}, stream); },
                    [&](int) { mm.execute(av, bv, dv, args, stream); }, timing);
                report.add({group, "gpumath bf16", "TFLOP/s", tflops(flops, bf16_ms), bf16_ms / fp8_ms,
                            "ratio = FP8 speedup over bf16 (paired)"});
                // Both autotuned: the FP8 plan against raw's heuristic choice, and the tuned
                // speedup over the tuned bf16 plan.
                mm.autotune(av, bv, dv, args, stream, quick ? 3 : 10);
                bf.autotune(a16v, b16v, dv, {}, stream, quick ? 3 : 10);
                auto [raw2_ms, tuned_ms] = compare(
                    s, [&](int) { raw.run(b.data(), a.data(), d.data(), s); },
                    [&](int) { mm.execute(av, bv, dv, args, stream); }, timing);
                report.add({group, "Matmul after autotune", "TFLOP/s", tflops(flops, tuned_ms), raw2_ms / tuned_ms,
                            config_text(mm.algorithm())});
                auto [bf16t_ms, fp8t_ms] = compare(
                    s, [&](int) { bf.execute(a16v, b16v, dv, {}, stream); },
                    [&](int) { mm.execute(av, bv, dv, args, stream); }, timing);
                report.add({group, "gpumath bf16 after autotune", "TFLOP/s", tflops(flops, bf16t_ms),
                            bf16t_ms / fp8t_ms, "ratio = tuned FP8 speedup over tuned bf16 (paired)"});
            }
    }

    // ---- host cost per call: f32 64^3, bursts of 128, 8 rotating buffer sets.
    {
        const std::string group = "f32 64^3 host time per call";
        if (report.selected(group)) {
            constexpr std::int64_t n = 64;
            constexpr int sets = 8;
            std::vector<core::Buffer> bufs;
            std::vector<TensorView> as, bs, ds;
            for (int i = 0; i < sets; ++i) {
                bufs.push_back(random_device(DataType::f32, n * n, 10 + std::uint64_t(i), s));
                as.emplace_back(bufs.back().data(), DataType::f32, std::initializer_list<std::int64_t>{n, n});
                bufs.push_back(random_device(DataType::f32, n * n, 20 + std::uint64_t(i), s));
                bs.emplace_back(bufs.back().data(), DataType::f32, std::initializer_list<std::int64_t>{n, n});
                bufs.emplace_back(std::size_t(n * n) * 4, stream);
                ds.emplace_back(bufs.back().data(), DataType::f32, std::initializer_list<std::int64_t>{n, n});
            }
            RawLt raw({.ab = CUDA_R_32F, .d = CUDA_R_32F, .c = CUDA_R_32F, .m = n, .n = n, .k = n});
            Matmul mm(as[0], bs[0]);
            mm.plan();
            matmul(as[0], bs[0], ds[0], {}, {}, stream);  // the cache now holds the plan
            const std::vector<double> us = bench::interleaved_host_us(
                s,
                {[&](int i) { raw.run(bs[i % sets].data(), as[i % sets].data(), ds[i % sets].data(), s); },
                 [&](int i) { mm.execute(as[i % sets], bs[i % sets], ds[i % sets], {}, stream); },
                 [&](int i) { matmul(as[i % sets], bs[i % sets], ds[i % sets], {}, {}, stream); }},
                128, quick ? 21 : 151);
            const double r = us[0], e = us[1], st = us[2];
            char note[64];
            report.add({group, "raw cublasLtMatmul", "us/call", r, 0, "descriptors and algorithm kept"});
            std::snprintf(note, sizeof note, "delta %+.2f us (target <= +0.5)", e - r);
            report.add({group, "Matmul.execute", "us/call", e, r / e, note});
            std::snprintf(note, sizeof note, "delta %+.2f us (target <= +1.0)", st - r);
            report.add({group, "matmul() cache hit", "us/call", st, r / st, note});
        }
    }
    return 0;
}
