// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: how a grouped call's products are enqueued once their plans are found, in
// order on the caller's stream (the loop backend) or spread over side streams that run them side by
// side (the streams backend), and the timing that lets `automatic` choose between the two.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <tuple>
#include <vector>

#include <gpumath/core/stream.hpp>
#include <gpumath/matmul/grouped.hpp>

#include "core/side_streams.hpp"
#include "matmul/internal.hpp"

namespace gpumath::detail {

struct GroupOperands;
struct HostKernelCall;

/// What every product of one grouped call shares besides its operands.
struct GroupCall {
    Scalar alpha{1.0};
    /// Scratch memory the call holds for the caller's stream (FP8 scale slots live past it):
    /// products enqueued on the caller's stream run with it instead of leasing their own, which
    /// would wait for the call's lease. Null without one.
    const WorkspaceArea* area = nullptr;
    /// The call as one launch of the grouped kernel (the `kernel` backend), where it can run it.
    const HostKernelCall* kernel = nullptr;
};

/// The plans of a call's products for `streams_partitioned`, looked up only when that backend runs
/// or is measured (a lookup per group costs host time).
class PartitionedPlans {
public:
    PartitionedPlans() = default;
    PartitionedPlans(const PartitionedPlans&) = delete;
    PartitionedPlans& operator=(const PartitionedPlans&) = delete;
    PartitionedPlans(PartitionedPlans&&) = delete;
    PartitionedPlans& operator=(PartitionedPlans&&) = delete;
    virtual ~PartitionedPlans() = default;
    /// Each product's plan for `sm_count_target` SMs (MatmulProblem::sm_count_target), in the
    /// order of the call's products.
    [[nodiscard]] virtual std::vector<std::shared_ptr<MatmulPlan>> plans(int sm_count_target) = 0;
};

/// The SM count target of each product of a `streams_partitioned` call of `products` products on
/// `device`: the device's SMs divided by the streams the call uses.
[[nodiscard]] int partition_sm_target(std::size_t products, int device);

/// The key of the plan for `key`'s call made for `sm_count_target` SMs.
[[nodiscard]] MatmulKey partitioned_key(MatmulKey key, int sm_count_target) noexcept;

/// The products of `groups` (their plans in `plans`), in group order on `stream`.
void enqueue_loop(std::span<const GroupOperands> groups, std::span<const std::shared_ptr<MatmulPlan>> plans,
                  const GroupCall& call, core::StreamRef stream, int device);

/// The same products spread over the caller's stream and up to `max_sides` (at most
/// side_stream_count) side streams of `device` (the largest products first, each to the stream with
/// the least work so far, the first of equals to the first stream of least work), forked
/// from `stream` and joined back to it with events: work enqueued on `stream` afterwards waits for
/// every product, and a CUDA graph capture on `stream` captures them all. The side streams are
/// leased per call, and a set still part of a capture is never leased, so eager calls of other
/// threads never enqueue on a capturing stream.
void enqueue_streams(std::span<const GroupOperands> groups, std::span<const std::shared_ptr<MatmulPlan>> plans,
                     const GroupCall& call, core::StreamRef stream, int device, int max_sides = side_stream_count);

/// The backend `automatic` measures for uneven groups: runs the call with `loop`, `streams`,
/// `streams_partitioned` (with `partitioned`, the plans for it), when `with_cublas` `cublas`, and
/// with `call.kernel` `kernel` (a warm-up each, then five rounds timing one run of each in turn, on
/// the caller's operands: each run writes the same D, the chosen one last) and returns the fastest:
/// among the candidates within 25 % of the least median GPU time (up to 256 products, the stream is
/// held by a host function while a timed run is enqueued), the one whose longer of that and its
/// median host time to enqueue is least (calls in a row go no faster than either). A grouped kernel
/// that fails to compile or load is left out with a warning. `ms` and `host_ms` receive the medians
/// in that order (0 for a backend not run). Synchronizes `stream`; never called while it captures.
[[nodiscard]] GroupedBackend measure_backends(std::span<const GroupOperands> groups,
                                              std::span<const std::shared_ptr<MatmulPlan>> plans,
                                              std::span<const std::shared_ptr<MatmulPlan>> partitioned,
                                              const GroupCall& call, core::StreamRef stream, int device,
                                              bool with_cublas, std::array<double, 5>& ms,
                                              std::array<double, 5>& host_ms);

/// Enqueues `call.kernel`'s launch on `stream` (NotSupported, naming `who`, without one).
void enqueue_kernel(const GroupCall& call, core::StreamRef stream, const char* who);

/// The class of call whose measured choice `automatic` remembers: how many products, and the
/// powers of two of their largest and mean number of rows.
struct GroupedCallClass {
    std::int64_t products = 0;
    int max_rows_log2 = 0;
    int mean_rows_log2 = 0;
    friend bool operator==(const GroupedCallClass&, const GroupedCallClass&) = default;
    friend bool operator<(const GroupedCallClass& x, const GroupedCallClass& y) noexcept {
        return std::tie(x.products, x.max_rows_log2, x.mean_rows_log2) <
               std::tie(y.products, y.max_rows_log2, y.mean_rows_log2);
    }
};
[[nodiscard]] GroupedCallClass call_class(std::span<const GroupOperands> groups);
/// The same from a mixture-of-experts call's host sizes (groups of 0 rows are no product).
[[nodiscard]] GroupedCallClass call_class(std::span<const std::int64_t> sizes);

/// What a measured choice of `automatic` holds for: the device, what every product shares and the
/// class of call.
struct BackendChoiceKey {
    int device = 0;
    std::int64_t n = 0, k = 0;
    int input = 0, result = 0, epilog = 0;
    /// -1 where the `kernel` backend cannot run the call, else the GroupedWgmmaLayout the grouped
    /// kernel runs it with (0: the portable kernel).
    int kernel = -1;
    /// Whether the `cublas` backend can run the call (compute type, C, layouts): a choice of
    /// cublas must not reach a call it refuses.
    bool cublas = false;
    GroupedCallClass calls;
    friend bool operator<(const BackendChoiceKey& x, const BackendChoiceKey& y) noexcept {
        return std::tie(x.device, x.n, x.k, x.input, x.result, x.epilog, x.kernel, x.cublas, x.calls) <
               std::tie(y.device, y.n, y.k, y.input, y.result, y.epilog, y.kernel, y.cublas, y.calls);
    }
};

/// The choices `automatic` measured (thread-safe; a few entries per shape of call).
class BackendChoices {
public:
    /// Choices kept at most; remembering one more drops the least recently found or remembered.
    static constexpr std::size_t max_entries = 4096;

