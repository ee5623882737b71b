// SPDX-License-Identifier: Apache-2.0
// Whether cuBLASLt can add a bias per row of a row-major D inside its own epilog: the product
// D (M, N) row-major = x (M, K) row-major times Wᵀ (W (N, K) row-major), described to cuBLASLt
// without the usual operand swap, with the matrix-layout order (CUBLASLT_ORDER_COL or _ROW) of
// A, B and C/D chosen separately, so that D's rows are cuBLASLt's rows and the BIAS epilog runs
// along them. For each combination: whether the heuristic offers an algorithm, whether the product
// runs, whether its values (64 sampled elements) match x Wᵀ + bias per row, and its GPU time
// against the swapped product with a bias per column (what gpumath fuses today). Raw cuBLASLt
// only, bf16 in and out, f32 compute.
//
// Two more forms keep the swap and give cuBLASLt the bias as C (beta = 1, no epilog) with a leading
// dimension of 0, so that C broadcasts without being written out: C (N x M) with CUBLASLT_ORDER_ROW
// and ld 0 reads element (j, i) at i, a bias per row of D; with CUBLASLT_ORDER_COL and ld 0 at j, a
// bias per column (the orientation the BIAS epilog already fuses, for comparison).
//
// Build by hand (not part of the CMake build), one command:
//   g++ -std=c++20 -O2 -I/usr/local/cuda/include -L/usr/local/cuda/lib64
//       bench/probe_bias_orientation.cpp -lcublasLt -lcudart -o probe_bias_orientation
// Usage: probe_bias_orientation. Prints one line per combination and shape.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "probe_common.hpp"

namespace {

using probe::ok;

std::uint16_t to_bf16(float f) {
    std::uint32_t u = 0;
    std::memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return std::uint16_t(u >> 16);
}

float from_bf16(std::uint16_t h) {
    const std::uint32_t u = std::uint32_t(h) << 16;
    float f = 0;
    std::memcpy(&f, &u, 4);
    return f;
}

struct Shape {
    int m, n, k;
};

/// One way of describing D = x Wᵀ (+ bias) to cuBLASLt.
struct Form {
    const char* name;
    bool swapped;  // D_lt = Dᵀ (N x M column-major) = W xᵀ: the bias runs along N
    cublasLtOrder_t a, b, d;
    /// Swapped forms only: the bias comes as C with this order and ld 0, beta = 1, no epilog.
    bool bias_as_c = false;
    cublasLtOrder_t c = CUBLASLT_ORDER_COL;
    bool per_row = false;  // which bias the form adds (the swapped BIAS epilog: per column)
};

struct Product {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr, ld = nullptr;
    const void *pa = nullptr, *pb = nullptr;
    const void* c = nullptr;  // C when it is not D
    float beta = 0.0f;
    cublasLtMatmulHeuristicResult_t algo{};
    int found = 0;
    cublasStatus_t heuristic = CUBLAS_STATUS_SUCCESS;

    void destroy() {
        for (auto* l : {la, lb, lc, ld})
            if (l != nullptr) cublasLtMatrixLayoutDestroy(l);
        if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
    }
};

cublasLtMatrixLayout_t layout(int rows, int cols, cublasLtOrder_t order, bool broadcast = false) {
    cublasLtMatrixLayout_t l = nullptr;
    const std::int64_t ld = broadcast ? 0 : order == CUBLASLT_ORDER_ROW ? cols : rows;
    cublasLtMatrixLayoutCreate(&l, CUDA_R_16BF, std::uint64_t(rows), std::uint64_t(cols), ld);
    cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof order);
    return l;
}

