// SPDX-License-Identifier: Apache-2.0
// Checked dlopen: resolves a library name as the loader would, checks the file it finds (regular,
// ELF of this machine, not truncated) and only then hands that path to dlopen.
#include "detail/shared_library.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace gpumath::detail {
namespace {

static_assert(std::endian::native == std::endian::little, "gpumath reads ELF headers and ld.so.cache as little-endian");

// The host's ELF machine, its name, the flags its entries carry in ld.so.cache (FLAG_ELF_LIBC6 with
// the architecture's FLAG_*_LIB64, glibc's _DL_CACHE_DEFAULT_ID) and the loader's default folders.
#if defined(__x86_64__)
constexpr std::uint16_t host_machine = EM_X86_64;
constexpr std::string_view host_machine_name = "x86-64";
constexpr std::int32_t host_cache_flags = 0x0303;
constexpr std::array<const char*, 6> default_folders{
    "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"};
#elif defined(__aarch64__)
constexpr std::uint16_t host_machine = EM_AARCH64;
constexpr std::string_view host_machine_name = "AArch64";
constexpr std::int32_t host_cache_flags = 0x0a03;
constexpr std::array<const char*, 6> default_folders{
    "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"};
#else
#error "gpumath's library loader (src/core/shared_library.cpp) knows x86-64 and AArch64 hosts only"
#endif

constexpr const char* ld_so_cache_path = "/etc/ld.so.cache";
// Real caches hold a few hundred KiB; a larger file is not read.
constexpr std::uint64_t ld_so_cache_limit = std::uint64_t(64) << 20U;

// An open file descriptor, closed when it goes.
class FileDescriptor {
public:
    explicit FileDescriptor(int fd) noexcept : fd_(fd) {}
    ~FileDescriptor() {
        if (fd_ >= 0) (void)::close(fd_);
    }
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    FileDescriptor(FileDescriptor&&) = delete;
    FileDescriptor& operator=(FileDescriptor&&) = delete;
    [[nodiscard]] int get() const noexcept { return fd_; }

private:
    int fd_;
};

// Never blocks on a FIFO (O_NONBLOCK) and never makes a terminal the controlling one (O_NOCTTY).
int open_for_reading(const char* path) noexcept {
    int fd = -1;
    do {
        fd = ::open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    } while (fd < 0 && errno == EINTR);
    return fd;
}

// Reads exactly `out.size()` bytes at `offset`; false when the file ends first or a read fails.
bool read_at(int fd, std::uint64_t offset, std::span<std::byte> out) noexcept {
    std::size_t done = 0;
    while (done < out.size()) {
        const ssize_t got = ::pread(fd, out.data() + done, out.size() - done, off_t(offset + done));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false;
        done += std::size_t(got);
    }
    return true;
}

std::string_view file_type_name(mode_t mode) noexcept {
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISDIR(mode)) return "a directory";
    return "a special file";
}

std::string not_regular(mode_t mode) {
    return fmt::format("is {}, not a regular file (shared libraries are loaded from regular files only)",
                       file_type_name(mode));
}

// What a file turned out to be. `passed_over`: an ELF file of another class, byte order or machine,
// or one this process may not read; the loader goes on searching past such files, and so does
// open_shared_library (a path given as such is refused for them).
enum class Verdict { loadable, absent, passed_over, refused };

struct Checked {
    Verdict verdict = Verdict::refused;
    std::string reason;  // a predicate of the file: "is a FIFO, not a regular file..."
};

Checked refused(std::string reason) { return {Verdict::refused, std::move(reason)}; }
Checked foreign(std::string reason) { return {Verdict::passed_over, std::move(reason)}; }

// Errors of stat and open: a missing file is searched further, as is one this process may not read.
Checked failed(const char* what, int error) {
    if (error == ENOENT || error == ENOTDIR) return {Verdict::absent, "does not exist"};
    std::string reason = fmt::format("cannot be {}: {}", what, std::strerror(error));
    return {error == EACCES ? Verdict::passed_over : Verdict::refused, std::move(reason)};
}

std::string_view segment_type_name(std::uint32_t type) noexcept { return type == PT_LOAD ? "PT_LOAD" : "PT_DYNAMIC"; }

