// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cuda_runtime_api.h>

#include <gpumath/core/stream.hpp>

namespace gpumath::core {

/// Options for creating an Event.
struct EventOptions {
    /// Record timestamps so `Event::elapsed_ms` works (costs a little more per record).
    bool timing = false;
    /// `synchronize()` sleeps instead of spinning (cudaEventBlockingSync).
    bool blocking = false;
};

/// An owning, move-only CUDA event. A moved-from Event is empty: `record`, `synchronize`,
/// `ready`, `elapsed_ms` and the StreamRef calls that take it throw InvalidArgument; `handle()` is null.
class Event {
public:
    /// Creates an event on the current device. Throws CudaError (also when no driver/device).
    explicit Event(const EventOptions& options = {});
    Event(Event&& other) noexcept : event_(other.event_), timing_(other.timing_) { other.event_ = nullptr; }
    Event& operator=(Event&& other) noexcept;
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    ~Event();

    /// Records the event on `stream` (default stream when omitted). InvalidArgument when empty.
    void record(StreamRef stream = {}) const;
    /// Blocks until the work captured by the last record has finished.
    void synchronize() const;
    /// True when the work captured by the last record has finished (non-blocking).
    [[nodiscard]] bool ready() const;
    /// False when the Event is empty (moved from).
    [[nodiscard]] explicit operator bool() const noexcept { return event_ != nullptr; }
    /// True when the event records timestamps.
    [[nodiscard]] bool timing() const noexcept { return timing_; }
    /// The native handle (owned by this Event).
    [[nodiscard]] cudaEvent_t handle() const noexcept { return event_; }

    /// Milliseconds between two recorded events (`end` after `start`). Both need
    /// `EventOptions::timing` and neither may be empty; otherwise InvalidArgument. Throws CudaError
    /// if either has not completed.
    [[nodiscard]] static float elapsed_ms(const Event& start, const Event& end);

private:
    cudaEvent_t event_ = nullptr;
    bool timing_ = false;
};

}  // namespace gpumath::core
