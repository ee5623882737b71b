// SPDX-License-Identifier: Apache-2.0
/// @file
/// CUDA graphs from stream capture: record work once, replay it with one launch.
#pragma once

#include <cstddef>
#include <utility>

#include <cuda_runtime_api.h>

#include <gpumath/core/stream.hpp>

namespace gpumath::core {

/// An instantiated CUDA graph (cudaGraph_t + cudaGraphExec_t) captured from a stream. Move-only;
/// destroyed (without blocking) with the object. Replays run the captured work with the argument
/// values and pointers it had when captured.
class Graph {
public:
    /// An empty graph; launching it throws InvalidArgument.
    Graph() noexcept = default;

    /// Captures the work `work(stream)` enqueues on `stream` (not the default stream: InvalidArgument)
    /// and instantiates it. Nothing runs during capture. The capture is thread-local: other threads'
    /// CUDA calls are unaffected. If `work` throws, the capture is ended and discarded and the
    /// exception propagates.
    template <class F>
    [[nodiscard]] static Graph capture(StreamRef stream, F&& work) {
        begin_capture(stream);
        try {
            std::forward<F>(work)(stream);
        } catch (...) {
            abort_capture(stream);
            throw;
        }
        return end_capture(stream);
    }

    /// Starts capturing `stream` (thread-local mode). Pair with `end_capture`.
    static void begin_capture(StreamRef stream);
    /// Ends the capture on `stream` and instantiates the graph. Throws CudaError when the captured
    /// work is invalid (e.g. an unsupported call was made during capture).
    [[nodiscard]] static Graph end_capture(StreamRef stream);

    /// Enqueues one replay on `stream`. Throws InvalidArgument on an empty graph, CudaError on failure.
    void launch(StreamRef stream = core::current_stream()) const;
    /// Uploads the graph to the device ahead of its first launch (optional; saves time on it).
    void upload(StreamRef stream = core::current_stream()) const;
    /// Number of nodes captured.
    [[nodiscard]] std::size_t node_count() const;

    /// The captured graph (owned by this object).
    [[nodiscard]] cudaGraph_t graph() const noexcept { return graph_; }
    /// The instantiated graph (owned by this object).
    [[nodiscard]] cudaGraphExec_t handle() const noexcept { return exec_; }
    /// True unless empty.
    [[nodiscard]] explicit operator bool() const noexcept { return exec_ != nullptr; }

    /// Moves the graph; `other` becomes empty.
    Graph(Graph&& other) noexcept
        : graph_(std::exchange(other.graph_, nullptr)), exec_(std::exchange(other.exec_, nullptr)) {}
    /// Destroys this graph (without blocking) and takes `other`'s; `other` becomes empty.
    Graph& operator=(Graph&& other) noexcept {
        if (this != &other) {
            reset();
            graph_ = std::exchange(other.graph_, nullptr);
            exec_ = std::exchange(other.exec_, nullptr);
        }
        return *this;
    }
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;
    ~Graph() { reset(); }

private:
    Graph(cudaGraph_t graph, cudaGraphExec_t exec) noexcept : graph_(graph), exec_(exec) {}
    static void abort_capture(StreamRef stream) noexcept;
    void reset() noexcept;

    cudaGraph_t graph_ = nullptr;
    cudaGraphExec_t exec_ = nullptr;
};

}  // namespace gpumath::core
