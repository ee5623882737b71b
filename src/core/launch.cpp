// SPDX-License-Identifier: Apache-2.0
// Launch: argument and configuration errors (cold), and the driver call (hot).
#include <gpumath/core/launch.hpp>

#include <fmt/format.h>

#include "core/jit.hpp"
#include "core/driver_api.hpp"
#include "core/graph_holds.hpp"
#include "detail/status.hpp"

namespace gpumath::detail {

namespace {

constexpr const char* k_api = "launch";

std::string dims(const core::Dim3& d) { return fmt::format("({}, {}, {})", d.x, d.y, d.z); }

std::string kernel_label(const KernelState& k) {
    if (k.display_name.empty() || k.display_name == k.name) return fmt::format("'{}'", k.name);
    return fmt::format("'{}' ('{}')", k.display_name, k.name);
}

std::string param_sizes(const KernelState& k) {
    std::string s;
    for (std::size_t i = 0; i < k.params.size(); ++i) s += fmt::format("{}{}", i == 0 ? "" : ", ", k.params[i].size);
    return s;
}

}  // namespace

void throw_arg_count(const KernelState& k, std::size_t given, const ArgInfo* infos) {
    std::string types;
    for (std::size_t i = 0; i < given; ++i)
        types += fmt::format("{}{} ({} bytes)", i == 0 ? "" : ", ", infos[i].type_name, infos[i].size);
    throw_invalid(fmt::format("args: kernel {} takes {} parameter{} (sizes in bytes: {}), but {} argument{} given{}{}",
                              kernel_label(k), k.params.size(), k.params.size() == 1 ? "" : "s",
                              k.params.empty() ? std::string("none") : param_sizes(k), given,
                              given == 1 ? " was" : "s were", given > 0 ? ": " : "", types),
                  k_api);
}

void throw_arg_size(const KernelState& k, std::size_t index, const ArgInfo& given) {
    throw_invalid(fmt::format("argument {}: kernel {} expects parameter {} to be {} bytes, but the argument given is a "
                              "{} ({} bytes); pass a value of the parameter's exact type (e.g. std::int64_t for a "
                              "long long parameter, float for float)",
                              index, kernel_label(k), index, k.params[index].size, given.type_name, given.size),
                  k_api);
}

void throw_null_args(const KernelState& k) {
    throw_invalid(
        fmt::format("args: null, but kernel {} takes {} parameter{} (sizes in bytes: {}); pass an array of "
                    "{} pointers, one to each argument's value",
                    kernel_label(k), k.params.size(), k.params.size() == 1 ? "" : "s", param_sizes(k), k.params.size()),
        k_api);
}

void check_config_slow(const KernelState& k, const core::LaunchConfig& c) {
    const core::Dim3& b = c.block;
    const core::Dim3& g = c.grid;
    if (b.x < 1 || b.y < 1 || b.z < 1)
        throw_invalid(fmt::format("LaunchConfig::block: {} has a dimension below 1", dims(b)), k_api);
    if (b.x > 1024 || b.y > 1024 || b.z > 64)
        throw_invalid(
            fmt::format("LaunchConfig::block: {} exceeds CUDA's per-dimension limits (1024, 1024, 64)", dims(b)),
            k_api);
    if (b.volume() > 1024)
        throw_invalid(fmt::format("LaunchConfig::block: {} is {} threads per block; CUDA allows at most 1024", dims(b),
                                  b.volume()),
                      k_api);
    if (b.volume() > k.max_threads_per_block)
        throw_invalid(fmt::format("LaunchConfig::block: {} is {} threads per block; kernel {} allows at most {} (its "
                                  "register use or launch bounds)",
                                  dims(b), b.volume(), kernel_label(k), k.max_threads_per_block),
                      k_api);
    if (g.x < 1 || g.y < 1 || g.z < 1)
        throw_invalid(fmt::format("LaunchConfig::grid: {} has a dimension below 1", dims(g)), k_api);
    if (g.x > 0x7fffffff || g.y > 65535 || g.z > 65535)
        throw_invalid(fmt::format("LaunchConfig::grid: {} exceeds CUDA's limits (2147483647, 65535, 65535)", dims(g)),
                      k_api);
    if (c.shared_memory > k.max_dynamic_shared.load(std::memory_order_relaxed)) {
        // The limit may have been raised outside gpumath: ask the driver before refusing.
        const DriverApi* d = driver_if_available();
        int limit = 0;
        CUdevice dev = 0;
        if (d != nullptr && d->cuDeviceGet != nullptr && k.kernel != nullptr &&
            d->cuDeviceGet(&dev, k.device) == CUDA_SUCCESS &&
            d->cuKernelGetAttribute(&limit, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, k.kernel, dev) ==
                CUDA_SUCCESS)
            const_cast<KernelState&>(k).max_dynamic_shared.store(std::size_t(limit));
        const std::size_t max = k.max_dynamic_shared.load();
        if (c.shared_memory > max) {
            const std::string hint =
                c.shared_memory > k.shared_memory_optin && k.shared_memory_optin > 0
                    ? fmt::format(
                          "device {} allows at most {} bytes per block (static shared memory included), so "
                          "this cannot fit",
                          k.device, k.shared_memory_optin)
                    : fmt::format(
                          "call Kernel::set_max_dynamic_shared_memory({}) first (device {} allows up to {} "
                          "bytes per block, static shared memory included)",
                          c.shared_memory, k.device, k.shared_memory_optin);
            throw_invalid(
                fmt::format("LaunchConfig::shared_memory: {} bytes of dynamic shared memory exceed kernel {}'s "
                            "current limit of {} bytes; {}",
                            c.shared_memory, kernel_label(k), max, hint),
                k_api);
        }
    }
    if (c.cluster) {
        const core::Dim3& cl = *c.cluster;
        if (k.cc_major < 9)
            throw_not_supported(fmt::format("LaunchConfig::cluster: thread block clusters need compute capability 9.0 "
                                            "or newer; device {} is {}.x",
                                            k.device, k.cc_major),
                                k_api);
        if (cl.x < 1 || cl.y < 1 || cl.z < 1)
            throw_invalid(fmt::format("LaunchConfig::cluster: {} has a dimension below 1", dims(cl)), k_api);
        // Hopper runs clusters of at most 16 blocks (8 without the non-portable size attribute).
        if (cl.volume() > 16)  // volume() saturates: no overflow for huge dimensions
            throw_invalid(fmt::format("LaunchConfig::cluster: {} makes over 16 blocks per cluster ({}); a cluster "
                                      "holds at most 16 (8 portably)",
                                      dims(cl), cl.volume()),
                          k_api);
        if (g.x % cl.x != 0 || g.y % cl.y != 0 || g.z % cl.z != 0)
            throw_invalid(fmt::format("LaunchConfig::cluster: grid {} is not a multiple of cluster {} in every "
                                      "dimension (the grid counts blocks)",
                                      dims(g), dims(cl)),
                          k_api);
    }
    if (c.cooperative) {
        const int per_sm = max_active_blocks(k, int(b.volume()), c.shared_memory);
        const std::int64_t resident = std::int64_t(per_sm) * k.multiprocessor_count;
        if (g.volume() > resident)
            throw_invalid(
                fmt::format("LaunchConfig::cooperative: a grid of {} blocks cannot be resident at once; kernel "
                            "{} fits {} blocks of {} threads ({} bytes dynamic shared memory) per "
                            "multiprocessor x {} multiprocessors = {}",
                            g.volume(), kernel_label(k), per_sm, b.volume(), c.shared_memory, k.multiprocessor_count,
                            resident),
                k_api);
    }
}

void launch_kernel(core::StreamRef stream, const core::LaunchConfig& c, const core::Kernel& kernel, void** args) {
    const KernelState& k = KernelAccess::state(kernel);
    ensure_context();
    static const DriverApi& d = driver();  // a Kernel exists, so the driver does
    const auto f = reinterpret_cast<CUfunction>(k.kernel);
    const auto s = reinterpret_cast<CUstream>(stream.handle());
    // A captured launch keeps the kernel's module loaded for as long as the graph exists.
    if (const CaptureTarget t = capture_target(stream); t.graph != nullptr) [[unlikely]]
        hold_for_graph(t.graph, t.capture, KernelAccess::owner(kernel));
    CUresult r;
    const char* api = "cuLaunchKernel";
    const bool dependent = c.programmatic_dependency && k.cc_major >= 9;
    if (!c.cluster && !c.cooperative && !dependent) [[likely]] {
        r = d.cuLaunchKernel(f, unsigned(c.grid.x), unsigned(c.grid.y), unsigned(c.grid.z), unsigned(c.block.x),
                             unsigned(c.block.y), unsigned(c.block.z), unsigned(c.shared_memory), s, args, nullptr);
    } else {
        api = "cuLaunchKernelEx";
        require_driver_function(reinterpret_cast<const void*>(d.cuLaunchKernelEx), "cuLaunchKernelEx");
        std::array<CUlaunchAttribute, 3> attrs{};
        core::LaunchConfig with = c;
        with.programmatic_dependency = dependent;
        const CUlaunchConfig cfg = to_cu_launch_config(with, s, attrs);
        r = d.cuLaunchKernelEx(&cfg, f, args, nullptr);
    }
    if (r != CUDA_SUCCESS) [[unlikely]]
        throw_cu(r, api,
                 fmt::format("launching kernel {} with grid {}, block {}, {} bytes dynamic shared memory{}{}",
                             kernel_label(k), dims(c.grid), dims(c.block), c.shared_memory,
                             c.cluster ? ", cluster " + dims(*c.cluster) : std::string(),
                             c.cooperative ? ", cooperative" : ""));
}

}  // namespace gpumath::detail
