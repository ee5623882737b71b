// SPDX-License-Identifier: Apache-2.0
// The compile cache: an in-memory LRU map plus a directory of entries shared between processes.
//
// Disk entry layout (little-endian, as written by this machine):
//   header  : magic "GPUMJIT\0" | u32 format version | u32 zero | u64 payload size | u64 payload checksum
//   payload : 16-byte key digest (XXH3-128) | u32 code type | str arch | str name | str log |
//             u32 count, count x (str expression, str lowered name) | str code
//   str     : u64 size | bytes
// A reader accepts an entry only when every field checks out (magic, version, exact file size,
// checksum, the key stored inside, bounds of every string) and the entry holds what the compile
// asks for (code type, architecture, program name, name expressions; a cubin's ELF architecture);
// anything else counts as a rejected entry and is overwritten by the next successful compile.
#include <gpumath/core/compile_cache.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>

#include <fmt/format.h>

#include "core/jit.hpp"
#include "detail/log.hpp"
#include "detail/lru_cache.hpp"

namespace fs = std::filesystem;

namespace gpumath::detail {

fs::path jit_cache_directory(const char* gpumath_cache_dir, const char* xdg_cache_home, const char* home) {
    const auto set = [](const char* s) { return s != nullptr && *s != '\0'; };
    if (set(gpumath_cache_dir)) {
        std::string v = gpumath_cache_dir;
        for (char& c : v) c = char(std::tolower(static_cast<unsigned char>(c)));
        if (v == "off" || v == "0" || v == "none" || v == "false" || v == "no") return {};
        return fs::path(gpumath_cache_dir) / "jit";
    }
    if (set(xdg_cache_home)) return fs::path(xdg_cache_home) / "gpumath" / "jit";
    if (set(home)) return fs::path(home) / ".cache" / "gpumath" / "jit";
    return {};
}

namespace {

constexpr char k_magic[8] = {'G', 'P', 'U', 'M', 'J', 'I', 'T', '\0'};
constexpr std::uint32_t k_format_version = 2;  // 2: XXH3-128 keys and XXH3-64 checksums
constexpr std::size_t k_header_size = 8 + 4 + 4 + 8 + 8;

void put_u32(std::string& out, std::uint32_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
void put_u64(std::string& out, std::uint64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
void put_str(std::string& out, std::string_view s) {
    put_u64(out, s.size());
    out.append(s);
}

// Bounds-checked reader over a payload; any overrun makes `ok` false.
struct Reader {
    std::string_view data;
    std::size_t pos = 0;
    bool ok = true;
    template <class T>
    T get() {
        T v{};
        if (!ok || data.size() - pos < sizeof v) {
            ok = false;
            return v;
        }
        std::memcpy(&v, data.data() + pos, sizeof v);
        pos += sizeof v;
        return v;
    }
    std::string str() {
        const auto n = get<std::uint64_t>();
        if (!ok || data.size() - pos < n) {
            ok = false;
            return {};
        }
        std::string s(data.substr(pos, n));
        pos += n;
        return s;
    }
};

}  // namespace

std::string encode_entry(const Digest& key, const ObjectCodeData& d) {
    std::string payload;
    payload.reserve(d.bytes.size() + d.log.size() + 256);
    payload.append(reinterpret_cast<const char*>(key.data()), key.size());
    put_u32(payload, std::uint32_t(d.type));
    put_str(payload, d.arch);
    put_str(payload, d.name);
    put_str(payload, d.log);
    put_u32(payload, std::uint32_t(d.lowered_names.size()));
    for (const auto& [expr, lowered] : d.lowered_names) {
        put_str(payload, expr);
        put_str(payload, lowered);
    }
    put_str(payload, d.bytes);
    std::string out;
    out.reserve(k_header_size + payload.size());
    out.append(k_magic, sizeof k_magic);
    put_u32(out, k_format_version);
    put_u32(out, 0);
    put_u64(out, payload.size());
    put_u64(out, checksum64(payload.data(), payload.size()));
    out += payload;
    return out;
}

namespace {

// Empty when `d` is what `expect` asks for, else what differs.
std::string mismatch(const ObjectCodeData& d, const CompileExpectation& expect) {
    if (d.type != expect.type)
        return fmt::format("holds {} code where {} was asked for", core::to_string(d.type),
                           core::to_string(expect.type));
    if (d.arch != expect.arch) return fmt::format("built for {} where {} was asked for", d.arch, expect.arch);
    if (d.name != expect.name)
        return fmt::format("program name \"{}\" where \"{}\" was asked for", d.name, expect.name);
    DecompressionBudget budget = decompression_budget();
    if (const CodeRead read = check_object_code(d.bytes, d.type, budget); !read.defect.empty())
        return fmt::format("its {} is not well formed: {}", core::to_string(d.type), read.defect);
    if (d.type == core::CodeType::cubin) {
        // The ELF header holds the SM number only ("sm_90" for an sm_90a cubin); one gpumath
        // cannot read says nothing either way.
        const std::string elf_arch = cubin_arch(d.bytes);
        const std::optional<Arch> asked = parse_arch(d.arch), found = parse_arch(elf_arch);
        if (!elf_arch.empty() && (!asked || !found || asked->number != found->number))
            return fmt::format("its cubin is for {}, not {}", elf_arch, d.arch);
    }
    const auto& names = d.lowered_names;
    const auto& wanted = expect.name_expressions;
    if (names.size() != wanted.size() ||
        !std::equal(names.begin(), names.end(), wanted.begin(),
                    [](const auto& stored, const std::string& e) { return stored.first == e; }))
        return "its name expressions differ from the ones asked for";
    return {};
}

}  // namespace

std::shared_ptr<ObjectCodeData> decode_entry(std::string_view file, const Digest& key, const CompileExpectation& expect,
                                             std::string& why) {
    if (file.size() < k_header_size) {
        why = "shorter than its header";
        return nullptr;
    }
    Reader h{file.substr(0, k_header_size)};
    char magic[8];
    std::memcpy(magic, file.data(), sizeof magic);
    h.pos = sizeof magic;
    const auto version = h.get<std::uint32_t>();
    (void)h.get<std::uint32_t>();
    const auto size = h.get<std::uint64_t>();
    const auto checksum = h.get<std::uint64_t>();
    if (std::memcmp(magic, k_magic, sizeof magic) != 0) {
        why = "not a gpumath JIT cache entry";
        return nullptr;
    }
    if (version != k_format_version) {
        why = fmt::format("format version {} (this gpumath writes {})", version, k_format_version);
        return nullptr;
    }
    if (size != file.size() - k_header_size) {
        why = fmt::format("payload is {} bytes, header says {} (truncated or extended)", file.size() - k_header_size,
                          size);
        return nullptr;
    }
    const std::string_view payload = file.substr(k_header_size);
    if (checksum64(payload.data(), payload.size()) != checksum) {
        why = "checksum mismatch";
        return nullptr;
    }
    Reader r{payload};
    if (payload.size() < key.size() || std::memcmp(payload.data(), key.data(), key.size()) != 0) {
        why = "key mismatch";
        return nullptr;
    }
    r.pos = key.size();
    auto d = std::make_shared<ObjectCodeData>();
    const auto type = r.get<std::uint32_t>();
    d->arch = r.str();
    d->name = r.str();
    d->log = r.str();
    const auto count = r.get<std::uint32_t>();
    for (std::uint32_t i = 0; r.ok && i < count; ++i) {
        std::string e = r.str();
        std::string l = r.str();
        d->lowered_names.emplace_back(std::move(e), std::move(l));
    }
    d->bytes = r.str();
    if (!r.ok || r.pos != payload.size() || type > std::uint32_t(core::CodeType::fatbin) || d->bytes.empty()) {
        why = "malformed payload";
        return nullptr;
    }
    d->type = core::CodeType(type);
    if (why = mismatch(*d, expect); !why.empty()) return nullptr;
    return d;
}

}  // namespace gpumath::detail

namespace gpumath::core {

struct CompileCache::Impl {
    detail::LruCache<detail::Digest, const detail::ObjectCodeData, detail::DigestHash> memory{default_capacity};

