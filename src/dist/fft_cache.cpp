// SPDX-License-Identifier: Apache-2.0
// The cached dist::fft/ifft/rfft/irfft on host data: dist::FFT plans in the FFT module's plan cache
// (FftPlanStore) under a key of their own.
#include <gpumath/dist/fft.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "dist/fft_state.hpp"
#include "fft/plan_cache.hpp"

namespace gpumath::dist {
namespace detail {
namespace {

// Every input of make_fft_problem: the devices in order, the input layout, the function's kind and
// the options.
struct CacheKey {
    gpumath::detail::FftLayoutKey in;
    std::int64_t last_axis_size;
    std::int32_t devices[max_devices];
    std::uint8_t device_count;
    std::uint8_t forced;
    std::uint8_t kind;
    std::uint8_t normalization;
    std::uint8_t reserved[4];
};

using PlanCache = gpumath::detail::FftPlanStore<CacheKey, FFT>;

PlanCache& plan_cache() {
    static auto* cache = new PlanCache(FFTPlanCache::default_capacity);  // never destroyed (see FftPlanStore)
    return *cache;
}

CacheKey make_key(const TensorLayout& in, const FFTOptions& o, FFTKind forced) noexcept {
    CacheKey k{};  // every member zero; the key has no padding (FftPlanStore checks)
    gpumath::detail::fill_layout_key(k.in, in);
    k.last_axis_size = o.last_axis_size;
    const std::size_t count = std::min(o.devices.size(), std::size_t(max_devices));  // run() refuses longer lists
    k.device_count = std::uint8_t(count);
    std::copy_n(o.devices.begin(), count, k.devices);
    k.forced = std::uint8_t(forced);
    k.kind = std::uint8_t(o.kind);
    k.normalization = std::uint8_t(o.normalization);
    return k;
}

void run(FFTKind forced, Direction direction, const TensorView& in, const TensorView& out, const FFTOptions& given,
         const char* api) {
    // As the one-GPU irfft: without last_axis_size, the output length comes from out's shape.
    FFTOptions options = given;
    if (forced == FFTKind::c2r && options.last_axis_size == 0 && out.rank() == in.rank() && out.rank() > 0)
        options.last_axis_size = out.shape(-1);
    // A list longer than any key holds is refused by its length before any lookup.
    if (options.devices.size() > std::size_t(max_devices)) (void)make_fft_problem(in.layout(), options, forced, api);
    // A miss validates the whole request (make_fft_problem) before anything is planned or cached; a
    // hit's key equals a request that was valid, so only the views and their pointers are new.
    const std::shared_ptr<FFT> plan = plan_cache().get_or_create(make_key(in.layout(), options, forced), [&] {
        return std::make_shared<FFT>(FFTAccess::make(in.layout(), options, forced, api));
    });
    FFTAccess::execute_host(*plan, in, out, direction, api);
}

}  // namespace
}  // namespace detail

void fft(const TensorView& in, const TensorView& out, const FFTOptions& options) {
    detail::run(FFTKind::c2c, Direction::forward, in, out, options, "gpumath::dist::fft");
}
void ifft(const TensorView& in, const TensorView& out, const FFTOptions& options) {
    detail::run(FFTKind::c2c, Direction::inverse, in, out, options, "gpumath::dist::ifft");
}
void rfft(const TensorView& in, const TensorView& out, const FFTOptions& options) {
    detail::run(FFTKind::r2c, Direction::forward, in, out, options, "gpumath::dist::rfft");
}
void irfft(const TensorView& in, const TensorView& out, const FFTOptions& options) {
    detail::run(FFTKind::c2r, Direction::inverse, in, out, options, "gpumath::dist::irfft");
}

FFTPlanCache::FFTPlanCache() : PlanCacheControl(gpumath::dist::detail::plan_cache()) {}

FFTPlanCache& fft_plan_cache() {
    static FFTPlanCache cache;
    return cache;
}

}  // namespace gpumath::dist
