// SPDX-License-Identifier: Apache-2.0
/// @file
/// Loaded device code (Module, a CUlibrary) and its kernels (Kernel, a CUkernel): attributes,
/// occupancy and parameter information.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <cuda.h>

namespace gpumath::core {

class ObjectCode;
struct LaunchConfig;

/// Whether an adopted handle passes to gpumath (`Module::adopt`).
enum class Ownership {
    borrowed,  ///< the caller keeps the handle and unloads it after every gpumath object using it is gone
    owned      ///< gpumath unloads it when the last Module or Kernel using it is destroyed
};

/// "borrowed" or "owned".
[[nodiscard]] std::string_view to_string(Ownership ownership) noexcept;

/// One kernel parameter as the driver describes it.
struct ParamInfo {
    std::size_t offset = 0;  ///< byte offset in the parameter buffer
    std::size_t size = 0;    ///< size in bytes
};

/// A kernel's attributes on one device (cuKernelGetAttribute).
struct KernelAttributes {
    int num_registers = 0;                      ///< registers per thread
    int max_threads_per_block = 0;              ///< the most threads a block of this kernel may have
    std::size_t static_shared_memory = 0;       ///< statically allocated shared memory per block, bytes
    std::size_t max_dynamic_shared_memory = 0;  ///< current limit on dynamic shared memory per block, bytes
    std::size_t local_memory = 0;               ///< local memory per thread, bytes
    std::size_t const_memory = 0;               ///< user constant memory, bytes
    int ptx_version = 0;                        ///< PTX virtual architecture, e.g. 90
    int binary_version = 0;                     ///< binary architecture, e.g. 90
    int preferred_shared_memory_carveout = -1;  ///< percent of L1 preferred as shared memory, -1 = default
    int required_cluster_width = 0;             ///< from `__cluster_dims__`, 0 = none
    int required_cluster_height = 0;            ///< from `__cluster_dims__`, 0 = none
    int required_cluster_depth = 0;             ///< from `__cluster_dims__`, 0 = none
    /// Whether clusters may exceed the portable 8 blocks.
    bool non_portable_cluster_size_allowed = false;
};

}  // namespace gpumath::core

namespace gpumath::detail {

struct LibraryState;
struct KernelAccess;

/// What a Kernel caches at creation so that launches check arguments and limits without driver
/// calls. Owned by its library, which Kernel handles keep alive (an adopted Kernel's state is owned
/// by its handles alone).
struct KernelState {
    CUkernel kernel = nullptr;
    std::string name;          // as the driver knows it (mangled for C++ kernels)
    std::string display_name;  // as the caller asked for it (e.g. "scale<float>")
    int device = 0;            // runtime ordinal the limits below are for
    int cc_major = 0;
    int multiprocessor_count = 0;
    std::size_t shared_memory_optin = 0;  // the device's per-block limit with opt-in, bytes
    bool params_known = false;            // false when the driver cannot describe parameters
    std::vector<core::ParamInfo> params;
    int max_threads_per_block = 1024;
    std::atomic<std::size_t> max_dynamic_shared{0};
};

}  // namespace gpumath::detail

namespace gpumath::core {

/// A kernel of a loaded Module (a context-independent CUkernel), or a CUkernel from elsewhere
/// (`adopt`), bound to a device for its attributes and launch limits (by default the device current
/// when it was obtained). Cheap to copy; copies share the cached information and keep the module's
/// code loaded.
class Kernel {
public:
    /// An empty handle; launching it throws InvalidArgument.
    Kernel() = default;

    /// Wraps a CUkernel obtained outside gpumath (cuLibraryGetKernel on a library loaded by another
    /// library or by the caller), so that `launch` checks arguments and limits for it as for a
    /// kernel of a Module. Does not own it: the library it belongs to must stay loaded while this
    /// Kernel or a copy is used. Limits are read for `device` (-1: the current device); the name
    /// comes from cuKernelGetName (a placeholder on drivers before CUDA 12.3), the parameters from
    /// cuKernelGetParamInfo, as for `Module::kernel`. InvalidArgument for a null `kernel` (before
    /// any CUDA call); CudaError when the driver rejects the handle or there is no driver/device.
    [[nodiscard]] static Kernel adopt(CUkernel kernel, int device = -1);

    /// The native handle (may be cast to CUfunction for cuLaunchKernel).
    [[nodiscard]] CUkernel handle() const { return state().kernel; }
    /// The driver's name of the kernel (mangled for kernels without extern "C").
    [[nodiscard]] const std::string& name() const { return state().name; }
    /// The device (runtime ordinal) attributes and limits refer to.
    [[nodiscard]] int device() const { return state().device; }
    /// True unless empty.
    [[nodiscard]] explicit operator bool() const noexcept { return static_cast<bool>(state_); }

    /// Parameters (offset and size of each) as the driver reports them; empty for a kernel
    /// without parameters, and when `has_param_info()` is false.
    [[nodiscard]] std::span<const ParamInfo> params() const { return state().params; }
    /// False on drivers too old to report parameters (before CUDA 12.4); launches then skip the
    /// argument count and size checks.
    [[nodiscard]] bool has_param_info() const { return state().params_known; }

