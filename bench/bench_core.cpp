// SPDX-License-Identifier: Apache-2.0
// Buffer copies and pool allocation vs the raw CUDA runtime calls, and the tensor utilities (fill,
// cast, copy, random) against the driver's memset, a device-to-device copy and raw cuRAND; same
// process, same buffers.
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <cuda.h>
#include <curand.h>

#include <gpumath/core.hpp>
#include <gpumath/tensor_ops.hpp>
#include "core/stream_workspace.hpp"

#include "harness.hpp"

using namespace gpumath;
using bench::Row;

namespace {

/// fill, cast, copy and random tensors over `bytes`-byte buffers (two pairs, rotated, so that no
/// call is served from L2), each against a raw call measured in interleaved samples: casts and
/// copies against a device-to-device copy of the same buffers (the ratio is the utility's bandwidth,
/// bytes it reads and writes per second, over the copy's), fills against the driver's memset of the
/// same bytes, random tensors against cuRAND's host API filling the same buffer.
void tensor_utilities(bench::Reporter& report, const core::Stream& stream, const core::Buffer& d0,
                      const core::Buffer& d1, const core::Buffer& d2, const core::Buffer& d3, std::size_t bytes) {
    const cudaStream_t s = stream.handle();
    const auto memcpy_d2d = [&](int i) {
        bench::cuda_check(
            cudaMemcpyAsync((i & 1 ? d3 : d1).data(), (i & 1 ? d2 : d0).data(), bytes, cudaMemcpyDeviceToDevice, s),
            "memcpy");
    };
    // A view of `count` elements of `t` on the buffer the call `i` uses.
    const auto view = [&](const core::Buffer& a, const core::Buffer& b, int i, DataType t, std::int64_t count) {
        return TensorView((i & 1 ? b : a).data(), TensorLayout(t, {count}));
    };
    struct Case {
        std::string name;
        double traffic;  // bytes read and written per call
        std::function<void(int)> run;
    };
    const auto n32 = std::int64_t(bytes / 4);
    std::vector<Case> cases;
    cases.push_back({"cast f32 -> bf16", 1.5 * double(bytes), [&](int i) {
                         cast(view(d0, d2, i, DataType::f32, n32), view(d1, d3, i, DataType::bf16, n32), stream);
                     }});
    cases.push_back({"cast bf16 -> f32", 1.5 * double(bytes), [&](int i) {
                         cast(view(d0, d2, i, DataType::bf16, n32), view(d1, d3, i, DataType::f32, n32), stream);
                     }});
    cases.push_back({"cast f32 -> e4m3", 1.25 * double(bytes), [&](int i) {
                         cast(view(d0, d2, i, DataType::f32, n32), view(d1, d3, i, DataType::e4m3, n32), stream);
                     }});
    const auto side = std::int64_t(std::sqrt(double(n32)));
    cases.push_back({"copy f32 transpose " + std::to_string(side) + "^2", 2.0 * double(side * side * 4), [&](int i) {
                         const TensorView in((i & 1 ? d2 : d0).data(), TensorLayout(DataType::f32, {side, side}));
                         const TensorView out((i & 1 ? d3 : d1).data(), TensorLayout(DataType::f32, {side, side}));
                         copy(in.transposed(), out, stream);
                     }});
    cases.push_back(
        {"copy f32 every other column", double(bytes), [&](int i) {
             const std::int64_t rows = 4096, cols = n32 / rows / 2;
             const TensorView in((i & 1 ? d2 : d0).data(), TensorLayout(DataType::f32, {rows, cols}, {2 * cols, 2}));
             const TensorView out((i & 1 ? d3 : d1).data(), TensorLayout(DataType::f32, {rows, cols}));
             copy(in, out, stream);
         }});
    for (const Case& c : cases) {
        const std::string group = c.name + " " + std::to_string(bytes >> 20) + " MiB";
        if (!report.selected(group)) continue;
        const bench::PairedMs m = bench::paired_gpu_ms(s, memcpy_d2d, c.run, 3, 21);
        const double copy_gbs = 2.0 * double(bytes) / (m.a * 1e-3) / 1e9, ours_gbs = c.traffic / (m.b * 1e-3) / 1e9;
        report.add({group, "D2D copy", "GB/s", copy_gbs, 0, ""});
        report.add({group, "gpumath", "GB/s", ours_gbs, ours_gbs / copy_gbs, "of the copy's bandwidth"});
    }
    // The every-other-column copy against the runtime's own strided copy of the same elements
    // (cudaMemcpy2DAsync: rows of one f32, source pitch 8 bytes): the raw call doing the same work.
    if (const std::string group = "copy f32 every other column " + std::to_string(bytes >> 20) + " MiB vs 2-D copy";
        report.selected(group)) {
        const std::int64_t rows = 4096, cols = n32 / rows / 2;
        const auto raw_2d = [&](int i) {
            bench::cuda_check(cudaMemcpy2DAsync((i & 1 ? d3 : d1).data(), 4, (i & 1 ? d2 : d0).data(), 8, 4,
                                                std::size_t(rows * cols), cudaMemcpyDeviceToDevice, s),
                              "cudaMemcpy2DAsync");
        };
        const auto ours = [&](int i) {
            const TensorView in((i & 1 ? d2 : d0).data(), TensorLayout(DataType::f32, {rows, cols}, {2 * cols, 2}));
            const TensorView out((i & 1 ? d3 : d1).data(), TensorLayout(DataType::f32, {rows, cols}));
            copy(in, out, stream);
        };
        if (const cudaError_t e =
                cudaMemcpy2DAsync(d1.data(), 4, d0.data(), 8, 4, std::size_t(rows * cols), cudaMemcpyDeviceToDevice, s);
            e != cudaSuccess) {
            (void)cudaGetLastError();
            std::printf("  %s: cudaMemcpy2DAsync refused the copy (%s)\n", group.c_str(), cudaGetErrorString(e));
        } else {
            const bench::PairedMs m = bench::paired_gpu_ms(s, raw_2d, ours, 3, 21);
            report.add({group, "cudaMemcpy2DAsync", "GB/s", double(bytes) / (m.a * 1e-3) / 1e9, 0, ""});
            report.add(
                {group, "gpumath", "GB/s", double(bytes) / (m.b * 1e-3) / 1e9, m.a / m.b, "of the 2-D copy's rate"});
        }
    }
    // Fills against the driver's 32-bit memset writing the same bytes: the write bandwidth.
    using MemsetD32 = CUresult (*)(CUdeviceptr, unsigned int, std::size_t, CUstream);
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult found{};
    bench::cuda_check(cudaGetDriverEntryPointByVersion("cuMemsetD32Async", &entry, 12000, cudaEnableDefault, &found),
                      "cudaGetDriverEntryPointByVersion");
    const auto memset_d32 = reinterpret_cast<MemsetD32>(entry);
    const auto raw_memset = [&](int i) {
        bench::check_status(memset_d32(reinterpret_cast<CUdeviceptr>((i & 1 ? d3 : d1).data()), 0x3fc00000u, bytes / 4,
                                       reinterpret_cast<CUstream>(s)),
                            CUDA_SUCCESS, "cuMemsetD32Async");
    };
    struct FillCase {
        std::string name;
        DataType type;
    };
    for (const FillCase& c :
         {FillCase{"fill f32", DataType::f32}, FillCase{"fill bf16", DataType::bf16}, FillCase{"fill i8", DataType::i8},
          FillCase{"fill f64 (a kernel)", DataType::f64}, FillCase{"fill c64 (a kernel)", DataType::c64}}) {
        const std::string group = c.name + " " + std::to_string(bytes >> 20) + " MiB";
        if (!report.selected(group)) continue;
        const auto count = std::int64_t(bytes / size_of(c.type));
        const bench::PairedMs m = bench::paired_gpu_ms(
            s, raw_memset, [&](int i) { fill(view(d1, d3, i, c.type, count), 1.5, stream); }, 3, 21);
        const double raw_gbs = double(bytes) / (m.a * 1e-3) / 1e9, ours_gbs = double(bytes) / (m.b * 1e-3) / 1e9;
        report.add({group, "raw cuMemsetD32Async", "GB/s", raw_gbs, 0, ""});
        report.add({group, "gpumath", "GB/s", ours_gbs, ours_gbs / raw_gbs, "of the memset's bandwidth"});
    }
    // Random tensors against cuRAND's own host API filling the same buffer.
    curandGenerator_t raw = nullptr;
    bench::check_status(curandCreateGenerator(&raw, CURAND_RNG_PSEUDO_PHILOX4_32_10), CURAND_STATUS_SUCCESS, "curand");
    bench::check_status(curandSetStream(raw, s), CURAND_STATUS_SUCCESS, "curand");
    struct RandomCase {
        std::string name;
        std::function<void(int)> raw, ours;
    };
    const std::vector<RandomCase> random_cases{
        {"random uniform f32",
         [&](int i) {
             bench::check_status(
                 curandGenerateUniform(raw, static_cast<float*>((i & 1 ? d3 : d1).data()), std::size_t(n32)),
                 CURAND_STATUS_SUCCESS, "curand");
         },
         [&](int i) { random::uniform(view(d1, d3, i, DataType::f32, n32), 0.0, 1.0, {.seed = 1}, stream); }},
        {"random normal f32",
         [&](int i) {
             bench::check_status(
                 curandGenerateNormal(raw, static_cast<float*>((i & 1 ? d3 : d1).data()), std::size_t(n32), 0.0f, 1.0f),
                 CURAND_STATUS_SUCCESS, "curand");
         },
         [&](int i) { random::normal(view(d1, d3, i, DataType::f32, n32), 0.0, 1.0, {.seed = 1}, stream); }},
        {"random uniform f64",
         [&](int i) {
             bench::check_status(
                 curandGenerateUniformDouble(raw, static_cast<double*>((i & 1 ? d3 : d1).data()), std::size_t(n32 / 2)),
                 CURAND_STATUS_SUCCESS, "curand");
         },
         [&](int i) { random::uniform(view(d1, d3, i, DataType::f64, n32 / 2), 0.0, 1.0, {.seed = 1}, stream); }},
        {"random normal bf16 (raw: f32 alone)",
         [&](int i) {
             bench::check_status(
                 curandGenerateNormal(raw, static_cast<float*>((i & 1 ? d3 : d1).data()), std::size_t(n32), 0.0f, 1.0f),
                 CURAND_STATUS_SUCCESS, "curand");
         },
         [&](int i) { random::normal(view(d1, d3, i, DataType::bf16, n32), 0.0, 1.0, {.seed = 1}, stream); }},
    };
    for (const RandomCase& c : random_cases) {
        const std::string group = c.name + " " + std::to_string(n32) + " values";
        if (!report.selected(group)) continue;
        const bench::PairedMs m = bench::paired_gpu_ms(s, c.raw, c.ours, 3, 21);
        report.add({group, "raw cuRAND", "ms", m.a, 0, ""});
        report.add({group, "gpumath random", "ms", m.b, m.a / m.b, ""});
    }
    curandDestroyGenerator(raw);
}

}  // namespace

