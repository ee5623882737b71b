// SPDX-License-Identifier: Apache-2.0
// The parameters of the FP8 quantization kernels (kernels/quantize.cu), read by the host compiler
// (src/matmul/quantize_kernels.cpp) and by NVRTC alike: one definition, plain types only.
#pragma once

namespace gpumath::kernels {

/// The one argument of every quantization kernel: a tensor (..., R, C) seen as B batches of R rows
/// of C elements, its row and batch strides in elements, and the work items of the launch. For
/// dequantize_fp8 `x` is the FP8 data and `data` the result.
struct QuantizeParams {
    const void* x = nullptr;
    void* data = nullptr;
    float* scales = nullptr;
    float* amax = nullptr;
    long long rows = 0;          // R
    long long cols = 0;          // C
    long long blocks = 0;        // L = ceil(C / 128)
    long long blocks4 = 0;       // L rounded up to a multiple of 4
    long long row_blocks = 0;    // ceil(R / 128)
    long long batches = 0;       // B
    long long row_stride = 0;    // of x, in elements
    long long batch_stride = 0;  // of x, in elements
    long long items = 0;         // work items of the launch (see each kernel)
};

}  // namespace gpumath::kernels
