// SPDX-License-Identifier: Apache-2.0
// One variant of an FFT: its geometry, fused callbacks, cuFFT plan, work area layout and passes
// (build), and one execution of it (run_variant).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/event.hpp>
#include "detail/status.hpp"
#include <gpumath/error.hpp>

#include "detail/log.hpp"
#include "fft/callback.hpp"
#include "fft/fft_impl.hpp"
#include "fft/pass.hpp"
#include "fft/plan.hpp"

namespace gpumath::detail {
namespace {

// Adds `bytes` rounded up to 256 to `offset`; NotSupported naming `what` when the sum does not fit.
void add_region(std::size_t& offset, std::size_t bytes, const char* what, const char* api) {
    std::size_t padded = 0, sum = 0;
    if (__builtin_add_overflow(bytes, std::size_t(255), &padded) ||
        __builtin_add_overflow(offset, padded / 256 * 256, &sum))
        throw_not_supported(fmt::format("workspace: {} ({} bytes) after {} bytes of work area does not fit in "
                                        "size_t",
                                        what, bytes, offset),
                            api);
    offset = sum;
}

// Bytes of `elements` temp elements of `element_bytes` each; NotSupported naming `what` on overflow.
std::size_t temp_bytes(std::int64_t elements, std::size_t element_bytes, const char* what, const char* api) {
    std::size_t bytes = 0;
    if (elements < 0 || __builtin_mul_overflow(std::size_t(elements), element_bytes, &bytes))
        throw_not_supported(fmt::format("workspace: {} of {} elements of {} bytes does not fit in size_t", what,
                                        elements, element_bytes),
                            api);
    return bytes;
}

}  // namespace

core::Kernel FFTImpl::pass_kernel(bool input, const FFTCallback* callback) {
    const DataType element = input ? in_element() : out_element();
    const bool complex = input ? p.in_complex : p.out_complex;
    if (callback == nullptr) return builtin_pass_kernel(element, half() && complex, device);
    return callback_pass_kernel(element, *callback, input ? FFTCallbackKind::load : FFTCallbackKind::store, device);
}

std::unique_ptr<FftVariant> FFTImpl::build(bool in_temp, bool out_temp, bool fused, Direction direction) {
    auto v = std::make_unique<FftVariant>();
    const double scale = fft_scale(p, direction);
    // The epilog sees normalized values. An epilog given as LTO-IR cannot have the scale baked in
    // front of it, so with a scale it runs in the scatter pass instead of inside cuFFT.
    if (fused && p.has_epilog && options.epilog.source.empty() && scale != 1.0) out_temp = true;
    // Separate callbacks run in the gather (prolog) and scatter (epilog) passes.
    if (!fused) {
        in_temp = in_temp || p.has_prolog;
        out_temp = out_temp || p.has_epilog;
    }
    v->g = make_fft_geometry(p, in_temp, out_temp, fused ? 1 : fft_max_loop_executions);
    const FftGeometry& g = v->g;
    if (fused) {
        v->fused.prolog = p.has_prolog && !g.in.temp;
        v->fused.epilog = p.has_epilog && !g.out.temp;
        v->fused.scale = !g.out.temp && scale != 1.0;  // into the user's epilog or a generated store
        if (v->fused.scale) v->fused.baked_scale = scale;
    }
    const std::vector<CufftCallback> callbacks =
        compile_cufft_callbacks(p, options, v->fused, arch, v->prolog_info, v->epilog_info);

    const auto t0 = std::chrono::steady_clock::now();
    CufftPlanResult made = make_cufft_plan(p, g, callbacks);
    if ((made.status == CUFFT_INVALID_VALUE || made.status == CUFFT_NOT_SUPPORTED ||
         made.status == CUFFT_NOT_IMPLEMENTED) &&
        (!g.in.temp || !g.out.temp) && !v->fuses()) {
        // cuFFT has layout rules beyond the advanced layout's arithmetic (e.g. for half precision);
        // contiguous temps always satisfy them. Not for a fused plan: through temps it would fuse
        // nothing; its refusal goes to the caller (automatic mode then runs separate passes).
        log(LogLevel::info, "fft: cuFFT refused {} (status {}); retrying through contiguous temps",
            fft_geometry_text(p, g), int(made.status));
        return build(true, true, fused, direction);
    }
    check_cufft(made.status, made.failed_api, [&] {
        return fmt::format("planning {}{}{}", fft_geometry_text(p, g), v->fuses() ? " with fused callbacks" : "",
                           made.tried.empty() ? std::string() : " (tried " + made.tried + ")");
    });
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    v->plan = std::move(made.plan);
    v->cufft_owns_work = made.cufft_owns_work;
    v->cufft_work = made.work;
    log(LogLevel::debug, "fft: planned {}{} in {:.1f} ms, work area {} bytes{}", fft_geometry_text(p, g),
        v->fuses() ? " with fused callbacks" : "", ms, made.work,
        v->cufft_owns_work ? " (cuFFT also allocated its own; gpumath binds its per-stream area)" : "");
    if (g.in.temp || g.out.temp || g.executions() > 1)
        log(LogLevel::info, "fft: {} input {} -> output {}: cuFFT cannot address this directly; {}{}{}",
            to_string(p.kind), gpumath::to_string(p.in_layout), gpumath::to_string(p.out_layout),
            g.in.temp ? "the input is gathered into a contiguous temp; " : "",
            g.out.temp ? "the output is scattered from a contiguous temp; " : "",
            g.executions() > 1 ? fmt::format("{} cuFFT executions per transform", g.executions()) : "");
    layout_work_area(*v);
    make_passes(*v);
    return v;
}

void FFTImpl::layout_work_area(FftVariant& v) const {
    // Work area layout: cuFFT's, then the temps. cuFFT's region is never empty: with a temp at the
    // very address bound as the work area, cuFFT's execution fails (CUFFT_EXEC_FAILED).
    const FftGeometry& g = v.g;
    const std::size_t in_bytes = fft_element_bytes(p.precision, p.in_complex);
    const std::size_t out_bytes = fft_element_bytes(p.precision, p.out_complex);
    std::size_t offset = 0;
    add_region(offset, std::max<std::size_t>(v.cufft_work, 1), "cuFFT's work area", api);
    if (g.in.temp) {
        v.temp_in_offset = offset;
        add_region(offset, temp_bytes(g.in.temp_elements, in_bytes, "the input temp", api), "the input temp", api);
    }
    if (g.out.temp) {
        v.temp_out_offset = offset;
        add_region(offset, temp_bytes(g.out.temp_elements, out_bytes, "the output temp", api), "the output temp", api);
    }
    // Always a real work area to bind, also when cuFFT needs none.
    v.bytes = std::max<std::size_t>(offset, 256);
}

void FFTImpl::make_passes(FftVariant& v) {
    const FftGeometry& g = v.g;
    if (g.in.temp) {
        v.gather_pass = make_fft_pass(p.in, p.in.strides, g.in.strides);
        const bool user = p.has_prolog && !v.fused.prolog;
        v.gather = pass_kernel(true, user ? &options.prolog : nullptr);
    }
    if (g.out.temp) {
        v.scatter_pass = make_fft_pass(p.out, g.out.strides, p.out.strides);
        const bool user = p.has_epilog && !v.fused.epilog;
        v.scatter = pass_kernel(false, user ? &options.epilog : nullptr);
    } else if (!v.fused.scale && (fft_scale(p, Direction::forward) != 1.0 || fft_scale(p, Direction::inverse) != 1.0)) {
        v.scale_pass = make_fft_pass(p.out, p.out.strides, p.out.strides);
        v.scale = pass_kernel(false, nullptr);
    }
}

void FFTImpl::run_variant(FftVariant& v, const void* in, void* out, Direction d, core::StreamRef stream, void* work) {
    const FftGeometry& g = v.g;
    const double scale = v.fused.scale ? 1.0 : fft_scale(p, d);
    const bool single = p.precision != DataType::f64;
    // The transform is linear: with an input pass (gather, prolog) and no output pass, the scale
    // multiplies the gathered input instead of costing a separate pass over the output. Not for
    // f16/bf16, whose scaled inputs would lose precision.
    const bool scale_first = scale != 1.0 && g.in.temp && !g.out.temp && !half();
    auto* w = static_cast<char*>(work);
    const void* exec_in = in;
    void* exec_out = out;
    if (g.in.temp) {
        exec_in = w + v.temp_in_offset;
        launch_pass(v.gather, stream, in, w + v.temp_in_offset, v.gather_pass, scale_first ? scale : 1.0, single,
                    options.prolog.user_info);
    }
    if (g.out.temp) exec_out = w + v.temp_out_offset;
    {
        std::lock_guard lock(v.mutex);
        if (!v.bound || v.bound_stream != stream.handle()) {
            check_cufft(cufftSetStream(v.plan.handle(), stream.handle()), "cufftSetStream");
            v.bound_stream = stream.handle();
        }
        if (!v.bound || v.bound_work != work) {
            check_cufft(cufftSetWorkArea(v.plan.handle(), work), "cufftSetWorkArea");
            v.bound_work = work;
        }
        v.bound = true;
        const int direction = d == Direction::forward ? CUFFT_FORWARD : CUFFT_INVERSE;
        const auto in_bytes = std::int64_t(fft_element_bytes(p.precision, p.in_complex));
        const auto out_bytes = std::int64_t(fft_element_bytes(p.precision, p.out_complex));
        auto exec = [&](std::int64_t in_offset, std::int64_t out_offset) {
            auto* i = const_cast<char*>(static_cast<const char*>(exec_in)) + in_offset * in_bytes;
            auto* o = static_cast<char*>(exec_out) + out_offset * out_bytes;
            check_cufft(cufftXtExec(v.plan.handle(), i, o, direction), "cufftXtExec",
                        [&] { return fmt::format("executing {}", fft_geometry_text(p, g)); });
        };
        if (g.loop_rank == 0) {
            exec(0, 0);
        } else {
            std::array<std::int64_t, max_rank> idx{};
            const std::int64_t count = g.executions();
            for (std::int64_t e = 0; e < count; ++e) {
                std::int64_t io = 0, oo = 0;
                for (int k = 0; k < g.loop_rank; ++k) {
                    io += idx[std::size_t(k)] * g.loop_in_stride[std::size_t(k)];
                    oo += idx[std::size_t(k)] * g.loop_out_stride[std::size_t(k)];
                }
                exec(io, oo);
                for (int k = g.loop_rank - 1; k >= 0; --k) {
                    if (++idx[std::size_t(k)] < g.loop_extent[std::size_t(k)]) break;
                    idx[std::size_t(k)] = 0;
                }
            }
        }
    }
    if (g.out.temp)
        launch_pass(v.scatter, stream, exec_out, out, v.scatter_pass, scale, single, options.epilog.user_info);
    else if (scale != 1.0 && !scale_first) launch_pass(v.scale, stream, out, out, v.scale_pass, scale, single, nullptr);
}

double FFTImpl::measure(FftVariant& v, const void* in, void* out, core::StreamRef stream, void* work) {
    const Direction d = primary();
    core::Event start(core::EventOptions{.timing = true});
    core::Event stop(core::EventOptions{.timing = true});
    run_variant(v, in, out, d, stream, work);  // warm-up
    constexpr int runs = 5;
    start.record(stream);
    for (int i = 0; i < runs; ++i) run_variant(v, in, out, d, stream, work);
    stop.record(stream);
    stop.synchronize();
    return double(core::Event::elapsed_ms(start, stop)) / runs;
}

}  // namespace gpumath::detail
