// SPDX-License-Identifier: Apache-2.0
// FFTs: gpumath (FFT::execute, fft()) against raw cuFFT on the same buffers in the same process.
//   - c2c f32 2^20 x 16, 2^27, 256 x 65536 (n = 256, batch 65536); r2c f32 4096^2, 512^3
//   - host time of fft() on its second call with the same shape vs cufftExecC2C (bursts of 128)
//   - window -> FFT -> scale (2^20 x 16, 65536 x 256): gpumath automatic mode vs raw cuFFT LTO
//     callbacks (fused) and vs a raw window kernel + cufftExecC2C + scale kernel (unfused)
// Usage: bench_fft [--quick] [--json PATH] [name filters...]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <cufftXt.h>

#include <gpumath/core.hpp>
#include <gpumath/fft.hpp>

#include "harness.hpp"

using namespace gpumath;
using bench::Row;

namespace {

std::string ms_note(double a, double b) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "raw %.4f ms, gpumath %.4f ms", a, b);
    return buf;
}

// Median ms per call of raw, and gpumath's from the median ratio of interleaved sample pairs (see
// bench::paired_gpu_ms).
std::pair<double, double> compare(cudaStream_t s, const std::function<void(int)>& raw,
                                  const std::function<void(int)>& ours, int samples) {
    const bench::PairedMs m = bench::paired_gpu_ms(s, raw, ours, 3, samples);
    return {m.a, m.a / m.ratio};
}

void fill(void* p, std::size_t bytes, cudaStream_t s) {
    // Any finite data: FFT time does not depend on values. 0x3c bytes are small positive floats.
    bench::cuda_check(cudaMemsetAsync(p, 0x3c, bytes, s), "cudaMemsetAsync");
}

struct C2CCase {
    const char* name;
    long long n;
    long long batch;
};

constexpr const char* raw_kernels = R"(
extern "C" __global__ void window(const float2* in, float2* out, const float* w, long long n, long long total) {
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < total) { const float2 v = in[i]; const float s = w[i % n]; out[i] = make_float2(v.x * s, v.y * s); }
}
extern "C" __global__ void scale(float2* x, float s, long long total) {
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < total) { const float2 v = x[i]; x[i] = make_float2(v.x * s, v.y * s); }
}
)";

// The load callback gpumath gets, and raw cuFFT too (C++ linkage: cuFFT looks it up by plain name).
std::string window_callback(long long n) {
    return "#include <cuComplex.h>\n__device__ cuComplex window_load(void* in, unsigned long long offset, void* info, "
           "void*) {\n    const cuComplex v = static_cast<const cuComplex*>(in)[offset];\n    const float w = "
           "static_cast<const float*>(info)[offset % " +
           std::to_string(n) + "ULL];\n    return make_cuComplex(v.x * w, v.y * w);\n}\n";
}

std::string scale_callback(double s) {
    char lit[64];
    std::snprintf(lit, sizeof lit, "%a", double(float(s)));
    return std::string(
               "#include <cuComplex.h>\n__device__ void scale_store(void* out, unsigned long long offset, "
               "cuComplex v, void*, void*) {\n    const float s = ") +
           lit + "f;\n    static_cast<cuComplex*>(out)[offset] = make_cuComplex(v.x * s, v.y * s);\n}\n";
}

}  // namespace

