// SPDX-License-Identifier: Apache-2.0
// Executing a dist::FFT on the caller's stream without blocking the host: the stream's checks, the
// one-device transform (cuFFT and the scale on the stream, capturable) and the transform across
// several devices (cuFFT Xt on the stream, each device's scale on a stream of the plan ordered by
// events), and the wait of the blocking calls.
#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>

#include <cufftXt.h>
#include <fmt/format.h>

#include <gpumath/error.hpp>

#include "core/driver_api.hpp"
#include "core/graph_holds.hpp"
#include "core/stream_workspace.hpp"
#include "detail/status.hpp"
#include "dist/fft_scale.hpp"
#include "dist/fft_state.hpp"

namespace gpumath::dist::detail {
namespace {

using gpumath::detail::check;
using gpumath::detail::check_cufft;

int stream_device_of(core::StreamRef stream) {
    return gpumath::detail::stream_device(reinterpret_cast<CUstream>(stream.handle()),
                                          "finding the device of a stream");
}

bool stream_capturing(core::StreamRef stream, int device, const char* api) {
    // A default stream is the one of the current device, which is the stream's.
    KeepCurrentDevice keep;
    check(cudaSetDevice(device), "cudaSetDevice", api);
    return gpumath::detail::is_capturing(stream, api);
}

constexpr StreamLookups real_lookups{&stream_device_of, &stream_capturing};

// cuFFT's single-device execution of `p`'s kind, in place on `b`.
void exec_one(const FFTState& s, void* b, int sign, const char* api) {
    int status = 0;
    const char* call = "";
    switch (gpumath::detail::cufft_type(s.problem)) {
        case CUFFT_C2C:
            call = "cufftExecC2C";
            status = cufftExecC2C(s.plan.handle(), static_cast<cufftComplex*>(b), static_cast<cufftComplex*>(b), sign);
            break;
        case CUFFT_Z2Z:
            call = "cufftExecZ2Z";
            status = cufftExecZ2Z(s.plan.handle(), static_cast<cufftDoubleComplex*>(b),
                                  static_cast<cufftDoubleComplex*>(b), sign);
            break;
        case CUFFT_R2C:
            call = "cufftExecR2C";
            status = cufftExecR2C(s.plan.handle(), static_cast<cufftReal*>(b), static_cast<cufftComplex*>(b));
            break;
        case CUFFT_D2Z:
            call = "cufftExecD2Z";
            status =
                cufftExecD2Z(s.plan.handle(), static_cast<cufftDoubleReal*>(b), static_cast<cufftDoubleComplex*>(b));
            break;
        case CUFFT_C2R:
            call = "cufftExecC2R";
            status = cufftExecC2R(s.plan.handle(), static_cast<cufftComplex*>(b), static_cast<cufftReal*>(b));
            break;
        default:
            call = "cufftExecZ2D";
            status =
                cufftExecZ2D(s.plan.handle(), static_cast<cufftDoubleComplex*>(b), static_cast<cufftDoubleReal*>(b));
            break;
    }
    check_cufft(status, call, api);
}

// One device: everything on `stream`, with a work area of `stream`'s (a capture's own inside one).
void execute_one(FFTState& s, FFTAccess::DataImpl& d, Direction direction, core::StreamRef stream,
                 const std::shared_ptr<FFTState>& owner, const char* api) {
    const FftProblem& p = s.problem;
    const int device = p.devices[0];
    KeepCurrentDevice keep;
    check(cudaSetDevice(device), "cudaSetDevice", api);
    // Always a real area to bind, also when cuFFT needs none.
    gpumath::detail::StreamWorkspace::Lease lease = s.workspace->acquire(std::max<std::size_t>(s.work[0], 256), stream);
    const bool capturing = lease.graph != nullptr;
    {
        // The plan's mutex only while cuFFT's stream and area are bound and the transform enqueued.
        std::lock_guard lock(s.mutex);
        if (!s.bound || s.bound_stream != stream.handle()) {
            check_cufft(cufftSetStream(s.plan.handle(), stream.handle()), "cufftSetStream", api);
            s.bound_stream = stream.handle();
        }
        if (!s.bound || s.bound_work != lease.data) {
            check_cufft(cufftSetWorkArea(s.plan.handle(), lease.data), "cufftSetWorkArea", api);
            s.bound_work = lease.data;
        }
        s.bound = true;
        exec_one(s, d.buffer, direction == Direction::forward ? CUFFT_FORWARD : CUFFT_INVERSE, api);
    }
    enqueue_scale({device, d.buffer, d.bytes}, p.precision, fft_scale(p, direction), stream);
    if (capturing) {
        // The graph's nodes name the cuFFT plan's tables: the plan lives as long as the graph.
        gpumath::detail::hold_for_graph(lease.graph, lease.capture, owner);
        return;
    }
    std::lock_guard lock(s.mutex);
    stream.record(d.executed[0]);
    d.last = 0;
}

// Several devices: cuFFT Xt on `stream` (of device index `home`), then each device's scale on the
// plan's stream of that device after the transform, which `stream` waits for. The host never waits.
void execute_multi(FFTState& s, FFTAccess::DataImpl& d, Direction direction, core::StreamRef stream, std::size_t home,
                   const char* api) {
    const FftProblem& p = s.problem;
    const int sign = direction == Direction::forward ? CUFFT_FORWARD : CUFFT_INVERSE;
    KeepCurrentDevice keep;
    // Under the lock throughout: the plan's streams, events and cuFFT's work areas serve one
    // execution at a time, and no other call on the plan sees the data half scaled.
    std::lock_guard lock(s.mutex);
    check(cudaSetDevice(p.devices[home]), "cudaSetDevice", api);
    // After every earlier execution of the plan (they share cuFFT Xt's work areas and this data may
    // be another's): an event never recorded is no wait.
    for (const DeviceSync& sync : s.sync) stream.wait(sync.scaled);
    if (!s.bound || s.bound_stream != stream.handle()) {
        check_cufft(cufftSetStream(s.plan.handle(), stream.handle()), "cufftSetStream", api);
        s.bound_stream = stream.handle();
        s.bound = true;
    }
    // cuFFT Xt leaves a 1-D result marked INPLACE_SHUFFLED, which a 1-D transform does not take as
    // input (CUFFT_INVALID_TYPE): shuffled 1-D input has a format of its own.
    if (p.naxes == 1 && d.desc->subFormat == CUFFT_XT_FORMAT_INPLACE_SHUFFLED)
        d.desc->subFormat = CUFFT_XT_FORMAT_1D_INPUT_SHUFFLED;
    check_cufft(cufftXtExecDescriptor(s.plan.handle(), d.desc, d.desc, sign), "cufftXtExecDescriptor", api);
    check(cudaSetDevice(p.devices[home]), "cudaSetDevice", api);
    stream.record(s.sync[home].transformed);
    const double scale = fft_scale(p, direction);
    const cudaXtDesc& x = *d.desc->descriptor;
    for (int i = 0; i < x.nGPUs; ++i) {
        const FFTPart part{x.GPUs[std::size_t(i)], x.data[std::size_t(i)], x.size[std::size_t(i)]};
        const auto at = std::size_t(std::find(p.devices.begin(), p.devices.end(), part.device) - p.devices.begin());
        const DeviceSync& sync = s.sync[at];
        check(cudaSetDevice(part.device), "cudaSetDevice", api);
        sync.scale.wait(s.sync[home].transformed);
        enqueue_scale(part, p.precision, scale, sync.scale);
        sync.scale.record(sync.scaled);
    }
    check(cudaSetDevice(p.devices[home]), "cudaSetDevice", api);
    for (const DeviceSync& sync : s.sync) stream.wait(sync.scaled);
    stream.record(d.executed[home]);
    d.last = int(home);
}

}  // namespace

const StreamLookups& cuda_stream_lookups() noexcept { return real_lookups; }

void execute_data(FFTState& s, FFTAccess::DataImpl& d, Direction direction, core::StreamRef stream,
                  const std::shared_ptr<FFTState>& owner, const char* api) {
    const ExecuteStream where = check_execute_stream(s.problem, stream, real_lookups, api);
    if (s.multi()) execute_multi(s, d, direction, stream, where.index, api);
    else execute_one(s, d, direction, stream, owner, api);
}

void wait_for_executions(const FFTAccess::DataImpl& d, const char* api) {
    cudaEvent_t last = nullptr;
    {
        std::lock_guard lock(d.state->mutex);
        if (d.last >= 0) last = d.executed[std::size_t(d.last)].handle();
    }
    if (last != nullptr) check(cudaEventSynchronize(last), "cudaEventSynchronize", api);
}

}  // namespace gpumath::dist::detail
