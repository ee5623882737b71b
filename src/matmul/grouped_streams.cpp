// SPDX-License-Identifier: Apache-2.0
// The loop and streams backends of grouped products, and the measurement `automatic` makes.
#include "matmul/grouped_streams.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <limits>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <gpumath/core/device.hpp>
#include <gpumath/core/event.hpp>
#include <gpumath/error.hpp>

#include "core/side_streams.hpp"
#include "core/stream_workspace.hpp"
#include "detail/capture_mode.hpp"
#include "detail/device_registry.hpp"
#include "detail/log.hpp"
#include "detail/scope_exit.hpp"
#include "detail/status.hpp"
#include "matmul/grouped.hpp"
#include "matmul/checks.hpp"
#include "matmul/grouped_cublas.hpp"

namespace gpumath::detail {
namespace {

constexpr const char* k_api = "grouped matmul (streams backend)";

/// `area`: the call's held area when `stream` is the caller's, else null.
void run_group(const GroupOperands& g, MatmulPlan& plan, const GroupCall& call, core::StreamRef stream, int device,
               const WorkspaceArea* area) {
    (void)run_plan(plan, g.a, g.b, g.d, MatmulArgs{.alpha = call.alpha, .bias = g.bias, .scales = g.scales}, stream,
                   device, area);
}

/// How much more GPU time than the fastest candidate's a candidate of `automatic` may take and still
/// win on the host's time to enqueue it.
constexpr double host_tie = 1.25;

/// Products of a call whose timed run is enqueued behind a held stream (more would risk filling
/// the launch queue while the stream is held).
constexpr std::size_t max_gated_products = 256;

/// Runs on CUDA's callback thread: holds the stream until the measuring thread opens `flag` (a
/// heap-allocated std::atomic<bool>), then frees it.
void CUDART_CB hold_until_open(void* flag) {
    const std::unique_ptr<std::atomic<bool>> open(static_cast<std::atomic<bool>*>(flag));
    while (!open->load(std::memory_order_acquire)) std::this_thread::yield();
}

double flops_of(const GroupOperands& g) {
    return double(g.d.shape(-2)) * double(g.d.shape(-1)) * double(g.a.shape(-1));
}

int log2_ceil(std::int64_t v) { return v <= 1 ? 0 : int(std::bit_width(std::uint64_t(v - 1))); }

}  // namespace

void enqueue_loop(std::span<const GroupOperands> groups, std::span<const std::shared_ptr<MatmulPlan>> plans,
                  const GroupCall& call, core::StreamRef stream, int device) {
    for (std::size_t i = 0; i < groups.size(); ++i) run_group(groups[i], *plans[i], call, stream, device, call.area);
}

void enqueue_streams(std::span<const GroupOperands> groups, std::span<const std::shared_ptr<MatmulPlan>> plans,
                     const GroupCall& call, core::StreamRef stream, int device, int max_sides) {
    const int sides = std::min({side_stream_count, max_sides, int(groups.size()) - 1});
    if (sides <= 0) {
        enqueue_loop(groups, plans, call, stream, device);
        return;
    }
    // Largest products first, each to the stream with the least work so far (stream 0 the caller's).
    std::vector<std::size_t> order(groups.size());
    std::iota(order.begin(), order.end(), std::size_t(0));
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t x, std::size_t y) { return flops_of(groups[x]) > flops_of(groups[y]); });
    std::array<double, side_stream_count + 1> load{};
    std::vector<int> lane(groups.size());
    for (const std::size_t i : order) {
        const auto it = std::min_element(load.begin(), load.begin() + sides + 1);
        lane[i] = int(it - load.begin());
        *it += flops_of(groups[i]);
    }
    const SideStreamLease lease(device, k_api);
    SideStreamSet& set = *lease;
    lease.fork(stream, sides);
    try {
        for (int l = 0; l <= sides; ++l) {
            const core::StreamRef on = l == 0 ? stream : core::StreamRef(set.streams[std::size_t(l - 1)]);
            for (const std::size_t i : order)
                if (lane[i] == l) run_group(groups[i], *plans[i], call, on, device, l == 0 ? call.area : nullptr);
        }
    } catch (...) {
        // Join what was enqueued before rethrowing: work the caller enqueues next (or memory it
        // frees in stream order, such as the workspace holding FP8 scale slots) must wait for it.
        lease.join_noexcept(stream, sides);
        throw;
    }
    lease.join(stream, sides);
}

