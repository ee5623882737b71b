// SPDX-License-Identifier: Apache-2.0
// Measuring the backends of a batch (linalg/choice.hpp).
#include "linalg/choice.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <system_error>
#include <string_view>
#include <array>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/core/event.hpp>
#include <gpumath/error.hpp>
#include <gpumath/linalg/functions.hpp>
#include "core/jit.hpp"
#include "detail/capture_mode.hpp"
#include "detail/log.hpp"
#include "detail/status.hpp"
#include "detail/text.hpp"

namespace gpumath::detail {
namespace {

using Key = std::tuple<std::string, int, std::int64_t, std::int64_t, std::string>;

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

constexpr std::string_view choices_header = "# gpumath linalg backend choices 1";

bool parse_count(std::string_view text, std::int64_t& out) {
    if (text.empty() || text.size() > 18) return false;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && end == text.data() + text.size() && out >= 0;
}

}  // namespace

std::string device_model(int device) {
    std::string name = core::Device(device).properties().name;
    std::replace(name.begin(), name.end(), ' ', '_');
    std::replace(name.begin(), name.end(), '\t', '_');
    return name;
}

std::string choices_text() {
    Choices& c = choices();
    std::lock_guard lock(c.mutex);
    std::string text = std::string(choices_header) + "\n";
    for (const auto& [k, backend] : c.kept) {
        const auto& [operation, dtype, n, count, device] = k;
        text += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\n", device, operation, to_string(DataType(dtype)), n, count,
                            to_string(backend));
    }
    return text;
}

std::size_t add_choices(std::string_view text, const char* api) {
    std::vector<std::pair<Key, linalg::Backend>> parsed;
    std::size_t line_number = 0;
    while (!text.empty()) {
        const std::size_t end = std::min(text.find('\n'), text.size());
        const std::string_view line = text.substr(0, end);
        text.remove_prefix(std::min(end + 1, text.size()));
        ++line_number;
        if (line_number == 1) {
            if (line != choices_header)
                throw_invalid(fmt::format("line 1: \"{}\" is not the header save_backend_choices writes (\"{}\")",
                                          line.substr(0, 80), choices_header),
                              api);
            continue;
        }
        if (line.empty()) continue;
        const auto f = split_tabs(line);
        const auto bad = [&](const char* what) {
            throw_invalid(fmt::format("line {}: {}; each line is device, operation, dtype, n, batch and backend, "
                                      "tab-separated, as save_backend_choices writes them",
                                      line_number, what),
                          api);
        };
        if (f.size() != 6) bad("not six fields");
        if (f[0].empty()) bad("no device");
        // SVD keys carry the row count in the operation ("svd thin m=100"); n is the column count.
        if (f[1] != "cholesky" && f[1] != "eigh" && f[1] != "eigh values" && f[1] != "lu" && !f[1].starts_with("svd "))
            bad("an unknown operation");
        int dtype = -1;
        for (const DataType t : {DataType::f32, DataType::f64, DataType::c32, DataType::c64})
            if (f[2] == to_string(t)) dtype = int(t);
        if (dtype < 0) bad("a dtype other than f32, f64, c32 and c64");
        std::int64_t n = 0, count = 0;
        if (!parse_count(f[3], n) || !parse_count(f[4], count)) bad("n or batch is not a count");
        linalg::Backend backend = linalg::Backend::automatic;
        for (int b = 1; b < linalg::backend_count; ++b)
            if (f[5] == to_string(linalg::Backend(b))) backend = linalg::Backend(b);
        if (backend == linalg::Backend::automatic)
            bad("a backend other than looped, batched, jacobi and approximate (cuSOLVER's), warp (gpumath's) and "
                "jacobi_batched (cuSOLVER's syevjBatched)");
        parsed.emplace_back(Key{std::string(f[1]), dtype, n, count, std::string(f[0])}, backend);
    }
    if (line_number == 0) throw_invalid("the file is empty; it has no header", api);
    Choices& c = choices();
    std::lock_guard lock(c.mutex);
    for (auto& [k, b] : parsed) c.kept[k] = b;
    return parsed.size();
}

void clear_choices() {
    Choices& c = choices();
    std::lock_guard lock(c.mutex);
    c.kept.clear();
}

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
    const auto candidate = [&](linalg::Backend b) {
        return std::find(candidates.begin(), candidates.end(), b) != candidates.end();
    };
    linalg::Backend chosen = candidates.front();
    if (find_choice(key, chosen)) {
        // A loaded file may name a backend this plan cannot run here (warp above n = 32, another
        // plan's backend): only a candidate is taken; anything else is measured again and replaced.
        if (candidate(chosen)) return chosen;
        log(LogLevel::warn,
            "linalg {} {} n={} batch={} on {}: the saved backend {} is not one this plan can run; "
            "measuring again",
            key.operation, to_string(key.dtype), key.n, key.count, key.device, to_string(chosen));
    }
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
    log(LogLevel::info, "linalg {} {} n={} batch={} on {}: {} -> {}", key.operation, to_string(key.dtype), key.n,
        key.count, key.device, report, to_string(chosen));
    Choices& c = choices();
    std::lock_guard lock(c.mutex);
    // The first measurement of a key wins (plans made at once agree), unless what is kept is not a
    // candidate (a loaded choice refused above).
    const auto [it, inserted] = c.kept.emplace(key_of(key), chosen);
    if (!inserted && !candidate(it->second)) it->second = chosen;
    return it->second;
}

}  // namespace gpumath::detail

namespace gpumath::linalg {

namespace {
constexpr std::uint64_t max_choices_bytes = std::uint64_t(16) << 20;
}  // namespace

void save_backend_choices(const std::string& path) {
    const char* api = "linalg::save_backend_choices";
    const std::string text = detail::choices_text();
    // What is there is only looked at, not read: the new text replaces it whole.
    std::error_code ec;
    const std::filesystem::file_status st = std::filesystem::status(path, ec);
    if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
        detail::throw_invalid(fmt::format("path: {} is not a regular file; pass a file's path", path), api);
    int error = 0;
    std::string reason;
    if (!detail::replace_regular_file(path, text, error, reason))
        throw Error(fmt::format("{}: cannot write {}: {}", api, path, reason), error, api);
}

std::size_t load_backend_choices(const std::string& path) {
    const char* api = "linalg::load_backend_choices";
    std::string text;
    switch (detail::read_regular_file(path, text, true, max_choices_bytes)) {
        case detail::FileStatus::ok:
            return detail::add_choices(text, api);
        case detail::FileStatus::missing:
            return 0;
        case detail::FileStatus::not_regular:
            detail::throw_invalid(
                fmt::format("path: {} is not a regular file; pass a file save_backend_choices wrote", path), api);
        case detail::FileStatus::unreadable:
            detail::throw_invalid(fmt::format("path: cannot read {}", path), api);
        case detail::FileStatus::too_large:
            break;
    }
    detail::throw_invalid(
        fmt::format("path: {} holds more than the {} MiB a choices file may hold", path, max_choices_bytes >> 20), api);
}

}  // namespace gpumath::linalg
