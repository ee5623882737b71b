// SPDX-License-Identifier: Apache-2.0
// Private to src/dist: what a dist::FFT plan owns (FFTState), its device data (FFTData::Impl), the
// access to the public types' internals, and the execution (fft_execute.cpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <cuda_runtime_api.h>
#include <cufftXt.h>

#include <gpumath/core/event.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/dist/fft.hpp>

#include "core/stream_workspace.hpp"
#include "dist/fft_problem.hpp"
#include "fft/plan.hpp"

namespace gpumath::dist::detail {

/// Restores the calling thread's current device when it leaves scope: cuFFT Xt calls switch devices
/// (and cufftDestroy of a multi-GPU plan has been seen to leave the last one current).
class KeepCurrentDevice {
public:
    KeepCurrentDevice() noexcept {
        if (cudaGetDevice(&device_) != cudaSuccess) {
            (void)cudaGetLastError();
            device_ = -1;
        }
    }
    ~KeepCurrentDevice() {
        if (device_ >= 0) (void)cudaSetDevice(device_);
    }
    KeepCurrentDevice(const KeepCurrentDevice&) = delete;
    KeepCurrentDevice& operator=(const KeepCurrentDevice&) = delete;
    KeepCurrentDevice(KeepCurrentDevice&&) = delete;
    KeepCurrentDevice& operator=(KeepCurrentDevice&&) = delete;

private:
    int device_ = -1;
};

/// Per device of a plan across several devices, made when planning: how an execution orders the
/// normalization on that device after the transform without blocking the host.
struct DeviceSync {
    /// Non-blocking; waits for `transformed`, runs the scale, records `scaled`.
    core::Stream scale;
    /// Recorded on the caller's stream after the transform, when the caller's stream is this device's.
    core::Event transformed;
    /// Recorded on `scale` after the scale: the caller's stream (and the next execution) wait for it.
    core::Event scaled;
};

/// Everything a plan owns, shared by its FFT and the FFTData it allocated (so data can outlive the
/// FFT object and still copy through its cuFFT plan), and by CUDA graphs that captured an execution.
struct FFTState {
    FftProblem problem;
    FFTOptions options;  // kind resolved
    const char* api = "gpumath::dist::FFT";
    std::mutex mutex;  // planning, and every cuFFT call on the plan
    std::atomic<bool> planned{false};
    gpumath::detail::CufftPlan plan;  // set by ensure_planned
    std::vector<std::size_t> work;
    /// One device: cuFFT's work area comes per stream from the device's default pool (auto-allocation
    /// off), so executions on several streams (and captured ones) never share one; the stream and
    /// area bound to the plan last.
    std::shared_ptr<gpumath::detail::StreamWorkspace> workspace;
    cudaStream_t bound_stream = nullptr;
    void* bound_work = nullptr;
    bool bound = false;
    /// Several devices: one per device of `problem.devices`, in that order.
    std::vector<DeviceSync> sync;

    [[nodiscard]] bool multi() const noexcept { return problem.devices.size() > 1; }

    FFTState() = default;
    FFTState(const FFTState&) = delete;
    FFTState& operator=(const FFTState&) = delete;
    FFTState(FFTState&&) = delete;
    FFTState& operator=(FFTState&&) = delete;
    ~FFTState();

    /// Plans once (thread-safe); the caller holds no lock.
    void ensure_planned();
};

/// Whether cuFFT Xt's sub-format `sub_format` holds the permuted order.
[[nodiscard]] bool is_shuffled(int sub_format) noexcept;

}  // namespace gpumath::dist::detail

namespace gpumath::dist {

struct FFTData::Impl {
    std::shared_ptr<detail::FFTState> state;
    cudaLibXtDesc* desc = nullptr;  // several devices
    void* buffer = nullptr;         // one device
    std::size_t bytes = 0;          // one device
    /// Per device of the plan: recorded on the caller's stream at the end of an execution of this
    /// data (not inside a capture), so that the blocking calls wait for it; `last` names the one
    /// recorded last (-1: none). Both under the plan's mutex.
    std::vector<core::Event> executed;
    int last = -1;

    Impl() = default;
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;
    Impl(Impl&&) = delete;
    Impl& operator=(Impl&&) = delete;
    ~Impl();
};

namespace detail {

/// Private access to the public types' internals.
struct FFTAccess {
    using DataImpl = FFTData::Impl;
    static FFTState& state(const FFT& fft, const char* api);
    static const std::shared_ptr<FFTState>& owner(const FFT& fft) noexcept { return fft.state_; }
    static FFTData::Impl& impl(const FFTData& data, const char* api);
    static FFT make(const TensorLayout& input, const FFTOptions& options, FFTKind forced, const char* api);
    static FFTData allocate(FFTState& s, const std::shared_ptr<FFTState>& owner, const char* api);
    static FFTState& data_state(const FFTData::Impl& impl) noexcept { return *impl.state; }
    /// The host path: copy in, transform, normalize, wait, copy out (natural order).
    static void execute_host(FFT& fft, const TensorView& in, const TensorView& out, Direction direction,
                             const char* api);
};

/// Enqueues the transform of `d` in `direction` and its normalization on `stream` (checked first:
/// check_execute_stream), without blocking the host. One device: cuFFT and the scale on `stream`
/// with a work area of `stream`'s; in a capture, `owner` (the plan) is tied to the graph. Several
/// devices: cuFFT Xt on `stream` after every earlier execution of the plan, then each device's
/// scale on the plan's stream of that device, which `stream` waits for.
void execute_data(FFTState& s, FFTAccess::DataImpl& d, Direction direction, core::StreamRef stream,
                  const std::shared_ptr<FFTState>& owner, const char* api);

/// Blocks until the last execution of `d` enqueued outside a capture has finished (the blocking
/// calls' wait before they copy).
void wait_for_executions(const FFTAccess::DataImpl& d, const char* api);

}  // namespace detail
}  // namespace gpumath::dist
