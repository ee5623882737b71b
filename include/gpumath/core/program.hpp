// SPDX-License-Identifier: Apache-2.0
// Run-time compilation of CUDA C++ with NVRTC: ProgramOptions, Program, ObjectCode, and the compile
// cache shared by every Program in the process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpumath/core/module.hpp>
#include <gpumath/detail/moved_from.hpp>

namespace gpumath::core {

/// The kinds of device code gpumath compiles, links and loads.
enum class CodeType {
    ptx,    ///< PTX text (virtual ISA; compiled for the GPU when loaded or linked)
    cubin,  ///< a CUDA binary for one real architecture (sm_NN)
    ltoir,  ///< LTO-IR: link-time-optimizable intermediate code; must be linked before loading
    fatbin  ///< a fat binary (several cubins/PTX); loadable and linkable, not produced by NVRTC
};

/// "ptx", "cubin", "ltoir" or "fatbin".
[[nodiscard]] std::string_view to_string(CodeType type) noexcept;

/// Options of a Program: typed fields, validated when the Program is constructed (InvalidArgument
/// naming the field, the value given and what is allowed). Use designated initializers:
/// `ProgramOptions{.arch = "sm_90", .std = "c++20", .defines = {{"N", "4"}}}`.
struct ProgramOptions {
    /// The program's name, used in compiler messages and as the source file name.
    std::string name = "gpumath_program";
    /// Target architecture: "sm_NN" (real GPU: PTX, cubin and LTO-IR targets), "compute_NN" (virtual:
    /// PTX and LTO-IR only), optionally with an "a" (arch-specific, NN >= 90) or "f" (family,
    /// NN >= 100) suffix, e.g. "sm_90a". Empty: the current device's architecture; with no device,
    /// constructing the Program throws InvalidArgument asking for an explicit arch.
    std::string arch{};
    /// Language dialect: "c++11", "c++14", "c++17" or "c++20".
    std::string std = "c++17";
    /// Macros: name -> value (an empty value defines the name as 1, like -DNAME).
    std::map<std::string, std::string> defines{};
    /// Directories searched for #include, before the CUDA toolkit's own headers. Must exist.
    std::vector<std::string> include_dirs{};
    /// In-memory headers: include name (as written in #include) -> contents. Found before files.
    std::map<std::string, std::string> headers{};
    /// --use_fast_math: approximate division/sqrt/transcendentals, flush denormals to zero.
    bool fast_math = false;
    /// -lineinfo: line tables for profilers and compute-sanitizer.
    bool lineinfo = false;
    /// -G: device debug information (disables optimisation).
    bool debug = false;
    /// -rdc=true: relocatable device code, for linking with other objects (LTO-IR implies it).
    bool relocatable = false;
    /// -maxrregcount: register limit per thread, 0 = no limit (otherwise 1..255).
    int max_registers = 0;
    /// Further NVRTC flags, each starting with '-', passed as given (after the typed ones). The
    /// architecture, dialect and output kind have typed fields and are rejected here.
    std::vector<std::string> extra{};
    /// CUDA toolkit root whose headers (cuda_fp16.h, cuda_bf16.h, cuda/std/...) JIT sources may
    /// include. Empty: $CUDA_PATH, then $CUDA_HOME, then the toolkit gpumath was built against,
    /// then /usr/local/cuda; the first that has include/cuda_fp16.h wins. When set, it must exist.
    std::string toolkit_root{};
    /// Use the compile cache (memory and, when enabled, disk). See `compile_cache()`.
    bool cache = true;
};

class ObjectCode;

/// CUDA C++ source plus options, compiled with NVRTC on `compile`. Cheap to copy; holds no GPU or
/// NVRTC resources between calls. Thread-safe for concurrent `compile` calls. A moved-from Program
/// throws InvalidArgument from `compile` and `add_name_expression`; its accessors return empty values.
class Program {
public:
    /// Validates `options` (InvalidArgument) and resolves an empty arch to the current device's
    /// (InvalidArgument when there is no device). Does not compile yet.
    explicit Program(std::string source, ProgramOptions options = {});

    /// Registers a name expression such as "scale<float>" or "&ns::table" whose mangled name the
    /// compiled code should report through `ObjectCode::lowered_name`. Returns *this.
    /// InvalidArgument for an empty expression or a moved-from Program.
    Program& add_name_expression(std::string expression);

    /// Compiles to `target` (ptx, cubin or ltoir). Returns the cached result when source, headers,
    /// options, architecture, NVRTC version and name expressions match an earlier compile (in
    /// memory or on disk). Throws CompileError carrying NVRTC's log when the source does not
    /// compile, InvalidArgument for a target the architecture cannot give (a cubin from compute_NN,
    /// or fatbin), a value that is not a CodeType, flags NVRTC rejects or a moved-from Program.
    [[nodiscard]] ObjectCode compile(CodeType target = CodeType::cubin) const;

