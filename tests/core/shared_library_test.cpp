// SPDX-License-Identifier: Apache-2.0
// detail::open_shared_library: files that are no loadable library (FIFO, socket, device, folder,
// truncated copy, random bytes, text, ELF of another class or machine, empty) are refused at once,
// naming the file and the rule, and never hang or fault; real libraries load by path and by name
// (through LD_LIBRARY_PATH read at run time, /etc/ld.so.cache, already loaded); and the
// ld.so.cache parser finds entries and stays inside its bytes whatever they claim. Every case that
// could hang or fault runs in a child process with a time limit.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <elf.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/child_process.hpp"
#include "common/library_files.hpp"
#include "detail/shared_library.hpp"

using gpumath::detail::find_in_ld_so_cache;
using gpumath::detail::open_shared_library;
using gpumath::detail::SharedLibrary;
using gpumath::test::read_file;
using gpumath::test::run_in_child;
using gpumath::test::system_zstd;
using gpumath::test::TempDir;
using gpumath::test::write_file;
using namespace std::chrono_literals;

namespace {

#if defined(__x86_64__)
constexpr std::uint16_t host_machine = EM_X86_64;
constexpr std::uint16_t other_machine = EM_AARCH64;
constexpr std::int32_t host_cache_flags = 0x0303;
#elif defined(__aarch64__)
constexpr std::uint16_t host_machine = EM_AARCH64;
constexpr std::uint16_t other_machine = EM_X86_64;
constexpr std::int32_t host_cache_flags = 0x0a03;
#endif
constexpr std::int32_t i386_cache_flags = 0x0003;  // FLAG_ELF_LIBC6 alone: a 32-bit x86 library

// open_shared_library(name) in a child process, with LD_LIBRARY_PATH set there when `library_path`
// is given: "loaded PATH [symbol found]" or "refused ERROR". Fails the test when the child hangs,
// dies or takes more than 5 s.
std::string open_in_child(const std::string& name, const char* library_path = nullptr, const char* symbol = nullptr) {
    const gpumath::test::ChildResult r = run_in_child([&] {
        if (library_path != nullptr) ::setenv("LD_LIBRARY_PATH", library_path, 1);
        const SharedLibrary library = open_shared_library(name);
        if (!library) return "refused " + library.error;
        std::string text = "loaded " + library.path;
        if (symbol != nullptr && ::dlsym(library.handle, symbol) != nullptr) text += " [symbol found]";
        return text;
    });
    EXPECT_TRUE(r.finished) << name << ": the child " << r.how;
    EXPECT_LT(r.elapsed, 5s) << name << ": took " << r.elapsed.count() << " ms";
    return r.output;
}

void expect_refused(const std::string& name, std::initializer_list<std::string> needles,
                    const char* library_path = nullptr) {
    const std::string out = open_in_child(name, library_path);
    EXPECT_EQ(out.rfind("refused ", 0), 0U) << out;
    for (const std::string& needle : needles)
        EXPECT_NE(out.find(needle), std::string::npos) << "message: " << out << "\nmissing: " << needle;
}

// A 64-bit ELF shared object header for this machine with a PT_LOAD over the whole file and a
// PT_DYNAMIC inside it, to be spoiled one field at a time.
struct FakeElf {
    Elf64_Ehdr header{};
    std::vector<Elf64_Phdr> segments;
    std::size_t size = 4096;

    FakeElf() {
        std::memcpy(header.e_ident, ELFMAG, SELFMAG);
        header.e_ident[EI_CLASS] = ELFCLASS64;
        header.e_ident[EI_DATA] = ELFDATA2LSB;
        header.e_ident[EI_VERSION] = EV_CURRENT;
        header.e_type = ET_DYN;
        header.e_machine = host_machine;
        header.e_version = EV_CURRENT;
        header.e_ehsize = sizeof(Elf64_Ehdr);
        header.e_phoff = sizeof(Elf64_Ehdr);
        header.e_phentsize = sizeof(Elf64_Phdr);
        Elf64_Phdr load{};
        load.p_type = PT_LOAD;
        load.p_filesz = load.p_memsz = size;
        Elf64_Phdr dynamic{};
        dynamic.p_type = PT_DYNAMIC;
        dynamic.p_offset = 2048;
        dynamic.p_filesz = dynamic.p_memsz = 256;
        segments = {load, dynamic};
    }