    mutable std::mutex mutex;  // guards everything below that is not atomic
    fs::path directory;
    std::uintmax_t disk_limit = std::uintmax_t(1) << 30;
    std::uintmax_t disk_estimate = 0;  // bytes on disk as last counted plus written since
    bool disk_counted = false;
    bool warned_write = false;

    // The disk's counters; the memory map counts hits, misses and evictions itself.
    std::atomic<std::uint64_t> disk_hits{0}, disk_writes{0}, disk_rejected{0};

    Impl() {
        directory = detail::jit_cache_directory(std::getenv("GPUMATH_CACHE_DIR"), std::getenv("XDG_CACHE_HOME"),
                                                std::getenv("HOME"));
    }

    fs::path dir() const {
        std::lock_guard lock(mutex);
        return directory;
    }

    static fs::path entry_path(const fs::path& d, const detail::Digest& key) {
        return d / (detail::to_hex(key) + ".jit");
    }

    std::shared_ptr<const detail::ObjectCodeData> disk_read(const fs::path& d, const detail::Digest& key,
                                                            const detail::CompileExpectation& expect) {
        const fs::path path = entry_path(d, key);
        std::string file;
        std::string why;
        switch (detail::read_regular_file(path, file, /*follow_symlinks=*/false)) {
            case detail::FileStatus::ok:
                break;
            case detail::FileStatus::missing:
                return nullptr;
            case detail::FileStatus::not_regular:
                // A FIFO here would block a plain open() forever; a link could point anywhere.
                ++disk_rejected;
                detail::log(LogLevel::warn,
                            "compile cache: ignoring {}: not a regular file (a FIFO, socket, device, directory or "
                            "symbolic link); compiling instead",
                            path.string());
                return nullptr;
            case detail::FileStatus::unreadable:
                ++disk_rejected;
                detail::log(LogLevel::info, "compile cache: ignoring {}: cannot read it", path.string());
                return nullptr;
            case detail::FileStatus::too_large:
                ++disk_rejected;
                detail::log(LogLevel::info, "compile cache: ignoring {}: larger than 4 GiB, so not an entry; not read",
                            path.string());
                return nullptr;
        }
        std::shared_ptr<detail::ObjectCodeData> data = detail::decode_entry(file, key, expect, why);
        if (!data) {
            ++disk_rejected;
            detail::log(LogLevel::info, "compile cache: ignoring {} ({}); it will be rewritten", path.string(), why);
            return nullptr;
        }
        // Mark as recently used for the size limit's LRU order; best effort.
        std::error_code ec;
        fs::last_write_time(path, fs::file_time_type::clock::now(), ec);
        return data;
    }

