// SPDX-License-Identifier: Apache-2.0
// The JIT runtime against the raw driver and NVRTC, same process, same kernels and arguments:
//  - launch host cost (bursts of 128, stream drained between bursts, median): an empty kernel and a
//    kernel with eight arguments, core::launch vs cuLaunchKernel / cuLaunchKernelEx;
//  - compile: cold NVRTC vs an in-memory cache hit vs a disk cache hit in a new process (this
//    program runs itself with --child-disk-hit);
//  - module load from a cubin: core::Module vs cuLibraryLoadData and cuModuleLoadData.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include <gpumath/core.hpp>
#include "core/driver_api.hpp"

#include "harness.hpp"

using namespace gpumath;
using bench::Row;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr const char* launch_source = R"(
extern "C" __global__ void empty() {}
extern "C" __global__ void args8(float* a, const float* b, float c, int n, double d, long long e, float* f, int g) {
    if (n < 0) {  // never taken; keeps every parameter live
        a[0] = b[0] * c + float(d) + float(e);
        f[0] = float(g);
    }
}
)";

// A two-kernel source of the size the reference figures used.
std::string compile_source(const std::string& token) {
    return "// " + token + R"(
template <class T>
__global__ void saxpy(T a, const T* x, T* y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void reduce(const float* x, float* out, int n) {
    __shared__ float partial[256];
    float s = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) s += x[i];
    partial[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) partial[threadIdx.x] += partial[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, partial[0]);
}
)";
}

double us_since(clock_type::time_point t0) {
    return std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
}

std::string delta(double ours, double raw) {
    char b[64];
    std::snprintf(b, sizeof b, "delta %+.3f us", ours - raw);
    return b;
}

