// SPDX-License-Identifier: Apache-2.0
// The Eigh plan's ranges (EighRange::index and EighRange::value): cuSOLVER's Xsyevdx once per
// matrix, which returns the number of eigenvalues it found to the host.
#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include <gpumath/tensor_ops.hpp>
#include "core/stream_workspace.hpp"
#include "detail/status.hpp"
#include "linalg/eigh_impl.hpp"

namespace gpumath::detail {
namespace {

/// A row-major layout of `shape` with its last extent replaced by `last`.
TensorLayout with_last(DataType dtype, std::span<const std::int64_t> shape, std::int64_t last) {
    std::array<std::int64_t, max_rank> s{};
    std::copy(shape.begin(), shape.end(), s.begin());
    s[shape.size() - 1] = last;
    return {dtype, std::span<const std::int64_t>(s.data(), shape.size())};
}

/// The first `k` of every packed row of `n` values in `w` (`(..., n)` row-major), as `(..., k)`.
TensorView leading_values(const TensorView& w, std::int64_t k) {
    std::array<std::int64_t, max_rank> shape{};
    std::copy(w.shape().begin(), w.shape().end(), shape.begin());
    const std::size_t r = std::size_t(w.rank());
    shape[r - 1] = k;
    return {w.data(), w.dtype(), std::span<const std::int64_t>(shape.data(), r), w.strides()};
}

void check_not_given(const char* field, bool given, const std::string& value, const char* range, const char* api) {
    if (given)
        throw_invalid(
            fmt::format("{}: {} is for EighRange::{} only; leave it 0 or set options.range", field, value, range), api);
}

}  // namespace

void EighImpl::set_range(const char* api) {
    const std::int64_t n = batch.n;
    const linalg::EighRange range = options.range;
    check_not_given("options.first", range != linalg::EighRange::index && options.first != 0,
                    fmt::format("{}", options.first), "index", api);
    check_not_given("options.last", range != linalg::EighRange::index && options.last != 0,
                    fmt::format("{}", options.last), "index", api);
    check_not_given("options.low", range != linalg::EighRange::value && options.low != 0.0,
                    fmt::format("{}", options.low), "value", api);
    check_not_given("options.high", range != linalg::EighRange::value && options.high != 0.0,
                    fmt::format("{}", options.high), "value", api);
    k = n;
    if (range == linalg::EighRange::index) {
        if (options.first < 0)
            throw_invalid(fmt::format("options.first: {}; give a 0-based position, 0 to n - 1", options.first), api);
        if (options.first > options.last)
            throw_invalid(fmt::format("options.first: {} is above options.last: {}; give first <= last", options.first,
                                      options.last),
                          api);
        if (options.last >= n)
            throw_invalid(fmt::format("options.last: {}; the matrices have n {} eigenvalues, give first to n - 1 = {}",
                                      options.last, n, n - 1),
                          api);
        k = options.last - options.first + 1;
    } else if (range == linalg::EighRange::value) {
        if (std::isnan(options.low) || std::isnan(options.high))
            throw_invalid(fmt::format("options.{}: NaN; give the interval (low, high] as numbers (infinities allowed)",
                                      std::isnan(options.low) ? "low" : "high"),
                          api);
        if (!(options.low < options.high))
            throw_invalid(
                fmt::format("options.low: {} is not below options.high: {}; the interval (low, high] must not "
                            "be empty",
                            options.low, options.high),
                api);
        bounds = {options.low, options.high};
        bounds32 = {float(options.low), float(options.high)};
    }
    if (range != linalg::EighRange::all && options.backend != linalg::Backend::automatic &&
        options.backend != linalg::Backend::looped)
        throw_not_supported(fmt::format("options.backend: {}; a range (options.range {}) runs cuSOLVER's Xsyevdx once "
                                        "per matrix: use looped or automatic",
                                        to_string(options.backend), to_string(range)),
                            api);
    values_layout = with_last(real_of(batch.dtype), batch.a.shape().first(std::size_t(batch.a.rank() - 1)), k);
    vectors_layout = with_last(batch.dtype, batch.a.shape(), k);
}

namespace {

/// Xsyevdx's arguments that depend on the range: cuSOLVER's range, the bounds (host pointers of the
/// real dtype; unread for an index range) and the 1-based positions (unread for a value range).
struct RangeArguments {
    cusolverEigRange_t range = CUSOLVER_EIG_RANGE_ALL;
    void* low = nullptr;
    void* high = nullptr;
    std::int64_t il = 1, iu = 1;
};

RangeArguments range_arguments(const linalg::EighOptions& options, DataType real, std::int64_t n,
                               std::array<double, 2>& bounds, std::array<float, 2>& bounds32) {
    RangeArguments r;
    const bool f32 = real == DataType::f32;
    r.low = f32 ? static_cast<void*>(&bounds32[0]) : static_cast<void*>(&bounds[0]);
    r.high = f32 ? static_cast<void*>(&bounds32[1]) : static_cast<void*>(&bounds[1]);
    r.iu = std::max<std::int64_t>(n, 1);
    if (options.range == linalg::EighRange::index) {
        r.range = CUSOLVER_EIG_RANGE_I;
        r.il = options.first + 1;
        r.iu = options.last + 1;
    } else if (options.range == linalg::EighRange::value) {
        r.range = CUSOLVER_EIG_RANGE_V;
    }
    return r;
}

}  // namespace

void EighImpl::size_range(const SolverHandle& h, std::int64_t ld, std::size_t& device_bytes, std::size_t& host_bytes) {
    const cudaDataType t = to_cuda(batch.dtype), w = to_cuda(real_of(batch.dtype));
    const RangeArguments r = range_arguments(options, real_of(batch.dtype), batch.n, bounds, bounds32);
    std::int64_t found = 0;
    check_cusolver(cusolverDnXsyevdx_bufferSize(h.get(), h.params(), jobz(), r.range,
                                                fill_mode(options.triangle, false), batch.n, t, nullptr, ld, r.low,
                                                r.high, r.il, r.iu, &found, w, nullptr, t, &device_bytes, &host_bytes),
                   "cusolverDnXsyevdx_bufferSize", "sizing an eigendecomposition of a range");
}

void EighImpl::run_range(const TensorView& a, const TensorView& values, const TensorView& vectors,
                         const TensorView& info, const TensorView& counts, core::StreamRef stream) {
    const std::int64_t n = batch.n, count = batch.count;
    const std::size_t elem = size_of(batch.dtype), welem = size_of(real_of(batch.dtype));
    const bool by_value = options.range == linalg::EighRange::value;
    // Xsyevdx overwrites A with n columns, the first ones the vectors, and W with n values: a value
    // range works in `vectors` and `values` where cuSOLVER can address them, an index range (k of
    // them kept) always in workspace.
    bool v_direct = false;
    if (options.vectors && by_value) {
        const Storage vs = storage_of(vectors);
        v_direct = vs.direct && !vs.row_major && vs.ld == std::max<std::int64_t>(n, 1);  // the planned workspace's
    }
    const auto w_stride = uniform_batch_stride(values, batch.batch_rank);
    const bool w_direct = by_value && (n <= 1 || values.stride(-1) == 1) && w_stride && (count <= 1 || *w_stride == n);
    const std::size_t a_bytes = v_direct ? 0 : aligned_bytes(std::size_t(count * n * n) * elem);
    const std::size_t w_bytes = w_direct ? 0 : aligned_bytes(std::size_t(count * n) * welem);
    const StreamWorkspace::Lease lease = workspace->acquire(a_bytes + w_bytes + aligned_bytes(single_bytes), stream);
    auto* area = static_cast<std::byte*>(lease.data);
    const TensorView target = v_direct ? vectors : TensorView(area, packed_column_major(batch.dtype, batch.a.shape()));
    const TensorView w =
        w_direct ? values : TensorView(area + a_bytes, with_last(values_layout.dtype(), values_layout.shape(), n));
    if (!same_operand(a, target)) copy_matrices(a, target, stream);
    const Storage ts = storage_of(target);
    const std::int64_t ld = std::max<std::int64_t>(n, 1);
    const std::int64_t a_step = ts.batch_stride * std::int64_t(elem);
    const std::int64_t w_step = (w_direct ? w_stride.value_or(0) : n) * std::int64_t(welem);
    const cudaDataType t = to_cuda(batch.dtype), wt = to_cuda(real_of(batch.dtype));
    const cublasFillMode_t fill = fill_mode(options.triangle, false);
    auto* data = static_cast<std::byte*>(target.data());
    auto* wdata = static_cast<std::byte*>(w.data());
    int* infos = static_cast<int*>(info.data());
    std::byte* ws = area + a_bytes + w_bytes;
    std::vector<int> found(std::size_t(count), 0);
    {
        std::unique_lock lock(host_mutex);  // the host workspace and the bounds
        const SolverHandle h(device, stream.handle());
        const RangeArguments r = range_arguments(options, real_of(batch.dtype), n, bounds, bounds32);
        for (std::int64_t b = 0; b < count; ++b) {
            std::int64_t meig = 0;
            check_cusolver(cusolverDnXsyevdx(h.get(), h.params(), jobz(), r.range, fill, n, t, data + b * a_step, ld,
                                             r.low, r.high, r.il, r.iu, &meig, wt, wdata + b * w_step, t, ws,
                                             single_bytes, host[0].data(), single_host, infos + b),
                           "cusolverDnXsyevdx", "an eigendecomposition of a range");
            found[std::size_t(b)] = int(meig);
        }
    }
    if (by_value) {
        // Past each matrix's count: NaN, so that no stale value passes for an eigenvalue.
        const double nan = std::numeric_limits<double>::quiet_NaN();
        for (std::int64_t b = 0; b < count; ++b) {
            const std::int64_t m = found[std::size_t(b)];
            if (m >= n) continue;
            gpumath::fill(TensorView(wdata + b * w_step + m * std::int64_t(welem), w.dtype(), {n - m}), nan, stream);
            if (options.vectors)
                gpumath::fill(
                    TensorView(data + b * a_step + m * ld * std::int64_t(elem), batch.dtype, {n, n - m}, {1, ld}),
                    std::complex<double>(nan, nan), stream);
        }
        // From pageable memory: the copy has staged `found` when it returns.
        check(cudaMemcpyAsync(counts.data(), found.data(), std::size_t(count) * sizeof(int), cudaMemcpyHostToDevice,
                              stream.handle()),
              "cudaMemcpyAsync", "writing the counts of eigenvalues");
    }
    if (!w_direct) copy_matrices(leading_values(w, k), values, stream);
    if (options.vectors && !v_direct) copy_matrices(sub_matrices(target, 0, n, 0, k), vectors, stream);
}

}  // namespace gpumath::detail
