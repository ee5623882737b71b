// SPDX-License-Identifier: Apache-2.0
// sparse's content check: one pass over a pattern's offsets and indices that keeps, per array, the
// first bad entry (position * 8 + kind, by atomicMin). Instantiated per index type by name
// expression: sparse_check<int>, sparse_check<long long>.
#include "check_params.hpp"

namespace gpumath::kernels {

__device__ __forceinline__ void report(unsigned long long* slot, long long position, int kind) {
    atomicMin(slot, (unsigned long long)position * 8ULL + (unsigned long long)kind);
}

/// True when some offsets[r] (r in [0, count)) equals k; offsets assumed non-decreasing (when they
/// are not, the offsets slot reports it and this answer does not matter). Bounded either way.
template <class Index>
__device__ bool starts_a_row(const Index* offsets, long long count, long long k) {
    long long lo = 0, hi = count;
    while (lo < hi) {
        const long long mid = lo + (hi - lo) / 2;
        if ((long long)offsets[mid] < k) lo = mid + 1;
        else hi = mid;
    }
    return lo < count && (long long)offsets[lo] == k;
}

template <class Index>
__global__ void __launch_bounds__(256) sparse_check(SparseCheckParams p) {
    const Index* offsets = static_cast<const Index*>(p.offsets);
    const Index* rows = static_cast<const Index*>(p.rows);
    const Index* indices = static_cast<const Index*>(p.indices);
    const long long work = p.stored > p.major + 1 ? p.stored : p.major + 1;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < work;
         i += (long long)gridDim.x * blockDim.x) {
        if (offsets != nullptr && i <= p.major) {
            const long long o = offsets[i];
            if (i == 0 && o != 0) report(p.result + sparse_slot_offsets, 0, sparse_offset_first);
            if (i > 0 && o < (long long)offsets[i - 1])
                report(p.result + sparse_slot_offsets, i, sparse_offset_decrease);
            if (i == p.major && o != p.stored) report(p.result + sparse_slot_offsets, i, sparse_offset_last);
        }
        if (i >= p.stored) continue;
        bool same_line = false;
        if (rows != nullptr) {
            const long long r = rows[i];
            if (r < 0 || r >= p.major) report(p.result + sparse_slot_rows, i, sparse_index_range);
            else if (i > 0 && r < (long long)rows[i - 1]) report(p.result + sparse_slot_rows, i, sparse_index_order);
            same_line = i > 0 && r == (long long)rows[i - 1];
        } else if (p.sorted && i > 0) {
            same_line = !starts_a_row(offsets, p.major + 1, i);
        }
        const long long c = indices[i];
        if (c < 0 || c >= p.minor) report(p.result + sparse_slot_indices, i, sparse_index_range);
        else if (p.sorted && same_line && c <= (long long)indices[i - 1])
            report(p.result + sparse_slot_indices, i, sparse_index_order);
    }
}

}  // namespace gpumath::kernels
