// SPDX-License-Identifier: Apache-2.0
// Linker: nvJitLink with architecture checks before linking.
#include <gpumath/core/linker.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nvJitLink.h>

#include "core/jit.hpp"
#include "detail/identifier.hpp"
#include "detail/status.hpp"

namespace gpumath::core {

namespace {

struct LinkHandle {
    nvJitLinkHandle h = nullptr;
    LinkHandle() = default;
    LinkHandle(const LinkHandle&) = delete;
    LinkHandle& operator=(const LinkHandle&) = delete;
    LinkHandle(LinkHandle&&) = delete;
    LinkHandle& operator=(LinkHandle&&) = delete;
    ~LinkHandle() {
        if (h != nullptr) (void)nvJitLinkDestroy(&h);
    }
};

std::string link_log(nvJitLinkHandle h) {
    // The sizes count the terminating NUL: each log is the text before its first NUL.
    std::string log;
    std::size_t n = 0;
    if (nvJitLinkGetErrorLogSize(h, &n) == NVJITLINK_SUCCESS && n > 1) {
        std::string e(n, '\0');
        if (nvJitLinkGetErrorLog(h, e.data()) == NVJITLINK_SUCCESS) log.append(e, 0, e.find('\0'));
    }
    if (nvJitLinkGetInfoLogSize(h, &n) == NVJITLINK_SUCCESS && n > 1) {
        std::string i(n, '\0');
        if (nvJitLinkGetInfoLog(h, i.data()) == NVJITLINK_SUCCESS) {
            if (!log.empty() && log.back() != '\n') log += '\n';
            log.append(i, 0, i.find('\0'));
        }
    }
    while (!log.empty() && (log.back() == '\n' || log.back() == ' ')) log.pop_back();
    return log;
}

nvJitLinkInputType input_type(CodeType t) {
    switch (t) {
        case CodeType::ptx:
            return NVJITLINK_INPUT_PTX;
        case CodeType::cubin:
            return NVJITLINK_INPUT_CUBIN;
        case CodeType::ltoir:
            return NVJITLINK_INPUT_LTOIR;
        case CodeType::fatbin:
            return NVJITLINK_INPUT_FATBIN;
    }
    return NVJITLINK_INPUT_ANY;
}

/// The options and inputs checked before nvJitLink sees them.
void check_link_request(const LinkerOptions& o, const std::vector<ObjectCode>& inputs, CodeType target,
                        const char* api) {
    if (inputs.empty()) detail::throw_invalid("no inputs: add ObjectCode with Linker::add before linking", api);
    if (target != CodeType::cubin && target != CodeType::ptx)
        detail::throw_invalid(
            fmt::format("target: {} is not a link result; use cubin (or ptx with LTO-IR inputs)", to_string(target)),
            api);
    if (o.optimization_level != 0 && o.optimization_level != 3)
        detail::throw_invalid(fmt::format("LinkerOptions::optimization_level: {} is not supported; nvJitLink accepts 0 "
                                          "or 3",
                                          o.optimization_level),
                              api);
    if (o.max_registers < 0 || o.max_registers > 255)
        detail::throw_invalid(
            fmt::format("LinkerOptions::max_registers: {} is out of range; use 0 (no limit) or 1..255",
                        o.max_registers),
            api);
    detail::check_no_nul(o.name, "LinkerOptions::name", api);
    detail::check_no_nul(o.arch, "LinkerOptions::arch", api);
    for (std::size_t i = 0; i < o.extra.size(); ++i) {
        const std::string& f = o.extra[i];
        if (f.empty() || f[0] != '-')
            detail::throw_invalid(
                fmt::format("LinkerOptions::extra[{}]: \"{}\" is not a flag (flags start with '-')", i, f), api);
        detail::check_no_nul(f, fmt::format("LinkerOptions::extra[{}]", i), api);
        if (f.starts_with("-arch") || f.starts_with("--gpu-architecture"))
            detail::throw_invalid(
                fmt::format("LinkerOptions::extra[{}]: \"{}\": set LinkerOptions::arch instead (the result's arch "
                            "must match what the linker targets)",
                            i, f),
                api);
    }
    if (target == CodeType::ptx &&
        !std::all_of(inputs.begin(), inputs.end(), [](const ObjectCode& c) { return c.type() == CodeType::ltoir; }))
        detail::throw_invalid("target: nvJitLink produces PTX only from LTO-IR inputs; link to cubin instead", api);
}

/// The target architecture: given, or the first input's, or the current device's; always real.
detail::Arch link_arch(const LinkerOptions& o, const std::vector<ObjectCode>& inputs, const char* api) {
    std::string arch_text = o.arch;
    if (arch_text.empty())
        for (const ObjectCode& c : inputs)
            if (!c.arch().empty()) {
                arch_text = c.arch();
                break;
            }
    if (arch_text.empty()) arch_text = detail::current_device_arch("LinkerOptions::arch", api);
    detail::Arch arch = detail::validate_arch(arch_text, "LinkerOptions::arch", api);
    if (arch.virtual_arch) {
        if (!o.arch.empty())
            detail::throw_invalid(
                fmt::format("LinkerOptions::arch: \"{}\" is virtual; linking needs a real architecture "
                            "such as \"{}\"",
                            o.arch, arch.real()),
                api);
        arch.virtual_arch = false;
    }
    return arch;
}

/// Objects for another architecture would fail inside nvJitLink with a terse message; say which.
void check_input_arches(const std::vector<ObjectCode>& inputs, const detail::Arch& arch, const char* api) {
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const ObjectCode& c = inputs[i];
        if (c.arch().empty() || c.type() == CodeType::fatbin) continue;
        const std::optional<detail::Arch> a = detail::parse_arch(c.arch());
        if (!a) continue;
        const bool ok = c.type() == CodeType::ptx ? a->number <= arch.number : a->number == arch.number;
        if (!ok)
            detail::throw_invalid(
                fmt::format("inputs[{}]: '{}' ({} for {}) does not match the link's architecture {}: {}", i, c.name(),
                            to_string(c.type()), c.arch(), arch.real(),
                            c.type() == CodeType::ptx ? "PTX must be for the same or an older architecture"
                                                      : "cubin and LTO-IR inputs must be for the same architecture; "
                                                        "compile every input for one arch"),
                api);
    }
}

/// nvJitLink's flags for a link.
std::vector<std::string> link_flags(const LinkerOptions& o, const detail::Arch& arch, bool lto, CodeType target) {
    std::vector<std::string> flags;
    flags.push_back("-arch=" + arch.real());
    if (lto) flags.emplace_back("-lto");
    flags.push_back(fmt::format("-O{}", o.optimization_level));
    if (o.debug) flags.emplace_back("-g");
    if (o.lineinfo) flags.emplace_back("-lineinfo");
    if (o.max_registers > 0) flags.push_back(fmt::format("-maxrregcount={}", o.max_registers));
    if (target == CodeType::ptx) flags.emplace_back("-ptx");
    for (const std::string& e : o.extra) flags.push_back(e);
    return flags;
}

/// The linked image out of a completed link.
void read_linked(nvJitLinkHandle h, CodeType target, const std::string& what, detail::ObjectCodeData& data) {
    std::size_t size = 0;
    if (target == CodeType::cubin) {
        detail::check_nvjitlink(int(nvJitLinkGetLinkedCubinSize(h, &size)), "nvJitLinkGetLinkedCubinSize", what,
                                data.log);
        data.bytes.resize(size);
        detail::check_nvjitlink(int(nvJitLinkGetLinkedCubin(h, data.bytes.data())), "nvJitLinkGetLinkedCubin", what,
                                data.log);
    } else {
        detail::check_nvjitlink(int(nvJitLinkGetLinkedPtxSize(h, &size)), "nvJitLinkGetLinkedPtxSize", what, data.log);
        data.bytes.resize(size);
        detail::check_nvjitlink(int(nvJitLinkGetLinkedPtx(h, data.bytes.data())), "nvJitLinkGetLinkedPtx", what,
                                data.log);
    }
}

/// Every input passes the checks of ObjectCode::from_bytes again, whatever made it, with one
/// decompression budget for the whole link. Then two inputs defining one symbol are refused before
/// nvJitLink sees them: nvJitLink 13.0 reports "Multiple definition" on stderr and still links, and
/// once an LTO link has run in the process it crashes on them instead. PTX, cubin and the images of
/// fatbins (decompressed where compressed) are read; LTO-IR is not. True when an input is LTO-IR
/// or a fatbin holding LTO-IR (the link needs -lto).
bool check_inputs(const std::vector<ObjectCode>& inputs, const char* api) {
    bool lto = false;
    detail::DecompressionBudget budget = detail::decompression_budget();
    std::map<std::string, std::size_t, std::less<>> first_definer;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const ObjectCode& c = inputs[i];
        const std::string_view bytes = c.text();
        detail::CodeRead read = detail::check_object_code(bytes, c.type(), budget, /*symbols=*/true);
        if (!read.defect.empty()) {
            const std::string message = fmt::format("inputs[{}]: '{}' is not a well-formed {}: {}", i, c.name(),
                                                    to_string(c.type()), read.defect);
            if (read.unsupported) detail::throw_not_supported(message, api);
            detail::throw_invalid(message, api);
        }
        lto = lto || read.ltoir;
        std::vector<std::string> symbols;
        switch (c.type()) {
            case CodeType::ptx:
                symbols = detail::ptx_defined_symbols(bytes);
                break;
            case CodeType::cubin:
                symbols = detail::cubin_defined_symbols(bytes);
                break;
            case CodeType::fatbin:
                symbols = std::move(read.fatbin_symbols);
                break;
            default:
                continue;
        }
        for (const std::string& symbol : symbols) {
            const auto [at, inserted] = first_definer.emplace(symbol, i);
            if (inserted) continue;
            const ObjectCode& first = inputs[at->second];
            detail::throw_invalid(
                fmt::format("inputs[{}]: '{}' ({}) defines '{}', which inputs[{}] ('{}', {}) defines too; a symbol "
                            "is defined once across a link: drop the repeated input, or give the symbol internal "
                            "linkage (static) or a different name in one of them",
                            i, c.name(), to_string(c.type()), symbol, at->second, first.name(),
                            to_string(first.type())),
                api);
        }
    }
    return lto;
}

}  // namespace

