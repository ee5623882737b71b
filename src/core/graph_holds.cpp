// SPDX-License-Identifier: Apache-2.0
// What captured graphs keep alive, and the thread that drops it after CUDA releases it.
#include "core/graph_holds.hpp"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>

#include "detail/status.hpp"

namespace gpumath::detail {
namespace {

// One object tied to a graph. CUDA's release callback links it into a list without allocating
// (it runs on a CUDA thread, where throwing or blocking on CUDA work is not allowed).
struct Hold {
    std::shared_ptr<const void> keep;
    Hold* next = nullptr;
};

struct Holds {
    std::mutex mutex;
    std::condition_variable wake;
    Hold* released = nullptr;  // released by CUDA, waiting for the release thread
    std::once_flag started;
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
    // Unloading a module or destroying a cuFFT plan is not stream work: with the relaxed mode it
    // does not invalidate a capture that another thread runs in global mode.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    for (;;) {
        Hold* list = nullptr;
        {
            std::unique_lock lock(h.mutex);
            h.wake.wait(lock, [&] { return h.released != nullptr; });
            list = std::exchange(h.released, nullptr);
        }
        while (list != nullptr) {
            Hold* next = list->next;
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
    }
    h.released_count.fetch_add(1, std::memory_order_relaxed);
    h.wake.notify_one();
}

struct LastHold {
    unsigned long long capture = 0;
    std::weak_ptr<const void> owner;
};

}  // namespace

void hold_for_graph(cudaGraph_t graph, unsigned long long capture, const std::shared_ptr<const void>& keep) {
    // Loops that launch one kernel many times in a capture tie its module to the graph once.
    thread_local LastHold last;
    if (last.capture == capture && !last.owner.owner_before(keep) && !keep.owner_before(last.owner)) return;
    Holds& h = holds();
    std::call_once(h.started, [&] { std::thread([&h] { release_thread(h); }).detach(); });
    auto* hold = new Hold{keep, nullptr};
    cudaUserObject_t object = nullptr;
    if (const cudaError_t s = cudaUserObjectCreate(&object, hold, &on_release, 1, cudaUserObjectNoDestructorSync);
        s != cudaSuccess) {
        delete hold;
        check(s, "cudaUserObjectCreate", "tying loaded code or a plan to the graph being captured");
    }
    if (const cudaError_t s = cudaGraphRetainUserObject(graph, object, 1, cudaGraphUserObjectMove); s != cudaSuccess) {
        (void)cudaUserObjectRelease(object, 1);  // CUDA calls on_release: the release thread drops it
        check(s, "cudaGraphRetainUserObject", "tying loaded code or a plan to the graph being captured");
    }
    h.held.fetch_add(1, std::memory_order_relaxed);
    last.capture = capture;
    last.owner = keep;
}

CaptureTarget capture_target(core::StreamRef stream) noexcept {
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
