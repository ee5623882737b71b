// SPDX-License-Identifier: Apache-2.0
// The epilog's inputs and outputs against D: the bias (NumPy broadcasting of A @ B + bias), the aux
// (ReLU bit mask or GELU input) and the bias gradient, laid out over D as cuBLASLt sees it.
#include "matmul/epilog_inputs.hpp"

#include "matmul/checks.hpp"
#include "matmul/shapes.hpp"

namespace gpumath::detail {
namespace {

/// a * b for the aux's leading dimension or batch stride, which cuBLASLt takes in int64 elements
/// (bits for the ReLU mask); NotSupported naming `what` past int64.
std::int64_t aux_product(std::int64_t a, std::int64_t b, const char* what, const char* api) {
    std::int64_t p = 0;
    if (__builtin_mul_overflow(a, b, &p))
        unsupported(api,
                    "aux: its {} ({} x {}) does not fit in int64, in which cuBLASLt addresses the aux (in bits "
                    "for a ReLU mask); split the product into smaller ones",
                    what, a, b);
    return p;
}

/// The aux gpumath allocates: dense (*batch, rows, cols) of `t`; NotSupported naming aux, as
/// aux_product, where its bytes do not fit in int64 (its layout would be refused).
TensorLayout aux_storage_of(DataType t, const BatchShape& full, std::int64_t rows, std::int64_t cols, const char* api) {
    std::int64_t bytes =
        aux_product(aux_product(rows, cols, "matrix size", api), std::int64_t(size_of(t)), "matrix size in bytes", api);
    for (int i = 0; i < full.rank; ++i) bytes = aux_product(bytes, full.dims[std::size_t(i)], "size in bytes", api);
    return dense(t, full, rows, cols);
}

BiasShape bias_shape_of(const TensorLayout& l, std::int64_t m, std::int64_t n) {
    BiasShape s;
    if (l.rank() == 1) {
        s.q = l.shape(0);
        s.qs = l.stride(0);
    } else {
        s.p = l.shape(-2);
        s.q = l.shape(-1);
        s.ps = l.stride(-2);
        s.qs = l.stride(-1);
    }
    s.per_col = s.p == 1 && s.q == n;
    s.per_row = s.q == 1 && s.p == m;
    s.full = !s.per_col && !s.per_row && s.p == m && s.q == n;
    return s;
}

Epilog strip_bias(Epilog e) {
    switch (e) {
        case Epilog::bias:
            return Epilog::none;
        case Epilog::relu_bias:
            return Epilog::relu;
        case Epilog::relu_aux_bias:
            return Epilog::relu_aux;
        case Epilog::gelu_bias:
            return Epilog::gelu;
        case Epilog::gelu_aux_bias:
            return Epilog::gelu_aux;
        case Epilog::silu_bias:
            return Epilog::silu;
        default:
            return e;
    }
}

/// The bias vector: packed along D_lt's rows, one batch stride.
void bias_vector(const BiasInput& bias, MatmulProblem& P) {
    const char* api = P.api;
    P.inputs.bias_vector = true;
    const bool along_cols = P.lt.swap;  // cuBLASLt's bias runs along D_lt's rows
    const std::int64_t len = along_cols ? P.shape.n : P.shape.m;
    const std::int64_t stride = along_cols ? bias.shape.qs : bias.shape.ps;
    if (len > 1 && stride != 1)
        invalid(api, "bias: stride {} along its length {} in layout {}; the bias vector must be packed (stride 1)",
                stride, len, to_string(bias.layout));
    P.lt.bias_batch_stride =
        batch_stride_of(bias.layout, P.shape.batch_dims, bias.layout.rank() == 1 ? 1 : 2, "bias", api);
}

/// A caller's GELU aux: d's dtype and shape, D's unit-stride dimension, ld a multiple of 8.
void gelu_aux_given(const TensorLayout& x, const TensorLayout& d, MatmulProblem& P) {
    const char* api = P.api;
    const std::int64_t M = P.shape.m, N = P.shape.n;
    const std::int64_t r = std::int64_t(P.lt.d.rows), cdim = std::int64_t(P.lt.d.cols);
    const bool swap = P.lt.swap;
    if (x.dtype() != P.types.aux)
        invalid(api, "aux: dtype {} given; the GELU aux of a {} result is {}", to_string(x.dtype()),
                to_string(P.types.d), to_string(P.types.aux));
    bool same = x.rank() == d.rank();
    for (int i = 0; same && i < d.rank(); ++i) same = x.shape(i) == d.shape(i);
    if (!same) invalid(api, "aux: shape {} given; the GELU aux has d's shape {}", shape_text(x), shape_text(d));
    const Matrix xm = matrix_of(x);
    const auto x_lt = swap ? col_major(N, M, xm.cs, xm.rs) : col_major(M, N, xm.rs, xm.cs);
    if (!x_lt || x_lt->ld % 8 != 0 || x_lt->ld < r)
        invalid(api,
                "aux: strides {} given; the GELU aux must be {}-major like d, with a leading dimension "
                "that is a multiple of 8 and >= {} (e.g. strides {})",
                strides_text(x), swap ? "row" : "column", r, strides_text(P.inputs.aux_view));
    P.lt.aux_ld = x_lt->ld;
    P.lt.aux_batch_stride = batch_stride_of(x, P.shape.batch_dims, 2, "aux", api);
    const std::int64_t matrix = aux_product(x_lt->ld, cdim, "matrix size", api);
    if (P.shape.batch > 1 && (P.lt.aux_batch_stride % 8 != 0 || P.lt.aux_batch_stride < matrix))
        invalid(api, "aux: batch stride {} must be a multiple of 8 and hold a whole matrix ({} elements)",
                P.lt.aux_batch_stride, matrix);
}

/// A caller's ReLU bit mask: i8 (..., C, >= ceil(R / 8)), rows 16-byte aligned.
void relu_mask_given(const TensorLayout& x, MatmulProblem& P) {
    const char* api = P.api;
    const BatchShape& full = P.shape.batch_dims;
    const std::int64_t r = std::int64_t(P.lt.d.rows), cdim = std::int64_t(P.lt.d.cols);
    const std::int64_t min_bytes = (r + 7) / 8;
    const bool rank_ok = x.rank() == full.rank + 2 && x.shape(-2) == cdim && x.shape(-1) >= min_bytes;
    if (x.dtype() != DataType::i8 || !rank_ok || !batch_broadcasts(x, full, 2))
        invalid(api,
                "aux: {} given; the ReLU bit mask of this product is i8 bytes of shape (..., {}, >= {}) "
                "(one column of {} bits per row of the {}), e.g. {}",
                to_string(x), cdim, min_bytes, r, P.lt.swap ? "row-major d" : "column-major d's transpose",
                to_string(P.inputs.aux_storage));
    const std::int64_t ldb = x.stride(-2);
    if ((x.shape(-1) > 1 && x.stride(-1) != 1) || ldb % 16 != 0 || ldb < x.shape(-1))
        invalid(api,
                "aux: strides {} given; the ReLU bit mask needs unit stride along its last dimension "
                "and a row stride that is a multiple of 16 bytes",
                strides_text(x));
    P.lt.aux_ld = aux_product(ldb, 8, "row stride in bits", api);
    const std::int64_t bs = batch_stride_of(x, full, 2, "aux", api);
    const std::int64_t mask = aux_product(ldb, cdim, "mask size in bytes", api);
    if (P.shape.batch > 1 && (bs % 16 != 0 || bs < mask))
        invalid(api, "aux: batch stride {} must be a multiple of 16 bytes and hold a whole mask ({} bytes)", bs, mask);
    P.lt.aux_batch_stride = aux_product(bs, 8, "batch stride in bits", api);
}

/// The aux: column-major over D_lt; allocated storage and view, or the caller's layout checked.
void aux_input(const MatmulSignature& sig, const TensorLayout& d, MatmulProblem& P) {
    const Epilog epilog = P.inputs.epilog;
    const BatchShape& full = P.shape.batch_dims;
    const std::int64_t M = P.shape.m, N = P.shape.n;
    const std::int64_t r = std::int64_t(P.lt.d.rows), cdim = std::int64_t(P.lt.d.cols);
    EpilogInputs& in = P.inputs;
    in.aux = epilog_aux_is_relu_mask(epilog) ? AuxKind::relu_mask : AuxKind::gelu;
    if (in.aux == AuxKind::gelu) {
        const std::int64_t ld = round_up(r, 8);
        in.aux_storage = aux_storage_of(P.types.aux, full, cdim, ld, P.api);
        in.aux_view = P.lt.swap ? strided(P.types.aux, full, M, N, ld, 1, ld * cdim)
                                : strided(P.types.aux, full, M, N, 1, ld, ld * cdim);
        P.lt.aux_ld = ld;
        P.lt.aux_batch_stride = ld * cdim;
        if (sig.aux) gelu_aux_given(*sig.aux, d, P);
    } else {
        const std::int64_t bytes = round_up((r + 7) / 8, 16);
        in.aux_storage = aux_storage_of(DataType::i8, full, cdim, bytes, P.api);
        in.aux_view = in.aux_storage;
        P.lt.aux_ld = aux_product(bytes, 8, "row stride in bits", P.api);
        P.lt.aux_batch_stride =
            aux_product(aux_product(bytes, cdim, "mask size in bytes", P.api), 8, "mask size in bits", P.api);
        if (sig.aux) relu_mask_given(*sig.aux, P);
    }
}

/// The bias gradient: length M (bgrada), N (bgradb) or D_lt's rows; allocated or the caller's.
void bias_grad_output(const MatmulSignature& sig, MatmulProblem& P) {
    const char* api = P.api;
    const Epilog epilog = P.inputs.epilog;
    const BatchShape& full = P.shape.batch_dims;
    const DataType dt = P.types.d;
    EpilogInputs& in = P.inputs;
    in.bias_grad = true;
    const std::int64_t len = (epilog == Epilog::bgrada)   ? P.shape.m
                             : (epilog == Epilog::bgradb) ? P.shape.n
                                                          : std::int64_t(P.lt.d.rows);
    in.bias_grad_length = len;
    in.bias_grad_storage = full.rank == 0 ? TensorLayout(dt, {len}) : dense(dt, full, len, -1);
    P.lt.bias_grad_batch_stride = len;
    if (!sig.bias_grad) return;
    const TensorLayout& g = *sig.bias_grad;
    if (g.dtype() != dt)
        invalid(api, "bias_grad: dtype {} given; the bias gradient has d's dtype {}", to_string(g.dtype()),
                to_string(dt));
    // Accept (..., L), (..., 1, L) and (..., L, 1).
    int vec_rank = 0;
    std::int64_t vec_stride = 0;
    if (g.rank() >= 2 && g.shape(-1) == 1 && g.shape(-2) == len) {
        vec_rank = 2;
        vec_stride = g.stride(-2);
    } else if (g.rank() >= 2 && g.shape(-2) == 1 && g.shape(-1) == len) {
        vec_rank = 2;
        vec_stride = g.stride(-1);
    } else if (g.rank() >= 1 && g.shape(-1) == len) {
        vec_rank = 1;
        vec_stride = g.stride(-1);
    }
    if (vec_rank == 0 || !batch_broadcasts(g, full, vec_rank))
        invalid(api,
                "bias_grad: shape {} given; epilog {} with this d writes a gradient of length {} per "
                "product: shape {}",
                shape_text(g), to_string(epilog), len, shape_text(in.bias_grad_storage));
    if (len > 1 && vec_stride != 1)
        invalid(api, "bias_grad: stride {} along its length; the bias gradient must be packed (stride 1)", vec_stride);
    const std::int64_t bs = batch_stride_of(g, full, vec_rank, "bias_grad", api);
    if (P.shape.batch > 1 && bs < len)
        invalid(api, "bias_grad: batch stride {} is smaller than its length {}; an output must not overlap", bs, len);
    P.lt.bias_grad_batch_stride = bs;
}

}  // namespace

BiasInput bias_stage(const MatmulSignature& sig, const TensorLayout& d, const ProblemShape& shape,
                     const ProblemTypes& types, Epilog epilog, const char* api) {
    BiasInput bias;
    if (!epilog_takes_bias(epilog)) return bias;
    bias.present = true;
    const std::int64_t M = shape.m, N = shape.n;
    if (!sig.bias) {
        // Planning from layouts alone: a per-column bias unless D can only be column-major.
        const Matrix dm = matrix_of(d);
        const bool row_ok = col_major(N, M, dm.cs, dm.rs).has_value();
        bias.layout = row_ok ? TensorLayout(types.bias, {N}) : TensorLayout(types.bias, {M, 1});
        bias.shape = bias_shape_of(bias.layout, M, N);
        return bias;
    }
    bias.layout = *sig.bias;
    const TensorLayout& l = bias.layout;
    if (l.rank() == 0)
        invalid(api, "bias: rank 0; a bias has shape (N,), (1, N), (M, 1) or (M, N) (M = {}, N = {})", M, N);
    bias.shape = bias_shape_of(l, M, N);
    if (!bias.shape.per_col && !bias.shape.per_row && !bias.shape.full)
        invalid(api,
                "bias: shape {} does not broadcast against d (..., {}, {}) as a per-column (N,) or (1, N), "
                "per-row (M, 1) or full (M, N) bias",
                shape_text(l), M, N);
    // A full bias is C, so it has C's type.
    const DataType want = bias.shape.full ? types.c : types.bias;
    if (l.dtype() != want)
        invalid(api, "bias: dtype {} given; {} products with a {} result take a {} {}bias", to_string(l.dtype()),
                to_string(types.a), to_string(types.d), to_string(want), bias.shape.full ? "full (M, N) " : "");
    if (!batch_broadcasts(l, shape.batch_dims, l.rank() == 1 ? 1 : 2))
        invalid(api, "bias: batch dimensions of shape {} do not broadcast to d's {}", shape_text(l), shape_text(d));
    return bias;
}

void epilog_vectors_stage(const MatmulSignature& sig, const BiasInput& bias, MatmulProblem& P) {
    const Epilog epilog = P.inputs.epilog;
    P.inputs.effective = bias.shape.full ? strip_bias(epilog) : epilog;
    if (bias.present && !bias.shape.full && !P.pass.bias) bias_vector(bias, P);
    if (epilog_writes_aux(epilog) || epilog_reads_aux(epilog)) aux_input(sig, *P.signature.d, P);
    if (epilog_writes_bias_grad(epilog)) bias_grad_output(sig, P);
}

}  // namespace gpumath::detail
