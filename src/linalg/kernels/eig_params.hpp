// SPDX-License-Identifier: Apache-2.0
// The parameters of the eigenvector kernel (kernels/eig_vectors.cu), read by the host compiler
// (src/linalg/eig_kernels.cpp) and by NVRTC alike: one definition, plain types only.
#pragma once

#include "linalg_params.hpp"

namespace gpumath::kernels {

/// unpack_vectors: the complex right eigenvectors of real matrices from LAPACK's real packing.
/// Matrix b's packed vectors: element (i, j) at `packed[b * packed_batch + j * packed_ld + i]`
/// (real); its eigenvalues: the complex w(j) at `values[b * values_batch + j]` (pairs of reals).
/// `out` addresses complex elements (its strides count complex elements).
struct UnpackParams {
    const void* packed = nullptr;
    long long packed_ld = 0;
    long long packed_batch = 0;
    const void* values = nullptr;
    long long values_batch = 0;
    MatrixBatchParams out;
};

}  // namespace gpumath::kernels
