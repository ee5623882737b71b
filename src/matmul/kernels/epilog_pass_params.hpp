// SPDX-License-Identifier: Apache-2.0
// The parameters of the elementwise pass over D (kernels/epilog_pass.cu), read by the host compiler
// (src/matmul/epilog_pass.cpp) and by NVRTC alike: one definition, plain types only.
#pragma once

namespace gpumath::kernels {

/// D as cuBLASLt wrote it: `batch` products of `outer` columns of `inner` elements along the
/// unit-stride dimension, `ld` apart, products `batch_stride` apart (in elements). The bias, when
/// the pass adds one, steps `bias_stride` along its vector and `bias_batch_stride` between
/// products. `user_info` is passed through to the user's function untouched.
struct EpilogPassParams {
    void* d = nullptr;
    long long inner = 0;
    long long outer = 0;
    long long ld = 0;
    long long batch = 0;
    long long batch_stride = 0;
    const void* bias = nullptr;
    long long bias_stride = 0;
    long long bias_batch_stride = 0;
    void* user_info = nullptr;
};

}  // namespace gpumath::kernels
