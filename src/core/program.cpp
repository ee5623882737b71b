// SPDX-License-Identifier: Apache-2.0
// Program: option validation, toolkit header lookup, NVRTC compilation (the compile cache's key and
// the files it reads: program_key.cpp).
#include <gpumath/core/program.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cerrno>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nvrtc.h>

#include "core/jit.hpp"
#include "detail/enum_check.hpp"
#include "detail/identifier.hpp"
#include "detail/log.hpp"
#include "detail/scope_exit.hpp"
#include <gpumath/core/device.hpp>
#include "detail/status.hpp"

namespace fs = std::filesystem;

namespace gpumath::detail {

std::string Arch::real() const {
    std::string s = fmt::format("sm_{}", number);
    if (suffix != 0) s += suffix;
    return s;
}

std::string Arch::virt() const {
    std::string s = fmt::format("compute_{}", number);
    if (suffix != 0) s += suffix;
    return s;
}

std::optional<Arch> parse_arch(std::string_view text) {
    Arch a;
    std::string_view rest;
    if (text.starts_with("sm_")) {
        rest = text.substr(3);
    } else if (text.starts_with("compute_")) {
        a.virtual_arch = true;
        rest = text.substr(8);
    } else {
        return std::nullopt;
    }
    std::size_t digits = 0;
    while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits])) != 0) ++digits;
    if (digits < 2 || digits > 3) return std::nullopt;
    if (rest.size() > digits + 1) return std::nullopt;
    if (rest.size() == digits + 1) {
        const char s = rest[digits];
        if (s != 'a' && s != 'f') return std::nullopt;
        a.suffix = s;
    }
    a.number = std::stoi(std::string(rest.substr(0, digits)));
    return a;
}

int nvrtc_version() {
    static const int version = [] {
        int major = 0, minor = 0;
        if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return 0;
        return major * 1000 + minor * 10;
    }();
    return version;
}

const std::vector<int>& nvrtc_supported_archs() {
    static const std::vector<int> archs = [] {
        std::vector<int> v;
        int n = 0;
        if (nvrtcGetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0) {
            v.resize(std::size_t(n));
            if (nvrtcGetSupportedArchs(v.data()) != NVRTC_SUCCESS) v.clear();
        }
        std::sort(v.begin(), v.end());
        return v;
    }();
    return archs;
}

namespace {

std::string supported_list() {
    std::string s;
    for (int a : nvrtc_supported_archs()) s += fmt::format("{}sm_{}", s.empty() ? "" : ", ", a);
    return s;
}

}  // namespace

Arch validate_arch(std::string_view text, const char* field, const char* api) {
    const std::optional<Arch> a = parse_arch(text);
    const int v = nvrtc_version();
    if (!a)
        throw_invalid(fmt::format("{}: \"{}\" is not an architecture name; use sm_NN for a GPU (e.g. \"sm_90\"), "
                                  "compute_NN for PTX, optionally with an 'a' or 'f' suffix (e.g. \"sm_90a\"); "
                                  "NVRTC {}.{} supports {}",
                                  field, text, v / 1000, (v % 1000) / 10, supported_list()),
                      api);
    const auto& archs = nvrtc_supported_archs();
    if (!archs.empty() && std::find(archs.begin(), archs.end(), a->number) == archs.end())
        throw_invalid(fmt::format("{}: \"{}\" is not an architecture NVRTC {}.{} supports; supported: {}", field, text,
                                  v / 1000, (v % 1000) / 10, supported_list()),
                      api);
    if (a->suffix == 'a' && a->number < 90)
        throw_invalid(
            fmt::format("{}: \"{}\": the 'a' (architecture-specific) suffix exists from sm_90 on", field, text), api);
    if (a->suffix == 'f' && a->number < 100)
        throw_invalid(fmt::format("{}: \"{}\": the 'f' (family) suffix exists from sm_100 on", field, text), api);
    return *a;
}

std::string current_device_arch(const char* field, const char* api) {
    if (core::Device::count() == 0) {
        throw_invalid(fmt::format("{}: empty, which means \"the current device's architecture\", but there is no "
                                  "CUDA driver/device on this machine; set {} explicitly (e.g. \"sm_90\")",
                                  field, field),
                      api);
    }
    return core::Device::current().arch();
}

