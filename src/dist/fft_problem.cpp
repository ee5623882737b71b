// SPDX-License-Identifier: Apache-2.0
// Multi-GPU FFT request validation: the device list, kind and dtype, layout, the sizes cuFFT Xt
// accepts for the number of devices, and an execution's stream. Host-only except the device-range
// check (and the stream check's lookups, passed in).
#include "dist/fft_problem.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "detail/enum_check.hpp"
#include "detail/status.hpp"
#include "fft/geometry.hpp"
#include <gpumath/core/device.hpp>

namespace gpumath::dist::detail {
namespace {

using gpumath::detail::check_enum;  // check_direction
using gpumath::detail::throw_invalid;
using gpumath::detail::throw_not_supported;

bool is_power_of_two(std::int64_t v) noexcept { return v > 0 && (v & (v - 1)) == 0; }

std::string shape_text(const TensorLayout& l) { return gpumath::to_string(l.shape()); }

// The shortest 1-D length cuFFT Xt transforms on `count` GPUs (one transform, no batch), as CuPy
// checks it before cufftMakePlan1d (cupy/cuda/cufft.pyx, Plan1d._multi_gpu_get_plan).
std::int64_t min_1d_length(int count) noexcept {
    if (count <= 4) return 64;
    if (count == 8) return 128;
    return 1024;
}

void check_device_list(const std::vector<int>& devices, const char* api) {
    if (devices.empty())
        throw_invalid(fmt::format("options.devices: empty; list the 1 to {} GPUs (distinct device ordinals) the "
                                  "transform is spread over, e.g. {{0, 1}}",
                                  max_devices),
                      api);
    // First, so that a hostile list is neither searched for repeats nor printed whole.
    if (devices.size() > std::size_t(max_devices))
        throw_not_supported(fmt::format("options.devices: {} devices given; cuFFT Xt spreads a transform over at "
                                        "most {} GPUs",
                                        devices.size(), max_devices),
                            api);
    for (std::size_t i = 0; i < devices.size(); ++i) {
        if (devices[i] < 0)
            throw_invalid(fmt::format("options.devices: {} (at index {} of [{}]) is negative; device ordinals are 0 "
                                      "or more",
                                      devices[i], i, fmt::join(devices, ", ")),
                          api);
        for (std::size_t j = 0; j < i; ++j)
            if (devices[j] == devices[i])
                throw_invalid(fmt::format("options.devices: device {} is repeated (indices {} and {} of [{}]); each "
                                          "GPU may appear once",
                                          devices[i], j, i, fmt::join(devices, ", ")),
                              api);
    }
}

// cuFFT Xt's types, for the fft module's validation: no half precision.
constexpr gpumath::detail::FftRules xt_rules{
    .no_half = "cuFFT has no half-precision transforms across several GPUs; use f32/c32 (or gpumath::fft on one GPU)",
    .inputs = "multi-GPU FFT inputs are c32/c64 (c2c, c2r) or f32/f64 (r2c)"};

// The one-GPU options of the same request: every axis transformed (the last three of a larger
// rank, which layout_stage refuses after the fft module's checks), in order.
gpumath::FFTOptions one_gpu_options(const TensorLayout& in, const FFTOptions& options) {
    gpumath::FFTOptions o{
        .kind = options.kind, .last_axis_size = options.last_axis_size, .normalization = options.normalization};
    std::array<int, 3> axes{};
    const int count = std::min(in.rank(), 3);
    for (int i = 0; i < count; ++i) axes[std::size_t(i)] = in.rank() - count + i;
    o.axes = FFTAxes(std::span<const int>(axes.data(), std::size_t(count)));
    return o;
}

// What cuFFT Xt takes beyond the one-GPU rules: the whole array, row-major, int lengths.
void layout_stage(const TensorLayout& in, const FftProblem& p, const char* api) {
    if (in.rank() > 3)
        throw_invalid(fmt::format("input: rank {} (shape {}); a multi-GPU FFT transforms every axis of a 1-D, "
                                  "2-D or 3-D array (no batch axis)",
                                  in.rank(), shape_text(in)),
                      api);
    if (!in.is_contiguous())
        throw_invalid(fmt::format("input: strides {} for shape {} are not dense row-major; cuFFT Xt distributes "
                                  "whole row-major arrays (copy the data into a contiguous array first)",
                                  gpumath::to_string(in.strides()), shape_text(in)),
                      api);
    for (int i = 0; i < p.naxes; ++i) {
        const std::int64_t n = p.n[std::size_t(i)];
        if (n <= INT_MAX) continue;
        if (p.kind == FFTKind::c2r && i + 1 == p.naxes && in.shape(i) <= INT_MAX)
            throw_not_supported(
                fmt::format("options.last_axis_size: {} exceeds cuFFT Xt's limit of {} per axis", n, INT_MAX), api);
        throw_not_supported(fmt::format("input: extent {} along axis {} (shape {}) exceeds cuFFT Xt's limit "
                                        "of {} per axis (multi-GPU plans take int lengths)",
                                        in.shape(i), i, shape_text(in), INT_MAX),
                            api);
    }
    // The stored (padded, complex-element) array must be addressable in bytes.
    std::int64_t rows = 1, bytes = 0;
    for (int i = 0; i + 1 < p.naxes; ++i) rows *= p.n[std::size_t(i)];
    if (__builtin_mul_overflow(rows, p.stored_row_reals(), &bytes) ||
        __builtin_mul_overflow(bytes, std::int64_t(size_of(p.precision)), &bytes))
        throw_invalid(fmt::format("input: shape {}: the array's bytes overflow int64", shape_text(in)), api);
}

// What cuFFT Xt accepts for a single (unbatched) transform on several GPUs.
void multi_gpu_stage(const FftProblem& p, const TensorLayout& in, int count, const char* api) {
    if (count < 2) return;
    if (p.naxes == 1) {
        if (p.kind != FFTKind::c2c)
            throw_not_supported(fmt::format("input: a single 1-D {} transform cannot be spread over {} GPUs (cuFFT "
                                            "Xt spreads single 1-D transforms only for c2c); use one device, or a 2-D "
                                            "or 3-D transform",
                                            to_string(p.kind), count),
                                api);
        if (count != 2 && count != 4 && count != 8 && count != 16)
            throw_not_supported(fmt::format("options.devices: {} devices given; cuFFT Xt spreads a single 1-D "
                                            "transform over 2, 4, 8 or 16 GPUs",
                                            count),
                                api);
        const std::int64_t n = p.n[0];
        if (!is_power_of_two(n))
            throw_not_supported(fmt::format("input: length {} is not a power of two; cuFFT Xt spreads a single 1-D "
                                            "transform over several GPUs only for power-of-two lengths",
                                            n),
                                api);
        if (n < min_1d_length(count))
            throw_not_supported(fmt::format("input: length {} is too short to spread over {} GPUs; cuFFT Xt needs at "
                                            "least {} for {} GPUs (64 for 2 or 4, 128 for 8, 1024 for 16)",
                                            n, count, min_1d_length(count), count),
                                api);
        return;
    }
    for (int i = 0; i < p.naxes; ++i)
        if (p.n[std::size_t(i)] < min_multi_gpu_extent)
            throw_not_supported(fmt::format("input: length {} along axis {} (shape {}) is below {}; cuFFT Xt spreads "
                                            "a {}-D transform over several GPUs only with every length at least {}",
                                            p.n[std::size_t(i)], i, shape_text(in), min_multi_gpu_extent, p.naxes,
                                            min_multi_gpu_extent),
                                api);
}

}  // namespace

FftProblem make_fft_problem_host(const TensorLayout& in, const FFTOptions& options, FFTKind forced, const char* api) {
    const gpumath::FFTOptions one_gpu = one_gpu_options(in, options);
    gpumath::detail::check_fft_option_enums(one_gpu, api);
    check_device_list(options.devices, api);
    FftProblem p;
    static_cast<gpumath::detail::FftProblem&>(p) =
        gpumath::detail::make_fft_problem(in, nullptr, one_gpu, forced, api, xt_rules);
    layout_stage(in, p, api);
    multi_gpu_stage(p, in, int(options.devices.size()), api);
    p.in_layout = TensorLayout(in.dtype(), in.shape());  // canonical row-major strides
    p.devices = options.devices;
    return p;
}

void check_device_range(const std::vector<int>& devices, int count, const char* api) {
    for (std::size_t i = 0; i < devices.size(); ++i)
        if (devices[i] >= count)
            throw_invalid(fmt::format("options.devices: device {} (at index {} of [{}]) is out of range: this machine "
                                      "has {} CUDA device{}{}",
                                      devices[i], i, fmt::join(devices, ", "), count, count == 1 ? "" : "s",
                                      count == 0 ? " (no driver or no device)" : ""),
                          api);
}

FftProblem make_fft_problem(const TensorLayout& in, const FFTOptions& options, FFTKind forced, const char* api) {
    FftProblem p = make_fft_problem_host(in, options, forced, api);
    check_device_range(p.devices, core::Device::count(), api);
    return p;
}

void check_direction(const FftProblem& p, Direction d, const char* api) {
    check_enum(d, int(Direction::inverse) + 1, "a Direction", "direction", api);
    if ((p.kind == FFTKind::r2c && d != Direction::forward) || (p.kind == FFTKind::c2r && d != Direction::inverse))
        throw_invalid(fmt::format("direction: {} given for a {} transform, which runs {} only", to_string(d),
                                  to_string(p.kind), p.kind == FFTKind::r2c ? "forward" : "inverse"),
                      api);
}

int check_host_view(const FftProblem& p, const TensorView& v, int want, const char* role, const char* api) {
    const auto matches = [&](const TensorLayout& l) {
        if (v.dtype() != l.dtype() || v.rank() != l.rank()) return false;
        for (int i = 0; i < l.rank(); ++i)
            if (v.shape(i) != l.shape(i)) return false;
        return v.is_contiguous();
    };
    int which = -1;
    if ((want == -1 || want == 0) && matches(p.in_layout)) which = 0;
    else if ((want == -1 || want == 1) && matches(p.out_layout)) which = 1;
    if (which < 0) {
        std::string allowed = want == 1 ? gpumath::to_string(p.out_layout) : gpumath::to_string(p.in_layout);
        if (want == -1 && !(p.in_layout == p.out_layout))
            allowed = fmt::format("{} (the input) or {} (the output)", gpumath::to_string(p.in_layout),
                                  gpumath::to_string(p.out_layout));
        throw_invalid(
            fmt::format("{}: layout {} given; the plan's {} is {} (dense row-major)", role,
                        gpumath::to_string(v.layout()), want == 1 ? "output" : (want == 0 ? "input" : "data"), allowed),
            api);
    }
    if (v.data() == nullptr)
        throw_invalid(fmt::format("{}: data pointer is null; give host memory holding the whole array", role), api);
    const std::size_t align = size_of(p.precision);
    if (reinterpret_cast<std::uintptr_t>(v.data()) % align != 0)
        throw_invalid(fmt::format("{}: data pointer {} is not aligned to {} bytes ({})", role, fmt::ptr(v.data()),
                                  align, gpumath::to_string(v.dtype())),
                      api);
    // The host path copies from and to the host: device memory here would be read by the host.
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, v.data()) == cudaSuccess) {
        if (attributes.type == cudaMemoryTypeDevice)
            throw_invalid(fmt::format("{}: data pointer {} is memory of device {}; these calls copy whole arrays from "
                                      "and to host memory (for data on the GPUs, use FFTData: allocate(), part(i))",
                                      role, fmt::ptr(v.data()), attributes.device),
                          api);
    } else {
        (void)cudaGetLastError();  // no driver or an unknown pointer: host memory as far as CUDA knows
    }
    return which;
}

