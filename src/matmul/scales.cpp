// SPDX-License-Identifier: Apache-2.0
// The finer FP8 scale modes: scale tensor layouts (cuBLASLt's, stated in the user's orientation),
// their validation, and the arrangement they need. The rules on pairs, results, epilogs and batches
// are cuBLASLt 13.1's on an H200 as bench/probe_fp8_scale_modes measures them (docs/matmul.md).
#include "matmul/scales.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <string>

#include "detail/enum_check.hpp"
#include "matmul/checks.hpp"
#include "matmul/shapes.hpp"

namespace gpumath::detail {
namespace {

constexpr std::int64_t block = 128;

bool is_block(ScaleMode m) noexcept { return m == ScaleMode::block_1x128 || m == ScaleMode::block_128x128; }

/// The pairs (a, b) cuBLASLt offers algorithms for, in the user's terms (the swap exchanges a and
/// b, and the set is symmetric).
bool pair_supported(ScaleMode a, ScaleMode b) noexcept {
    if (a == ScaleMode::outer_vector || b == ScaleMode::outer_vector) return a == b;
    return is_block(a) && is_block(b) && !(a == ScaleMode::block_128x128 && b == ScaleMode::block_128x128);
}

/// Epilogs cuBLASLt runs with every supported pair of finer modes and every result type.
bool epilog_supported(Epilog e) noexcept {
    switch (e) {
        case Epilog::none:
        case Epilog::relu:
        case Epilog::gelu:
        case Epilog::bias:
        case Epilog::relu_bias:
        case Epilog::gelu_bias:
        case Epilog::relu_aux:
            return true;
        default:
            return false;
    }
}

/// The scale tensor of one operand checked: dtype, shape, strides of the matrix (or vector) part,
/// a single batch stride over the problem's batch, 16-byte alignment. Returns the batch stride.
std::int64_t check_scale_tensor(ScaleMode mode, const TensorLayout& given, const TensorLayout& operand, bool is_b,
                                std::uint16_t align, const MatmulProblem& P) {
    const char* api = P.api;
    const char* name = is_b ? "scales.b_tensor" : "scales.a_tensor";
    const TensorLayout want = expected_scale_layout(mode, operand, is_b);
    const int matrix_rank = mode == ScaleMode::outer_vector ? 1 : 2;
    bool ok = given.dtype() == DataType::f32 && given.rank() == want.rank();
    for (int i = 0; ok && i < want.rank(); ++i) ok = given.shape(i) == want.shape(i);
    for (int i = want.rank() - matrix_rank; ok && i < want.rank(); ++i)
        ok = given.shape(i) == 1 || given.stride(i) == want.stride(i);
    if (!ok)
        invalid(api,
                "{}: {} given; {} scales of {} {} are f32 {} with strides {} (batch dimensions as {}'s; "
                "quantize_fp8 writes this layout)",
                name, to_string(given), to_string(mode), is_b ? "b" : "a", shape_text(operand), shape_text(want),
                strides_text(want), is_b ? "b" : "a");
    if (align < 16)
        invalid(api, "{}: pointer is {}-byte aligned; cuBLASLt reads scale tensors from 16-byte aligned addresses",
                name, align);
    const auto bs = single_batch_stride(given, P.shape.batch_dims, matrix_rank);
    if (!bs)
        invalid(api, "{}: batch strides {} cannot be expressed as one strided batch over {}; make them dense", name,
                strides_text(given), to_string(P.shape.batch_dims.span()));
    return *bs;
}

/// A batched problem with finer modes runs one product at a time: the byte offsets of each
/// operand between products, each a multiple of 16 bytes so that every product's pointers stay
/// 16-byte aligned.
void batch_loop(const MatmulSignature& sig, std::int64_t a_scale_stride, std::int64_t b_scale_stride,
                MatmulProblem& P) {
    const LtArrangement& lt = P.lt;
    BatchLoop loop;
    loop.on = true;
    const bool swap = lt.swap;
    loop[slot_a] = (swap ? lt.b : lt.a).batch_stride * std::int64_t(size_of(P.types.a));
    loop[slot_b] = (swap ? lt.a : lt.b).batch_stride * std::int64_t(size_of(P.types.b));
    loop[slot_d] = lt.d.batch_stride * std::int64_t(size_of(P.types.d));
    if (lt.has_c)
        loop[slot_c] = lt.c.batch_stride * std::int64_t(size_of(P.inputs.c_from_bias ? sig.bias->dtype() : P.types.c));
    if (P.inputs.bias_vector) loop[slot_bias] = lt.bias_batch_stride * std::int64_t(size_of(P.types.bias));
    if (P.inputs.aux == AuxKind::relu_mask) loop[slot_aux] = lt.aux_batch_stride / 8;
    loop[slot_a_scale] = a_scale_stride * 4;
    loop[slot_b_scale] = b_scale_stride * 4;
    for (int slot = 0; slot < layout_slot_count; ++slot)
        if (loop.bytes[std::size_t(slot)] % 16 != 0)
            unsupported(P.api,
                        "{}: batch stride of {} bytes; batched products with finer scale modes run one cuBLASLt "
                        "call per product (cuBLASLt has no batch stride for scale tensors), and each product's "
                        "pointers must stay 16-byte aligned: make the batch stride a multiple of 16 bytes",
                        slot_names[std::size_t(slot)], loop.bytes[std::size_t(slot)]);
    P.lt.loop = loop;
}

}  // namespace

TensorLayout scale_layout(ScaleMode mode, std::span<const std::int64_t> batch, std::int64_t rows, std::int64_t k) {
    std::array<std::int64_t, max_rank> shape{}, strides{};
    const int nb = int(batch.size());
    const std::int64_t l = ceil_div(k, block);
    const std::int64_t l4 = round_up(l, 4);
    std::int64_t matrix = 0;
    int rank = nb;
    switch (mode) {
        case ScaleMode::tensor:
            return TensorLayout(DataType::f32, std::span<const std::int64_t>{});
        case ScaleMode::outer_vector:
            shape[std::size_t(rank)] = rows;
            strides[std::size_t(rank++)] = 1;
            matrix = rows;
            break;
        case ScaleMode::block_1x128:
            shape[std::size_t(rank)] = rows;
            strides[std::size_t(rank++)] = 1;
            shape[std::size_t(rank)] = l;
            strides[std::size_t(rank++)] = rows;
            matrix = rows * l;
            break;
        case ScaleMode::block_128x128: {
            const std::int64_t rb = ceil_div(rows, block);
            shape[std::size_t(rank)] = rb;
            strides[std::size_t(rank++)] = l4;
            shape[std::size_t(rank)] = l;
            strides[std::size_t(rank++)] = 1;
            matrix = rb * l4;
            break;
        }
    }
    std::int64_t s = matrix;
    for (int i = nb - 1; i >= 0; --i) {
        shape[std::size_t(i)] = batch[std::size_t(i)];
        strides[std::size_t(i)] = s;
        // Padded blocks may outnumber the elements past int64: saturate, and TensorLayout refuses
        // the layout (its bytes do not fit).
        if (__builtin_mul_overflow(s, batch[std::size_t(i)], &s)) s = std::numeric_limits<std::int64_t>::max();
    }
    return TensorLayout(DataType::f32, std::span<const std::int64_t>(shape.data(), std::size_t(rank)),
                        std::span<const std::int64_t>(strides.data(), std::size_t(rank)));
}

TensorLayout expected_scale_layout(ScaleMode mode, const TensorLayout& operand, bool is_b) {
    const int r = operand.rank();
    const std::span<const std::int64_t> batch = operand.shape().first(std::size_t(std::max(0, r - 2)));
    if (!is_b) return scale_layout(mode, batch, operand.shape(-2), operand.shape(-1));
    const TensorLayout t = scale_layout(mode, batch, operand.shape(-1), operand.shape(-2));
    return mode == ScaleMode::outer_vector || mode == ScaleMode::tensor ? t : t.transposed();
}

std::int32_t lt_scale_mode(ScaleMode mode) noexcept {
    switch (mode) {
        case ScaleMode::outer_vector:
            return CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
        case ScaleMode::block_1x128:
            return CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
        case ScaleMode::block_128x128:
            return CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
        case ScaleMode::tensor:
            break;
    }
    return CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
}

void scale_stage(const MatmulSignature& sig, MatmulProblem& P) {
    const char* api = P.api;
    const ScaleMode am = a_scale_mode(sig.scale_modes), bm = b_scale_mode(sig.scale_modes);
    constexpr int mode_count = int(ScaleMode::block_128x128) + 1;
    check_enum(am, mode_count, "a ScaleMode", "scales.a_mode", api);
    check_enum(bm, mode_count, "a ScaleMode", "scales.b_mode", api);
    P.scales.a = am;
    P.scales.b = bm;
    P.scales.fine = am != ScaleMode::tensor || bm != ScaleMode::tensor;
    for (const bool is_b : {false, true}) {
        const ScaleMode m = is_b ? bm : am;
        const bool has_tensor = is_b ? sig.b_scale.has_value() : sig.a_scale.has_value();
        const char* op = is_b ? "b" : "a";
        if (m == ScaleMode::tensor && has_tensor)
            invalid(api,
                    "scales.{}_tensor: given, but scales.{}_mode is tensor; set the mode the tensor follows "
                    "(outer_vector, block_1x128, block_128x128) or pass a per-tensor scale as scales.{}",
                    op, op, op);
        if (m == ScaleMode::tensor) continue;
        if (!P.types.fp8)
            invalid(api, "scales.{}_mode: {} scaling applies to FP8 inputs only; a is {}", op, to_string(m),
                    to_string(P.types.a));
        if ((sig.scales & (is_b ? scale_b : scale_a)) != 0)
            invalid(api,
                    "scales.{}: a per-tensor scale given with scales.{}_mode {}; pass the {} scales as "
                    "scales.{}_tensor and leave scales.{} null",
                    op, op, to_string(m), to_string(m), op, op);
    }
    P.lt.a_scale_mode = lt_scale_mode(P.lt.swap ? bm : am);
    P.lt.b_scale_mode = lt_scale_mode(P.lt.swap ? am : bm);
    if (!P.scales.fine) return;

    if (!pair_supported(am, bm))
        unsupported(api,
                    "scales: a_mode {} with b_mode {}; cuBLASLt scales FP8 products with both operands tensor, both "
                    "outer_vector, or block_1x128 with block_1x128 or block_128x128 (in either order; not both "
                    "block_128x128)",
                    to_string(am), to_string(bm));
    if (is_fp8(P.types.d))
        unsupported(api,
                    "d: an {} result with {} x {} scaling; cuBLASLt's finer scale modes produce bf16, f16 or f32 "
                    "(quantize the result with quantize_fp8)",
                    to_string(P.types.d), to_string(am), to_string(bm));
    if (!epilog_supported(P.inputs.effective))
        unsupported(api,
                    "epilog: {} with {} x {} scaling; cuBLASLt runs finer scale modes with epilogs none, relu, gelu, "
                    "bias, relu_bias, gelu_bias and relu_aux",
                    to_string(P.inputs.epilog), to_string(am), to_string(bm));
    std::int64_t a_stride = 0, b_stride = 0;
    for (const bool is_b : {false, true}) {
        const ScaleMode m = is_b ? bm : am;
        const std::optional<TensorLayout>& t = is_b ? sig.b_scale : sig.a_scale;
        const char* op = is_b ? "b" : "a";
        const TensorLayout& operand = is_b ? sig.b : sig.a;
        if (!t) {
            if (sig.from_layouts) {  // a plan made from layouts alone: the tensor comes per call, as documented
                const TensorLayout want = expected_scale_layout(m, operand, is_b);
                (is_b ? b_stride : a_stride) =
                    single_batch_stride(want, P.shape.batch_dims, m == ScaleMode::outer_vector ? 1 : 2).value_or(0);
                continue;
            }
            const TensorLayout want = expected_scale_layout(m, operand, is_b);
            invalid(api, "scales.{}_tensor: scales.{}_mode {} needs the scale tensor: f32 {} with strides {}", op, op,
                    to_string(m), shape_text(want), strides_text(want));
        }
        (is_b ? b_stride : a_stride) =
            check_scale_tensor(m, *t, operand, is_b, sig.align[is_b ? slot_b_scale : slot_a_scale], P);
    }
    if (P.shape.batch > 1) batch_loop(sig, a_stride, b_stride, P);
}

}  // namespace gpumath::detail