namespace {

bool has_toolkit_headers(const fs::path& include) {
    std::error_code ec;
    return fs::is_regular_file(include / "cuda_fp16.h", ec);
}

// <root>/include (or the targets/<arch>/include layout some packages use), plus include/cccl when
// present (CUDA 13 keeps libcu++ headers such as cuda/std/... there).
std::vector<std::string> include_dirs_of_root(const fs::path& root) {
    std::vector<std::string> dirs;
    for (const fs::path& inc : {root / "include", root / "targets" / "x86_64-linux" / "include",
                                root / "targets" / "sbsa-linux" / "include"}) {
        if (!has_toolkit_headers(inc)) continue;
        dirs.push_back(inc.string());
        std::error_code ec;
        if (fs::is_directory(inc / "cccl", ec)) dirs.push_back((inc / "cccl").string());
        break;
    }
    return dirs;
}

std::vector<std::string> find_toolkit_include_dirs(const std::string& option_root) {
    if (!option_root.empty()) {
        std::vector<std::string> dirs = include_dirs_of_root(option_root);
        if (dirs.empty())
            throw_invalid(fmt::format("ProgramOptions::toolkit_root: \"{}\" has no include/cuda_fp16.h; give the root "
                                      "of a CUDA toolkit (e.g. /usr/local/cuda) or leave it empty to search "
                                      "$CUDA_PATH, $CUDA_HOME and the toolkit gpumath was built with",
                                      option_root),
                          "Program");
        return dirs;
    }
    for (const char* var : {"CUDA_PATH", "CUDA_HOME"}) {
        const char* v = std::getenv(var);
        if (v == nullptr || *v == '\0') continue;
        std::vector<std::string> dirs = include_dirs_of_root(v);
        if (!dirs.empty()) return dirs;
        detail::log(LogLevel::warn, "{}={} has no include/cuda_fp16.h; looking further for the CUDA toolkit's headers",
                    var, v);
    }
#ifdef GPUMATH_TOOLKIT_INCLUDE_DIR
    {
        // The configure-time include directories (a CMake list).
        std::string list = GPUMATH_TOOLKIT_INCLUDE_DIR;
        std::vector<std::string> dirs;
        std::size_t start = 0;
        while (start <= list.size()) {
            const std::size_t end = std::min(list.find(';', start), list.size());
            const std::string d = list.substr(start, end - start);
            if (!d.empty() && has_toolkit_headers(d)) {
                dirs = include_dirs_of_root(fs::path(d).parent_path());
                if (dirs.empty()) dirs.push_back(d);
                break;
            }
            start = end + 1;
        }
        if (!dirs.empty()) return dirs;
    }
#endif
#ifdef GPUMATH_TOOLKIT_ROOT
    if (std::string_view(GPUMATH_TOOLKIT_ROOT).size() > 0) {
        std::vector<std::string> dirs = include_dirs_of_root(GPUMATH_TOOLKIT_ROOT);
        if (!dirs.empty()) return dirs;
    }
#endif
    return include_dirs_of_root("/usr/local/cuda");
}

const std::set<std::string_view>& dialects() {
    static const std::set<std::string_view> d = {"c++11", "c++14", "c++17", "c++20"};
    return d;
}

void validate_options(const core::ProgramOptions& o) {
    constexpr const char* api = "Program";
    check_no_nul(o.name, "ProgramOptions::name", api);
    if (o.name.empty() || o.name.find_first_of("\n\r") != std::string::npos)
        throw_invalid("ProgramOptions::name: must be a non-empty single line", api);
    check_no_nul(o.arch, "ProgramOptions::arch", api);
    for (const auto& [k, v] : o.defines)  // keys: checked below
        if (is_identifier(k)) check_no_nul(v, fmt::format("ProgramOptions::defines[\"{}\"]", k), api);
    for (std::size_t i = 0; i < o.include_dirs.size(); ++i)
        check_no_nul(o.include_dirs[i], fmt::format("ProgramOptions::include_dirs[{}]", i), api);
    for (const auto& [name, text] : o.headers) {
        check_no_nul(name, "ProgramOptions::headers: a header name", api);
        check_no_nul(text, fmt::format("ProgramOptions::headers[\"{}\"]", name), api);
    }
    for (std::size_t i = 0; i < o.extra.size(); ++i)
        check_no_nul(o.extra[i], fmt::format("ProgramOptions::extra[{}]", i), api);
    if (!dialects().contains(o.std))
        throw_invalid(fmt::format("ProgramOptions::std: \"{}\" is not a dialect NVRTC accepts; use one of "
                                  "\"c++11\", \"c++14\", \"c++17\", \"c++20\"",
                                  o.std),
                      api);
    for (const auto& [k, v] : o.defines) {
        if (!is_identifier(k))
            throw_invalid(fmt::format("ProgramOptions::defines: \"{}\" is not a macro name (letters, digits and '_', "
                                      "not starting with a digit)",
                                      k),
                          api);
        if (v.find_first_of("\n\r") != std::string::npos)
            throw_invalid(fmt::format("ProgramOptions::defines[\"{}\"]: the value must be a single line", k), api);
    }
    for (std::size_t i = 0; i < o.include_dirs.size(); ++i) {
        std::error_code ec;
        if (o.include_dirs[i].empty() || !fs::is_directory(o.include_dirs[i], ec))
            throw_invalid(fmt::format("ProgramOptions::include_dirs[{}]: \"{}\" is not an existing directory", i,
                                      o.include_dirs[i]),
                          api);
    }
    for (const auto& [name, text] : o.headers)
        if (name.empty()) throw_invalid("ProgramOptions::headers: a header name is empty", api);
    if (o.max_registers < 0 || o.max_registers > 255)
        throw_invalid(fmt::format("ProgramOptions::max_registers: {} is out of range; use 0 (no limit) or 1..255",
                                  o.max_registers),
                      api);
    for (std::size_t i = 0; i < o.extra.size(); ++i) {
        const std::string& f = o.extra[i];
        if (f.empty() || f[0] != '-')
            throw_invalid(fmt::format("ProgramOptions::extra[{}]: \"{}\" is not a flag (flags start with '-')", i, f),
                          api);
        const auto starts = [&](std::string_view p) { return f.starts_with(p); };
        if (starts("-arch") || starts("--gpu-architecture"))
            throw_invalid(fmt::format("ProgramOptions::extra[{}]: \"{}\": set ProgramOptions::arch instead", i, f),
                          api);
        if (starts("-std") || starts("--std"))
            throw_invalid(fmt::format("ProgramOptions::extra[{}]: \"{}\": set ProgramOptions::std instead", i, f), api);
        // The cache key follows includes as NVRTC resolves them; it reads the search path from
        // include_dirs, so a path given here would let an edited header return stale code.
        if (starts("-I") || starts("--include-path"))
            throw_invalid(fmt::format("ProgramOptions::extra[{}]: \"{}\": set ProgramOptions::include_dirs instead "
                                      "(the compile cache keys the headers found there)",
                                      i, f),
                          api);
        if (starts("-include") || starts("--pre-include"))
            throw_invalid(fmt::format("ProgramOptions::extra[{}]: \"{}\": pre-included headers are not supported; "
                                      "#include the header at the top of the source (the compile cache keys the "
                                      "headers it reaches that way)",
                                      i, f),
                          api);
        if (f == "-dlto" || f == "--dlink-time-opt")
            throw_invalid(fmt::format("ProgramOptions::extra[{}]: \"{}\": compile(CodeType::ltoir) instead", i, f),
                          api);
    }
}

// Flags that do not depend on the target kind, in a fixed order.
std::vector<std::string> common_flags(const core::ProgramOptions& o, std::span<const std::string> toolkit_dirs) {
    std::vector<std::string> f;
    f.push_back("-std=" + o.std);
    for (const auto& [k, v] : o.defines) f.push_back(v.empty() ? "-D" + k : fmt::format("-D{}={}", k, v));
    for (const std::string& d : o.include_dirs) f.push_back("-I" + d);
    for (const std::string& d : toolkit_dirs) f.push_back("-I" + d);
    if (o.fast_math) f.emplace_back("--use_fast_math");
    if (o.lineinfo) f.emplace_back("-lineinfo");
    if (o.debug) f.emplace_back("-G");
    if (o.relocatable) f.emplace_back("-rdc=true");
    if (o.max_registers > 0) f.push_back(fmt::format("-maxrregcount={}", o.max_registers));
    for (const std::string& e : o.extra) f.push_back(e);
    return f;
}

struct NvrtcProgram {
    nvrtcProgram p = nullptr;
    NvrtcProgram() = default;
    NvrtcProgram(const NvrtcProgram&) = delete;
    NvrtcProgram& operator=(const NvrtcProgram&) = delete;
    NvrtcProgram(NvrtcProgram&&) = delete;
    NvrtcProgram& operator=(NvrtcProgram&&) = delete;
    ~NvrtcProgram() {
        if (p != nullptr) (void)nvrtcDestroyProgram(&p);
    }
};

std::string program_log(nvrtcProgram p) {
    std::size_t n = 0;
    if (nvrtcGetProgramLogSize(p, &n) != NVRTC_SUCCESS || n == 0) return {};
    std::string log(n, '\0');
    if (nvrtcGetProgramLog(p, log.data()) != NVRTC_SUCCESS) return {};
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n' || log.back() == ' ')) log.pop_back();
    return log;
}

}  // namespace

