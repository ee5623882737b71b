// SPDX-License-Identifier: Apache-2.0
// Which FP8 scale-mode combinations cuBLASLt accepts on this GPU: for each pair of A/B scale modes,
// result type, epilogue, K and batch count, whether the heuristic offers an algorithm and whether
// cublasLtMatmul then runs. Raw cuBLASLt only (no gpumath), so the table is the library's own
// behaviour; docs/matmul.md's rules for ScaleMode come from its output on an H200.
//
// Usage: probe_fp8_scale_modes [--quick]. Prints one line per combination.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <utility>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "probe_common.hpp"

namespace {

using probe::ok;

struct Mode {
    cublasLtMatmulMatrixScale_t value;
    const char* name;
};

constexpr Mode scalar{CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F, "tensor"};
constexpr Mode outer{CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F, "outer_vector"};
constexpr Mode vec128{CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F, "block_1x128"};
constexpr Mode blk128{CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, "block_128x128"};

struct Epi {
    cublasLtEpilogue_t value;
    const char* name;
    bool bias, aux;
};

const char* type_name(cudaDataType_t t) {
    switch (t) {
        case CUDA_R_16BF:
            return "bf16";
        case CUDA_R_16F:
            return "f16";
        case CUDA_R_32F:
            return "f32";
        case CUDA_R_8F_E4M3:
            return "e4m3";
        default:
            return "?";
    }
}

}  // namespace