int grouped_device(std::span<const GroupOperands> groups, const MatmulOptions& options, const Scalar& alpha,
                   const char* api) {
    int device = 0;
    if (const cudaError_t status = cudaGetDevice(&device); status != cudaSuccess) [[unlikely]] {
        (void)cudaGetLastError();
        for (const GroupOperands& g : groups) {
            const MatmulArgs args{.alpha = alpha, .bias = g.bias, .scales = g.scales};
            (void)analyze_group(MatmulSignature::of(call_of(g.a, g.b, &g.d, args)), options, g.group, api);
        }
        throw_cuda(status, "cudaGetDevice", "finding the current device for a grouped matmul");
    }
    return device;
}

int current_device_or_none() {
    int device = 0;
    if (cudaGetDevice(&device) == cudaSuccess) return device;
    (void)cudaGetLastError();
    return -1;
}

std::shared_ptr<MatmulPlan> make_group_plan(const MatmulCall& call, const MatmulOptions& options, int device,
                                            int sm_count_target, const char* api) {
    MatmulProblem P = analyze(MatmulSignature::of(call), options, api);
    P.sm_count_target = sm_count_target;
    auto plan = std::make_shared<MatmulPlan>(P, options, device, 1);
    if (log_enabled(LogLevel::debug))
        log(LogLevel::debug, "{}: planned {} of M={} (algorithm {}, SM count target {})", api,
            plan->problem().shape.batch > 1 ? "a strided-batched product" : "a group", plan->problem().shape.m,
            plan->infos()[plan->selected()].id, sm_count_target);
    return plan;
}

int partition_sm_target(std::size_t products, int device) {
    const int lanes = std::max(1, std::min<int>(side_stream_count, int(products) - 1) + 1);
    return std::max(1, core::Device(device).multiprocessor_count() / lanes);
}

MatmulKey partitioned_key(MatmulKey key, int sm_count_target) noexcept {
    if (key.size < MatmulKey::capacity) {
        constexpr std::uint64_t tag = 0x534d5400ULL << 32;  // "SMT"
        key.words[key.size++] = tag | std::uint32_t(sm_count_target);
        key.hash = hash_key(key);
    }
    return key;
}

