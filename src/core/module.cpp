// SPDX-License-Identifier: Apache-2.0
// Module (cuLibrary) and Kernel (cuKernel): loading, lookup, attributes, occupancy.
#include <gpumath/core/module.hpp>

#include <map>
#include <mutex>

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/jit.hpp"
#include <gpumath/core/device.hpp>
#include <gpumath/core/launch.hpp>
#include <gpumath/core/program.hpp>
#include "core/driver_api.hpp"
#include "detail/device_registry.hpp"
#include "detail/enum_check.hpp"
#include "detail/identifier.hpp"
#include "detail/status.hpp"

namespace gpumath::detail {

void ensure_context() {
    // The runtime makes its primary context current on a thread lazily; driver calls that use the
    // current context (launches on the NULL stream, occupancy queries) need it to be there.
    thread_local bool ready = false;
    if (ready) [[likely]]
        return;
    CUcontext ctx = nullptr;
    const DriverApi& d = driver();
    if (d.cuCtxGetCurrent == nullptr || d.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || ctx == nullptr)
        check(cudaFree(nullptr), "cudaFree", "initialising the CUDA runtime's primary context on this thread");
    ready = true;
}

struct LibraryState {
    CUlibrary library = nullptr;
    bool owned = true;     // unloaded with the state; false for a library adopted as borrowed
    bool adopted = false;  // loaded outside gpumath (no ObjectCode to list its kernels from)
    std::vector<std::pair<std::string, std::string>> lowered_names;
    std::vector<std::string> code_kernel_names;  // from the ObjectCode, for drivers that cannot enumerate
    std::mutex mutex;
    std::map<std::pair<std::string, int>, std::unique_ptr<KernelState>> kernels;

    LibraryState() = default;
    LibraryState(const LibraryState&) = delete;
    LibraryState& operator=(const LibraryState&) = delete;
    LibraryState(LibraryState&&) = delete;
    LibraryState& operator=(LibraryState&&) = delete;
    ~LibraryState() {
        if (library == nullptr || !owned) return;
        if (const DriverApi* d = driver_if_available(); d != nullptr && d->cuLibraryUnload != nullptr)
            (void)d->cuLibraryUnload(library);
    }
};

namespace {

// Drivers before CUDA 12.4 cannot list a library's kernels.
bool can_enumerate_kernels(const DriverApi& d) {
    return d.cuLibraryGetKernelCount != nullptr && d.cuLibraryEnumerateKernels != nullptr &&
           d.cuKernelGetName != nullptr;
}

CUdevice cu_device(int ordinal) {
    const DriverApi& d = driver();
    require_driver_function(reinterpret_cast<const void*>(d.cuDeviceGet), "cuDeviceGet");
    CUdevice dev = 0;
    check(d.cuDeviceGet(&dev, ordinal), "cuDeviceGet", [&] { return fmt::format("device {}", ordinal); });
    return dev;
}

int kernel_attribute(const KernelState& k, CUfunction_attribute attr, const char* what) {
    const DriverApi& d = driver();
    int v = 0;
    check(d.cuKernelGetAttribute(&v, attr, k.kernel, cu_device(k.device)), "cuKernelGetAttribute",
          [&] { return fmt::format("reading {} of kernel '{}' on device {}", what, k.name, k.device); });
    return v;
}

std::vector<std::string> enumerate_kernels(const LibraryState& lib) {
    const DriverApi& d = driver();
    if (!can_enumerate_kernels(d)) return lib.code_kernel_names;
    unsigned count = 0;
    check(d.cuLibraryGetKernelCount(&count, lib.library), "cuLibraryGetKernelCount");
    std::vector<CUkernel> kernels(count);
    if (count > 0) check(d.cuLibraryEnumerateKernels(kernels.data(), count, lib.library), "cuLibraryEnumerateKernels");
    std::vector<std::string> names;
    for (CUkernel k : kernels) {
        const char* n = nullptr;
        if (d.cuKernelGetName(&n, k) == CUDA_SUCCESS && n != nullptr) names.emplace_back(n);
    }
    return names;
}

// The driver's name of `kernel`, or a placeholder where the driver cannot say (before CUDA 12.3).
std::string kernel_name(const DriverApi& d, CUkernel kernel) {
    const char* n = nullptr;
    if (d.cuKernelGetName != nullptr && d.cuKernelGetName(&n, kernel) == CUDA_SUCCESS && n != nullptr) return n;
    return fmt::format("CUkernel {}", fmt::ptr(kernel));
}

// The parameter layout from cuKernelGetParamInfo; `params_known` stays false on drivers that cannot
// describe parameters (before CUDA 12.4).
void read_params(KernelState& s) {
    const DriverApi& d = driver();
    if (d.cuKernelGetParamInfo == nullptr) return;
    s.params_known = true;
    for (std::size_t i = 0;; ++i) {
        std::size_t offset = 0, size = 0;
        const CUresult r = d.cuKernelGetParamInfo(s.kernel, i, &offset, &size);
        if (r == CUDA_ERROR_INVALID_VALUE) break;  // past the last parameter
        if (r != CUDA_SUCCESS) {
            s.params_known = false;
            s.params.clear();
            break;
        }
        s.params.push_back({offset, size});
    }
}

// Fills in what launches check for `s.kernel` on `dev` (`s.kernel`, `s.device` and the names are
// set; the device and a context are current): the device's limits, the parameter layout and the
// kernel's own limits.
void read_launch_info(KernelState& s, const core::Device& dev) {
    const cudaDeviceProp& props = dev.properties();
    s.cc_major = props.major;
    s.multiprocessor_count = props.multiProcessorCount;
    s.shared_memory_optin = props.sharedMemPerBlockOptin;
    read_params(s);
    s.max_threads_per_block = kernel_attribute(s, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads per block");
    s.max_dynamic_shared.store(
        std::size_t(kernel_attribute(s, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, "max dynamic shared memory")));
}

}  // namespace

int max_active_blocks(const KernelState& k, int block_size, std::size_t dynamic_shared_memory) {
    constexpr const char* api = "Kernel::max_active_blocks_per_multiprocessor";
    if (block_size < 1 || block_size > k.max_threads_per_block)
        throw_invalid(fmt::format("block_size: {} threads; kernel '{}' allows 1..{}", block_size, k.name,
                                  k.max_threads_per_block),
                      api);
    const DriverApi& d = driver();
    DeviceGuard guard(k.device);
    ensure_context();
    int blocks = 0;
    check(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, reinterpret_cast<CUfunction>(k.kernel), block_size,
                                                        dynamic_shared_memory),
          "cuOccupancyMaxActiveBlocksPerMultiprocessor", [&] {
              return fmt::format("kernel '{}', {} threads, {} bytes dynamic shared memory", k.name, block_size,
                                 dynamic_shared_memory);
          });
    return blocks;
}

}  // namespace gpumath::detail