core::ObjectCode nvrtc_compile(const CompileJob& job) {
    const core::ProgramOptions& o = *job.options;
    const std::string what =
        fmt::format("compiling program '{}' to {} for {}", o.name, core::to_string(job.target), job.arch);

    std::vector<const char*> header_texts, header_names;
    for (const auto& [name, text] : o.headers) {
        header_names.push_back(name.c_str());
        header_texts.push_back(text.c_str());
    }
    NvrtcProgram prog;
    check_nvrtc(nvrtcCreateProgram(&prog.p, job.source->c_str(), o.name.c_str(), int(header_texts.size()),
                                   header_texts.data(), header_names.data()),
                "nvrtcCreateProgram", what);
    for (const std::string& e : job.name_expressions)
        check_nvrtc(nvrtcAddNameExpression(prog.p, e.c_str()), "nvrtcAddNameExpression",
                    fmt::format("{}: registering name expression \"{}\"", what, e));

    std::vector<const char*> argv;
    argv.reserve(job.flags.size());
    for (const std::string& f : job.flags) argv.push_back(f.c_str());
    const nvrtcResult r = nvrtcCompileProgram(prog.p, int(argv.size()), argv.data());
    std::string log = program_log(prog.p);
    if (r == NVRTC_ERROR_INVALID_OPTION)
        throw_invalid(fmt::format("ProgramOptions: NVRTC rejected an option while {} (options: {}): {}", what,
                                  fmt::join(job.flags, " "), log),
                      "nvrtcCompileProgram");
    check_nvrtc(
        int(r), "nvrtcCompileProgram",
        [&] {
            std::string context = fmt::format("{} (options: {})", what, fmt::join(job.flags, " "));
            const bool no_toolkit = std::none_of(job.flags.begin(), job.flags.end(), [](const std::string& f) {
                return f.starts_with("-I") && has_toolkit_headers(f.substr(2));
            });
            if (no_toolkit && log.find("cannot open source file") != std::string::npos)
                context += "; note: no CUDA toolkit headers were found: set ProgramOptions::toolkit_root or CUDA_PATH";
            return context;
        },
        log);

    auto data = std::make_shared<ObjectCodeData>();
    data->type = job.target;
    data->arch = job.arch;
    data->name = o.name;
    data->log = std::move(log);
    std::size_t size = 0;
    switch (job.target) {
        case core::CodeType::ptx:
            check_nvrtc(nvrtcGetPTXSize(prog.p, &size), "nvrtcGetPTXSize", what);
            data->bytes.resize(size);
            check_nvrtc(nvrtcGetPTX(prog.p, data->bytes.data()), "nvrtcGetPTX", what);
            break;
        case core::CodeType::cubin:
            check_nvrtc(nvrtcGetCUBINSize(prog.p, &size), "nvrtcGetCUBINSize", what);
            data->bytes.resize(size);
            check_nvrtc(nvrtcGetCUBIN(prog.p, data->bytes.data()), "nvrtcGetCUBIN", what);
            break;
        case core::CodeType::ltoir:
            check_nvrtc(nvrtcGetLTOIRSize(prog.p, &size), "nvrtcGetLTOIRSize", what);
            data->bytes.resize(size);
            check_nvrtc(nvrtcGetLTOIR(prog.p, data->bytes.data()), "nvrtcGetLTOIR", what);
            break;
        case core::CodeType::fatbin:
            break;
    }
    if (data->bytes.empty())  // not a status NVRTC returns, but the same failure for the caller
        throw_nvrtc(int(NVRTC_ERROR_INTERNAL_ERROR), "nvrtcCompileProgram",
                    fmt::format("{}: NVRTC produced no {}", what, core::to_string(job.target)), data->log);
    for (const std::string& e : job.name_expressions) {
        const char* lowered = nullptr;
        check_nvrtc(nvrtcGetLoweredName(prog.p, e.c_str(), &lowered), "nvrtcGetLoweredName",
                    fmt::format("{}: looking up name expression \"{}\"", what, e));
        data->lowered_names.emplace_back(e, lowered != nullptr ? lowered : "");
    }
    return ObjectCodeAccess::make(std::move(data));
}

