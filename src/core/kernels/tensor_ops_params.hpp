// SPDX-License-Identifier: Apache-2.0
// The parameters of the tensor kernels (tensor_ops.cu), read by the host compiler
// (src/core/tensor_ops.cpp) and by NVRTC alike: one definition, plain types only.
#pragma once

namespace gpumath::kernels {

/// The most dimensions an elementwise index space has (TensorLayout's rank limit).
constexpr int max_rank = 8;

/// One elementwise pass: fill (no input), cast or copy. The flat kernels read `count` contiguous
/// elements; the strided ones walk the index space of `rank` extents, with each operand's strides
/// in elements.
struct ElementwiseParams {
    const void* in;
    void* out;
    long long count;
    int rank;
    int unused;
    long long shape[max_rank];
    long long in_strides[max_rank];
    long long out_strides[max_rank];
    /// The value a fill writes, as a complex number (real types take `re`).
    double value_re;
    double value_im;
};

/// The side of the square tiles the transpose moves: 64 (rows of 64 elements on both sides keep more
/// of each DRAM page per tile), 32 for input elements of 16 bytes (or more) so that a tile fits the
/// 48 KiB of static shared memory.
constexpr int transpose_tile_side = 64;
constexpr int transpose_tile_side_16 = 32;

/// A batch of matrix transposes: out[b][r][c] = in[b][c][r] for `rows` x `cols` matrices, with the
/// input's unit stride along r and the output's along c, so that each side moves whole lines.
struct TransposeParams {
    const void* in;
    void* out;
    long long batches;
    long long rows;
    long long cols;
    long long in_batch_stride;
    long long in_col_stride;  // from in[b][c][r] to in[b][c + 1][r]
    long long out_batch_stride;
    long long out_row_stride;  // from out[b][r][c] to out[b][r + 1][c]
};

/// The random distributions (random_flat's D). random_uniform_f32 is uniform computed in f32 for
/// f16, bf16 and f32 outputs: the host picks it only for ranges where it gives the same values as
/// random_uniform's f64 arithmetic (see uniform_exact_in_f32 in tensor_ops.cpp).
enum RandomDistribution { random_uniform = 0, random_normal = 1, random_lognormal = 2, random_uniform_f32 = 3 };

/// One random pass: `count` contiguous elements, values `offset` to `offset + count - 1` of the
/// Philox4x32-10 sequence keyed by `seed`. Uniform values map to a + (b - a) u, normal ones to
/// a + b z and log-normal ones to exp(a + b z).
struct RandomParams {
    void* out;
    long long count;
    unsigned long long seed;
    unsigned long long offset;
    double a;
    double b;
};

}  // namespace gpumath::kernels
