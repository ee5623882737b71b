// SPDX-License-Identifier: Apache-2.0
// The lanes of a looped batch (linalg/lanes.hpp).
#include "linalg/lanes.hpp"

#include <algorithm>

namespace gpumath::detail {

Lanes::Lanes(int device, core::StreamRef stream, std::int64_t count, bool spread) : stream_(stream) {
    sides_ = spread ? int(std::min<std::int64_t>(side_stream_count, std::max<std::int64_t>(count - 1, 0))) : 0;
    if (sides_ > 0) {
        lease_.emplace(device, "a looped linalg batch");
        lease_->fork(stream, sides_);
    }
    for (int l = 0; l < size(); ++l) handles_[std::size_t(l)].emplace(device, this->stream(l));
}

Lanes::~Lanes() {
    if (!joined_ && sides_ > 0) lease_->join_noexcept(stream_, sides_);
}

cudaStream_t Lanes::stream(int lane) const noexcept {
    return lane == 0 ? stream_.handle() : (**lease_).streams[std::size_t(lane - 1)];
}

void Lanes::join() {
    if (sides_ > 0) lease_->join(stream_, sides_);
    joined_ = true;
}

}  // namespace gpumath::detail
