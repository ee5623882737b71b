// SPDX-License-Identifier: Apache-2.0
// Private: the one way gpumath opens a library at run time (NCCL, libzstd, ...). A file is handed
// to dlopen only once it is known to be a regular ELF shared library of this machine whose
// segments lie inside it: dlopen itself blocks forever opening a FIFO and faults (SIGBUS) mapping a
// truncated file.
#pragma once

#include <dlfcn.h>

#include <optional>
#include <string>
#include <string_view>

namespace gpumath::detail {

/// What open_shared_library gives: a handle, or why there is none.
struct SharedLibrary {
    /// dlopen's handle; null when the library was not loaded. gpumath never closes it.
    void* handle = nullptr;
    /// The file loaded (as the loader names it) or the one refused; empty when no file was found.
    std::string path;
    /// Why the library was not loaded: the file and the rule it breaks, or the loader's dlerror().
    /// Empty when loaded.
    std::string error;

    /// True when loaded.
    explicit operator bool() const noexcept { return handle != nullptr; }
};

/// Opens a shared library with dlopen(`mode`) after checking the file it would load. Never throws
/// for a file it refuses, never blocks on one and never maps one that would fault.
///
/// A name with a '/' is a path (symbolic links are followed): the file must be a regular file
/// (a FIFO, socket, device or directory is refused without being opened) holding a 64-bit
/// little-endian ELF shared object (ET_DYN) for this machine's architecture, with its program
/// header table and every PT_LOAD and PT_DYNAMIC segment inside the file. Only then is it dlopened.
///
/// A bare name is first looked up among the libraries already loaded (RTLD_NOLOAD). Otherwise it
/// is searched where the loader would search and a user or the environment decides: the folders
/// of LD_LIBRARY_PATH as it is now (not as the loader read it at startup; ignored in secure-execution
/// mode, as the loader ignores it), then /etc/ld.so.cache, then the system's default folders. An
/// ELF file of another architecture is passed over, as the loader passes it over; the first other
/// file found is checked as a path and loaded or refused. When none is found, the name goes to
/// plain dlopen: the loader's own search, which adds the caller's DT_RUNPATH (and nothing here
/// checks what it finds there).
[[nodiscard]] SharedLibrary open_shared_library(std::string_view name_or_path, int mode = RTLD_NOW | RTLD_LOCAL);

/// The path that `cache`, the bytes of an /etc/ld.so.cache ("glibc-ld.so.cache1.1", alone or after
/// the old "ld.so-1.7.0" table), gives for the library `name` built for this machine's architecture
/// (the entry for the baseline folder: entries of glibc-hwcaps subfolders are passed over). Nothing
/// when the bytes are no such cache, have the other byte order or hold no such entry. Reads only
/// inside `cache`, whatever its counts and offsets say.
[[nodiscard]] std::optional<std::string> find_in_ld_so_cache(std::string_view cache, std::string_view name);

}  // namespace gpumath::detail
