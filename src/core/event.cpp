// SPDX-License-Identifier: Apache-2.0
// EventRef and Event: recording, waiting on and timing events.
#include <gpumath/core/event.hpp>
#include <gpumath/core/stream.hpp>

#include <fmt/format.h>

#include "core/event_check.hpp"
#include "detail/status.hpp"

namespace gpumath::detail {

// EventRef's methods name themselves after Event, the type callers hold nearly always.
void check_event(core::EventRef event, const char* what, const char* api) {
    if (!event)
        throw_invalid(fmt::format("{}: this Event is empty (moved from), or the cudaEvent_t is null; use the Event it "
                                  "was moved to, or create a new one",
                                  what),
                      api);
}

}  // namespace gpumath::detail

namespace gpumath::core {

Event::Event(const EventOptions& options) : EventRef(cudaEvent_t{}), timing_(options.timing) {
    unsigned flags = options.timing ? cudaEventDefault : cudaEventDisableTiming;
    if (options.blocking) flags |= cudaEventBlockingSync;
    detail::check(cudaEventCreateWithFlags(&event_, flags), "cudaEventCreateWithFlags", "creating an event");
}

Event& Event::operator=(Event&& other) noexcept {
    if (this != &other) {
        if (event_ != nullptr) (void)cudaEventDestroy(event_);
        event_ = other.event_;
        timing_ = other.timing_;
        other.event_ = nullptr;
    }
    return *this;
}

Event::~Event() {
    if (event_ != nullptr) (void)cudaEventDestroy(event_);
}

void EventRef::record(StreamRef stream) const {
    detail::check_event(*this, "this", "Event::record");
    detail::check(cudaEventRecord(event_, stream.handle()), "cudaEventRecord");
}

void EventRef::synchronize() const {
    detail::check_event(*this, "this", "Event::synchronize");
    detail::check(cudaEventSynchronize(event_), "cudaEventSynchronize");
}

bool EventRef::ready() const {
    detail::check_event(*this, "this", "Event::ready");
    const cudaError_t s = cudaEventQuery(event_);
    if (s == cudaErrorNotReady) return false;
    detail::check(s, "cudaEventQuery");
    return true;
}

float Event::elapsed_ms(const Event& start, const Event& end) {
    detail::check_event(start, "start", "Event::elapsed_ms");
    detail::check_event(end, "end", "Event::elapsed_ms");
    if (!start.timing_ || !end.timing_)
        detail::throw_invalid(std::string(!start.timing_ ? "start" : "end") +
                                  " was created without timing; create both events with EventOptions{.timing = true}",
                              "Event::elapsed_ms");
    float ms = 0;
    detail::check(cudaEventElapsedTime(&ms, start.event_, end.event_), "cudaEventElapsedTime");
    return ms;
}

}  // namespace gpumath::core
