// SPDX-License-Identifier: Apache-2.0
/// @file
/// CUDA events: the non-owning EventRef, the owning Event, and EventOptions.
#pragma once

#include <concepts>
#include <cstddef>

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

/// A non-owning reference to a CUDA event: wraps any `cudaEvent_t` (gpumath's `Event`, or one
/// made by PyTorch, CuPy or your own code) without taking ownership, so a stream can wait on it.
/// Cheap to copy; the event must outlive the uses made of it. Never made from `0` or `nullptr`;
/// a null handle (an empty `Event` converted to EventRef) makes every method throw InvalidArgument
/// before any CUDA call.
class EventRef {
public:
    /// Adopts `event` without owning it.
    constexpr EventRef(cudaEvent_t event) noexcept : event_(event) {}  // NOLINT: implicit by design
    /// Not from an integer.
    template <std::integral T>
    EventRef(T) = delete;
    /// Not from `nullptr`.
    EventRef(std::nullptr_t) = delete;

    /// Records the event on `stream` (the current stream when omitted). InvalidArgument when empty;
    /// CudaError.
    void record(StreamRef stream = core::current_stream()) const;
    /// Blocks until the work captured by the last record has finished. InvalidArgument when empty.
    void synchronize() const;
    /// True when the work captured by the last record has finished (non-blocking). InvalidArgument
    /// when empty.
    [[nodiscard]] bool ready() const;
    /// The native handle (not owned).
    [[nodiscard]] constexpr cudaEvent_t handle() const noexcept { return event_; }
    /// False for a null handle (an empty Event).
    [[nodiscard]] constexpr explicit operator bool() const noexcept { return event_ != nullptr; }

    /// The same event: equal handles.
    friend constexpr bool operator==(EventRef a, EventRef b) noexcept { return a.event_ == b.event_; }

protected:
    /// The referenced event (null for an empty Event).
    cudaEvent_t event_;
};

/// An owning, move-only CUDA event, destroyed (without blocking) with the Event. Converts to
/// EventRef wherever gpumath takes an event. A moved-from Event is empty: `record`, `synchronize`,
/// `ready`, `elapsed_ms` and the StreamRef calls that take it throw InvalidArgument; `handle()` is
/// null.
class Event : public EventRef {
public:
    /// Creates an event on the current device. Throws CudaError (also when no driver/device).
    explicit Event(const EventOptions& options = {});
    /// Moves the event; `other` becomes empty.
    Event(Event&& other) noexcept : EventRef(other.event_), timing_(other.timing_) { other.event_ = nullptr; }
    /// Destroys this event's own event and takes `other`'s; `other` becomes empty.
    Event& operator=(Event&& other) noexcept;
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    ~Event();

    /// True when the event records timestamps.
    [[nodiscard]] bool timing() const noexcept { return timing_; }

    /// Milliseconds between two recorded events (`end` after `start`). Both need
    /// `EventOptions::timing` and neither may be empty; otherwise InvalidArgument. Throws CudaError
    /// if either has not completed.
    [[nodiscard]] static float elapsed_ms(const Event& start, const Event& end);

private:
    bool timing_ = false;
};

}  // namespace gpumath::core
