// SPDX-License-Identifier: Apache-2.0
// Private to src/linalg: Backend::automatic, the backend measured fastest for an (operation, n,
// batch, dtype, device), measured once per process and kept.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include <gpumath/core/stream.hpp>
#include <gpumath/linalg/options.hpp>
#include <gpumath/types.hpp>

namespace gpumath::detail {

/// What a measurement is kept under.
struct ChoiceKey {
    std::string operation;  // "cholesky", "eigh" or "eigh values"
    DataType dtype = DataType::f32;
    std::int64_t n = 0;
    std::int64_t count = 0;
    int device = 0;
};

/// The backend of `candidates` that `run(backend, stream)` runs fastest on `device` (current): one
/// warm-up each, then five rounds timing one run of each in turn on a private stream (the median
/// counts); kept for the process under `key` and logged at info level. `prepare(stream)` makes the
/// scratch operands `run` uses before the first run, allocated in order on that private stream, and
/// `release()` frees them while the stream still exists (memory freed in stream order needs its
/// stream). Blocks; runs in relaxed capture mode, so a caller's capture on another stream is left
/// alone.
[[nodiscard]] linalg::Backend measured_backend(const ChoiceKey& key, std::span<const linalg::Backend> candidates,
                                               const std::function<void(core::StreamRef)>& prepare,
                                               const std::function<void(linalg::Backend, core::StreamRef)>& run,
                                               const std::function<void()>& release);

/// The choice kept for `key`, if one was measured.
[[nodiscard]] bool find_choice(const ChoiceKey& key, linalg::Backend& backend);

}  // namespace gpumath::detail
