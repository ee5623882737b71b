// SPDX-License-Identifier: Apache-2.0
// Checks that are not part of a stage's own decision: the options' enums, per-call values
// (alpha/beta, pointer alignment, overlaps), FP8 scales and operands, and the epilog against the
// inputs given. Host only: no CUDA calls.
#include "matmul/checks.hpp"

#include "detail/enum_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace gpumath::detail {

void check_options(const MatmulOptions& options, const char* api) {
    check_enum(options.compute_type, int(ComputeType::i32) + 1, "a ComputeType", "options.compute_type", api);
    check_enum(options.epilog, int(Epilog::silu_bias) + 1, "an Epilog", "options.epilog", api);
    if (options.result_type)
        check_enum(*options.result_type, data_type_count, "a DataType", "options.result_type", api);
}

void check_scales(const MatmulSignature& sig, const ProblemTypes& types, const char* api) {
    const bool fp8 = types.fp8;
    const DataType at = types.a, ct = types.c, dt = types.d;
    if (sig.scales != 0 && !fp8) {
        const char* which = (sig.scales & scale_a)   ? "scales.a"
                            : (sig.scales & scale_b) ? "scales.b"
                            : (sig.scales & scale_c) ? "scales.c"
                            : (sig.scales & scale_d) ? "scales.d"
                                                     : "scales.amax_d";
        invalid(api, "{}: per-tensor scales apply to FP8 inputs only; a is {}", which, to_string(at));
    }
    if (fp8 && (sig.scales & scale_c))
        invalid(api,
                "scales.c: cuBLASLt takes a C scale only for an FP8 c, and the c of FP8 products is {} here; "
                "scale c with beta instead",
                to_string(ct));
    if (fp8 && !is_fp8(dt) && (sig.scales & (scale_d | scale_amax_d)))
        invalid(api, "{}: applies to an FP8 result only; d is {}",
                (sig.scales & scale_d) ? "scales.d" : "scales.amax_d", to_string(dt));
    // cuBLASLt's heuristic offers FP8 algorithms for any scale pointer, but cublasLtMatmul refuses
    // them (CUBLAS_STATUS_NOT_SUPPORTED) for pointers less than 16-byte aligned (H200, CUDA 13.0).
    if (fp8 && sig.scales != 0 && sig.align[slot_scales] < 16)
        unsupported(api,
                    "scales: a scale or amax pointer is only {}-byte aligned; cuBLASLt's FP8 kernels need every scale "
                    "and amax pointer 16-byte aligned (give each scale its own 16-byte slot)",
                    sig.align[slot_scales]);
}

void check_epilog_operands(const MatmulSignature& sig, const ProblemTypes& types, Epilog epilog, std::int64_t k,
                           const char* api) {
    const bool fp8 = types.fp8;
    const DataType at = types.a, dt = types.d;
    const std::int64_t K = k;
    if (epilog != Epilog::none && (is_complex(at) || at == DataType::i8))
        unsupported(api,
                    "epilog: {} is not available for {} products; cuBLASLt's epilogs need real floating-point "
                    "types (use Epilog::none)",
                    to_string(epilog), to_string(at));
    if (fp8 && (epilog_reads_aux(epilog) || epilog_writes_bias_grad(epilog)))
        unsupported(api,
                    "epilog: {} with FP8 inputs; gpumath runs FP8 products with forward epilogs only (none, relu, "
                    "gelu, their _bias and _aux forms)",
                    to_string(epilog));
    if (is_fp8(dt) && epilog_writes_aux(epilog))
        unsupported(api, "epilog: {} with an {} result; aux outputs of FP8 products need a bf16, f16 or f32 result",
                    to_string(epilog), to_string(dt));
    if (K == 1 && epilog_reads_aux(epilog))
        unsupported(api, "epilog: {} with K = 1; cuBLASLt's ReLU/GELU gradient epilogs need K > 1", to_string(epilog));
    if (sig.bias && !epilog_takes_bias(epilog))
        invalid(api, "bias: given, but epilog {} takes no bias; use a *_bias epilog (bias, relu_bias, gelu_bias, ...)",
                to_string(epilog));
    if (sig.aux && !epilog_writes_aux(epilog) && !epilog_reads_aux(epilog))
        invalid(api, "aux: given, but epilog {} has no aux (only *_aux epilogs write one and d* epilogs read one)",
                to_string(epilog));
    if (sig.bias_grad && !epilog_writes_bias_grad(epilog))
        invalid(api,
                "bias_grad: given, but epilog {} computes no bias gradient (drelu_bgrad, dgelu_bgrad, bgrada, "
                "bgradb do)",
                to_string(epilog));
    if (!sig.from_layouts && epilog_takes_bias(epilog) && !sig.bias)
        invalid(api,
                "bias: epilog {} needs MatmulArgs::bias: shape (N,) or (1, N) per column, (M, 1) per row, or "
                "(M, N)",
                to_string(epilog));
    if (!sig.from_layouts && epilog_reads_aux(epilog) && !sig.aux)
        invalid(api, "aux: epilog {} reads the aux output of a forward {} product; pass it as MatmulArgs::aux",
                to_string(epilog), epilog_aux_is_relu_mask(epilog) ? "relu_aux" : "gelu_aux");
}