    [[nodiscard]] std::optional<GroupedBackend> find(const BackendChoiceKey& key) const;
    void remember(const BackendChoiceKey& key, GroupedBackend backend);
    [[nodiscard]] std::size_t size() const {
        std::lock_guard lock(mutex_);
        return choices_.size();
    }

private:
    struct Choice {
        GroupedBackend backend;
        std::uint64_t used;  // `clock_` when last found or remembered
    };
    mutable std::mutex mutex_;
    mutable std::uint64_t clock_ = 0;
    mutable std::map<BackendChoiceKey, Choice> choices_;
};

/// Enqueues the products with `backend` (a single strided-batched product, group -1, always runs
/// as it is): loop, streams, streams_partitioned (plans from `partitioned`), cublas, kernel (with
/// `call.kernel`), or automatic, which takes the choice measured for this key, measures it now when
/// there is none and `stream` does not capture (and logs it at info level, `who` naming the
/// caller), and runs the loop while a capture is under way with nothing measured yet.
void enqueue_grouped(std::span<const GroupOperands> groups, std::span<const std::shared_ptr<MatmulPlan>> plans,
                     PartitionedPlans& partitioned, const GroupCall& call, core::StreamRef stream, int device,
                     GroupedBackend backend, BackendChoices& choices, BackendChoiceKey key, const char* who);

}  // namespace gpumath::detail
