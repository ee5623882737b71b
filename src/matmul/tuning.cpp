// SPDX-License-Identifier: Apache-2.0
// Autotuning (CUDA-event timing of every candidate on the caller's operands) and tuning files.
//
// A tuning file is text that gpumath owns: a header line, then one line per tuned problem with
// tab-separated fields: GPU name, compute capability, cuBLASLt version, plan key, the 64 bytes
// of cuBLASLt's algorithm in hex, its workspace and its measured time. Entries for another GPU or
// library version are stale and ignored; a matching entry is still checked by cuBLASLt
// (cublasLtMatmulAlgoCheck) before it is used.
#include "matmul/tuning.hpp"

#include "detail/text.hpp"

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "core/jit.hpp"
#include "detail/log.hpp"
#include "detail/status.hpp"
#include <gpumath/error.hpp>

namespace gpumath::detail {
namespace {

constexpr const char* file_header = "# gpumath matmul tuning v1";

class EventPool {
public:
    explicit EventPool(std::size_t n) : events_(n, nullptr) {
        for (auto& e : events_) check(cudaEventCreate(&e), "cudaEventCreate", "creating autotune timing events");
    }
    ~EventPool() {
        for (auto e : events_)
            if (e != nullptr) (void)cudaEventDestroy(e);
    }
    EventPool(const EventPool&) = delete;
    EventPool& operator=(const EventPool&) = delete;
    EventPool(EventPool&&) = delete;
    EventPool& operator=(EventPool&&) = delete;
    cudaEvent_t operator[](std::size_t i) const { return events_[i]; }

private:
    std::vector<cudaEvent_t> events_;
};

double median(std::vector<double> v) {
    if (v.empty()) return std::numeric_limits<double>::infinity();
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string clean_name(std::string s) {
    for (char& c : s)
        if (c == '\t' || c == '\n' || c == '\r') c = ' ';
    return s;
}

}  // namespace

std::string algo_to_hex(const cublasLtMatmulAlgo_t& algo) {
    std::string s;
    char buf[20];
    for (std::uint64_t w : algo.data) {
        std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(w));
        s += buf;
    }
    return s;
}

bool hex_to_algo(const std::string& s, cublasLtMatmulAlgo_t& algo) {
    // Lowercase only, as algo_to_hex writes it.
    if (s.size() != std::size_t{16} * 8 || std::any_of(s.begin(), s.end(), [](char c) { return c >= 'A' && c <= 'F'; }))
        return false;
    for (std::size_t i = 0; i < 8; ++i) {
        const char* first = s.data() + i * 16;
        std::uint64_t word = 0;
        const auto [next, ec] = std::from_chars(first, first + 16, word, 16);
        if (ec != std::errc() || next != first + 16) return false;
        algo.data[i] = word;
    }
    return true;
}

void autotune_plan(MatmulPlan& plan, const TensorView& a, const TensorView& b, const TensorView& d,
                   const MatmulArgs& args, core::StreamRef stream, int iterations) {
    plan.add_split_k_variants();
    const std::size_t n = plan.infos().size();
    MatmulOutputs scratch;  // aux / bias-gradient outputs the caller did not pass
    const MatmulPointers p = prepare_pointers(plan, a, b, d, args, stream, scratch);

    // In place (c is d) with beta != 0: every run must start from the caller's c.
    core::Buffer backup;
    const bool restore = p.c != nullptr && p.c == p.d && args.beta != Scalar(0.0);
    if (restore) {
        backup = core::Buffer(std::size_t(d.span_bytes()), stream, plan.memory_resource());
        copy_async(backup.data(), d.data(), backup.size_bytes(), stream);
    }
    // Writing a buffer twice the L2 size before each run evicts the operands.
    const int l2 = device_identity(plan.device()).l2_bytes;
    core::Buffer flush(std::size_t(std::max(l2, 1 << 20)) * 2, stream, plan.memory_resource());

    std::vector<bool> failed(n, false);
    std::optional<CublasError> first_error;
    for (std::size_t i = 0; i < n; ++i) {  // warm-up, and drop candidates that cannot run
        plan.select(i);
        try {
            if (restore) copy_async(d.data(), backup.data(), backup.size_bytes(), stream);
            plan.run(p, args.alpha, args.beta, stream, plan.device());
        } catch (const CublasError& e) {
            failed[i] = true;
            if (!first_error) first_error = e;
        }
    }
    if (std::all_of(failed.begin(), failed.end(), [](bool f) { return f; })) throw *first_error;

    const std::size_t runs = n * std::size_t(iterations);
    EventPool start(runs), stop(runs);
    for (int it = 0; it < iterations; ++it) {
        for (std::size_t j = 0; j < n; ++j) {
            const std::size_t i = (j + std::size_t(it)) % n;  // rotate the order between iterations
            if (failed[i]) continue;
            const std::size_t e = std::size_t(it) * n + i;
            plan.select(i);
            if (restore) copy_async(d.data(), backup.data(), backup.size_bytes(), stream);
            check(cudaMemsetAsync(flush.data(), it & 0xff, flush.size_bytes(), stream.handle()), "cudaMemsetAsync",
                  "flushing the L2 cache between autotune runs");
            check(cudaEventRecord(start[e], stream.handle()), "cudaEventRecord");
            plan.run(p, args.alpha, args.beta, stream, plan.device());
            check(cudaEventRecord(stop[e], stream.handle()), "cudaEventRecord");
        }
    }
    stream.synchronize();

    std::vector<double> times(n, std::numeric_limits<double>::infinity());
    for (std::size_t i = 0; i < n; ++i) {
        if (failed[i]) continue;
        std::vector<double> t;
        for (int it = 0; it < iterations; ++it) {
            const std::size_t e = std::size_t(it) * n + i;
            float ms = 0;
            check(cudaEventElapsedTime(&ms, start[e], stop[e]), "cudaEventElapsedTime");
            t.push_back(double(ms));
        }
        times[i] = median(std::move(t));
    }
    std::vector<std::size_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return times[x] < times[y]; });
    // The heuristic's first choice stays unless another candidate is faster by more than the
    // timing noise: autotune must never pick a kernel that is slower in steady state.
    constexpr double keep_margin = 0.01;
    if (order.front() != 0 && std::isfinite(times[0]) && times[order.front()] > times[0] * (1.0 - keep_margin)) {
        order.erase(std::find(order.begin(), order.end(), std::size_t(0)));
        order.insert(order.begin(), std::size_t(0));
    }
    plan.reorder(order);
    for (std::size_t i = 0; i < n; ++i) plan.set_time(i, std::isfinite(times[order[i]]) ? times[order[i]] : -1.0);
    if (log_enabled(LogLevel::debug)) {
        for (std::size_t i = 0; i < n; ++i) {
            const AlgorithmInfo& info = plan.infos()[i];
            detail::log(LogLevel::debug,
                        "matmul autotune: #{} algorithm {} tile {} stages {} split-k {} workspace {} B: {:.4f} ms{}", i,
                        info.id, info.tile, info.stages, info.split_k, info.workspace_bytes, info.time_ms,
                        info.time_ms < 0 ? " (failed)" : "");
        }
    }
}