Product make(cublasLtHandle_t lt, const Form& f, const Shape& s, const void* x, const void* w, const void* bias,
             std::uint64_t ws) {
    Product p;
    cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (f.bias_as_c) {
        p.c = bias;
        p.beta = 1.0f;
    } else {
        const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
        const cudaDataType_t bt = CUDA_R_16BF;
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt);
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
    }
    cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
    if (f.swapped) {
        // D_lt (N x M, col) = W (N x K: W's row-major storage is K x N col-major, transposed) * xᵀ.
        ta = CUBLAS_OP_T;
        tb = CUBLAS_OP_N;
        p.la = layout(s.k, s.n, CUBLASLT_ORDER_COL);
        p.lb = layout(s.k, s.m, CUBLASLT_ORDER_COL);
        p.lc = f.bias_as_c ? layout(s.n, s.m, f.c, true) : layout(s.n, s.m, CUBLASLT_ORDER_COL);
        p.ld = layout(s.n, s.m, CUBLASLT_ORDER_COL);
        p.pa = w;
        p.pb = x;
    } else {
        // D (M x N) = x (M x K) * Wᵀ (K x N). x row-major is (M x K, ROW) or (K x M, COL) transposed;
        // Wᵀ is (K x N, COL) or W (N x K, ROW) transposed.
        if (f.a == CUBLASLT_ORDER_ROW) {
            p.la = layout(s.m, s.k, CUBLASLT_ORDER_ROW);
        } else {
            p.la = layout(s.k, s.m, CUBLASLT_ORDER_COL);
            ta = CUBLAS_OP_T;
        }
        if (f.b == CUBLASLT_ORDER_ROW) {
            p.lb = layout(s.n, s.k, CUBLASLT_ORDER_ROW);
            tb = CUBLAS_OP_T;
        } else {
            p.lb = layout(s.k, s.n, CUBLASLT_ORDER_COL);
        }
        p.lc = layout(s.m, s.n, f.d);
        p.ld = layout(s.m, s.n, f.d);
        p.pa = x;
        p.pb = w;
    }
    cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    cublasLtMatmulPreference_t pref = nullptr;
    cublasLtMatmulPreferenceCreate(&pref);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    p.heuristic = cublasLtMatmulAlgoGetHeuristic(lt, p.desc, p.la, p.lb, p.lc, p.ld, pref, 1, &p.algo, &p.found);
    cublasLtMatmulPreferenceDestroy(pref);
    return p;
}

cublasStatus_t run(cublasLtHandle_t lt, const Product& p, void* d, void* ws, cudaStream_t s) {
    const float alpha = 1.0f;
    return cublasLtMatmul(lt, p.desc, &alpha, p.pa, p.la, p.pb, p.lb, &p.beta, p.c != nullptr ? p.c : d, p.lc, d, p.ld,
                          &p.algo.algo, ws, p.algo.workspaceSize, s);
}

