// SPDX-License-Identifier: Apache-2.0
// Private: side streams a call forks its work to besides the caller's stream, and joins back, so
// that independent pieces (grouped products, the matrices of a batch) run side by side. Used by
// grouped matmul's streams backend and linalg's looped backend.
#pragma once

#include <array>

#include <cuda_runtime_api.h>

#include <gpumath/core/stream.hpp>

namespace gpumath::detail {

/// Side streams one call may fork to (at most).
inline constexpr int side_stream_count = 4;

/// Side streams of one device with the events that fork them from and join them to a caller.
struct SideStreamSet {
    std::array<cudaStream_t, side_stream_count> streams{};
    cudaEvent_t fork = nullptr;
    std::array<cudaEvent_t, side_stream_count> joined{};
    bool leased = false;
};

/// A set of `device`'s side streams for one call, given back when the lease ends. A set still part
/// of a capture is never leased, so eager calls of other threads never enqueue on a capturing
/// stream. The sets are made on demand (in relaxed capture mode: a caller's capture may be under
/// way) and never destroyed (work may be in flight at exit). `what` names the caller in errors.
class SideStreamLease {
public:
    SideStreamLease(int device, const char* what);
    SideStreamLease(const SideStreamLease&) = delete;
    SideStreamLease& operator=(const SideStreamLease&) = delete;
    SideStreamLease(SideStreamLease&&) = delete;
    SideStreamLease& operator=(SideStreamLease&&) = delete;
    ~SideStreamLease();
    SideStreamSet& operator*() const noexcept { return *set_; }

    /// Makes the first `sides` side streams wait for the work enqueued on `stream` so far.
    void fork(core::StreamRef stream, int sides) const;
    /// Makes `stream` wait for the work enqueued on the first `sides` side streams so far: work
    /// enqueued on `stream` afterwards waits for it, and a capture on `stream` captures it.
    void join(core::StreamRef stream, int sides) const;
    /// `join` for an error path: joins what it can and throws nothing.
    void join_noexcept(core::StreamRef stream, int sides) const noexcept;

private:
    int device_;
    const char* what_;
    SideStreamSet* set_;
};

}  // namespace gpumath::detail