int main(int argc, char** argv) {
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    cublasLtHandle_t lt = nullptr;
    if (const int rc = probe::open("probe_fp8_scale_modes", &lt); rc >= 0) return rc;

    const std::size_t big = std::size_t(64) << 20;
    void *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr, *sa = nullptr, *sb = nullptr, *bias = nullptr,
         *aux = nullptr, *ws = nullptr, *amax = nullptr, *sd = nullptr;
    for (void** p : {&a, &b, &c, &d, &sa, &sb, &bias, &aux, &ws}) {
        cudaMalloc(p, big);
        cudaMemset(*p, 0, big);
    }
    cudaMalloc(&amax, 256);
    cudaMalloc(&sd, 256);
    cudaMemset(amax, 0, 256);
    cudaMemset(sd, 0, 256);
    // Scales of 1.0 (0x3f800000) everywhere.
    {
        std::vector<float> ones(big / 4, 1.0f);
        cudaMemcpy(sa, ones.data(), big, cudaMemcpyHostToDevice);
        cudaMemcpy(sb, ones.data(), big, cudaMemcpyHostToDevice);
        cudaMemcpy(sd, ones.data(), 256, cudaMemcpyHostToDevice);
    }

    // Mixing outer_vector with a block mode aborts the process inside cuBLASLt 13.1's heuristic
    // (H200), so those pairs are not probed; gpumath rejects them before any cuBLASLt call.
    const Mode pairs[][2] = {{scalar, scalar}, {outer, outer},   {vec128, vec128}, {vec128, blk128},
                             {blk128, vec128}, {blk128, blk128}, {scalar, outer},  {outer, scalar}};
    const cudaDataType_t results[] = {CUDA_R_16BF, CUDA_R_16F, CUDA_R_32F, CUDA_R_8F_E4M3};
    const Epi epis[] = {{CUBLASLT_EPILOGUE_DEFAULT, "none", false, false},
                        {CUBLASLT_EPILOGUE_RELU, "relu", false, false},
                        {CUBLASLT_EPILOGUE_GELU, "gelu", false, false},
                        {CUBLASLT_EPILOGUE_BIAS, "bias", true, false},
                        {CUBLASLT_EPILOGUE_RELU_BIAS, "relu_bias", true, false},
                        {CUBLASLT_EPILOGUE_GELU_BIAS, "gelu_bias", true, false},
                        {CUBLASLT_EPILOGUE_RELU_AUX, "relu_aux", false, true},
                        {CUBLASLT_EPILOGUE_RELU_AUX_BIAS, "relu_aux_bias", true, true},
                        {CUBLASLT_EPILOGUE_GELU_AUX, "gelu_aux", false, true},
                        {CUBLASLT_EPILOGUE_GELU_AUX_BIAS, "gelu_aux_bias", true, true}};
    struct Shape {
        int m, n, k, batch;
        bool c;
    };
    std::vector<Shape> shapes = {{256, 256, 256, 1, false}, {256, 256, 272, 1, false}, {256, 256, 256, 2, false},
                                 {256, 256, 256, 1, true},  {272, 256, 256, 1, false}, {256, 272, 256, 1, false},
                                 {208, 144, 256, 1, false}};
    if (quick) shapes.resize(2);

    for (const Shape& sh : shapes)
        for (const auto& pair : pairs)
            for (cudaDataType_t dt : results)
                for (const Epi& e : epis) {
                    if (quick && e.value != CUBLASLT_EPILOGUE_DEFAULT && e.value != CUBLASLT_EPILOGUE_BIAS) continue;
                    if (dt == CUDA_R_8F_E4M3 && e.aux) continue;
                    if ((sh.batch > 1 || sh.c || sh.m != 256 || sh.n != 256 || sh.k != 256) &&
                        e.value != CUBLASLT_EPILOGUE_DEFAULT && e.value != CUBLASLT_EPILOGUE_BIAS)
                        continue;
                    cublasLtMatmulDesc_t desc = nullptr;
                    cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
                    const cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
                    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t);
                    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof n);
                    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &pair[0].value,
                                                   sizeof pair[0].value);
                    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &pair[1].value,
                                                   sizeof pair[1].value);
                    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa);
                    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb);
                    if (dt == CUDA_R_8F_E4M3) {
                        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &sd, sizeof sd);
                        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &amax, sizeof amax);
                    }
                    if (e.value != CUBLASLT_EPILOGUE_DEFAULT)
                        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e.value, sizeof e.value);
                    if (e.bias) {
                        const cudaDataType_t bt = dt == CUDA_R_16F ? CUDA_R_16F : CUDA_R_16BF;
                        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt);
                        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
                    }
                    if (e.aux) {
                        const std::int64_t ld = e.value == CUBLASLT_EPILOGUE_RELU_AUX ? sh.m * 8 : sh.m;
                        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux,
                                                       sizeof aux);
                        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld);
                    }
                    cublasLtMatrixLayout_t la, lb, lc, ld;
                    cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, sh.k, sh.m, sh.k);
                    cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, sh.k, sh.n, sh.k);
                    const cudaDataType_t ct = dt == CUDA_R_8F_E4M3 ? CUDA_R_16BF : dt;
                    cublasLtMatrixLayoutCreate(&lc, ct, sh.m, sh.n, sh.m);
                    cublasLtMatrixLayoutCreate(&ld, dt, sh.m, sh.n, sh.m);
                    if (sh.batch > 1) {
                        const std::int32_t count = sh.batch;
                        const std::int64_t sa_ = std::int64_t(sh.k) * sh.m, sb_ = std::int64_t(sh.k) * sh.n,
                                           sd_ = std::int64_t(sh.m) * sh.n;
                        for (auto [l, s] :
                             {std::pair{la, sa_}, std::pair{lb, sb_}, std::pair{lc, sd_}, std::pair{ld, sd_}}) {
                            cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                             sizeof count);
                            cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &s,
                                                             sizeof s);
                        }
                    }
                    cublasLtMatmulPreference_t pref = nullptr;
                    cublasLtMatmulPreferenceCreate(&pref);
                    const std::uint64_t wsb = 32u << 20;
                    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb,
                                                         sizeof wsb);
                    cublasLtMatmulHeuristicResult_t res[8] = {};
                    int found = 0;
                    const cublasStatus_t hs =
                        cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, ld, pref, 8, res, &found);
                    std::string run = "-";
                    if (ok(hs) && found > 0) {
                        const float alpha = 1.0f, beta = sh.c ? 1.0f : 0.0f;
                        const cublasStatus_t rs =
                            cublasLtMatmul(lt, desc, &alpha, a, la, b, lb, &beta, sh.c ? c : d, lc, d, ld, &res[0].algo,
                                           ws, res[0].workspaceSize, nullptr);
                        const cudaError_t ce = cudaDeviceSynchronize();
                        run = ok(rs) && ce == cudaSuccess
                                  ? "ok"
                                  : ("status " + std::to_string(int(rs)) + "/" + std::to_string(int(ce)));
                    }
                    std::printf(
                        "%-13s %-13s d=%-4s epi=%-13s M=%d N=%d K=%d batch=%d c=%d : heuristic %s (%d) run %s\n",
                        pair[0].name, pair[1].name, type_name(dt), e.name, sh.m, sh.n, sh.k, sh.batch, int(sh.c),
                        ok(hs) ? "ok" : "fail", found, run.c_str());
                    cublasLtMatmulPreferenceDestroy(pref);
                    cublasLtMatrixLayoutDestroy(la);
                    cublasLtMatrixLayoutDestroy(lb);
                    cublasLtMatrixLayoutDestroy(lc);
                    cublasLtMatrixLayoutDestroy(ld);
                    cublasLtMatmulDescDestroy(desc);
                }
    cublasLtDestroy(lt);
    return 0;
}