namespace {

/// The whole tuning file at `path`, or nullopt when nothing is there. InvalidArgument for anything
/// but a regular file of at most max_tuning_file_bytes (opening a FIFO would block until a writer
/// appears, a directory reads as nothing, and a file of /proc may report size 0 and never end),
/// or one that cannot be read.
std::optional<std::string> read_tuning_file(const std::string& path, const char* api) {
    std::string text;
    switch (read_regular_file(path, text, /*follow_symlinks=*/true, max_tuning_file_bytes)) {
        case FileStatus::ok:
            return text;
        case FileStatus::missing:
            return std::nullopt;
        case FileStatus::not_regular:
            throw_invalid(fmt::format("path: {} is not a regular file; pass the path of a tuning file written by "
                                      "save_tuning (or a new path)",
                                      path),
                          api);
        case FileStatus::unreadable:
            throw_invalid(fmt::format("path: cannot read {}: {}", path, std::strerror(errno)), api);
        case FileStatus::too_large:
            break;
    }
    throw_invalid(fmt::format("path: {} holds more than the {} MiB a tuning file may hold; start a new tuning file",
                              path, max_tuning_file_bytes >> 20),
                  api);
}

TuningHost host_of(int device) {
    const DeviceIdentity& id = device_identity(device);
    return {clean_name(id.name), fmt::format("{}.{}", id.cc_major, id.cc_minor), std::to_string(id.lt_version)};
}

}  // namespace