int main(int argc, char** argv) {
    bench::require_gpu("bench_core");
    bench::Reporter report("bench_core", argc, argv);
    bench::print_environment("bench_core");
    core::Stream stream;
    const cudaStream_t s = stream.handle();

    // Copies: 256 MiB, rotating between two buffer pairs so no copy is served from L2.
    const std::size_t bytes = report.quick() ? (std::size_t(64) << 20) : (std::size_t(256) << 20);
    core::Buffer d0(bytes, stream), d1(bytes, stream), d2(bytes, stream), d3(bytes, stream);
    auto pinned = core::PinnedMemoryResource::default_resource();
    core::Buffer h0(bytes, stream, pinned), h1(bytes, stream, pinned);
    bench::cuda_check(cudaMemsetAsync(d0.data(), 1, bytes, s), "memset");
    bench::cuda_check(cudaMemsetAsync(d2.data(), 2, bytes, s), "memset");
    std::memset(h0.data(), 3, bytes);
    std::memset(h1.data(), 4, bytes);
    const double gb = double(bytes) / 1e9;

    struct CopyCase {
        const char* name;
        double traffic;  // bytes moved per copy / bytes
        std::function<void(int)> raw, ours;
    };
    std::vector<CopyCase> cases;
    cases.push_back({"copy D2D (read+write)", 2.0,
                     [&](int i) {
                         bench::cuda_check(cudaMemcpyAsync((i & 1 ? d3 : d1).data(), (i & 1 ? d2 : d0).data(), bytes,
                                                           cudaMemcpyDeviceToDevice, s),
                                           "memcpy");
                     },
                     [&](int i) { (i & 1 ? d3 : d1).copy_from(i & 1 ? d2 : d0, stream); }});
    cases.push_back({"copy H2D pinned", 1.0,
                     [&](int i) {
                         bench::cuda_check(cudaMemcpyAsync((i & 1 ? d3 : d1).data(), (i & 1 ? h1 : h0).data(), bytes,
                                                           cudaMemcpyHostToDevice, s),
                                           "memcpy");
                     },
                     [&](int i) { (i & 1 ? d3 : d1).copy_from(i & 1 ? h1 : h0, stream); }});
    cases.push_back({"copy D2H pinned", 1.0,
                     [&](int i) {
                         bench::cuda_check(cudaMemcpyAsync((i & 1 ? h1 : h0).data(), (i & 1 ? d3 : d1).data(), bytes,
                                                           cudaMemcpyDeviceToHost, s),
                                           "memcpy");
                     },
                     [&](int i) { (i & 1 ? h1 : h0).copy_from(i & 1 ? d3 : d1, stream); }});
    for (auto& c : cases) {
        const std::string group = std::string(c.name) + " " + std::to_string(bytes >> 20) + " MiB";
        if (!report.selected(group)) continue;
        // Interleave the two sides so clock drift affects both alike.
        const double raw_ms = bench::gpu_ms(s, c.raw, 3, 21);
        const double ours_ms = bench::gpu_ms(s, c.ours, 3, 21);
        const double raw2_ms = bench::gpu_ms(s, c.raw, 3, 21);
        const double raw_best = std::min(raw_ms, raw2_ms);
        report.add({group, "raw cudaMemcpyAsync", "GB/s", c.traffic * gb / (raw_best * 1e-3), 0, ""});
        report.add({group, "gpumath Buffer", "GB/s", c.traffic * gb / (ours_ms * 1e-3), raw_best / ours_ms, ""});
    }

    // Host cost of a stream-ordered allocate + free pair, in bursts of 128.
    for (std::size_t size : {std::size_t(256), std::size_t(1) << 20, std::size_t(64) << 20}) {
        const std::string group = "alloc+free " + std::to_string(size) + " B host time";
        if (!report.selected(group)) continue;
        auto pool = core::DeviceMemoryResource::default_resource();
        const double raw = bench::host_us(s, [&](int) {
            void* p = nullptr;
            bench::cuda_check(cudaMallocAsync(&p, size, s), "cudaMallocAsync");
            bench::cuda_check(cudaFreeAsync(p, s), "cudaFreeAsync");
        });
        const double ours_pool = bench::host_us(s, [&](int) {
            void* p = pool->allocate(size, stream);
            pool->deallocate(p, size, stream);
        });
        const double ours_buffer = bench::host_us(s, [&](int) { core::Buffer b(size, stream); });
        report.add({group, "raw cudaMallocAsync", "us/call", raw, 0, ""});
        report.add({group, "gpumath pool", "us/call", ours_pool, raw / ours_pool,
                    "delta " + std::to_string(ours_pool - raw) + " us"});
        report.add({group, "gpumath Buffer", "us/call", ours_buffer, raw / ours_buffer,
                    "delta " + std::to_string(ours_buffer - raw) + " us"});
    }

    // What every workspace acquire pays to honour graph capture: one capture-status query.
    if (const std::string group = "capture status query host time"; report.selected(group)) {
        const double query = bench::host_us(s, [&](int) {
            cudaStreamCaptureStatus status{};
            unsigned long long id = 0;
            cudaGraph_t graph = nullptr;
            bench::cuda_check(cudaStreamGetCaptureInfo(s, &status, &id, &graph), "cudaStreamGetCaptureInfo");
        });
        const double acquire = bench::host_us(s, [&](int) {
            const auto lease = detail::default_stream_workspace(core::Device::current().ordinal())
                                   .acquire(std::size_t(1) << 20, stream);
            (void)lease;
        });
        report.add({group, "cudaStreamGetCaptureInfo", "us/call", query, 0, ""});
        report.add({group, "gpumath workspace acquire", "us/call", acquire, 0, "includes the query"});
    }
    tensor_utilities(report, stream, d0, d1, d2, d3, bytes);
    return 0;
}