ExecuteStream check_execute_stream(const FftProblem& p, core::StreamRef stream, const StreamLookups& lookups,
                                   const char* api) {
    const cudaStream_t h = stream.handle();
    const bool default_stream = h == nullptr || h == cudaStreamLegacy || h == cudaStreamPerThread;
    ExecuteStream where{p.devices[0], 0};
    if (!default_stream) {
        where.device = lookups.device(stream);
        const auto it = std::find(p.devices.begin(), p.devices.end(), where.device);
        if (it == p.devices.end())
            throw_invalid(fmt::format("stream: belongs to device {}; this plan runs on device{} [{}]: pass a stream of "
                                      "{} (a default stream means device {}'s)",
                                      where.device, p.devices.size() == 1 ? "" : "s", fmt::join(p.devices, ", "),
                                      p.devices.size() == 1 ? "that device" : "one of them", p.devices[0]),
                          api);
        where.index = std::size_t(it - p.devices.begin());
    }
    if (p.devices.size() > 1 && lookups.capturing(stream, where.device, api))
        throw_invalid(fmt::format("stream: is capturing a CUDA graph; a transform across {} GPUs cannot be captured "
                                  "(cuFFT Xt moves data between the GPUs outside the stream): run it outside the "
                                  "capture (a plan of one device can be captured)",
                                  p.devices.size()),
                      api);
    return where;
}

}  // namespace gpumath::dist::detail
