// SPDX-License-Identifier: Apache-2.0
// Private: a device's idle library handles (cuSOLVER's, cuBLAS's, cuSPARSE's). A call takes one
// for as long as it enqueues work and gives it back; handles are made on demand (in relaxed capture
// mode: a caller's capture may be under way) and never destroyed (work may be in flight at exit).
#pragma once

#include <mutex>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "detail/capture_mode.hpp"
#include "detail/device_registry.hpp"

namespace gpumath::detail {

/// A pooled library handle with the stream last set on it. The libraries keep a handle's stream
/// until it is set again, and a new handle's is the null stream, so a call that finds the stream it
/// wants already set skips the library's SetStream (a host cost on every execute otherwise).
template <class Handle>
struct StreamBound {
    Handle handle{};
    cudaStream_t stream = nullptr;
};

template <class Handle>
class HandlePool {
public:
    /// The pool of `device` (one per device and handle type, never destroyed).
    static HandlePool& of(int device) {
        static auto& pools = *new DeviceRegistry<HandlePool>();
        return pools.get(device, "gpumath", [](int) { return new HandlePool; });
    }

    /// An idle handle, or a new one from `make()` (run in relaxed capture mode; `what` names it).
    template <class Make>
    Handle take(const char* what, Make&& make) {
        {
            std::lock_guard lock(mutex_);
            if (!idle_.empty()) {
                Handle h = idle_.back();
                idle_.pop_back();
                return h;
            }
        }
        const RelaxedCaptureMode relaxed(what);
        return make();
    }

    /// Makes `h` idle again (dropped when out of memory).
    void give_back(Handle h) noexcept {
        try {
            std::lock_guard lock(mutex_);
            idle_.push_back(std::move(h));
        } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory; the handle is dropped
        }
    }

private:
    std::mutex mutex_;
    std::vector<Handle> idle_;
};

}  // namespace gpumath::detail