Linker& Linker::add(const ObjectCode& code) {
    constexpr const char* api = "Linker::add";
    if (moved_from_) detail::throw_moved_from("Linker", api);
    if (code.empty()) detail::throw_invalid("code: empty ObjectCode", api);
    // An ObjectCode built from its data directly is not checked elsewhere; nvJitLink must not see it.
    detail::check_code_type(code.type(), "code.type()", api);
    inputs_.push_back(code);
    return *this;
}

ObjectCode Linker::link(CodeType target) const {
    constexpr const char* api = "Linker::link";
    if (moved_from_) detail::throw_moved_from("Linker", api);
    detail::check_code_type(target, "target", api);
    const LinkerOptions& o = options_;
    check_link_request(o, inputs_, target, api);
    const detail::Arch arch = link_arch(o, inputs_, api);
    check_input_arches(inputs_, arch, api);
    const bool lto = check_inputs(inputs_, api);

    const std::vector<std::string> flags = link_flags(o, arch, lto, target);
    std::vector<const char*> argv;
    argv.reserve(flags.size());
    for (const std::string& f : flags) argv.push_back(f.c_str());
    const std::string what = fmt::format("linking '{}' ({} inputs) to {} for {} (options: {})", o.name, inputs_.size(),
                                         to_string(target), arch.real(), fmt::join(flags, " "));
    // nvJitLink keeps the input names it is given (not copies) and reads them again in messages of
    // later calls (e.g. a symbol's first definition when another input defines it too): they must
    // outlive the handle (declared before it).
    std::vector<std::string> names;
    names.reserve(inputs_.size());
    for (std::size_t i = 0; i < inputs_.size(); ++i) names.push_back(fmt::format("{}#{}", inputs_[i].name(), i));
    LinkHandle link;
    nvJitLinkResult r = nvJitLinkCreate(&link.h, std::uint32_t(argv.size()), argv.data());
    if (r != NVJITLINK_SUCCESS) {
        std::string log = link.h != nullptr ? link_log(link.h) : std::string();
        if (r == NVJITLINK_ERROR_UNRECOGNIZED_OPTION)
            detail::throw_invalid(fmt::format("LinkerOptions: nvJitLink rejected an option while {}: {}", what, log),
                                  api);
        detail::check_nvjitlink(int(r), "nvJitLinkCreate", what, log);
    }
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
        const ObjectCode& c = inputs_[i];
        const std::span<const std::byte> b = c.bytes();
        detail::check_nvjitlink(
            int(nvJitLinkAddData(link.h, input_type(c.type()), b.data(), b.size(), names[i].c_str())),
            "nvJitLinkAddData",
            [&] { return fmt::format("{}: adding input {} ('{}', {})", what, i, c.name(), to_string(c.type())); },
            [&] { return link_log(link.h); });
    }
    r = nvJitLinkComplete(link.h);
    std::string log = link_log(link.h);  // kept with the result too (warnings, -v output)
    detail::check_nvjitlink(int(r), "nvJitLinkComplete", what, log);

    auto data = std::make_shared<detail::ObjectCodeData>();
    data->type = target;
    data->arch = target == CodeType::ptx ? arch.virt() : arch.real();
    data->name = o.name;
    data->log = std::move(log);
    read_linked(link.h, target, what, *data);
    for (const ObjectCode& c : inputs_)
        for (const auto& entry : c.lowered_names())
            if (std::none_of(data->lowered_names.begin(), data->lowered_names.end(),
                             [&](const auto& e) { return e.first == entry.first; }))
                data->lowered_names.push_back(entry);
    return detail::ObjectCodeAccess::make(std::move(data));
}

}  // namespace gpumath::core
