// SPDX-License-Identifier: Apache-2.0
// Buffer copies and pool allocation vs the raw CUDA runtime calls, same process, same buffers.
#include <cstdio>
#include <vector>

#include <gpumath/core.hpp>
#include "core/stream_workspace.hpp"

#include "harness.hpp"

using namespace gpumath;
using bench::Row;

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
    return 0;
}
