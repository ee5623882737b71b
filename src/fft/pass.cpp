// SPDX-License-Identifier: Apache-2.0
// The elementwise pass kernels of FFTs: the built-in ones (compiled once per process) and launching.
#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include <gpumath/core/device.hpp>
#include <gpumath/core/launch.hpp>
#include <gpumath/core/program.hpp>
#include "fft/sources.hpp"
#include "detail/status.hpp"

#include "fft/callback.hpp"
#include "fft/pass.hpp"

namespace gpumath::detail {

static_assert(sizeof(FftPass) == 208, "FftPass must match the gm_fft_pass struct of the generated kernels");

core::Kernel builtin_pass_kernel(DataType element, bool pairs, int device, const std::string& arch) {
    using Key = std::tuple<int, DataType, bool>;
    static std::mutex mutex;
    static auto* kernels = new std::map<Key, core::Kernel>();
    const Key key{device, element, pairs};
    {
        std::lock_guard lock(mutex);
        if (auto it = kernels->find(key); it != kernels->end()) return it->second;
    }
    FftPassSpec spec;
    spec.element = element;
    spec.pairs = pairs;
    const core::ObjectCode code = compile_with_context(fft_pass_source(spec), core::CodeType::cubin, arch, "fft_pass",
                                                       nullptr, FFTCallbackKind::load, element);
    core::Kernel kernel = core::Module(code).kernel(fft_pass_kernel_name, device);
    std::lock_guard lock(mutex);
    return kernels->emplace(key, std::move(kernel)).first->second;
}

void launch_pass(const core::Kernel& kernel, core::StreamRef stream, const void* src, void* dst, const FftPass& pass,
                 double scale, bool single, void* info) {
    if (pass.total == 0) return;
    constexpr std::int64_t block = 256;
    const std::int64_t sms = std::max(detail::KernelAccess::state(kernel).multiprocessor_count, 1);
    const std::int64_t grid = std::clamp<std::int64_t>((pass.total + block - 1) / block, 1, sms * 32);
    const core::LaunchConfig config{.grid = grid, .block = block};
    if (single) core::launch(stream, config, kernel, src, dst, pass, static_cast<float>(scale), info);
    else core::launch(stream, config, kernel, src, dst, pass, scale, info);
}

}  // namespace gpumath::detail