// Child process: time a compile that the disk cache answers. Prints "<ctor+compile us> <compile us>".
int child_disk_hit(int argc, char** argv) {
    if (argc < 5) return 2;
    core::compile_cache().set_directory(argv[2]);
    const auto t0 = clock_type::now();
    core::Program p(compile_source(argv[4]), {.name = "bench_compile", .arch = argv[3]});
    p.add_name_expression("saxpy<float>");
    const auto t1 = clock_type::now();
    const core::ObjectCode code = p.compile(core::CodeType::cubin);
    const double total = us_since(t0), compile = us_since(t1);
    const core::CacheStats s = core::compile_cache().stats();
    if (s.disk_hits != 1 || code.lowered_name("saxpy<float>").empty()) {
        std::fprintf(stderr, "bench_jit child: expected a disk hit (disk hits %llu, misses %llu)\n",
                     static_cast<unsigned long long>(s.disk_hits), static_cast<unsigned long long>(s.misses));
        return 3;
    }
    std::printf("%.3f %.3f\n", total, compile);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc >= 2 && std::strcmp(argv[1], "--child-disk-hit") == 0) return child_disk_hit(argc, argv);
    bench::require_gpu("bench_jit");
    bench::Reporter report("bench_jit", argc, argv);
    bench::print_environment("bench_jit");
    const bool quick = report.quick();
    const std::string arch = core::Device::current().arch();
    const std::filesystem::path cache_dir =
        std::filesystem::temp_directory_path() / ("gpumath-bench-jit-" + std::to_string(::getpid()));
    core::compile_cache().set_directory(cache_dir / "jit");

    core::Stream stream;
    const cudaStream_t s = stream.handle();
    const auto cs = reinterpret_cast<CUstream>(s);
    const detail::DriverApi& drv = detail::driver();

    const core::ObjectCode launch_code = core::Program(launch_source, {.name = "bench_launch", .arch = arch}).compile();
    const core::Module module = launch_code.load();
    const core::Kernel k0 = module.kernel("empty");
    const core::Kernel k8 = module.kernel("args8");
    const auto f0 = reinterpret_cast<CUfunction>(k0.handle());
    const auto f8 = reinterpret_cast<CUfunction>(k8.handle());
    const int bursts = quick ? 21 : 101;

    // ---- launch host cost ------------------------------------------------------------------
    if (report.selected("launch empty kernel")) {
        const std::string group = "launch empty kernel host time";
        const core::LaunchConfig cfg{.grid = 1, .block = 32};
        CUlaunchConfig ex{};
        ex.gridDimX = ex.gridDimY = ex.gridDimZ = 1;
        ex.blockDimX = 32;
        ex.blockDimY = ex.blockDimZ = 1;
        ex.hStream = cs;
        const auto raw = [&](int) {
            bench::check_status(drv.cuLaunchKernel(f0, 1, 1, 1, 32, 1, 1, 0, cs, nullptr, nullptr), CUDA_SUCCESS,
                                "cuLaunchKernel");
        };
        const auto raw_ex = [&](int) {
            bench::check_status(drv.cuLaunchKernelEx(&ex, f0, nullptr, nullptr), CUDA_SUCCESS, "cuLaunchKernelEx");
        };
        const auto ours = [&](int) { core::launch(stream, cfg, k0); };
        // Interleaved, best of two, so drift affects both sides alike.
        const double r1 = bench::host_us(s, raw, 128, bursts), o1 = bench::host_us(s, ours, 128, bursts);
        const double e1 = bench::host_us(s, raw_ex, 128, bursts);
        const double r2 = bench::host_us(s, raw, 128, bursts), o2 = bench::host_us(s, ours, 128, bursts);
        const double e2 = bench::host_us(s, raw_ex, 128, bursts);
        const double r = std::min(r1, r2), o = std::min(o1, o2), e = std::min(e1, e2);
        report.add({group, "raw cuLaunchKernel", "us/launch", r, 0, ""});
        report.add({group, "raw cuLaunchKernelEx", "us/launch", e, 0, ""});
        report.add({group, "gpumath launch", "us/launch", o, r / o, delta(o, r) + " vs cuLaunchKernel"});
    }
    if (report.selected("launch 8-argument kernel")) {
        const std::string group = "launch 8-argument kernel host time";
        core::Buffer a(256, stream), b(256, stream), f(256, stream);
        void* pa = a.data();
        void* pb = b.data();
        void* pf = f.data();
        float c = 1.5f;
        int n = 1000;
        double d = 0.25;
        long long e = 7;
        int g = 3;
        const core::LaunchConfig cfg{.grid = 1, .block = 32};
        // The raw side packs its argument array per call, as any caller must.
        const auto raw = [&](int) {
            void* args[] = {&pa, &pb, &c, &n, &d, &e, &pf, &g};
            bench::check_status(drv.cuLaunchKernel(f8, 1, 1, 1, 32, 1, 1, 0, cs, args, nullptr), CUDA_SUCCESS,
                                "cuLaunchKernel");
        };
        const auto ours = [&](int) { core::launch(stream, cfg, k8, a, b.data_as<const float>(), c, n, d, e, f, g); };
        const double r1 = bench::host_us(s, raw, 128, bursts), o1 = bench::host_us(s, ours, 128, bursts);
        const double r2 = bench::host_us(s, raw, 128, bursts), o2 = bench::host_us(s, ours, 128, bursts);
        const double r = std::min(r1, r2), o = std::min(o1, o2);
        report.add({group, "raw cuLaunchKernel", "us/launch", r, 0, ""});
        report.add({group, "gpumath launch (checked)", "us/launch", o, r / o, delta(o, r)});
    }

    // ---- compile ---------------------------------------------------------------------------
    if (report.selected("compile")) {
        const std::string group = "compile 2-kernel source to cubin";
        std::vector<double> cold;
        const int cold_runs = quick ? 3 : 9;
        for (int i = 0; i < cold_runs; ++i) {
            core::Program p(compile_source("cold " + std::to_string(::getpid()) + " " + std::to_string(i)),
                            {.name = "bench_compile", .arch = arch});
            p.add_name_expression("saxpy<float>");
            const auto t0 = clock_type::now();
            (void)p.compile(core::CodeType::cubin);
            cold.push_back(us_since(t0));
        }
        const double cold_us = bench::median(cold);

        const std::string token = "disk " + std::to_string(::getpid());
        core::Program hot(compile_source(token), {.name = "bench_compile", .arch = arch});
        hot.add_name_expression("saxpy<float>");
        (void)hot.compile(core::CodeType::cubin);  // a miss: NVRTC, memory and disk entries written
        std::vector<double> memory;
        for (int i = 0; i < (quick ? 50 : 500); ++i) {
            const auto t0 = clock_type::now();
            (void)hot.compile(core::CodeType::cubin);
            memory.push_back(us_since(t0));
        }
        const double memory_us = bench::median(memory);

        std::vector<double> disk_total, disk_compile;
        const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
        for (int i = 0; i < (quick ? 3 : 9); ++i) {
            const std::string cmd =
                "'" + self + "' --child-disk-hit '" + (cache_dir / "jit").string() + "' " + arch + " '" + token + "'";
            FILE* pipe = ::popen(cmd.c_str(), "r");
            double total = 0, compile = 0;
            const bool ok = pipe != nullptr && std::fscanf(pipe, "%lf %lf", &total, &compile) == 2;
            const int status = pipe != nullptr ? ::pclose(pipe) : -1;
            if (!ok || status != 0) {
                std::fprintf(stderr, "bench_jit: the disk-hit child failed (status %d)\n", status);
                break;
            }
            disk_total.push_back(total);
            disk_compile.push_back(compile);
        }
        report.add({group, "cold (NVRTC)", "ms", cold_us / 1e3, 0, "median of " + std::to_string(cold_runs)});
        report.add({group, "memory cache hit", "ms", memory_us / 1e3, cold_us / memory_us, "ratio = cold / hit"});
        if (!disk_total.empty()) {
            const double dc = bench::median(disk_compile), dt = bench::median(disk_total);
            report.add({group, "disk hit, new process", "ms", dc / 1e3, cold_us / dc, "compile() only"});
            report.add({group, "disk hit, new process", "ms", dt / 1e3, cold_us / dt, "Program ctor + compile()"});
        }
    }

    // ---- module load ----------------------------------------------------------------------
    if (report.selected("module load")) {
        const std::string group = "module load from cubin (" + std::to_string(launch_code.bytes().size()) + " B)";
        const void* image = launch_code.bytes().data();
        const int runs = quick ? 31 : 201;
        const auto time = [&](auto&& fn) {
            std::vector<double> t;
            for (int i = 0; i < runs; ++i) {
                const auto t0 = clock_type::now();
                fn();
                t.push_back(us_since(t0));
            }
            return bench::median(t);
        };
        const double lib = time([&] {
            CUlibrary l = nullptr;
            bench::check_status(drv.cuLibraryLoadData(&l, image, nullptr, nullptr, 0, nullptr, nullptr, 0),
                                CUDA_SUCCESS, "cuLibraryLoadData");
            bench::check_status(drv.cuLibraryUnload(l), CUDA_SUCCESS, "cuLibraryUnload");
        });
        const double mod = time([&] {
            CUmodule m = nullptr;
            bench::check_status(drv.cuModuleLoadData(&m, image), CUDA_SUCCESS, "cuModuleLoadData");
            bench::check_status(drv.cuModuleUnload(m), CUDA_SUCCESS, "cuModuleUnload");
        });
        const double ours = time([&] { const core::Module m(launch_code); });
        report.add({group, "raw cuLibraryLoadData", "us", lib, 0, "load + unload"});
        report.add({group, "raw cuModuleLoadData", "us", mod, 0, "load + unload"});
        report.add({group, "gpumath Module", "us", ours, lib / ours, "load + unload; " + delta(ours, lib)});
        const double lib_k = time([&] {
            CUlibrary l = nullptr;
            CUkernel k = nullptr;
            bench::check_status(drv.cuLibraryLoadData(&l, image, nullptr, nullptr, 0, nullptr, nullptr, 0),
                                CUDA_SUCCESS, "cuLibraryLoadData");
            bench::check_status(drv.cuLibraryGetKernel(&k, l, "args8"), CUDA_SUCCESS, "cuLibraryGetKernel");
            bench::check_status(drv.cuLibraryUnload(l), CUDA_SUCCESS, "cuLibraryUnload");
        });
        const double ours_k = time([&] {
            const core::Module m(launch_code);
            (void)m.kernel("args8");
        });
        report.add({group + " + kernel lookup", "raw cuLibrary", "us", lib_k, 0, "load + get kernel + unload"});
        report.add({group + " + kernel lookup", "gpumath", "us", ours_k, lib_k / ours_k,
                    "also reads parameter info and limits; " + delta(ours_k, lib_k)});
    }

    std::error_code ec;
    std::filesystem::remove_all(cache_dir, ec);
    return 0;
}