    void disk_write(const fs::path& d, const detail::Digest& key, const detail::ObjectCodeData& data) {
        const std::string entry = detail::encode_entry(key, data);
        const fs::path path = entry_path(d, key);
        std::error_code ec;
        fs::create_directories(d, ec);
        int error = 0;
        std::string reason;
        if (ec) reason = ec.message();
        if (ec || !detail::replace_regular_file(path, entry, error, reason)) {
            std::lock_guard lock(mutex);
            if (!warned_write) {
                warned_write = true;
                detail::log(LogLevel::warn,
                            "compile cache: cannot write to {} ({}); continuing without storing compiles on disk "
                            "(set GPUMATH_CACHE_DIR to a writable directory, or to off)",
                            d.string(), reason);
            }
            return;
        }
        ++disk_writes;
        trim_if_needed(d, entry.size(), path);
    }

    // Keeps the directory under `disk_limit` by deleting the least recently used entries (but `keep`).
    void trim_if_needed(const fs::path& d, std::uintmax_t written, const fs::path& keep) {
        std::lock_guard lock(mutex);
        disk_estimate += written;
        if (disk_counted && disk_estimate <= disk_limit) return;
        std::vector<std::pair<fs::file_time_type, std::pair<fs::path, std::uintmax_t>>> entries;
        std::uintmax_t total = 0;
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(d, ec)) {
            if (e.path().extension() != ".jit") continue;
            std::error_code e2;
            const std::uintmax_t size = e.file_size(e2);
            if (e2) continue;
            total += size;
            entries.push_back({e.last_write_time(e2), {e.path(), size}});
        }
        disk_counted = true;
        disk_estimate = total;
        if (total <= disk_limit) return;
        std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        const std::uintmax_t target = disk_limit - disk_limit / 10;
        for (const auto& [time, entry] : entries) {
            if (disk_estimate <= target) break;
            if (entry.first == keep) continue;  // never the entry just written
            if (fs::remove(entry.first, ec)) disk_estimate -= entry.second;
        }
    }
};

}  // namespace gpumath::core

namespace gpumath::detail {

// Reaches the cache's state from cached_compile (CompileCache's friend).
struct CompileCacheAccess {
    static core::CompileCache::Impl& impl(core::CompileCache& cache) noexcept { return *cache.impl_; }
};

}  // namespace gpumath::detail

namespace gpumath::core {

CompileCache::CompileCache() : impl_(std::make_unique<Impl>()) {}
CompileCache::~CompileCache() = default;

CompileCache& compile_cache() {
    static CompileCache* cache = new CompileCache();  // never destroyed: usable from static destructors
    return *cache;
}

CacheStats CompileCache::stats() const {
    CacheStats s = impl_->memory.stats();
    s.disk_hits = impl_->disk_hits.load();
    s.disk_writes = impl_->disk_writes.load();
    s.disk_rejected = impl_->disk_rejected.load();
    return s;
}

void CompileCache::reset_stats() {
    impl_->memory.reset_stats();
    impl_->disk_hits = 0;
    impl_->disk_writes = 0;
    impl_->disk_rejected = 0;
}

void CompileCache::clear() { impl_->memory.clear(); }

void CompileCache::set_capacity(std::size_t entries) { impl_->memory.set_capacity(entries); }

std::size_t CompileCache::capacity() const { return impl_->memory.capacity(); }

fs::path CompileCache::directory() const { return impl_->dir(); }

void CompileCache::set_directory(fs::path directory) {
    std::lock_guard lock(impl_->mutex);
    impl_->directory = std::move(directory);
    impl_->disk_counted = false;
    impl_->disk_estimate = 0;
    impl_->warned_write = false;
}

void CompileCache::set_disk_limit(std::uintmax_t bytes) {
    std::lock_guard lock(impl_->mutex);
    impl_->disk_limit = bytes;
    impl_->disk_counted = false;
}

}  // namespace gpumath::core

namespace gpumath::detail {

core::ObjectCode cached_compile(const Digest& key, const CompileExpectation& expect,
                                const std::function<core::ObjectCode()>& compile) {
    auto& c = CompileCacheAccess::impl(core::compile_cache());
    // The memory map is single-flight: threads missing the same key wait for one disk read or
    // NVRTC run, and all of them get a failed compile's exception.
    std::shared_ptr<const ObjectCodeData> data = c.memory.get_or_create(key, [&] {
        const fs::path dir = c.dir();
        if (!dir.empty()) {
            if (auto hit = c.disk_read(dir, key, expect)) {
                ++c.disk_hits;
                return hit;
            }
        }
        core::ObjectCode result = compile();
        if (!dir.empty()) c.disk_write(dir, key, *result.shared_data());
        return result.shared_data();
    });
    return ObjectCodeAccess::make(std::move(data));
}

}  // namespace gpumath::detail
