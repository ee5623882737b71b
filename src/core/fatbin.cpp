// SPDX-License-Identifier: Apache-2.0
// Fatbins and LTO-IR: the fatbin container and its entries walked within the file, each entry's
// compression undone within a budget and its image checked as the same kind of code given alone;
// the one check (check_object_code) every piece of device code passes before nvJitLink or the
// driver reads it; the process's decompression limits.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include <gpumath/core/object_code.hpp>
#include <gpumath/error.hpp>

#include "core/byte_reader.hpp"
#include "core/decompress.hpp"
#include "core/jit.hpp"
#include "core/object_image.hpp"
#include "detail/environment.hpp"
#include "detail/status.hpp"

namespace gpumath::detail {

namespace {

// Entry kinds the toolkit's fatbinary writes. nvJitLink reads an entry by its kind, and crashes on
// some kinds given another payload.
constexpr std::uint16_t kind_ptx = 1, kind_elf = 2, kind_ltoir = 8;
// Compression flags (u64 at 0x28 of an entry header): 0x2000 an LZ4 block, 0x8000 a Zstandard
// frame. 0x1000 marked an older compression of NVIDIA's own; the bits between are unassigned. An
// entry names one codec or none; anything else is refused, never skipped.
constexpr std::uint64_t flag_lz4 = 0x2000, flag_zstd = 0x8000, codec_bits = 0xf000;
// fatbinary compresses LTO-IR into a form of NVIDIA's own that only nvJitLink reads (neither an LZ4
// block nor a Zstandard frame), marked 0x10000 beside the codec bit. Such an image cannot be
// checked; it is accepted on LTO-IR entries alone, as LTO-IR given alone is checked no further than
// its magic.
constexpr std::uint64_t flag_opaque_ltoir = 0x10000;
// The fixed part of an entry header as fatbinary writes it (PTX and LTO-IR entries add options
// after it); the driver and nvJitLink read its fields whatever the header size says.
constexpr std::uint32_t entry_fixed_bytes = 64;
constexpr std::uint32_t ltoir_magic = 0x7f4e43ed;

enum class Codec { none, lz4, zstd, opaque };

/// One entry of a fatbin, as its header places it.
struct Entry {
    int index = 0;
    std::uint64_t offset = 0;
    std::uint16_t kind = 0;
    std::string_view header;
    std::string_view payload;
    Codec codec = Codec::none;
    std::string_view packed;  // the compressed bytes (a prefix of the payload; the rest is padding)
    std::uint64_t size = 0;   // the image's size once decompressed
};

std::string_view kind_name(std::uint16_t kind) {
    return kind == kind_ptx ? "PTX" : kind == kind_elf ? "ELF" : kind == kind_ltoir ? "LTO-IR" : "unknown";
}

std::string describe(const Entry& e) {
    const std::string_view codec = e.codec == Codec::lz4      ? ", LZ4-compressed"
                                   : e.codec == Codec::zstd   ? ", Zstandard-compressed"
                                   : e.codec == Codec::opaque ? ", compressed by fatbinary for nvJitLink"
                                                              : "";
    return fmt::format("entry {} at offset {} ({}{})", e.index, e.offset, kind_name(e.kind), codec);
}

/// The entries of `fatbin` (container: u32 magic | u16 version | u16 header size | u64 size of the
/// entries; entry: u16 kind | u16 version | u32 header size | u64 payload size | ...), each lying
/// inside the file with a header holding the fixed fields; or the first defect.
std::string walk_fatbin(std::string_view fatbin, std::vector<Entry>& out) {
    constexpr std::uint32_t magic = 0xba55ed50;
    std::uint32_t found = 0;
    std::uint16_t header = 0;
    std::uint64_t entries = 0;
    if (!read_at(fatbin, 0, found) || !read_at(fatbin, 6, header) || !read_at(fatbin, 8, entries))
        return fmt::format("it is {} bytes, shorter than a fatbin header (16)", fatbin.size());
    if (found != magic) return fmt::format("it starts with 0x{:08x}, not the fatbin magic 0x{:08x}", found, magic);
    if (header < 16) return fmt::format("its header claims {} bytes, less than the 16 it holds", header);
    if (!inside(fatbin.size(), header, entries, 1))
        return fmt::format("its header says {} bytes of entries follow its {}-byte header, but it is {} bytes", entries,
                           header, fatbin.size());
    const std::uint64_t end = header + entries;
    int count = 0;
    for (std::uint64_t at = header; at < end; ++count) {
        Entry e;
        e.index = count;
        e.offset = at;
        std::uint32_t entry_header = 0;
        std::uint64_t payload = 0;
        if (end - at < 16 || !read_at(fatbin, at, e.kind) || !read_at(fatbin, at + 4, entry_header) ||
            !read_at(fatbin, at + 8, payload))
            return fmt::format("entry {} at offset {} is cut off by the end of the entries ({})", count, at, end);
        if (entry_header < 16 || entry_header > end - at || payload > end - at - entry_header)
            return fmt::format(
                "entry {} at offset {} ({}-byte header, {}-byte payload) runs past the end of the "
                "entries ({})",
                count, at, entry_header, payload, end);
        if (entry_header < entry_fixed_bytes)
            return fmt::format("entry {} at offset {} has a {}-byte header, shorter than the {} bytes fatbinary writes",
                               count, at, entry_header, entry_fixed_bytes);
        e.header = fatbin.substr(at, entry_header);
        e.payload = fatbin.substr(at + entry_header, payload);
        out.push_back(e);
        at += entry_header + payload;
    }
    if (count == 0) return "it holds no entries";
    return {};
}

/// The entry's kind and compression, read from its header; a defect when either is not one
/// fatbinary writes or the compressed bytes do not lie inside the payload.
std::string read_entry(Entry& e) {
    if (e.kind != kind_ptx && e.kind != kind_elf && e.kind != kind_ltoir)
        return fmt::format(
            "entry {} at offset {} is of kind {}, not PTX ({}), ELF ({}) or LTO-IR ({}), the kinds the toolkit's "
            "fatbinary writes",
            e.index, e.offset, e.kind, kind_ptx, kind_elf, kind_ltoir);
    // Inside the fixed part (walk_fatbin): at 0x10 the u32 length of the image's bytes at the
    // payload's start (0: all of it; the rest is padding), at 0x14 the u32 offset inside the header
    // of a record of the compile options (a u32 offset and u32 length of their text, also inside the
    // header; 0: none), at 0x28 the u64 flags, at 0x38 the u64 size of a compressed image once
    // decompressed. nvJitLink reads these without checking them against the entry.
    std::uint32_t packed = 0, options = 0;
    std::uint64_t flags = 0;
    (void)read_at(e.header, 0x10, packed);
    (void)read_at(e.header, 0x14, options);
    (void)read_at(e.header, 0x28, flags);
    (void)read_at(e.header, 0x38, e.size);
    if (packed > e.payload.size())
        return fmt::format("entry {} at offset {} says its image is {} bytes, but its payload holds {}", e.index,
                           e.offset, packed, e.payload.size());
    if (options != 0) {
        std::uint32_t text = 0, length = 0;
        if (!read_at(e.header, options, text) || !read_at(e.header, std::uint64_t(options) + 4, length))
            return fmt::format("entry {} at offset {} places its options record at {}, past its {}-byte header",
                               e.index, e.offset, options, e.header.size());
        if (!inside(e.header.size(), text, length, 1))
            return fmt::format("entry {} at offset {} says its {} bytes of options lie at {}, past its {}-byte header",
                               e.index, e.offset, length, text, e.header.size());
    }
    const std::uint64_t codec = flags & codec_bits;
    if ((flags & flag_opaque_ltoir) != 0) {
        if (e.kind != kind_ltoir)
            return fmt::format(
                "entry {} at offset {} is of kind {} but has flags 0x{:x}, whose 0x{:x} fatbinary sets "
                "only on LTO-IR",
                e.index, e.offset, kind_name(e.kind), flags, flag_opaque_ltoir);
        e.codec = Codec::opaque;
        return {};
    }
    if (codec == 0) return {};
    if (codec != flag_lz4 && codec != flag_zstd)
        return fmt::format(
            "entry {} at offset {} has flags 0x{:x}, whose compression bits 0x{:x} name no codec or several; "
            "fatbinary marks an LZ4 block with 0x{:x} and a Zstandard frame with 0x{:x}, one of them at most",
            e.index, e.offset, flags, codec, flag_lz4, flag_zstd);
    e.codec = codec == flag_lz4 ? Codec::lz4 : Codec::zstd;
    if (packed == 0) return fmt::format("{} gives no length for its compressed bytes", describe(e));
    if (e.size == 0) return fmt::format("{} declares an empty image", describe(e));
    e.packed = e.payload.substr(0, packed);
    return {};
}

/// The budget's rules for every compressed entry, before any is decompressed: each within the
/// ratio, all together within the bytes left.
std::string check_declared_sizes(const std::vector<Entry>& entries, const DecompressionBudget& budget) {
    std::uint64_t total = 0;
    for (const Entry& e : entries) {
        if (e.codec == Codec::none || e.codec == Codec::opaque) continue;
        // size > max_ratio * packed, without the product (packed and size are at least 1).
        if ((e.size - 1) / e.packed.size() >= budget.max_ratio)
            return fmt::format(
                "{} declares an image of {} bytes from {} compressed bytes, more than {} times over; gpumath "
                "decompresses images up to that ratio (core::DecompressionLimits::max_ratio, "
                "GPUMATH_MAX_DECOMPRESSION_RATIO)",
                describe(e), e.size, e.packed.size(), budget.max_ratio);
        total = e.size > UINT64_MAX - total ? UINT64_MAX : total + e.size;
    }
    if (total > budget.remaining)
        return fmt::format(
            "its compressed images declare {} bytes together, more than the {} bytes gpumath decompresses for one "
            "read of device code (core::DecompressionLimits::max_bytes, GPUMATH_MAX_DECOMPRESSED_BYTES)",
            total, budget.remaining);
    return {};
}

/// Empty when `e`'s image needs no decoder or its decoder's library is loaded; else why it cannot be
/// read and what to do (NotSupported: the fatbin may be sound, this machine cannot check it).
std::string missing_decoder(const Entry& e) {
    if (e.codec == Codec::lz4 && !lz4_available())
        return fmt::format(
            "{} cannot be checked: liblz4.so.1 could not be loaded to decompress it; install LZ4's library (Debian "
            "and Ubuntu: liblz4-1), or write the fatbin without compression (fatbinary --compress=false){}",
            describe(e), zstd_available() ? " or with fatbinary's default compression (Zstandard)" : "");
    if (e.codec == Codec::zstd && !zstd_available())
        return fmt::format(
            "{} cannot be checked: libzstd.so.1 could not be loaded to decompress it; install Zstandard's library "
            "(Debian and Ubuntu: libzstd1), or write the fatbin without compression (fatbinary --compress=false){}",
            describe(e), lz4_available() ? " or with --compress-mode=speed (LZ4)" : "");
    return {};
}

/// The image of `e`, decompressed where it is compressed (the budget is charged); nothing with
/// `defect` set when the bytes do not make the declared size.
std::optional<std::string> decode(const Entry& e, DecompressionBudget& budget, std::string& defect) {
    if (e.codec == Codec::none) return std::string(e.payload);
    if (e.codec == Codec::opaque) return std::string();
    budget.remaining -= e.size;  // within it: check_declared_sizes
    std::optional<std::string> image = e.codec == Codec::lz4 ? lz4_block_decompress(e.packed, std::size_t(e.size))
                                                             : zstd_decompress(e.packed, std::size_t(e.size));
    if (!image)
        defect = fmt::format("{}: its {} compressed bytes do not decode to the {} bytes its header declares",
                             describe(e), e.packed.size(), e.size);
    return image;
}

/// The check of an image of kind `kind`, as the same code given alone gets.
std::string image_defect(std::string_view image, std::uint16_t kind) {
    switch (kind) {
        case kind_ptx:
            return ptx_defect(image);
        case kind_elf:
            return cubin_defect(image);
        default:
            return ltoir_defect(image);
    }
}

CodeRead read_fatbin(std::string_view fatbin, DecompressionBudget& budget, bool symbols) {
    CodeRead read;
    std::vector<Entry> entries;
    if (read.defect = walk_fatbin(fatbin, entries); !read.defect.empty()) return read;
    for (Entry& e : entries)
        if (read.defect = read_entry(e); !read.defect.empty()) return read;
    if (read.defect = check_declared_sizes(entries, budget); !read.defect.empty()) return read;
    for (const Entry& e : entries)
        if (read.defect = missing_decoder(e); !read.defect.empty()) {
            read.unsupported = true;
            return read;
        }
    read.ltoir = std::any_of(entries.begin(), entries.end(), [](const Entry& e) { return e.kind == kind_ltoir; });
    std::set<std::string> seen;
    for (const Entry& e : entries) {
        const std::optional<std::string> image = decode(e, budget, read.defect);
        if (!image) return read;
        if (e.codec == Codec::opaque) continue;
        if (const std::string defect = image_defect(*image, e.kind); !defect.empty()) {
            read.defect = fmt::format("{}: {}", describe(e), defect);
            return read;
        }
        if (!symbols || e.kind == kind_ltoir) continue;
        for (std::string& name : e.kind == kind_elf ? cubin_defined_symbols(*image) : ptx_defined_symbols(*image))
            if (seen.insert(name).second) read.fatbin_symbols.push_back(std::move(name));
    }
    return read;
}

// The limits, set from the environment when first read.
struct Limits {
    std::atomic<std::uint64_t> max_bytes;
    std::atomic<std::uint64_t> max_ratio;
    Limits() {
        const core::DecompressionLimits defaults;
        max_bytes = env_count("GPUMATH_MAX_DECOMPRESSED_BYTES", defaults.max_bytes, 0, max_code_file_bytes);
        max_ratio = env_count("GPUMATH_MAX_DECOMPRESSION_RATIO", defaults.max_ratio, 1, UINT64_MAX);
    }
};

Limits& limits() {
    static Limits l;
    return l;
}

}  // namespace

std::string ltoir_defect(std::string_view ir) {
    std::uint32_t magic = 0;
    if (!read_at(ir, 0, magic) || magic != ltoir_magic)
        return fmt::format("it does not start with LTO-IR's magic 0x{:08x} (NVRTC's and nvcc -dlto's output)",
                           ltoir_magic);
    return {};
}

DecompressionBudget decompression_budget() {
    const core::DecompressionLimits l = core::decompression_limits();
    return {.remaining = l.max_bytes, .max_ratio = l.max_ratio};
}

CodeRead check_object_code(std::string_view bytes, core::CodeType type, DecompressionBudget& budget, bool symbols) {
    switch (type) {
        case core::CodeType::ptx:
            return {.defect = ptx_defect(bytes)};
        case core::CodeType::cubin:
            return {.defect = cubin_defect(bytes)};
        case core::CodeType::ltoir:
            return {.defect = ltoir_defect(bytes), .ltoir = true};
        case core::CodeType::fatbin:
            break;
    }
    return read_fatbin(bytes, budget, symbols);
}

std::string fatbin_defect(std::string_view fatbin) {
    DecompressionBudget budget = decompression_budget();
    return read_fatbin(fatbin, budget, false).defect;
}

std::vector<std::string> fatbin_defined_symbols(std::string_view fatbin) {
    DecompressionBudget budget = decompression_budget();
    CodeRead read = read_fatbin(fatbin, budget, true);
    if (!read.defect.empty()) return {};
    return std::move(read.fatbin_symbols);
}

}  // namespace gpumath::detail

namespace gpumath::core {

DecompressionLimits decompression_limits() noexcept {
    const detail::Limits& l = detail::limits();
    return {.max_bytes = l.max_bytes.load(std::memory_order_relaxed),
            .max_ratio = l.max_ratio.load(std::memory_order_relaxed)};
}

void set_decompression_limits(const DecompressionLimits& limits) {
    constexpr const char* api = "core::set_decompression_limits";
    if (limits.max_bytes > detail::max_code_file_bytes)
        detail::throw_invalid(fmt::format("limits.max_bytes: {} is over {} (4 GiB), the most device code gpumath reads",
                                          limits.max_bytes, detail::max_code_file_bytes),
                              api);
    if (limits.max_ratio == 0)
        detail::throw_invalid(
            "limits.max_ratio: 0; an image is at least as large as its compressed bytes, so use 1 "
            "or more",
            api);
    detail::Limits& l = detail::limits();
    l.max_bytes.store(limits.max_bytes, std::memory_order_relaxed);
    l.max_ratio.store(limits.max_ratio, std::memory_order_relaxed);
}

}  // namespace gpumath::core
