// SPDX-License-Identifier: Apache-2.0
// Private to src/fft (and its tests): the lookup behind the stateless fft/ifft/rfft/irfft, which
// validates a call in full only when its plan is not cached.
#pragma once

#include <memory>

#include <gpumath/core/stream.hpp>
#include <gpumath/fft/fft.hpp>
#include <gpumath/fft/options.hpp>
#include <gpumath/layout.hpp>

namespace gpumath::detail {

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
