// SPDX-License-Identifier: Apache-2.0
#include "core/kernel_loader.hpp"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include <gpumath/core/device.hpp>
#include <gpumath/core/object_code.hpp>

#include "core/hash.hpp"
#include "detail/capture_mode.hpp"

namespace gpumath::detail {

namespace {

/// One (device, program): the module once loaded. `loading` serializes the threads that ask for it
/// before it exists; the map's lock is never held while compiling.
struct Slot {
    std::mutex loading;
    std::atomic<const core::Module*> module{nullptr};
    std::unique_ptr<const core::Module> owned;
};

Digest program_key(int device, const DeviceProgram& p) {
    KeyHasher h;
    h.field(std::uint64_t(device));
    h.field(p.source);
    const core::ProgramOptions& o = p.options;
    h.field(o.name);
    h.field(o.std);
    for (const auto& [name, text] : o.headers) {
        h.field(name);
        h.field(text);
    }
    h.field(std::uint64_t(o.defines.size()));
    for (const auto& [name, value] : o.defines) {
        h.field(name);
        h.field(value);
    }
    for (const std::string& d : o.include_dirs) h.field(d);
    for (const std::string& e : o.extra) h.field(e);
    h.field(std::uint64_t(o.fast_math) | std::uint64_t(o.lineinfo) << 1 | std::uint64_t(o.debug) << 2 |
            std::uint64_t(o.relocatable) << 3);
    h.field(std::uint64_t(o.max_registers));
    h.field(o.toolkit_root);
    h.field(std::uint64_t(p.name_expressions.size()));
    for (const std::string& e : p.name_expressions) h.field(e);
    return h.finish();
}

Slot& slot_of(const Digest& key) {
    static std::mutex mutex;
    // Never destroyed (see the header).
    static auto* slots = new std::map<Digest, std::unique_ptr<Slot>>();
    std::lock_guard lock(mutex);
    std::unique_ptr<Slot>& s = (*slots)[key];
    if (!s) s = std::make_unique<Slot>();
    return *s;
}

}  // namespace

const core::Module& device_module(int device, const DeviceProgram& program) {
    Slot& slot = slot_of(program_key(device, program));
    if (const core::Module* m = slot.module.load(std::memory_order_acquire)) return *m;
    std::lock_guard lock(slot.loading);
    if (const core::Module* m = slot.module.load(std::memory_order_acquire)) return *m;
    // The first use may come while the caller's stream captures: compiling and loading are not
    // recorded into it.
    const RelaxedCaptureMode relaxed("loading gpumath's kernels");
    core::ProgramOptions options = program.options;
    options.arch = core::Device(device).arch();
    core::Program compiler(std::string(program.source), options);
    for (const std::string& e : program.name_expressions) compiler.add_name_expression(e);
    slot.owned = std::make_unique<const core::Module>(compiler.compile(core::CodeType::cubin));
    slot.module.store(slot.owned.get(), std::memory_order_release);
    return *slot.owned;
}

core::Kernel device_kernel(int device, const DeviceProgram& program, std::string_view name) {
    return device_module(device, program).kernel(name, device);
}

}  // namespace gpumath::detail