    /// The CUDA C++ source.
    [[nodiscard]] const std::string& source() const noexcept { return source_; }
    /// The options, with `arch` resolved.
    [[nodiscard]] const ProgramOptions& options() const noexcept { return options_; }
    /// The registered name expressions, in registration order.
    [[nodiscard]] std::span<const std::string> name_expressions() const noexcept { return name_expressions_; }
    /// Include directories used for the toolkit's headers (empty when none was found).
    [[nodiscard]] std::span<const std::string> toolkit_include_dirs() const noexcept { return toolkit_dirs_; }

private:
    std::string source_;
    ProgramOptions options_;
    std::vector<std::string> name_expressions_{};
    std::vector<std::string> toolkit_dirs_{};
    detail::MovedFrom moved_from_{};
};

}  // namespace gpumath::core

namespace gpumath::detail {
/// The immutable contents of an ObjectCode, shared between copies.
struct ObjectCodeData {
    core::CodeType type = core::CodeType::cubin;
    std::string arch{};
    std::string name;
    std::string bytes;
    std::string log;
    std::vector<std::pair<std::string, std::string>> lowered_names{};  // expression -> mangled name
};
}  // namespace gpumath::detail

namespace gpumath::core {

/// Compiled or linked device code of one CodeType: the bytes, the architecture, the compiler's log
/// and the lowered names of registered name expressions. An immutable value: copies share the
/// bytes. Load it with `load()` (not LTO-IR: link that first).
class ObjectCode {
public:
    /// An empty object (no code).
    ObjectCode() = default;

    /// Wraps code given in memory (copied). `arch` ("sm_90", "compute_90") is read from a cubin's
    /// ELF header when left empty; `lowered_names` maps name expressions to mangled names so that
    /// `Module::kernel("scale<float>")` works for code compiled elsewhere. InvalidArgument when
    /// `bytes` is empty or `type` is not a CodeType.
    [[nodiscard]] static ObjectCode from_bytes(std::span<const std::byte> bytes, CodeType type, std::string arch = {},
                                               std::vector<std::pair<std::string, std::string>> lowered_names = {});
    /// Same, from a string (PTX text, or binary data held in a std::string).
    [[nodiscard]] static ObjectCode from_bytes(std::string_view bytes, CodeType type, std::string arch = {},
                                               std::vector<std::pair<std::string, std::string>> lowered_names = {});
    /// Reads a file. The type comes from `type` or else the extension (.ptx, .cubin, .ltoir/.lto,
    /// .fatbin/.fatbin.bin); InvalidArgument when neither says, when `type` is not a CodeType, or
    /// when the file is missing, empty or not a regular file (a FIFO is refused, not waited on).
    [[nodiscard]] static ObjectCode from_file(const std::filesystem::path& path,
                                              std::optional<CodeType> type = std::nullopt, std::string arch = {});
    /// Writes the bytes to `path` (as nvcc would write the same kind of file). Throws Error on I/O failure.
    void save(const std::filesystem::path& path) const;

    /// True for a default-constructed object.
    [[nodiscard]] bool empty() const noexcept { return !data_; }
    /// The kind of code. InvalidArgument on an empty object, as every accessor below.
    [[nodiscard]] CodeType type() const { return data().type; }
    /// The architecture the code is for ("sm_90", "compute_90"), empty when unknown (e.g. fatbin).
    [[nodiscard]] const std::string& arch() const { return data().arch; }
    /// The program or link name it came from.
    [[nodiscard]] const std::string& name() const { return data().name; }
    /// The code. PTX includes its terminating NUL as NVRTC returns it.
    [[nodiscard]] std::span<const std::byte> bytes() const {
        const std::string& b = data().bytes;
        return std::as_bytes(std::span<const char>(b.data(), b.size()));
    }
    /// The code as text (meaningful for PTX).
    [[nodiscard]] std::string_view text() const { return data().bytes; }
    /// Compiler or linker log (warnings), possibly empty.
    [[nodiscard]] const std::string& log() const { return data().log; }
    /// The mangled name of a registered name expression. InvalidArgument listing the registered
    /// expressions when `expression` was not registered.
    [[nodiscard]] const std::string& lowered_name(std::string_view expression) const;
    /// All registered name expressions with their mangled names.
    [[nodiscard]] const std::vector<std::pair<std::string, std::string>>& lowered_names() const {
        return data().lowered_names;
    }
    /// Names of the kernels (entry points) found in PTX or cubin code; empty for LTO-IR and fatbin.
    [[nodiscard]] std::vector<std::string> kernel_names() const;
    /// Loads the code into a Module (context-independent). InvalidArgument for LTO-IR; CudaError
    /// "no CUDA driver/device" without a GPU.
    [[nodiscard]] Module load() const;

