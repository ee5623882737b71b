// SPDX-License-Identifier: Apache-2.0
// gpumath's matmul against raw cuBLASLt (the heuristic's top algorithm, descriptors kept) on the
// same buffers in the same process: large bf16 products (plain and after autotune), fused
// bias + GELU, linear layers, FP8, and the host cost per call of small products.
//
//   bench_matmul [--quick] [--json PATH] [name filters...]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <gpumath/core.hpp>
#include <gpumath/matmul.hpp>

#include "harness.hpp"

using namespace gpumath;
using bench::Row;

namespace {

void lt_check(cublasStatus_t s, const char* what) {
    if (s != CUBLAS_STATUS_SUCCESS) {
        std::fprintf(stderr, "bench: %s failed: %s\n", what, cublasLtGetStatusName(s));
        std::exit(2);
    }
}

/// Device memory holding values uniform in (-0.5, 0.5) of `t`, generated on the host.
core::Buffer random_device(DataType t, std::size_t count, std::uint64_t seed, cudaStream_t s) {
    std::vector<unsigned char> host(count * size_of(t));
    std::uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
    for (std::size_t i = 0; i < count; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const float v = float(double(x >> 11) * 0x1.0p-53 - 0.5);
        unsigned char* p = host.data() + i * size_of(t);
        switch (t) {
        case DataType::bf16: {
            const __nv_bfloat16 h = __float2bfloat16(v);
            std::memcpy(p, &h, 2);
            break;
        }
        case DataType::f32: std::memcpy(p, &v, 4); break;
        case DataType::e4m3: {
            const __nv_fp8_e4m3 h(v);
            std::memcpy(p, &h, 1);
            break;
        }
        default: std::memset(p, 0, size_of(t));
        }
    }
    core::Buffer b(host.size(), s);
    bench::cuda_check(cudaMemcpyAsync(b.data(), host.data(), host.size(), cudaMemcpyHostToDevice, s), "upload");
    bench::cuda_check(cudaStreamSynchronize(s), "upload");
    return b;
}

/// A raw cuBLASLt product, column-major: D (m x n) = op(A) op(B), descriptors and the heuristic's
/// first algorithm kept, its own handle and 32 MiB workspace.
class RawLt {
public:
    struct Spec {
        cudaDataType_t ab = CUDA_R_16BF, d = CUDA_R_16BF, c = CUDA_R_16BF;
        cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
        cudaDataType_t scale = CUDA_R_32F;
        std::uint64_t m = 0, n = 0, k = 0;
        cublasOperation_t op_a = CUBLAS_OP_N, op_b = CUBLAS_OP_N;
        cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
        bool fp8_scales = false;
    };

    explicit RawLt(const Spec& s) : spec_(s) {
        lt_check(cublasLtCreate(&handle_), "cublasLtCreate");
        lt_check(cublasLtMatmulDescCreate(&desc_, s.compute, s.scale), "cublasLtMatmulDescCreate");
        const std::int32_t ta = s.op_a, tb = s.op_b;
        lt_check(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "TRANSA");
        lt_check(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "TRANSB");
        if (s.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
            const std::uint32_t e = s.epilogue;
            lt_check(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e), "EPILOGUE");
            set_pointer(CUBLASLT_MATMUL_DESC_BIAS_POINTER, reinterpret_cast<const void*>(256));
        }
        if (s.fp8_scales) {
            set_pointer(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, reinterpret_cast<const void*>(256));
            set_pointer(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, reinterpret_cast<const void*>(256));
        }
        const bool a_t = s.op_a == CUBLAS_OP_T, b_t = s.op_b == CUBLAS_OP_T;
        lt_check(cublasLtMatrixLayoutCreate(&la_, s.ab, a_t ? s.k : s.m, a_t ? s.m : s.k, std::int64_t(a_t ? s.k : s.m)), "A");
        lt_check(cublasLtMatrixLayoutCreate(&lb_, s.ab, b_t ? s.n : s.k, b_t ? s.k : s.n, std::int64_t(b_t ? s.n : s.k)), "B");
        lt_check(cublasLtMatrixLayoutCreate(&ld_, s.d, s.m, s.n, std::int64_t(s.m)), "D");
        lc_ = ld_;
        if (s.c != s.d) lt_check(cublasLtMatrixLayoutCreate(&lc_, s.c, s.m, s.n, std::int64_t(s.m)), "C");
        cublasLtMatmulPreference_t pref = nullptr;
        lt_check(cublasLtMatmulPreferenceCreate(&pref), "pref");
        const std::uint64_t ws = workspace_bytes;
        lt_check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws), "ws");
        cublasLtMatmulHeuristicResult_t r[8];
        int returned = 0;
        lt_check(cublasLtMatmulAlgoGetHeuristic(handle_, desc_, la_, lb_, lc_, ld_, pref, 8, r, &returned), "heuristic");
        cublasLtMatmulPreferenceDestroy(pref);
        if (returned == 0) {
            std::fprintf(stderr, "bench: raw cuBLASLt found no algorithm\n");
            std::exit(2);
        }
        candidates_.assign(r, r + returned);
        algo_ = r[0].algo;
        bench::cuda_check(cudaMalloc(&workspace_, workspace_bytes), "cudaMalloc workspace");
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
        lt_check(cublasLtMatmulDescSetAttribute(desc_, attr, &p, sizeof p), "pointer attribute");
    }
    void use_candidate(std::size_t i) { algo_ = candidates_[i].algo; }
    [[nodiscard]] std::size_t candidates() const { return candidates_.size(); }

    /// D = A B (+ epilogue); `bias` and scales already set with set_pointer when they change.
    void run(const void* a, const void* b, void* d, cudaStream_t stream) {
        const float one = 1.0f, zero = 0.0f;
        const void* c = spec_.c == spec_.d ? d : nullptr;
        lt_check(cublasLtMatmul(handle_, desc_, &one, a, la_, b, lb_, &zero, c, lc_, d, ld_, &algo_, workspace_,
                                workspace_bytes, stream),
                 "cublasLtMatmul");
    }

