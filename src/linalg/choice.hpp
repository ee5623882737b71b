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

/// What a measurement is kept under: the device by its name, so that a saved choice serves every
/// card of that model.
struct ChoiceKey {
    std::string operation;  // "cholesky", "lu", "eigh", "eigh values" or "svd <job> m=<rows>"
    DataType dtype = DataType::f32;
    std::int64_t n = 0;
    std::int64_t count = 0;
    std::string device;  // device_model(ordinal)
};

/// The name a device's choices are kept under: its model name with spaces as underscores.
[[nodiscard]] std::string device_model(int device);

/// The choices as the file `linalg::save_backend_choices` writes (a header line, then one
/// tab-separated line per choice), and the number of choices `text` adds (InvalidArgument naming
/// the line for anything else, the header included).
[[nodiscard]] std::string choices_text();
std::size_t add_choices(std::string_view text, const char* api);

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

/// Forgets every choice kept in this process (tests and fuzzing start from none).
void clear_choices();

/// The choice kept for `key`, if one was measured.
[[nodiscard]] bool find_choice(const ChoiceKey& key, linalg::Backend& backend);

}  // namespace gpumath::detail