    /// Wraps existing contents (used by Program, Linker and the compile cache).
    explicit ObjectCode(std::shared_ptr<const detail::ObjectCodeData> data) noexcept : data_(std::move(data)) {}
    [[nodiscard]] const std::shared_ptr<const detail::ObjectCodeData>& shared_data() const noexcept { return data_; }

private:
    [[nodiscard]] const detail::ObjectCodeData& data() const {
        if (!data_) throw_empty();
        return *data_;
    }
    [[noreturn]] static void throw_empty();
    std::shared_ptr<const detail::ObjectCodeData> data_;
};

/// Counters of the compile cache.
struct CompileCacheStats {
    std::uint64_t memory_hits = 0;   ///< compiles answered from memory
    std::uint64_t disk_hits = 0;     ///< compiles answered from the disk cache
    std::uint64_t misses = 0;        ///< compiles that ran NVRTC
    std::uint64_t evictions = 0;     ///< entries dropped from memory to respect the capacity
    std::uint64_t disk_writes = 0;   ///< entries written to disk
    std::uint64_t disk_rejected = 0; ///< disk entries ignored (corrupt, foreign, not a regular file), then rewritten
    std::size_t size = 0;            ///< entries in memory now
    std::size_t capacity = 0;        ///< memory capacity in entries
};

/// The process-wide compile cache behind `Program::compile`: an in-memory LRU map, and a directory
/// of entries on disk shared between processes. Keys are SHA-256 digests of everything that changes
/// the output: source, in-memory header names and contents, the contents of files the source
/// includes from `include_dirs`, all options, architecture, target kind, NVRTC version, toolkit
/// include directories and name expressions. An entry stores the code with its lowered names.
/// Disk entries are written atomically (temporary file + rename); an entry that fails its header
/// or checksum checks, or is not a regular file (only regular files are opened, never through a
/// link, and a FIFO is not waited on), is ignored and rewritten. Thread-safe; concurrent compiles
/// of the same key run NVRTC once, and a failed compile's exception reaches every waiting thread.
///
/// The directory comes from GPUMATH_CACHE_DIR ("off" disables the disk cache), else
/// $XDG_CACHE_HOME/gpumath, else ~/.cache/gpumath; entries live in its "jit" subdirectory.
class CompileCache {
public:
    /// Counters since the process started or `reset_stats`.
    [[nodiscard]] CompileCacheStats stats() const;
    /// Zeroes the counters.
    void reset_stats();
    /// Drops all in-memory entries (disk entries stay).
    void clear();
    /// Sets the in-memory capacity in entries (default 256), evicting as needed; 0 keeps nothing.
    void set_capacity(std::size_t entries);
    /// The in-memory capacity in entries.
    [[nodiscard]] std::size_t capacity() const;
    /// The directory disk entries are written to; empty when the disk cache is off.
    [[nodiscard]] std::filesystem::path directory() const;
    /// Uses `directory` for disk entries (created on first write); an empty path turns the disk cache off.
    void set_directory(std::filesystem::path directory);
    /// Upper bound on the disk cache's total size in bytes (default 1 GiB); the least recently
    /// used entries are deleted when a write goes over it.
    void set_disk_limit(std::uintmax_t bytes);

    CompileCache(const CompileCache&) = delete;
    CompileCache& operator=(const CompileCache&) = delete;
    ~CompileCache();

    struct Impl;
    /// Internal.
    [[nodiscard]] Impl& impl() noexcept { return *impl_; }

private:
    friend CompileCache& compile_cache();
    CompileCache();
    std::unique_ptr<Impl> impl_;
};

/// The process-wide compile cache.
[[nodiscard]] CompileCache& compile_cache();

}  // namespace gpumath::core

namespace gpumath::detail {
/// The JIT cache directory the environment asks for: `gpumath_cache_dir` (GPUMATH_CACHE_DIR; "off",
/// "0", "none" or "false" disable: empty result), else `xdg_cache_home`/gpumath/jit, else
/// `home`/.cache/gpumath/jit; empty when none is set. Null or empty arguments count as unset.
[[nodiscard]] std::filesystem::path jit_cache_directory(const char* gpumath_cache_dir, const char* xdg_cache_home,
                                                        const char* home);
}  // namespace gpumath::detail
