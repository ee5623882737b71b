// SPDX-License-Identifier: Apache-2.0
// Private: releases a native resource when a scope ends, whichever way it ends.
#pragma once

#include <type_traits>
#include <utility>

namespace gpumath::detail {

/// Calls `f()` when it goes out of scope. Neither copyable nor movable, so `f` runs exactly once;
/// `f` must not throw.
template <class F>
class ScopeExit {
public:
    explicit ScopeExit(F f) noexcept(std::is_nothrow_move_constructible_v<F>) : f_(std::move(f)) {}
    ~ScopeExit() { f_(); }
    ScopeExit(const ScopeExit&) = delete;
    ScopeExit& operator=(const ScopeExit&) = delete;
    ScopeExit(ScopeExit&&) = delete;
    ScopeExit& operator=(ScopeExit&&) = delete;

private:
    F f_;
};

}  // namespace gpumath::detail
