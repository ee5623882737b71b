// SPDX-License-Identifier: Apache-2.0
// Multi-GPU FFTs through cuFFT Xt: the plan (the fft module's make_cufft_xt_plan: cufftXtSetGPUs +
// cufftMakePlan*d, or an ordinary plan on one device), its device data (cufftXtMalloc/Memcpy/Free)
// and the blocking host copies. The execution is in fft_execute.cpp, the cached
// dist::fft/ifft/rfft/irfft in fft_cache.cpp.
#include <gpumath/dist/fft.hpp>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include <cufftXt.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <gpumath/core/device.hpp>

#include "detail/status.hpp"
#include "dist/fft_problem.hpp"
#include "dist/fft_scale.hpp"
#include "dist/fft_state.hpp"

namespace gpumath::dist {
namespace detail {
using gpumath::detail::check;
using gpumath::detail::check_cufft;
using gpumath::detail::throw_invalid;
using gpumath::detail::throw_moved_from;
using gpumath::detail::throw_not_supported;

bool is_shuffled(int sub_format) noexcept {
    return sub_format == CUFFT_XT_FORMAT_INPLACE_SHUFFLED || sub_format == CUFFT_XT_FORMAT_1D_INPUT_SHUFFLED;
}

FFTState::~FFTState() {
    if (!plan) return;
    // A one-device plan is destroyed on its device; cufftDestroy of a multi-GPU plan has been seen to
    // leave another device current.
    KeepCurrentDevice keep;
    if (!multi()) (void)cudaSetDevice(problem.devices[0]);
    plan.reset();
}

void FFTState::ensure_planned() {
    if (planned.load(std::memory_order_acquire)) return;
    std::lock_guard lock(mutex);
    if (planned.load(std::memory_order_relaxed)) return;
    if (multi()) {
        const core::ComputeCapability first = core::Device(problem.devices[0]).compute_capability();
        for (std::size_t i = 1; i < problem.devices.size(); ++i) {
            const core::ComputeCapability cc = core::Device(problem.devices[i]).compute_capability();
            if (cc != first)
                throw_not_supported(
                    fmt::format("options.devices: device {} has compute capability {}.{}, device "
                                "{} has {}.{}; cuFFT Xt needs GPUs of one architecture",
                                problem.devices[i], cc.major, cc.minor, problem.devices[0], first.major, first.minor),
                    api);
        }
    }
    // What executions use, made now so that they allocate, create and load nothing: the scale
    // kernels, and per device the stream and events that order the scale (several devices) or the
    // per-stream work areas (one device).
    KeepCurrentDevice keep;
    const bool scales = fft_scale(problem, Direction::forward) != 1.0 || fft_scale(problem, Direction::inverse) != 1.0;
    std::vector<DeviceSync> made;
    for (const int device : problem.devices) {
        check(cudaSetDevice(device), "cudaSetDevice", api);
        if (scales) load_scale_kernel(device, problem.precision);
        if (!multi()) continue;
        const core::Device dev(device);
        made.push_back({dev.create_stream({.non_blocking = true}), dev.create_event(), dev.create_event()});
    }
    if (!multi()) {
        workspace = gpumath::detail::stream_workspace(problem.devices[0], nullptr);
        check(cudaSetDevice(problem.devices[0]), "cudaSetDevice", api);
    }
    gpumath::detail::CufftXtPlanResult planned_xt = gpumath::detail::make_cufft_xt_plan(problem, problem.devices);
    check_cufft(planned_xt.status, planned_xt.failed_api, [&]() -> std::string {
        const std::string_view call = planned_xt.failed_api;
        if (call == "cufftXtSetGPUs") return fmt::format("{}: devices [{}]", api, fmt::join(problem.devices, ", "));
        if (call.starts_with("cufftMakePlan"))
            return fmt::format("{}: {} plan of {} on devices [{}]", api, to_string(problem.kind),
                               gpumath::to_string(problem.in_layout), fmt::join(problem.devices, ", "));
        return api;
    });
    plan = std::move(planned_xt.plan);
    work = std::move(planned_xt.work);
    sync = std::move(made);
    planned.store(true, std::memory_order_release);
}

FFTData::Impl& FFTAccess::impl(const FFTData& data, const char* api) {
    if (!data.impl_) throw_moved_from("FFTData", api);
    return *data.impl_;
}

FFTState& FFTAccess::state(const FFT& fft, const char* api) {
    if (!fft.state_) throw_moved_from("FFT", api);
    return *fft.state_;
}

FFT FFTAccess::make(const TensorLayout& input, const FFTOptions& options, FFTKind forced, const char* api) {
    auto state = std::make_shared<FFTState>();
    state->problem = make_fft_problem(input, options, forced, api);
    state->options = options;
    state->options.kind = state->problem.kind;
    FFT fft(std::move(state));
    return fft;
}

FFTData FFTAccess::allocate(FFTState& s, const std::shared_ptr<FFTState>& owner, const char* api) {
    s.ensure_planned();
    auto impl = std::make_unique<FFTData::Impl>();
    impl->state = owner;
    KeepCurrentDevice keep;
    for (const int device : s.problem.devices) {
        check(cudaSetDevice(device), "cudaSetDevice", api);
        impl->executed.push_back(core::Device(device).create_event());
    }
    if (s.multi()) {
        std::lock_guard lock(s.mutex);
        check_cufft(cufftXtMalloc(s.plan.handle(), &impl->desc, CUFFT_XT_FORMAT_INPLACE), "cufftXtMalloc", api);
    } else {
        check(cudaSetDevice(s.problem.devices[0]), "cudaSetDevice", api);
        impl->bytes = s.problem.stored_bytes();
        check(cudaMalloc(&impl->buffer, impl->bytes), "cudaMalloc",
              [&] { return fmt::format("{}: {} bytes on device {}", api, impl->bytes, s.problem.devices[0]); });
    }
    return FFTData(std::move(impl));
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// FFTData

FFTData::Impl::~Impl() {
    detail::KeepCurrentDevice keep;
    if (desc != nullptr) (void)cufftXtFree(desc);
    if (buffer != nullptr) {
        (void)cudaSetDevice(state->problem.devices[0]);
        (void)cudaFree(buffer);
    }
}

namespace detail {

namespace {

// The host buffer a real array is padded or unpadded through (its stored size). Error when the host
// cannot give that much memory.
std::vector<std::byte> host_staging(const FftProblem& p, const char* api) {
    try {
        return std::vector<std::byte>(p.stored_bytes());
    } catch (const std::bad_alloc&) {
        throw Error(
            fmt::format("the host could not allocate {} bytes to pad the real array for the devices", p.stored_bytes()),
            0, api);
    }
}

// Whether host data of layout `which` (0 input, 1 output) is real, so stored padded on the devices.
bool is_real_side(const FftProblem& p, int which) noexcept {
    return (p.kind == FFTKind::r2c && which == 0) || (p.kind == FFTKind::c2r && which == 1);
}

// Copies between a dense real host array and its padded stored form (rows of stored_row_reals reals).
void pad_rows(const FftProblem& p, const std::byte* dense, std::byte* padded) {
    const std::size_t real = size_of(p.precision);
    const std::size_t row = std::size_t(p.n[std::size_t(p.naxes - 1)]) * real;
    const std::size_t stored = std::size_t(p.stored_row_reals()) * real;
    const std::size_t rows = p.stored_bytes() / stored;
    for (std::size_t r = 0; r < rows; ++r) {
        std::memcpy(padded + r * stored, dense + r * row, row);
        std::memset(padded + r * stored + row, 0, stored - row);
    }
}
void unpad_rows(const FftProblem& p, const std::byte* padded, std::byte* dense) {
    const std::size_t real = size_of(p.precision);
    const std::size_t row = std::size_t(p.n[std::size_t(p.naxes - 1)]) * real;
    const std::size_t stored = std::size_t(p.stored_row_reals()) * real;
    const std::size_t rows = p.stored_bytes() / stored;
    for (std::size_t r = 0; r < rows; ++r) std::memcpy(dense + r * row, padded + r * stored, row);
}

// Copies `bytes` with `device` current on the calling thread's default stream and waits for the copy:
// cudaMemcpy from pageable memory may return before its DMA is done, which an execution on a
// stream that does not wait for the legacy stream would race with.
void copy_and_wait(int device, void* dst, const void* src, std::size_t bytes, const char* api) {
    check(cudaSetDevice(device), "cudaSetDevice", api);
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, cudaStreamPerThread), "cudaMemcpyAsync", api);
    check(cudaStreamSynchronize(cudaStreamPerThread), "cudaStreamSynchronize", api);
}

// Host to devices; `shuffled` places the data in cuFFT Xt's permuted order (what c2r across GPUs reads).
void upload(FFTState& s, FFTAccess::DataImpl& d, const void* host, bool shuffled, const char* api) {
    KeepCurrentDevice keep;
    if (s.multi()) {
        std::lock_guard lock(s.mutex);
        // cuFFT Xt reads the descriptor's sub-format to place the data (CuPy resets it the same way).
        d.desc->subFormat = shuffled ? CUFFT_XT_FORMAT_INPLACE_SHUFFLED : CUFFT_XT_FORMAT_INPLACE;
        check_cufft(cufftXtMemcpy(s.plan.handle(), d.desc, const_cast<void*>(host), CUFFT_COPY_HOST_TO_DEVICE),
                    "cufftXtMemcpy", api);
        return;
    }
    copy_and_wait(s.problem.devices[0], d.buffer, host, d.bytes, api);
}

void download(FFTState& s, const FFTAccess::DataImpl& d, void* host, const char* api) {
    KeepCurrentDevice keep;
    if (s.multi()) {
        std::lock_guard lock(s.mutex);
        check_cufft(cufftXtMemcpy(s.plan.handle(), host, d.desc, CUFFT_COPY_DEVICE_TO_HOST), "cufftXtMemcpy", api);
        return;
    }
    copy_and_wait(s.problem.devices[0], host, d.buffer, d.bytes, api);
}

FFTAccess::DataImpl& own_data(FFTState& s, const FFTData& data, const char* name, const char* api) {
    FFTAccess::DataImpl& d = FFTAccess::impl(data, api);
    if (&FFTAccess::data_state(d) != &s)
        throw_invalid(fmt::format("{}: this FFTData was allocated by another dist::FFT plan ({} on devices [{}]); "
                                  "use data from this plan's allocate() ({} on devices [{}])",
                                  name, gpumath::to_string(FFTAccess::data_state(d).problem.in_layout),
                                  fmt::join(FFTAccess::data_state(d).problem.devices, ", "),
                                  gpumath::to_string(s.problem.in_layout), fmt::join(s.problem.devices, ", ")),
                      api);
    return d;
}

}  // namespace

void FFTAccess::execute_host(FFT& fft, const TensorView& in, const TensorView& out, Direction direction,
                             const char* api) {
    FFTState& s = state(fft, api);
    check_direction(s.problem, direction, api);
    (void)check_host_view(s.problem, in, 0, "in", api);
    (void)check_host_view(s.problem, out, 1, "out", api);
    FFTData data = allocate(s, fft.state_, api);
    DataImpl& d = *data.impl_;
    const bool real_in = s.problem.kind == FFTKind::r2c;
    const bool real_out = s.problem.kind == FFTKind::c2r;
    std::vector<std::byte> staging;
    if (real_in || real_out) staging = host_staging(s.problem, api);
    if (real_in) {
        pad_rows(s.problem, static_cast<const std::byte*>(in.data()), staging.data());
        upload(s, d, staging.data(), false, api);
    } else {
        upload(s, d, in.data(), s.problem.kind == FFTKind::c2r, api);
    }
    // On the default stream of the plan's first device; the host waits for it explicitly before
    // the copy back (the execution itself does not block).
    execute_data(s, d, direction, core::StreamRef{}, fft.state_, api);
    wait_for_executions(d, api);
    if (real_out) {
        download(s, d, staging.data(), api);
        unpad_rows(s.problem, staging.data(), static_cast<std::byte*>(out.data()));
    } else {
        download(s, d, out.data(), api);
    }
}

}  // namespace detail

FFTData::FFTData(std::unique_ptr<Impl> impl) noexcept : impl_(std::move(impl)) {}
FFTData::~FFTData() = default;
FFTData::FFTData(FFTData&& other) noexcept = default;
FFTData& FFTData::operator=(FFTData&& other) noexcept = default;

void FFTData::copy_from(const TensorView& host) {
    constexpr const char* api = "gpumath::dist::FFTData::copy_from";
    Impl& d = detail::FFTAccess::impl(*this, api);
    detail::FFTState& s = *d.state;
    const int which = detail::check_host_view(s.problem, host, -1, "host", api);
    const bool shuffled = s.problem.kind == FFTKind::c2r && which == 0;
    detail::wait_for_executions(d, api);  // an execution in flight still reads and writes the data
    if (detail::is_real_side(s.problem, which)) {
        std::vector<std::byte> staging = detail::host_staging(s.problem, api);
        detail::pad_rows(s.problem, static_cast<const std::byte*>(host.data()), staging.data());
        detail::upload(s, d, staging.data(), shuffled, api);
    } else {
        detail::upload(s, d, host.data(), shuffled, api);
    }
}

void FFTData::copy_to(const TensorView& host) const {
    constexpr const char* api = "gpumath::dist::FFTData::copy_to";
    const Impl& d = detail::FFTAccess::impl(*this, api);
    detail::FFTState& s = *d.state;
    const int which = detail::check_host_view(s.problem, host, -1, "host", api);
    detail::wait_for_executions(d, api);
    if (detail::is_real_side(s.problem, which)) {
        std::vector<std::byte> staging = detail::host_staging(s.problem, api);
        detail::download(s, d, staging.data(), api);
        detail::unpad_rows(s.problem, staging.data(), static_cast<std::byte*>(host.data()));
    } else {
        detail::download(s, d, host.data(), api);
    }
}

DataOrder FFTData::order() const {
    const Impl& d = detail::FFTAccess::impl(*this, "gpumath::dist::FFTData::order");
    if (d.desc == nullptr) return DataOrder::natural;
    std::lock_guard lock(d.state->mutex);
    return detail::is_shuffled(d.desc->subFormat) ? DataOrder::shuffled : DataOrder::natural;
}

void FFTData::set_order(DataOrder order) {
    constexpr const char* api = "gpumath::dist::FFTData::set_order";
    Impl& d = detail::FFTAccess::impl(*this, api);
    if (order != DataOrder::natural && order != DataOrder::shuffled)
        detail::throw_invalid(fmt::format("order: {} is not a DataOrder; allowed: natural, shuffled", int(order)), api);
    if (d.desc == nullptr) {
        if (order == DataOrder::shuffled)
            detail::throw_invalid(
                "order: shuffled on one device; data on one device has one part and is always in "
                "natural order",
                api);
        return;
    }
    std::lock_guard lock(d.state->mutex);
    if (order == DataOrder::natural) d.desc->subFormat = CUFFT_XT_FORMAT_INPLACE;
    else if (d.state->problem.naxes == 1) d.desc->subFormat = CUFFT_XT_FORMAT_1D_INPUT_SHUFFLED;
    else d.desc->subFormat = CUFFT_XT_FORMAT_INPLACE_SHUFFLED;
}

int FFTData::parts() const noexcept {
    if (!impl_) return 0;
    return impl_->desc != nullptr ? impl_->desc->descriptor->nGPUs : 1;
}

FFTPart FFTData::part(int i) const {
    constexpr const char* api = "gpumath::dist::FFTData::part";
    const Impl& d = detail::FFTAccess::impl(*this, api);
    const int count = parts();
    if (i < 0 || i >= count)
        detail::throw_invalid(fmt::format("i: part {} does not exist; this data has {} part{} (0..{})", i, count,
                                          count == 1 ? "" : "s", count - 1),
                              api);
    if (d.desc == nullptr) return {d.state->problem.devices[0], d.buffer, d.bytes};
    const cudaXtDesc& x = *d.desc->descriptor;
    return {x.GPUs[std::size_t(i)], x.data[std::size_t(i)], x.size[std::size_t(i)]};
}

// ---------------------------------------------------------------------------------------------
// FFT

FFT::FFT(const TensorLayout& input, const FFTOptions& options)
    : FFT(detail::FFTAccess::make(input, options, FFTKind::automatic, "gpumath::dist::FFT")) {}
FFT::FFT(std::shared_ptr<detail::FFTState> state) noexcept : state_(std::move(state)) {}
FFT::~FFT() = default;
FFT::FFT(FFT&&) noexcept = default;
FFT& FFT::operator=(FFT&&) noexcept = default;

void FFT::plan() { detail::FFTAccess::state(*this, "gpumath::dist::FFT::plan").ensure_planned(); }

bool FFT::planned() const noexcept { return state_ && state_->planned.load(); }

FFTData FFT::allocate() {
    constexpr const char* api = "gpumath::dist::FFT::allocate";
    return detail::FFTAccess::allocate(detail::FFTAccess::state(*this, api), state_, api);
}

void FFT::execute(FFTData& data, Direction direction, core::StreamRef stream) {
    constexpr const char* api = "gpumath::dist::FFT::execute";
    detail::FFTState& s = detail::FFTAccess::state(*this, api);
    auto& d = detail::own_data(s, data, "data", api);
    detail::check_direction(s.problem, direction, api);
    if (s.multi() && s.problem.kind != FFTKind::c2c) {
        std::unique_lock lock(s.mutex);
        const bool shuffled = detail::is_shuffled(d.desc->subFormat);
        lock.unlock();
        if (s.problem.kind == FFTKind::c2r && !shuffled)
            detail::throw_invalid(
                "data: a c2r transform across GPUs reads the shuffled order, which copy_from of the complex "
                "input places (or set_order); this data is in natural order (a fresh allocation, or to_natural's "
                "result)",
                api);
        if (s.problem.kind == FFTKind::r2c && shuffled)
            detail::throw_invalid(
                "data: an r2c transform across GPUs reads real data in natural order; this data is "
                "in shuffled order (already transformed?): copy_from the real input, or set_order",
                api);
    }
    detail::execute_data(s, d, direction, stream, state_, api);
}

FFTData FFT::to_natural(const FFTData& src) {
    constexpr const char* api = "gpumath::dist::FFT::to_natural";
    detail::FFTState& s = detail::FFTAccess::state(*this, api);
    auto& from = detail::own_data(s, src, "src", api);
    FFTData dst = detail::FFTAccess::allocate(s, state_, api);
    auto& to = detail::FFTAccess::impl(dst, api);
    detail::wait_for_executions(from, api);
    detail::KeepCurrentDevice keep;
    if (s.multi()) {
        std::lock_guard lock(s.mutex);
        to.desc->subFormat = CUFFT_XT_FORMAT_INPLACE;
        if (detail::is_shuffled(from.desc->subFormat)) {
            // cuFFT Xt redistributes the shuffled order into the natural one (synchronously).
            detail::check_cufft(cufftXtMemcpy(s.plan.handle(), to.desc, from.desc, CUFFT_COPY_DEVICE_TO_DEVICE),
                                "cufftXtMemcpy", api);
        } else {
            // Already natural: both allocations of this plan split the array alike, part by part.
            const cudaXtDesc& x = *from.desc->descriptor;
            const cudaXtDesc& y = *to.desc->descriptor;
            for (int i = 0; i < x.nGPUs; ++i)
                detail::copy_and_wait(y.GPUs[std::size_t(i)], y.data[std::size_t(i)], x.data[std::size_t(i)],
                                      x.size[std::size_t(i)], api);
        }
    } else {
        detail::copy_and_wait(s.problem.devices[0], to.buffer, from.buffer, to.bytes, api);
    }
    return dst;
}

void FFT::execute(const TensorView& in, const TensorView& out, Direction direction) {
    detail::FFTAccess::execute_host(*this, in, out, direction, "gpumath::dist::FFT::execute");
}

const TensorLayout& FFT::input_layout() const noexcept {
    static const TensorLayout empty{};
    return state_ ? state_->problem.in_layout : empty;
}
const TensorLayout& FFT::output_layout() const noexcept {
    static const TensorLayout empty{};
    return state_ ? state_->problem.out_layout : empty;
}
FFTKind FFT::kind() const noexcept { return state_ ? state_->problem.kind : FFTKind::automatic; }
std::span<const int> FFT::devices() const noexcept {
    if (!state_) return {};
    return state_->problem.devices;
}
const FFTOptions& FFT::options() const noexcept {
    static const FFTOptions empty{};
    return state_ ? state_->options : empty;
}
std::span<const std::size_t> FFT::workspace_sizes() const noexcept {
    if (!planned()) return {};
    return state_->work;
}

}  // namespace gpumath::dist
