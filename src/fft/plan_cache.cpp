// SPDX-License-Identifier: Apache-2.0
// fft/ifft/rfft/irfft over a process-wide LRU cache of FFT plans: the key, validation on a miss,
// the pointer checks of a hit, the current device read once per call.
#include <gpumath/fft/plan_cache.hpp>

#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "core/hash.hpp"
#include "detail/log.hpp"
#include "detail/status.hpp"
#include <gpumath/fft/fft.hpp>

#include "fft/fft_impl.hpp"
#include "fft/plan_cache.hpp"

namespace gpumath {
namespace detail {
namespace {

// The key of a stateless call. It holds every input of make_fft_problem (layouts, the function's
// kind and every option it reads, callbacks by form and content), so a request that was valid once
// is valid whenever its key comes back.
struct FftCacheKey {
    FftLayoutKey in;
    FftLayoutKey out;
    std::int64_t last_axis_size;
    std::uint64_t prolog_id;
    std::uint64_t epilog_id;
    const void* prolog_info;
    const void* epilog_info;
    const void* resource;
    std::int32_t axes[max_rank];
    std::int32_t device;
    std::uint8_t kind;
    std::uint8_t normalization;
    std::uint8_t inplace;
    std::uint8_t overwrite_input;
    std::uint8_t callback_mode;
    std::uint8_t naxes;
    std::uint8_t has_out;
    std::uint8_t options_kind;
    std::uint8_t prolog_form;
    std::uint8_t epilog_form;
    std::uint8_t reserved[2];
};

std::uint64_t callback_id(const FFTCallback& cb) noexcept {
    if (cb.empty()) return 0;
    // Validation refuses a callback with both source and code, so one of them identifies it.
    if (!cb.code.empty()) {
        // The cached plan keeps the code alive, so its address cannot be reused while cached.
        const auto addr = reinterpret_cast<std::uintptr_t>(cb.code.shared_data().get());
        return checksum64(&addr, sizeof addr) ^ checksum64(cb.symbol.data(), cb.symbol.size()) ^ 1;
    }
    return checksum64(cb.source.data(), cb.source.size()) * 31 + checksum64(cb.symbol.data(), cb.symbol.size());
}

bool same_callback(const FFTCallback& a, const FFTCallback& b) noexcept {
    return a.source == b.source && a.symbol == b.symbol && a.code.shared_data() == b.code.shared_data();
}

bool same_callbacks(const FFTOptions& a, const FFTOptions& b) noexcept {
    return same_callback(a.prolog, b.prolog) && same_callback(a.epilog, b.epilog);
}

// Which of source, code and symbol a callback has: what decides whether it is well formed.
std::uint8_t callback_form(const FFTCallback& cb) noexcept {
    return std::uint8_t((cb.source.empty() ? 0 : 1) | (cb.code.empty() ? 0 : 2) | (cb.symbol.empty() ? 0 : 4));
}

using PlanCache = FftPlanStore<FftCacheKey, FFT>;

PlanCache& plan_cache() {
    static auto* cache = new PlanCache(FFTPlanCache::default_capacity);  // never destroyed (see FftPlanStore)
    return *cache;
}

FftCacheKey make_key(int device, const FftCall& call) noexcept {
    const FFTOptions& o = *call.options;
    FftCacheKey k{};  // every member zero; the key has no padding (above)
    fill_layout_key(k.in, call.in->layout());
    if (call.out != nullptr) {
        fill_layout_key(k.out, call.out->layout());
        k.has_out = 1;
    }
    k.last_axis_size = o.last_axis_size;
    k.prolog_id = callback_id(o.prolog);
    k.epilog_id = callback_id(o.epilog);
    k.prolog_info = o.prolog.user_info;
    k.epilog_info = o.epilog.user_info;
    k.resource = o.memory_resource.get();
    k.naxes = static_cast<std::uint8_t>(o.axes.size());
    for (int i = 0; i < o.axes.size(); ++i) k.axes[i] = o.axes[i];
    k.device = device;
    k.kind = static_cast<std::uint8_t>(call.kind);
    k.options_kind = static_cast<std::uint8_t>(o.kind);
    k.prolog_form = callback_form(o.prolog);
    k.epilog_form = callback_form(o.epilog);
    k.normalization = static_cast<std::uint8_t>(o.normalization);
    k.inplace = o.inplace ? 1 : 0;
    k.overwrite_input = o.overwrite_input ? 1 : 0;
    k.callback_mode = static_cast<std::uint8_t>(o.callback_mode);
    return k;
}

// The whole call checked before any GPU work: its problem, then its operands.
FftProblem validate(const FftCall& c) {
    FftProblem problem =
        make_fft_problem(c.in->layout(), c.out != nullptr ? &c.out->layout() : nullptr, *c.options, c.kind, c.api);
    check_fft_operands(problem, *c.in, c.out, c.direction, c.api);
    return problem;
}

// The current device, read once per call. Without one, bad input is still reported as such first
// (InvalidArgument or NotSupported on any machine), then the CudaError.
int call_device(const FftCall& c) {
    int device = 0;
    if (const cudaError_t status = cudaGetDevice(&device); status != cudaSuccess) [[unlikely]] {
        (void)cudaGetLastError();
        (void)validate(c);
        throw_cuda(status, "cudaGetDevice", c.api);
    }
    return device;
}

constexpr std::string_view allocating_in_capture =
    "gpumath allocates no results during a capture: pass out (the form with an out view)";

void run(FFTKind kind, Direction direction, const TensorView& in, const TensorView& out, const FFTOptions& options,
         core::StreamRef stream, const char* api) {
    const FftCall call{kind, direction, &in, &out, &options, stream, api};
    const int device = call_device(call);
    FFTAccess::enqueue(*cached_fft_plan(call, device), in, out, direction, stream, device);
}

Tensor run(FFTKind kind, Direction direction, const TensorView& in, const FFTOptions& options, core::StreamRef stream,
           const char* api) {
    if (options.inplace) [[unlikely]]
        throw_invalid(fmt::format("options.inplace: the allocating form returns a new tensor; for an in-place "
                                  "transform call {}(x, x, options, stream)",
                                  api + std::strlen("gpumath::")),
                      api);
    const FftCall call{kind, direction, &in, nullptr, &options, stream, api};
    const int device = call_device(call);
    const std::shared_ptr<FFT> plan = cached_fft_plan(call, device);
    Tensor out = Tensor::empty(FFTAccess::problem(*plan).out_layout, stream, options.memory_resource);
    FFTAccess::enqueue(*plan, in, out.view(), direction, stream, device);
    return out;
}

}  // namespace

std::shared_ptr<FFT> cached_fft_plan(const FftCall& call, int device) {
    const FftCacheKey key = make_key(device, call);
    const bool allocating = call.out == nullptr;
    std::optional<FftProblem> problem;  // set when this call validated everything
    // A call that plans: validated in full first, and refused while its stream captures (planning
    // allocates and copies synchronously, in cuFFT) with `why`.
    const auto validate_to_plan = [&](std::string_view why) {
        problem = validate(call);
        if (allocating) reject_capture(call.stream, call.api, allocating_in_capture);
        reject_capture(call.stream, call.api, why);
    };
    const auto make_plan = [&] {
        auto made = std::make_shared<FFT>(FFTAccess::make(*problem, *call.options, call.api));
        FFTAccess::plan(*made, device);
        return made;
    };
    // A miss (neither cached nor being planned by another thread) is validated before anything is
    // planned or stored; a refusal there reaches this caller alone.
    std::shared_ptr<FFT> plan = plan_cache().get_or_create(key, make_plan, [&] {
        validate_to_plan(
            "this transform is not in the plan cache yet and planning cannot be captured: run the same "
            "call once before the capture");
    });
    if (!problem) {
        // A hit: the plan was made for a request with this key, so only the pointers are new, and
        // the callbacks, which the key holds as 64-bit digests: a plan of other callbacks whose
        // digests collide is not served (the call gets a plan of its own, not cached).
        if (!same_callbacks(plan->options(), *call.options)) [[unlikely]] {
            log(LogLevel::warn,
                "{}: a cached plan's callbacks have the same digest as this call's but other code; "
                "planning this call without the cache",
                call.api);
            validate_to_plan(
                "this transform's plan cannot be cached and planning cannot be captured: use an FFT object made "
                "before the capture");
            return make_plan();
        }
        check_fft_operands(FFTAccess::problem(*plan), *call.in, call.out, call.direction, call.api);
        if (allocating) reject_capture(call.stream, call.api, allocating_in_capture);
    }
    return plan;
}

void put_cached_fft_plan(const FftCall& call, int device, std::shared_ptr<FFT> plan) {
    const FftCacheKey key = make_key(device, call);
    plan_cache().put(key, std::move(plan));
}

}  // namespace detail

void fft(const TensorView& in, const TensorView& out, const FFTOptions& options, core::StreamRef stream) {
    detail::run(FFTKind::c2c, Direction::forward, in, out, options, stream, "gpumath::fft");
}
Tensor fft(const TensorView& in, const FFTOptions& options, core::StreamRef stream) {
    return detail::run(FFTKind::c2c, Direction::forward, in, options, stream, "gpumath::fft");
}
void ifft(const TensorView& in, const TensorView& out, const FFTOptions& options, core::StreamRef stream) {
    detail::run(FFTKind::c2c, Direction::inverse, in, out, options, stream, "gpumath::ifft");
}
Tensor ifft(const TensorView& in, const FFTOptions& options, core::StreamRef stream) {
    return detail::run(FFTKind::c2c, Direction::inverse, in, options, stream, "gpumath::ifft");
}
void rfft(const TensorView& in, const TensorView& out, const FFTOptions& options, core::StreamRef stream) {
    detail::run(FFTKind::r2c, Direction::forward, in, out, options, stream, "gpumath::rfft");
}
Tensor rfft(const TensorView& in, const FFTOptions& options, core::StreamRef stream) {
    return detail::run(FFTKind::r2c, Direction::forward, in, options, stream, "gpumath::rfft");
}
void irfft(const TensorView& in, const TensorView& out, const FFTOptions& options, core::StreamRef stream) {
    detail::run(FFTKind::c2r, Direction::inverse, in, out, options, stream, "gpumath::irfft");
}
Tensor irfft(const TensorView& in, const FFTOptions& options, core::StreamRef stream) {
    return detail::run(FFTKind::c2r, Direction::inverse, in, options, stream, "gpumath::irfft");
}

FFTPlanCache::FFTPlanCache() : PlanCacheControl(detail::plan_cache()) {}

FFTPlanCache& fft_plan_cache() {
    static FFTPlanCache cache;
    return cache;
}

}  // namespace gpumath
