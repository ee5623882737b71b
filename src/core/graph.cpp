// SPDX-License-Identifier: Apache-2.0
// Graph: stream capture, instantiation, replay.
#include <gpumath/core/graph.hpp>

#include <fmt/format.h>

#include "detail/status.hpp"

namespace gpumath::core {

namespace {
constexpr const char* k_empty = "this Graph is empty (default-constructed or moved from); make one with Graph::capture";

void check_capturable(StreamRef stream, const char* api) {
    const cudaStream_t s = stream.handle();
    if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread)
        detail::throw_invalid(
            "stream: the default stream cannot be captured; capture a gpumath::core::Stream "
            "(or another stream you created)",
            api);
}
}  // namespace

void Graph::begin_capture(StreamRef stream) {
    check_capturable(stream, "Graph::begin_capture");
    detail::check(cudaStreamBeginCapture(stream.handle(), cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture",
                  "starting a graph capture");
}

Graph Graph::end_capture(StreamRef stream) {
    check_capturable(stream, "Graph::end_capture");
    cudaGraph_t graph = nullptr;
    detail::check(cudaStreamEndCapture(stream.handle(), &graph), "cudaStreamEndCapture",
                  "ending a graph capture (was an unsupported call made while capturing?)");
    cudaGraphExec_t exec = nullptr;
    const cudaError_t r = cudaGraphInstantiate(&exec, graph, 0);
    if (r != cudaSuccess) {
        (void)cudaGraphDestroy(graph);
        detail::check(r, "cudaGraphInstantiate", "instantiating a captured graph");
    }
    return Graph(graph, exec);
}

void Graph::abort_capture(StreamRef stream) noexcept {
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(stream.handle(), &graph) == cudaSuccess && graph != nullptr) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
}

void Graph::launch(StreamRef stream) const {
    if (exec_ == nullptr) detail::throw_invalid(k_empty, "Graph::launch");
    detail::check(cudaGraphLaunch(exec_, stream.handle()), "cudaGraphLaunch", "replaying a graph");
}

void Graph::upload(StreamRef stream) const {
    if (exec_ == nullptr) detail::throw_invalid(k_empty, "Graph::upload");
    detail::check(cudaGraphUpload(exec_, stream.handle()), "cudaGraphUpload", "uploading a graph");
}

std::size_t Graph::node_count() const {
    if (graph_ == nullptr) detail::throw_invalid(k_empty, "Graph::node_count");
    std::size_t n = 0;
    detail::check(cudaGraphGetNodes(graph_, nullptr, &n), "cudaGraphGetNodes");
    return n;
}

void Graph::reset() noexcept {
    if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_);
    if (graph_ != nullptr) (void)cudaGraphDestroy(graph_);
    exec_ = nullptr;
    graph_ = nullptr;
}

}  // namespace gpumath::core