float median_ms(cublasLtHandle_t lt, const Product& p, void* d, void* ws, cudaStream_t s, int reps) {
    cudaEvent_t a = nullptr, b = nullptr;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    std::vector<float> t;
    for (int i = 0; i < reps; ++i) {
        cudaEventRecord(a, s);
        run(lt, p, d, ws, s);
        cudaEventRecord(b, s);
        cudaEventSynchronize(b);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        t.push_back(ms);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

}  // namespace

int main() {
    cublasLtHandle_t lt = nullptr;
    if (const int rc = probe::open("probe_bias_orientation", &lt); rc >= 0) return rc;
    cudaStream_t stream = nullptr;
    cudaStreamCreate(&stream);
    const std::uint64_t ws_bytes = 32u << 20;
    void* ws = nullptr;
    cudaMalloc(&ws, ws_bytes);

    const Form forms[] = {
        {"swapped (bias per column)", true, CUBLASLT_ORDER_COL, CUBLASLT_ORDER_COL, CUBLASLT_ORDER_COL},
        {"A col(T) B col D row", false, CUBLASLT_ORDER_COL, CUBLASLT_ORDER_COL, CUBLASLT_ORDER_ROW},
        {"A row B col D row", false, CUBLASLT_ORDER_ROW, CUBLASLT_ORDER_COL, CUBLASLT_ORDER_ROW},
        {"A col(T) B row(T) D row", false, CUBLASLT_ORDER_COL, CUBLASLT_ORDER_ROW, CUBLASLT_ORDER_ROW},
        {"A row B row(T) D row", false, CUBLASLT_ORDER_ROW, CUBLASLT_ORDER_ROW, CUBLASLT_ORDER_ROW},
        {"swapped, C row ld 0 (per row)", true, CUBLASLT_ORDER_COL, CUBLASLT_ORDER_COL, CUBLASLT_ORDER_COL, true,
         CUBLASLT_ORDER_ROW, true},
        {"swapped, C col ld 0 (per col)", true, CUBLASLT_ORDER_COL, CUBLASLT_ORDER_COL, CUBLASLT_ORDER_COL, true,
         CUBLASLT_ORDER_COL, false},
    };
    const Shape shapes[] = {{256, 192, 128}, {16, 8192, 8192}, {256, 8192, 8192}, {8192, 8192, 8192}};
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-0.5f, 0.5f);
    for (const Shape& s : shapes) {
        const std::size_t nx = std::size_t(s.m) * s.k, nw = std::size_t(s.n) * s.k, nd = std::size_t(s.m) * s.n;
        std::vector<std::uint16_t> hx(nx), hw(nw), hbr(std::size_t(s.m)), hbc(std::size_t(s.n));
        for (auto* v : {&hx, &hw, &hbr, &hbc})
            for (auto& e : *v) e = to_bf16(u(rng));
        void *x = nullptr, *w = nullptr, *br = nullptr, *bc = nullptr, *d = nullptr;
        cudaMalloc(&x, nx * 2);
        cudaMalloc(&w, nw * 2);
        cudaMalloc(&br, hbr.size() * 2);
        cudaMalloc(&bc, hbc.size() * 2);
        cudaMalloc(&d, nd * 2);
        cudaMemcpy(x, hx.data(), nx * 2, cudaMemcpyHostToDevice);
        cudaMemcpy(w, hw.data(), nw * 2, cudaMemcpyHostToDevice);
        cudaMemcpy(br, hbr.data(), hbr.size() * 2, cudaMemcpyHostToDevice);
        cudaMemcpy(bc, hbc.data(), hbc.size() * 2, cudaMemcpyHostToDevice);
        const int reps = s.m == 8192 ? 10 : 50;
        float base = 0;
        for (const Form& f : forms) {
            const bool per_row = f.swapped ? f.per_row : true;
            Product p = make(lt, f, s, x, w, per_row ? br : bc, ws_bytes);
            std::string verdict;
            if (!ok(p.heuristic) || p.found == 0) {
                verdict =
                    "heuristic " + std::to_string(int(p.heuristic)) + ", " + std::to_string(p.found) + " algorithms";
            } else {
                cudaMemset(d, 0xff, nd * 2);
                const cublasStatus_t rs = run(lt, p, d, ws, stream);
                const cudaError_t ce = cudaStreamSynchronize(stream);
                if (!ok(rs) || ce != cudaSuccess) {
                    verdict = "run status " + std::to_string(int(rs)) + " / " + std::to_string(int(ce));
                    (void)cudaGetLastError();
                } else {
                    std::vector<std::uint16_t> hd(nd);
                    cudaMemcpy(hd.data(), d, nd * 2, cudaMemcpyDeviceToHost);
                    double worst_row = 0, worst_col = 0;
                    std::mt19937 pick(11);
                    for (int t = 0; t < 64; ++t) {
                        const int i = int(pick() % std::uint32_t(s.m)), j = int(pick() % std::uint32_t(s.n));
                        double dot = 0, mag = 0;
                        for (int kk = 0; kk < s.k; ++kk) {
                            const double v = double(from_bf16(hx[std::size_t(i) * s.k + kk])) *
                                             from_bf16(hw[std::size_t(j) * s.k + kk]);
                            dot += v;
                            mag += std::fabs(v);
                        }
                        const double got = from_bf16(hd[std::size_t(i) * s.n + j]);
                        const double tol = 1e-2 * (mag + 1.0);
                        worst_row = std::max(worst_row, std::fabs(got - dot - from_bf16(hbr[std::size_t(i)])) / tol);
                        worst_col = std::max(worst_col, std::fabs(got - dot - from_bf16(hbc[std::size_t(j)])) / tol);
                    }
                    const float ms = median_ms(lt, p, d, ws, stream, reps);
                    if (f.swapped && !f.bias_as_c) base = ms;
                    char line[256];
                    std::snprintf(line, sizeof line,
                                  "runs; error/tolerance as bias per row %.3f, per column %.3f; %.4f ms (%.1f "
                                  "TFLOP/s), swapped / this %.3f",
                                  worst_row, worst_col, ms, 2.0 * s.m * s.n * s.k / (ms * 1e9), base / ms);
                    verdict = line;
                }
            }
            std::printf("M=%d N=%d K=%d %-30s: %s\n", s.m, s.n, s.k, f.name, verdict.c_str());
            std::fflush(stdout);
            p.destroy();
        }
        for (void* q : {x, w, br, bc, d}) cudaFree(q);
    }
    cudaFree(ws);
    cudaStreamDestroy(stream);
    cublasLtDestroy(lt);
    return 0;
}
