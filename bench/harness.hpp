// SPDX-License-Identifier: Apache-2.0
// Benchmark harness shared by gpumath's benchmark programs: CUDA-event timing of GPU work,
// burst timing of host cost, a reporter printing a table and writing JSON, random operands in
// device memory, and the raw cuBLASLt product the matmul benchmarks compare with.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include <gpumath/core.hpp>
#include <gpumath/matmul.hpp>

#include "core/graph_holds.hpp"

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

/// Waits (up to 10 s) until gpumath's release thread has dropped everything handed to it. Destroying
/// a cuFFT plan there unloads modules, which waits for the device: were a StreamGate holding a
/// stream meanwhile, the gate's host function would wait for this thread, this thread's next launch
/// for the driver lock the unload holds, and the unload for the gated stream.
inline void settle_release_thread() {
    for (int i = 0; i < 10000; ++i) {
        const detail::GraphHoldStats s = detail::graph_hold_stats();
        if (s.dropped >= s.released) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

/// Holds `stream` (from a host function) until release(), so that a whole sample is enqueued before
/// the GPU starts on it: then back-to-back calls are timed at the GPU's pace even where one call's
/// host cost exceeds its GPU time. Keep a gated sample well under the launch queue's depth (the
/// host would block on a full queue that the gate keeps from draining). A host function that waits
/// for the host thread breaks CUDA's rule for host functions (they must not depend on other CUDA
/// work), so nothing may make implicitly synchronizing calls while a gate is closed: the
/// constructor first lets gpumath's release thread finish its drops.
class StreamGate {
public:
    explicit StreamGate(cudaStream_t stream) : number_((settle_release_thread(), next_number())) {
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

/// Medians of `pairs` samples of two variants taken in alternating order (a then b, b then a, ...),
/// so that a clock drifting during the run weighs on both alike: `sample_a()` and `sample_b()`
/// return one sample's milliseconds; the ratio's median is of the per-pair ratios a / b.
template <class SampleA, class SampleB>
PairedMs interleaved_pairs(int pairs, SampleA&& sample_a, SampleB&& sample_b) {
    std::vector<double> ta, tb, r;
    for (int i = 0; i < pairs; ++i) {
        double x = 0, y = 0;
        if (i % 2 == 0) {
            x = sample_a();
            y = sample_b();
        } else {
            y = sample_b();
            x = sample_a();
        }
        ta.push_back(x);
        tb.push_back(y);
        r.push_back(x / y);
    }
    return {median(ta), median(tb), median(r)};
}

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
    const PairedMs result = interleaved_pairs(
        pairs, [&] { return sample(a, call_a); }, [&] { return sample(b, call_b); });
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return result;
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

/// How a GPU comparison samples (see compare()).
struct Timing {
    int warmup = 5, samples = 21, rounds = 3;
    double burn_seconds = 0;  // sustained load before timing (see burn)
    /// Most calls in one gated sample: lower it for calls that enqueue many launches, so that a
    /// sample stays well under the launch queue's depth (see StreamGate).
    int max_per_sample = max_gated_calls;
    /// When > 0, fewer sample pairs (at least 7) where samples * rounds pairs would take longer
    /// than about this many seconds.
    double max_seconds = 0;
};

/// Calls per timed sample so that a sample lasts about 2 ms (at most `max_calls`): back-to-back
/// calls keep the GPU busy, so the time is the GPU's and not the host's submission latency
/// (measured separately).
inline int calls_per_sample(cudaStream_t s, const std::function<void(int)>& fn, int max_calls = max_gated_calls) {
    const double one = gpu_ms(s, fn, 2, 5, 4);
    return std::clamp(int(2.0 / std::max(one, 1e-4)), 1, std::clamp(max_calls, 1, max_gated_calls));
}

/// Median ms per call of raw, and gpumath's from the median ratio of interleaved sample pairs (see
/// paired_gpu_ms).
inline std::pair<double, double> compare(cudaStream_t s, const std::function<void(int)>& raw,
                                         const std::function<void(int)>& ours, const Timing& t) {
    burn(s, raw, t.burn_seconds);
    const int per = calls_per_sample(s, raw, t.max_per_sample);
    int pairs = t.samples * t.rounds;
    if (t.max_seconds > 0) {
        const PairedMs probe = paired_gpu_ms(s, raw, ours, 1, 3, per);
        const double pair_ms = per * (probe.a + probe.b);
        pairs = std::clamp(int(t.max_seconds * 1e3 / std::max(pair_ms, 1e-3)), std::min(7, pairs), pairs);
    }
    const PairedMs m = paired_gpu_ms(s, raw, ours, t.warmup, pairs, per);
    // gpumath's time per call as raw's median divided by the median pair ratio: the ratio printed
    // (raw / gpumath) is then the median over sample pairs, which pairing makes robust to drift.
    return {m.a, m.a / m.ratio};
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

/// The next value of a xorshift64 generator `x`, uniform in [0, 1).
inline double next_uniform(std::uint64_t& x) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return double(x >> 11) * 0x1.0p-53;
}

/// Device memory holding `count` values of `t` uniform in (-0.5, 0.5) (bf16, f32 and e4m3; zeros
/// for other types), generated on the host from `seed`. Past `host_values` values the first
/// `host_values` repeat, copied on the device, so that operands of gigabytes need no host memory of
/// their size.
inline core::Buffer random_device(DataType t, std::size_t count, std::uint64_t seed, cudaStream_t s,
                                  std::size_t host_values = std::numeric_limits<std::size_t>::max()) {
    const std::size_t n = std::min(count, host_values), bytes = size_of(t);
    std::vector<unsigned char> host(n * bytes);
    std::uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
    for (std::size_t i = 0; i < n; ++i) {
        const float v = float(next_uniform(x) - 0.5);
        unsigned char* p = host.data() + i * bytes;
        switch (t) {
            case DataType::bf16: {
                const __nv_bfloat16 h = __float2bfloat16(v);
                std::memcpy(p, &h, 2);
                break;
            }
            case DataType::f32:
                std::memcpy(p, &v, 4);
                break;
            case DataType::e4m3: {
                const __nv_fp8_e4m3 h(v);
                std::memcpy(p, &h, 1);
                break;
            }
            default:
                std::memset(p, 0, bytes);
        }
    }
    core::Buffer b(count * bytes, s);
    auto* d = static_cast<unsigned char*>(b.data());
    cuda_check(cudaMemcpyAsync(d, host.data(), host.size(), cudaMemcpyHostToDevice, s), "upload");
    // Doubling copies: the filled prefix is copied after itself until the buffer is full.
    for (std::size_t filled = n; filled < count;) {
        const std::size_t c = std::min(filled, count - filled);
        cuda_check(cudaMemcpyAsync(d + filled * bytes, d, c * bytes, cudaMemcpyDeviceToDevice, s), "replicate");
        filled += c;
    }
    cuda_check(cudaStreamSynchronize(s), "upload");
    return b;
}

inline double tflops(double flops, double ms) { return flops / (ms * 1e-3) / 1e12; }

/// "algorithm 66 tile#18 stages#31 split-K 1 swizzle 0 ws 0": the numbers cuBLASLt reports, so
/// raw's and gpumath's choices compare field by field.
inline std::string config_text(int id, unsigned tile, unsigned stages, int split_k, unsigned swizzle, std::size_t ws) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "algorithm %d tile#%u stages#%u split-K %d swizzle %u ws %zu", id, tile, stages,
                  split_k, swizzle, ws);
    return buf;
}

inline std::string config_text(const AlgorithmInfo& a) {
    return config_text(a.id, a.tile_id, a.stages_id, a.split_k, a.cta_swizzling, a.workspace_bytes);
}

/// A raw cuBLASLt product, column-major: D (m x n) = op(A) op(B), or `batch` of them at strided
/// offsets; descriptors and the heuristic's first algorithm kept, its own handle and a workspace of
/// gpumath's default limit.
class RawLt {
public:
    struct Spec {
        cudaDataType_t ab = CUDA_R_16BF, d = CUDA_R_16BF, c = CUDA_R_16BF;
        cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
        cudaDataType_t scale = CUDA_R_32F;
        std::uint64_t m = 0, n = 0, k = 0;
        cublasOperation_t op_a = CUBLAS_OP_N, op_b = CUBLAS_OP_N;
        cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
        const float* scale_a = nullptr;  // FP8 scales of cuBLASLt's A and B
        const float* scale_b = nullptr;
        std::int32_t scale_mode_a = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;  // their scale modes
        std::int32_t scale_mode_b = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
        std::int32_t batch = 1;                                 // products in a strided batch
        std::int64_t stride_a = 0, stride_b = 0, stride_d = 0;  // elements between consecutive products' A, B, C/D
    };

    explicit RawLt(const Spec& s) : spec_(s) {
        check_status(cublasLtCreate(&handle_), CUBLAS_STATUS_SUCCESS, "cublasLtCreate");
        check_status(cublasLtMatmulDescCreate(&desc_, s.compute, s.scale), CUBLAS_STATUS_SUCCESS,
                     "cublasLtMatmulDescCreate");
        const std::int32_t ta = s.op_a, tb = s.op_b;
        check_status(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta),
                     CUBLAS_STATUS_SUCCESS, "TRANSA");
        check_status(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb),
                     CUBLAS_STATUS_SUCCESS, "TRANSB");
        if (s.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
            const std::uint32_t e = s.epilogue;
            check_status(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e),
                         CUBLAS_STATUS_SUCCESS, "EPILOGUE");
            set_pointer(CUBLASLT_MATMUL_DESC_BIAS_POINTER, reinterpret_cast<const void*>(256));
        }
        // FP8 scales: the real pointers, set before the heuristic (cuBLASLt reads pointer values).
        if (s.scale_mode_a != CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F)
            check_status(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &s.scale_mode_a,
                                                        sizeof s.scale_mode_a),
                         CUBLAS_STATUS_SUCCESS, "A_SCALE_MODE");
        if (s.scale_mode_b != CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F)
            check_status(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &s.scale_mode_b,
                                                        sizeof s.scale_mode_b),
                         CUBLAS_STATUS_SUCCESS, "B_SCALE_MODE");
        if (s.scale_a != nullptr) set_pointer(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, s.scale_a);
        if (s.scale_b != nullptr) set_pointer(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, s.scale_b);
        const bool a_t = s.op_a == CUBLAS_OP_T, b_t = s.op_b == CUBLAS_OP_T;
        check_status(
            cublasLtMatrixLayoutCreate(&la_, s.ab, a_t ? s.k : s.m, a_t ? s.m : s.k, std::int64_t(a_t ? s.k : s.m)),
            CUBLAS_STATUS_SUCCESS, "A");
        check_status(
            cublasLtMatrixLayoutCreate(&lb_, s.ab, b_t ? s.n : s.k, b_t ? s.k : s.n, std::int64_t(b_t ? s.n : s.k)),
            CUBLAS_STATUS_SUCCESS, "B");
        check_status(cublasLtMatrixLayoutCreate(&ld_, s.d, s.m, s.n, std::int64_t(s.m)), CUBLAS_STATUS_SUCCESS, "D");
        lc_ = ld_;
        if (s.c != s.d)
            check_status(cublasLtMatrixLayoutCreate(&lc_, s.c, s.m, s.n, std::int64_t(s.m)), CUBLAS_STATUS_SUCCESS,
                         "C");
        if (s.batch > 1) {
            set_batch(la_, s.stride_a);
            set_batch(lb_, s.stride_b);
            set_batch(ld_, s.stride_d);
            if (lc_ != ld_) set_batch(lc_, s.stride_d);
        }
        cublasLtMatmulPreference_t pref = nullptr;
        check_status(cublasLtMatmulPreferenceCreate(&pref), CUBLAS_STATUS_SUCCESS, "pref");
        const std::uint64_t ws = workspace_bytes;
        check_status(
            cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
            CUBLAS_STATUS_SUCCESS, "ws");
        // The same preferences gpumath sets for 256-byte aligned operands, so both sides get the
        // same candidates from the heuristic.
        const std::uint32_t align = 256;
        for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
            check_status(cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof align), CUBLAS_STATUS_SUCCESS,
                         "alignment preference");
        cublasLtMatmulHeuristicResult_t r[8];
        int returned = 0;
        check_status(cublasLtMatmulAlgoGetHeuristic(handle_, desc_, la_, lb_, lc_, ld_, pref, 8, r, &returned),
                     CUBLAS_STATUS_SUCCESS, "heuristic");
        cublasLtMatmulPreferenceDestroy(pref);
        if (returned == 0) {
            std::fprintf(stderr, "bench: raw cuBLASLt found no algorithm\n");
            fail_exit();
        }
        candidates_.assign(r, r + returned);
        algo_ = r[0].algo;
        cuda_check(cudaMalloc(&workspace_, workspace_bytes), "cudaMalloc workspace");
    }
    ~RawLt() {
        cudaFree(workspace_);
        if (lc_ != ld_) cublasLtMatrixLayoutDestroy(lc_);
        cublasLtMatrixLayoutDestroy(ld_);
        cublasLtMatrixLayoutDestroy(lb_);
        cublasLtMatrixLayoutDestroy(la_);
        cublasLtMatmulDescDestroy(desc_);
        cublasLtDestroy(handle_);
    }
    RawLt(const RawLt&) = delete;
    RawLt& operator=(const RawLt&) = delete;

    void set_pointer(cublasLtMatmulDescAttributes_t attr, const void* p) {
        check_status(cublasLtMatmulDescSetAttribute(desc_, attr, &p, sizeof p), CUBLAS_STATUS_SUCCESS,
                     "pointer attribute");
    }
    void use_candidate(std::size_t i) { algo_ = candidates_[i].algo; }
    /// The configuration of the algorithm raw runs, in the words config_text() uses.
    [[nodiscard]] std::string algorithm() const {
        auto get = [&](cublasLtMatmulAlgoConfigAttributes_t attr) {
            std::uint32_t v = 0;  // every attribute read here is 32 bits wide (cuBLASLt checks the size)
            std::size_t written = 0;
            cublasLtMatmulAlgoConfigGetAttribute(&algo_, attr, &v, sizeof v, &written);
            return v;
        };
        return config_text(int(get(CUBLASLT_ALGO_CONFIG_ID)), unsigned(get(CUBLASLT_ALGO_CONFIG_TILE_ID)),
                           unsigned(get(CUBLASLT_ALGO_CONFIG_STAGES_ID)),
                           std::max(1, int(get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM))),
                           unsigned(get(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING)), candidates_.front().workspaceSize);
    }
    [[nodiscard]] std::size_t candidates() const { return candidates_.size(); }

    /// D = A B (+ epilogue); `bias` and scales already set with set_pointer when they change.
    void run(const void* a, const void* b, void* d, cudaStream_t stream) {
        const float one = 1.0f, zero = 0.0f;
        const void* c = spec_.c == spec_.d ? d : nullptr;
        check_status(cublasLtMatmul(handle_, desc_, &one, a, la_, b, lb_, &zero, c, lc_, d, ld_, &algo_, workspace_,
                                    workspace_bytes, stream),
                     CUBLAS_STATUS_SUCCESS, "cublasLtMatmul");
    }

private:
    static constexpr std::size_t workspace_bytes = default_workspace_limit;
    void set_batch(cublasLtMatrixLayout_t l, std::int64_t stride) const {
        check_status(
            cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &spec_.batch, sizeof spec_.batch),
            CUBLAS_STATUS_SUCCESS, "BATCH_COUNT");
        check_status(
            cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
            CUBLAS_STATUS_SUCCESS, "STRIDED_BATCH_OFFSET");
    }
    Spec spec_;
    cublasLtHandle_t handle_ = nullptr;
    cublasLtMatmulDesc_t desc_ = nullptr;
    cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, lc_ = nullptr, ld_ = nullptr;
    cublasLtMatmulAlgo_t algo_{};
    std::vector<cublasLtMatmulHeuristicResult_t> candidates_;
    void* workspace_ = nullptr;
};

}  // namespace gpumath::bench
