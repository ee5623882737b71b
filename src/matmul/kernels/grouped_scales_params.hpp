// SPDX-License-Identifier: Apache-2.0
// The parameter of the grouped FP8 scale kernels (kernels/grouped_scales.cu), read by the host
// compiler (src/matmul/grouped_scales.cpp) and by NVRTC alike: one definition, plain types only.
#pragma once

namespace gpumath::kernels {

/// By value. Strides in elements; a null scale reads as 1. Slot floats of group g: [16 g] a,
/// [16 g + 4] b, [16 g + 8] d, [16 g + 12] amax.
struct ScaleSlotParams {
    float* slots = nullptr;
    const float* a = nullptr;
    const float* b = nullptr;
    const float* d = nullptr;
    float* amax = nullptr;
    long long a_stride = 0, b_stride = 0, d_stride = 0, amax_stride = 0;
    long long groups = 0;
};

}  // namespace gpumath::kernels
