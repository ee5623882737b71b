// SPDX-License-Identifier: Apache-2.0
// Benchmark harness shared by gpumath's benchmark programs: CUDA-event timing of GPU work,
// burst timing of host cost, and a reporter printing a table and writing JSON.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>

namespace gpumath::bench {

/// The highest StreamGate number released so far (see StreamGate); a failing check opens them all
/// before exiting, so no host function keeps a stream (and the exit) waiting.
inline std::atomic<std::uint64_t>& gates_released() {
    static std::atomic<std::uint64_t> released{0};
    return released;
}

[[noreturn]] inline void fail_exit() {
    gates_released().store(~std::uint64_t(0), std::memory_order_release);
    std::exit(2);
}

/// Stops the benchmark (exit status 2) when a raw library call returns anything but `ok`
/// (cudaSuccess, CUDA_SUCCESS, CUBLAS_STATUS_SUCCESS, CUFFT_SUCCESS, ...).
template <class Status>
void check_status(Status s, Status ok, const char* what) {
    if (s != ok) {
        std::fprintf(stderr, "bench: %s failed with status %d\n", what, static_cast<int>(s));
        fail_exit();
    }
}

inline void cuda_check(cudaError_t s, const char* what) {
    if (s != cudaSuccess) {
        std::fprintf(stderr, "bench: %s failed: %s\n", what, cudaGetErrorString(s));
        fail_exit();
    }
}

inline double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Milliseconds of GPU time per call of `fn(i)` on `stream`: `warmup` untimed calls, then
/// `samples` samples of `per_sample` back-to-back calls, each sample bracketed by CUDA events;
/// returns the median sample divided by `per_sample`. `i` counts calls (for rotating buffers).
inline double gpu_ms(cudaStream_t stream, const std::function<void(int)>& fn, int warmup = 5, int samples = 31,
                     int per_sample = 1) {
    int call = 0;
    for (int i = 0; i < warmup; ++i) fn(call++);
    cuda_check(cudaStreamSynchronize(stream), "warm-up");
    cudaEvent_t a{}, b{};
    cuda_check(cudaEventCreate(&a), "cudaEventCreate");
    cuda_check(cudaEventCreate(&b), "cudaEventCreate");
    std::vector<double> t;
    for (int s = 0; s < samples; ++s) {
        cuda_check(cudaEventRecord(a, stream), "cudaEventRecord");
        for (int k = 0; k < per_sample; ++k) fn(call++);
        cuda_check(cudaEventRecord(b, stream), "cudaEventRecord");
        cuda_check(cudaEventSynchronize(b), "cudaEventSynchronize");
        float ms = 0;
        cuda_check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
        t.push_back(double(ms) / per_sample);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return median(t);
}

/// Per-call GPU milliseconds of two ways of doing the same work, measured in interleaved samples
/// (a b, b a, a b, ...) so that both see the same clocks: under sustained load the GPU's clock
/// drops within seconds, and timing one side's samples after the other's would favour the first.
/// Each sample is gated (StreamGate), so host cost does not leak into the GPU time.
struct PairedMs {
    double a = 0;      // median ms per call of `a`
    double b = 0;      // median ms per call of `b`
    double ratio = 0;  // median over sample pairs of a / b (> 1: b is faster)
};

/// Holds `stream` (from a host function) until release(), so that a whole sample is enqueued before
/// the GPU starts on it: then back-to-back calls are timed at the GPU's pace even where one call's
/// host cost exceeds its GPU time. Keep a gated sample well under the launch queue's depth (the
/// host would block on a full queue that the gate keeps from draining).
class StreamGate {
public:
    explicit StreamGate(cudaStream_t stream) : number_(next_number()) {
        // The host function gets the gate's number, not a pointer: it may run after the gate is gone.
        cuda_check(cudaLaunchHostFunc(stream, &StreamGate::wait, reinterpret_cast<void*>(std::uintptr_t(number_))),
                   "cudaLaunchHostFunc");
    }
    void release() noexcept {
        std::uint64_t seen = gates_released().load(std::memory_order_relaxed);
        while (seen < number_ && !gates_released().compare_exchange_weak(seen, number_, std::memory_order_release)) {}
    }
    ~StreamGate() { release(); }
    StreamGate(const StreamGate&) = delete;
    StreamGate& operator=(const StreamGate&) = delete;

private:
    static std::uint64_t next_number() {
        static std::atomic<std::uint64_t> issued{0};
        return issued.fetch_add(1, std::memory_order_relaxed) + 1;
    }
    static void CUDART_CB wait(void* number) {
        const auto n = std::uint64_t(reinterpret_cast<std::uintptr_t>(number));
        while (gates_released().load(std::memory_order_acquire) < n) std::this_thread::yield();
    }
    std::uint64_t number_;
};

/// Most calls a gated sample holds (see StreamGate).
inline constexpr int max_gated_calls = 128;

inline PairedMs paired_gpu_ms(cudaStream_t stream, const std::function<void(int)>& a, const std::function<void(int)>& b,
                              int warmup = 5, int pairs = 51, int per_sample = 1) {
    per_sample = std::clamp(per_sample, 1, max_gated_calls);
    int call_a = 0, call_b = 0;
    for (int i = 0; i < warmup; ++i) {
        a(call_a++);
        b(call_b++);
    }
    cuda_check(cudaStreamSynchronize(stream), "warm-up");
    cudaEvent_t e0{}, e1{};
    cuda_check(cudaEventCreate(&e0), "cudaEventCreate");
    cuda_check(cudaEventCreate(&e1), "cudaEventCreate");
    auto sample = [&](const std::function<void(int)>& fn, int& call) {
        StreamGate gate(stream);
        cuda_check(cudaEventRecord(e0, stream), "cudaEventRecord");
        for (int k = 0; k < per_sample; ++k) fn(call++);
        cuda_check(cudaEventRecord(e1, stream), "cudaEventRecord");
        gate.release();
        cuda_check(cudaEventSynchronize(e1), "cudaEventSynchronize");
        float ms = 0;
        cuda_check(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
        return double(ms) / per_sample;
    };
    std::vector<double> ta, tb, r;
    for (int i = 0; i < pairs; ++i) {
        double x = 0, y = 0;
        if (i % 2 == 0) {
            x = sample(a, call_a);
            y = sample(b, call_b);
        } else {
            y = sample(b, call_b);
            x = sample(a, call_a);
        }
        ta.push_back(x);
        tb.push_back(y);
        r.push_back(x / y);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return {median(ta), median(tb), median(r)};
}

/// Microseconds of host time per call of `fn(i)`, timed in bursts of `burst` calls (shorter than
/// the launch queue) with `stream` drained between bursts; median over `bursts` bursts.
inline double host_us(cudaStream_t stream, const std::function<void(int)>& fn, int burst = 128, int bursts = 51,
                      int warmup_bursts = 3) {
    int call = 0;
    std::vector<double> t;
    for (int b = 0; b < warmup_bursts + bursts; ++b) {
        cuda_check(cudaStreamSynchronize(stream), "drain");
        const auto t0 = std::chrono::steady_clock::now();
        for (int k = 0; k < burst; ++k) fn(call++);
        const auto t1 = std::chrono::steady_clock::now();
        if (b >= warmup_bursts) t.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / burst);
    }
    cuda_check(cudaStreamSynchronize(stream), "drain");
    return median(t);
}

/// Runs `fn` back to back for about `seconds`, so that what is timed next sees the clocks the card
/// settles at under sustained load (it boosts when idle and slows within seconds of heavy work).
inline void burn(cudaStream_t stream, const std::function<void(int)>& fn, double seconds) {
    const auto t0 = std::chrono::steady_clock::now();
    int call = 0;
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds) {
        for (int k = 0; k < 16; ++k) fn(call++);
        cuda_check(cudaStreamSynchronize(stream), "burn");
    }
}

/// Host microseconds per call of several ways of doing the same work, in interleaved bursts: each
/// round runs one burst of `burst` calls of every function (the order rotating), with the stream
/// drained before each burst. Returns, per function, the median burst time per call. Host timings
/// on a shared machine drift by microseconds between phases; interleaving lets every function see
/// the same drift.
inline std::vector<double> interleaved_host_us(cudaStream_t stream, const std::vector<std::function<void(int)>>& fns,
                                               int burst = 128, int rounds = 51, int warmup_rounds = 3) {
    const std::size_t n = fns.size();
    std::vector<std::vector<double>> t(n);
    std::vector<int> calls(n, 0);
    for (int r = 0; r < warmup_rounds + rounds; ++r) {
        for (std::size_t j = 0; j < n; ++j) {
            const std::size_t f = (j + std::size_t(r)) % n;
            cuda_check(cudaStreamSynchronize(stream), "drain");
            const auto t0 = std::chrono::steady_clock::now();
            for (int k = 0; k < burst; ++k) fns[f](calls[f]++);
            const auto t1 = std::chrono::steady_clock::now();
            if (r >= warmup_rounds) t[f].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / burst);
        }
    }
    cuda_check(cudaStreamSynchronize(stream), "drain");
    std::vector<double> out;
    for (auto& v : t) out.push_back(median(v));
    return out;
}

/// One measured figure.
struct Row {
    std::string group;    // e.g. "copy D2D 256 MiB"
    std::string variant;  // e.g. "gpumath", "raw"
    std::string metric;   // e.g. "GB/s", "us/call", "ms", "TFLOP/s"
    double value = 0;
    double ratio = 0;  // gpumath / raw (or raw / gpumath for times, so >1 means gpumath is better), 0 = n/a
    std::string note;
};

/// Collects rows, prints an aligned table, writes JSON when `--json PATH` was given.
class Reporter {
public:
    Reporter(std::string program, int argc, char** argv) : program_(std::move(program)) {
        for (int i = 1; i < argc; ++i) {
            if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) json_path_ = argv[++i];
            else if (std::strcmp(argv[i], "--quick") == 0) quick_ = true;
            else filters_.emplace_back(argv[i]);
        }
    }
    /// True when `--quick` was passed (fewer samples, smaller sizes).
    [[nodiscard]] bool quick() const { return quick_; }
    /// True when no filter was given or `name` contains one of them.
    [[nodiscard]] bool selected(const std::string& name) const {
        if (filters_.empty()) return true;
        return std::any_of(filters_.begin(), filters_.end(),
                           [&](const std::string& f) { return name.find(f) != std::string::npos; });
    }
    void add(Row r) {
        std::printf("  %-44s %-18s %12.4g %-8s", r.group.c_str(), r.variant.c_str(), r.value, r.metric.c_str());
        if (r.ratio > 0) std::printf("  ratio %.3f", r.ratio);
        if (!r.note.empty()) std::printf("  %s", r.note.c_str());
        std::printf("\n");
        std::fflush(stdout);
        rows_.push_back(std::move(r));
    }
    ~Reporter() {
        if (json_path_.empty()) return;
        FILE* f = std::fopen(json_path_.c_str(), "w");
        if (f == nullptr) return;
        std::fprintf(f, "{\"program\": \"%s\", \"rows\": [\n", program_.c_str());
        for (std::size_t i = 0; i < rows_.size(); ++i) {
            const Row& r = rows_[i];
            std::fprintf(f,
                         "  {\"group\": \"%s\", \"variant\": \"%s\", \"metric\": \"%s\", \"value\": %.6g, \"ratio\": "
                         "%.6g, \"note\": \"%s\"}%s\n",
                         r.group.c_str(), r.variant.c_str(), r.metric.c_str(), r.value, r.ratio, r.note.c_str(),
                         i + 1 < rows_.size() ? "," : "");
        }
        std::fprintf(f, "]}\n");
        std::fclose(f);
    }
    Reporter(const Reporter&) = delete;
    Reporter& operator=(const Reporter&) = delete;

private:
    std::string program_;
    std::string json_path_;
    std::vector<std::string> filters_;
    std::vector<Row> rows_;
    bool quick_ = false;
};

/// Prints the device, driver and runtime versions as the table's header.
inline void print_environment(const char* program) {
    int dev = 0, driver = 0, runtime = 0;
    cudaDeviceProp p{};
    cuda_check(cudaGetDevice(&dev), "cudaGetDevice");
    cuda_check(cudaGetDeviceProperties(&p, dev), "cudaGetDeviceProperties");
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    std::printf("%s on %s (sm_%d%d, %d SMs), driver CUDA %d.%d, runtime %d.%d\n", program, p.name, p.major, p.minor,
                p.multiProcessorCount, driver / 1000, (driver % 1000) / 10, runtime / 1000, (runtime % 1000) / 10);
}

/// Exits with a message (status 0) when there is no GPU: benchmarks need one.
inline void require_gpu(const char* program) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        std::printf("%s: no CUDA device on this machine; benchmarks need a GPU\n", program);
        std::exit(0);
    }
}

}  // namespace gpumath::bench
