// SPDX-License-Identifier: Apache-2.0
// Private to src/fft, src/dist and their tests: the one implementation of the FFT plan caches
// (FftPlanStore, behind fft_plan_cache() and dist::fft_plan_cache()), and the lookup behind the
// stateless fft/ifft/rfft/irfft, which validates a call in full only when its plan is not cached.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>

#include <gpumath/core/cache.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/fft/fft.hpp>
#include <gpumath/fft/options.hpp>
#include <gpumath/layout.hpp>

#include "core/hash.hpp"
#include "detail/lru_cache.hpp"

namespace gpumath::detail {

/// A layout in a plan cache's key: zero beyond its rank.
struct FftLayoutKey {
    std::int64_t shape[max_rank];
    std::int64_t strides[max_rank];
    std::int32_t rank;
    std::int32_t dtype;
};

/// Sets `k` (zero-filled with the key it belongs to) to `l`.
inline void fill_layout_key(FftLayoutKey& k, const TensorLayout& l) noexcept {
    k.rank = l.rank();
    k.dtype = static_cast<std::int32_t>(l.dtype());
    for (int i = 0; i < l.rank(); ++i) {
        k.shape[i] = l.shape(i);
        k.strides[i] = l.stride(i);
    }
}

/// The one implementation of gpumath's FFT plan caches: that of fft/ifft/rfft/irfft (gpumath::FFT
/// plans) and that of dist::fft/ifft/rfft/irfft (dist::FFT plans). A process-wide LRU of shared
/// plans (detail::LruCache: created outside its lock, single-flight) under a flat `Key` that holds
/// every input of the request's validation, so a key that was valid once is valid whenever it comes
/// back, and the core::CacheControl that the public class (detail::PlanCacheControl) forwards
/// to. Keys are zero-filled before they are set and have no padding, so they are hashed and
/// compared as bytes: a hit allocates nothing and builds no string. Each cache makes its store
/// once and never destroys it: destroying cuFFT plans during exit, after the CUDA runtime may have
/// shut down, is unsafe.
/// Hashes and compares a flat key as its bytes.
template <class Key>
struct BytesHash {
    std::size_t operator()(const Key& k) const noexcept { return std::size_t(checksum64(&k, sizeof k)); }
};
template <class Key>
struct BytesEqual {
    bool operator()(const Key& a, const Key& b) const noexcept { return std::memcmp(&a, &b, sizeof(Key)) == 0; }
};

template <class Key, class Plan>
class FftPlanStore final : public ControlledLruCache<Key, Plan, BytesHash<Key>, BytesEqual<Key>> {
    static_assert(std::has_unique_object_representations_v<Key> && std::is_trivially_copyable_v<Key>,
                  "keys are hashed and compared as their bytes: zero-filled, without padding");

public:
    explicit FftPlanStore(std::size_t capacity)
        : ControlledLruCache<Key, Plan, BytesHash<Key>, BytesEqual<Key>>(capacity) {}
};

/// One stateless call: the kind and direction its function computes, its operands (`out` null for
/// the allocating form), options, stream and the name its messages start with.
struct FftCall {
    FFTKind kind = FFTKind::c2c;
    Direction direction = Direction::forward;
    const TensorView* in = nullptr;
    const TensorView* out = nullptr;
    const FFTOptions* options = nullptr;
    core::StreamRef stream{};
    const char* api = "";
};

/// The cached plan of `call` on `device`, the current device. The key (device, layouts, kind,
/// options) fixes everything make_fft_problem decides, so a miss validates the call in full
/// (make_fft_problem, check_fft_operands) before anything is planned or cached, and refuses a
/// capturing stream (planning cannot be captured, nor can the allocating form allocate); a hit
/// checks only what the key does not fix: the operands' pointers (alignment, overlap) and, for the
/// allocating form, the capture. So an invalid call is never cached, and a hit rejects what a miss
/// rejects, with the same typed exception, before any GPU work.
[[nodiscard]] std::shared_ptr<FFT> cached_fft_plan(const FftCall& call, int device);

/// Caches `plan` under the key of `call` on `device` without validating anything: lets tests reach
/// the hit path on machines without a GPU.
void put_cached_fft_plan(const FftCall& call, int device, std::shared_ptr<FFT> plan);

}  // namespace gpumath::detail
