// SPDX-License-Identifier: Apache-2.0
// What captured graphs keep alive, and the thread that drops it after CUDA releases it.
#include "core/graph_holds.hpp"

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <new>
#include <thread>
#include <utility>

#include "core/driver_api.hpp"
#include "detail/log.hpp"
#include "detail/status.hpp"

namespace gpumath::detail {
namespace {

// One object tied to a graph. CUDA's release callback links it into a list without allocating
// (it runs on a CUDA thread, where throwing or blocking on CUDA work is not allowed).
struct Hold {
    std::shared_ptr<const void> keep;
    int device = -1;  // current when it was tied: what it is dropped with
    Hold* next = nullptr;
};

struct Holds {
    std::mutex mutex;
    std::condition_variable wake;
    Hold* released = nullptr;  // released by CUDA, waiting for the release thread
    std::once_flag started;
    std::atomic<bool> running{false};  // the release thread was started
    std::atomic<bool> exiting{false};  // the process is exiting: holds are no longer dropped
    std::mutex dropping;               // held while one hold is dropped (exit waits for it)
    std::atomic<std::size_t> held{0};
    std::atomic<std::size_t> released_count{0};
    std::atomic<std::size_t> dropped{0};
};

// Never destroyed: CUDA may release graphs while the process exits.
Holds& holds() {
    static auto* h = new Holds();
    return *h;
}

[[noreturn]] void release_thread(Holds& h) {
    // Unloading a module or destroying a cuFFT plan is not stream work: in the relaxed mode it is
    // not refused as a potentially unsafe call while another thread captures in global mode.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    int current = -1;
    for (;;) {
        Hold* list = nullptr;
        {
            std::unique_lock lock(h.mutex);
            h.wake.wait(lock, [&] { return h.released != nullptr; });
            list = std::exchange(h.released, nullptr);
        }
        // Once the process exits, cuFFT and the CUDA runtime may be shutting down: holds stay.
        while (list != nullptr) {
            std::lock_guard drop(h.dropping);
            if (h.exiting.load(std::memory_order_acquire)) break;
            Hold* next = list->next;
            if (list->device >= 0 && list->device != current && cudaSetDevice(list->device) == cudaSuccess)
                current = list->device;
            delete list;  // drops the graph's reference, maybe the last one
            list = next;
            h.dropped.fetch_add(1, std::memory_order_relaxed);
        }
    }
}

// Runs on a CUDA thread: no CUDA calls, no allocation, no exceptions.
void CUDART_CB on_release(void* p) noexcept {
    auto* hold = static_cast<Hold*>(p);
    Holds& h = holds();
    {
        std::lock_guard lock(h.mutex);
        hold->next = h.released;
        h.released = hold;
        h.released_count.fetch_add(1, std::memory_order_relaxed);  // before the release thread can drop it
    }
    h.wake.notify_one();
}

// Owners this thread tied to graphs lately, with their captures.
struct RecentHolds {
    static constexpr std::size_t size = 8;
    std::array<unsigned long long, size> capture{};
    std::array<std::weak_ptr<const void>, size> owner;
    std::size_t next = 0;

