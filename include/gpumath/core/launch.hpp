// SPDX-License-Identifier: Apache-2.0
/// @file
/// Kernel launches: Dim3, LaunchConfig and launch(stream, config, kernel, args...).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>

#include <gpumath/core/kernel_argument.hpp>
#include <gpumath/core/module.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/detail/jit_type_name.hpp>

namespace gpumath::core {

/// Grid, block or cluster dimensions. Converts from one to three integers of any integral types:
/// `.grid = n`, `.block = {16, 16}`. Values are checked at launch (each 1 or more, within CUDA's
/// limits), so a negative count is reported, not wrapped.
struct Dim3 {
    /// Extent in x.
    std::int64_t x = 1;
    /// Extent in y.
    std::int64_t y = 1;
    /// Extent in z.
    std::int64_t z = 1;

    /// (1, 1, 1).
    constexpr Dim3() noexcept = default;
    /// (x, y, z) from integers of any integral types; y and z default to 1.
    template <std::integral X, std::integral Y = int, std::integral Z = int>
    constexpr Dim3(X x_, Y y_ = 1, Z z_ = 1) noexcept  // NOLINT: implicit by design
        : x(static_cast<std::int64_t>(x_)), y(static_cast<std::int64_t>(y_)), z(static_cast<std::int64_t>(z_)) {}

    /// x * y * z, saturating at INT64_MAX (and at INT64_MIN for a negative product) instead of
    /// overflowing.
    [[nodiscard]] constexpr std::int64_t volume() const noexcept {
        if (x == 0 || y == 0 || z == 0) return 0;
        std::int64_t xy = 0, xyz = 0;
        if (__builtin_mul_overflow(x, y, &xy) || __builtin_mul_overflow(xy, z, &xyz))
            return (int(x < 0) + int(y < 0) + int(z < 0)) % 2 == 1 ? INT64_MIN : INT64_MAX;
        return xyz;
    }
    /// Equal when x, y and z are.
    friend constexpr bool operator==(const Dim3&, const Dim3&) = default;
};

/// How to launch a kernel. Grid sizes count blocks (as `<<<grid, block>>>` does), also with
/// clusters, where each grid dimension must be a multiple of the cluster's.
struct LaunchConfig {
    /// Blocks in the grid.
    Dim3 grid{};
    /// Threads per block (at most 1024 in total, and at most the kernel's max_threads_per_block).
    Dim3 block{};
    /// Dynamic shared memory per block in bytes. Above 48 KiB call
    /// `Kernel::set_max_dynamic_shared_memory` first.
    std::size_t shared_memory = 0;
    /// Thread block cluster dimensions (compute capability 9.0 and newer); none when unset.
    std::optional<Dim3> cluster{};
    /// Cooperative launch: all blocks resident at once, so grid-wide synchronisation works. The grid
    /// must fit (checked against the kernel's occupancy).
    bool cooperative = false;
    /// Programmatic dependent launch (compute capability 9.0 and newer; ignored on older devices):
    /// the kernel may start before the work before it on the stream has finished, overlapping its
    /// launch with that work's tail. The kernel must execute `griddepcontrol.wait`
    /// (`cudaGridDependencySynchronize()`) before it reads anything that work writes.
    bool programmatic_dependency = false;
};

}  // namespace gpumath::core

