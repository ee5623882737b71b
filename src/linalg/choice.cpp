// SPDX-License-Identifier: Apache-2.0
// Measuring the backends of a batch (linalg/choice.hpp).
#include "linalg/choice.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/core/event.hpp>
#include "detail/capture_mode.hpp"
#include "detail/log.hpp"

namespace gpumath::detail {
namespace {

using Key = std::tuple<std::string, int, std::int64_t, std::int64_t, int>;

struct Choices {
    std::mutex mutex;
    std::map<Key, linalg::Backend> kept;
};

Choices& choices() {
    static auto* c = new Choices();  // never destroyed, like every per-process state
    return *c;
}

Key key_of(const ChoiceKey& k) { return {k.operation, int(k.dtype), k.n, k.count, k.device}; }

constexpr int rounds = 5;

}  // namespace

bool find_choice(const ChoiceKey& key, linalg::Backend& backend) {
    Choices& c = choices();
    std::lock_guard lock(c.mutex);
    const auto it = c.kept.find(key_of(key));
    if (it == c.kept.end()) return false;
    backend = it->second;
    return true;
}

linalg::Backend measured_backend(const ChoiceKey& key, std::span<const linalg::Backend> candidates,
                                 const std::function<void(core::StreamRef)>& prepare,
                                 const std::function<void(linalg::Backend, core::StreamRef)>& run,
                                 const std::function<void()>& release) {
    linalg::Backend chosen = candidates.front();
    if (find_choice(key, chosen)) return chosen;
    const RelaxedCaptureMode relaxed("measuring linalg backends");
    const core::Stream stream;
    std::vector<std::array<float, rounds>> times(candidates.size());
    try {
        prepare(stream);
        for (const linalg::Backend b : candidates) run(b, stream);  // warm-up: handles, modules, workspace
        const core::Event start({.timing = true}), stop({.timing = true});
        for (int r = 0; r < rounds; ++r)
            for (std::size_t c = 0; c < candidates.size(); ++c) {
                stream.record(start);
                run(candidates[c], stream);
                stream.record(stop);
                stop.synchronize();
                times[c][std::size_t(r)] = core::Event::elapsed_ms(start, stop);
            }
    } catch (...) {
        release();
        throw;
    }
    release();
    std::string report;
    float best = 0.0F;
    for (std::size_t c = 0; c < candidates.size(); ++c) {
        std::array<float, rounds> t = times[c];
        std::nth_element(t.begin(), t.begin() + rounds / 2, t.end());
        const float median = t[rounds / 2];
        report += fmt::format("{}{} {:.3f} ms", c == 0 ? "" : ", ", to_string(candidates[c]), median);
        if (c == 0 || median < best) {
            best = median;
            chosen = candidates[c];
        }
    }
    log(LogLevel::info, "linalg {} {} n={} batch={} on device {}: {} -> {}", key.operation, to_string(key.dtype), key.n,
        key.count, key.device, report, to_string(chosen));
    Choices& c = choices();
    std::lock_guard lock(c.mutex);
    return c.kept.emplace(key_of(key), chosen).first->second;
}

}  // namespace gpumath::detail