    [[nodiscard]] std::string bytes() const {
        std::string out(size, '\0');
        Elf64_Ehdr h = header;
        if (h.e_phnum == 0) h.e_phnum = static_cast<std::uint16_t>(segments.size());
        std::memcpy(out.data(), &h, std::min(sizeof h, size));
        for (std::size_t i = 0; i < segments.size(); ++i) {
            const std::size_t at = sizeof(Elf64_Ehdr) + i * sizeof(Elf64_Phdr);
            if (at + sizeof(Elf64_Phdr) <= size) std::memcpy(out.data() + at, &segments[i], sizeof(Elf64_Phdr));
        }
        return out;
    }
};

}  // namespace

TEST(SharedLibrary, LoadsARealLibraryByPathAndFindsItsSymbols) {
    const std::string real = system_zstd();
    if (real.empty()) GTEST_SKIP() << "no libzstd.so.1 in the system's library folders";
    // In a child, as every load here: this process keeps libzstd unloaded for the search tests.
    const gpumath::test::ChildResult r = run_in_child([&] {
        const SharedLibrary library = open_shared_library(real);
        if (!library) return "refused " + library.error;
        using Version = unsigned (*)();
        const auto version = reinterpret_cast<Version>(::dlsym(library.handle, "ZSTD_versionNumber"));
        if (version == nullptr) return std::string("no ZSTD_versionNumber");
        return "loaded " + library.path + " error '" + library.error + "' version " + std::to_string(version() / 10000);
    });
    ASSERT_TRUE(r.finished) << r.how;
    EXPECT_EQ(r.output, "loaded " + real + " error '' version 1") << "libzstd 1.x reports 1xxyy";
}

TEST(SharedLibrary, FollowsSymbolicLinksAndChecksTheirTargets) {
    const std::string real = system_zstd();
    if (real.empty()) GTEST_SKIP() << "no libzstd.so.1 in the system's library folders";
    const TempDir dir;
    ASSERT_EQ(::symlink(real.c_str(), (dir / "libgood.so").c_str()), 0);
    EXPECT_EQ(open_in_child(dir / "libgood.so", nullptr, "ZSTD_versionNumber"),
              "loaded " + (dir / "libgood.so") + " [symbol found]");
    ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
    ASSERT_EQ(::symlink((dir / "fifo").c_str(), (dir / "libfifo.so").c_str()), 0);
    expect_refused(dir / "libfifo.so", {dir / "libfifo.so", "a FIFO, not a regular file"});
}

TEST(SharedLibrary, RefusesAFifoWithoutBlocking) {
    const TempDir dir;
    ASSERT_EQ(::mkfifo((dir / "libnccl.so.2").c_str(), 0600), 0);
    expect_refused(dir / "libnccl.so.2", {"\"" + (dir / "libnccl.so.2") + "\"", "is a FIFO, not a regular file"});
}

