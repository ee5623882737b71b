// SPDX-License-Identifier: Apache-2.0
// StreamRef and Stream: stream-ordered work, waits and records.
#include <gpumath/core/event.hpp>
#include <gpumath/core/stream.hpp>

#include <fmt/format.h>

#include <gpumath/core/device.hpp>

#include "core/driver_api.hpp"
#include "core/event_check.hpp"
#include "core/stream_workspace.hpp"
#include "detail/status.hpp"

namespace gpumath::core {

namespace {

int device_of(StreamRef stream) {
    return detail::stream_device(reinterpret_cast<CUstream>(stream.handle()), "finding the device of a stream");
}

// Destroys a stream gpumath created, freeing gpumath's scratch areas of it first, in order on it
// while it still exists.
void destroy(cudaStream_t stream) noexcept {
    detail::forget_stream(stream);
    (void)cudaStreamDestroy(stream);
}

// An event to record on `stream`: CUDA records an event only on a stream of the device it was
// created on, which need not be the current one.
Event event_for(StreamRef stream) {
    const detail::DeviceGuard guard(device_of(stream));
    return Event();
}

}  // namespace

namespace {

thread_local cudaStream_t current = nullptr;

}  // namespace

StreamRef current_stream() noexcept { return current; }

StreamScope::StreamScope(StreamRef stream) noexcept : previous_(current) { current = stream.handle(); }

StreamScope::~StreamScope() { current = previous_.handle(); }

void StreamRef::synchronize() const { detail::check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

void StreamRef::wait(EventRef event) const {
    detail::check_event(event, "event", "StreamRef::wait");
    detail::check(cudaStreamWaitEvent(stream_, event.handle(), 0), "cudaStreamWaitEvent");
}

void StreamRef::wait(StreamRef other) const {
    if (other == *this) return;
    Event e = event_for(other);
    e.record(other);
    wait(e);
}

void StreamRef::record(EventRef event) const {
    detail::check_event(event, "event", "StreamRef::record");
    event.record(*this);
}

Event StreamRef::record() const {
    Event e = event_for(*this);
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
    detail::check(cudaStreamCreateWithPriority(
                      &stream_, options.non_blocking ? cudaStreamNonBlocking : cudaStreamDefault, options.priority),
                  "cudaStreamCreateWithPriority", "creating a stream");
}

void Stream::check_owned(const char* api) const {
    if (stream_ == nullptr)
        detail::throw_invalid(
            "this Stream is empty (moved from or released); use the Stream it was moved to, or "
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
        if (stream_ != nullptr) destroy(stream_);
        stream_ = other.stream_;
        other.stream_ = nullptr;
    }
    return *this;
}

Stream::~Stream() {
    if (stream_ != nullptr) destroy(stream_);
}

}  // namespace gpumath::core
