// SPDX-License-Identifier: Apache-2.0
// The elementwise pass kernels of FFTs (kernels/fft_pass.cu), loaded per device by the core kernel
// loader: the built-in ones (copy and scale) and those that run a user's callback; and launching.
#include "fft/pass.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/launch.hpp>
#include <gpumath/error.hpp>

#include "core/kernel_loader.hpp"
#include "detail/status.hpp"
#include "fft/callback.hpp"
#include "fft/sources.hpp"

namespace gpumath::detail {

static_assert(sizeof(FftPass) == 208 && sizeof(long long) == sizeof(std::int64_t),
              "the pass kernel's parameters are a rank and 25 64-bit integers");

namespace {

DeviceProgram make_program(const FftPassSpec& spec, std::vector<core::ObjectCode> link_inputs = {}) {
    FftProgram program = fft_pass_program(spec);
    return {program.source, std::move(program.options), {}, std::move(link_inputs)};
}

// The built-in programs, made once: f32, f64, c32, c64, then f16 and bf16 each alone and in pairs.
const DeviceProgram& builtin_program(DataType element, bool pairs) {
    static const std::vector<DeviceProgram> programs = [] {
        std::vector<DeviceProgram> made;
        for (const auto& [e, p] : {std::pair{DataType::f32, false},
                                   {DataType::f64, false},
                                   {DataType::c32, false},
                                   {DataType::c64, false},
                                   {DataType::f16, false},
                                   {DataType::f16, true},
                                   {DataType::bf16, false},
                                   {DataType::bf16, true}})
            made.push_back(make_program({.element = e, .pairs = p}));
        return made;
    }();
    switch (element) {
        case DataType::f32:
            return programs[0];
        case DataType::f64:
            return programs[1];
        case DataType::c32:
            return programs[2];
        case DataType::c64:
            return programs[3];
        case DataType::f16:
            return programs[pairs ? 5 : 4];
        case DataType::bf16:
            return programs[pairs ? 7 : 6];
        default:
            throw_invalid(fmt::format("element: {} is not an FFT element type", gpumath::to_string(element)),
                          "gpumath::FFT");
    }
}

}  // namespace

core::Kernel builtin_pass_kernel(DataType element, bool pairs, int device) {
    return device_kernel(device, builtin_program(element, pairs), fft_pass_kernel_name);
}

core::Kernel callback_pass_kernel(DataType element, const FFTCallback& callback, FFTCallbackKind kind, int device) {
    FftPassSpec spec{.element = element, .callback = &callback, .kind = kind};
    if (!callback.source.empty()) {
        try {
            return device_kernel(device, make_program(spec), fft_pass_kernel_name);
        } catch (const CompileError& e) {
            throw_callback_compile_error(e, callback, kind, element);
        }
    }
    // LTO-IR from the user: the pass is compiled against a declaration and linked with it. The
    // linkage of the user's symbol is not known: C++ first, then C.
    spec.declare_only = true;
    try {
        return device_kernel(device, make_program(spec, {callback.code}), fft_pass_kernel_name);
    } catch (const LinkError&) {
        spec.c_linkage = true;
        return device_kernel(device, make_program(spec, {callback.code}), fft_pass_kernel_name);
    }
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