TEST(SharedLibrary, RefusesFoldersDevicesAndSockets) {
    const TempDir dir;
    expect_refused(dir.path(), {dir.path(), "is a directory, not a regular file"});
    expect_refused("/dev/null", {"\"/dev/null\" is a character device, not a regular file"});
    const std::string socket_path = dir / "libsock.so";
    const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
    ASSERT_GE(s, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    ASSERT_LT(socket_path.size(), sizeof address.sun_path);
    std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
    ASSERT_EQ(::bind(s, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
    expect_refused(socket_path, {socket_path, "is a socket, not a regular file"});
    ::close(s);
}

TEST(SharedLibrary, RefusesATruncatedCopyOfARealLibraryNamingTheSegment) {
    const std::string real = system_zstd();
    if (real.empty()) GTEST_SKIP() << "no libzstd.so.1 in the system's library folders";
    const std::string bytes = read_file(real);
    ASSERT_GT(bytes.size(), 4096U);
    const TempDir dir;
    const std::string half = dir / "libzstd.so.1";
    ASSERT_TRUE(write_file(half, bytes.substr(0, bytes.size() / 2)));
    expect_refused(half, {half, "is truncated: segment", "PT_LOAD", "past the end of the file",
                          std::to_string(bytes.size() / 2) + " bytes"});
    // Cut inside the program header table, the file still starts like the library.
    ASSERT_TRUE(write_file(half, bytes.substr(0, 100)));
    expect_refused(half, {"is truncated: its program header table", "100 bytes"});
}

TEST(SharedLibrary, RefusesFilesThatAreNoElf) {
    const TempDir dir;
    std::mt19937 generator(20240611);
    std::string random(8192, '\0');
    for (char& c : random) c = static_cast<char>(generator() & 0xffU);
    random[0] = 0x42;  // never the ELF magic's 0x7f
    ASSERT_TRUE(write_file(dir / "random.so", random));
    expect_refused(dir / "random.so", {dir / "random.so", "is not an ELF file"});
    ASSERT_TRUE(write_file(dir / "text.so",
                           "INPUT(-lnccl)\n/* a linker script, as libc.so is one */\n" + std::string(100, ' ')));
    expect_refused(dir / "text.so", {"is not an ELF file"});
    ASSERT_TRUE(write_file(dir / "empty.so", ""));
    expect_refused(dir / "empty.so", {dir / "empty.so", "has 0 bytes, fewer than a 64-bit ELF header's 64"});
    expect_refused(dir / "absent.so", {dir / "absent.so", "does not exist"});
}

TEST(SharedLibrary, RefusesElfFilesOfAnotherClassMachineOrType) {
    const TempDir dir;
    const auto refused = [&](const FakeElf& elf, std::initializer_list<std::string> needles) {
        ASSERT_TRUE(write_file(dir / "lib.so", elf.bytes()));
        expect_refused(dir / "lib.so", needles);
    };
    FakeElf bits32;
    bits32.header.e_ident[EI_CLASS] = ELFCLASS32;
    refused(bits32, {"is a 32-bit (ELFCLASS32) ELF file; this process loads 64-bit ones"});
    FakeElf big;
    big.header.e_ident[EI_DATA] = ELFDATA2MSB;
    refused(big, {"byte order 2 (EI_DATA)", "little-endian"});
    FakeElf machine;
    machine.header.e_machine = other_machine;
    refused(machine, {"machine " + std::to_string(other_machine) + " (e_machine)",
                      "(e_machine " + std::to_string(host_machine) + ")"});
    FakeElf executable;
    executable.header.e_type = ET_EXEC;
    refused(executable, {"type 2 (e_type), not a shared library (ET_DYN, 3)"});
    FakeElf entry;
    entry.header.e_phentsize = 32;
    refused(entry, {"program headers of 32 bytes (e_phentsize)"});
    FakeElf none;
    none.segments.clear();
    none.header.e_phnum = 0;
    refused(none, {"0 program headers (e_phnum)"});
    FakeElf loadless;
    loadless.segments[0].p_type = PT_NOTE;
    refused(loadless, {"has no PT_LOAD segment"});
}

TEST(SharedLibrary, RefusesSegmentsPastTheEndWithoutOverflowing) {
    const TempDir dir;
    const auto refused = [&](const FakeElf& elf, std::initializer_list<std::string> needles) {
        ASSERT_TRUE(write_file(dir / "lib.so", elf.bytes()));
        expect_refused(dir / "lib.so", needles);
    };
    FakeElf long_load;
    long_load.segments[0].p_filesz = 4097;
    refused(long_load, {"segment 0 (PT_LOAD) holds 4097 bytes from byte 0", "(4096 bytes)"});
    FakeElf wrapping;  // p_offset + p_filesz wraps around 2^64 to a small number
    wrapping.segments[0].p_offset = UINT64_MAX - 7;
    wrapping.segments[0].p_filesz = 16;
    refused(wrapping, {"segment 0 (PT_LOAD) holds 16 bytes from byte 18446744073709551608"});
    FakeElf dynamic;
    dynamic.segments[1].p_offset = 4000;
    refused(dynamic, {"segment 1 (PT_DYNAMIC) holds 256 bytes from byte 4000"});
    FakeElf table;
    table.header.e_phoff = UINT64_MAX - 8;
    refused(table, {"is truncated: its program header table (2 entries from byte 18446744073709551607"});
    FakeElf many;
    many.header.e_phnum = 100;  // 5600 bytes of headers in a 4096-byte file
    refused(many, {"is truncated: its program header table (100 entries from byte 64"});
}

TEST(SharedLibrary, BareNamesAreSearchedInLdLibraryPathAsItIsNow) {
    const std::string real = system_zstd();
    if (real.empty()) GTEST_SKIP() << "no libzstd.so.1 in the system's library folders";
    const TempDir empty_dir, fifo_dir, copy_dir, foreign_dir;
    // A name nothing else provides, so that neither the loaded libraries nor the system's folders
    // answer first.
    const std::string name = "libgpumath-test-loader.so.1";
    ASSERT_EQ(::mkfifo((fifo_dir / name).c_str(), 0600), 0);
    ASSERT_TRUE(write_file(copy_dir / name, read_file(real)));
    FakeElf other;
    other.header.e_machine = other_machine;
    ASSERT_TRUE(write_file(foreign_dir / name, other.bytes()));

    // glibc read LD_LIBRARY_PATH when the process started; open_shared_library reads it now.
    const std::string fifo_first = empty_dir.path() + ":" + fifo_dir.path() + ":" + copy_dir.path();
    expect_refused(name, {"\"" + (fifo_dir / name) + "\" (found through LD_LIBRARY_PATH) is a FIFO"},
                   fifo_first.c_str());
    const std::string copy_path = empty_dir.path() + ";" + copy_dir.path();
    EXPECT_EQ(open_in_child(name, copy_path.c_str(), "ZSTD_versionNumber"),
              "loaded " + (copy_dir / name) + " [symbol found]");
    // An ELF file of another machine is passed over, as the loader passes it over.
    const std::string foreign_first = foreign_dir.path() + ":" + copy_dir.path();
    EXPECT_EQ(open_in_child(name, foreign_first.c_str()), "loaded " + (copy_dir / name));
    expect_refused(name, {"cannot open shared object file", "passed over \"" + (foreign_dir / name) + "\""},
                   foreign_dir.path().c_str());
    expect_refused(name, {name, "cannot open shared object file"}, empty_dir.path().c_str());
}

TEST(SharedLibrary, BareNamesComeFromLoadedLibrariesAndTheSystemCache) {
    // libc is loaded in every process: RTLD_NOLOAD finds it.
    const std::string libc = open_in_child("libc.so.6", "");
    EXPECT_EQ(libc.rfind("loaded /", 0), 0U) << libc;
    EXPECT_NE(libc.find("libc.so.6"), std::string::npos) << libc;
    // A library not loaded yet, through /etc/ld.so.cache or the default folders.
    if (system_zstd().empty()) GTEST_SKIP() << "no libzstd.so.1 in the system's library folders";
    const std::string zstd = open_in_child("libzstd.so.1", "", "ZSTD_versionNumber");
    const std::string prefix = "loaded ", suffix = " [symbol found]";
    ASSERT_TRUE(zstd.starts_with(prefix) && zstd.ends_with(suffix)) << zstd;
    EXPECT_EQ(std::filesystem::canonical(zstd.substr(prefix.size(), zstd.size() - prefix.size() - suffix.size())),
              system_zstd());
    EXPECT_EQ(open_shared_library("").error, "an empty library name");
    EXPECT_EQ(open_shared_library(std::string("libc.so.6\0x", 11)).error, "a library name holding a NUL character");
}

TEST(SharedLibrary, ALoadedLibraryIsFoundByItsSonameWithoutASearch) {
    const std::string real = system_zstd();
    if (real.empty()) GTEST_SKIP() << "no libzstd.so.1 in the system's library folders";
    const TempDir dir;
    // A copy under another file name: only its DT_SONAME (libzstd.so.1) tells what it is.
    const std::string copy = dir / "libgpumath-test-soname.so";
    ASSERT_TRUE(write_file(copy, read_file(real)));
    const gpumath::test::ChildResult r = run_in_child([&] {
        const SharedLibrary first = open_shared_library(copy);
        if (!first) return "refused " + first.error;
        const SharedLibrary again = open_shared_library("libzstd.so.1");
        return again ? "loaded " + again.path + (again.handle == first.handle ? " (same handle)" : "")
                     : "refused " + again.error;
    });
    ASSERT_TRUE(r.finished) << r.how;
    EXPECT_EQ(r.output, "loaded " + copy + " (same handle)");
}

// Run only by run_test_in_new_process: opens the library $GPUMATH_TEST_OPEN names and prints what
// happened, in a process whose loader read LD_LIBRARY_PATH at startup.
TEST(SharedLibrary, DISABLED_OpensTheLibraryTheEnvironmentNames) {
    const char* name = std::getenv("GPUMATH_TEST_OPEN");
    ASSERT_NE(name, nullptr);
    const SharedLibrary library = open_shared_library(name);
    const std::string text = library ? "loaded " + library.path : "refused " + library.error;
    std::printf("open_shared_library: %s\n", text.c_str());
    std::fflush(stdout);
}

TEST(SharedLibrary, AFifoInTheLdLibraryPathTheLoaderReadAtStartupIsRefusedNotWaitedOn) {
    // The loader's own search (dlopen of a bare name, RTLD_NOLOAD included) would open this FIFO
    // and block forever.
    const TempDir dir;
    const std::string name = "libgpumath-test-startup.so.1";
    ASSERT_EQ(::mkfifo((dir / name).c_str(), 0600), 0);
    const gpumath::test::ChildResult r =
        gpumath::test::run_test_in_new_process("SharedLibrary.DISABLED_OpensTheLibraryTheEnvironmentNames",
                                               {{"LD_LIBRARY_PATH", dir.path()}, {"GPUMATH_TEST_OPEN", name}});
    EXPECT_TRUE(r.finished) << "the test program " << r.how << "\n" << r.output;
    EXPECT_LT(r.elapsed, 5s);
    EXPECT_NE(r.output.find("open_shared_library: refused \"" + (dir / name) +
                            "\" (found through LD_LIBRARY_PATH) is a FIFO, not a regular file"),
              std::string::npos)
        << r.output;
}

namespace {

// An ld.so.cache in the new format, with entries (flags, name, path, hwcap) and optionally the old
// format's table before it.
std::string make_cache(const std::vector<std::tuple<std::int32_t, std::string, std::string, std::uint64_t>>& entries,
                       std::uint32_t old_entries = 0, std::uint8_t flags = 2) {
    std::string table(48 + 24 * entries.size(), '\0');
    std::memcpy(table.data(), "glibc-ld.so.cache1.1", 20);
    const auto count = static_cast<std::uint32_t>(entries.size());
    std::memcpy(table.data() + 20, &count, 4);
    table[28] = static_cast<char>(flags);
    std::string strings;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const auto& [entry_flags, name, path, hwcap] = entries[i];
        const auto key = static_cast<std::uint32_t>(table.size() + strings.size());
        strings += name + '\0';
        const auto value = static_cast<std::uint32_t>(table.size() + strings.size());
        strings += path + '\0';
        char* at = table.data() + 48 + 24 * i;
        std::memcpy(at, &entry_flags, 4);
        std::memcpy(at + 4, &key, 4);
        std::memcpy(at + 8, &value, 4);
        std::memcpy(at + 16, &hwcap, 8);
    }
    table += strings;
    if (old_entries == 0) return table;
    std::string old(16 + 12 * std::size_t(old_entries), '\x01');
    std::memcpy(old.data(), "ld.so-1.7.0", 11);
    std::memcpy(old.data() + 12, &old_entries, 4);
    old.resize((old.size() + 7) / 8 * 8, '\0');
    return old + table;
}

}  // namespace

TEST(LdSoCache, FindsTheEntryOfThisArchitecture) {
    const std::string cache = make_cache({
        {host_cache_flags, "libfoo.so.1", "/opt/hwcaps/libfoo.so.1", std::uint64_t(1) << 62},
        {i386_cache_flags, "libfoo.so.1", "/usr/lib/i386-linux-gnu/libfoo.so.1", 0},
        {host_cache_flags, "libfoo.so.1", "/usr/lib/host/libfoo.so.1", 0},
        {host_cache_flags, "libbar.so.2", "/usr/lib/host/libbar.so.2", 0},
        {host_cache_flags, "libbaz.so.3", "relative/libbaz.so.3", 0},
    });
    EXPECT_EQ(find_in_ld_so_cache(cache, "libfoo.so.1"), "/usr/lib/host/libfoo.so.1");
    EXPECT_EQ(find_in_ld_so_cache(cache, "libbar.so.2"), "/usr/lib/host/libbar.so.2");
    EXPECT_EQ(find_in_ld_so_cache(cache, "libbaz.so.3"), std::nullopt) << "a relative path is no answer";
    EXPECT_EQ(find_in_ld_so_cache(cache, "libfoo.so"), std::nullopt);
    EXPECT_EQ(find_in_ld_so_cache(cache, "libnccl.so.2"), std::nullopt);
    // After the old format's table (ldconfig's "compat" format, glibc before 2.32).
    for (const std::uint32_t old_entries : {1U, 2U, 7U})
        EXPECT_EQ(find_in_ld_so_cache(make_cache({{host_cache_flags, "libfoo.so.1", "/x/libfoo.so.1", 0}}, old_entries),
                                      "libfoo.so.1"),
                  "/x/libfoo.so.1")
            << old_entries << " old entries";
    // Byte order unknown (0) is read; big-endian (3) and invalid (1) are not.
    EXPECT_EQ(find_in_ld_so_cache(make_cache({{host_cache_flags, "a.so", "/a.so", 0}}, 0, 0), "a.so"), "/a.so");
    EXPECT_EQ(find_in_ld_so_cache(make_cache({{host_cache_flags, "a.so", "/a.so", 0}}, 0, 3), "a.so"), std::nullopt);
    EXPECT_EQ(find_in_ld_so_cache(make_cache({{host_cache_flags, "a.so", "/a.so", 0}}, 0, 1), "a.so"), std::nullopt);
    EXPECT_EQ(find_in_ld_so_cache("", "a.so"), std::nullopt);
    EXPECT_EQ(find_in_ld_so_cache("ld.so-1.7.0", "a.so"), std::nullopt);
}

TEST(LdSoCache, StaysInsideBytesThatLie) {
    const std::string cache = make_cache({{host_cache_flags, "libfoo.so.1", "/usr/lib/libfoo.so.1", 0}});
    // Every prefix, each in its own allocation so that AddressSanitizer sees a read past it: only
    // the whole cache answers (the path's NUL is the last byte).
    for (std::size_t n = 0; n < cache.size(); ++n) {
        const std::string prefix = cache.substr(0, n);
        EXPECT_EQ(find_in_ld_so_cache(prefix, "libfoo.so.1"), std::nullopt) << n << " bytes";
    }
    EXPECT_EQ(find_in_ld_so_cache(cache, "libfoo.so.1"), "/usr/lib/libfoo.so.1");
    // A count far past the file, offsets past the end, a string without its NUL.
    std::string lying = cache;
    const std::uint32_t huge = 0xffffffffU;
    std::memcpy(lying.data() + 20, &huge, 4);
    EXPECT_EQ(find_in_ld_so_cache(lying, "libfoo.so.1"), std::nullopt);
    lying = cache;
    std::memcpy(lying.data() + 48 + 4, &huge, 4);
    EXPECT_EQ(find_in_ld_so_cache(lying, "libfoo.so.1"), std::nullopt);
    lying = cache;
    std::memcpy(lying.data() + 48 + 8, &huge, 4);
    EXPECT_EQ(find_in_ld_so_cache(lying, "libfoo.so.1"), std::nullopt);
    lying = cache;
    lying.back() = 'x';
    EXPECT_EQ(find_in_ld_so_cache(lying, "libfoo.so.1"), std::nullopt);
    // An old table whose count puts the new one past the end.
    std::string old = make_cache({{host_cache_flags, "a.so", "/a.so", 0}}, 1);
    const std::uint32_t many = 0x10000000U;
    std::memcpy(old.data() + 12, &many, 4);
    EXPECT_EQ(find_in_ld_so_cache(old, "a.so"), std::nullopt);
}

TEST(LdSoCache, ReadsThisMachinesCache) {
    const std::string cache = read_file("/etc/ld.so.cache");
    if (cache.empty()) GTEST_SKIP() << "no /etc/ld.so.cache on this machine";
    const std::optional<std::string> libc = find_in_ld_so_cache(cache, "libc.so.6");
    ASSERT_TRUE(libc.has_value());
    EXPECT_TRUE(libc->starts_with("/") && libc->ends_with("/libc.so.6")) << *libc;
    struct stat st {};
    EXPECT_EQ(::stat(libc->c_str(), &st), 0) << *libc;
}
