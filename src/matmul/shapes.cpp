// SPDX-License-Identifier: Apache-2.0
// Matrices and batches of layouts; the shape stage (M, N, K, NumPy batch broadcasting) and the D
// of a problem (given, or the default that the allocating calls return).
#include "matmul/shapes.hpp"

#include <algorithm>
#include <array>
#include <limits>

#include "matmul/checks.hpp"

namespace gpumath::detail {
namespace {

/// The batch dimensions of a layout (all but the last `matrix_rank`).
std::span<const std::int64_t> batch_dims(const TensorLayout& l, int matrix_rank = 2) {
    const int r = std::max(0, l.rank() - matrix_rank);
    return l.shape().first(std::size_t(r));
}

bool has_broadcast_stride(const TensorLayout& l) {
    for (int i = 0; i < l.rank(); ++i)
        if (l.shape(i) > 1 && l.stride(i) == 0) return true;
    return false;
}

}  // namespace

std::optional<LtMatrix> col_major(std::int64_t rows, std::int64_t cols, std::int64_t rs, std::int64_t cs) {
    if (rows > 1 && rs != 1) return std::nullopt;
    // With one column the leading dimension addresses nothing; keep it generous and aligned (rows
    // itself where rounding up would pass int64).
    const std::int64_t at_least = std::max<std::int64_t>(rows, 1);
    constexpr std::int64_t last_aligned = std::numeric_limits<std::int64_t>::max() / 16 * 16;
    const std::int64_t ld = cols > 1 ? cs : at_least > last_aligned ? at_least : round_up(at_least, 16);
    if (ld < std::max<std::int64_t>(rows, 1)) return std::nullopt;
    LtMatrix m;
    m.rows = std::uint64_t(rows);
    m.cols = std::uint64_t(cols);
    m.ld = ld;
    return m;
}

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

std::optional<std::int64_t> single_batch_stride(const TensorLayout& l, const BatchShape& full, int matrix_rank) {
    const int lb = std::max(0, l.rank() - matrix_rank);
    std::int64_t stride = 0;
    std::int64_t next = 0;  // the stride the next outer dimension must have
    bool first = true;
    bool past = false;  // next is past int64 (one-byte elements): no outer dimension can continue
    for (int j = full.rank - 1; j >= 0; --j) {
        const std::int64_t ext = full.dims[std::size_t(j)];
        if (ext == 1) continue;
        const int oj = j - (full.rank - lb);
        const std::int64_t s = (oj >= 0 && l.shape(oj) != 1) ? l.stride(oj) : 0;
        if (first) {
            first = false;
            stride = s;
            past = __builtin_mul_overflow(s, ext, &next);
            continue;
        }
        if (stride == 0) {
            if (s != 0) return std::nullopt;
            continue;
        }
        if (past || s != next) return std::nullopt;
        past = __builtin_mul_overflow(next, ext, &next);
    }
    return stride;
}

std::int64_t batch_stride_of(const TensorLayout& l, const BatchShape& full, int matrix_rank, const char* name,
                             const char* api) {
    const auto s = single_batch_stride(l, full, matrix_rank);
    if (!s)
        unsupported(api,
                    "{}: batch strides of {} over batch shape {} cannot be expressed as one strided batch "
                    "(cuBLASLt's BATCH_COUNT + STRIDED_BATCH_OFFSET); make {}'s batch dimensions contiguous",
                    name, to_string(l), to_string(full.span()), name);
    return *s;
}

TensorLayout dense(DataType t, const BatchShape& batch, std::int64_t rows, std::int64_t cols) {
    std::array<std::int64_t, max_rank> shape{};
    std::size_t r = 0;
    for (int i = 0; i < batch.rank; ++i) shape[r++] = batch.dims[std::size_t(i)];
    shape[r++] = rows;
    if (cols >= 0) shape[r++] = cols;
    return TensorLayout(t, std::span<const std::int64_t>(shape.data(), r));
}

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
    return TensorLayout(t, std::span<const std::int64_t>(shape.data(), r),
                        std::span<const std::int64_t>(strides.data(), r));
}

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

void check_result_size(DataType t, const BatchShape& batch, std::int64_t m, std::int64_t n, const TensorLayout& a,
                       const TensorLayout& b, const char* api) {
    std::int64_t bytes = std::int64_t(size_of(t));
    bool overflow = __builtin_mul_overflow(bytes, m, &bytes) || __builtin_mul_overflow(bytes, n, &bytes);
    for (int i = 0; !overflow && i < batch.rank; ++i)
        overflow = __builtin_mul_overflow(bytes, batch.dims[std::size_t(i)], &bytes);
    if (!overflow) return;
    std::array<std::int64_t, max_rank + 2> shape{};
    std::size_t r = 0;
    for (int i = 0; i < batch.rank; ++i) shape[r++] = batch.dims[std::size_t(i)];
    shape[r++] = m;
    shape[r++] = n;
    invalid(api,
            "a, b: the product of a {} and b {} has shape {}, whose {} elements need more bytes than fit in int64; "
            "split the batch or the matrices into smaller products",
            shape_text(a), shape_text(b), to_string(std::span<const std::int64_t>(shape.data(), r)), to_string(t));
}

