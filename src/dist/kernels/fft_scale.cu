// SPDX-License-Identifier: Apache-2.0
// The normalization scale of multi-GPU FFTs: every real of a device's part multiplied by the scale,
// grid-stride, one kernel per precision (src/dist/fft_scale.cpp launches them).

extern "C" __global__ void gm_dist_scale_f32(float* p, unsigned long long n, float s) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        p[i] *= s;
}

extern "C" __global__ void gm_dist_scale_f64(double* p, unsigned long long n, double s) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        p[i] *= s;
}
