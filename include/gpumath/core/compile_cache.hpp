// SPDX-License-Identifier: Apache-2.0
/// @file
/// The process-wide compile cache behind Program::compile: CompileCache (core::CacheControl plus the
/// directory it keeps entries in).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>

#include <gpumath/core/cache.hpp>

namespace gpumath::detail {
struct CompileCacheAccess;
}  // namespace gpumath::detail

namespace gpumath::core {

/// The process-wide compile cache behind `Program::compile`: an in-memory LRU map, and a directory
/// of entries on disk shared between processes. Keys are XXH3-128 digests of everything that changes
/// the output: source, in-memory header names and contents, the contents of files the source
/// includes from `include_dirs`, all options, architecture, target kind, NVRTC version, toolkit
/// include directories and name expressions. An entry stores the code with its lowered names.
/// Disk entries are written atomically (temporary file + rename); an entry that fails its header
/// or checksum checks, holds other code than the compile asks for (code type, architecture,
/// program name, name expressions, a cubin's ELF architecture), is larger than 4 GiB (not read),
/// or is not a regular file (only regular files are opened, never through a link, and a FIFO is
/// not waited on), is ignored and rewritten. Thread-safe; concurrent compiles
/// of the same key run NVRTC once, and a failed compile's exception reaches every waiting thread.
///
/// The directory comes from GPUMATH_CACHE_DIR ("off" disables the disk cache), else
/// $XDG_CACHE_HOME/gpumath, else ~/.cache/gpumath; entries live in its "jit" subdirectory.
///
/// Counters (`stats()`): `hits` are compiles answered from memory, `misses` the others, of which
/// `disk_hits` were read from disk and the rest ran NVRTC; `disk_writes` and `disk_rejected` count
/// disk entries written and ignored.
class CompileCache final : public CacheControl {
public:
    /// In-memory capacity when the process starts, in entries.
    static constexpr std::size_t default_capacity = 256;

    /// The counters, disk counters included, since the process started or `reset_stats`.
    [[nodiscard]] CacheStats stats() const override;
    /// Zeroes the counters, disk counters included.
    void reset_stats() override;
    /// Drops all in-memory entries (disk entries stay).
    void clear() override;
    /// Sets the in-memory capacity in entries (default 256), evicting as needed; 0 keeps nothing.
    void set_capacity(std::size_t entries) override;
    /// The in-memory capacity in entries.
    [[nodiscard]] std::size_t capacity() const override;
    /// The directory disk entries are written to; empty when the disk cache is off.
    [[nodiscard]] std::filesystem::path directory() const;
    /// Uses `directory` for disk entries (created on first write); an empty path turns the disk cache off.
    void set_directory(std::filesystem::path directory);
    /// Upper bound on the disk cache's total size in bytes (default 1 GiB); the least recently
    /// used entries are deleted when a write goes over it.
    void set_disk_limit(std::uintmax_t bytes);

    CompileCache(const CompileCache&) = delete;
    CompileCache& operator=(const CompileCache&) = delete;
    CompileCache(CompileCache&&) = delete;
    CompileCache& operator=(CompileCache&&) = delete;

private:
    struct Impl;
    friend struct detail::CompileCacheAccess;
    friend CompileCache& compile_cache();
    CompileCache();
    ~CompileCache();
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