// The program header table and the segments the loader maps (PT_LOAD) or reads (PT_DYNAMIC) lie
// inside the file: mapping a segment past the end of a truncated copy is what faults.
Checked check_segments(int fd, std::uint64_t size, const Elf64_Ehdr& header) {
    if (header.e_phentsize != sizeof(Elf64_Phdr))
        return refused(fmt::format("has program headers of {} bytes (e_phentsize); 64-bit ELF's are {} bytes",
                                   header.e_phentsize, sizeof(Elf64_Phdr)));
    if (header.e_phnum == 0 || header.e_phnum == PN_XNUM)
        return refused(
            fmt::format("has {} program headers (e_phnum); a shared library has 1 to {}", header.e_phnum, PN_XNUM - 1));
    const std::uint64_t table = std::uint64_t(header.e_phnum) * sizeof(Elf64_Phdr);  // < 2^22: no overflow
    if (header.e_phoff > size || table > size - header.e_phoff)
        return refused(
            fmt::format("is truncated: its program header table ({} entries from byte {}, e_phoff) ends "
                        "past the end of the file ({} bytes)",
                        header.e_phnum, header.e_phoff, size));
    std::vector<Elf64_Phdr> segments(header.e_phnum);
    if (!read_at(fd, header.e_phoff, std::as_writable_bytes(std::span(segments))))
        return refused("could not be read in full (did it change while being checked?)");
    bool loads = false;
    for (std::size_t i = 0; i < segments.size(); ++i) {
        const Elf64_Phdr& s = segments[i];
        if (s.p_type != PT_LOAD && s.p_type != PT_DYNAMIC) continue;
        loads = loads || s.p_type == PT_LOAD;
        // A segment of no file bytes (all zero-filled memory) maps nothing from the file.
        if (s.p_filesz != 0 && (s.p_offset > size || s.p_filesz > size - s.p_offset))
            return refused(
                fmt::format("is truncated: segment {} ({}) holds {} bytes from byte {} (p_filesz, "
                            "p_offset), past the end of the file ({} bytes)",
                            i, segment_type_name(s.p_type), s.p_filesz, s.p_offset, size));
    }
    if (!loads) return refused("has no PT_LOAD segment, so it is no shared library");
    return {Verdict::loadable, {}};
}

Checked check_elf(int fd, std::uint64_t size) {
    Elf64_Ehdr header{};
    if (size < sizeof header)
        return refused(fmt::format("has {} bytes, fewer than a 64-bit ELF header's {}: not a shared library", size,
                                   sizeof header));
    if (!read_at(fd, 0, std::as_writable_bytes(std::span(&header, 1))))
        return refused("could not be read in full (did it change while being checked?)");
    if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
        return refused("is not an ELF file (it does not start with 7f 45 4c 46), so it is no shared library");
    if (header.e_ident[EI_CLASS] != ELFCLASS64)
        return foreign(fmt::format("is a {} ELF file; this process loads 64-bit ones (ELFCLASS64)",
                                   header.e_ident[EI_CLASS] == ELFCLASS32
                                       ? std::string("32-bit (ELFCLASS32)")
                                       : fmt::format("class {} (EI_CLASS)", header.e_ident[EI_CLASS])));
    if (header.e_ident[EI_DATA] != ELFDATA2LSB)
        return foreign(
            fmt::format("is an ELF file of byte order {} (EI_DATA); this process loads little-endian ones "
                        "(ELFDATA2LSB, {})",
                        header.e_ident[EI_DATA], ELFDATA2LSB));
    if (header.e_machine != host_machine)
        return foreign(fmt::format("is an ELF file for machine {} (e_machine); this process is {} (e_machine {})",
                                   header.e_machine, host_machine_name, host_machine));
    if (header.e_type != ET_DYN)
        return refused(fmt::format("is an ELF file of type {} (e_type), not a shared library (ET_DYN, {})",
                                   header.e_type, ET_DYN));
    return check_segments(fd, size, header);
}

// Looks at a file without opening it first, so that a device is never opened (opening one may act),
// then opens it and checks what the descriptor refers to, so that the checks and the reads are of
// the same file.
Checked check_library_file(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return failed("examined", errno);
    if (!S_ISREG(st.st_mode)) return refused(not_regular(st.st_mode));
    const FileDescriptor fd(open_for_reading(path.c_str()));
    if (fd.get() < 0) return failed("opened", errno);
    if (::fstat(fd.get(), &st) != 0) return failed("examined", errno);
    if (!S_ISREG(st.st_mode)) return refused(not_regular(st.st_mode));
    return check_elf(fd.get(), std::uint64_t(st.st_size));
}

