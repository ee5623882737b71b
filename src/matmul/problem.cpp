// SPDX-License-Identifier: Apache-2.0
// Validation of a matmul problem and its arrangement on cuBLASLt. Host only: no CUDA calls, so
// bad input is reported on any machine before any GPU work.
//
// cuBLASLt works on column-major matrices. A column-major D is computed as D = op(A) op(B); a
// row-major D as D^T = op(B^T) op(A^T) ("swap"), so D is column-major to cuBLASLt either way and
// the epilog's bias, aux and bias-gradient vectors run along D's unit-stride dimension.
#include "matmul/internal.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <gpumath/detail/status.hpp>

namespace gpumath::detail {
namespace {

constexpr std::int64_t round_up(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }

template <class... Args>
[[noreturn]] void invalid(const char* api, fmt::format_string<Args...> f, Args&&... args) {
    throw_invalid(fmt::format(f, std::forward<Args>(args)...), api);
}
template <class... Args>
[[noreturn]] void unsupported(const char* api, fmt::format_string<Args...> f, Args&&... args) {
    throw_not_supported(fmt::format(f, std::forward<Args>(args)...), api);
}

std::string shape_text(const TensorLayout& l) { return to_string(l.shape()); }
std::string strides_text(const TensorLayout& l) { return to_string(l.strides()); }

/// The last two dimensions of a layout.
struct Matrix {
    std::int64_t rows, cols, rs, cs;
};
Matrix matrix_of(const TensorLayout& l) { return {l.shape(-2), l.shape(-1), l.stride(-2), l.stride(-1)}; }

/// X (rows x cols, strides rs, cs) as a column-major matrix, when expressible.
std::optional<LtMatrix> col_major(std::int64_t rows, std::int64_t cols, std::int64_t rs, std::int64_t cs) {
    if (rows > 1 && rs != 1) return std::nullopt;
    // With one column the leading dimension addresses nothing; keep it generous and aligned.
    const std::int64_t ld = cols > 1 ? cs : round_up(std::max<std::int64_t>(rows, 1), 16);
    if (ld < std::max<std::int64_t>(rows, 1)) return std::nullopt;
    LtMatrix m;
    m.rows = std::uint64_t(rows);
    m.cols = std::uint64_t(cols);
    m.ld = ld;
    return m;
}

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

/// The batch dimensions of a layout (all but the last `matrix_rank`).
std::span<const std::int64_t> batch_dims(const TensorLayout& l, int matrix_rank = 2) {
    const int r = std::max(0, l.rank() - matrix_rank);
    return l.shape().first(std::size_t(r));
}

struct BatchShape {
    std::array<std::int64_t, max_rank> dims{};
    int rank = 0;
    [[nodiscard]] std::span<const std::int64_t> span() const { return {dims.data(), std::size_t(rank)}; }
    [[nodiscard]] std::int64_t count() const {
        std::int64_t n = 1;
        for (int i = 0; i < rank; ++i) n *= dims[std::size_t(i)];
        return n;
    }
};

/// True when the batch dimensions of `l` (all but the last `matrix_rank`) broadcast to `full`.
bool batch_broadcasts(const TensorLayout& l, const BatchShape& full, int matrix_rank) {
    const auto mine = batch_dims(l, matrix_rank);
    const int extra = int(mine.size()) - full.rank;
    for (int i = 0; i < int(mine.size()); ++i) {
        const int j = i - extra;
        if (j < 0) {
            if (mine[std::size_t(i)] != 1) return false;
            continue;
        }
        if (mine[std::size_t(i)] != 1 && mine[std::size_t(i)] != full.dims[std::size_t(j)]) return false;
    }
    return true;
}

/// The single batch stride of `l` over `full` (0 = broadcast), or nullopt when the batch
/// dimensions are not one strided sequence ("tileable").
std::optional<std::int64_t> single_batch_stride(const TensorLayout& l, const BatchShape& full, int matrix_rank) {
    const int lb = std::max(0, l.rank() - matrix_rank);
    std::int64_t stride = 0;
    std::int64_t next = -1;
    for (int j = full.rank - 1; j >= 0; --j) {
        const std::int64_t ext = full.dims[std::size_t(j)];
        if (ext == 1) continue;
        const int oj = j - (full.rank - lb);
        const std::int64_t s = (oj >= 0 && l.shape(oj) != 1) ? l.stride(oj) : 0;
        if (next < 0) {
            stride = s;
            next = s * ext;
            continue;
        }
        if (stride == 0) {
            if (s != 0) return std::nullopt;
            continue;
        }
        if (s != next) return std::nullopt;
        next *= ext;
    }
    return stride;
}

/// A dense row-major layout (*batch, rows, cols) or (*batch, length) when cols < 0.
TensorLayout dense(DataType t, const BatchShape& batch, std::int64_t rows, std::int64_t cols) {
    std::array<std::int64_t, max_rank> shape{};
    std::size_t r = 0;
    for (int i = 0; i < batch.rank; ++i) shape[r++] = batch.dims[std::size_t(i)];
    shape[r++] = rows;
    if (cols >= 0) shape[r++] = cols;
    return TensorLayout(t, std::span<const std::int64_t>(shape.data(), r));
}

/// The layout of (*batch, rows, cols) whose matrices start `matrix_stride` apart, with the given
/// strides for the last two dimensions.
TensorLayout strided(DataType t, const BatchShape& batch, std::int64_t rows, std::int64_t cols, std::int64_t rs,
                     std::int64_t cs, std::int64_t matrix_stride) {
    std::array<std::int64_t, max_rank> shape{}, strides{};
    std::size_t r = std::size_t(batch.rank);
    std::int64_t s = matrix_stride;
    for (int i = batch.rank - 1; i >= 0; --i) {
        shape[std::size_t(i)] = batch.dims[std::size_t(i)];
        strides[std::size_t(i)] = s;
        s *= batch.dims[std::size_t(i)];
    }
    shape[r] = rows;
    strides[r++] = rs;
    shape[r] = cols;
    strides[r++] = cs;
    return TensorLayout(t, std::span<const std::int64_t>(shape.data(), r), std::span<const std::int64_t>(strides.data(), r));
}

bool has_broadcast_stride(const TensorLayout& l) {
    for (int i = 0; i < l.rank(); ++i)
        if (l.shape(i) > 1 && l.stride(i) == 0) return true;
    return false;
}

/// The extents of a's and b's batch dimensions that do not broadcast.
struct BatchClash {
    std::int64_t a = 1, b = 1;
};

/// NumPy broadcasting of the batch dimensions of a and b; nullopt (and the clash) when they do not
/// broadcast.
std::optional<BatchShape> broadcast_batch(const TensorLayout& a, const TensorLayout& b, BatchClash* clash) {
    const auto ab = batch_dims(a), bb = batch_dims(b);
    BatchShape full;
    full.rank = int(std::max(ab.size(), bb.size()));
    for (int i = 0; i < full.rank; ++i) {
        const int ia = i - (full.rank - int(ab.size())), ib = i - (full.rank - int(bb.size()));
        const std::int64_t ea = ia >= 0 ? ab[std::size_t(ia)] : 1, eb = ib >= 0 ? bb[std::size_t(ib)] : 1;
        if (ea != eb && ea != 1 && eb != 1) {
            if (clash != nullptr) *clash = {ea, eb};
            return std::nullopt;
        }
        full.dims[std::size_t(i)] = std::max(ea, eb);
    }
    return full;
}

/// The D of a call without a d view: dense (*batch, M, N), row-major unless c is given and can only
/// be read with a column-major D (cuBLASLt reads C and writes D with one unit-stride dimension);
/// then column-major.
TensorLayout default_result_layout(DataType t, const BatchShape& batch, std::int64_t m, std::int64_t n,
                                   const TensorLayout* c) {
    if (c != nullptr && c->rank() >= 2 && c->shape(-2) == m && c->shape(-1) == n) {
        const Matrix cm = matrix_of(*c);
        if (!col_major(n, m, cm.cs, cm.rs) && col_major(m, n, cm.rs, cm.cs)) return strided(t, batch, m, n, 1, m, m * n);
    }
    return dense(t, batch, m, n);
}

// ---------------------------------------------------------------------------------------------
// Types.

std::optional<DataType> default_result(DataType t) {
    switch (t) {
    case DataType::f16:
    case DataType::bf16:
    case DataType::f32:
    case DataType::f64:
    case DataType::c32:
    case DataType::c64: return t;
    case DataType::i8: return DataType::i32;
    case DataType::e4m3:
    case DataType::e5m2: return DataType::bf16;
    case DataType::i32: return std::nullopt;
    }
    return std::nullopt;
}

std::vector<ComputeType> allowed_compute(DataType t) {
    switch (t) {
    case DataType::f16: return {ComputeType::f32, ComputeType::f16};
    case DataType::bf16: return {ComputeType::f32};
    case DataType::f32:
    case DataType::c32:
        return {ComputeType::f32, ComputeType::f32_fast_f16, ComputeType::f32_fast_bf16, ComputeType::f32_fast_tf32};
    case DataType::f64:
    case DataType::c64: return {ComputeType::f64};
    case DataType::i8: return {ComputeType::i32};
    case DataType::e4m3:
    case DataType::e5m2: return {ComputeType::f32};
    case DataType::i32: return {};
    }
    return {};
}

std::vector<DataType> allowed_results(DataType a, DataType b, ComputeType compute) {
    if (is_fp8(a)) {
        if (a == DataType::e4m3 && b == DataType::e4m3)
            return {DataType::bf16, DataType::f16, DataType::f32, DataType::e4m3};
        return {DataType::bf16, DataType::f16, DataType::f32, DataType::e4m3, DataType::e5m2};
    }
    switch (a) {
    case DataType::f16:
        if (compute == ComputeType::f16) return {DataType::f16};
        return {DataType::f16, DataType::f32};
    case DataType::bf16: return {DataType::bf16, DataType::f32};
    case DataType::i8: return {DataType::i32};
    default: return {a};
    }
}

std::string list_text(const std::vector<DataType>& v) {
    std::string s;
    for (DataType t : v) s += (s.empty() ? "" : ", ") + std::string(to_string(t));
    return s;
}
std::string list_text(const std::vector<ComputeType>& v) {
    std::string s;
    for (ComputeType t : v) s += (s.empty() ? "" : ", ") + std::string(to_string(t));
    return s;
}

cublasComputeType_t lt_compute_of(ComputeType c) {
    switch (c) {
    case ComputeType::f16: return CUBLAS_COMPUTE_16F;
    case ComputeType::f32_fast_f16: return CUBLAS_COMPUTE_32F_FAST_16F;
    case ComputeType::f32_fast_bf16: return CUBLAS_COMPUTE_32F_FAST_16BF;
    case ComputeType::f32_fast_tf32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    case ComputeType::f64: return CUBLAS_COMPUTE_64F;
    case ComputeType::i32: return CUBLAS_COMPUTE_32I;
    case ComputeType::automatic:
    case ComputeType::f32: return CUBLAS_COMPUTE_32F;
    }
    return CUBLAS_COMPUTE_32F;
}

cudaDataType_t scale_type_of(ComputeType c, DataType input) {
    const bool complex = is_complex(input);
    switch (c) {
    case ComputeType::f16: return CUDA_R_16F;
    case ComputeType::f64: return complex ? CUDA_C_64F : CUDA_R_64F;
    case ComputeType::i32: return CUDA_R_32I;
    default: return complex ? CUDA_C_32F : CUDA_R_32F;
    }
}

Epilog strip_bias(Epilog e) {
    switch (e) {
    case Epilog::bias: return Epilog::none;
    case Epilog::relu_bias: return Epilog::relu;
    case Epilog::relu_aux_bias: return Epilog::relu_aux;
    case Epilog::gelu_bias: return Epilog::gelu;
    case Epilog::gelu_aux_bias: return Epilog::gelu_aux;
    default: return e;
    }
}

cublasLtEpilogue_t lt_epilog_of(Epilog e, bool swap) {
    switch (e) {
    case Epilog::none: return CUBLASLT_EPILOGUE_DEFAULT;
    case Epilog::relu: return CUBLASLT_EPILOGUE_RELU;
    case Epilog::relu_aux: return CUBLASLT_EPILOGUE_RELU_AUX;
    case Epilog::bias: return CUBLASLT_EPILOGUE_BIAS;
    case Epilog::relu_bias: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case Epilog::relu_aux_bias: return CUBLASLT_EPILOGUE_RELU_AUX_BIAS;
    case Epilog::gelu: return CUBLASLT_EPILOGUE_GELU;
    case Epilog::gelu_aux: return CUBLASLT_EPILOGUE_GELU_AUX;
    case Epilog::gelu_bias: return CUBLASLT_EPILOGUE_GELU_BIAS;
    case Epilog::gelu_aux_bias: return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    case Epilog::drelu: return CUBLASLT_EPILOGUE_DRELU;
    case Epilog::drelu_bgrad: return CUBLASLT_EPILOGUE_DRELU_BGRAD;
    case Epilog::dgelu: return CUBLASLT_EPILOGUE_DGELU;
    case Epilog::dgelu_bgrad: return CUBLASLT_EPILOGUE_DGELU_BGRAD;
    // The user's A is cuBLASLt's A without the swap and cuBLASLt's B with it.
    case Epilog::bgrada: return swap ? CUBLASLT_EPILOGUE_BGRADB : CUBLASLT_EPILOGUE_BGRADA;
    case Epilog::bgradb: return swap ? CUBLASLT_EPILOGUE_BGRADA : CUBLASLT_EPILOGUE_BGRADB;
    }
    return CUBLASLT_EPILOGUE_DEFAULT;
}

/// How a bias of some shape broadcasts against D.
struct BiasShape {
    bool per_col = false;  // (N,) / (1, N): one value per column of D
    bool per_row = false;  // (M, 1): one value per row
    bool full = false;     // (M, N)
    std::int64_t p = 1, q = 1, ps = 0, qs = 0;  // trailing extents and strides (rank 1 padded to (1, N))
};

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

}  // namespace

const char* lt_epilog_name(cublasLtEpilogue_t e) noexcept {
    switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT: return "DEFAULT";
    case CUBLASLT_EPILOGUE_RELU: return "RELU";
    case CUBLASLT_EPILOGUE_RELU_AUX: return "RELU_AUX";
    case CUBLASLT_EPILOGUE_BIAS: return "BIAS";
    case CUBLASLT_EPILOGUE_RELU_BIAS: return "RELU_BIAS";
    case CUBLASLT_EPILOGUE_RELU_AUX_BIAS: return "RELU_AUX_BIAS";
    case CUBLASLT_EPILOGUE_DRELU: return "DRELU";
    case CUBLASLT_EPILOGUE_DRELU_BGRAD: return "DRELU_BGRAD";
    case CUBLASLT_EPILOGUE_GELU: return "GELU";
    case CUBLASLT_EPILOGUE_GELU_AUX: return "GELU_AUX";
    case CUBLASLT_EPILOGUE_GELU_BIAS: return "GELU_BIAS";
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS: return "GELU_AUX_BIAS";
    case CUBLASLT_EPILOGUE_DGELU: return "DGELU";
    case CUBLASLT_EPILOGUE_DGELU_BGRAD: return "DGELU_BGRAD";
    case CUBLASLT_EPILOGUE_BGRADA: return "BGRADA";
    case CUBLASLT_EPILOGUE_BGRADB: return "BGRADB";
    default: return "?";
    }
}