GroupedBackend measure_backends(std::span<const GroupOperands> groups,
                                std::span<const std::shared_ptr<MatmulPlan>> plans,
                                std::span<const std::shared_ptr<MatmulPlan>> partitioned, const GroupCall& call,
                                core::StreamRef stream, int device, bool with_cublas, std::array<double, 5>& ms,
                                std::array<double, 5>& host_ms) {
    constexpr GroupedBackend order[] = {GroupedBackend::loop, GroupedBackend::streams,
                                        GroupedBackend::streams_partitioned, GroupedBackend::cublas,
                                        GroupedBackend::kernel};
    std::vector<std::size_t> candidates{0, 1, 2};  // indices into order (and ms)
    if (with_cublas) candidates.push_back(3);
    if (call.kernel != nullptr) candidates.push_back(4);
    auto run = [&](std::size_t which) {
        switch (order[which]) {
            case GroupedBackend::loop:
                enqueue_loop(groups, plans, call, stream, device);
                break;
            case GroupedBackend::streams:
                enqueue_streams(groups, plans, call, stream, device);
                break;
            case GroupedBackend::streams_partitioned:
                enqueue_streams(groups, partitioned, call, stream, device);
                break;
            case GroupedBackend::cublas:
                enqueue_cublas(groups, plans, call.alpha, stream, device);
                break;
            default:
                enqueue_kernel(call, stream, "grouped matmul (automatic)");
                break;
        }
    };
    core::Event start(core::EventOptions{.timing = true});
    core::Event stop(core::EventOptions{.timing = true});
    // Warm-up (workspaces, side streams, first launches, compiling the grouped kernel), then rounds
    // that time each in turn, so that clocks ramping up or another process's work weigh on every
    // candidate alike. A grouped kernel that cannot be compiled or loaded here leaves the race.
    for (auto it = candidates.begin(); it != candidates.end();) {
        try {
            run(*it);
            ++it;
        } catch (const Error& e) {
            if (order[*it] != GroupedBackend::kernel) throw;
            log(LogLevel::warn, "grouped matmul: automatic leaves the grouped kernel out ({})", e.what());
            it = candidates.erase(it);
        }
    }
    const std::size_t n = candidates.size();
    // The GPU's time apart from the host's: a host function holds the stream until the timed run
    // is enqueued (a few hundred launches at most, well within the launch queue), so the kernels
    // run back to back as they do when a caller's stream is busy. The host's time to enqueue is
    // taken too: calls in a row cannot go faster than either.
    const bool gated = groups.size() <= max_gated_products;
    constexpr int rounds = 5;
    std::array<std::array<float, rounds>, std::size(order)> t{};
    std::array<std::array<double, rounds>, std::size(order)> h{};
    for (int r = 0; r < rounds; ++r)
        for (std::size_t i = 0; i < n; ++i) {
            // The host function frees the flag once it has seen it open: it may run after an
            // exception has left this scope.
            std::atomic<bool>* open = nullptr;
            if (gated) {
                auto flag = std::make_unique<std::atomic<bool>>(false);
                check(cudaLaunchHostFunc(stream.handle(), &hold_until_open, flag.get()), "cudaLaunchHostFunc",
                      "holding the stream while a grouped backend's run is enqueued");
                open = flag.release();
            }
            {
                const ScopeExit release([&] {
                    if (open != nullptr) open->store(true, std::memory_order_release);
                });
                start.record(stream);
                const auto enqueue = std::chrono::steady_clock::now();
                run(candidates[i]);
                h[i][std::size_t(r)] =
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - enqueue).count();
                stop.record(stream);
            }
            stop.synchronize();
            t[i][std::size_t(r)] = core::Event::elapsed_ms(start, stop);
        }
    ms = {};
    host_ms = {};
    std::size_t fastest = candidates[0];  // by GPU time
    for (std::size_t i = 0; i < n; ++i) {
        std::sort(t[i].begin(), t[i].end());
        std::sort(h[i].begin(), h[i].end());
        ms[candidates[i]] = double(t[i][rounds / 2]);
        host_ms[candidates[i]] = h[i][rounds / 2];
        if (ms[candidates[i]] < ms[fastest]) fastest = candidates[i];
    }
    // GPU time first (a replayed graph or a host running ahead pays nothing else); among the
    // candidates within host_tie of the fastest, the host's time to enqueue decides, as calls in a
    // row go no faster than the longer of the two.
    auto cost = [&](std::size_t c) { return std::max(ms[c], host_ms[c]); };
    std::size_t best = fastest;
    for (const std::size_t c : candidates)
        if (ms[c] <= ms[fastest] * host_tie && cost(c) < cost(best)) best = c;
    // D holds the last candidate's bits; the call's result is the chosen backend's, as every later
    // call of the class computes it.
    if (best != candidates[n - 1]) run(best);
    return order[best];
}

void enqueue_kernel(const GroupCall& call, core::StreamRef stream, const char* who) {
    if (call.kernel == nullptr)
        unsupported(who,
                    "grouped.backend: kernel runs the mixture-of-experts form (one A, weights (G, K, N), one D) "
                    "with host or device sizes only");
    run_host_kernel(*call.kernel, stream, who);
}

GroupedCallClass call_class(std::span<const GroupOperands> groups) {
    GroupedCallClass c;
    c.products = std::int64_t(groups.size());
    std::int64_t total = 0, largest = 0;
    for (const GroupOperands& g : groups) {
        // The per-group form's rows may sum past int64 (each group's own layouts bound only its
        // own): saturate, which keeps the mean's power of two.
        if (__builtin_add_overflow(total, g.d.shape(-2), &total)) total = std::numeric_limits<std::int64_t>::max();
        largest = std::max(largest, g.d.shape(-2));
    }
    c.max_rows_log2 = log2_ceil(largest);
    c.mean_rows_log2 = groups.empty() ? 0 : log2_ceil(total / std::int64_t(groups.size()));
    return c;
}

GroupedCallClass call_class(std::span<const std::int64_t> sizes) {
    GroupedCallClass c;
    std::int64_t total = 0, largest = 0;
    for (const std::int64_t m : sizes) {
        if (m == 0) continue;
        ++c.products;
        total += m;
        largest = std::max(largest, m);
    }
    c.max_rows_log2 = log2_ceil(largest);
    c.mean_rows_log2 = c.products == 0 ? 0 : log2_ceil(total / c.products);
    return c;
}

