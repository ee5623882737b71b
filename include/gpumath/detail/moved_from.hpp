// SPDX-License-Identifier: Apache-2.0
// Private: a member that remembers that its owner was moved from. Not included by users directly.
#pragma once

#include <utility>

namespace gpumath::detail {

/// Lets a copyable owner keep the rule of zero and still tell a moved-from object from a live
/// one: copies copy the flag, a move sets it on the source. Checked by the owner's methods, which
/// throw InvalidArgument instead of working on moved-from members.
class MovedFrom {
public:
    MovedFrom() noexcept = default;
    MovedFrom(const MovedFrom&) noexcept = default;
    MovedFrom& operator=(const MovedFrom&) noexcept = default;
    MovedFrom(MovedFrom&& other) noexcept : moved_(std::exchange(other.moved_, true)) {}
    MovedFrom& operator=(MovedFrom&& other) noexcept {
        if (this != &other) moved_ = std::exchange(other.moved_, true);
        return *this;
    }
    ~MovedFrom() = default;

    /// True when the owner was moved from (and not assigned since).
    [[nodiscard]] explicit operator bool() const noexcept { return moved_; }

private:
    bool moved_ = false;
};

}  // namespace gpumath::detail