    [[nodiscard]] bool contains(unsigned long long c, const std::shared_ptr<const void>& keep) const {
        for (std::size_t i = 0; i < size; ++i)
            if (capture[i] == c && !owner[i].owner_before(keep) && !keep.owner_before(owner[i])) return true;
        return false;
    }
    void add(unsigned long long c, const std::shared_ptr<const void>& keep) {
        capture[next] = c;
        owner[next] = keep;
        next = (next + 1) % size;
    }
};

void start_release_thread(Holds& h) {
    try {
        std::thread([&h] { release_thread(h); }).detach();
        h.running.store(true, std::memory_order_release);
        // Registered after the CUDA runtime started, so it runs before the runtime's own teardown:
        // a drop in progress (a cuFFT plan being destroyed) finishes first, and none starts after.
        std::atexit([] {
            Holds& holds_at_exit = holds();
            holds_at_exit.exiting.store(true, std::memory_order_release);
            const std::lock_guard wait_for_drop(holds_at_exit.dropping);
        });
    } catch (const std::exception& e) {
        // Holds are then kept for the life of the process: graphs still replay correctly.
        log(LogLevel::warn, "no thread to release what CUDA graphs held ({}); it is kept until the process exits",
            e.what());
    }
}

}  // namespace

void hold_for_graph(cudaGraph_t graph, unsigned long long capture, const std::shared_ptr<const void>& keep) {
    // Loops that launch a few kernels many times in a capture tie each module to the graph once.
    thread_local RecentHolds recent;
    if (recent.contains(capture, keep)) return;
    Holds& h = holds();
    std::call_once(h.started, [&h] { start_release_thread(h); });
    int device = -1;
    if (cudaGetDevice(&device) != cudaSuccess) device = -1;
    auto* hold = new Hold{keep, device, nullptr};
    h.held.fetch_add(1, std::memory_order_relaxed);  // counted before CUDA may release it
    cudaUserObject_t object = nullptr;
    if (const cudaError_t s = cudaUserObjectCreate(&object, hold, &on_release, 1, cudaUserObjectNoDestructorSync);
        s != cudaSuccess) {
        delete hold;
        h.held.fetch_sub(1, std::memory_order_relaxed);
        check(s, "cudaUserObjectCreate", "tying loaded code or a plan to the graph being captured");
    }
    if (const cudaError_t s = cudaGraphRetainUserObject(graph, object, 1, cudaGraphUserObjectMove); s != cudaSuccess) {
        (void)cudaUserObjectRelease(object, 1);  // CUDA calls on_release: the release thread drops it
        check(s, "cudaGraphRetainUserObject", "tying loaded code or a plan to the graph being captured");
    }
    recent.add(capture, keep);
}

void drop_later(std::shared_ptr<const void> keep, int device) noexcept {
    if (!keep) return;
    Holds& h = holds();
    try {
        std::call_once(h.started, [&h] { start_release_thread(h); });
    } catch (...) {
        return;  // no release thread: dropped here
    }
    if (!h.running.load(std::memory_order_acquire)) return;
    if (device < 0 && cudaGetDevice(&device) != cudaSuccess) {
        (void)cudaGetLastError();
        device = -1;
    }
    auto* hold = new (std::nothrow) Hold{std::move(keep), device, nullptr};
    if (hold == nullptr) return;  // `keep` was not moved from: dropped here
    h.held.fetch_add(1, std::memory_order_relaxed);
    on_release(hold);
}

CaptureTarget capture_target(core::StreamRef stream) noexcept {
    // The driver's own query is the cheap one (it runs on every launch); the runtime's names the
    // graph, and runs only for a capturing stream.
    static const DriverApi* const d = driver_if_available();
    if (CUstreamCaptureStatus capturing = CU_STREAM_CAPTURE_STATUS_NONE;
        d != nullptr && d->cuStreamIsCapturing != nullptr &&
        d->cuStreamIsCapturing(reinterpret_cast<CUstream>(stream.handle()), &capturing) == CUDA_SUCCESS &&
        capturing != CU_STREAM_CAPTURE_STATUS_ACTIVE) [[likely]]
        return {};
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    CaptureTarget t;
    cudaGraph_t graph = nullptr;
    if (cudaStreamGetCaptureInfo(stream.handle(), &status, &t.capture, &graph) != cudaSuccess) [[unlikely]] {
        (void)cudaGetLastError();
        return {};
    }
    if (status == cudaStreamCaptureStatusActive) [[unlikely]]
        t.graph = graph;
    return t;
}

GraphHoldStats graph_hold_stats() {
    Holds& h = holds();
    return {h.held.load(), h.released_count.load(), h.dropped.load()};
}

}  // namespace gpumath::detail