void check_fp8_operands(const MatmulSignature& sig, const ProblemShape& shape, bool swap, const char* api) {
    const std::int64_t M = shape.m, N = shape.n, K = shape.k;
    const bool fine =
        a_scale_mode(sig.scale_modes) != ScaleMode::tensor || b_scale_mode(sig.scale_modes) != ScaleMode::tensor;
    if (fine && (M % 16 != 0 || N % 16 != 0 || K % 16 != 0))
        unsupported(api,
                    "a, b: FP8 products with scale modes finer than a tensor need M, N and K to be multiples of 16; "
                    "M = {}, N = {}, K = {}",
                    M, N, K);
    // cuBLASLt's FP8 kernels need K and the rows of its column-major D (N when gpumath swaps the
    // operands for a row-major D, else M) in multiples of 16; its columns may number anything, so a
    // row-major D takes any number of tokens M.
    if (K % 16 != 0 || (swap ? N : M) % 16 != 0)
        unsupported(api,
                    "a, b: FP8 products need K and {} to be multiples of 16 (cuBLASLt's rule; {} may be any with a "
                    "{} d); M = {}, N = {}, K = {}",
                    swap ? "N" : "M", swap ? "M" : "N", swap ? "row-major" : "column-major", M, N, K);
    for (int s : {int(slot_a), int(slot_b), int(slot_c), int(slot_d)})
        if (sig.align[std::size_t(s)] < 16)
            unsupported(api, "{}: pointer is {}-byte aligned; FP8 products need 16-byte aligned operands",
                        slot_names[std::size_t(s)], sig.align[std::size_t(s)]);
}

void check_memory(const void* p, std::int64_t bytes, const char* name, const char* api) {
    const auto lo = reinterpret_cast<std::uintptr_t>(p);
    // The overlap checks take [lo, lo + bytes): it must not wrap past the end of the address space.
    if (bytes > 0 && std::uintptr_t(bytes) > std::numeric_limits<std::uintptr_t>::max() - lo) [[unlikely]]
        invalid(api,
                "{}: its {} bytes from pointer {} run past the end of the address space; pass a pointer to memory "
                "that holds them",
                name, bytes, p);
}

void check_view_memory(const TensorView& v, const char* name, const char* api) {
    if (v.data() == nullptr && v.size() != 0) [[unlikely]]
        invalid(api, "{}: null data pointer for {} element(s) ({}); pass device memory", name, v.size(), to_string(v));
    check_memory(v.data(), v.span_bytes(), name, api);
}

// ---------------------------------------------------------------------------------------------
// Per-call checks.

