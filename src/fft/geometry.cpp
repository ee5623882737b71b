// SPDX-License-Identifier: Apache-2.0
// The mapping of an FFT problem onto cuFFT's advanced layout, host loops and elementwise passes
// (host-only, no CUDA calls).
#include "fft/geometry.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

namespace gpumath::detail {

namespace {

// Extents of the operand cuFFT reads (in) or writes (out), per logical dimension.
// Checks that the transform dimensions nest for cuFFT (each stride a multiple of the next inner
// one, with room for the inner extent) and fills embed/stride. False when they do not.
bool nest(const FftOperand& op, const std::array<std::int64_t, max_rank>& strides, const std::array<int, 3>& dims,
          int rank, FftSide& side) {
    std::array<std::int64_t, 3> eff{};
    for (int k = rank - 1; k >= 0; --k) {
        const auto d = std::size_t(dims[std::size_t(k)]);
        const std::int64_t e = op.shape[d];
        const std::int64_t s = strides[d];
        if (k == rank - 1) {
            if (e == 1) eff[std::size_t(k)] = 1;
            else if (s <= 0) return false;
            else eff[std::size_t(k)] = s;
            continue;
        }
        const auto next = static_cast<std::size_t>(k) + 1;
        const std::int64_t inner = eff[next];
        const std::int64_t inner_extent = op.shape[std::size_t(dims[next])];
        if (e == 1) {
            eff[std::size_t(k)] = inner * inner_extent;
            continue;
        }
        if (s <= 0 || s % inner != 0 || s / inner < inner_extent) return false;
        eff[std::size_t(k)] = s;
    }
    side.stride = eff[std::size_t(rank - 1)];
    side.embed[0] = op.shape[std::size_t(dims[0])];
    for (int k = 1; k < rank; ++k) side.embed[std::size_t(k)] = eff[std::size_t(k - 1)] / eff[std::size_t(k)];
    side.dist = eff[0] * op.shape[std::size_t(dims[0])];
    return true;
}

bool has_zero_stride(const FftOperand& op) {
    for (int i = 0; i < op.rank; ++i)
        if (op.shape[std::size_t(i)] > 1 && op.strides[std::size_t(i)] == 0) return true;
    return false;
}

struct Attempt {
    FftGeometry g;
    bool in_ok = true;
    bool out_ok = true;
    std::int64_t per_execution = 0;  // transform elements per cuFFT execution
};

Attempt attempt(const FftProblem& p, const std::array<int, 3>& dims, bool in_temp, bool out_temp) {
    Attempt a;
    FftGeometry& g = a.g;
    g.rank = p.naxes;
    g.dims = dims;
    for (int k = 0; k < g.rank; ++k) {
        const auto d = std::size_t(dims[std::size_t(k)]);
        g.n[std::size_t(k)] = p.kind == FFTKind::c2r ? p.out.shape[d] : p.in.shape[d];
    }
    g.in.temp = in_temp;
    g.out.temp = out_temp;
    const int rank = p.in.rank;
    auto is_axis = [&](int d) {
        for (int k = 0; k < p.naxes; ++k)
            if (dims[std::size_t(k)] == d) return true;
        return false;
    };

    // Batch dimensions in the order their groups are laid out: by the stride of a user operand
    // (input first), or logical order when both are temps.
    std::vector<int> batch;
    for (int d = 0; d < rank; ++d)
        if (!is_axis(d) && p.in.shape[std::size_t(d)] > 1) batch.push_back(d);
    const FftOperand* ref = !in_temp ? &p.in : (!out_temp ? &p.out : nullptr);
    if (ref != nullptr)
        std::stable_sort(batch.begin(), batch.end(),
                         [&](int x, int y) { return ref->strides[std::size_t(x)] > ref->strides[std::size_t(y)]; });

    // Temps: contiguous, batch dimensions (in that order) outside the transform dimensions.
    auto temp_strides = [&](const FftOperand& op, FftSide& side) {
        std::int64_t s = 1;
        side.strides = {};
        for (int k = g.rank - 1; k >= 0; --k) {
            const auto d = std::size_t(dims[std::size_t(k)]);
            side.strides[d] = s;
            s *= op.shape[d];
        }
        for (auto it = batch.rbegin(); it != batch.rend(); ++it) {
            side.strides[std::size_t(*it)] = s;
            s *= op.shape[std::size_t(*it)];
        }
        side.temp_elements = s;
    };
    if (in_temp) temp_strides(p.in, g.in);
    else g.in.strides = p.in.strides;
    if (out_temp) temp_strides(p.out, g.out);
    else g.out.strides = p.out.strides;

    a.in_ok = nest(p.in, g.in.strides, dims, g.rank, g.in);
    a.out_ok = nest(p.out, g.out.strides, dims, g.rank, g.out);
    if (!a.in_ok || !a.out_ok) return a;

    // Merge batch dimensions, inner to outer, while both operands nest.
    struct Group {
        std::int64_t count, in_stride, out_stride;
    };
    std::vector<Group> groups;
    for (auto it = batch.rbegin(); it != batch.rend(); ++it) {
        const auto d = std::size_t(*it);
        const std::int64_t e = p.in.shape[d];
        const std::int64_t si = g.in.strides[d];
        const std::int64_t so = g.out.strides[d];
        if (!groups.empty()) {
            Group& last = groups.back();
            if (si == last.in_stride * last.count && so == last.out_stride * last.count) {
                last.count *= e;
                continue;
            }
        }
        groups.push_back({e, si, so});
    }
    std::int64_t transform_elements = 1;
    for (int k = 0; k < g.rank; ++k) transform_elements *= g.n[std::size_t(k)];
    if (groups.empty()) {
        g.batch = 1;
    } else {
        auto best = std::max_element(groups.begin(), groups.end(),
                                     [](const Group& x, const Group& y) { return x.count < y.count; });
        g.batch = best->count;
        g.in.dist = best->in_stride;
        g.out.dist = best->out_stride;
        for (auto it = groups.rbegin(); it != groups.rend(); ++it) {
            if (it == std::make_reverse_iterator(best + 1)) continue;
            const auto i = std::size_t(g.loop_rank++);
            g.loop_extent[i] = it->count;
            g.loop_in_stride[i] = it->in_stride;
            g.loop_out_stride[i] = it->out_stride;
        }
    }
    a.per_execution = g.batch * transform_elements;
    return a;
}

}  // namespace

bool real_loops_aligned(const FftProblem& p, const FftGeometry& g) noexcept {
    if (p.kind == FFTKind::c2c) return true;
    const auto& strides = p.kind == FFTKind::r2c ? g.loop_in_stride : g.loop_out_stride;
    for (int k = 0; k < g.loop_rank; ++k)
        if (strides[std::size_t(k)] % 2 != 0) return false;
    return true;
}

FftGeometry make_fft_geometry(const FftProblem& p, bool in_temp, bool out_temp, std::int64_t max_executions) {
    // cuFFT dimension order, outer to inner: r2c/c2r keep the halved (last listed) axis innermost;
    // the other axes go by decreasing input stride so that row-major, column-major and permuted
    // inputs nest without copies.
    std::array<int, 3> dims{};
    const int free_axes = p.kind == FFTKind::c2c ? p.naxes : p.naxes - 1;
    std::array<int, 3> order{};
    for (int i = 0; i < free_axes; ++i) order[std::size_t(i)] = p.axes[std::size_t(i)];
    std::stable_sort(order.begin(), order.begin() + free_axes,
                     [&](int x, int y) { return p.in.strides[std::size_t(x)] > p.in.strides[std::size_t(y)]; });
    for (int i = 0; i < free_axes; ++i) dims[std::size_t(i)] = order[std::size_t(i)];
    if (free_axes < p.naxes) dims[std::size_t(p.naxes - 1)] = p.axes[std::size_t(p.naxes - 1)];

    // Inputs cuFFT cannot read in place: broadcasts (stride 0), and for half-precision r2c the
    // real input must have unit stride along the innermost transform axis (a cuFFT rule); the same
    // holds for the real output of half-precision c2r.
    const bool half = p.precision == DataType::f16 || p.precision == DataType::bf16;
    auto unit_inner = [&](const FftOperand& op) {
        const auto d = std::size_t(dims[std::size_t(p.naxes - 1)]);
        return op.shape[d] == 1 || op.strides[d] == 1;
    };
    if (has_zero_stride(p.in)) in_temp = true;
    if (half && p.kind == FFTKind::r2c && !unit_inner(p.in)) in_temp = true;
    if (half && p.kind == FFTKind::c2r && !unit_inner(p.out)) out_temp = true;
    if (p.kind == FFTKind::c2r && !p.overwrite_input) in_temp = true;

    Attempt a = attempt(p, dims, in_temp, out_temp);
    if (!a.in_ok) a = attempt(p, dims, in_temp = true, out_temp);
    if (!a.out_ok) a = attempt(p, dims, in_temp, out_temp = true);
    auto too_many = [&](const Attempt& x) {
        // Large executions amortize the loop, except where any loop is ruled out (fused callbacks).
        return x.g.executions() > max_executions && (max_executions <= 1 || x.per_execution < (std::int64_t(1) << 18));
    };
    if (too_many(a) && !in_temp) a = attempt(p, dims, in_temp = true, out_temp);
    if ((too_many(a) || a.g.executions() > max_executions * 64) && !out_temp)
        a = attempt(p, dims, in_temp, out_temp = true);
    // cuFFT refuses (CUFFT_INVALID_VALUE) a real operand of r2c/c2r that is not aligned like its
    // complex element; host-loop executions at an odd real offset would be. Copy the real side
    // (and, if its contiguous temp still loops at odd offsets, both).
    if (p.kind != FFTKind::c2c && !real_loops_aligned(p, a.g)) {
        if (p.kind == FFTKind::r2c) in_temp = true;
        else out_temp = true;
        a = attempt(p, dims, in_temp, out_temp);
        if (!real_loops_aligned(p, a.g)) a = attempt(p, dims, in_temp = true, out_temp = true);
    }
    return a.g;
}

FftPass make_fft_pass(const FftOperand& shape, const std::array<std::int64_t, max_rank>& src,
                      const std::array<std::int64_t, max_rank>& dst) noexcept {
    FftPass pass;
    pass.total = 1;
    std::array<int, max_rank> dims{};
    int n = 0;
    for (int d = 0; d < shape.rank; ++d) {
        pass.total *= shape.shape[std::size_t(d)];
        if (shape.shape[std::size_t(d)] > 1) dims[std::size_t(n++)] = d;
    }
    // Any order visits every element once; writes coalesce best with the destination's largest
    // stride outermost.
    std::stable_sort(dims.begin(), dims.begin() + n,
                     [&](int x, int y) { return dst[std::size_t(x)] > dst[std::size_t(y)]; });
    for (int i = n - 1; i >= 0; --i) {
        const auto d = std::size_t(dims[std::size_t(i)]);
        const std::int64_t e = shape.shape[d];
        if (pass.rank > 0) {
            // The current outermost merged dimension sits at index 0 after the shift below.
            const std::int64_t ie = pass.extent[0];
            if (src[d] == pass.src_stride[0] * ie && dst[d] == pass.dst_stride[0] * ie) {
                pass.extent[0] *= e;
                continue;
            }
        }
        for (int k = pass.rank; k > 0; --k) {
            pass.extent[std::size_t(k)] = pass.extent[std::size_t(k - 1)];
            pass.src_stride[std::size_t(k)] = pass.src_stride[std::size_t(k - 1)];
            pass.dst_stride[std::size_t(k)] = pass.dst_stride[std::size_t(k - 1)];
        }
        pass.extent[0] = e;
        pass.src_stride[0] = src[d];
        pass.dst_stride[0] = dst[d];
        ++pass.rank;
    }
    if (pass.rank == 0 && pass.total > 0) {
        pass.rank = 1;
        pass.extent[0] = 1;
        pass.src_stride[0] = 1;
        pass.dst_stride[0] = 1;
    }
    return pass;
}

}  // namespace gpumath::detail