std::string MatmulProblem::describe() const {
    std::string s = fmt::format("M={} N={} K={} batch={}; a {}; b {}; d {}", m, n, k, batch, to_string(a), to_string(b),
                                to_string(d));
    if (c) s += fmt::format("; {} {}", c_from_bias ? "bias (as c)" : "c", to_string(*c));
    s += fmt::format("; epilog {}; compute {}; cuBLASLt {} (D{} = {}{} x {}{}, epilogue {})", to_string(epilog),
                     to_string(compute), swap ? "swap" : "no swap", swap ? "^T" : "", swap ? "B" : "A",
                     op_a == CUBLAS_OP_T ? "^T" : "", swap ? "A" : "B", op_b == CUBLAS_OP_T ? "^T" : "",
                     lt_epilog_name(lt_epilog));
    return s;
}

void check_options(const MatmulOptions& options, const char* api) {
    if (static_cast<int>(options.compute_type) > static_cast<int>(ComputeType::i32))
        invalid(api, "options.compute_type: {} is not a ComputeType; allowed: automatic, f16, f32, f32_fast_f16, "
                     "f32_fast_bf16, f32_fast_tf32, f64, i32",
                static_cast<int>(options.compute_type));
    if (static_cast<int>(options.epilog) > static_cast<int>(Epilog::bgradb))
        invalid(api, "options.epilog: {} is not an Epilog; allowed: none, relu, relu_aux, bias, relu_bias, "
                     "relu_aux_bias, gelu, gelu_aux, gelu_bias, gelu_aux_bias, drelu, drelu_bgrad, dgelu, "
                     "dgelu_bgrad, bgrada, bgradb",
                static_cast<int>(options.epilog));
    if (options.result_type && !is_valid(*options.result_type))
        invalid(api, "options.result_type: {} is not a DataType; allowed: f16, bf16, f32, f64, c32, c64, e4m3, e5m2, "
                     "i8, i32 (or empty for the default)",
                static_cast<int>(*options.result_type));
}

