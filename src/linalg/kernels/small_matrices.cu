// SPDX-License-Identifier: Apache-2.0
// linalg's own kernels for small matrices (n <= 32): Cholesky, LU with partial pivoting and the
// Hermitian eigendecomposition by cyclic Jacobi, one matrix per warp in shared memory, read from
// and written to the caller's strided operands directly (no copies). Instantiated per element type:
// small_cholesky<Real, Complex>, small_lu<Real, Complex>, small_eigh<Real, Complex>.
#include "small_params.hpp"

namespace gpumath::kernels {

/// A complex number of two `R`s, laid out as cuComplex / cuDoubleComplex.
template <class R>
struct alignas(2 * sizeof(R)) Cx {
    R re, im;
};

template <class R>
__device__ __forceinline__ Cx<R> operator+(Cx<R> a, Cx<R> b) {
    return {a.re + b.re, a.im + b.im};
}
template <class R>
__device__ __forceinline__ Cx<R> operator-(Cx<R> a, Cx<R> b) {
    return {a.re - b.re, a.im - b.im};
}
template <class R>
__device__ __forceinline__ Cx<R> operator*(Cx<R> a, Cx<R> b) {
    return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
template <class R>
__device__ __forceinline__ Cx<R> operator*(R a, Cx<R> b) {
    return {a * b.re, a * b.im};
}
template <class R>
__device__ __forceinline__ Cx<R> operator/(Cx<R> a, R b) {
    return {a.re / b, a.im / b};
}
/// a / b, scaled so that |b|² cannot overflow or underflow.
template <class R>
__device__ __forceinline__ Cx<R> operator/(Cx<R> a, Cx<R> b) {
    const R s = fabs(b.re) + fabs(b.im);
    const R br = b.re / s, bi = b.im / s, ar = a.re / s, ai = a.im / s;
    const R d = br * br + bi * bi;
    return {(ar * br + ai * bi) / d, (ai * br - ar * bi) / d};
}

__device__ __forceinline__ float conjugate(float x) { return x; }
__device__ __forceinline__ double conjugate(double x) { return x; }
template <class R>
__device__ __forceinline__ Cx<R> conjugate(Cx<R> x) {
    return {x.re, -x.im};
}
__device__ __forceinline__ float real_part(float x) { return x; }
__device__ __forceinline__ double real_part(double x) { return x; }
template <class R>
__device__ __forceinline__ R real_part(Cx<R> x) {
    return x.re;
}
/// |re| + |im|: the magnitude LAPACK's i?amax compares when it picks a pivot.
__device__ __forceinline__ float magnitude1(float x) { return fabsf(x); }
__device__ __forceinline__ double magnitude1(double x) { return fabs(x); }
template <class R>
__device__ __forceinline__ R magnitude1(Cx<R> x) {
    return fabs(x.re) + fabs(x.im);
}
__device__ __forceinline__ float magnitude(float x) { return fabsf(x); }
__device__ __forceinline__ double magnitude(double x) { return fabs(x); }
template <class R>
__device__ __forceinline__ R magnitude(Cx<R> x) {
    return hypot(x.re, x.im);
}
__device__ __forceinline__ float squared(float x) { return x * x; }
__device__ __forceinline__ double squared(double x) { return x * x; }
template <class R>
__device__ __forceinline__ R squared(Cx<R> x) {
    return x.re * x.re + x.im * x.im;
}
__device__ __forceinline__ bool is_zero(float x) { return x == 0.0F; }
__device__ __forceinline__ bool is_zero(double x) { return x == 0.0; }
template <class R>
__device__ __forceinline__ bool is_zero(Cx<R> x) {
    return x.re == R(0) && x.im == R(0);
}

/// The element type: `Real`, or `Cx<Real>` when `Complex`.
template <class Real, bool Complex>
struct Element {
    using type = Real;
    __device__ static Real of(Real re) { return re; }
};
template <class Real>
struct Element<Real, true> {
    using type = Cx<Real>;
    __device__ static Cx<Real> of(Real re) { return {re, Real(0)}; }
};

__device__ __forceinline__ float scaled(float x, float r) { return r * x; }
__device__ __forceinline__ double scaled(double x, double r) { return r * x; }
template <class R>
__device__ __forceinline__ Cx<R> scaled(Cx<R> x, R r) {
    return r * x;
}
/// x with its imaginary part dropped (a Hermitian matrix's diagonal).
__device__ __forceinline__ float real_only(float x) { return x; }
__device__ __forceinline__ double real_only(double x) { return x; }
template <class R>
__device__ __forceinline__ Cx<R> real_only(Cx<R> x) {
    return {x.re, R(0)};
}

/// Where matrix `b` of `op` starts, in elements.
__device__ __forceinline__ long long matrix_offset(const SmallBatch& batch, const SmallOperand& op, long long b) {
    long long offset = 0;
    for (int d = batch.rank - 1; d >= 0; --d) {
        const long long extent = batch.shape[d];
        offset += (b % extent) * op.batch[d];
        b /= extent;
    }
    return offset;
}

/// This warp's lane, the warp's index in the block and the warps of the grid.
struct Warp {
    int lane;
    int index;
    long long first;
    long long step;
};

__device__ __forceinline__ Warp this_warp() {
    const int warps = int(blockDim.x) / 32;
    const int index = int(threadIdx.x) / 32;
    return {int(threadIdx.x) % 32, index, (long long)blockIdx.x * warps + index, (long long)gridDim.x * warps};
}

/// Shared memory of warp `index`: `bytes` each.
__device__ __forceinline__ unsigned char* warp_shared(int index, long long bytes) {
    extern __shared__ __align__(16) unsigned char shared[];
    return shared + index * bytes;
}

/// Loads the n×n matrix of `op` at `base` into `s` (element (i, j) at s[i + j * ld]), the lanes
/// walking memory in order whichever of the strides is 1. With `triangle` 1 (lower) or 2 (upper)
/// only that triangle is read and mirrored (conjugated) into the other, the diagonal made real.
template <class T>
__device__ __forceinline__ void load(T* s, int ld, const SmallOperand& op, long long base, int n, int lane,
                                     int triangle) {
    const T* data = static_cast<const T*>(op.data) + base;
    const bool rows_fast = op.col_stride == 1 && op.row_stride != 1;
    for (int e = lane; e < n * n; e += 32) {
        const int i = rows_fast ? e / n : e % n, j = rows_fast ? e % n : e / n;
        if (triangle == 1 && j > i) continue;
        if (triangle == 2 && j < i) continue;
        T v = data[i * op.row_stride + j * op.col_stride];
        if (triangle != 0) {
            if (i == j) v = real_only(v);
            s[j + i * ld] = conjugate(v);
        }
        s[i + j * ld] = v;
    }
}

/// Stores `s` (as `load` lays it out) into the n×n matrix of `op` at `base`.
template <class T>
__device__ __forceinline__ void store(const T* s, int ld, const SmallOperand& op, long long base, int n, int lane) {
    T* data = static_cast<T*>(op.data) + base;
    const bool rows_fast = op.col_stride == 1 && op.row_stride != 1;
    for (int e = lane; e < n * n; e += 32) {
        const int i = rows_fast ? e / n : e % n, j = rows_fast ? e % n : e / n;
        data[i * op.row_stride + j * op.col_stride] = s[i + j * ld];
    }
}

/// Cholesky, right-looking, lane i updating row i of L (or column i of U): at step k the diagonal
/// element, then column k scaled, then the trailing triangle.
template <class Real, bool Complex>
__global__ void __launch_bounds__(32 * small_max_warps) small_cholesky(SmallCholeskyParams p) {
    using T = typename Element<Real, Complex>::type;
    const Warp w = this_warp();
    const int n = p.batch.n, ld = small_ld(n);
    T* s = reinterpret_cast<T*>(warp_shared(w.index, small_warp_bytes(small_kernel_cholesky, n, sizeof(T))));
    const int i = w.lane;
    for (long long b = w.first; b < p.batch.count; b += w.step) {
        load(s, ld, p.a, matrix_offset(p.batch, p.a, b), n, i, 0);
        __syncwarp();
        // Lower: L(r, c) is s[r + c * ld]. Upper: the same steps on the transposed indices factor
        // conj(A) = conj(L)·Lᵀ, whose conj(L) read transposed is U = Lᴴ.
        const int row = p.upper ? ld : 1, col = p.upper ? 1 : ld;
        int info = 0;
        for (int k = 0; k < n; ++k) {
            const Real d = real_part(s[k * row + k * col]);
            if (!(d > Real(0))) {  // also NaN
                info = k + 1;
                break;
            }
            const Real l = sqrt(d);
            __syncwarp();
            if (i == k) s[k * row + k * col] = Element<Real, Complex>::of(l);
            if (i > k && i < n) s[i * row + k * col] = s[i * row + k * col] / l;
            __syncwarp();
            if (i > k && i < n) {
                const T lik = s[i * row + k * col];
                for (int j = k + 1; j <= i; ++j)
                    s[i * row + j * col] = s[i * row + j * col] - lik * conjugate(s[j * row + k * col]);
            }
            __syncwarp();
        }
        store(s, ld, p.factor, matrix_offset(p.batch, p.factor, b), n, i);
        if (i == 0) p.info[b] = info;
        __syncwarp();
    }
}

/// LU with partial pivoting, lane i holding row i's part of each step: the pivot by a warp-wide
/// arg-max (the first of equal magnitudes, as LAPACK), the row interchange, column k scaled and
/// the trailing matrix updated.
template <class Real, bool Complex>
__global__ void __launch_bounds__(32 * small_max_warps) small_lu(SmallLUParams p) {
    using T = typename Element<Real, Complex>::type;
    const Warp w = this_warp();
    const int n = p.batch.n, ld = small_ld(n);
    T* s = reinterpret_cast<T*>(warp_shared(w.index, small_warp_bytes(small_kernel_lu, n, sizeof(T))));
    const int i = w.lane;
    for (long long b = w.first; b < p.batch.count; b += w.step) {
        load(s, ld, p.a, matrix_offset(p.batch, p.a, b), n, i, 0);
        __syncwarp();
        int info = 0, pivot = 0;
        for (int k = 0; k < n; ++k) {
            Real best = i >= k && i < n ? magnitude1(s[i + k * ld]) : Real(-1);
            if (best != best) best = Real(1) / Real(0);  // NaN as the largest: every lane picks the same row
            int at = i;
            for (int offset = 16; offset > 0; offset /= 2) {
                const Real other = __shfl_xor_sync(0xffffffffU, best, offset);
                const int other_at = __shfl_xor_sync(0xffffffffU, at, offset);
                if (other > best || (other == best && other_at < at)) {
                    best = other;
                    at = other_at;
                }
            }
            if (i == k) pivot = at + 1;
            const T u = s[at + k * ld];
            __syncwarp();  // every lane has read u before row k is swapped
            if (is_zero(u)) {
                if (info == 0) info = k + 1;
                continue;  // column k is zero below the diagonal: nothing to swap, scale or update
            }
            if (at != k && i < n) {
                const T t = s[k + i * ld];
                s[k + i * ld] = s[at + i * ld];
                s[at + i * ld] = t;
            }
            __syncwarp();
            if (i > k && i < n) {
                const T l = s[i + k * ld] / u;
                s[i + k * ld] = l;
                for (int j = k + 1; j < n; ++j) s[i + j * ld] = s[i + j * ld] - l * s[k + j * ld];
            }
            __syncwarp();
        }
        store(s, ld, p.lu, matrix_offset(p.batch, p.lu, b), n, i);
        if (i < n) p.pivots[b * n + i] = pivot;
        if (i == 0) p.info[b] = info;
        __syncwarp();
    }
}

/// The rotation of pair (p, q) in a round of the round-robin ordering of `m` (even) indices: round
/// r pairs r with m - 1 and (r + k) with (r - k) modulo m - 1 for k = 1 ... m/2 - 1.
__device__ __forceinline__ void round_pair(int round, int k, int m, int& p, int& q) {
    int x = k == 0 ? m - 1 : (round + k) % (m - 1);
    int y = k == 0 ? round : (round - k + m - 1) % (m - 1);
    p = x < y ? x : y;
    q = x < y ? y : x;
}

/// The sum over the warp.
template <class Real>
__device__ __forceinline__ Real warp_sum(Real v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffU, v, offset);
    return v;
}

/// Cyclic Jacobi: sweeps of n - 1 rounds (n + 1 - 1 for odd n) of disjoint rotations, each zeroing
/// one off-diagonal pair A(p, q), A(q, p); a rotation is skipped when |A(p, q)| is at most the
/// unit roundoff times ‖A‖_F (the eigenvalues then move by less than that), and the matrix has
/// converged after a sweep without one. Rotation of pair (p, q), with A(p, q) = |A(p, q)|·e^{iφ}:
/// U = [[c, σ], [−conj(σ), c]] on (p, q), σ = s·e^{iφ}, c and s the real Jacobi rotation of
/// [[A(p,p), |A(p,q)|], [|A(p,q)|, A(q,q)]]; A ← Uᴴ·A·U (rows, then columns), V ← V·U.
template <class Real, bool Complex>
__global__ void __launch_bounds__(32 * small_max_warps) small_eigh(SmallEighParams p) {
    using T = typename Element<Real, Complex>::type;
    const Warp w = this_warp();
    const int n = p.batch.n, ld = small_ld(n), m = n + (n & 1), pairs = m / 2;
    unsigned char* base = warp_shared(w.index, small_warp_bytes(small_kernel_eigh, n, sizeof(T)));
    T* a = reinterpret_cast<T*>(base);
    T* v = a + n * ld;
    T* sigma = v + n * ld;
    Real* cosine = reinterpret_cast<Real*>(sigma + small_max_n / 2);
    int* pair_p = reinterpret_cast<int*>(sigma + small_max_n);
    int* pair_q = pair_p + small_max_n;
    int* rank = pair_q + small_max_n;
    const bool vectors = p.vectors.data != nullptr;
    const Real eps = Real(sizeof(Real) == 4 ? 5.9604645e-08 : 1.1102230246251565e-16);  // unit roundoff
    const Real huge = Real(sizeof(Real) == 4 ? 3.4028234663852886e38 : 1.7976931348623157e308);
    const int i = w.lane;
    for (long long b = w.first; b < p.batch.count; b += w.step) {
        load(a, ld, p.a, matrix_offset(p.batch, p.a, b), n, i, p.upper ? 2 : 1);
        if (vectors)
            for (int e = i; e < n * n; e += 32) v[e % n + e / n * ld] = Element<Real, Complex>::of(e % n == e / n);
        __syncwarp();
        Real row_norm = 0;
        if (i < n)
            for (int j = 0; j < n; ++j) row_norm += squared(a[i + j * ld]);
        const Real threshold = eps * sqrt(warp_sum(row_norm));
        // NaN or infinite elements never converge: every off-diagonal element counts as left.
        int info = threshold <= huge ? 0 : (n > 1 ? n * (n - 1) / 2 : 1);
        for (int sweep = 0; info == 0; ++sweep) {
            bool rotated = false;
            for (int round = 0; round < m - 1; ++round) {
                // Lane k < pairs: the rotation of pair k.
                bool mine = false;
                Real app = 0, aqq = 0, shift = 0;
                int pp = 0, qq = 0;
                if (i < pairs) {
                    round_pair(round, i, m, pp, qq);
                    if (qq < n) {
                        const T apq = a[pp + qq * ld];
                        const Real size = magnitude(apq);
                        if (size > threshold) {
                            app = real_part(a[pp + pp * ld]);
                            aqq = real_part(a[qq + qq * ld]);
                            const Real theta = (aqq - app) / (2 * size);
                            const Real t = (theta >= 0 ? Real(1) : Real(-1)) / (fabs(theta) + hypot(Real(1), theta));
                            const Real c = 1 / sqrt(t * t + 1);
                            sigma[i] = scaled(apq, t * c / size);
                            cosine[i] = c;
                            shift = t * size;
                            mine = true;
                        }
                    }
                    pair_p[i] = mine ? pp : -1;
                    pair_q[i] = qq;
                }
                if (!__any_sync(0xffffffffU, mine)) continue;
                rotated = true;
                __syncwarp();
                // Rows p and q: lane j updates column j.
                if (i < n)
                    for (int k = 0; k < pairs; ++k) {
                        const int rp = pair_p[k], rq = pair_q[k];
                        if (rp < 0) continue;
                        const Real c = cosine[k];
                        const T s = sigma[k], x = a[rp + i * ld], y = a[rq + i * ld];
                        a[rp + i * ld] = scaled(x, c) - s * y;
                        a[rq + i * ld] = conjugate(s) * x + scaled(y, c);
                    }
                __syncwarp();
                // Columns p and q: lane r updates row r, of A and of V.
                if (i < n)
                    for (int k = 0; k < pairs; ++k) {
                        const int cp = pair_p[k], cq = pair_q[k];
                        if (cp < 0) continue;
                        const Real c = cosine[k];
                        const T s = sigma[k];
                        T x = a[i + cp * ld], y = a[i + cq * ld];
                        a[i + cp * ld] = scaled(x, c) - conjugate(s) * y;
                        a[i + cq * ld] = s * x + scaled(y, c);
                        if (vectors) {
                            x = v[i + cp * ld];
                            y = v[i + cq * ld];
                            v[i + cp * ld] = scaled(x, c) - conjugate(s) * y;
                            v[i + cq * ld] = s * x + scaled(y, c);
                        }
                    }
                __syncwarp();
                // The 2×2 block of each pair exactly: the pair zeroed, the diagonal shifted.
                if (mine) {
                    a[pp + pp * ld] = Element<Real, Complex>::of(app - shift);
                    a[qq + qq * ld] = Element<Real, Complex>::of(aqq + shift);
                    a[pp + qq * ld] = Element<Real, Complex>::of(0);
                    a[qq + pp * ld] = Element<Real, Complex>::of(0);
                }
                __syncwarp();
            }
            if (!rotated) break;
            if (sweep + 1 >= p.max_sweeps) {
                int above = 0;
                if (i < n)
                    for (int j = i + 1; j < n; ++j)
                        above += magnitude(a[i + j * ld]) <= threshold ? 0 : 1;  // NaN: above
                info = int(warp_sum(Real(above)));  // 0 when the last allowed sweep converged
                break;
            }
        }
        // Ascending: lane j's eigenvalue goes to place rank[j] (ties in index order).
        const Real value = i < n ? real_part(a[i + i * ld]) : Real(0);
        int place = 0;
        for (int j = 0; j < n; ++j) {
            const Real other = __shfl_sync(0xffffffffU, value, j);
            place += (other < value || (other == value && j < i)) ? 1 : 0;
        }
        if (i < n) {
            rank[i] = place;
            static_cast<Real*>(p.values.data)[matrix_offset(p.batch, p.values, b) + place * p.values.col_stride] =
                value;
        }
        __syncwarp();
        if (vectors) {
            T* out = static_cast<T*>(p.vectors.data) + matrix_offset(p.batch, p.vectors, b);
            const bool rows_fast = p.vectors.col_stride == 1 && p.vectors.row_stride != 1;
            for (int e = i; e < n * n; e += 32) {
                // Column j of V goes to column rank[j] of the output.
                const int r = rows_fast ? e / n : e % n, j = rows_fast ? e % n : e / n;
                out[r * p.vectors.row_stride + rank[j] * p.vectors.col_stride] = v[r + j * ld];
            }
        }
        if (i == 0) p.info[b] = info;
        __syncwarp();
    }
}

}  // namespace gpumath::kernels
