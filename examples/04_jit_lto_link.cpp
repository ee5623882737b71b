// SPDX-License-Identifier: Apache-2.0
// Link-time optimisation across two programs compiled separately: one defines a device function,
// the other a kernel that calls it. Both are compiled to LTO-IR and linked with nvJitLink into one
// cubin, where the call is inlined as if both had been one source.
//
// Without a GPU it compiles and links (neither needs a GPU), then exits with 77: launching needs one.
#include <cstdio>
#include <exception>
#include <vector>

#include <gpumath/core.hpp>

namespace core = gpumath::core;

// A "library" function, compiled on its own (for example chosen at run time from several).
constexpr const char* transform_source = R"(
__device__ float transform(float v) { return v * v + 1.0f; }
)";

// The kernel only declares it.
constexpr const char* kernel_source = R"(
__device__ float transform(float v);
extern "C" __global__ void map(float* x, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = transform(x[i]);
}
)";

int main() try {
    const bool have_gpu = core::Device::count() > 0;
    const std::string arch = have_gpu ? core::Device::current().arch() : "sm_90";
    const core::ObjectCode library =
        core::Program(transform_source, {.name = "transform", .arch = arch}).compile(core::CodeType::ltoir);
    const core::ObjectCode kernel =
        core::Program(kernel_source, {.name = "map", .arch = arch}).compile(core::CodeType::ltoir);
    const core::ObjectCode linked = core::Linker({.name = "map+transform"}).add(kernel).add(library).link();
    std::printf("LTO-IR %zu + %zu bytes -> %zu-byte cubin for %s (kernels:", kernel.bytes().size(),
                library.bytes().size(), linked.bytes().size(), linked.arch().c_str());
    for (const std::string& name : linked.kernel_names()) std::printf(" %s", name.c_str());
    std::printf(")\n");

    if (!have_gpu) {
        std::printf(
            "linking worked without a GPU; launching the kernel needs one, and this machine has no CUDA "
            "device\n");
        return 77;
    }
    const core::Module module = linked.load();
    core::Stream stream;
    const std::vector<float> host = {0, 1, 2, 3, 4};
    core::Buffer x = core::Buffer::from_host(host, stream);
    const int n = static_cast<int>(host.size());
    core::launch(stream, {.grid = 1, .block = 32}, module.kernel("map"), x, n);
    const std::vector<float> out = x.to_host<float>(stream);
    bool ok = true;
    for (std::size_t i = 0; i < out.size(); ++i) {
        std::printf(i == 0 ? "%g" : " %g", double(out[i]));
        ok = ok && out[i] == host[i] * host[i] + 1.0f;
    }
    std::printf("\n");
    return ok ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "04_jit_lto_link: %s\n", e.what());
    return 1;
}