int main(int argc, char** argv) {
    bench::require_gpu("bench_fft");
    bench::Reporter report("bench_fft", argc, argv);
    bench::print_environment("bench_fft");
    core::Stream stream;
    const cudaStream_t s = stream.handle();
    const int samples = report.quick() ? 11 : 31;

    // ---- c2c f32 -------------------------------------------------------------------------------
    std::vector<C2CCase> c2c = {
        {"c2c f32 2^20 x 16", 1 << 20, 16}, {"c2c f32 2^27", 1LL << 27, 1}, {"c2c f32 256 x 65536", 256, 65536}};
    if (report.quick()) c2c[1] = {"c2c f32 2^24 (quick)", 1 << 24, 1};
    for (const C2CCase& c : c2c) {
        if (!report.selected(c.name)) continue;
        const std::size_t bytes = std::size_t(c.n * c.batch) * 8;
        core::Buffer in(bytes, stream), out(bytes, stream);
        fill(in.data(), bytes, s);
        cufftHandle raw{};
        int n = int(c.n);
        const auto t0 = std::chrono::steady_clock::now();
        bench::check_status(cufftPlanMany(&raw, 1, &n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, int(c.batch)),
                            CUFFT_SUCCESS, "cufftPlanMany");
        const double raw_plan_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        bench::check_status(cufftSetStream(raw, s), CUFFT_SUCCESS, "cufftSetStream");
        const TensorLayout layout(DataType::c32, {c.batch, c.n});
        FFT plan(layout);
        const auto t1 = std::chrono::steady_clock::now();
        plan.plan();
        const double first_plan_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
        // The first plan of a process pays one-time costs (cuFFT's lazily loaded modules among
        // them); the figure compared with raw is the median of three more.
        std::vector<double> plan_ms;
        for (int r = 0; r < 3; ++r) {
            FFT again(layout);
            const auto t2 = std::chrono::steady_clock::now();
            again.plan();
            plan_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t2).count());
        }
        const double our_plan_ms = bench::median(plan_ms);
        const TensorView vin(in.data(), layout), vout(out.data(), layout);
        auto [raw_ms, our_ms] = compare(
            s,
            [&](int) {
                bench::check_status(cufftExecC2C(raw, static_cast<cufftComplex*>(in.data()),
                                                 static_cast<cufftComplex*>(out.data()), CUFFT_FORWARD),
                                    CUFFT_SUCCESS, "cufftExecC2C");
            },
            [&](int) { plan.execute(vin, vout, Direction::forward, stream); }, samples);
        report.add({c.name, "raw cufftExecC2C", "ms", raw_ms, 0, ""});
        report.add({c.name, "gpumath FFT::execute", "ms", our_ms, raw_ms / our_ms, "target >= 0.98"});
        report.add(
            {c.name, "plan creation", "ms", our_plan_ms, raw_plan_ms / our_plan_ms,
             ms_note(raw_plan_ms, our_plan_ms) + ", first gpumath plan " + std::to_string(first_plan_ms) + " ms"});
        cufftDestroy(raw);
    }

    // ---- r2c f32 -------------------------------------------------------------------------------
    struct R2CCase {
        const char* name;
        std::vector<int> n;
    };
    std::vector<R2CCase> r2c = {{"r2c f32 4096^2", {4096, 4096}}, {"r2c f32 512^3", {512, 512, 512}}};
    if (report.quick()) r2c[1] = {"r2c f32 256^3 (quick)", {256, 256, 256}};
    for (const R2CCase& c : r2c) {
        if (!report.selected(c.name)) continue;
        std::vector<std::int64_t> shape(c.n.begin(), c.n.end());
        std::int64_t real = 1;
        for (auto e : shape) real *= e;
        std::vector<std::int64_t> oshape = shape;
        oshape.back() = oshape.back() / 2 + 1;
        std::int64_t cpx = 1;
        for (auto e : oshape) cpx *= e;
        core::Buffer in(std::size_t(real) * 4, stream), out(std::size_t(cpx) * 8, stream);
        fill(in.data(), std::size_t(real) * 4, s);
        cufftHandle raw{};
        std::vector<int> n = c.n;
        bench::check_status(cufftPlanMany(&raw, int(n.size()), n.data(), nullptr, 1, 0, nullptr, 1, 0, CUFFT_R2C, 1),
                            CUFFT_SUCCESS, "cufftPlanMany");
        bench::check_status(cufftSetStream(raw, s), CUFFT_SUCCESS, "cufftSetStream");
        std::vector<int> axes;
        for (int i = 0; i < int(shape.size()); ++i) axes.push_back(i);
        FFT plan(TensorLayout(DataType::f32, shape), FFTOptions{.axes = FFTAxes(std::span<const int>(axes))});
        plan.plan();
        const TensorView vin(in.data(), plan.input_layout()), vout(out.data(), plan.output_layout());
        auto [raw_ms, our_ms] = compare(
            s,
            [&](int) {
                bench::check_status(
                    cufftExecR2C(raw, static_cast<cufftReal*>(in.data()), static_cast<cufftComplex*>(out.data())),
                    CUFFT_SUCCESS, "cufftExecR2C");
            },
            [&](int) { plan.execute(vin, vout, Direction::forward, stream); }, samples);
        report.add({c.name, "raw cufftExecR2C", "ms", raw_ms, 0, ""});
        report.add({c.name, "gpumath FFT::execute", "ms", our_ms, raw_ms / our_ms, "target >= 0.98"});
        cufftDestroy(raw);
    }

    // ---- host time per call ----------------------------------------------------------------------
    for (int n : {64, 4096}) {
        const std::string group = "host time c2c f32 n=" + std::to_string(n);
        if (!report.selected(group)) continue;
        core::Buffer in(std::size_t(n) * 8, stream), out(std::size_t(n) * 8, stream);
        fill(in.data(), std::size_t(n) * 8, s);
        cufftHandle raw{};
        bench::check_status(cufftPlan1d(&raw, n, CUFFT_C2C, 1), CUFFT_SUCCESS, "cufftPlan1d");
        bench::check_status(cufftSetStream(raw, s), CUFFT_SUCCESS, "cufftSetStream");
        const TensorView vin(in.data(), DataType::c32, {n}), vout(out.data(), DataType::c32, {n});
        fft(vin, vout, {}, stream);  // first call plans
        FFT plan(vin.layout());
        plan.plan();
        const std::vector<double> us = bench::interleaved_host_us(
            s, {[&](int) {
                    bench::check_status(cufftExecC2C(raw, static_cast<cufftComplex*>(in.data()),
                                                     static_cast<cufftComplex*>(out.data()), CUFFT_FORWARD),
                                        CUFFT_SUCCESS, "cufftExecC2C");
                },
                [&](int) { fft(vin, vout, {}, stream); },
                [&](int) { plan.execute(vin, vout, Direction::forward, stream); }});
        const double raw_us = us[0], cached_us = us[1], plan_us = us[2];
        char note[96];
        std::snprintf(note, sizeof note, "delta %+.2f us (target <= +2)", cached_us - raw_us);
        report.add({group, "raw cufftExecC2C", "us/call", raw_us, 0, ""});
        report.add({group, "gpumath fft() cached", "us/call", cached_us, raw_us / cached_us, note});
        std::snprintf(note, sizeof note, "delta %+.2f us", plan_us - raw_us);
        report.add({group, "gpumath FFT::execute", "us/call", plan_us, raw_us / plan_us, note});
        cufftDestroy(raw);
    }

    // ---- window -> FFT -> scale ------------------------------------------------------------------
    const core::Module kernels = core::Program(raw_kernels, {.name = "bench_fft_kernels"}).compile().load();
    const core::Kernel window_k = kernels.kernel("window"), scale_k = kernels.kernel("scale");
    for (const C2CCase& c :
         {C2CCase{"window-FFT-scale 2^20 x 16", 1 << 20, 16}, C2CCase{"window-FFT-scale 65536 x 256", 65536, 256}}) {
        if (!report.selected(c.name)) continue;
        const long long total = c.n * c.batch;
        const std::size_t bytes = std::size_t(total) * 8;
        core::Buffer in(bytes, stream), tmp(bytes, stream), out(bytes, stream), w(std::size_t(c.n) * 4, stream);
        fill(in.data(), bytes, s);
        {
            std::vector<float> hw(std::size_t(c.n));
            for (long long i = 0; i < c.n; ++i)
                hw[std::size_t(i)] = 0.5f - 0.5f * float(std::cos(6.283185307179586 * double(i) / double(c.n)));
            w.copy_from(std::span<const float>(hw), stream);
        }
        const float inv_n = 1.0f / float(c.n);
        int n = int(c.n);

        // Raw unfused: window kernel, cufftExecC2C, scale kernel.
        cufftHandle plain{};
        bench::check_status(cufftPlanMany(&plain, 1, &n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, int(c.batch)),
                            CUFFT_SUCCESS, "cufftPlanMany");
        bench::check_status(cufftSetStream(plain, s), CUFFT_SUCCESS, "cufftSetStream");
        const core::LaunchConfig cfg{.grid = (total + 255) / 256, .block = 256};
        auto unfused = [&](int) {
            core::launch(stream, cfg, window_k, in.data(), tmp.data(), w.data(), c.n, total);
            bench::check_status(cufftExecC2C(plain, static_cast<cufftComplex*>(tmp.data()),
                                             static_cast<cufftComplex*>(out.data()), CUFFT_FORWARD),
                                CUFFT_SUCCESS, "cufftExecC2C");
            core::launch(stream, cfg, scale_k, out.data(), inv_n, total);
        };

        // Raw fused: LTO callbacks compiled with NVRTC, attached with cufftXtSetJITCallback.
        const core::ObjectCode load =
            core::Program(window_callback(c.n), {.name = "raw_window"}).compile(core::CodeType::ltoir);
        const core::ObjectCode store =
            core::Program(scale_callback(inv_n), {.name = "raw_scale"}).compile(core::CodeType::ltoir);
        cufftHandle fused{};
        bench::check_status(cufftCreate(&fused), CUFFT_SUCCESS, "cufftCreate");
        void* info = w.data();
        bool fused_ok = cufftXtSetJITCallback(fused, "window_load", load.bytes().data(), load.bytes().size(),
                                              CUFFT_CB_LD_COMPLEX, &info) == CUFFT_SUCCESS &&
                        cufftXtSetJITCallback(fused, "scale_store", store.bytes().data(), store.bytes().size(),
                                              CUFFT_CB_ST_COMPLEX, nullptr) == CUFFT_SUCCESS;
        std::size_t work = 0;
        cufftResult planned = CUFFT_SUCCESS;
        if (fused_ok) {
            planned = cufftMakePlanMany(fused, 1, &n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, int(c.batch), &work);
            fused_ok = planned == CUFFT_SUCCESS;
        }
        if (fused_ok) bench::check_status(cufftSetStream(fused, s), CUFFT_SUCCESS, "cufftSetStream");
        auto raw_fused = [&](int) {
            bench::check_status(cufftExecC2C(fused, static_cast<cufftComplex*>(in.data()),
                                             static_cast<cufftComplex*>(out.data()), CUFFT_FORWARD),
                                CUFFT_SUCCESS, "cufftExecC2C (fused)");
        };

        // gpumath: the same window as a prolog, the scale as Normalization::forward.
        const TensorLayout layout(DataType::c32, {c.batch, c.n});
        auto options = [&](CallbackMode mode) {
            return FFTOptions{
                .normalization = Normalization::forward,
                .prolog = {.source = window_callback(c.n), .symbol = "window_load", .user_info = w.data()},
                .callback_mode = mode};
        };
        const auto t0 = std::chrono::steady_clock::now();
        FFT automatic(layout, options(CallbackMode::automatic));
        automatic.plan();
        const double auto_plan_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        FFT separate(layout, options(CallbackMode::separate));
        separate.plan();
        const TensorView vin(in.data(), layout), vout(out.data(), layout);

        const double unfused_ms = bench::gpu_ms(s, unfused, 3, samples);
        const double fused_ms = fused_ok ? bench::gpu_ms(s, raw_fused, 3, samples) : 0.0;
        const double auto_ms = bench::gpu_ms(
            s, [&](int) { automatic.execute(vin, vout, Direction::forward, stream); }, 3, samples);
        const double sep_ms = bench::gpu_ms(
            s, [&](int) { separate.execute(vin, vout, Direction::forward, stream); }, 3, samples);
        const double unfused2_ms = bench::gpu_ms(s, unfused, 3, samples);
        const double best_raw =
            fused_ok ? std::min({fused_ms, unfused_ms, unfused2_ms}) : std::min(unfused_ms, unfused2_ms);
        report.add({c.name, "raw 3 kernels", "ms", std::min(unfused_ms, unfused2_ms), 0, ""});
        if (fused_ok) report.add({c.name, "raw LTO callbacks", "ms", fused_ms, 0, ""});
        else
            report.add({c.name, "raw LTO callbacks", "ms", 0, 0,
                        "cuFFT refused the plan: status " + std::to_string(int(planned))});
        report.add({c.name,
                    std::string("gpumath automatic (") + std::string(to_string(automatic.callback_mode())) + ")", "ms",
                    auto_ms, best_raw / auto_ms, "vs faster raw; target >= 1/1.02"});
        report.add({c.name, "gpumath separate", "ms", sep_ms, best_raw / sep_ms, ""});
        report.add(
            {c.name, "gpumath automatic planning", "ms", auto_plan_ms, 0, "includes compiling and timing both ways"});
        cufftDestroy(plain);
        cufftDestroy(fused);
    }
    return 0;
}
