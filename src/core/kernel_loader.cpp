// SPDX-License-Identifier: Apache-2.0
#include "core/kernel_loader.hpp"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <tuple>
#include <utility>

#include <gpumath/core/device.hpp>
#include <gpumath/core/linker.hpp>
#include <gpumath/core/object_code.hpp>

#include "detail/capture_mode.hpp"

namespace gpumath::detail {

namespace {

Digest digest_of(std::string_view source, const core::ProgramOptions& o, std::span<const std::string> expressions,
                 std::span<const core::ObjectCode> link_inputs) {
    KeyHasher h;
    h.field(source);
    h.field(o.name);
    h.field(o.std);
    h.field(o.arch);
    h.field(std::uint64_t(o.headers.size()));
    for (const auto& [name, text] : o.headers) {
        h.field(name);
        h.field(text);
    }
    h.field(std::uint64_t(o.defines.size()));
    for (const auto& [name, value] : o.defines) {
        h.field(name);
        h.field(value);
    }
    h.field(std::uint64_t(o.include_dirs.size()));
    for (const std::string& d : o.include_dirs) h.field(d);
    h.field(std::uint64_t(o.extra.size()));
    for (const std::string& e : o.extra) h.field(e);
    h.field(std::uint64_t(o.fast_math) | std::uint64_t(o.lineinfo) << 1 | std::uint64_t(o.debug) << 2 |
            std::uint64_t(o.relocatable) << 3 | std::uint64_t(o.cache) << 4);
    h.field(std::uint64_t(o.max_registers));
    h.field(o.toolkit_root);
    h.field(std::uint64_t(expressions.size()));
    for (const std::string& e : expressions) h.field(e);
    h.field(std::uint64_t(link_inputs.size()));
    for (const core::ObjectCode& input : link_inputs) {
        h.field(std::uint64_t(input.type()));
        const std::span<const std::byte> bytes = input.bytes();
        h.field(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    }
    return h.finish();
}

/// One (program, device): the module once loaded. `loading` serializes the threads that ask for it
/// before it exists; no table's lock is held while compiling.
struct Slot {
    std::mutex loading;
    std::atomic<const core::Module*> module{nullptr};
    std::unique_ptr<const core::Module> owned;
};

using SlotKey = std::pair<Digest, int>;

Slot& slot_of(const Digest& program, int device) {
    static std::mutex mutex;
    // Never destroyed (see the header).
    static auto* slots = new std::map<SlotKey, std::unique_ptr<Slot>>();
    std::lock_guard lock(mutex);
    std::unique_ptr<Slot>& s = (*slots)[SlotKey(program, device)];
    if (!s) s = std::make_unique<Slot>();
    return *s;
}

}  // namespace

DeviceProgram::DeviceProgram(std::string_view source, core::ProgramOptions options,
                             std::vector<std::string> name_expressions, std::vector<core::ObjectCode> link_inputs)
    : source_(source),
      options_(std::move(options)),
      name_expressions_(std::move(name_expressions)),
      link_inputs_(std::move(link_inputs)),
      digest_(digest_of(source_, options_, name_expressions_, link_inputs_)) {}

const core::Module& device_module(int device, const DeviceProgram& program) {
    Slot& slot = slot_of(program.digest(), device);
    if (const core::Module* m = slot.module.load(std::memory_order_acquire)) return *m;
    std::lock_guard lock(slot.loading);
    if (const core::Module* m = slot.module.load(std::memory_order_acquire)) return *m;
    // The first use may come while the caller's stream captures: compiling and loading are not
    // recorded into it.
    const RelaxedCaptureMode relaxed("loading gpumath's kernels");
    core::ProgramOptions options = program.options();
    if (options.arch.empty()) options.arch = core::Device(device).arch();
    core::Program compiler(std::string(program.source()), options);
    for (const std::string& e : program.name_expressions()) compiler.add_name_expression(e);
    core::ObjectCode code;
    if (program.link_inputs().empty()) {
        code = compiler.compile(core::CodeType::cubin);
    } else {
        core::Linker linker(core::LinkerOptions{.name = options.name, .arch = options.arch});
        linker.add(compiler.compile(core::CodeType::ltoir));
        for (const core::ObjectCode& input : program.link_inputs()) linker.add(input);
        code = linker.link(core::CodeType::cubin);
    }
    slot.owned = std::make_unique<const core::Module>(code);
    slot.module.store(slot.owned.get(), std::memory_order_release);
    return *slot.owned;
}

core::Kernel device_kernel(int device, const DeviceProgram& program, std::string_view name) {
    using Key = std::tuple<Digest, int, std::string>;
    static std::shared_mutex mutex;
    static auto* kernels = new std::map<Key, core::Kernel, std::less<>>();  // never destroyed
    Key key{program.digest(), device, std::string(name)};
    {
        std::shared_lock lock(mutex);
        if (auto it = kernels->find(key); it != kernels->end()) return it->second;
    }
    // The lookup may load the kernel into the device's context (lazy loading): like the compile and
    // the load, nothing of it is recorded into a stream the caller is capturing.
    const RelaxedCaptureMode relaxed("looking up one of gpumath's kernels");
    core::Kernel kernel = device_module(device, program).kernel(name, device);
    std::unique_lock lock(mutex);
    return kernels->emplace(std::move(key), std::move(kernel)).first->second;
}

}  // namespace gpumath::detail
