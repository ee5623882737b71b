// SPDX-License-Identifier: Apache-2.0
// The per-group FP8 scales of a grouped product: spread each group's scales into its 16-byte slot
// (cuBLASLt reads scales from 16-byte aligned addresses), and gather the amax values back. A thread
// per group, grid-stride.
#include "grouped_scales_params.hpp"

using gpumath::kernels::ScaleSlotParams;

extern "C" __global__ void gm_spread_scales(const ScaleSlotParams p) {
    for (long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x; g < p.groups;
         g += (long long)gridDim.x * blockDim.x) {
        float* s = p.slots + 16 * g;
        s[0] = p.a ? p.a[g * p.a_stride] : 1.0f;
        s[4] = p.b ? p.b[g * p.b_stride] : 1.0f;
        s[8] = p.d ? p.d[g * p.d_stride] : 1.0f;
        s[12] = 0.0f;  // a group of no rows runs no product: its amax is 0
    }
}

// Without slots (a call of no products): every group's amax is 0.
extern "C" __global__ void gm_gather_amax(const ScaleSlotParams p) {
    for (long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x; g < p.groups;
         g += (long long)gridDim.x * blockDim.x)
        p.amax[g * p.amax_stride] = p.slots ? p.slots[16 * g + 12] : 0.0f;
}