// The DT_SONAME of a loaded object, read from its dynamic section in memory; empty when it has
// none or the section does not hold together. Every address read is checked to lie inside one of
// the object's readable PT_LOAD segments. The loader relocates the string table's address in place
// on most objects but not on all (a read-only dynamic section, the vDSO): whichever of the two
// readings lies inside the object is the one.
std::string_view soname_of(const dl_phdr_info& info) noexcept {
    const std::span<const ElfW(Phdr)> segments(info.dlpi_phdr, info.dlpi_phnum);
    // The bytes from `address` to the end of the readable segment holding it; empty outside.
    const auto readable = [&](std::uint64_t address) -> std::span<const char> {
        for (const ElfW(Phdr) & s : segments) {
            const std::uint64_t start = info.dlpi_addr + s.p_vaddr;
            if (s.p_type == PT_LOAD && (s.p_flags & PF_R) != 0 && address >= start && address - start < s.p_memsz)
                // NOLINTNEXTLINE(performance-no-int-to-ptr): an address inside a mapped segment
                return {reinterpret_cast<const char*>(address), std::size_t(s.p_memsz - (address - start))};
        }
        return {};
    };
    std::span<const char> dynamic_bytes;
    for (const ElfW(Phdr) & s : segments)
        if (s.p_type == PT_DYNAMIC) dynamic_bytes = readable(info.dlpi_addr + s.p_vaddr);
    std::uint64_t strtab = 0, strsz = 0, soname = 0;
    bool has_soname = false;
    for (std::size_t at = 0; at + sizeof(ElfW(Dyn)) <= dynamic_bytes.size(); at += sizeof(ElfW(Dyn))) {
        ElfW(Dyn) entry{};
        std::memcpy(&entry, dynamic_bytes.data() + at, sizeof entry);
        if (entry.d_tag == DT_NULL) break;
        if (entry.d_tag == DT_STRTAB) strtab = entry.d_un.d_ptr;
        if (entry.d_tag == DT_STRSZ) strsz = entry.d_un.d_val;
        if (entry.d_tag == DT_SONAME) {
            soname = entry.d_un.d_val;
            has_soname = true;
        }
    }
    if (!has_soname || soname >= strsz) return {};
    for (const std::uint64_t table : {strtab, strtab + info.dlpi_addr}) {
        const std::span<const char> bytes = readable(table + soname);
        if (bytes.empty()) continue;
        const std::size_t limit = std::min<std::uint64_t>(bytes.size(), strsz - soname);
        const std::string_view text(bytes.data(), limit);
        if (const std::size_t end = text.find('\0'); end != std::string_view::npos) return text.substr(0, end);
    }
    return {};
}

// The path of an object already loaded as `name`: its file is named so, or its DT_SONAME is `name`,
// as dlopen would match it. Read from the loader's list in memory, because dlopen(RTLD_NOLOAD)
// searches the folders when the name is not loaded, opening files on the way (and blocks forever
// on a FIFO there). Only objects known by an absolute path, which dlopen matches without a search.
std::string find_loaded(std::string_view name) {
    struct Match {
        std::string_view name;
        std::string path;
    } match{name, {}};
    ::dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* data) noexcept -> int {
            auto& m = *static_cast<Match*>(data);
            if (info->dlpi_name == nullptr || info->dlpi_name[0] != '/') return 0;
            const std::string_view path(info->dlpi_name);
            if (path.substr(path.rfind('/') + 1) != m.name && soname_of(*info) != m.name) return 0;
            try {
                m.path = path;
            } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory: not found
                return 0;
            }
            return 1;
        },
        &match);
    return match.path;
}

// The file the loader loaded for `handle`, as its link map names it.
std::string loaded_path(void* handle) {
    link_map* map = nullptr;
    if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr) return {};
    return map->l_name;
}

std::string loader_error() {
    const char* why = ::dlerror();
    return why != nullptr ? std::string(why) : std::string("dlopen failed for an unknown reason");
}

// dlopen of a file that passed check_library_file.
SharedLibrary load_checked(const std::string& path, int mode) {
    SharedLibrary library;
    library.path = path;
    library.handle = ::dlopen(path.c_str(), mode);
    if (library.handle == nullptr) library.error = loader_error();
    return library;
}

