// SPDX-License-Identifier: Apache-2.0
// The cached dist::fft/ifft/rfft/irfft on host data: a process-wide LRU cache of dist::FFT plans.
#include <gpumath/dist/fft.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "detail/lru_cache.hpp"
#include "dist/fft_state.hpp"

namespace gpumath::dist {
namespace detail {
namespace {

struct CacheKey {
    std::vector<int> devices;
    std::array<std::int64_t, max_rank> shape{};
    std::array<std::int64_t, max_rank> strides{};
    std::int64_t last_axis_size = 0;
    int rank = 0;
    int dtype = 0;
    std::uint8_t forced = 0;
    std::uint8_t kind = 0;
    std::uint8_t normalization = 0;
    friend bool operator==(const CacheKey&, const CacheKey&) = default;
};

struct CacheKeyHash {
    std::size_t operator()(const CacheKey& k) const noexcept {
        std::size_t h = 0x9e3779b97f4a7c15ULL;
        for (const int d : k.devices) gpumath::detail::hash_combine(h, std::size_t(d));
        for (int i = 0; i < k.rank && i < max_rank; ++i) {
            gpumath::detail::hash_combine(h, std::size_t(k.shape[std::size_t(i)]));
            gpumath::detail::hash_combine(h, std::size_t(k.strides[std::size_t(i)]));
        }
        gpumath::detail::hash_combine(h, std::size_t(k.last_axis_size));
        gpumath::detail::hash_combine(h, std::size_t(k.rank) << 8 | std::size_t(k.dtype));
        gpumath::detail::hash_combine(
            h, std::size_t(k.forced) | std::size_t(k.kind) << 8 | std::size_t(k.normalization) << 16);
        return h;
    }
};

using PlanCache = gpumath::detail::LruCache<CacheKey, FFT, CacheKeyHash>;

// Never destroyed: cuFFT plans are not destroyed during exit, after the runtime may have shut down.
PlanCache& plan_cache() {
    static auto* cache = new PlanCache(FFTPlanCache::default_capacity);
    return *cache;
}

CacheKey make_key(const TensorLayout& in, const FFTOptions& o, FFTKind forced) {
    CacheKey k;
    k.devices = o.devices;
    k.rank = in.rank();
    for (int i = 0; i < in.rank(); ++i) {
        k.shape[std::size_t(i)] = in.shape(i);
        k.strides[std::size_t(i)] = in.stride(i);
    }
    k.dtype = int(in.dtype());
    k.last_axis_size = o.last_axis_size;
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
    // A miss validates the whole request (make_fft_problem) before anything is planned or cached; a
    // hit's key equals a request that was valid, so only the views and their pointers are new.
    const std::shared_ptr<FFT> plan = plan_cache().get_or_create(make_key(in.layout(), options, forced), [&] {
        auto made = std::make_shared<FFT>(FFTAccess::make(in.layout(), options, forced, api));
        return made;
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

std::size_t FFTPlanCache::capacity() const { return detail::plan_cache().capacity(); }
void FFTPlanCache::set_capacity(std::size_t plans) { detail::plan_cache().set_capacity(plans); }
void FFTPlanCache::clear() { detail::plan_cache().clear(); }
core::CacheStats FFTPlanCache::stats() const { return detail::plan_cache().stats(); }
void FFTPlanCache::reset_stats() { detail::plan_cache().reset_stats(); }

FFTPlanCache& fft_plan_cache() {
    static FFTPlanCache cache;
    return cache;
}

}  // namespace gpumath::dist
