// SPDX-License-Identifier: Apache-2.0
// gpumath::FFT: planning on first use, the callback mode (automatic mode times fused against
// separate), and which variant runs an execution (direction, operand alignment).
#include <gpumath/fft/fft.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include "detail/status.hpp"
#include <gpumath/error.hpp>

#include "detail/log.hpp"
#include "core/graph_holds.hpp"
#include "fft/fft_impl.hpp"
#include "fft/sources.hpp"

namespace gpumath {
namespace detail {

void FFTImpl::plan_locked(int current) {
    device = current;
    const core::Device dev(device);
    if (p.precision == DataType::bf16 && dev.compute_capability().value() < 80)
        throw_not_supported(fmt::format("input: bf16 FFTs need compute capability 8.0 or newer (a cuFFT rule); {} is "
                                        "{}.{}",
                                        dev.name(), dev.compute_capability().major, dev.compute_capability().minor),
                            api);
    arch = dev.arch();
    // The areas of a caller's resource are shared per (device, resource); the work areas of the
    // default pool are the device's.
    resource = options.memory_resource ? options.memory_resource : core::DeviceMemoryResource::default_resource(device);
    workspace = stream_workspace(device, options.memory_resource);

    const bool callbacks = p.has_prolog || p.has_epilog;
    const CallbackMode asked = options.callback_mode;
    const Direction first = primary();
    if (!callbacks) {
        if (asked != CallbackMode::fused) {
            // Normalization is a separate pass (fused into a generated store only in fused mode).
            FftVariant* v = keep_locked(aligned, build(false, false, false, first));
            run[aligned][0] = v;
            run[aligned][1] = v;
            return;
        }
        fuse = true;
        run[aligned][std::size_t(first)] = fused_for_locked(first);
        return;
    }

    if (asked == CallbackMode::separate) {
        FftVariant* v = keep_locked(aligned, build(false, false, false, first));
        run[aligned][0] = v;
        run[aligned][1] = v;
        mode = CallbackMode::separate;
        return;
    }
    if (asked == CallbackMode::fused) {
        try {
            run[aligned][std::size_t(first)] = fused_for_locked(first);
        } catch (const CufftError& e) {
            throw CufftError(fmt::format("{}\ncuFFT refused the plan with fused callbacks; CallbackMode::separate (or "
                                         "automatic) runs the same callbacks in a separate pass",
                                         e.what()),
                             e.status(), e.api());
        }
        mode = CallbackMode::fused;
        fuse = true;
        return;
    }

    // Automatic: plan both, time both once on scratch data, keep the faster.
    std::unique_ptr<FftVariant> separate = build(false, false, false, first);
    std::unique_ptr<FftVariant> fused = try_build_fused(false, false, first, "");
    if (fused && fused->fuses()) {
        core::Stream stream({.non_blocking = true});  // timed alone, not behind default-stream work
        const std::size_t in_span = std::size_t(std::max<std::int64_t>(p.in_layout.span_bytes(), 1));
        const std::size_t out_span = std::size_t(std::max<std::int64_t>(p.out_layout.span_bytes(), 1));
        core::Buffer in(in_span, stream, resource), out(out_span, stream, resource);
        core::Buffer work(std::max(separate->bytes, fused->bytes), stream, resource);
        check(cudaMemsetAsync(in.data(), 0, in_span, stream.handle()), "cudaMemsetAsync");
        double ts = measure(*separate, in.data(), out.data(), stream, work.data());
        double tf = measure(*fused, in.data(), out.data(), stream, work.data());
        ts = std::min(ts, measure(*separate, in.data(), out.data(), stream, work.data()));
        tf = std::min(tf, measure(*fused, in.data(), out.data(), stream, work.data()));
        stream.synchronize();
        in.reset();
        out.reset();
        work.reset();
        stream.synchronize();
        log(LogLevel::info, "fft: callbacks fused {:.4f} ms, separate {:.4f} ms per transform: using {}", tf, ts,
            tf < ts ? "fused" : "separate");
        if (tf < ts) {
            run[aligned][std::size_t(first)] = keep_locked(aligned, std::move(fused));
            mode = CallbackMode::fused;
            fuse = true;
            return;
        }
    }
    FftVariant* v = keep_locked(aligned, std::move(separate));
    run[aligned][0] = v;
    run[aligned][1] = v;
    mode = CallbackMode::separate;
}

std::unique_ptr<FftVariant> FFTImpl::try_build_fused(bool in_temp, bool out_temp, Direction d, const char* what) {
    // Automatic mode never fails where separate passes work: whatever only the fused build does
    // (compile the entry cuFFT calls, link, plan with callbacks) falls back to them.
    if (fft_callbacks_share_name(options)) {
        log(LogLevel::info,
            "fft: prolog \"{}\" and epilog \"{}\" come from one source and end in the same name, which fused "
            "modules cannot tell apart; the callbacks run as separate passes",
            options.prolog.symbol, options.epilog.symbol);
        return nullptr;
    }
    try {
        return build(in_temp, out_temp, true, d);
    } catch (const CufftError& e) {
        log(LogLevel::info, "fft: cuFFT refused fused callbacks{} ({}); the callbacks run as separate passes", what,
            e.what());
    } catch (const CompileError& e) {
        log(LogLevel::info, "fft: fused callbacks failed to compile{} ({}); the callbacks run as separate passes", what,
            e.what());
    } catch (const LinkError& e) {
        log(LogLevel::info, "fft: fused callbacks failed to link{} ({}); the callbacks run as separate passes", what,
            e.what());
    }
    return nullptr;
}

FftVariant* FFTImpl::keep_locked(std::size_t alignment, std::unique_ptr<FftVariant> v) {
    FftVariant* kept = v.get();
    owned[alignment].push_back(std::move(v));
    // Writers hold plan_mutex; workspace_size() reads without it.
    if (alignment == aligned && kept->bytes > aligned_workspace.load(std::memory_order_relaxed))
        aligned_workspace.store(kept->bytes, std::memory_order_relaxed);
    return kept;
}

FftVariant* FFTImpl::fused_for_locked(Direction d) {
    // A fused variant bakes one scale into its store; reuse one that fits this direction.
    const double scale = fft_scale(p, d);
    // The aligned variants here are fused ones (a separate one from plan() serves both directions
    // and never reaches this), or the separate one automatic mode fell back to for the other
    // direction, which applies its scale in its own passes.
    for (const auto& v : owned[aligned]) {
        // Without a baked scale, a variant applies one itself only before its scatter pass (or
        // when it has no epilog to see unscaled values, in the scale pass).
        const bool fits = v->fused.scale ? v->fused.baked_scale == scale : (scale == 1.0 || v->g.out.temp);
        if (fits) return v.get();
    }
    if (options.callback_mode == CallbackMode::fused) return keep_locked(aligned, build(false, false, true, d));
    // Automatic mode fused the first direction; this one may still need separate passes.
    std::unique_ptr<FftVariant> v = try_build_fused(false, false, d, " for the other direction");
    return keep_locked(aligned, v ? std::move(v) : build(false, false, false, d));
}

FftVariant* FFTImpl::variant_for(std::size_t alignment, Direction d, core::StreamRef stream) {
    std::atomic<FftVariant*>& slot = run[alignment][std::size_t(d)];
    if (FftVariant* v = slot.load(std::memory_order_acquire)) return v;
    // A variant built on first use (the other direction of a fused plan, operands at an odd real
    // offset) is a cuFFT plan too: never made inside a graph capture.
    reject_capture(stream, api,
                   "this execution needs a cuFFT plan that is made on first use (the other direction of a fused "
                   "plan, or a real operand at an odd offset), which cannot be captured: run the same execution "
                   "once before the capture");
    std::lock_guard lock(plan_mutex);
    if (FftVariant* v = slot.load(std::memory_order_relaxed)) return v;
    FftVariant* v = alignment == aligned ? fused_for_locked(d) : odd_real_variant_locked(d);
    slot.store(v, std::memory_order_release);
    return v;
}

FftVariant* FFTImpl::odd_real_variant_locked(Direction d) {
    const bool r2c = p.kind == FFTKind::r2c;
    log(LogLevel::info,
        "fft: the real {} of this {} is not aligned like a complex element, which cuFFT requires; it "
        "goes through a contiguous temp",
        r2c ? "input" : "output", to_string(p.kind));
    std::unique_ptr<FftVariant> built;
    if (fuse && options.callback_mode != CallbackMode::fused) {
        // Chosen by automatic mode for aligned operands; cuFFT may refuse the new geometry.
        built = try_build_fused(r2c, !r2c, d, " for the copied layout");
        if (!built) built = build(r2c, !r2c, false, d);
    } else {
        built = build(r2c, !r2c, fuse, d);
    }
    return keep_locked(odd_real, std::move(built));
}

void FFTImpl::execute(const TensorView& in, const TensorView& out, Direction d, core::StreamRef stream) {
    check_fft_operands(p, in, &out, d, api);
    enqueue(in, out, d, stream);
}

FFTImpl::~FFTImpl() {
    // Destroying a cuFFT plan may wait for the whole device (cuFFT frees its tables with cudaFree),
    // which would block the caller behind its own work and, as a potentially unsafe call, be
    // refused while another thread captures in global mode. So the variants are dropped on gpumath's
    // release thread (relaxed capture mode, the plan's device current). Their pass kernels stay
    // loaded for the life of the process: work still running needs nothing of them.
    for (auto& list : owned)
        for (auto& v : list) drop_later(std::move(v), device);
}

void FFTImpl::plan_first_execution(core::StreamRef stream, int current) {
    // cuFFT allocates and copies synchronously while planning (and automatic callback mode times
    // both ways): neither may happen inside a graph capture.
    reject_capture(stream, api,
                   "an FFT plans on its first execution, which cannot be captured: call plan() (or execute "
                   "once) before the capture");
    plan(current);
}

void FFTImpl::plan(int current) {
    std::lock_guard lock(plan_mutex);
    if (planned.load(std::memory_order_relaxed)) return;
    if (!p.empty) plan_locked(current);
    planned.store(true, std::memory_order_release);
}

void FFTImpl::enqueue(const TensorView& in, const TensorView& out, Direction d, core::StreamRef stream) {
    if (p.empty) return;
    int current = 0;
    check(cudaGetDevice(&current), "cudaGetDevice");
    enqueue(in, out, d, stream, current);
}

void FFTImpl::enqueue(const TensorView& in, const TensorView& out, Direction d, core::StreamRef stream, int current) {
    if (p.empty) return;
    if (!planned.load(std::memory_order_acquire)) [[unlikely]]
        plan_first_execution(stream, current);
    std::optional<DeviceGuard> guard;
    if (current != device) [[unlikely]]
        guard.emplace(device);
    FftVariant* v = variant_for(aligned, d, stream);
    if (p.kind != FFTKind::c2c) {
        const bool r2c = p.kind == FFTKind::r2c;
        const auto real = reinterpret_cast<std::uintptr_t>(r2c ? in.data() : out.data());
        if (real % (2 * fft_element_bytes(p.precision, false)) != 0 && !(r2c ? v->g.in.temp : v->g.out.temp))
            [[unlikely]]
            v = variant_for(odd_real, d, stream);
    }
    StreamWorkspace::Lease lease = workspace->acquire(v->bytes, stream);
    // A captured execution keeps the variant (cuFFT's plan and tables, callback kernels) for as
    // long as the graph exists: the FFT, or the cache entry of a stateless call, may go first.
    const CaptureTarget t = v->bytes > 0 ? CaptureTarget{lease.graph, lease.capture} : capture_target(stream);
    if (t.graph != nullptr) [[unlikely]]
        hold_for_graph(t.graph, t.capture, v->shared_from_this());
    run_variant(*v, in.data(), out.data(), d, stream, lease.data);
}

}  // namespace detail

FFT::FFT(const TensorLayout& input, const FFTOptions& options) : impl_(std::make_unique<detail::FFTImpl>()) {
    impl_->p = detail::make_fft_problem(input, nullptr, options, FFTKind::automatic, impl_->api);
    impl_->options = options;
}

FFT::FFT(const TensorLayout& input, const TensorLayout& output, const FFTOptions& options)
    : impl_(std::make_unique<detail::FFTImpl>()) {
    impl_->p = detail::make_fft_problem(input, &output, options, FFTKind::automatic, impl_->api);
    impl_->options = options;
}

FFT::FFT(std::unique_ptr<detail::FFTImpl> impl) noexcept : impl_(std::move(impl)) {}

namespace detail {
FFT FFTAccess::make(const FftProblem& problem, const FFTOptions& options, const char* api) {
    auto impl = std::make_unique<FFTImpl>();
    impl->api = api;
    impl->p = problem;
    impl->options = options;
    return FFT(std::move(impl));
}

void FFTAccess::plan(FFT& plan, int device) { plan.impl_->plan(device); }

const FftProblem& FFTAccess::problem(const FFT& plan) noexcept { return plan.impl_->p; }

void FFTAccess::enqueue(FFT& plan, const TensorView& in, const TensorView& out, Direction direction,
                        core::StreamRef stream, int device) {
    plan.impl_->enqueue(in, out, direction, stream, device);
}
}  // namespace detail

FFT::~FFT() = default;
FFT::FFT(FFT&&) noexcept = default;
FFT& FFT::operator=(FFT&&) noexcept = default;

detail::FFTImpl& FFT::impl(const char* api) const {
    if (!impl_) [[unlikely]]
        detail::throw_moved_from("FFT", api);
    return *impl_;
}

void FFT::plan() {
    detail::FFTImpl& m = impl("gpumath::FFT::plan");
    if (m.planned.load(std::memory_order_acquire)) return;
    m.plan(m.p.empty ? -1 : detail::current_device());
}

bool FFT::planned() const noexcept { return impl_ && impl_->planned.load(std::memory_order_acquire); }

void FFT::execute(const TensorView& in, const TensorView& out, Direction direction, core::StreamRef stream) {
    impl("gpumath::FFT::execute").execute(in, out, direction, stream);
}

Tensor FFT::execute(const TensorView& in, Direction direction, core::StreamRef stream) {
    detail::FFTImpl& m = impl("gpumath::FFT::execute");
    const detail::FftProblem& p = m.p;
    if (p.inplace) detail::throw_invalid("out: this plan is in-place; call execute(x, x, direction, stream)", m.api);
    if (!p.out_layout.is_contiguous())
        detail::throw_invalid(fmt::format("out: the plan writes the strided layout {}; pass an output view to "
                                          "execute(in, out, direction, stream)",
                                          gpumath::to_string(p.out_layout)),
                              m.api);
    detail::check_fft_operands(p, in, nullptr, direction, m.api);  // before allocating
    detail::reject_capture(stream, m.api,
                           "gpumath allocates no results during a capture: pass out (execute(in, out, direction, "
                           "stream))");
    Tensor out = Tensor::empty(p.out_layout, stream, m.options.memory_resource);
    m.enqueue(in, out.view(), direction, stream);
    return out;
}

namespace {
// What a moved-from FFT reports.
const TensorLayout& empty_layout() noexcept {
    static const TensorLayout layout;
    return layout;
}
const FFTOptions& default_options() noexcept {
    static const FFTOptions options;
    return options;
}
}  // namespace

const TensorLayout& FFT::input_layout() const noexcept { return impl_ ? impl_->p.in_layout : empty_layout(); }
const TensorLayout& FFT::output_layout() const noexcept { return impl_ ? impl_->p.out_layout : empty_layout(); }
FFTKind FFT::kind() const noexcept { return impl_ ? impl_->p.kind : FFTKind::automatic; }
const FFTOptions& FFT::options() const noexcept { return impl_ ? impl_->options : default_options(); }
// planned() is false for a moved-from FFT, so the accessors below never reach a null impl_.
CallbackMode FFT::callback_mode() const noexcept { return planned() ? impl_->mode : CallbackMode::automatic; }

std::size_t FFT::workspace_size() const noexcept {
    // owned[] may grow meanwhile (the first execution in the other direction of a fused plan).
    return planned() ? impl_->aligned_workspace.load(std::memory_order_relaxed) : 0;
}

bool FFT::copies() const noexcept {
    if (!planned()) return false;
    const auto& run = impl_->run[detail::aligned];
    const detail::FftVariant* v = run[0].load() ? run[0].load() : run[1].load();
    return v != nullptr && (v->g.in.temp || v->g.out.temp);
}

std::int64_t FFT::executions_per_transform() const noexcept {
    if (!planned()) return 0;
    const auto& run = impl_->run[detail::aligned];
    const detail::FftVariant* v = run[0].load() ? run[0].load() : run[1].load();
    return v != nullptr ? v->g.executions() : 0;
}

}  // namespace gpumath
