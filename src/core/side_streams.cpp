// SPDX-License-Identifier: Apache-2.0
// The per-device pools of side streams (core/side_streams.hpp).
#include "core/side_streams.hpp"

#include <memory>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "detail/capture_mode.hpp"
#include "detail/device_registry.hpp"
#include "detail/status.hpp"

namespace gpumath::detail {
namespace {

/// Every device's sets, made on demand and never destroyed (work may be in flight at exit).
class SideStreamPool {
public:
    static SideStreamPool& of(int device) {
        static auto& pools = *new DeviceRegistry<SideStreamPool>();  // never destroyed (see above)
        return pools.get(device, "side streams", [](int) { return new SideStreamPool; });
    }

    /// A set none of whose streams is part of a capture, marked leased.
    SideStreamSet* lease(const char* what) {
        {
            std::lock_guard lock(mutex_);
            for (const auto& set : sets_) {
                if (set->leased || in_capture(*set)) continue;
                set->leased = true;
                return set.get();
            }
        }
        auto set = make_set(what);
        std::lock_guard lock(mutex_);
        sets_.push_back(std::move(set));
        return sets_.back().get();
    }

    void give_back(SideStreamSet* set) {
        std::lock_guard lock(mutex_);
        set->leased = false;
    }

private:
    static bool in_capture(const SideStreamSet& set) {
        for (cudaStream_t s : set.streams) {
            cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
            if (cudaStreamIsCapturing(s, &status) != cudaSuccess) {
                (void)cudaGetLastError();
                return true;  // an invalidated capture: keep away from it
            }
            if (status != cudaStreamCaptureStatusNone) return true;
        }
        return false;
    }

    /// Streams and events made in relaxed capture mode: a caller's capture may be under way.
    static std::unique_ptr<SideStreamSet> make_set(const char* what) {
        auto set = std::make_unique<SideStreamSet>();
        set->leased = true;
        cudaError_t s = cudaSuccess;
        {
            const RelaxedCaptureMode relaxed(what);
            s = cudaEventCreateWithFlags(&set->fork, cudaEventDisableTiming);
            for (std::size_t i = 0; i < set->streams.size() && s == cudaSuccess; ++i) {
                s = cudaStreamCreateWithFlags(&set->streams[i], cudaStreamNonBlocking);
                if (s == cudaSuccess) s = cudaEventCreateWithFlags(&set->joined[i], cudaEventDisableTiming);
            }
        }
        check(s, "cudaStreamCreateWithFlags", [&] { return fmt::format("creating the side streams of {}", what); });
        return set;
    }

    std::mutex mutex_;
    std::vector<std::unique_ptr<SideStreamSet>> sets_;
};

}  // namespace

SideStreamLease::SideStreamLease(int device, const char* what)
    : device_(device), what_(what), set_(SideStreamPool::of(device).lease(what)) {}

SideStreamLease::~SideStreamLease() { SideStreamPool::of(device_).give_back(set_); }

void SideStreamLease::fork(core::StreamRef stream, int sides) const {
    check(cudaEventRecord(set_->fork, stream.handle()), "cudaEventRecord",
          [&] { return fmt::format("forking the side streams of {}", what_); });
    for (int s = 0; s < sides; ++s)
        check(cudaStreamWaitEvent(set_->streams[std::size_t(s)], set_->fork, 0), "cudaStreamWaitEvent",
              [&] { return fmt::format("forking the side streams of {}", what_); });
}

void SideStreamLease::join(core::StreamRef stream, int sides) const {
    for (int s = 0; s < sides; ++s) {
        check(cudaEventRecord(set_->joined[std::size_t(s)], set_->streams[std::size_t(s)]), "cudaEventRecord",
              [&] { return fmt::format("joining the side streams of {}", what_); });
        check(cudaStreamWaitEvent(stream.handle(), set_->joined[std::size_t(s)], 0), "cudaStreamWaitEvent",
              [&] { return fmt::format("joining the side streams of {}", what_); });
    }
}

void SideStreamLease::join_noexcept(core::StreamRef stream, int sides) const noexcept {
    for (int s = 0; s < sides; ++s)
        if (cudaEventRecord(set_->joined[std::size_t(s)], set_->streams[std::size_t(s)]) == cudaSuccess)
            (void)cudaStreamWaitEvent(stream.handle(), set_->joined[std::size_t(s)], 0);
}

}  // namespace gpumath::detail