namespace gpumath::detail {

/// Size and C++ spelling of one argument as passed.
struct ArgInfo {
    std::size_t size;
    std::string_view type_name;
};

template <class... Args>
inline constexpr ArgInfo arg_infos[sizeof...(Args) + 1] = {
    {sizeof(typename core::KernelArgument<Args>::type), type_name<Args>()}..., {0, {}}};

[[noreturn]] void throw_arg_count(const KernelState& k, std::size_t given, const ArgInfo* infos);
[[noreturn]] void throw_arg_size(const KernelState& k, std::size_t index, const ArgInfo& given);
[[noreturn]] void throw_null_args(const KernelState& k);
/// Full validation of `c` for `k`; throws InvalidArgument/NotSupported or returns when it is fine.
void check_config_slow(const KernelState& k, const core::LaunchConfig& c);
/// Launches with packed arguments; the caller has checked them.
void launch_kernel(core::StreamRef stream, const core::LaunchConfig& c, const core::Kernel& kernel, void** args);

/// Throws InvalidArgument unless `Args` match the kernel's parameters in count and sizes.
template <class... Args>
inline void check_args(const KernelState& k) {
    constexpr std::size_t n = sizeof...(Args);
    if (!k.params_known) return;
    if (k.params.size() != n) [[unlikely]]
        throw_arg_count(k, n, arg_infos<Args...>);
    for (std::size_t i = 0; i < n; ++i)
        if (k.params[i].size != arg_infos<Args...>[i].size) [[unlikely]]
            throw_arg_size(k, i, arg_infos<Args...>[i]);
}

/// Throws unless `c` is within CUDA's and the kernel's limits. The common case (no cluster, not
/// cooperative, everything in range) costs one predictable branch.
inline void check_config(const KernelState& k, const core::LaunchConfig& c) {
    const core::Dim3& b = c.block;
    const core::Dim3& g = c.grid;
    const bool plain = b.x >= 1 && b.y >= 1 && b.z >= 1 && b.x <= 1024 && b.y <= 1024 && b.z <= 64 &&
                       b.x * b.y * b.z <= k.max_threads_per_block && g.x >= 1 && g.y >= 1 && g.z >= 1 &&
                       g.x <= 0x7fffffff && g.y <= 65535 && g.z <= 65535 &&
                       c.shared_memory <= k.max_dynamic_shared.load(std::memory_order_relaxed) && !c.cluster &&
                       !c.cooperative;
    if (!plain) [[unlikely]]
        check_config_slow(k, c);
}

}  // namespace gpumath::detail

namespace gpumath::core {

/// Enqueues `kernel` on `stream` with `config` and `args`.
///
/// Before any GPU work it checks the argument count and each argument's size against the kernel's
/// parameters (InvalidArgument naming the parameter index, the expected size and the C++ type
/// given), and `config` against CUDA's and the kernel's limits (InvalidArgument: block over 1024
/// threads or over the kernel's maximum, zero or too large dimensions, dynamic shared memory over
/// the kernel's limit, a grid not divisible by the cluster, a cooperative grid that cannot be
/// resident; NotSupported: clusters before compute capability 9.0). Arguments are trivially
/// copyable values matching the kernel's parameter types; a Buffer, TensorView or Tensor is passed
/// as its device pointer, other types as their `KernelArgument` specialization says. Allocates
/// nothing; throws CudaError when the driver refuses the launch.
template <class... Args>
void launch(StreamRef stream, const LaunchConfig& config, const Kernel& kernel, const Args&... args) {
    const detail::KernelState& k = detail::KernelAccess::state(kernel);
    detail::check_args<Args...>(k);
    detail::check_config(k, config);
    if constexpr (sizeof...(Args) == 0) {
        detail::launch_kernel(stream, config, kernel, nullptr);
    } else {
        std::tuple<typename KernelArgument<Args>::type...> values{KernelArgument<Args>::get(args)...};
        std::apply(
            [&](auto&... v) {
                void* pointers[] = {const_cast<void*>(static_cast<const void*>(&v))...};
                detail::launch_kernel(stream, config, kernel, pointers);
            },
            values);
    }
}

/// Enqueues `kernel` with a caller-packed parameter array (one pointer per parameter, as for
/// cuLaunchKernel). Checks `config` like `launch`, but cannot check the arguments' sizes;
/// InvalidArgument when `args` is null for a kernel known to take parameters.
inline void launch_raw(StreamRef stream, const LaunchConfig& config, const Kernel& kernel, void** args) {
    const detail::KernelState& k = detail::KernelAccess::state(kernel);
    if (args == nullptr && k.params_known && !k.params.empty()) [[unlikely]]
        detail::throw_null_args(k);
    detail::check_config(k, config);
    detail::launch_kernel(stream, config, kernel, args);
}

}  // namespace gpumath::core
