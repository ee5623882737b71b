// SPDX-License-Identifier: Apache-2.0
// A templated kernel compiled at run time for two element types. NVRTC mangles C++ kernel names;
// registering the instantiations as name expressions ("axpy<float>") lets the code be looked up by
// the name a C++ programmer writes, and makes NVRTC instantiate them.
//
// Without a GPU it compiles, prints the mangled names, and exits with 77: launching needs a GPU.
#include <cmath>
#include <cstdio>
#include <exception>
#include <vector>

#include <gpumath/core.hpp>

namespace core = gpumath::core;

constexpr const char* axpy_source = R"(
#include <cuda/std/type_traits>

// y = a * x + y, for any arithmetic T.
template <class T>
__global__ void axpy(T a, const T* x, T* y, int n) {
    static_assert(cuda::std::is_arithmetic_v<T>, "axpy needs an arithmetic type");
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
)";

template <class T>
bool run(const core::Module& module, const char* expression, core::StreamRef stream) {
    const int n = 1000;
    std::vector<T> x(n), y(n);
    for (int i = 0; i < n; ++i) {
        x[static_cast<std::size_t>(i)] = static_cast<T>(i) * T(0.5);
        y[static_cast<std::size_t>(i)] = static_cast<T>(n - i);
    }
    core::Buffer dx = core::Buffer::from_host(x, stream);
    core::Buffer dy = core::Buffer::from_host(y, stream);
    const T a = T(2);
    core::launch(stream, {.grid = (n + 127) / 128, .block = 128}, module.kernel(expression), a, dx, dy, n);
    const std::vector<T> out = dy.to_host<T>(stream);
    double worst = 0;
    for (std::size_t i = 0; i < out.size(); ++i)
        worst = std::fmax(worst, std::fabs(static_cast<double>(out[i]) - (2.0 * double(x[i]) + double(y[i]))));
    std::printf("%-14s y[0..3] = %g %g %g %g, largest error %g\n", expression, double(out[0]), double(out[1]),
                double(out[2]), double(out[3]), worst);
    return worst == 0;
}

int main() try {
    const bool have_gpu = core::Device::count() > 0;
    core::Program program(axpy_source, {.name = "axpy", .arch = have_gpu ? "" : "sm_90", .std = "c++17"});
    program.add_name_expression("axpy<float>").add_name_expression("axpy<double>");
    const core::ObjectCode code = program.compile(core::CodeType::cubin);
    for (const auto& [expression, mangled] : code.lowered_names())
        std::printf("%-14s -> %s\n", expression.c_str(), mangled.c_str());

    if (!have_gpu) {
        std::printf(
            "compiled both instantiations for %s; launching them needs a GPU, and this machine has no CUDA "
            "device\n",
            code.arch().c_str());
        return 77;
    }
    const core::Module module = code.load();
    core::Stream stream;
    const bool ok = run<float>(module, "axpy<float>", stream) && run<double>(module, "axpy<double>", stream);
    return ok ? 0 : 1;
} catch (const std::exception& e) {
    std::fprintf(stderr, "03_jit_templates: %s\n", e.what());
    return 1;
}