namespace {

/// Whether two operands (tensors or f32 scales) share memory.
template <class X, class Y>
bool overlap(const X& x, const Y& y) {
    return meet(bytes_of(x), bytes_of(y));
}

/// The per-tensor scales (inputs, one f32 each) apart from every output, and amax_d (an output)
/// apart from every operand: the product reads the scales while it writes its outputs.
void check_scales_apart(const TensorView& a, const TensorView& b, const TensorView* d, const MatmulArgs& args,
                        const char* api) {
    const MatmulScales& s = args.scales;
    const std::pair<const char*, const float*> scale_inputs[] = {
        {"scales.a", s.a}, {"scales.b", s.b}, {"scales.c", s.c}, {"scales.d", s.d}};
    const std::pair<const char*, const TensorView*> outputs[] = {
        {"d", d}, {"aux", args.aux ? &*args.aux : nullptr}, {"bias_grad", args.bias_grad ? &*args.bias_grad : nullptr}};
    for (const auto& [name, p] : scale_inputs) {
        if (p == nullptr) continue;
        for (const auto& [out_name, out] : outputs)
            if (out != nullptr && overlap(p, *out))
                invalid(api, "{}: points into {}'s memory; the product writes {} while it reads the scale", name,
                        out_name, out_name);
    }
    if (s.amax_d == nullptr) return;
    for (const auto& [name, p] : scale_inputs)
        if (p != nullptr && overlap(s.amax_d, p))
            invalid(api, "scales.amax_d: its 4 bytes overlap {}'s; amax is an output and needs memory of its own",
                    name);
    const std::pair<const char*, const TensorView*> tensors[] = {
        {"a", &a},
        {"b", &b},
        {"c", args.c ? &*args.c : nullptr},
        {"d", d},
        {"bias", args.bias ? &*args.bias : nullptr},
        {"aux", args.aux ? &*args.aux : nullptr},
        {"bias_grad", args.bias_grad ? &*args.bias_grad : nullptr},
        {"scales.a_tensor", s.a_tensor ? &*s.a_tensor : nullptr},
        {"scales.b_tensor", s.b_tensor ? &*s.b_tensor : nullptr}};
    for (const auto& [name, t] : tensors)
        if (t != nullptr && overlap(s.amax_d, *t))
            invalid(api, "scales.amax_d: points into {}'s memory; amax is an output and needs memory of its own", name);
}

void check_scalar(const Scalar& s, const char* name, DataType input, const char* api) {
    if (input == DataType::i8) {
        if (s.imag != 0.0 || s.real != std::trunc(s.real) || s.real > 2147483647.0 || s.real < -2147483648.0)
            invalid(api,
                    "{}: ({}, {}) is not a 32-bit integer; i8 products take integer alpha and beta (scale type "
                    "i32)",
                    name, s.real, s.imag);
        return;
    }
    if (!is_complex(input) && s.imag != 0.0)
        invalid(api, "{}: complex value ({}, {}) for a real {} product; pass a real value", name, s.real, s.imag,
                to_string(input));
    if (!std::isfinite(s.real) || !std::isfinite(s.imag))
        invalid(api, "{}: ({}, {}) is not finite", name, s.real, s.imag);
    // Every product but f64 and c64 takes alpha and beta as f32 (or narrower): past its range the
    // value would reach the GPU as infinity.
    constexpr double f32_max = std::numeric_limits<float>::max();
    if (input != DataType::f64 && input != DataType::c64 && (std::abs(s.real) > f32_max || std::abs(s.imag) > f32_max))
        invalid(api, "{}: ({}, {}) is past the f32 range of a {} product's scale type (|x| <= {})", name, s.real,
                s.imag, to_string(input), f32_max);
}

/// Also that the overlap checks can take the view's bytes (check_view_memory).
void check_aligned(const TensorView& v, const char* name, const char* api) {
    check_view_memory(v, name, api);
    const std::size_t elem = size_of(v.dtype());
    if (reinterpret_cast<std::uintptr_t>(v.data()) % elem != 0) [[unlikely]]
        invalid(api,
                "{}: data pointer {} is not aligned to the {}-byte size of a {} element; pass a pointer aligned "
                "to its element size (256 bytes is best)",
                name, v.data(), elem, to_string(v.dtype()));
}

void check_aligned(const float* p, const char* name, const char* api) {
    if (reinterpret_cast<std::uintptr_t>(p) % alignof(float) != 0) [[unlikely]]
        invalid(api, "{}: pointer {} is not aligned to 4 bytes (one f32); pass a 16-byte aligned pointer", name,
                static_cast<const void*>(p));
    if (p != nullptr) check_memory(p, std::int64_t(sizeof(float)), name, api);
}

}  // namespace

