// SPDX-License-Identifier: Apache-2.0
// Private to src/dist (and its tests): validation of a multi-GPU FFT request (the fft module's rules
// plus cuFFT Xt's), of an execution's stream and the sizes of its in-place data. Pure host code
// except the device-range check, which reads core::Device::count(), and the stream check's lookups,
// which are passed in.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <gpumath/core/stream.hpp>
#include <gpumath/dist/fft.hpp>
#include <gpumath/layout.hpp>

#include "fft/geometry.hpp"

namespace gpumath::dist::detail {

/// Most devices cuFFT Xt spreads one plan over (cuFFT documentation, "Multiple GPU cuFFT
/// Transforms"; cuFFTMp's comparison table: "Maximum number of GPUs: 16").
inline constexpr int max_devices = 16;
/// Shortest length of each axis of a 2-D or 3-D transform across several GPUs (the same table:
/// "Minimum size (with nGPUs GPUs): 32 in every dimension").
inline constexpr std::int64_t min_multi_gpu_extent = 32;

/// A validated multi-GPU FFT request: the fft module's problem of the whole array (every axis
/// transformed in order, so `naxes` is the rank; `in_layout` dense row-major, `out_layout` the
/// row-major output; f32 or f64 precision) and the devices.
struct FftProblem : gpumath::detail::FftProblem {
    /// The devices, validated (distinct, in range).
    std::vector<int> devices{};

    /// Reals per row of the last axis as stored on the devices: 2 * (n/2 + 1) for r2c/c2r (cuFFT's
    /// in-place padding), n complex elements (2n reals) for c2c.
    [[nodiscard]] std::int64_t stored_row_reals() const noexcept {
        const std::int64_t last = n[std::size_t(naxes - 1)];
        return kind == FFTKind::c2c ? 2 * last : 2 * (last / 2 + 1);
    }
    /// Bytes of one whole array as stored on the devices (all parts together).
    [[nodiscard]] std::size_t stored_bytes() const noexcept {
        std::int64_t rows = 1;
        for (int i = 0; i + 1 < naxes; ++i) rows *= n[std::size_t(i)];
        return std::size_t(rows) * std::size_t(stored_row_reals()) * size_of(precision);
    }
};

/// Validates a request before any GPU work, in this order (the order errors are reported in):
/// option enums; the device list's form (non-empty, at most 16, no negative or repeated ordinal);
/// then the fft module's validation (make_fft_problem, with cuFFT Xt's types: kind and dtype, `forced`
/// being the kind a free function computes, automatic for the FFT class; last_axis_size; the
/// transform lengths); rank 1 to 3; dense row-major layout; extents within cuFFT's int; the sizes
/// cuFFT Xt accepts for this many devices (NotSupported); last, each ordinal against
/// core::Device::count() (InvalidArgument; every ordinal is out of range without a driver). Messages
/// start with `api` and name the field, the value and what is allowed.
[[nodiscard]] FftProblem make_fft_problem(const TensorLayout& in, const FFTOptions& options, FFTKind forced,
                                          const char* api);

/// The same without the device-range check: every rule that needs no CUDA runtime (tests use it on
/// machines without a GPU).
[[nodiscard]] FftProblem make_fft_problem_host(const TensorLayout& in, const FFTOptions& options, FFTKind forced,
                                               const char* api);

/// Throws InvalidArgument unless each of `devices` is below `count` (the machine's devices).
void check_device_range(const std::vector<int>& devices, int count, const char* api);

/// Checks `direction` for `problem` (a Direction; r2c forward only, c2r inverse only).
void check_direction(const FftProblem& problem, Direction direction, const char* api);

/// Which of the problem's layouts a host view `view` (named `role`) has: 0 the input, 1 the
/// output (a c2c view is both: 0). InvalidArgument unless it is dense row-major with the dtype and
/// shape of `want` (-1: either layout), its pointer is not null and is aligned to its element.
int check_host_view(const FftProblem& problem, const TensorView& view, int want, const char* role, const char* api);

/// The CUDA queries the stream check of an execution needs, passed in so that its rules are tested
/// without a GPU: the device of a stream that is not a default stream, and whether `stream` (on
/// `device`, current while it is asked) is capturing a CUDA graph. Each throws CudaError on failure.
struct StreamLookups {
    int (*device)(core::StreamRef stream) = nullptr;
    bool (*capturing)(core::StreamRef stream, int device, const char* api) = nullptr;
};

/// The queries of a real process (the stream's context, cudaStreamGetCaptureInfo); defined beside
/// the execution (fft_execute.cpp).
[[nodiscard]] const StreamLookups& cuda_stream_lookups() noexcept;

/// Where an execution's stream is: `index` of its device in `problem.devices`.
struct ExecuteStream {
    int device = 0;
    std::size_t index = 0;
};

/// Checks the stream of `FFT::execute(data, direction, stream)` and returns its device: a default
/// stream (null, legacy or per-thread) means that stream of the plan's first device; any other must
/// belong to one of the plan's devices (InvalidArgument naming the stream and the devices). Across
/// several devices a capturing stream is InvalidArgument (cuFFT Xt moves data between the GPUs
/// outside the stream; nothing has been enqueued then). The device query comes first, the capture
/// query last.
[[nodiscard]] ExecuteStream check_execute_stream(const FftProblem& problem, core::StreamRef stream,
                                                 const StreamLookups& lookups, const char* api);

/// Scale factor of a transform in `direction` under the problem's normalization: the one-GPU FFT's.
using gpumath::detail::fft_scale;

}  // namespace gpumath::dist::detail
