// SPDX-License-Identifier: Apache-2.0
// The cublas grouped backend's pointer kernel: the A, B and D pointers of up to 128 groups, passed
// by value, written into the device arrays cublasGemmGroupedBatchedEx reads. A thread per group.
#include "grouped_pointers_params.hpp"

extern "C" __global__ void gm_write_pointers(const gpumath::kernels::PointerChunk p) {
    const int i = threadIdx.x;
    if (i < p.count) {
        p.a_out[i] = const_cast<void*>(p.a[i]);
        p.b_out[i] = const_cast<void*>(p.b[i]);
        p.d_out[i] = p.d[i];
    }
}