void check_call(const TensorView& a, const TensorView& b, const TensorView* d, const MatmulArgs& args,
                const char* api) {
    check_aligned(a, "a", api);
    check_aligned(b, "b", api);
    if (d != nullptr) check_aligned(*d, "d", api);
    if (args.c) check_aligned(*args.c, "c", api);
    if (args.bias) check_aligned(*args.bias, "bias", api);
    if (args.aux) check_aligned(*args.aux, "aux", api);
    if (args.bias_grad) check_aligned(*args.bias_grad, "bias_grad", api);
    check_aligned(args.scales.a, "scales.a", api);
    check_aligned(args.scales.b, "scales.b", api);
    check_aligned(args.scales.c, "scales.c", api);
    check_aligned(args.scales.d, "scales.d", api);
    check_aligned(args.scales.amax_d, "scales.amax_d", api);
    // Checked on every call (cache hits too): keys hold the modes in four bits each.
    constexpr int scale_mode_count = int(ScaleMode::block_128x128) + 1;
    check_enum(args.scales.a_mode, scale_mode_count, "a ScaleMode", "scales.a_mode", api);
    check_enum(args.scales.b_mode, scale_mode_count, "a ScaleMode", "scales.b_mode", api);
    if (args.scales.a_tensor) check_aligned(*args.scales.a_tensor, "scales.a_tensor", api);
    if (args.scales.b_tensor) check_aligned(*args.scales.b_tensor, "scales.b_tensor", api);
    check_scalar(args.alpha, "alpha", a.dtype(), api);
    check_scalar(args.beta, "beta", a.dtype(), api);
    if (!args.c && args.beta != Scalar(0.0))
        invalid(api, "beta: ({}, {}) given without c; beta scales c, so pass MatmulArgs::c (or leave beta 0)",
                args.beta.real, args.beta.imag);
    // aux is an output of the *_aux epilogs and an input of the d* ones; it shares memory with no
    // other operand either way.
    if (args.aux) check_output_alone(*args.aux, "aux", a, b, args, api);
    if (args.bias_grad) check_output_alone(*args.bias_grad, "bias_grad", a, b, args, api);
    if (args.aux && args.bias_grad && overlap(*args.aux, *args.bias_grad))
        invalid(api, "bias_grad: its memory overlaps aux's; pass separate memory");
    check_scales_apart(a, b, d, args, api);
    if (d == nullptr) return;
    if (overlap(*d, a)) invalid(api, "d: its memory overlaps a's; an output must not alias an input");
    if (overlap(*d, b)) invalid(api, "d: its memory overlaps b's; an output must not alias an input");
    if (args.c && overlap(*d, *args.c)) {
        const bool same_view = args.c->data() == d->data() && args.c->shape().size() == d->shape().size() &&
                               std::equal(args.c->strides().begin(), args.c->strides().end(), d->strides().begin()) &&
                               std::equal(args.c->shape().begin(), args.c->shape().end(), d->shape().begin());
        if (!same_view)
            invalid(api,
                    "c: its memory overlaps d's without being d; c may be d itself (same pointer, shape and "
                    "strides) or separate memory");
        // An FP8 product may read a bf16 or f16 c: at d's address its elements sit at other bytes
        // than d's, which the product overwrites while reading them.
        if (args.c->dtype() != d->dtype())
            invalid(api,
                    "c: {} at d's address, but d is {}; c may be d itself only with d's dtype: pass separate memory",
                    to_string(args.c->dtype()), to_string(d->dtype()));
    }
    if (args.bias && overlap(*d, *args.bias)) invalid(api, "bias: its memory overlaps d's; pass separate memory");
    if (args.aux && overlap(*d, *args.aux)) invalid(api, "aux: its memory overlaps d's; pass separate memory");
    if (args.scales.a_tensor && overlap(*d, *args.scales.a_tensor))
        invalid(api, "scales.a_tensor: its memory overlaps d's; pass separate memory");
    if (args.scales.b_tensor && overlap(*d, *args.scales.b_tensor))
        invalid(api, "scales.b_tensor: its memory overlaps d's; pass separate memory");
    if (args.bias_grad && overlap(*d, *args.bias_grad))
        invalid(api, "bias_grad: its memory overlaps d's; pass separate memory");
}

bool f16_scale_type(DataType input, const MatmulOptions& options) noexcept {
    return input == DataType::f16 && options.compute_type == ComputeType::f16;
}

void check_call(const TensorView& a, const TensorView& b, const TensorView* d, const MatmulArgs& args,
                const MatmulOptions& options, const char* api) {
    check_call(a, b, d, args, api);
    check_scale_range(args.alpha, args.beta, f16_scale_type(a.dtype(), options), api);
}

void check_scale_range(const Scalar& alpha, const Scalar& beta, bool f16_scale, const char* api) {
    if (!f16_scale) return;
    for (const auto& [name, x] : {std::pair{"alpha", &alpha}, std::pair{"beta", &beta}})
        if (std::abs(x->real) > 65504.0)
            invalid(api,
                    "{}: {} is past the range of the f16 scale type of compute type f16 (|x| <= 65504); scale the "
                    "inputs, or use compute type f32",
                    name, x->real);
}

void check_output_alone(const TensorView& out, const char* name, const TensorView& a, const TensorView& b,
                        const MatmulArgs& args, const char* api) {
    const std::pair<const char*, const TensorView*> inputs[] = {
        {"a", &a},
        {"b", &b},
        {"c", args.c ? &*args.c : nullptr},
        {"bias", args.bias ? &*args.bias : nullptr},
        {"scales.a_tensor", args.scales.a_tensor ? &*args.scales.a_tensor : nullptr},
        {"scales.b_tensor", args.scales.b_tensor ? &*args.scales.b_tensor : nullptr}};
    for (const auto& [in_name, in] : inputs)
        if (in != nullptr && overlap(out, *in))
            invalid(api, "{}: its memory overlaps {}'s; pass separate memory", name, in_name);
}

}  // namespace gpumath::detail
