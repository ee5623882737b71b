// SPDX-License-Identifier: Apache-2.0
// Private to src/linalg: the streams a batch of single-matrix calls runs on (the caller's stream and
// up to four side streams forked from it and joined back), each with a cuSOLVER handle.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include <gpumath/core/stream.hpp>

#include "core/side_streams.hpp"
#include "linalg/cusolver.hpp"

namespace gpumath::detail {

class Lanes {
public:
    /// Lanes for `count` matrices on `device` (current): one (the caller's stream) for one matrix
    /// or when `spread` is false, else up to 1 + side_stream_count, forked from `stream`.
    Lanes(int device, core::StreamRef stream, std::int64_t count, bool spread);
    /// Joins the side streams back to the caller's stream if `join` was not reached (an error).
    ~Lanes();
    Lanes(const Lanes&) = delete;
    Lanes& operator=(const Lanes&) = delete;
    Lanes(Lanes&&) = delete;
    Lanes& operator=(Lanes&&) = delete;

    /// How many lanes there are.
    [[nodiscard]] int size() const noexcept { return 1 + sides_; }
    /// The lane of matrix `b`.
    [[nodiscard]] int lane_of(std::int64_t b) const noexcept { return int(b % size()); }
    /// The stream of `lane`.
    [[nodiscard]] cudaStream_t stream(int lane) const noexcept;
    /// The cuSOLVER handle of `lane`, set to its stream.
    [[nodiscard]] const SolverHandle& handle(int lane) const noexcept { return *handles_[std::size_t(lane)]; }
    /// Makes the caller's stream wait for every lane's work.
    void join();

    /// Most lanes a batch runs on.
    static constexpr int max_lanes = 1 + side_stream_count;

private:
    core::StreamRef stream_;
    int sides_ = 0;
    bool joined_ = false;
    std::optional<SideStreamLease> lease_;
    std::array<std::optional<SolverHandle>, max_lanes> handles_;
};

}  // namespace gpumath::detail