MatmulProblem analyze(const MatmulSignature& sig, const MatmulOptions& options, const char* api) {
    check_options(options, api);
    MatmulProblem P;
    P.api = api;
    const TensorLayout& a = sig.a;
    const TensorLayout& b = sig.b;

    // Shapes.
    if (a.rank() < 2)
        invalid(api, "a: rank {} layout {}; a must be a matrix (..., M, K) of rank >= 2", a.rank(), to_string(a));
    if (b.rank() < 2)
        invalid(api, "b: rank {} layout {}; b must be a matrix (..., K, N) of rank >= 2", b.rank(), to_string(b));
    const std::int64_t M = a.shape(-2), K = a.shape(-1), N = b.shape(-1);
    if (b.shape(-2) != K)
        invalid(api, "b: shape {} does not match a {}: a has K = {} columns, b has {} rows", shape_text(b), shape_text(a),
                K, b.shape(-2));
    if (a.size() == 0) invalid(api, "a: shape {} is empty; gpumath does not run empty products", shape_text(a));
    if (b.size() == 0) invalid(api, "b: shape {} is empty; gpumath does not run empty products", shape_text(b));
    P.m = M;
    P.n = N;
    P.k = K;
    P.a = a;
    P.b = b;

    // Batch: NumPy broadcasting of a's and b's leading dimensions.
    BatchClash clash;
    const std::optional<BatchShape> broadcast = broadcast_batch(a, b, &clash);
    if (!broadcast)
        invalid(api, "b: batch dimensions of shape {} do not broadcast with a's {} (extent {} vs {})", shape_text(b),
                shape_text(a), clash.b, clash.a);
    const BatchShape& full = *broadcast;
    P.batch = full.count();
    if (P.batch > std::numeric_limits<std::int32_t>::max())
        unsupported(api, "a, b: {} products in the batch; cuBLASLt's batch count is a 32-bit integer", P.batch);

    // Types.
    const DataType at = a.dtype(), bt = b.dtype();
    const bool fp8 = is_fp8(at) || is_fp8(bt);
    if (!default_result(at))
        invalid(api, "a: dtype {} is not a matmul input; inputs are f16, bf16, f32, f64, c32, c64, i8, e4m3, e5m2",
                to_string(at));
    if (fp8) {
        if (!is_fp8(at) || !is_fp8(bt))
            invalid(api, "b: dtype {} with a of dtype {}; FP8 products need both inputs in FP8 (e4m3 or e5m2)",
                    to_string(bt), to_string(at));
        if (at == DataType::e5m2 && bt == DataType::e5m2)
            unsupported(api, "a, b: both e5m2; cuBLASLt's FP8 products need at least one e4m3 input");
    } else if (at != bt) {
        invalid(api, "b: dtype {} differs from a's {}; a and b must have the same dtype (only FP8 e4m3/e5m2 mix)",
                to_string(bt), to_string(at));
    }
    P.fp8 = fp8;
    P.a_type = at;

    const auto computes = allowed_compute(at);
    ComputeType compute = options.compute_type == ComputeType::automatic ? computes.front() : options.compute_type;
    if (std::find(computes.begin(), computes.end(), compute) == computes.end())
        invalid(api, "compute_type: {} is not available for {} inputs; allowed: automatic, {}",
                to_string(options.compute_type), to_string(at), list_text(computes));
    P.compute = compute;
    P.lt_compute = lt_compute_of(compute);
    P.scale_type = scale_type_of(compute, at);

    DataType dt = *default_result(at);
    const char* d_source = "result_type";
    if (sig.d) {
        if (options.result_type && *options.result_type != sig.d->dtype())
            invalid(api, "result_type: {} given, but d has dtype {}; leave result_type empty or make them agree",
                    to_string(*options.result_type), to_string(sig.d->dtype()));
        dt = sig.d->dtype();
        d_source = "d";
    } else if (options.result_type) {
        dt = *options.result_type;
    }
    {
        const auto results = allowed_results(at, bt, compute);
        if (std::find(results.begin(), results.end(), dt) == results.end())
            invalid(api, "{}: dtype {} is not a result of {} x {} products with compute type {}; allowed: {}", d_source,
                    to_string(dt), to_string(at), to_string(bt), to_string(compute), list_text(results));
    }
    P.d_type = dt;

    // FP8 C and bias types: bf16 or f16 (cuBLASLt's FP8 table); otherwise the result type.
    DataType ct = dt;
    if (is_fp8(dt)) {
        ct = DataType::bf16;
        if (sig.c) ct = sig.c->dtype();
        else if (sig.bias) ct = sig.bias->dtype();
        if (ct != DataType::bf16 && ct != DataType::f16)
            invalid(api, "{}: dtype {} with an FP8 result; C and bias of FP8 products with an {} result are bf16 or f16",
                    sig.c ? "c" : "bias", to_string(ct), to_string(dt));
    }
    P.c_type = ct;
    P.bias_type = fp8 ? (dt == DataType::f16 ? DataType::f16 : (is_fp8(dt) ? ct : DataType::bf16)) : dt;
    P.aux_type = dt;

    if (options.fast_accumulation && !fp8)
        invalid(api, "fast_accumulation: applies to FP8 inputs only; a is {}", to_string(at));
    P.fast_accumulation = options.fast_accumulation;

    // Scales.
    P.scales = sig.scales;
    if (sig.scales != 0 && !fp8) {
        const char* which = (sig.scales & scale_a)   ? "scales.a"
                            : (sig.scales & scale_b) ? "scales.b"
                            : (sig.scales & scale_c) ? "scales.c"
                            : (sig.scales & scale_d) ? "scales.d"
                                                     : "scales.amax_d";
        invalid(api, "{}: per-tensor scales apply to FP8 inputs only; a is {}", which, to_string(at));
    }
    if (fp8 && (sig.scales & scale_c))
        invalid(api, "scales.c: cuBLASLt takes a C scale only for an FP8 c, and the c of FP8 products is {} here; "
                     "scale c with beta instead",
                to_string(ct));
    if (fp8 && !is_fp8(dt) && (sig.scales & (scale_d | scale_amax_d)))
        invalid(api, "{}: applies to an FP8 result only; d is {}", (sig.scales & scale_d) ? "scales.d" : "scales.amax_d",
                to_string(dt));
    // cuBLASLt's heuristic offers FP8 algorithms for any scale pointer, but cublasLtMatmul refuses
    // them (CUBLAS_STATUS_NOT_SUPPORTED) for pointers less than 16-byte aligned (H200, CUDA 13.0).
    if (fp8 && sig.scales != 0 && sig.align[slot_scales] < 16)
        unsupported(api,
                    "scales: a scale or amax pointer is only {}-byte aligned; cuBLASLt's FP8 kernels need every scale "
                    "and amax pointer 16-byte aligned (give each scale its own 16-byte slot)",
                    sig.align[slot_scales]);

    // Epilog against types and inputs.
    const Epilog epilog = options.epilog;
    P.epilog = epilog;
    if (epilog != Epilog::none && (is_complex(at) || at == DataType::i8))
        unsupported(api, "epilog: {} is not available for {} products; cuBLASLt's epilogs need real floating-point "
                         "types (use Epilog::none)",
                    to_string(epilog), to_string(at));
    if (fp8 && (epilog_reads_aux(epilog) || epilog_writes_bias_grad(epilog)))
        unsupported(api, "epilog: {} with FP8 inputs; gpumath runs FP8 products with forward epilogs only (none, relu, "
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
        invalid(api, "bias_grad: given, but epilog {} computes no bias gradient (drelu_bgrad, dgelu_bgrad, bgrada, "
                     "bgradb do)",
                to_string(epilog));
    if (!sig.from_layouts && epilog_takes_bias(epilog) && !sig.bias)
        invalid(api, "bias: epilog {} needs MatmulArgs::bias: shape (N,) or (1, N) per column, (M, 1) per row, or "
                     "(M, N)",
                to_string(epilog));
    if (!sig.from_layouts && epilog_reads_aux(epilog) && !sig.aux)
        invalid(api, "aux: epilog {} reads the aux output of a forward {} product; pass it as MatmulArgs::aux",
                to_string(epilog), epilog_aux_is_relu_mask(epilog) ? "relu_aux" : "gelu_aux");

    // D.
    TensorLayout d;
    if (sig.d) {
        d = *sig.d;
        bool same = d.rank() == full.rank + 2 && d.shape(-2) == M && d.shape(-1) == N;
        for (int i = 0; same && i < full.rank; ++i) same = d.shape(i) == full.dims[std::size_t(i)];
        if (!same) {
            const TensorLayout want = dense(dt, full, M, N);
            invalid(api, "d: shape {} given; the product of a {} and b {} has shape {}", shape_text(d), shape_text(a),
                    shape_text(b), shape_text(want));
        }
        if (has_broadcast_stride(d))
            invalid(api, "d: strides {} repeat elements (a stride of 0); an output must not broadcast", strides_text(d));
    } else {
        d = default_result_layout(dt, full, M, N, sig.c ? &*sig.c : nullptr);
    }
    P.d = d;

    // C.
    if (sig.c) {
        const TensorLayout& c = *sig.c;
        if (c.dtype() != ct)
            invalid(api, "c: dtype {} given; c must be {} here ({} result{})", to_string(c.dtype()), to_string(ct),
                    to_string(dt), is_fp8(dt) ? "; FP8 results take a bf16 or f16 c" : "");
        if (c.rank() < 2 || c.shape(-2) != M || c.shape(-1) != N || !batch_broadcasts(c, full, 2))
            invalid(api, "c: shape {} does not broadcast to d's {}; c is (..., M, N) = (..., {}, {})", shape_text(c),
                    shape_text(d), M, N);
        P.c = c;
    }

    // Bias.
    BiasShape bias{};
    TensorLayout bias_layout;
    if (epilog_takes_bias(epilog)) {
        if (sig.bias) {
            bias_layout = *sig.bias;
            if (bias_layout.rank() == 0)
                invalid(api, "bias: rank 0; a bias has shape (N,), (1, N), (M, 1) or (M, N) (M = {}, N = {})", M, N);
            bias = bias_shape_of(bias_layout, M, N);
            if (!bias.per_col && !bias.per_row && !bias.full)
                invalid(api, "bias: shape {} does not broadcast against d (..., {}, {}) as a per-column (N,) or (1, N), "
                             "per-row (M, 1) or full (M, N) bias",
                        shape_text(bias_layout), M, N);
            // A full bias is C, so it has C's type.
            const DataType want = bias.full ? ct : P.bias_type;
            if (bias_layout.dtype() != want)
                invalid(api, "bias: dtype {} given; {} products with a {} result take a {} {}bias",
                        to_string(bias_layout.dtype()), to_string(at), to_string(dt), to_string(want),
                        bias.full ? "full (M, N) " : "");
            if (!batch_broadcasts(bias_layout, full, bias_layout.rank() == 1 ? 1 : 2))
                invalid(api, "bias: batch dimensions of shape {} do not broadcast to d's {}", shape_text(bias_layout),
                        shape_text(d));
        } else {
            // Planning from layouts alone: a per-column bias unless D can only be column-major.
            const Matrix dm = matrix_of(d);
            const bool row_ok = col_major(N, M, dm.cs, dm.rs).has_value();
            bias_layout = row_ok ? TensorLayout(P.bias_type, {N}) : TensorLayout(P.bias_type, {M, 1});
            bias = bias_shape_of(bias_layout, M, N);
        }
    }

    // Arrangement: swap (D row-major) or not (D column-major).
    const Matrix dm = matrix_of(d);
    const auto d_col = col_major(M, N, dm.rs, dm.cs);
    const auto d_row = col_major(N, M, dm.cs, dm.rs);
    if (!d_col && !d_row)
        unsupported(api, "d: strides {} give no unit stride among the last two dimensions (with a leading dimension "
                         ">= the matrix); cuBLASLt writes row- or column-major matrices only",
                    strides_text(d));
    const char* need_swap = nullptr;    // the operand that needs a row-major arrangement
    const char* need_noswap = nullptr;  // ... a column-major one
    const bool vector_bias = epilog_takes_bias(epilog) && !bias.full;
    if (vector_bias) {
        if (bias.per_col && !bias.per_row) need_swap = "bias";
        if (bias.per_row && !bias.per_col) need_noswap = "bias";
    }
    if (sig.bias_grad && (epilog == Epilog::drelu_bgrad || epilog == Epilog::dgelu_bgrad) && M != N) {
        const TensorLayout& g = *sig.bias_grad;
        const std::int64_t len = g.rank() == 0                                               ? 0
                                 : (g.rank() >= 2 && g.shape(-1) == 1 && g.shape(-2) > 1) ? g.shape(-2)
                                                                                          : g.shape(-1);
        if (len == N) need_swap = need_swap ? need_swap : "bias_grad";
        else if (len == M) need_noswap = need_noswap ? need_noswap : "bias_grad";
    }
    if (sig.aux && M != N && M > 1 && N > 1) {
        const TensorLayout& x = *sig.aux;
        if (epilog_aux_is_relu_mask(epilog)) {
            if (x.rank() >= 2 && x.shape(-2) == M) need_swap = need_swap ? need_swap : "aux";
            else if (x.rank() >= 2 && x.shape(-2) == N) need_noswap = need_noswap ? need_noswap : "aux";
        } else if (x.rank() >= 2) {
            if (x.stride(-1) == 1 && x.stride(-2) != 1) need_swap = need_swap ? need_swap : "aux";
            else if (x.stride(-2) == 1 && x.stride(-1) != 1) need_noswap = need_noswap ? need_noswap : "aux";
        }
    }
    if (need_swap && need_noswap)
        invalid(api, "{}: needs a row-major arrangement of d while {} needs a column-major one; cuBLASLt runs epilog "
                     "vectors along one dimension of d",
                need_swap, need_noswap);
    bool swap;
    if (need_swap) {
        if (!d_row) {
            if (std::string_view(need_swap) == "bias")
                invalid(api, "bias: shape {} adds one value per column of d, and cuBLASLt adds its epilog bias along d's "
                             "unit-stride dimension; d has strides {} (column-major), so pass a row-major d or a bias "
                             "of shape (M, 1) = ({}, 1) for one value per row",
                        shape_text(bias_layout), strides_text(d), M);
            invalid(api, "{}: its layout follows a row-major d, but d has strides {} (column-major)", need_swap,
                    strides_text(d));
        }
        swap = true;
    } else if (need_noswap) {
        if (!d_col) {
            if (std::string_view(need_noswap) == "bias")
                invalid(api, "bias: shape {} adds one value per row of d, and cuBLASLt adds its epilog bias along d's "
                             "unit-stride dimension; d has strides {} (row-major), so pass a column-major d (the "
                             "allocating calls return row-major d) or a bias of shape (N,) = ({},) for one value per "
                             "column",
                        shape_text(bias_layout), strides_text(d), N);
            invalid(api, "{}: its layout follows a column-major d, but d has strides {} (row-major)", need_noswap,
                    strides_text(d));
        }
        swap = false;
    } else {
        swap = d_row.has_value();
    }
    P.swap = swap;

    // cuBLASLt's operands: A_lt (rows(D_lt) x K) and B_lt (K x cols(D_lt)).
    const Matrix am = matrix_of(a), bm = matrix_of(b);
    if (!arrange(am, false, false))
        unsupported(api, "a: strides {} give no unit stride among the last two dimensions (with a leading dimension >= "
                         "the matrix); cuBLASLt reads row- or column-major matrices only: make a contiguous",
                    strides_text(a));
    if (!arrange(bm, false, false))
        unsupported(api, "b: strides {} give no unit stride among the last two dimensions (with a leading dimension >= "
                         "the matrix); cuBLASLt reads row- or column-major matrices only: make b contiguous",
                    strides_text(b));
    // FP8 and integer tensor cores take K-contiguous operands ("TN"): prefer that form when both exist.
    const bool prefer_tn = fp8 || at == DataType::i8;
    // cuBLASLt's bias gradients want the reduced operand with unit stride along the gradient
    // (BGRADA: A_lt not transposed, BGRADB: B_lt transposed); checked below, after the other
    // epilog inputs, so that their errors come first.
    const bool lt_b_prefers_t = swap ? epilog == Epilog::bgrada : epilog == Epilog::bgradb;
    const bool lt_a_bgrad = swap ? epilog == Epilog::bgradb : epilog == Epilog::bgrada;
    const auto lt_a = swap ? arrange(bm, true, prefer_tn && !lt_a_bgrad) : arrange(am, false, prefer_tn && !lt_a_bgrad);
    const auto lt_b = swap ? arrange(am, true, lt_b_prefers_t) : arrange(bm, false, lt_b_prefers_t);
    P.lt_a = lt_a->m;
    P.op_a = lt_a->op;
    P.lt_b = lt_b->m;
    P.op_b = lt_b->op;
    P.lt_a.type = to_cuda(swap ? bt : at);
    P.lt_b.type = to_cuda(swap ? at : bt);
    P.lt_d = swap ? *d_row : *d_col;
    P.lt_d.type = to_cuda(dt);

    auto batch_stride = [&](const TensorLayout& l, const char* name, int matrix_rank) -> std::int64_t {
        const auto s = single_batch_stride(l, full, matrix_rank);
        if (!s)
            unsupported(api, "{}: batch strides of {} over batch shape {} cannot be expressed as one strided batch "
                             "(cuBLASLt's BATCH_COUNT + STRIDED_BATCH_OFFSET); make {}'s batch dimensions contiguous",
                        name, to_string(l), to_string(full.span()), name);
        return *s;
    };
    P.lt_a.batch_stride = batch_stride(swap ? b : a, swap ? "b" : "a", 2);
    P.lt_b.batch_stride = batch_stride(swap ? a : b, swap ? "a" : "b", 2);
    P.lt_d.batch_stride = batch_stride(d, "d", 2);
    if (P.batch > 1) {
        const std::int64_t span = P.lt_d.ld * std::int64_t(P.lt_d.cols - 1) + std::int64_t(P.lt_d.rows);
        if (P.lt_d.batch_stride < span)
            invalid(api, "d: batch stride {} is smaller than one matrix ({} elements); the products would overlap",
                    P.lt_d.batch_stride, span);
    }

    // C (the user's, or a full bias) has D's arrangement.
    std::optional<TensorLayout> c_layout = sig.c;
    if (epilog_takes_bias(epilog) && bias.full) {
        if (sig.c)
            invalid(api, "bias: shape {} is a full (M, N) bias, which gpumath adds through c, but c is given too; add "
                         "the bias to c instead",
                    shape_text(bias_layout));
        c_layout = bias_layout;
        P.c_from_bias = true;
        P.c = bias_layout;
    }
    if (c_layout) {
        const Matrix cm = matrix_of(*c_layout);
        const auto c_lt = swap ? col_major(N, M, cm.cs, cm.rs) : col_major(M, N, cm.rs, cm.cs);
        const char* cname = P.c_from_bias ? "bias" : "c";
        if (!c_lt)
            invalid(api, "{}: strides {} do not make it {}-major like d (strides {}); {} and d must share their "
                         "unit-stride dimension",
                    cname, strides_text(*c_layout), swap ? "row" : "column", strides_text(d), cname);
        P.lt_c = *c_lt;
        P.lt_c.batch_stride = batch_stride(*c_layout, cname, 2);
        P.has_c = true;
    } else {
        P.lt_c = P.lt_d;
    }
    P.lt_c.type = to_cuda(ct);

    // FP8 dimension rule (the layout rule depends on the device: checked when planning).
    if (fp8) {
        if (M % 16 != 0 || N % 16 != 0 || K % 16 != 0)
            unsupported(api, "a, b: FP8 products need M, N and K to be multiples of 16 (cuBLASLt's rule); M = {}, "
                             "N = {}, K = {}",
                        M, N, K);
        for (int s : {int(slot_a), int(slot_b), int(slot_c), int(slot_d)})
            if (sig.align[std::size_t(s)] < 16)
                unsupported(api, "{}: pointer is {}-byte aligned; FP8 products need 16-byte aligned operands",
                            slot_names[std::size_t(s)], sig.align[std::size_t(s)]);
    }

    // Epilog bias vector.
    P.effective_epilog = bias.full ? strip_bias(epilog) : epilog;
    std::optional<TensorLayout> bias_sig;
    if (epilog_takes_bias(epilog)) bias_sig = bias_layout;
    if (vector_bias) {
        P.bias_vector = true;
        const bool along_cols = swap;  // cuBLASLt's bias runs along D_lt's rows
        const std::int64_t len = along_cols ? N : M;
        const std::int64_t stride = along_cols ? bias.qs : bias.ps;
        if (len > 1 && stride != 1)
            invalid(api, "bias: stride {} along its length {} in layout {}; the bias vector must be packed (stride 1)",
                    stride, len, to_string(bias_layout));
        P.bias_batch_stride = batch_stride(bias_layout, "bias", bias_layout.rank() == 1 ? 1 : 2);
    }

    // Aux: ReLU bit mask or GELU input, column-major over D_lt.
    const std::int64_t r = std::int64_t(P.lt_d.rows), cdim = std::int64_t(P.lt_d.cols);
    if (epilog_writes_aux(epilog) || epilog_reads_aux(epilog)) {
        P.aux_kind = epilog_aux_is_relu_mask(epilog) ? AuxKind::relu_mask : AuxKind::gelu;
        const std::int64_t batch_matrices = P.batch;
        if (P.aux_kind == AuxKind::gelu) {
            const std::int64_t ld = round_up(r, 8);
            P.aux_storage = dense(P.aux_type, full, cdim, ld);
            P.aux_view = swap ? strided(P.aux_type, full, M, N, ld, 1, ld * cdim)
                              : strided(P.aux_type, full, M, N, 1, ld, ld * cdim);
            P.aux_ld = ld;
            P.aux_batch_stride = ld * cdim;
        } else {
            const std::int64_t bytes = round_up((r + 7) / 8, 16);
            P.aux_storage = dense(DataType::i8, full, cdim, bytes);
            P.aux_view = P.aux_storage;
            P.aux_ld = bytes * 8;
            P.aux_batch_stride = bytes * cdim * 8;
        }
        if (sig.aux) {
            const TensorLayout& x = *sig.aux;
            if (P.aux_kind == AuxKind::gelu) {
                if (x.dtype() != P.aux_type)
                    invalid(api, "aux: dtype {} given; the GELU aux of a {} result is {}", to_string(x.dtype()),
                            to_string(dt), to_string(P.aux_type));
                bool same = x.rank() == d.rank();
                for (int i = 0; same && i < d.rank(); ++i) same = x.shape(i) == d.shape(i);
                if (!same)
                    invalid(api, "aux: shape {} given; the GELU aux has d's shape {}", shape_text(x), shape_text(d));
                const Matrix xm = matrix_of(x);
                const auto x_lt = swap ? col_major(N, M, xm.cs, xm.rs) : col_major(M, N, xm.rs, xm.cs);
                if (!x_lt || x_lt->ld % 8 != 0 || x_lt->ld < r)
                    invalid(api, "aux: strides {} given; the GELU aux must be {}-major like d, with a leading dimension "
                                 "that is a multiple of 8 and >= {} (e.g. strides {})",
                            strides_text(x), swap ? "row" : "column", r, strides_text(P.aux_view));
                P.aux_ld = x_lt->ld;
                P.aux_batch_stride = batch_stride(x, "aux", 2);
                if (batch_matrices > 1 && (P.aux_batch_stride % 8 != 0 || P.aux_batch_stride < x_lt->ld * cdim))
                    invalid(api, "aux: batch stride {} must be a multiple of 8 and hold a whole matrix ({} elements)",
                            P.aux_batch_stride, x_lt->ld * cdim);
            } else {
                const std::int64_t min_bytes = (r + 7) / 8;
                const bool rank_ok = x.rank() == full.rank + 2 && x.shape(-2) == cdim && x.shape(-1) >= min_bytes;
                if (x.dtype() != DataType::i8 || !rank_ok || !batch_broadcasts(x, full, 2))
                    invalid(api, "aux: {} given; the ReLU bit mask of this product is i8 bytes of shape (..., {}, >= {}) "
                                 "(one column of {} bits per row of the {}), e.g. {}",
                            to_string(x), cdim, min_bytes, r, swap ? "row-major d" : "column-major d's transpose",
                            to_string(P.aux_storage));
                const std::int64_t ldb = x.stride(-2);
                if ((x.shape(-1) > 1 && x.stride(-1) != 1) || ldb % 16 != 0 || ldb < x.shape(-1))
                    invalid(api, "aux: strides {} given; the ReLU bit mask needs unit stride along its last dimension "
                                 "and a row stride that is a multiple of 16 bytes",
                            strides_text(x));
                P.aux_ld = ldb * 8;
                const std::int64_t bs = batch_stride(x, "aux", 2);
                if (batch_matrices > 1 && (bs % 16 != 0 || bs < ldb * cdim))
                    invalid(api, "aux: batch stride {} must be a multiple of 16 bytes and hold a whole mask ({} bytes)",
                            bs, ldb * cdim);
                P.aux_batch_stride = bs * 8;
            }
        }
    }

    // Bias gradient.
    if (epilog_writes_bias_grad(epilog)) {
        P.bias_grad = true;
        const std::int64_t len = (epilog == Epilog::bgrada) ? M : (epilog == Epilog::bgradb) ? N : r;
        P.bias_grad_length = len;
        P.bias_grad_storage = full.rank == 0 ? TensorLayout(dt, {len}) : dense(dt, full, len, -1);
        P.bias_grad_batch_stride = len;
        if (sig.bias_grad) {
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
            const bool ok = vec_rank > 0 && batch_broadcasts(g, full, vec_rank);
            if (!ok)
                invalid(api, "bias_grad: shape {} given; epilog {} with this d writes a gradient of length {} per "
                             "product: shape {}",
                        shape_text(g), to_string(epilog), len, shape_text(P.bias_grad_storage));
            if (len > 1 && vec_stride != 1)
                invalid(api, "bias_grad: stride {} along its length; the bias gradient must be packed (stride 1)",
                        vec_stride);
            const std::int64_t bs = batch_stride(g, "bias_grad", vec_rank);
            if (P.batch > 1 && bs < len)
                invalid(api, "bias_grad: batch stride {} is smaller than its length {}; an output must not overlap",
                        bs, len);
            P.bias_grad_batch_stride = bs;
        }
    }
    P.lt_epilog = lt_epilog_of(P.effective_epilog, swap);
    // cuBLASLt's bias-gradient epilogs: BGRADA runs with cuBLASLt's A not transposed, BGRADB with
    // its B transposed (BGRADB with a non-transposed B has no algorithm). In either arrangement
    // that means the user's a column-major for bgrada and the user's b row-major for bgradb.
    if (epilog == Epilog::bgrada && !col_major(M, K, am.rs, am.cs))
        unsupported(api, "a: strides {} given; bgrada needs a column-major a (unit stride along M = {}, e.g. strides "
                         "(1, {})), because cuBLASLt's bias-gradient kernels reduce a over K along its unit-stride "
                         "dimension: pass a as a column-major view (the transpose of a row-major (K, M) buffer)",
                    strides_text(a), M, M);
    if (epilog == Epilog::bgradb && !col_major(N, K, bm.cs, bm.rs))
        unsupported(api, "b: strides {} given; bgradb needs a row-major b (unit stride along N = {}, e.g. strides "
                         "({}, 1)), because cuBLASLt's bias-gradient kernels reduce b over K along its unit-stride "
                         "dimension: pass b row-major",
                    strides_text(b), N, N);
    if ((P.lt_epilog == CUBLASLT_EPILOGUE_BGRADA && P.op_a != CUBLAS_OP_N) ||
        (P.lt_epilog == CUBLASLT_EPILOGUE_BGRADB && P.op_b != CUBLAS_OP_T))
        unsupported(api, "epilog: {} with a {} and b {}: cuBLASLt's bias-gradient epilogs need the reduced operand with "
                         "unit stride along the gradient",
                    to_string(epilog), to_string(a), to_string(b));
    P.align = sig.align;

    // The concrete signature.
    MatmulSignature& s = P.signature;
    s.a = a;
    s.b = b;
    s.c = sig.c;
    s.d = d;
    s.bias = bias_sig;
    s.aux = sig.aux;
    if (!sig.aux && epilog_reads_aux(epilog)) s.aux = P.aux_view;  // planning from layouts: the default aux
    s.bias_grad = sig.bias_grad;
    s.scales = sig.scales;
    s.from_layouts = false;
    s.align = sig.align;
    return P;
}

// ---------------------------------------------------------------------------------------------
// Per-call checks.

namespace {

struct Range {
    std::uintptr_t lo = 0, hi = 0;
};
Range range_of(const TensorView& v) {
    const auto p = reinterpret_cast<std::uintptr_t>(v.data());
    return {p, p + std::uintptr_t(v.span_bytes())};
}
bool overlap(const TensorView& x, const TensorView& y) {
    const Range a = range_of(x), b = range_of(y);
    return a.lo < b.hi && b.lo < a.hi && a.lo != a.hi && b.lo != b.hi;
}

void check_scalar(const Scalar& s, const char* name, DataType input, const char* api) {
    if (input == DataType::i8) {
        if (s.imag != 0.0 || s.real != std::trunc(s.real) || std::abs(s.real) > 2147483647.0)
            invalid(api, "{}: ({}, {}) is not a 32-bit integer; i8 products take integer alpha and beta (scale type "
                         "i32)",
                    name, s.real, s.imag);
        return;
    }
    if (!is_complex(input) && s.imag != 0.0)
        invalid(api, "{}: complex value ({}, {}) for a real {} product; pass a real value", name, s.real, s.imag,
                to_string(input));
    if (!std::isfinite(s.real) || !std::isfinite(s.imag))
        invalid(api, "{}: ({}, {}) is not finite", name, s.real, s.imag);
}

void check_aligned(const TensorView& v, const char* name, const char* api) {
    const std::size_t elem = size_of(v.dtype());
    if (reinterpret_cast<std::uintptr_t>(v.data()) % elem != 0) [[unlikely]]
        invalid(api, "{}: data pointer {} is not aligned to the {}-byte size of a {} element; pass a pointer aligned "
                     "to its element size (256 bytes is best)",
                name, v.data(), elem, to_string(v.dtype()));
}

void check_aligned(const float* p, const char* name, const char* api) {
    if (reinterpret_cast<std::uintptr_t>(p) % alignof(float) != 0) [[unlikely]]
        invalid(api, "{}: pointer {} is not aligned to 4 bytes (one f32); pass a 16-byte aligned pointer",
                name, static_cast<const void*>(p));
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
    check_scalar(args.alpha, "alpha", a.dtype(), api);
    check_scalar(args.beta, "beta", a.dtype(), api);
    if (!args.c && args.beta != Scalar(0.0))
        invalid(api, "beta: ({}, {}) given without c; beta scales c, so pass MatmulArgs::c (or leave beta 0)",
                args.beta.real, args.beta.imag);
    if (d == nullptr) return;
    if (overlap(*d, a)) invalid(api, "d: its memory overlaps a's; an output must not alias an input");
    if (overlap(*d, b)) invalid(api, "d: its memory overlaps b's; an output must not alias an input");
    if (args.c && overlap(*d, *args.c) &&
        !(args.c->data() == d->data() && args.c->shape().size() == d->shape().size() &&
          std::equal(args.c->strides().begin(), args.c->strides().end(), d->strides().begin()) &&
          std::equal(args.c->shape().begin(), args.c->shape().end(), d->shape().begin())))
        invalid(api, "c: its memory overlaps d's without being d; c may be d itself (same pointer, shape and strides) "
                     "or separate memory");
    if (args.bias && overlap(*d, *args.bias)) invalid(api, "bias: its memory overlaps d's; pass separate memory");
    if (args.aux && overlap(*d, *args.aux)) invalid(api, "aux: its memory overlaps d's; pass separate memory");
    if (args.bias_grad && overlap(*d, *args.bias_grad))
        invalid(api, "bias_grad: its memory overlaps d's; pass separate memory");
    if (args.aux && args.bias_grad && overlap(*args.aux, *args.bias_grad))
        invalid(api, "bias_grad: its memory overlaps aux's; pass separate memory");
}

TensorLayout allocated_result_layout(const TensorLayout& a, const TensorLayout& b, const std::optional<TensorLayout>& c,
                                     const MatmulOptions& options, const char* api) {
    check_options(options, api);
    TensorLayout d;
    const auto result = options.result_type ? options.result_type : default_result(a.dtype());
    std::optional<BatchShape> batch;
    // The common case without analysis: rank >= 2, matching K, broadcastable batches.
    if (a.rank() >= 2 && b.rank() >= 2 && a.shape(-1) == b.shape(-2)) batch = broadcast_batch(a, b, nullptr);
    if (batch && result) {
        d = default_result_layout(*result, *batch, a.shape(-2), b.shape(-1), c ? &*c : nullptr);
    } else {
        MatmulSignature sig;
        sig.a = a;
        sig.b = b;
        sig.c = c;
        sig.from_layouts = true;
        d = analyze(sig, options, api).d;  // throws the precise error
    }
    if (!(d == TensorLayout(d.dtype(), d.shape())))
        invalid(api, "c: strides {} make d column-major (cuBLASLt reads c and writes d along one unit-stride "
                     "dimension), and the allocating calls return a row-major Tensor; pass a d view laid out as {} "
                     "(Matmul::result_layout())",
                strides_text(*c), to_string(d));
    return d;
}

}  // namespace gpumath::detail
