// SPDX-License-Identifier: Apache-2.0
// The parameter of the cublas grouped backend's pointer kernel (kernels/grouped_pointers.cu), read
// by the host compiler (src/matmul/grouped_cublas.cpp) and by NVRTC alike.
#pragma once

namespace gpumath::kernels {

/// Groups one cublasGemmGroupedBatchedEx call takes (the pointer kernel's block size).
constexpr int pointer_chunk_groups = 128;

/// The pointers of up to pointer_chunk_groups groups, by value: the kernel copies them into the
/// three device arrays cuBLAS reads.
struct PointerChunk {
    void** a_out = nullptr;
    void** b_out = nullptr;
    void** d_out = nullptr;
    long long count = 0;
    const void* a[pointer_chunk_groups] = {};
    const void* b[pointer_chunk_groups] = {};
    void* d[pointer_chunk_groups] = {};
};

}  // namespace gpumath::kernels