    /// Reads the kernel's attributes on its device. Throws CudaError.
    [[nodiscard]] KernelAttributes attributes() const;
    /// How many blocks of `block_size` threads using `dynamic_shared_memory` bytes can be resident
    /// on one multiprocessor (cuOccupancyMaxActiveBlocksPerMultiprocessor). InvalidArgument for a
    /// block size outside 1..max_threads_per_block.
    [[nodiscard]] int max_active_blocks_per_multiprocessor(int block_size, std::size_t dynamic_shared_memory = 0) const;
    /// How many clusters of `config.cluster` can be co-resident (cuOccupancyMaxActiveClusters).
    [[nodiscard]] int max_active_clusters(const LaunchConfig& config) const;
    /// Allows launches with up to `bytes` of dynamic shared memory per block (needed above 48 KiB).
    /// InvalidArgument when `bytes` plus the static shared memory exceeds the device's opt-in
    /// limit (the message gives both).
    void set_max_dynamic_shared_memory(std::size_t bytes) const;

private:
    friend struct detail::KernelAccess;
    explicit Kernel(std::shared_ptr<detail::KernelState> state) noexcept : state_(std::move(state)) {}
    [[nodiscard]] const detail::KernelState& state() const {
        if (!state_) throw_empty();
        return *state_;
    }
    [[noreturn]] static void throw_empty();
    std::shared_ptr<detail::KernelState> state_;
};

/// Loaded device code: a CUlibrary loaded with cuLibraryLoadData, valid on every device
/// (context-independent loading), or one loaded elsewhere and adopted. Move-only; the code stays
/// loaded while the Module or any Kernel obtained from it lives.
class Module {
public:
    /// An empty module.
    Module() = default;
    /// Loads PTX, a cubin or a fatbin (copied by the driver). InvalidArgument for LTO-IR (link it
    /// first) or an empty ObjectCode; CudaError "no CUDA driver/device" without a GPU, or when the
    /// driver rejects the image (e.g. a cubin for another architecture).
    explicit Module(const ObjectCode& code);
    /// Wraps a CUlibrary loaded outside gpumath (cuLibraryLoadData or cuLibraryLoadFromFile by the
    /// caller or another library), so that its kernels can be looked up by name and launched with
    /// `launch`'s checks. `Ownership::borrowed` (the default) leaves the library loaded when the
    /// Module and its Kernels are gone; the caller unloads it after that. `Ownership::owned` hands
    /// it over: cuLibraryUnload runs when the last Module or Kernel using it is destroyed. Kernels
    /// are found by their driver names (extern "C" or mangled names; there are no name expressions).
    /// InvalidArgument for a null `library` or an `ownership` outside the enum, before any CUDA call.
    [[nodiscard]] static Module adopt(CUlibrary library, Ownership ownership = Ownership::borrowed);

    /// Moves the loaded image; the source becomes empty.
    Module(Module&&) noexcept = default;
    /// Releases this module's image (unloaded, unless borrowed, once no Kernel uses it) and takes
    /// the other's; the source becomes empty.
    Module& operator=(Module&&) noexcept = default;
    Module(const Module&) = delete;
    Module& operator=(const Module&) = delete;
    ~Module() = default;

    /// The kernel `name`: a registered name expression ("scale<float>") or the driver's name
    /// (extern "C" name or mangled name). Limits are read for `device` (-1: the current device).
    /// InvalidArgument listing the module's kernels when there is no such kernel.
    [[nodiscard]] Kernel kernel(std::string_view name, int device = -1) const;
    /// Names of all kernels in the module (as the driver knows them).
    [[nodiscard]] std::vector<std::string> kernel_names() const;
    /// The native handle.
    [[nodiscard]] CUlibrary handle() const noexcept;
    /// True unless empty.
    [[nodiscard]] explicit operator bool() const noexcept { return static_cast<bool>(library_); }

private:
    std::shared_ptr<detail::LibraryState> library_;
};

}  // namespace gpumath::core

namespace gpumath::detail {

/// Reaches a Kernel's cached launch information and builds Kernels around a KernelState; for
/// `launch`, Module and the math modules (and tests that forge kernels), not for users.
struct KernelAccess {
    /// The cached launch information of `kernel`. InvalidArgument on an empty Kernel.
    [[nodiscard]] static const KernelState& state(const core::Kernel& kernel) { return kernel.state(); }
    /// What keeps the kernel loaded: its module's library (or, for an adopted kernel, its state).
    [[nodiscard]] static const std::shared_ptr<KernelState>& owner(const core::Kernel& kernel) noexcept {
        return kernel.state_;
    }
    /// A Kernel sharing `state`; whatever owns the state (a library) must be kept alive by it.
    [[nodiscard]] static core::Kernel make(std::shared_ptr<KernelState> state) noexcept {
        return core::Kernel(std::move(state));
    }
};

}  // namespace gpumath::detail
