// SPDX-License-Identifier: Apache-2.0
// The parameters of the grouped GEMM kernels (kernels/grouped_gemm.cu), read by the host compiler
// (src/matmul/grouped_kernel*.cpp) and by NVRTC alike: one definition, plain types only.
#pragma once

namespace gpumath::kernels {

/// The kernels' first argument, by value. Strides in elements; `sizes` holds `groups` i32 values
/// in device memory (unread by a program that takes the sizes in its parameters).
struct GroupedKernelParams {
    const void* a = nullptr;
    const void* b = nullptr;
    void* d = nullptr;
    const void* bias = nullptr;
    const int* sizes = nullptr;
    long long groups = 0;
    long long max_rows = 0;  // the host-side bound: rows at or past it are never computed
    long long n = 0, k = 0;
    long long a_row = 0, a_col = 0;
    long long b_group = 0, b_row = 0, b_col = 0;
    long long d_row = 0, d_col = 0;
    long long bias_group = 0, bias_col = 0;
    float alpha = 1.0f;
    int reserved = 0;  // the struct's tail, so that no byte of the argument is padding
};

/// Groups whose sizes a launch can carry in its parameters (the `kernel` backend's limit). An
/// enumerator: NVRTC emits a variable for a constexpr one.
enum : int { grouped_inline_groups = 512 };

/// The kernels' last argument in a program with GM_INLINE_SIZES: the host's group sizes by value
/// (entries past the call's groups unread). 2 KiB, within the 4 KiB every CUDA driver takes.
struct GroupedInlineSizes {
    int v[grouped_inline_groups] = {};
};

/// A CUtensorMap as the Hopper kernel takes it: by value, a __grid_constant__ parameter, whose
/// address is what the tensor memory accelerator reads.
struct alignas(64) GroupedTensorMap {
    unsigned long long v[16];
};

}  // namespace gpumath::kernels
