// SPDX-License-Identifier: Apache-2.0
/// @file
/// CUDA streams: the non-owning StreamRef every gpumath call takes, the owning Stream, and
/// StreamOptions.
#pragma once

#include <concepts>
#include <cstddef>

#include <cuda_runtime_api.h>

/// gpumath's runtime layer over the CUDA runtime, NVRTC and nvJitLink: devices, streams, events,
/// stream-ordered memory, run-time compilation and linking, modules and kernels, launches and
/// CUDA graphs, and the process-wide caches.
namespace gpumath::core {

class EventRef;
class Event;

/// Options for creating a Stream.
struct StreamOptions {
    /// Do not synchronize with the legacy default stream (cudaStreamNonBlocking). Off by default:
    /// a Stream then orders itself against the legacy default stream (as `cudaStreamCreate` does),
    /// so work on it and a gpumath call left on the default stream never race. Turn it on for
    /// streams meant to overlap with default-stream work, and order them yourself (events,
    /// `wait`, or a `StreamScope` for calls whose stream is left out).
    bool non_blocking = false;
    /// Stream priority; lower numbers are higher priority. 0 is the default priority.
    /// Values outside the device's range are clamped by CUDA.
    int priority = 0;
};

/// A non-owning reference to a CUDA stream: wraps any `cudaStream_t` (gpumath's own, PyTorch's,
/// CuPy's) without taking ownership. A default-constructed StreamRef is the CUDA default stream;
/// it cannot be made from `0` or `nullptr` (`f(0)` does not compile), so the default stream is
/// always asked for by name: `StreamRef{}` or `{}`. Cheap to copy; the referenced stream must
/// outlive the uses made of it.
class StreamRef {
public:
    /// The CUDA default stream (handle 0).
    constexpr StreamRef() noexcept = default;
    /// Adopts `stream` without owning it.
    constexpr StreamRef(cudaStream_t stream) noexcept : stream_(stream) {}  // NOLINT: implicit by design
    /// Not from an integer: `StreamRef(0)` would silently mean the default stream.
    template <std::integral T>
    StreamRef(T) = delete;
    /// Not from `nullptr`: write `StreamRef{}` for the default stream.
    StreamRef(std::nullptr_t) = delete;

    /// The native handle.
    [[nodiscard]] constexpr cudaStream_t handle() const noexcept { return stream_; }
    /// Blocks until all work enqueued on the stream has finished. Throws CudaError.
    void synchronize() const;
    /// Makes future work on this stream wait for the work `event` last captured (does not block
    /// the host). `event` may be gpumath's `Event` or any adopted `cudaEvent_t`. InvalidArgument
    /// for an empty event; CudaError.
    void wait(EventRef event) const;
    /// Makes future work on this stream wait for all work enqueued so far on `other`, which may
    /// belong to another device (the event between them is made on `other`'s). Throws CudaError.
    void wait(StreamRef other) const;
    /// Records `event` on this stream. InvalidArgument for an empty event; CudaError.
    void record(EventRef event) const;
    /// Creates an event (timing disabled) on this stream's device, whichever is current, records
    /// it on this stream and returns it. Throws CudaError.
    [[nodiscard]] Event record() const;
    /// True when all enqueued work has finished (non-blocking query). Throws CudaError on failure.
    [[nodiscard]] bool ready() const;
    /// The stream's priority. Throws CudaError.
    [[nodiscard]] int priority() const;

    /// The same stream: equal handles.
    friend constexpr bool operator==(StreamRef a, StreamRef b) noexcept { return a.stream_ == b.stream_; }

protected:
    /// The referenced stream (null: the default stream; for a Stream, empty).
    cudaStream_t stream_ = nullptr;
};

/// An owning, move-only CUDA stream, destroyed (without blocking) when the Stream is destroyed.
/// Converts to StreamRef wherever gpumath takes a stream. Created on the current device; see
/// `Device::create_stream` for another.
///
/// A moved-from or released Stream is empty: its methods throw InvalidArgument rather than act on
/// the default stream, and `handle()` is null. Converted to a StreamRef it is the default stream,
/// like any null handle, so do not pass an empty Stream on.
class Stream : public StreamRef {
public:
    /// Creates a stream on the current device. Throws CudaError (also when no driver/device).
    explicit Stream(const StreamOptions& options = {});
    /// Takes ownership of an existing stream: it will be destroyed with this object.
    [[nodiscard]] static Stream adopt(cudaStream_t stream) noexcept { return Stream(stream); }

