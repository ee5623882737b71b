// SPDX-License-Identifier: Apache-2.0
#include <gpumath/core/event.hpp>
#include <gpumath/core/stream.hpp>

#include <fmt/format.h>

#include <gpumath/detail/status.hpp>

namespace gpumath::core {

void StreamRef::synchronize() const { detail::check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

namespace {
// EventRef's methods name themselves after Event, the type callers hold nearly always.
void check_event(EventRef event, const char* what, const char* api) {
    if (!event)
        detail::throw_invalid(fmt::format("{}: this Event is empty (moved from), or the cudaEvent_t is null; use the "
                                          "Event it was moved to, or create a new one",
                                          what),
                              api);
}
}  // namespace

void StreamRef::wait(EventRef event) const {
    check_event(event, "event", "StreamRef::wait");
    detail::check(cudaStreamWaitEvent(stream_, event.handle(), 0), "cudaStreamWaitEvent");
}

void StreamRef::wait(StreamRef other) const {
    if (other == *this) return;
    Event e;
    e.record(other);
    wait(e);
}

void StreamRef::record(EventRef event) const {
    check_event(event, "event", "StreamRef::record");
    event.record(*this);
}

Event StreamRef::record() const {
    Event e;
    e.record(*this);
    return e;
}

bool StreamRef::ready() const {
    const cudaError_t s = cudaStreamQuery(stream_);
    if (s == cudaErrorNotReady) return false;
    detail::check(s, "cudaStreamQuery");
    return true;
}

int StreamRef::priority() const {
    int p = 0;
    detail::check(cudaStreamGetPriority(stream_, &p), "cudaStreamGetPriority");
    return p;
}

Stream::Stream(const StreamOptions& options) {
    detail::check(cudaStreamCreateWithPriority(&stream_, options.non_blocking ? cudaStreamNonBlocking : cudaStreamDefault,
                                               options.priority),
                  "cudaStreamCreateWithPriority", "creating a stream");
}

void Stream::check_owned(const char* api) const {
    if (stream_ == nullptr)
        detail::throw_invalid("this Stream is empty (moved from or released); use the Stream it was moved to, or "
                              "create a new one",
                              api);
}

void Stream::synchronize() const {
    check_owned("Stream::synchronize");
    StreamRef::synchronize();
}

void Stream::wait(EventRef event) const {
    check_owned("Stream::wait");
    StreamRef::wait(event);
}

void Stream::wait(StreamRef other) const {
    check_owned("Stream::wait");
    StreamRef::wait(other);
}

void Stream::record(EventRef event) const {
    check_owned("Stream::record");
    StreamRef::record(event);
}

Event Stream::record() const {
    check_owned("Stream::record");
    return StreamRef::record();
}

bool Stream::ready() const {
    check_owned("Stream::ready");
    return StreamRef::ready();
}

int Stream::priority() const {
    check_owned("Stream::priority");
    return StreamRef::priority();
}

Stream& Stream::operator=(Stream&& other) noexcept {
    if (this != &other) {
        if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
        stream_ = other.stream_;
        other.stream_ = nullptr;
    }
    return *this;
}

Stream::~Stream() {
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

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
    check_event(*this, "this", "Event::record");
    detail::check(cudaEventRecord(event_, stream.handle()), "cudaEventRecord");
}

void EventRef::synchronize() const {
    check_event(*this, "this", "Event::synchronize");
    detail::check(cudaEventSynchronize(event_), "cudaEventSynchronize");
}

bool EventRef::ready() const {
    check_event(*this, "this", "Event::ready");
    const cudaError_t s = cudaEventQuery(event_);
    if (s == cudaErrorNotReady) return false;
    detail::check(s, "cudaEventQuery");
    return true;
}

float Event::elapsed_ms(const Event& start, const Event& end) {
    check_event(start, "start", "Event::elapsed_ms");
    check_event(end, "end", "Event::elapsed_ms");
    if (!start.timing_ || !end.timing_)
        detail::throw_invalid(std::string(!start.timing_ ? "start" : "end") +
                                  " was created without timing; create both events with EventOptions{.timing = true}",
                              "Event::elapsed_ms");
    float ms = 0;
    detail::check(cudaEventElapsedTime(&ms, start.event_, end.event_), "cudaEventElapsedTime");
    return ms;
}

}  // namespace gpumath::core
