// SPDX-License-Identifier: Apache-2.0
// Private: what a CUDA graph captured from gpumath work keeps alive besides its scratch memory
// (loaded modules, FFT plans), and the thread that destroys it once the graph is gone.
#pragma once

#include <cstddef>
#include <memory>

#include <cuda_runtime_api.h>

#include <gpumath/core/stream.hpp>

namespace gpumath::detail {

/// Ties `keep` to `graph`, the graph of capture sequence `capture`: it lives until the graph and
/// every executable graph made from it are destroyed and their launched work has finished. CUDA
/// then releases a user object from a thread of its own, where no CUDA call may be made; so `keep`
/// is handed to gpumath's release thread, which drops it with the device that was current here
/// (destroying a module or a cuFFT plan makes CUDA calls); once the process exits, it is kept. A
/// thread that ties an object (an owner) it tied to the same capture lately (among its last 8)
/// does nothing. CudaError when CUDA refuses the user object; nothing is tied then.
void hold_for_graph(cudaGraph_t graph, unsigned long long capture, const std::shared_ptr<const void>& keep);

/// Drops `keep` on gpumath's release thread with `device` current (or the current device when it is
/// negative), not here: for objects whose destruction may wait for the device, such as a cuFFT plan,
/// which frees its tables with cudaFree. The caller neither blocks nor makes the unsafe call itself
/// (the release thread runs in relaxed capture mode). Counted like a hold that CUDA released at once.
/// Dropped here when the release thread cannot run; kept when the process is exiting.
void drop_later(std::shared_ptr<const void> keep, int device) noexcept;

/// The graph `stream` is capturing into and its capture sequence, or a null graph when it is not
/// capturing. A failed query or an invalidated capture also gives a null graph: the work that
/// follows fails on its own with CUDA's error. One driver query for a stream that is not
/// capturing (the runtime is asked only for one that is); no allocation.
struct CaptureTarget {
    cudaGraph_t graph = nullptr;
    unsigned long long capture = 0;
};
[[nodiscard]] CaptureTarget capture_target(core::StreamRef stream) noexcept;

/// Counts since the process started, for tests and diagnostics: objects tied to graphs, released
/// by CUDA, and dropped by the release thread.
struct GraphHoldStats {
    std::size_t held = 0;
    std::size_t released = 0;
    std::size_t dropped = 0;
};
[[nodiscard]] GraphHoldStats graph_hold_stats();

}  // namespace gpumath::detail