private:
    static constexpr std::size_t workspace_bytes = std::size_t(32) << 20;
    Spec spec_;
    cublasLtHandle_t handle_ = nullptr;
    cublasLtMatmulDesc_t desc_ = nullptr;
    cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, lc_ = nullptr, ld_ = nullptr;
    cublasLtMatmulAlgo_t algo_{};
    std::vector<cublasLtMatmulHeuristicResult_t> candidates_;
    void* workspace_ = nullptr;
};

double tflops(double flops, double ms) { return flops / (ms * 1e-3) / 1e12; }

std::string cube(std::int64_t n) { return std::to_string(n) + "^3"; }

struct Timing {
    int warmup = 5, samples = 21;
};

/// Median ms of raw and of gpumath, interleaved raw / gpumath / raw; raw is the better of its two runs.
std::pair<double, double> compare(cudaStream_t s, const std::function<void(int)>& raw, const std::function<void(int)>& ours,
                                  const Timing& t) {
    const double r1 = bench::gpu_ms(s, raw, t.warmup, t.samples);
    const double o = bench::gpu_ms(s, ours, t.warmup, t.samples);
    const double r2 = bench::gpu_ms(s, raw, t.warmup, t.samples);
    return {std::min(r1, r2), o};
}

}  // namespace

int main(int argc, char** argv) {
    bench::require_gpu("bench_matmul");
    bench::Reporter report("bench_matmul", argc, argv);
    bench::print_environment("bench_matmul");
    std::printf("cuBLASLt %zu; inputs uniform in (-0.5, 0.5); raw = cublasLtMatmul with the heuristic's first "
                "algorithm and kept descriptors, same buffers\n",
                cublasLtGetVersion());
    core::Stream stream;
    const cudaStream_t s = stream.handle();
    const bool quick = report.quick();
    const Timing timing = quick ? Timing{2, 7} : Timing{5, 21};

    // ---- bf16 M = N = K, row-major: gpumath computes D^T = B^T A^T, as raw does here.
    const std::vector<std::int64_t> sizes = quick ? std::vector<std::int64_t>{2048, 1024} : std::vector<std::int64_t>{8192, 4096, 1024};
    for (std::int64_t n : sizes) {
        const std::string group = "bf16 " + cube(n);
        if (!report.selected(group)) continue;
        const auto count = std::size_t(n * n);
        core::Buffer a = random_device(DataType::bf16, count, 1, s), b = random_device(DataType::bf16, count, 2, s);
        core::Buffer d(count * 2, stream);
        const TensorView av(a.data(), DataType::bf16, {n, n}), bv(b.data(), DataType::bf16, {n, n}), dv(d.data(), DataType::bf16, {n, n});
        RawLt raw({.m = std::uint64_t(n), .n = std::uint64_t(n), .k = std::uint64_t(n)});
        Matmul mm(av, bv);
        mm.plan();
        const double flops = 2.0 * double(n) * double(n) * double(n);
        auto [raw_ms, ours_ms] = compare(s, [&](int) { raw.run(b.data(), a.data(), d.data(), s); },
                                         [&](int) { mm.execute(av, bv, dv, {}, stream); }, timing);
        report.add({group, "raw cuBLASLt", "TFLOP/s", tflops(flops, raw_ms), 0, ""});
        report.add({group, "Matmul.execute", "TFLOP/s", tflops(flops, ours_ms), raw_ms / ours_ms,
                    "algorithm " + std::to_string(mm.algorithm().id) + " tile " + mm.algorithm().tile});
        mm.autotune(av, bv, dv, {}, stream, quick ? 3 : 10);
        auto [raw2_ms, tuned_ms] = compare(s, [&](int) { raw.run(b.data(), a.data(), d.data(), s); },
                                           [&](int) { mm.execute(av, bv, dv, {}, stream); }, timing);
        report.add({group, "Matmul after autotune", "TFLOP/s", tflops(flops, tuned_ms), raw2_ms / tuned_ms,
                    "algorithm " + std::to_string(mm.algorithm().id) + " tile " + mm.algorithm().tile});
    }

    // ---- bf16 with fused bias + GELU.
    for (std::int64_t n : quick ? std::vector<std::int64_t>{2048} : std::vector<std::int64_t>{8192, 4096}) {
        const std::string group = "bf16 + bias + GELU " + cube(n);
        if (!report.selected(group)) continue;
        const auto count = std::size_t(n * n);
        core::Buffer a = random_device(DataType::bf16, count, 3, s), b = random_device(DataType::bf16, count, 4, s);
        core::Buffer bias = random_device(DataType::bf16, std::size_t(n), 5, s);
        core::Buffer d(count * 2, stream);
        const TensorView av(a.data(), DataType::bf16, {n, n}), bv(b.data(), DataType::bf16, {n, n}), dv(d.data(), DataType::bf16, {n, n});
        const TensorView biasv(bias.data(), DataType::bf16, {n});
        RawLt raw({.m = std::uint64_t(n), .n = std::uint64_t(n), .k = std::uint64_t(n), .epilogue = CUBLASLT_EPILOGUE_GELU_BIAS});
        raw.set_pointer(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias.data());
        Matmul mm(av, bv, {.epilog = Epilog::gelu_bias});
        mm.plan();
        const double flops = 2.0 * double(n) * double(n) * double(n);
        auto [raw_ms, ours_ms] = compare(s, [&](int) { raw.run(b.data(), a.data(), d.data(), s); },
                                         [&](int) { mm.execute(av, bv, dv, {.bias = biasv}, stream); }, timing);
        report.add({group, "raw cuBLASLt GELU_BIAS", "TFLOP/s", tflops(flops, raw_ms), 0, ""});
        report.add({group, "Matmul.execute", "TFLOP/s", tflops(flops, ours_ms), raw_ms / ours_ms,
                    "algorithm " + std::to_string(mm.algorithm().id)});
    }

    // ---- bf16 linear layer y = x W^T: x (m, k) row-major, W (n, k) row-major, n = k = 8192.
    {
        const std::int64_t n = quick ? 2048 : 8192, k = n;
        core::Buffer w = random_device(DataType::bf16, std::size_t(n * k), 6, s);
        for (std::int64_t m : {1, 16, 64, 256}) {
            const std::string group = "bf16 linear m=" + std::to_string(m) + " n=k=" + std::to_string(n);
            if (!report.selected(group)) continue;
            core::Buffer x = random_device(DataType::bf16, std::size_t(m * k), 7, s);
            core::Buffer y(std::size_t(m * n) * 2, stream);
            const TensorView xv(x.data(), DataType::bf16, {m, k});
            const TensorView wt(w.data(), DataType::bf16, {k, n}, {1, k});  // W^T
            const TensorView yv(y.data(), DataType::bf16, {m, n});
            // Column-major: y^T (n x m) = W (op T on the stored k x n) x^T (k x m).
            RawLt raw({.m = std::uint64_t(n), .n = std::uint64_t(m), .k = std::uint64_t(k), .op_a = CUBLAS_OP_T});
            Matmul mm(xv, wt);
            mm.plan();
            const Timing t = quick ? Timing{3, 11} : Timing{10, 51};
            auto [raw_ms, ours_ms] = compare(s, [&](int) { raw.run(w.data(), x.data(), y.data(), s); },
                                             [&](int) { mm.execute(xv, wt, yv, {}, stream); }, t);
            const double flops = 2.0 * double(m) * double(n) * double(k);
            report.add({group, "raw cuBLASLt", "ms", raw_ms, 0, std::to_string(tflops(flops, raw_ms)) + " TFLOP/s"});
            report.add({group, "Matmul.execute", "ms", ours_ms, raw_ms / ours_ms, std::to_string(tflops(flops, ours_ms)) + " TFLOP/s"});
        }
    }

    // ---- FP8 e4m3 -> bf16 (A row-major, B column-major: cuBLASLt's TN).
    {
        cudaDeviceProp p{};
        bench::cuda_check(cudaGetDeviceProperties(&p, 0), "properties");
        const bool fp8 = p.major * 10 + p.minor >= 89;
        for (std::int64_t n : quick ? std::vector<std::int64_t>{2048} : std::vector<std::int64_t>{8192, 4096}) {
            const std::string group = "fp8 e4m3 -> bf16 " + cube(n);
            if (!report.selected(group) || !fp8) continue;
            const auto count = std::size_t(n * n);
            core::Buffer a = random_device(DataType::e4m3, count, 8, s), b = random_device(DataType::e4m3, count, 9, s);
            core::Buffer d(count * 2, stream);
            const std::vector<float> ones = {1.0f, 1.0f};
            core::Buffer scales = core::Buffer::from_host(std::span<const float>(ones), stream);
            const TensorView av(a.data(), DataType::e4m3, {n, n}), bv(b.data(), DataType::e4m3, {n, n}, {1, n});
            const TensorView dv(d.data(), DataType::bf16, {n, n});
            RawLt raw({.ab = CUDA_R_8F_E4M3, .m = std::uint64_t(n), .n = std::uint64_t(n), .k = std::uint64_t(n),
                       .op_a = CUBLAS_OP_T, .fp8_scales = true});
            raw.set_pointer(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, scales.data());
            raw.set_pointer(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, scales.data_as<float>() + 1);
            const MatmulScales sc{.a = scales.data_as<float>(), .b = scales.data_as<float>() + 1};
            Matmul mm(av, bv);
            auto [raw_ms, ours_ms] = compare(s, [&](int) { raw.run(b.data(), a.data(), d.data(), s); },
                                             [&](int) { mm.execute(av, bv, dv, {.scales = sc}, stream); }, timing);
            const double flops = 2.0 * double(n) * double(n) * double(n);
            report.add({group, "raw cuBLASLt", "TFLOP/s", tflops(flops, raw_ms), 0, ""});
            report.add({group, "Matmul.execute", "TFLOP/s", tflops(flops, ours_ms), raw_ms / ours_ms,
                        "algorithm " + std::to_string(mm.algorithm().id)});
        }
    }

    // ---- host cost per call: f32 64^3, bursts of 128, 8 rotating buffer sets.
    {
        const std::string group = "f32 64^3 host time per call";
        if (report.selected(group)) {
            constexpr std::int64_t n = 64;
            constexpr int sets = 8;
            std::vector<core::Buffer> bufs;
            std::vector<TensorView> as, bs, ds;
            for (int i = 0; i < sets; ++i) {
                bufs.push_back(random_device(DataType::f32, n * n, 10 + std::uint64_t(i), s));
                as.emplace_back(bufs.back().data(), DataType::f32, std::initializer_list<std::int64_t>{n, n});
                bufs.push_back(random_device(DataType::f32, n * n, 20 + std::uint64_t(i), s));
                bs.emplace_back(bufs.back().data(), DataType::f32, std::initializer_list<std::int64_t>{n, n});
                bufs.emplace_back(std::size_t(n * n) * 4, stream);
                ds.emplace_back(bufs.back().data(), DataType::f32, std::initializer_list<std::int64_t>{n, n});
            }
            RawLt raw({.ab = CUDA_R_32F, .d = CUDA_R_32F, .c = CUDA_R_32F, .m = n, .n = n, .k = n});
            Matmul mm(as[0], bs[0]);
            mm.plan();
            matmul(as[0], bs[0], ds[0], {}, {}, stream);  // the cache now holds the plan
            const int bursts = quick ? 11 : 51;
            auto measure = [&](const std::function<void(int)>& fn) { return bench::host_us(s, fn, 128, bursts); };
            std::vector<double> raw_us, exec_us, stateless_us;
            for (int round = 0; round < 3; ++round) {  // interleaved rounds; the best of each side
                raw_us.push_back(measure([&](int i) { raw.run(bs[i % sets].data(), as[i % sets].data(), ds[i % sets].data(), s); }));
                exec_us.push_back(measure([&](int i) { mm.execute(as[i % sets], bs[i % sets], ds[i % sets], {}, stream); }));
                stateless_us.push_back(measure([&](int i) { matmul(as[i % sets], bs[i % sets], ds[i % sets], {}, {}, stream); }));
            }
            const double r = *std::min_element(raw_us.begin(), raw_us.end());
            const double e = *std::min_element(exec_us.begin(), exec_us.end());
            const double st = *std::min_element(stateless_us.begin(), stateless_us.end());
            char note[64];
            report.add({group, "raw cublasLtMatmul", "us/call", r, 0, "descriptors and algorithm kept"});
            std::snprintf(note, sizeof note, "delta %+.2f us (target <= +0.5)", e - r);
            report.add({group, "Matmul.execute", "us/call", e, r / e, note});
            std::snprintf(note, sizeof note, "delta %+.2f us (target <= +1.0)", st - r);
            report.add({group, "matmul() cache hit", "us/call", st, r / st, note});
        }
    }
    return 0;
}
