// SPDX-License-Identifier: Apache-2.0
// Compile a CUDA C++ kernel at run time with NVRTC, load it and launch it: the C++ version of
// cuda.core's "add_one" example. Program -> compile -> Module -> Kernel -> launch on [1, 2, 3, 4],
// then copy back and print "2 3 4 5".
//
// Without a GPU it still compiles the kernel (NVRTC needs no GPU) for an explicit architecture,
// says so, and exits with 77 because launching needs a GPU.
#include <cstdio>
#include <exception>
#include <vector>

#include <gpumath/core.hpp>

namespace core = gpumath::core;

constexpr const char* add_one_source = R"(
extern "C" __global__ void add_one(float* x, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
)";

int main() try {
    const bool have_gpu = core::Device::count() > 0;
    // An empty arch means "the current device's"; with no device we must name one.
    core::ProgramOptions options{.name = "add_one"};
    if (!have_gpu) options.arch = "sm_90";
    const core::Program program(add_one_source, options);
    const core::ObjectCode code = program.compile(core::CodeType::cubin);

    if (!have_gpu) {
        std::printf(
            "compiled add_one to a %zu-byte cubin for %s with NVRTC; launching it needs a GPU, and this "
            "machine has no CUDA device\n",
            code.bytes().size(), code.arch().c_str());
        return 77;
    }

    const core::Module module = code.load();
    const core::Kernel add_one = module.kernel("add_one");
    core::Stream stream;
    const std::vector<float> host = {1, 2, 3, 4};
    core::Buffer x = core::Buffer::from_host(host, stream);
    const int n = static_cast<int>(host.size());
    core::launch(stream, {.grid = 1, .block = n}, add_one, x, n);
    const std::vector<float> result = x.to_host<float>(stream);
    for (std::size_t i = 0; i < result.size(); ++i) std::printf(i == 0 ? "%g" : " %g", static_cast<double>(result[i]));
    std::printf("\n");
    return 0;
} catch (const std::exception& e) {
    std::fprintf(stderr, "02_jit_add_one: %s\n", e.what());
    return 1;
}