void save_tuning_entry(const std::string& path, const MatmulPlan& plan) {
    const TuningHost host = host_of(plan.device());
    const std::string key = key_to_text(plan.key());

    std::vector<std::string> lines;
    if (const std::optional<std::string> text = read_tuning_file(path, "Matmul::save_tuning")) {
        std::istringstream in(*text);
        std::string line;
        while (std::getline(in, line)) {
            if (line.empty() || line[0] == '#') continue;
            const auto f = split_tabs(line);
            if (f.size() >= 4 && f[0] == host.name && f[1] == host.cc && f[2] == host.version && f[3] == key) continue;
            lines.push_back(line);
        }
    }
    const AlgorithmInfo& info = plan.infos()[plan.selected()];
    lines.push_back(fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}", host.name, host.cc, host.version, key,
                                algo_to_hex(plan.selected_algo()), info.workspace_bytes, info.time_ms));

    std::uintmax_t bytes = std::string_view(file_header).size() + 1;
    for (const auto& l : lines) bytes += l.size() + 1;
    if (bytes > max_tuning_file_bytes)  // load_tuning would refuse it
        throw_invalid(fmt::format("path: {} would grow to {} bytes, past the {} MiB a tuning file may hold; save to "
                                  "a new tuning file",
                                  path, bytes, max_tuning_file_bytes >> 20),
                      "Matmul::save_tuning");
    std::string text = std::string(file_header) + '\n';
    for (const auto& l : lines) text += l + '\n';
    // Through a new file of a name no one else uses: whatever sits at a fixed temporary name (a FIFO
    // waiting for a reader, a link, another process's half-written file) is never written through.
    int error = 0;
    std::string reason;
    if (!replace_regular_file(path, text, error, reason))
        throw Error(fmt::format("Matmul::save_tuning: cannot write {}: {}", path, reason), error,
                    "Matmul::save_tuning");
}

TuningText parse_tuning_text(std::istream& in, const TuningHost& host) {
    TuningText out;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        const auto f = split_tabs(line);
        TuningEntry e;
        if (f.size() < 5 || !parse_key(std::string(f[3]), e.key) || !hex_to_algo(std::string(f[4]), e.algo)) {
            ++out.malformed;
            continue;
        }
        if (f[0] != host.name || f[1] != host.cc || f[2] != host.version) {
            ++out.stale;
            continue;
        }
        out.entries.push_back(e);
    }
    return out;
}

std::vector<TuningEntry> read_tuning_entries(const std::string& path, const char* api) {
    const std::optional<std::string> text = read_tuning_file(path, api);
    if (!text) return {};  // nothing saved yet
    std::istringstream in(*text);
    const TuningHost host = host_of(matmul_current_device());
    TuningText parsed = parse_tuning_text(in, host);
    detail::log(LogLevel::debug,
                "matmul tuning file {}: {} entries for this GPU and cuBLASLt {}, {} stale, {} malformed", path,
                parsed.entries.size(), host.version, parsed.stale, parsed.malformed);
    return std::move(parsed.entries);
}

}  // namespace gpumath::detail