    /// Moves the stream; `other` becomes empty.
    Stream(Stream&& other) noexcept : StreamRef(other.stream_) { other.stream_ = nullptr; }
    /// Destroys this stream's own stream (without blocking) and takes `other`'s; `other` becomes
    /// empty.
    Stream& operator=(Stream&& other) noexcept;
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    ~Stream();

    /// Blocks until all work enqueued on the stream has finished. InvalidArgument when the Stream
    /// is empty (moved from or released); CudaError.
    void synchronize() const;
    /// Makes future work on this stream wait for the work `event` last captured, as
    /// `StreamRef::wait(EventRef)`. InvalidArgument when the Stream or `event` is empty; CudaError.
    void wait(EventRef event) const;
    /// Makes future work on this stream wait for all work enqueued so far on `other`, as
    /// `StreamRef::wait(StreamRef)`. InvalidArgument when the Stream is empty; CudaError.
    void wait(StreamRef other) const;
    /// Records `event` on this stream. InvalidArgument when the Stream or `event` is empty;
    /// CudaError.
    void record(EventRef event) const;
    /// Creates an event (timing disabled), records it on this stream and returns it.
    /// InvalidArgument when the Stream is empty; CudaError.
    [[nodiscard]] Event record() const;
    /// True when all enqueued work has finished (non-blocking query). InvalidArgument when the
    /// Stream is empty; CudaError.
    [[nodiscard]] bool ready() const;
    /// The stream's priority. InvalidArgument when the Stream is empty; CudaError.
    [[nodiscard]] int priority() const;
    /// False when the Stream is empty (moved from or released).
    [[nodiscard]] explicit operator bool() const noexcept { return stream_ != nullptr; }

    /// Gives up ownership and returns the handle; the Stream becomes empty.
    [[nodiscard]] cudaStream_t release() noexcept {
        cudaStream_t s = stream_;
        stream_ = nullptr;
        return s;
    }

private:
    explicit Stream(cudaStream_t s) noexcept : StreamRef(s) {}
    void check_owned(const char* api) const;
};

/// The calling thread's current stream: the stream of every gpumath call whose stream argument is
/// left out. The CUDA default stream (`StreamRef{}`) until a StreamScope on this thread makes
/// another current. Each thread has its own; cheap (a thread-local read).
[[nodiscard]] StreamRef current_stream() noexcept;

/// Makes `stream` the calling thread's current stream for as long as it lives, as CuPy's
/// `with stream:` and PyTorch's `torch.cuda.stream(s)` do: every gpumath call on this thread whose
/// stream argument is left out runs on `stream`. The previous current stream comes back when the
/// scope ends; scopes nest. Not movable: a scope belongs to the block that opened it.
///
///     core::Stream stream;
///     core::StreamScope scope(stream);
///     Tensor a = Tensor::from_host(host_a, {m, k});   // on `stream`
///     Tensor d = matmul(a, b);                        // on `stream` too
class StreamScope {
public:
    /// Makes `stream` current on this thread.
    explicit StreamScope(StreamRef stream) noexcept;
    /// Makes the stream that was current before this scope current again.
    ~StreamScope();
    StreamScope(const StreamScope&) = delete;
    StreamScope& operator=(const StreamScope&) = delete;
    StreamScope(StreamScope&&) = delete;
    StreamScope& operator=(StreamScope&&) = delete;

private:
    StreamRef previous_;
};

}  // namespace gpumath::core