TensorLayout default_result_layout(DataType t, const BatchShape& batch, std::int64_t m, std::int64_t n,
                                   const TensorLayout* c) {
    if (c != nullptr && c->rank() >= 2 && c->shape(-2) == m && c->shape(-1) == n) {
        const Matrix cm = matrix_of(*c);
        if (!col_major(n, m, cm.cs, cm.rs) && col_major(m, n, cm.rs, cm.cs))
            return strided(t, batch, m, n, 1, m, m * n);
    }
    return dense(t, batch, m, n);
}

ProblemShape shape_stage(const TensorLayout& a, const TensorLayout& b, const char* api) {
    if (a.rank() < 2)
        invalid(api, "a: rank {} layout {}; a must be a matrix (..., M, K) of rank >= 2", a.rank(), to_string(a));
    if (b.rank() < 2)
        invalid(api, "b: rank {} layout {}; b must be a matrix (..., K, N) of rank >= 2", b.rank(), to_string(b));
    ProblemShape s;
    s.m = a.shape(-2);
    s.k = a.shape(-1);
    s.n = b.shape(-1);
    if (b.shape(-2) != s.k)
        invalid(api, "b: shape {} does not match a {}: a has K = {} columns, b has {} rows", shape_text(b),
                shape_text(a), s.k, b.shape(-2));
    if (a.size() == 0) invalid(api, "a: shape {} is empty; gpumath does not run empty products", shape_text(a));
    if (b.size() == 0) invalid(api, "b: shape {} is empty; gpumath does not run empty products", shape_text(b));
    BatchClash clash;
    const std::optional<BatchShape> batch = broadcast_batch(a, b, &clash);
    if (!batch)
        invalid(api, "b: batch dimensions of shape {} do not broadcast with a's {} (extent {} vs {})", shape_text(b),
                shape_text(a), clash.b, clash.a);
    s.batch_dims = *batch;
    const std::optional<std::int64_t> count = batch->count();
    if (!count)
        invalid(api,
                "a, b: batch dimensions of a {} and b {} broadcast to {}, whose product (the number of "
                "matrix products) does not fit in int64",
                shape_text(a), shape_text(b), to_string(batch->span()));
    s.batch = *count;
    if (s.batch > std::numeric_limits<std::int32_t>::max())
        unsupported(api, "a, b: {} products in the batch; cuBLASLt's batch count is a 32-bit integer", s.batch);
    return s;
}

TensorLayout result_stage(const MatmulSignature& sig, const ProblemShape& shape, const ProblemTypes& types,
                          const char* api) {
    const BatchShape& full = shape.batch_dims;
    const std::int64_t M = shape.m, N = shape.n;
    check_result_size(types.d, full, M, N, sig.a, sig.b, api);
    TensorLayout d;
    if (sig.d) {
        d = *sig.d;
        bool same = d.rank() == full.rank + 2 && d.shape(-2) == M && d.shape(-1) == N;
        for (int i = 0; same && i < full.rank; ++i) same = d.shape(i) == full.dims[std::size_t(i)];
        if (!same)
            invalid(api, "d: shape {} given; the product of a {} and b {} has shape {}", shape_text(d),
                    shape_text(sig.a), shape_text(sig.b), shape_text(dense(types.d, full, M, N)));
        if (has_broadcast_stride(d))
            invalid(api, "d: strides {} repeat elements (a stride of 0); an output must not broadcast",
                    strides_text(d));
    } else {
        d = default_result_layout(types.d, full, M, N, sig.c ? &*sig.c : nullptr);
    }
    if (sig.c) {
        const TensorLayout& c = *sig.c;
        if (c.dtype() != types.c)
            invalid(api, "c: dtype {} given; c must be {} here ({} result{})", to_string(c.dtype()), to_string(types.c),
                    to_string(types.d), is_fp8(types.d) ? "; FP8 results take a bf16 or f16 c" : "");
        if (c.rank() < 2 || c.shape(-2) != M || c.shape(-1) != N || !batch_broadcasts(c, full, 2))
            invalid(api, "c: shape {} does not broadcast to d's {}; c is (..., M, N) = (..., {}, {})", shape_text(c),
                    shape_text(d), M, N);
    }
    return d;
}

}  // namespace gpumath::detail