namespace gpumath::core {

std::string_view to_string(Ownership ownership) noexcept {
    switch (ownership) {
        case Ownership::borrowed:
            return "borrowed";
        case Ownership::owned:
            return "owned";
    }
    return "unknown";
}

Module::Module(const ObjectCode& code) {
    constexpr const char* api = "Module";
    if (code.empty()) detail::throw_invalid("code: empty ObjectCode", api);
    detail::check_code_type(code.type(), "code.type()", api);
    if (code.type() == CodeType::ltoir)
        detail::throw_invalid(fmt::format("code: '{}' is LTO-IR, which cannot be loaded; link it first: "
                                          "Linker().add(code).link() gives a cubin",
                                          code.name()),
                              api);
    const detail::DriverApi& d = detail::driver();
    detail::require_driver_function(reinterpret_cast<const void*>(d.cuLibraryLoadData), "cuLibraryLoadData");
    detail::ensure_context();
    auto lib = std::make_shared<detail::LibraryState>();
    lib->lowered_names = code.lowered_names();
    if (!detail::can_enumerate_kernels(d)) lib->code_kernel_names = code.kernel_names();
    std::string image;  // PTX must be NUL-terminated for the driver
    const void* data = code.bytes().data();
    if (code.type() == CodeType::ptx && (code.bytes().empty() || code.text().back() != '\0')) {
        image.assign(code.text());
        image.push_back('\0');
        data = image.data();
    }
    const CUresult r = d.cuLibraryLoadData(&lib->library, data, nullptr, nullptr, 0, nullptr, nullptr, 0);
    if (r != CUDA_SUCCESS) {
        detail::check(r, "cuLibraryLoadData", [&] {
            std::string dev;
            try {
                dev = fmt::format(" on a {} device", Device::current().arch());
            } catch (...) {  // NOLINT(bugprone-empty-catch): only decorates the message
            }
            return fmt::format("loading {} '{}' built for {}{}", to_string(code.type()), code.name(),
                               code.arch().empty() ? std::string("an unstated architecture") : code.arch(), dev);
        });
    }
    library_ = std::move(lib);
}

Module Module::adopt(CUlibrary library, Ownership ownership) {
    constexpr const char* api = "Module::adopt";
    if (library == nullptr)
        detail::throw_invalid(
            "library: a null CUlibrary; pass a library loaded with cuLibraryLoadData or "
            "cuLibraryLoadFromFile (gpumath's own code loads with Module(code) or ObjectCode::load)",
            api);
    detail::check_enum(ownership, int(Ownership::owned) + 1, "an Ownership", "ownership", api);
    auto lib = std::make_shared<detail::LibraryState>();
    lib->library = library;
    lib->owned = ownership == Ownership::owned;
    lib->adopted = true;
    Module m;
    m.library_ = std::move(lib);
    return m;
}

namespace {
constexpr const char* k_empty_module =
    "this Module is empty (default-constructed or moved from); load code with "
    "Module(code) or ObjectCode::load";
}  // namespace

CUlibrary Module::handle() const noexcept { return library_ ? library_->library : nullptr; }

std::vector<std::string> Module::kernel_names() const {
    if (!library_) detail::throw_invalid(k_empty_module, "Module::kernel_names");
    return detail::enumerate_kernels(*library_);
}

Kernel Module::kernel(std::string_view name, int device) const {
    constexpr const char* api = "Module::kernel";
    if (!library_) detail::throw_invalid(k_empty_module, api);
    detail::check_no_nul(name, "name", api);
    std::string symbol(name);
    for (const auto& [expr, lowered] : library_->lowered_names)
        if (expr == name) {
            symbol = lowered;
            break;
        }
    const Device dev = detail::resolve_device(device, api);
    device = dev.ordinal();

    std::lock_guard lock(library_->mutex);
    auto& slot = library_->kernels[{symbol, device}];
    if (!slot) {
        const detail::DriverApi& d = detail::driver();
        detail::DeviceGuard guard(device);
        detail::ensure_context();
        CUkernel k = nullptr;
        const CUresult r = d.cuLibraryGetKernel(&k, library_->library, symbol.c_str());
        if (r == CUDA_ERROR_NOT_FOUND || r == CUDA_ERROR_INVALID_VALUE) {
            library_->kernels.erase({symbol, device});
            std::vector<std::string> names = detail::enumerate_kernels(*library_);
            std::string known;
            for (const std::string& n : names) {
                std::string shown = fmt::format("\"{}\"", n);
                for (const auto& [expr, lowered] : library_->lowered_names)
                    if (lowered == n) shown += fmt::format(" (\"{}\")", expr);
                known += (known.empty() ? "" : ", ") + shown;
            }
            if (known.empty())
                known = library_->adopted && !detail::can_enumerate_kernels(d)
                            ? "unknown (this driver cannot list a library's kernels)"
                            : "none";
            detail::throw_invalid(
                fmt::format("name: the module has no kernel \"{}\"{}; its kernels are: {}{}", name,
                            symbol != name ? fmt::format(" (mangled \"{}\")", symbol) : "", known,
                            library_->adopted ? "; an adopted library's templated kernels are found by their "
                                                "mangled names"
                                              : "; templated kernels are found by the name expressions "
                                                "registered with Program::add_name_expression"),
                api);
        }
        detail::check(r, "cuLibraryGetKernel", [&] { return fmt::format("looking up kernel \"{}\"", symbol); });

        auto state = std::make_unique<detail::KernelState>();
        state->kernel = k;
        state->name = symbol;
        state->display_name = std::string(name);
        state->device = device;
        detail::read_launch_info(*state, dev);
        slot = std::move(state);
    }
    // Aliasing: the Kernel points at its state and shares ownership of the whole library.
    return detail::KernelAccess::make(std::shared_ptr<detail::KernelState>(library_, slot.get()));
}

Kernel Kernel::adopt(CUkernel kernel, int device) {
    constexpr const char* api = "Kernel::adopt";
    if (kernel == nullptr)
        detail::throw_invalid(
            "kernel: a null CUkernel; pass a kernel from cuLibraryGetKernel (kernels of a gpumath "
            "Module come from Module::kernel)",
            api);
    const Device dev = detail::resolve_device(device, api);
    device = dev.ordinal();
    const detail::DriverApi& d = detail::driver();
    detail::require_driver_function(reinterpret_cast<const void*>(d.cuKernelGetAttribute), "cuKernelGetAttribute");
    detail::DeviceGuard guard(device);
    detail::ensure_context();
    // Not owned by a library gpumath knows of: the caller keeps the kernel's library loaded.
    auto state = std::make_shared<detail::KernelState>();
    state->kernel = kernel;
    state->name = detail::kernel_name(d, kernel);
    state->device = device;
    detail::read_launch_info(*state, dev);
    return Kernel(std::move(state));
}

void Kernel::throw_empty() {
    detail::throw_invalid(
        "this Kernel is empty (default-constructed or moved from); get one from Module::kernel or Kernel::adopt",
        "Kernel");
}

KernelAttributes Kernel::attributes() const {
    const detail::KernelState& k = state();
    const auto get = [&](CUfunction_attribute a, const char* what) { return detail::kernel_attribute(k, a, what); };
    KernelAttributes a;
    a.num_registers = get(CU_FUNC_ATTRIBUTE_NUM_REGS, "registers");
    a.max_threads_per_block = get(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads per block");
    a.static_shared_memory = std::size_t(get(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "static shared memory"));
    a.max_dynamic_shared_memory =
        std::size_t(get(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, "max dynamic shared memory"));
    a.local_memory = std::size_t(get(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "local memory"));
    a.const_memory = std::size_t(get(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, "constant memory"));
    a.ptx_version = get(CU_FUNC_ATTRIBUTE_PTX_VERSION, "PTX version");
    a.binary_version = get(CU_FUNC_ATTRIBUTE_BINARY_VERSION, "binary version");
    a.preferred_shared_memory_carveout =
        get(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, "preferred shared memory carveout");
    if (k.cc_major >= 9) {
        a.required_cluster_width = get(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, "required cluster width");
        a.required_cluster_height = get(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, "required cluster height");
        a.required_cluster_depth = get(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, "required cluster depth");
        a.non_portable_cluster_size_allowed =
            get(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, "non-portable cluster size") != 0;
    }
    state_->max_dynamic_shared.store(a.max_dynamic_shared_memory);
    return a;
}

int Kernel::max_active_blocks_per_multiprocessor(int block_size, std::size_t dynamic_shared_memory) const {
    return detail::max_active_blocks(state(), block_size, dynamic_shared_memory);
}

int Kernel::max_active_clusters(const LaunchConfig& config) const {
    const detail::KernelState& k = state();
    constexpr const char* api = "Kernel::max_active_clusters";
    if (!config.cluster) detail::throw_invalid("config.cluster: not set; give the cluster dimensions", api);
    detail::check_config(k, config);
    const detail::DriverApi& d = detail::driver();
    detail::require_driver_function(reinterpret_cast<const void*>(d.cuOccupancyMaxActiveClusters),
                                    "cuOccupancyMaxActiveClusters");
    detail::DeviceGuard guard(k.device);
    detail::ensure_context();
    LaunchConfig cluster_only = config;  // the occupancy of clusters, whatever else the launch asks
    cluster_only.cooperative = false;
    std::array<CUlaunchAttribute, 3> attrs{};
    const CUlaunchConfig c = detail::to_cu_launch_config(cluster_only, nullptr, attrs);
    int clusters = 0;
    detail::check(d.cuOccupancyMaxActiveClusters(&clusters, reinterpret_cast<CUfunction>(k.kernel), &c),
                  "cuOccupancyMaxActiveClusters", [&] { return fmt::format("kernel '{}'", k.name); });
    return clusters;
}

void Kernel::set_max_dynamic_shared_memory(std::size_t bytes) const {
    const detail::KernelState& k = state();
    constexpr const char* api = "Kernel::set_max_dynamic_shared_memory";
    const auto static_bytes =
        std::size_t(detail::kernel_attribute(k, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "static shared memory"));
    const std::size_t optin = k.shared_memory_optin;
    if (static_bytes > optin || bytes > optin - static_bytes)  // no wrap-around for huge `bytes`
        detail::throw_invalid(
            fmt::format("bytes: {} bytes of dynamic shared memory plus kernel '{}''s {} bytes of static "
                        "shared memory exceed device {}'s limit of {} bytes per block; at most {} "
                        "bytes of dynamic shared memory are possible",
                        bytes, k.name, static_bytes, k.device, optin, optin > static_bytes ? optin - static_bytes : 0),
            api);
    const detail::DriverApi& d = detail::driver();
    detail::check(d.cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(bytes), k.kernel,
                                         detail::cu_device(k.device)),
                  "cuKernelSetAttribute", [&] { return fmt::format("kernel '{}', {} bytes", k.name, bytes); });
    state_->max_dynamic_shared.store(bytes);
}

}  // namespace gpumath::core