std::optional<GroupedBackend> BackendChoices::find(const BackendChoiceKey& key) const {
    std::lock_guard lock(mutex_);
    const auto it = choices_.find(key);
    if (it == choices_.end()) return std::nullopt;
    it->second.used = ++clock_;
    return it->second.backend;
}

void BackendChoices::remember(const BackendChoiceKey& key, GroupedBackend backend) {
    std::lock_guard lock(mutex_);
    // A process that meets ever new shapes must not grow without end: past the bound, the least
    // recently used choice is dropped (and measured again if its class comes back). The scan runs
    // only when a new class was just measured, which took far longer.
    if (choices_.size() >= max_entries && !choices_.contains(key)) {
        const auto oldest = std::min_element(choices_.begin(), choices_.end(), [](const auto& x, const auto& y) {
            return x.second.used < y.second.used;
        });
        choices_.erase(oldest);
    }
    choices_[key] = Choice{backend, ++clock_};
}

void enqueue_grouped(std::span<const GroupOperands> groups, std::span<const std::shared_ptr<MatmulPlan>> plans,
                     PartitionedPlans& partitioned, const GroupCall& call, core::StreamRef stream, int device,
                     GroupedBackend backend, BackendChoices& choices, BackendChoiceKey key, const char* who) {
    if (groups.size() == 1 && groups.front().group < 0) backend = GroupedBackend::loop;  // one strided batch
    if (backend == GroupedBackend::automatic && groups.size() > 1) {
        key.device = device;
        key.calls = call_class(groups);
        const bool with_cublas = call.area == nullptr && std::all_of(plans.begin(), plans.end(), [](const auto& p) {
                                     return cublas_grouped_runs(p->problem());
                                 });
        key.cublas = with_cublas;
        if (const std::optional<GroupedBackend> chosen = choices.find(key)) {
            backend = *chosen;
        } else if (is_capturing(stream, who)) {
            backend = GroupedBackend::loop;
        } else {
            std::array<double, 5> ms{}, host_ms{};
            const auto narrow = partitioned.plans(partition_sm_target(groups.size(), device));
            backend = measure_backends(groups, plans, narrow, call, stream, device, with_cublas, ms, host_ms);
            choices.remember(key, backend);
            auto timing = [&](std::size_t i, bool ran) {
                return ran ? fmt::format("{:.4f} ms (host {:.4f})", ms[i], host_ms[i]) : std::string("not applicable");
            };
            log(LogLevel::info,
                "{}: automatic chose {} for {} products of up to 2^{} rows (mean 2^{}), N = {}, K = {}: loop {}, "
                "streams {}, streams_partitioned {}, cublas {}, kernel {}",
                who, to_string(backend), key.calls.products, key.calls.max_rows_log2, key.calls.mean_rows_log2, key.n,
                key.k, timing(0, true), timing(1, true), timing(2, true), timing(3, with_cublas),
                timing(4, call.kernel != nullptr));
            return;  // the measured runs computed the products
        }
    }
    if (backend == GroupedBackend::kernel) {
        enqueue_kernel(call, stream, who);
        return;
    }
    if (backend == GroupedBackend::cublas) {
        // cuBLAS leases the caller stream's workspace itself: never with a call holding it (FP8,
        // the only case with an area, is refused before).
        if (call.area != nullptr) unsupported(who, "grouped.backend: cublas cannot run FP8 products");
        for (const auto& p : plans)
            if (std::string why = cublas_grouped_refusal(p->problem()); !why.empty())
                unsupported(who, "grouped.backend: cublas cannot run this call: {}", why);
        enqueue_cublas(groups, plans, call.alpha, stream, device);
        return;
    }
    if (backend == GroupedBackend::streams_partitioned) {
        const auto narrow = partitioned.plans(partition_sm_target(groups.size(), device));
        enqueue_streams(groups, narrow, call, stream, device);
    } else if (backend == GroupedBackend::streams) {
        enqueue_streams(groups, plans, call, stream, device);
    } else {
        enqueue_loop(groups, plans, call, stream, device);
    }
}

}  // namespace gpumath::detail
