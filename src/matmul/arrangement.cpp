// SPDX-License-Identifier: Apache-2.0
// The arrangement on cuBLASLt. cuBLASLt works on column-major matrices. A column-major D is
// computed as D = op(A) op(B); a row-major D as D^T = op(B^T) op(A^T) ("swap"), so D is
// column-major to cuBLASLt either way and the epilog's bias, aux and bias-gradient vectors run
// along D's unit-stride dimension.
#include "matmul/arrangement.hpp"

#include <string_view>

#include "matmul/checks.hpp"
#include "matmul/shapes.hpp"
#include "matmul/types.hpp"

namespace gpumath::detail {
namespace {

struct Arranged {
    LtMatrix m;
    cublasOperation_t op;
};

/// The operand Y = X (or X^T when `transpose`) as op(stored column-major matrix).
std::optional<Arranged> arrange(const Matrix& x, bool transpose, bool prefer_t) {
    const auto direct = col_major(x.rows, x.cols, x.rs, x.cs);
    const auto flipped = col_major(x.cols, x.rows, x.cs, x.rs);
    std::optional<Arranged> n_form, t_form;
    if (!transpose) {
        if (direct) n_form = Arranged{*direct, CUBLAS_OP_N};
        if (flipped) t_form = Arranged{*flipped, CUBLAS_OP_T};
    } else {
        if (flipped) n_form = Arranged{*flipped, CUBLAS_OP_N};
        if (direct) t_form = Arranged{*direct, CUBLAS_OP_T};
    }
    if (prefer_t) return t_form ? t_form : n_form;
    return n_form ? n_form : t_form;
}

/// The operands whose layouts need D row-major (`swap`) or column-major (`noswap`).
struct Needs {
    const char* swap = nullptr;
    const char* noswap = nullptr;
};

Needs orientation_needs(const MatmulSignature& sig, const BiasInput& bias, Epilog epilog, std::int64_t M,
                        std::int64_t N) {
    Needs need;
    if (bias.present && !bias.shape.full) {
        if (bias.shape.per_col && !bias.shape.per_row) need.swap = "bias";
        if (bias.shape.per_row && !bias.shape.per_col) need.noswap = "bias";
    }
    if (sig.bias_grad && (epilog == Epilog::drelu_bgrad || epilog == Epilog::dgelu_bgrad) && M != N) {
        const TensorLayout& g = *sig.bias_grad;
        const std::int64_t len = g.rank() == 0                                            ? 0
                                 : (g.rank() >= 2 && g.shape(-1) == 1 && g.shape(-2) > 1) ? g.shape(-2)
                                                                                          : g.shape(-1);
        if (len == N) need.swap = need.swap ? need.swap : "bias_grad";
        else if (len == M) need.noswap = need.noswap ? need.noswap : "bias_grad";
    }
    if (sig.aux && M != N && M > 1 && N > 1) {
        const TensorLayout& x = *sig.aux;
        if (epilog_aux_is_relu_mask(epilog)) {
            if (x.rank() >= 2 && x.shape(-2) == M) need.swap = need.swap ? need.swap : "aux";
            else if (x.rank() >= 2 && x.shape(-2) == N) need.noswap = need.noswap ? need.noswap : "aux";
        } else if (x.rank() >= 2) {
            if (x.stride(-1) == 1 && x.stride(-2) != 1) need.swap = need.swap ? need.swap : "aux";
            else if (x.stride(-2) == 1 && x.stride(-1) != 1) need.noswap = need.noswap ? need.noswap : "aux";
        }
    }
    return need;
}

/// Swap (D row-major) or not, as D's layout and the epilog inputs allow.
bool choose_swap(const MatmulSignature& sig, const BiasInput& bias, const TensorLayout& d, const MatmulProblem& P) {
    const char* api = P.api;
    const std::int64_t M = P.shape.m, N = P.shape.n;
    const Matrix dm = matrix_of(d);
    const auto d_col = col_major(M, N, dm.rs, dm.cs);
    const auto d_row = col_major(N, M, dm.cs, dm.rs);
    if (!d_col && !d_row)
        unsupported(api,
                    "d: strides {} give no unit stride among the last two dimensions (with a leading dimension "
                    ">= the matrix); cuBLASLt writes row- or column-major matrices only",
                    strides_text(d));
    const Needs need = orientation_needs(sig, bias, P.inputs.epilog, M, N);
    if (need.swap && need.noswap)
        invalid(api,
                "{}: needs a row-major arrangement of d while {} needs a column-major one; cuBLASLt runs epilog "
                "vectors along one dimension of d",
                need.swap, need.noswap);
    if (need.swap) {
        if (!d_row) {
            if (std::string_view(need.swap) == "bias")
                invalid(api,
                        "bias: shape {} adds one value per column of d, and cuBLASLt adds its epilog bias along d's "
                        "unit-stride dimension; d has strides {} (column-major), so pass a row-major d or a bias "
                        "of shape (M, 1) = ({}, 1) for one value per row",
                        shape_text(bias.layout), strides_text(d), M);
            invalid(api, "{}: its layout follows a row-major d, but d has strides {} (column-major)", need.swap,
                    strides_text(d));
        }
        return true;
    }
    if (need.noswap) {
        if (!d_col) {
            if (std::string_view(need.noswap) == "bias")
                invalid(api,
                        "bias: shape {} adds one value per row of d, and cuBLASLt adds its epilog bias along d's "
                        "unit-stride dimension; d has strides {} (row-major), so pass a column-major d (the "
                        "allocating calls return row-major d) or a bias of shape (N,) = ({},) for one value per "
                        "column",
                        shape_text(bias.layout), strides_text(d), N);
            invalid(api, "{}: its layout follows a column-major d, but d has strides {} (row-major)", need.noswap,
                    strides_text(d));
        }
        return false;
    }
    return d_row.has_value();
}

/// cuBLASLt's operands A_lt (rows(D_lt) x K) and B_lt (K x cols(D_lt)), D_lt, and their batch strides.
void arrange_operands(const MatmulSignature& sig, const TensorLayout& d, MatmulProblem& P) {
    const char* api = P.api;
    const TensorLayout& a = sig.a;
    const TensorLayout& b = sig.b;
    const Matrix am = matrix_of(a), bm = matrix_of(b);
    if (!arrange(am, false, false))
        unsupported(api,
                    "a: strides {} give no unit stride among the last two dimensions (with a leading dimension >= "
                    "the matrix); cuBLASLt reads row- or column-major matrices only: make a contiguous",
                    strides_text(a));
    if (!arrange(bm, false, false))
        unsupported(api,
                    "b: strides {} give no unit stride among the last two dimensions (with a leading dimension >= "
                    "the matrix); cuBLASLt reads row- or column-major matrices only: make b contiguous",
                    strides_text(b));
    const bool swap = P.lt.swap;
    const Epilog epilog = P.inputs.epilog;
    // FP8 and integer tensor cores take K-contiguous operands ("TN"): prefer that form when both exist.
    const bool prefer_tn = P.types.fp8 || P.types.a == DataType::i8;
    // cuBLASLt's bias gradients want the reduced operand with unit stride along the gradient
    // (BGRADA: A_lt not transposed, BGRADB: B_lt transposed); checked by lt_epilog_stage, after
    // the other epilog inputs, so that their errors come first.
    const bool lt_b_prefers_t = swap ? epilog == Epilog::bgrada : epilog == Epilog::bgradb;
    const bool lt_a_bgrad = swap ? epilog == Epilog::bgradb : epilog == Epilog::bgrada;
    const auto lt_a = swap ? arrange(bm, true, prefer_tn && !lt_a_bgrad) : arrange(am, false, prefer_tn && !lt_a_bgrad);
    const auto lt_b = swap ? arrange(am, true, lt_b_prefers_t) : arrange(bm, false, lt_b_prefers_t);
    LtArrangement& lt = P.lt;
    lt.a = lt_a->m;
    lt.op_a = lt_a->op;
    lt.b = lt_b->m;
    lt.op_b = lt_b->op;
    lt.a.type = to_cuda(swap ? P.types.b : P.types.a);
    lt.b.type = to_cuda(swap ? P.types.a : P.types.b);
    const Matrix dm = matrix_of(d);
    lt.d = swap ? *col_major(P.shape.n, P.shape.m, dm.cs, dm.rs) : *col_major(P.shape.m, P.shape.n, dm.rs, dm.cs);
    lt.d.type = to_cuda(P.types.d);

    const BatchShape& full = P.shape.batch_dims;
    lt.a.batch_stride = batch_stride_of(swap ? b : a, full, 2, swap ? "b" : "a", api);
    lt.b.batch_stride = batch_stride_of(swap ? a : b, full, 2, swap ? "a" : "b", api);
    lt.d.batch_stride = batch_stride_of(d, full, 2, "d", api);
    if (P.shape.batch > 1) {
        const std::int64_t span = lt.d.ld * std::int64_t(lt.d.cols - 1) + std::int64_t(lt.d.rows);
        if (lt.d.batch_stride < span)
            invalid(api, "d: batch stride {} is smaller than one matrix ({} elements); the products would overlap",
                    lt.d.batch_stride, span);
    }
}

/// C (the user's, or a full bias) has D's arrangement.
void arrange_c(const MatmulSignature& sig, const BiasInput& bias, const TensorLayout& d, MatmulProblem& P) {
    const char* api = P.api;
    const TensorLayout* c = sig.c ? &*sig.c : nullptr;
    if (bias.present && bias.shape.full) {
        if (sig.c)
            invalid(api,
                    "bias: shape {} is a full (M, N) bias, which gpumath adds through c, but c is given too; add "
                    "the bias to c instead",
                    shape_text(bias.layout));
        c = &bias.layout;
        P.inputs.c_from_bias = true;
    }
    LtArrangement& lt = P.lt;
    if (c != nullptr) {
        const Matrix cm = matrix_of(*c);
        const std::int64_t M = P.shape.m, N = P.shape.n;
        const auto c_lt = lt.swap ? col_major(N, M, cm.cs, cm.rs) : col_major(M, N, cm.rs, cm.cs);
        const char* cname = P.inputs.c_from_bias ? "bias" : "c";
        if (!c_lt)
            invalid(api,
                    "{}: strides {} do not make it {}-major like d (strides {}); {} and d must share their "
                    "unit-stride dimension",
                    cname, strides_text(*c), lt.swap ? "row" : "column", strides_text(d), cname);
        lt.c = *c_lt;
        lt.c.batch_stride = batch_stride_of(*c, P.shape.batch_dims, 2, cname, api);
        lt.has_c = true;
    } else {
        lt.c = lt.d;
    }
    lt.c.type = to_cuda(P.types.c);
}

cublasLtEpilogue_t lt_epilog_of(Epilog e, bool swap) {
    switch (e) {
        case Epilog::none:
            return CUBLASLT_EPILOGUE_DEFAULT;
        case Epilog::relu:
            return CUBLASLT_EPILOGUE_RELU;
        case Epilog::relu_aux:
            return CUBLASLT_EPILOGUE_RELU_AUX;
        case Epilog::bias:
            return CUBLASLT_EPILOGUE_BIAS;
        case Epilog::relu_bias:
            return CUBLASLT_EPILOGUE_RELU_BIAS;
        case Epilog::relu_aux_bias:
            return CUBLASLT_EPILOGUE_RELU_AUX_BIAS;
        case Epilog::gelu:
            return CUBLASLT_EPILOGUE_GELU;
        case Epilog::gelu_aux:
            return CUBLASLT_EPILOGUE_GELU_AUX;
        case Epilog::gelu_bias:
            return CUBLASLT_EPILOGUE_GELU_BIAS;
        case Epilog::gelu_aux_bias:
            return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
        case Epilog::drelu:
            return CUBLASLT_EPILOGUE_DRELU;
        case Epilog::drelu_bgrad:
            return CUBLASLT_EPILOGUE_DRELU_BGRAD;
        case Epilog::dgelu:
            return CUBLASLT_EPILOGUE_DGELU;
        case Epilog::dgelu_bgrad:
            return CUBLASLT_EPILOGUE_DGELU_BGRAD;
        // The user's A is cuBLASLt's A without the swap and cuBLASLt's B with it.
        case Epilog::bgrada:
            return swap ? CUBLASLT_EPILOGUE_BGRADB : CUBLASLT_EPILOGUE_BGRADA;
        case Epilog::bgradb:
            return swap ? CUBLASLT_EPILOGUE_BGRADA : CUBLASLT_EPILOGUE_BGRADB;
        // SiLU runs in gpumath's elementwise pass (epilog_pass_stage leaves cuBLASLt the bias).
        case Epilog::silu:
            return CUBLASLT_EPILOGUE_DEFAULT;
        case Epilog::silu_bias:
            return CUBLASLT_EPILOGUE_BIAS;
    }
    return CUBLASLT_EPILOGUE_DEFAULT;
}

}  // namespace

void arrangement_stage(const MatmulSignature& sig, const BiasInput& bias, MatmulProblem& P) {
    const TensorLayout& d = *P.signature.d;
    P.lt.swap = choose_swap(sig, bias, d, P);
    arrange_operands(sig, d, P);
    arrange_c(sig, bias, d, P);
    const TypeRule& rule = type_rule(P.types.a, P.types.compute);
    P.lt.compute = rule.lt_compute;
    P.lt.scale_type = rule.scale_type;
}

void lt_epilog_stage(MatmulProblem& P) {
    const char* api = P.api;
    const Epilog epilog = P.inputs.epilog;
    const TensorLayout& a = P.signature.a;
    const TensorLayout& b = P.signature.b;
    const std::int64_t M = P.shape.m, N = P.shape.n, K = P.shape.k;
    P.lt.epilog = lt_epilog_of(P.inputs.effective, P.lt.swap);
    // cuBLASLt's bias-gradient epilogs: BGRADA runs with cuBLASLt's A not transposed, BGRADB with
    // its B transposed (BGRADB with a non-transposed B has no algorithm). In either arrangement
    // that means the user's a column-major for bgrada and the user's b row-major for bgradb.
    const Matrix am = matrix_of(a), bm = matrix_of(b);
    if (epilog == Epilog::bgrada && !col_major(M, K, am.rs, am.cs))
        unsupported(api,
                    "a: strides {} given; bgrada needs a column-major a (unit stride along M = {}, e.g. strides "
                    "(1, {})), because cuBLASLt's bias-gradient kernels reduce a over K along its unit-stride "
                    "dimension: pass a as a column-major view (the transpose of a row-major (K, M) buffer)",
                    strides_text(a), M, M);
    if (epilog == Epilog::bgradb && !col_major(N, K, bm.cs, bm.rs))
        unsupported(api,
                    "b: strides {} given; bgradb needs a row-major b (unit stride along N = {}, e.g. strides "
                    "({}, 1)), because cuBLASLt's bias-gradient kernels reduce b over K along its unit-stride "
                    "dimension: pass b row-major",
                    strides_text(b), N, N);
    if ((P.lt.epilog == CUBLASLT_EPILOGUE_BGRADA && P.lt.op_a != CUBLAS_OP_N) ||
        (P.lt.epilog == CUBLASLT_EPILOGUE_BGRADB && P.lt.op_b != CUBLAS_OP_T))
        unsupported(api,
                    "epilog: {} with a {} and b {}: cuBLASLt's bias-gradient epilogs need the reduced operand with "
                    "unit stride along the gradient",
                    to_string(epilog), to_string(a), to_string(b));
}

const char* lt_epilog_name(cublasLtEpilogue_t e) noexcept {
    switch (e) {
        case CUBLASLT_EPILOGUE_DEFAULT:
            return "DEFAULT";
        case CUBLASLT_EPILOGUE_RELU:
            return "RELU";
        case CUBLASLT_EPILOGUE_RELU_AUX:
            return "RELU_AUX";
        case CUBLASLT_EPILOGUE_BIAS:
            return "BIAS";
        case CUBLASLT_EPILOGUE_RELU_BIAS:
            return "RELU_BIAS";
        case CUBLASLT_EPILOGUE_RELU_AUX_BIAS:
            return "RELU_AUX_BIAS";
        case CUBLASLT_EPILOGUE_DRELU:
            return "DRELU";
        case CUBLASLT_EPILOGUE_DRELU_BGRAD:
            return "DRELU_BGRAD";
        case CUBLASLT_EPILOGUE_GELU:
            return "GELU";
        case CUBLASLT_EPILOGUE_GELU_AUX:
            return "GELU_AUX";
        case CUBLASLT_EPILOGUE_GELU_BIAS:
            return "GELU_BIAS";
        case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
            return "GELU_AUX_BIAS";
        case CUBLASLT_EPILOGUE_DGELU:
            return "DGELU";
        case CUBLASLT_EPILOGUE_DGELU_BGRAD:
            return "DGELU_BGRAD";
        case CUBLASLT_EPILOGUE_BGRADA:
            return "BGRADA";
        case CUBLASLT_EPILOGUE_BGRADB:
            return "BGRADB";
        default:
            return "?";
    }
}

}  // namespace gpumath::detail