SharedLibrary open_path(const std::string& path, int mode) {
    Checked checked = check_library_file(path);
    if (checked.verdict == Verdict::loadable) return load_checked(path, mode);
    SharedLibrary library;
    if (checked.verdict != Verdict::absent) library.path = path;
    library.error = fmt::format("\"{}\" {}", path, checked.reason);
    return library;
}

// The search of a bare name through the places outside the program's own DT_RUNPATH.
class Search {
public:
    Search(std::string_view name, int mode) : name_(name), mode_(mode) {}

    // The library from the first file found at `path`: loaded, or refused. Nothing when there is
    // no file there, or an ELF file of another architecture (noted for the final error).
    std::optional<SharedLibrary> try_file(const std::string& path, std::string_view source) {
        Checked checked = check_library_file(path);
        if (checked.verdict == Verdict::loadable) return load_checked(path, mode_);
        if (checked.verdict == Verdict::absent) return std::nullopt;
        if (checked.verdict == Verdict::passed_over) {
            passed_over_ +=
                fmt::format("; passed over \"{}\" (found through {}), which {}", path, source, checked.reason);
            return std::nullopt;
        }
        SharedLibrary library;
        library.path = path;
        library.error = fmt::format("\"{}\" (found through {}) {}", path, source, checked.reason);
        return library;
    }

    std::optional<SharedLibrary> in_folder(std::string_view folder, std::string_view source) {
        // An empty entry of a search path means the current folder, as it does to the loader.
        std::string path = folder.empty() ? std::string(".") : std::string(folder);
        if (path.back() != '/') path += '/';
        path += name_;
        return try_file(path, source);
    }

    std::optional<SharedLibrary> in_library_path() {
        // secure_getenv: the loader ignores LD_LIBRARY_PATH in secure-execution (setuid) processes;
        // set but empty is unset, to the loader too.
        const char* value = ::secure_getenv("LD_LIBRARY_PATH");
        if (value == nullptr || *value == '\0') return std::nullopt;
        std::string_view rest(value);
        while (true) {
            const std::size_t end = rest.find_first_of(":;");
            const std::string_view folder = rest.substr(0, end);
            // A folder with a dynamic string token ($ORIGIN, $LIB, $PLATFORM) is the loader's to expand.
            if (folder.find('$') == std::string_view::npos)
                if (auto found = in_folder(folder, "LD_LIBRARY_PATH")) return found;
            if (end == std::string_view::npos) return std::nullopt;
            rest.remove_prefix(end + 1);
        }
    }

    std::optional<SharedLibrary> in_cache() {
        const std::string cache = read_cache();
        if (cache.empty()) return std::nullopt;
        const std::optional<std::string> path = find_in_ld_so_cache(cache, name_);
        if (!path) return std::nullopt;
        return try_file(*path, ld_so_cache_path);
    }

    std::optional<SharedLibrary> in_default_folders() {
        for (const char* folder : default_folders)
            if (auto found = in_folder(folder, "the system's default folders")) return found;
        return std::nullopt;
    }

    // Plain dlopen: the loader's own search, the only one that sees the caller's DT_RUNPATH.
    SharedLibrary by_the_loader() {
        SharedLibrary library;
        library.handle = ::dlopen(name_.c_str(), mode_);
        if (library.handle == nullptr) library.error = loader_error() + passed_over_;
        else library.path = loaded_path(library.handle);
        return library;
    }

private:
    // Read, not mapped: a mapped file that shrinks faults on access.
    static std::string read_cache() {
        struct stat st {};
        if (::stat(ld_so_cache_path, &st) != 0 || !S_ISREG(st.st_mode)) return {};
        const FileDescriptor fd(open_for_reading(ld_so_cache_path));
        if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
        const auto size = std::uint64_t(st.st_size);
        if (size > ld_so_cache_limit) return {};
        std::string bytes(size, '\0');
        if (!read_at(fd.get(), 0, std::as_writable_bytes(std::span(bytes.data(), bytes.size())))) return {};
        return bytes;
    }

    std::string name_;
    int mode_;
    std::string passed_over_;
};

