// SPDX-License-Identifier: Apache-2.0
// The complex eigenvectors of real matrices from the real packing cuSOLVER's Xgeev (like LAPACK's
// geev) writes: a real eigenvalue w(j) owns the real column V(:, j); a complex conjugate pair
// w(j), w(j + 1) (positive imaginary part first) shares V(:, j) and V(:, j + 1) as the real and
// imaginary parts of v(j), v(j + 1) = conj(v(j)). Instantiated per real type (unpack_vectors<float>,
// unpack_vectors<double>).
#include "eig_params.hpp"

namespace gpumath::kernels {

/// One thread per element of a matrix (x), matrices over y (grid-stride). Which columns an element
/// reads follows from the sign of its own eigenvalue's imaginary part alone, so every element is
/// independent.
template <class Real>
__global__ void __launch_bounds__(256) unpack_vectors(UnpackParams p) {
    const long long n = p.out.n;
    const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n * n) return;
    const long long i = e % n, j = e / n;
    for (long long b = blockIdx.y; b < p.out.count; b += gridDim.y) {
        const Real* packed = static_cast<const Real*>(p.packed) + b * p.packed_batch;
        const Real im = static_cast<const Real*>(p.values)[2 * (b * p.values_batch + j) + 1];
        Real re_part = packed[j * p.packed_ld + i], im_part = Real(0);
        if (im > Real(0) && j + 1 < n) {
            im_part = packed[(j + 1) * p.packed_ld + i];
        } else if (im < Real(0) && j > 0) {
            re_part = packed[(j - 1) * p.packed_ld + i];
            im_part = -packed[j * p.packed_ld + i];
        }
        Real* at =
            static_cast<Real*>(p.out.data) + 2 * (b * p.out.batch_stride + i * p.out.row_stride + j * p.out.col_stride);
        at[0] = re_part;
        at[1] = im_part;
    }
}

}  // namespace gpumath::kernels