void check_code_type(core::CodeType type, const char* field, const char* api) {
    check_enum(type, int(core::CodeType::fatbin) + 1, "a CodeType", field, api);
}

}  // namespace gpumath::detail

namespace gpumath::core {

Program::Program(std::string source, ProgramOptions options)
    : source_(std::move(source)), options_(std::move(options)) {
    detail::check_no_nul(source_, "source", "Program");
    detail::validate_options(options_);
    if (options_.arch.empty()) options_.arch = detail::current_device_arch("ProgramOptions::arch", "Program");
    (void)detail::validate_arch(options_.arch, "ProgramOptions::arch", "Program");
    toolkit_dirs_ = detail::find_toolkit_include_dirs(options_.toolkit_root);
}

Program& Program::add_name_expression(std::string expression) {
    if (moved_from_) detail::throw_moved_from("Program", "Program::add_name_expression");
    if (expression.empty()) detail::throw_invalid("name expression: must not be empty", "Program::add_name_expression");
    detail::check_no_nul(expression, "name expression", "Program::add_name_expression");
    if (std::find(name_expressions_.begin(), name_expressions_.end(), expression) == name_expressions_.end())
        name_expressions_.push_back(std::move(expression));
    return *this;
}

ObjectCode Program::compile(CodeType target) const {
    if (moved_from_) detail::throw_moved_from("Program", "Program::compile");
    detail::check_code_type(target, "target", "Program::compile");
    const detail::Arch arch = *detail::parse_arch(options_.arch);
    detail::CompileJob job;
    job.source = &source_;
    job.options = &options_;
    job.name_expressions = name_expressions_;
    job.target = target;
    switch (target) {
        case CodeType::ptx:
            // A virtual architecture makes NVRTC stop at PTX instead of also running ptxas.
            job.arch = arch.virt();
            break;
        case CodeType::cubin:
            if (arch.virtual_arch)
                detail::throw_invalid(
                    fmt::format("target: a cubin needs a real architecture, but ProgramOptions::arch is "
                                "\"{}\" (virtual); use \"{}\", or compile to CodeType::ptx",
                                options_.arch, arch.real()),
                    "Program::compile");
            job.arch = arch.real();
            break;
        case CodeType::ltoir:
            job.arch = arch.text();
            break;
        case CodeType::fatbin:
            detail::throw_invalid("target: NVRTC cannot produce a fatbin; compile to ptx, cubin or ltoir",
                                  "Program::compile");
    }
    job.flags.push_back("-arch=" + job.arch);
    for (std::string& f : detail::common_flags(options_, toolkit_dirs_)) job.flags.push_back(std::move(f));
    if (target == CodeType::ltoir) job.flags.emplace_back("-dlto");

    if (!options_.cache) {
        detail::walk_includes(job, nullptr);  // refuses a FIFO or device before NVRTC would wait on it
        return detail::nvrtc_compile(job);
    }
    const detail::CompileExpectation expect{target, job.arch, options_.name, job.name_expressions};
    return detail::cached_compile(detail::compile_key(job), expect, [&] { return detail::nvrtc_compile(job); });
}

}  // namespace gpumath::core
