// SPDX-License-Identifier: Apache-2.0
// The parameters of the FFT pass kernel (fft_pass.cu), read by the host compiler (src/fft) and by
// NVRTC alike: one definition, plain types only.
#pragma once

namespace gpumath::kernels {

/// Most dimensions of a pass's index space (TensorLayout's rank limit).
constexpr int fft_pass_max_rank = 8;

/// The index space and strides of an elementwise pass (gather, scatter or scale), with extent-1
/// dimensions dropped and nesting dimensions merged: `total` elements over `rank` extents, the
/// outermost first, each read at the source's and written at the destination's strides (in
/// elements).
struct FftPassParams {
    int rank = 0;
    long long extent[fft_pass_max_rank] = {};
    long long src_stride[fft_pass_max_rank] = {};
    long long dst_stride[fft_pass_max_rank] = {};
    long long total = 0;
};

}  // namespace gpumath::kernels