// Reads a T stored at `at` in `bytes`; false when it does not lie inside.
template <class T>
bool load(std::string_view bytes, std::uint64_t at, T& out) noexcept {
    if (at > bytes.size() || sizeof(T) > bytes.size() - at) return false;
    std::memcpy(&out, bytes.data() + at, sizeof(T));
    return true;
}

// The NUL-terminated string at `at` in `bytes`; nothing when it does not end inside.
std::optional<std::string_view> string_at(std::string_view bytes, std::uint64_t at) noexcept {
    if (at >= bytes.size()) return std::nullopt;
    const std::string_view rest = bytes.substr(at);
    const std::size_t end = rest.find('\0');
    if (end == std::string_view::npos) return std::nullopt;
    return rest.substr(0, end);
}

}  // namespace

std::optional<std::string> find_in_ld_so_cache(std::string_view cache, std::string_view name) {
    // The layout, from glibc's dl-cache.h. The old table: "ld.so-1.7.0", a u32 count at byte 12,
    // 12-byte entries from byte 16; the new table follows it aligned to 8 bytes, or starts the file.
    // The new table: "glibc-ld.so.cache1.1", u32 count at 20, flags at 28 (low two bits: 0 byte order
    // unknown, 2 little-endian, 3 big-endian), 24-byte entries from byte 48: i32 flags, u32 offsets
    // of the name and the path, u32 unused, u64 hwcap. Offsets count from the new table's start.
    constexpr std::string_view old_magic = "ld.so-1.7.0";
    constexpr std::string_view new_magic = "glibc-ld.so.cache1.1";
    constexpr std::uint64_t old_header = 16, old_entry = 12, new_header = 48, new_entry = 24;
    std::uint64_t start = 0;
    if (cache.substr(0, old_magic.size()) == old_magic) {
        std::uint32_t old_count = 0;
        if (!load(cache, 12, old_count)) return std::nullopt;
        start = (old_header + old_count * old_entry + 7) & ~std::uint64_t(7);  // < 2^37: no overflow
        if (start > cache.size()) return std::nullopt;
    }
    const std::string_view table = cache.substr(start);
    if (table.substr(0, new_magic.size()) != new_magic) return std::nullopt;
    std::uint32_t count = 0;
    std::uint8_t flags = 0;
    if (!load(table, 20, count) || !load(table, 28, flags) || table.size() < new_header) return std::nullopt;
    if (const unsigned order = flags & 3U; order != 0 && order != 2) return std::nullopt;
    if (count > (table.size() - new_header) / new_entry) return std::nullopt;
    for (std::uint64_t i = 0; i < count; ++i) {
        const std::uint64_t at = new_header + i * new_entry;
        std::int32_t entry_flags = 0;
        std::uint32_t key = 0, value = 0;
        std::uint64_t hwcap = 0;
        (void)load(table, at, entry_flags);
        (void)load(table, at + 4, key);
        (void)load(table, at + 8, value);
        (void)load(table, at + 16, hwcap);
        if (entry_flags != host_cache_flags || hwcap != 0) continue;
        if (string_at(table, key) != name) continue;
        // Paths are absolute; anything else would be resolved against the current folder.
        const std::optional<std::string_view> path = string_at(table, value);
        if (path && path->substr(0, 1) == "/") return std::string(*path);
    }
    return std::nullopt;
}

SharedLibrary open_shared_library(std::string_view name_or_path, int mode) {
    SharedLibrary library;
    if (name_or_path.empty()) {
        library.error = "an empty library name";
        return library;
    }
    if (name_or_path.find('\0') != std::string_view::npos) {
        library.error = "a library name holding a NUL character";
        return library;
    }
    const std::string name(name_or_path);
    if (name.find('/') != std::string::npos) return open_path(name, mode);
    if (const std::string loaded = find_loaded(name); !loaded.empty()) {
        // Matches the loaded object by name, so the loader opens no file.
        if (void* handle = ::dlopen(loaded.c_str(), mode | RTLD_NOLOAD); handle != nullptr) {
            library.handle = handle;
            library.path = loaded_path(handle);
            return library;
        }
        (void)::dlerror();  // not in this namespace: searched below as if not loaded
    }
    Search search(name, mode);
    if (auto found = search.in_library_path()) return *std::move(found);
    if (auto found = search.in_cache()) return *std::move(found);
    if (auto found = search.in_default_folders()) return *std::move(found);
    return search.by_the_loader();
}

}  // namespace gpumath::detail
