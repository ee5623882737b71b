// SPDX-License-Identifier: Apache-2.0
// ObjectCode: construction from memory and files, saving, lowered names, kernel names.
#include <gpumath/core/object_code.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/decompress.hpp"
#include "core/jit.hpp"
#include <gpumath/core/module.hpp>
#include "detail/identifier.hpp"
#include "detail/scope_exit.hpp"
#include "detail/status.hpp"
#include <gpumath/error.hpp>

namespace fs = std::filesystem;

namespace gpumath::detail {

std::vector<std::string> ptx_entry_names(std::string_view ptx) {
    std::vector<std::string> names;
    std::size_t pos = 0;
    while ((pos = ptx.find(".entry", pos)) != std::string_view::npos) {
        pos += 6;
        if (pos >= ptx.size() || (ptx[pos] != ' ' && ptx[pos] != '\t')) continue;
        const std::size_t start = ptx.find_first_not_of(" \t", pos);
        if (start == std::string_view::npos) break;
        const std::size_t end = ptx.find_first_of("( \t\r\n", start);
        if (end == std::string_view::npos) break;
        names.emplace_back(ptx.substr(start, end - start));
        pos = end;
    }
    return names;
}

namespace {

// Little-endian reads at an offset, failing (false) on overrun.
template <class T>
bool read_at(std::string_view data, std::uint64_t offset, T& out) {
    if (offset > data.size() || data.size() - offset < sizeof(T)) return false;
    std::memcpy(&out, data.data() + offset, sizeof(T));
    return true;
}

bool is_elf64(std::string_view elf) {
    return elf.size() >= 64 &&
           std::memcmp(elf.data(),
                       "\x7f"
                       "ELF",
                       4) == 0 &&
           elf[4] == 2 /* 64-bit */ && elf[5] == 1 /* little-endian */;
}

// ELF64 constants a cubin uses (System V gABI).
constexpr std::uint32_t sht_symtab = 2, sht_strtab = 3, sht_rela = 4, sht_nobits = 8, sht_rel = 9, sht_dynsym = 11;
// CUDA's own sections that hold no bytes in the file (their size is device memory): .nv.global
// (globals, managed variables), .nv.local.<kernel>, .nv.shared.<kernel> (static shared memory) and
// .nv.shared.reserved.<n> of relocatable code.
constexpr std::uint32_t sht_cuda_global = 0x70000007, sht_cuda_local = 0x70000009, sht_cuda_shared = 0x7000000a,
                        sht_cuda_reserved_shared = 0x70000015;
constexpr std::uint16_t shn_loreserve = 0xff00, shn_xindex = 0xffff;
constexpr std::uint64_t section_header_bytes = 64, program_header_bytes = 56, symbol_bytes = 24;

// True when `count` records of `size` bytes at `offset` lie inside a file of `file` bytes.
bool inside(std::uint64_t file, std::uint64_t offset, std::uint64_t count, std::uint64_t size) {
    if (offset > file) return false;
    return size == 0 || count <= (file - offset) / size;
}

// The fields of an ELF64 section header gpumath reads.
struct Section {
    std::uint32_t name = 0, type = 0, link = 0, info = 0;
    std::uint64_t offset = 0, size = 0, entsize = 0;
};

// Section header `i` of the table at `shoff` with headers of `header_bytes`; false when it does not
// lie inside `elf`.
bool read_section(std::string_view elf, std::uint64_t shoff, std::uint64_t header_bytes, std::uint64_t i, Section& s) {
    const std::uint64_t at = shoff + i * header_bytes;
    return read_at(elf, at + 0x00, s.name) && read_at(elf, at + 0x04, s.type) && read_at(elf, at + 0x18, s.offset) &&
           read_at(elf, at + 0x20, s.size) && read_at(elf, at + 0x28, s.link) && read_at(elf, at + 0x2c, s.info) &&
           read_at(elf, at + 0x38, s.entsize);
}

}  // namespace

namespace {

// One symbol of an ELF symbol table: its name and the fields gpumath reads.
struct ElfSymbol {
    std::string_view name;
    std::uint8_t info = 0, other = 0;
    std::uint16_t section = 0;
};

// Calls `f` for each named symbol of `elf`'s symbol tables. A hostile ELF may point many section
// headers at one symbol table: each (offset, size) range is read once, and at most as many
// symbols are visited as the file can hold. Stops quietly at the first structure that does not
// lie inside the file.
template <class F>
void for_each_symbol(std::string_view elf, F&& f) {
    if (!is_elf64(elf)) return;
    std::uint64_t shoff = 0;
    std::uint16_t shentsize = 0, shnum = 0;
    if (!read_at(elf, 0x28, shoff) || !read_at(elf, 0x3a, shentsize) || !read_at(elf, 0x3c, shnum)) return;
    if (shentsize < 64) return;
    std::set<std::pair<std::uint64_t, std::uint64_t>> visited;
    std::uint64_t budget = elf.size() / symbol_bytes;
    // Symbols may point anywhere into a string table, so a hostile file can make each name most of
    // it: the bytes of all names read together stay within a few times the file's size.
    std::uint64_t name_budget = 4 * std::uint64_t(elf.size()) + 4096;
    for (std::uint32_t i = 0; i < shnum; ++i) {
        Section symtab, strings;
        if (!read_section(elf, shoff, shentsize, i, symtab)) return;
        if (symtab.type != sht_symtab || symtab.entsize < symbol_bytes) continue;
        if (!visited.emplace(symtab.offset, symtab.size).second) continue;
        if (symtab.link >= shnum || !read_section(elf, shoff, shentsize, symtab.link, strings)) return;
        if (strings.offset > elf.size() || elf.size() - strings.offset < strings.size) return;
        const std::string_view strtab = elf.substr(strings.offset, strings.size);
        for (std::uint64_t s = 0; s + symtab.entsize <= symtab.size; s += symtab.entsize) {
            if (budget == 0) return;
            --budget;
            std::uint32_t name_off = 0;
            ElfSymbol sym;
            if (!read_at(elf, symtab.offset + s, name_off) || !read_at(elf, symtab.offset + s + 4, sym.info) ||
                !read_at(elf, symtab.offset + s + 5, sym.other) || !read_at(elf, symtab.offset + s + 6, sym.section))
                return;
            if (name_off >= strtab.size()) continue;
            const std::string_view rest =
                strtab.substr(name_off, std::size_t(std::min<std::uint64_t>(strtab.size() - name_off, name_budget)));
            const std::size_t length = rest.find('\0');
            if (length == std::string_view::npos) {
                if (rest.size() == name_budget) return;  // the names' budget is spent
                continue;
            }
            name_budget -= length + 1;
            if (length == 0) continue;
            sym.name = rest.substr(0, length);
            f(sym);
        }
    }
}

// STT_CUDA_OBJECT (STT_LOPROC + 0): CUDA's device variables (__device__, __constant__).
constexpr std::uint8_t stt_object = 1, stt_func = 2, stt_cuda_object = 13, stb_global = 1;

}  // namespace

std::vector<std::string> cubin_entry_names(std::string_view elf) {
    std::vector<std::string> names;
    std::set<std::string_view> seen;
    for_each_symbol(elf, [&](const ElfSymbol& sym) {
        // STT_FUNC symbols marked as CUDA entry points (st_other bit 0x10) are kernels.
        if ((sym.info & 0xf) == stt_func && (sym.other & 0x10) != 0 && seen.insert(sym.name).second)
            names.emplace_back(sym.name);
    });
    return names;
}

std::vector<std::string> cubin_defined_symbols(std::string_view elf) {
    std::vector<std::string> names;
    std::set<std::string_view> seen;
    for_each_symbol(elf, [&](const ElfSymbol& sym) {
        const unsigned type = sym.info & 0xf, binding = sym.info >> 4;
        if ((type == stt_func || type == stt_object || type == stt_cuda_object) && binding == stb_global &&
            sym.section != 0 /* SHN_UNDEF */ && sym.section < shn_loreserve /* not common, absolute */ &&
            seen.insert(sym.name).second)
            names.emplace_back(sym.name);
    });
    return names;
}

namespace {

// PTX text with its comments blanked out (same length, so positions stay).
std::string ptx_without_comments(std::string_view ptx) {
    std::string text(ptx);
    std::size_t i = 0;
    while (i + 1 < text.size()) {
        if (text[i] == '/' && text[i + 1] == '/') {
            const std::size_t end = text.find('\n', i);
            const std::size_t stop = end == std::string::npos ? text.size() : end;
            std::fill(text.begin() + std::ptrdiff_t(i), text.begin() + std::ptrdiff_t(stop), ' ');
            i = stop;
        } else if (text[i] == '/' && text[i + 1] == '*') {
            const std::size_t end = text.find("*/", i + 2);
            const std::size_t stop = end == std::string::npos ? text.size() : end + 2;
            std::fill(text.begin() + std::ptrdiff_t(i), text.begin() + std::ptrdiff_t(stop), ' ');
            i = stop;
        } else {
            ++i;
        }
    }
    return text;
}

bool ptx_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool ptx_name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$' || c == '%';
}

}  // namespace

std::vector<std::string> ptx_defined_symbols(std::string_view ptx_text) {
    const std::string text = ptx_without_comments(ptx_text);
    const std::string_view ptx(text);
    std::vector<std::string> names;
    std::set<std::string, std::less<>> seen;
    const auto skip_space = [&](std::size_t i) {
        while (i < ptx.size() && ptx_space(ptx[i])) ++i;
        return i;
    };
    const auto token_end = [&](std::size_t i) {
        while (i < ptx.size() && !ptx_space(ptx[i]) && ptx[i] != '(' && ptx[i] != ';' && ptx[i] != '[' &&
               ptx[i] != '=' && ptx[i] != '{' && ptx[i] != ',')
            ++i;
        return i;
    };
    // The position of the ')' that closes the first '(' at or after `i`; npos when none does.
    const auto closing = [&](std::size_t i) {
        int depth = 0;
        for (i = ptx.find('(', i); i < ptx.size(); ++i) {
            if (ptx[i] == '(') ++depth;
            if (ptx[i] == ')' && --depth == 0) return i;
        }
        return std::string_view::npos;
    };
    const auto add = [&](std::string_view name) {
        if (!name.empty() && std::all_of(name.begin(), name.end(), ptx_name_char) &&
            seen.insert(std::string(name)).second)
            names.emplace_back(name);
    };
    std::size_t pos = 0;
    while ((pos = ptx.find(".visible", pos)) != std::string_view::npos) {
        const bool starts = pos == 0 || ptx_space(ptx[pos - 1]);
        pos += 8;
        if (!starts || pos >= ptx.size() || !ptx_space(ptx[pos])) continue;
        std::size_t i = skip_space(pos);
        const std::size_t kind_end = token_end(i);
        const std::string_view kind = ptx.substr(i, kind_end - i);
        i = skip_space(kind_end);
        if (kind == ".entry" || kind == ".func") {
            // Attributes, then a function's return parameters, come first, in parentheses.
            while (ptx.substr(i).starts_with(".attribute")) {
                const std::size_t close = closing(i);
                if (close == std::string_view::npos) return names;
                i = skip_space(close + 1);
            }
            if (kind == ".func" && i < ptx.size() && ptx[i] == '(') {
                const std::size_t close = closing(i);
                if (close == std::string_view::npos) break;
                i = skip_space(close + 1);
            }
            const std::size_t name_end = token_end(i);
            const std::string_view name = ptx.substr(i, name_end - i);
            // A body follows the parameter list (and any performance directives); a prototype ends
            // with ';'.
            std::size_t after = skip_space(name_end);
            if (after < ptx.size() && ptx[after] == '(') {
                const std::size_t close = closing(after);
                if (close == std::string_view::npos) break;
                after = close + 1;
            }
            // `.pragma "...";` statements may stand between the parameters and the body.
            std::size_t end = ptx.find_first_of("{;", after);
            while (end != std::string_view::npos && ptx[end] == ';' &&
                   ptx.substr(after, end - after).find(".pragma") != std::string_view::npos) {
                after = end + 1;
                end = ptx.find_first_of("{;", after);
            }
            if (end == std::string_view::npos) break;
            if (ptx[end] == '{') add(name);
            pos = end;
        } else if (kind == ".global" || kind == ".const") {
            // `.visible .global .align 4 .f32 name[4] = {...}, other;`: each name is the last token
            // before '[', '=', ',' or ';'; an initializer runs to the ',' or ';' after its braces.
            for (;;) {
                const std::size_t end = ptx.find_first_of(";[=,", i);
                if (end == std::string_view::npos) return names;
                std::size_t last = end;
                while (last > i && ptx_space(ptx[last - 1])) --last;
                std::size_t first = last;
                while (first > i && !ptx_space(ptx[first - 1]) && ptx[first - 1] != ',') --first;
                add(ptx.substr(first, last - first));
                std::size_t next = end;
                if (ptx[next] == '[' || ptx[next] == '=') {
                    int depth = 0;
                    while (next < ptx.size() && (depth > 0 || (ptx[next] != ',' && ptx[next] != ';'))) {
                        if (ptx[next] == '{' || ptx[next] == '(' || ptx[next] == '[') ++depth;
                        if ((ptx[next] == '}' || ptx[next] == ')' || ptx[next] == ']') && depth > 0) --depth;
                        ++next;
                    }
                    if (next >= ptx.size()) return names;
                }
                pos = next;
                if (ptx[next] == ';') break;
                i = next + 1;
            }
        }
    }
    return names;
}

std::string cubin_defect(std::string_view elf) {
    if (!is_elf64(elf)) return "it is not a 64-bit little-endian ELF file";
    const std::uint64_t file = elf.size();
    std::uint16_t machine = 0, phentsize = 0, phnum = 0, shentsize = 0, shnum = 0, shstrndx = 0;
    std::uint64_t phoff = 0, shoff = 0;
    (void)read_at(elf, 0x12, machine);
    (void)read_at(elf, 0x20, phoff);
    (void)read_at(elf, 0x28, shoff);
    (void)read_at(elf, 0x36, phentsize);
    (void)read_at(elf, 0x38, phnum);
    (void)read_at(elf, 0x3a, shentsize);
    (void)read_at(elf, 0x3c, shnum);
    (void)read_at(elf, 0x3e, shstrndx);
    if (machine != 190 /* EM_CUDA */) return fmt::format("its ELF header names machine {}, not CUDA (190)", machine);

    if (phnum > 0) {
        if (phentsize != program_header_bytes)
            return fmt::format("its program headers are {} bytes each, not {}", phentsize, program_header_bytes);
        if (!inside(file, phoff, phnum, program_header_bytes))
            return fmt::format("its {} program headers at offset {} run past the end of its {} bytes", phnum, phoff,
                               file);
        for (std::uint64_t i = 0; i < phnum; ++i) {
            std::uint64_t offset = 0, filesz = 0;
            const std::uint64_t at = phoff + i * program_header_bytes;
            (void)read_at(elf, at + 0x08, offset);
            (void)read_at(elf, at + 0x20, filesz);
            if (!inside(file, offset, filesz, 1))
                return fmt::format("program header {} ({} bytes at offset {}) runs past the end of its {} bytes", i,
                                   filesz, offset, file);
        }
    }

    // The section header table; more than 0xff00 sections keep their count in section 0.
    if (shoff == 0) return "it has no section header table";
    if (shentsize != section_header_bytes)
        return fmt::format("its section headers are {} bytes each, not {}", shentsize, section_header_bytes);
    if (!inside(file, shoff, 1, section_header_bytes))
        return fmt::format("its section header table at offset {} lies past the end of its {} bytes", shoff, file);
    std::uint64_t sections = shnum;
    if (sections == 0) (void)read_at(elf, shoff + 0x20, sections);
    if (sections == 0) return "it has no sections";
    if (!inside(file, shoff, sections, section_header_bytes))
        return fmt::format("its {} section headers at offset {} run past the end of its {} bytes", sections, shoff,
                           file);
    // Every header lies inside the file (checked above).
    const auto section = [&](std::uint64_t i) {
        Section s;
        (void)read_section(elf, shoff, section_header_bytes, i, s);
        return s;
    };
    std::uint64_t names = shstrndx;
    if (shstrndx == shn_xindex) names = section(0).link;
    if (names >= sections) return fmt::format("its section name table is section {} of {}", names, sections);
    const Section name_table = section(names);
    if (name_table.type != sht_strtab)
        return fmt::format("its section name table (section {}) is not a string table", names);

    for (std::uint64_t i = 0; i < sections; ++i) {
        const Section s = section(i);
        const bool no_bytes = s.type == sht_nobits || s.type == sht_cuda_global || s.type == sht_cuda_local ||
                              s.type == sht_cuda_shared || s.type == sht_cuda_reserved_shared;
        if (!no_bytes && !inside(file, s.offset, s.size, 1))
            return fmt::format("section {} ({} bytes at offset {}) runs past the end of its {} bytes", i, s.size,
                               s.offset, file);
        if (i > 0 && s.name >= name_table.size)
            return fmt::format("section {} names offset {} of a {}-byte name table", i, s.name, name_table.size);
        if (s.link >= sections) return fmt::format("section {} links to section {} of {}", i, s.link, sections);
        if (s.type == sht_strtab && s.size > 0 && elf[s.offset + s.size - 1] != '\0')
            return fmt::format("string table section {} does not end in a NUL", i);
        if (s.type == sht_symtab || s.type == sht_dynsym) {
            if (s.entsize != symbol_bytes || s.size % symbol_bytes != 0)
                return fmt::format("symbol table section {} has {}-byte entries over {} bytes, not 24-byte ones", i,
                                   s.entsize, s.size);
            const Section strings = section(s.link);
            if (strings.type != sht_strtab)
                return fmt::format("symbol table section {} links to section {}, which is not a string table", i,
                                   s.link);
            for (std::uint64_t at = s.offset; at < s.offset + s.size; at += symbol_bytes) {
                std::uint32_t name = 0;
                std::uint16_t index = 0;
                (void)read_at(elf, at, name);
                (void)read_at(elf, at + 6, index);
                if (name >= strings.size && !(name == 0 && strings.size == 0))
                    return fmt::format("symbol {} of section {} names offset {} of a {}-byte string table",
                                       (at - s.offset) / symbol_bytes, i, name, strings.size);
                if (index >= sections && index < shn_loreserve)
                    return fmt::format("symbol {} of section {} lies in section {} of {}",
                                       (at - s.offset) / symbol_bytes, i, index, sections);
            }
        }
        if (s.type == sht_rel || s.type == sht_rela) {
            const std::uint64_t bytes = s.type == sht_rel ? 16 : 24;
            if (s.entsize != bytes || s.size % bytes != 0)
                return fmt::format("relocation section {} has {}-byte entries over {} bytes, not {}-byte ones", i,
                                   s.entsize, s.size, bytes);
            const Section symbols = section(s.link);
            if (symbols.type != sht_symtab && symbols.type != sht_dynsym)
                return fmt::format("relocation section {} links to section {}, which is not a symbol table", i, s.link);
            if (s.info >= sections)
                return fmt::format("relocation section {} applies to section {} of {}", i, s.info, sections);
            const std::uint64_t count = symbols.size / symbol_bytes;
            for (std::uint64_t at = s.offset; at < s.offset + s.size; at += bytes) {
                std::uint64_t info = 0;
                (void)read_at(elf, at + 8, info);
                if ((info >> 32) >= count)
                    return fmt::format("relocation {} of section {} refers to symbol {} of {}", (at - s.offset) / bytes,
                                       i, info >> 32, count);
            }
        }
    }
    return {};
}

namespace {

// Walks a fatbin's entries, calling `entry(index, offset, kind, payload)` for each entry that lies
// inside the file; `entry` returns a defect (non-empty) to stop. Returns the first defect of the
// container or its entries, empty when every entry was read.
template <class F>
std::string walk_fatbin(std::string_view fatbin, F&& entry) {
    // Container: u32 magic | u16 version | u16 header size | u64 size of the entries that follow.
    // Entry:     u16 kind | u16 flags | u32 header size | u64 payload size | ... | payload.
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
        std::uint16_t kind = 0;
        std::uint32_t entry_header = 0;
        std::uint64_t payload = 0;
        if (end - at < 16 || !read_at(fatbin, at, kind) || !read_at(fatbin, at + 4, entry_header) ||
            !read_at(fatbin, at + 8, payload))
            return fmt::format("entry {} at offset {} is cut off by the end of the entries ({})", count, at, end);
        if (entry_header < 16 || entry_header > end - at || payload > end - at - entry_header)
            return fmt::format(
                "entry {} at offset {} ({}-byte header, {}-byte payload) runs past the end of the "
                "entries ({})",
                count, at, entry_header, payload, end);
        std::string defect =
            entry(count, at, kind, fatbin.substr(at, entry_header), fatbin.substr(at + entry_header, payload));
        if (!defect.empty()) return defect;
        at += entry_header + payload;
    }
    if (count == 0) return "it holds no entries";
    return {};
}

}  // namespace

std::string fatbin_defect(std::string_view fatbin) {
    static constexpr std::uint16_t fatbin_kind_ptx = 1, fatbin_kind_elf = 2, fatbin_kind_ltoir = 8;
    return walk_fatbin(
        fatbin, [](int index, std::uint64_t at, std::uint16_t kind, std::string_view, std::string_view) -> std::string {
            // nvJitLink reads an entry by its kind, and crashes on some kinds given another payload.
            if (kind != fatbin_kind_ptx && kind != fatbin_kind_elf && kind != fatbin_kind_ltoir)
                return fmt::format(
                    "entry {} at offset {} is of kind {}, not PTX ({}), ELF ({}) or LTO-IR ({}), the kinds "
                    "the toolkit's fatbinary writes",
                    index, at, kind, fatbin_kind_ptx, fatbin_kind_elf, fatbin_kind_ltoir);
            return {};
        });
}

std::optional<std::string> fatbin_image(std::string_view header, std::string_view payload) {
    // Past the fields walk_fatbin reads, an entry header as fatbinary (CUDA 13.0) writes it holds at
    // offset 0x10 the u32 length of the compressed bytes at the payload's start (the rest is
    // padding), at 0x28 u64 flags (0x2000: an LZ4 block, 0x8000: a Zstandard frame) and at 0x38 the
    // u64 size of the image once decompressed.
    static constexpr std::uint64_t lz4 = 0x2000, zstd = 0x8000;
    std::uint64_t flags = 0, size = 0;
    std::uint32_t packed = 0;
    if (!read_at(header, 0x28, flags) || (flags & (lz4 | zstd)) == 0) return std::string(payload);
    if ((flags & lz4) != 0 && (flags & zstd) != 0) return std::nullopt;
    if (!read_at(header, 0x10, packed) || !read_at(header, 0x38, size) || packed > payload.size()) return std::nullopt;
    // Both decoders check that the bytes make `size` before allocating it (LZ4 by a first walk over
    // its sequences, Zstandard by the size its frame declares); past the limit nothing is tried.
    if (size > fatbin_image_limit) return std::nullopt;
    const std::string_view bytes = payload.substr(0, packed);
    return (flags & lz4) != 0 ? lz4_block_decompress(bytes, std::size_t(size))
                              : zstd_decompress(bytes, std::size_t(size));
}

std::vector<std::string> fatbin_defined_symbols(std::string_view fatbin) {
    std::vector<std::string> names;
    std::set<std::string> seen;
    // The entries that lie inside the file; a defect ends the walk.
    (void)walk_fatbin(
        fatbin,
        [&](int, std::uint64_t, std::uint16_t, std::string_view header, std::string_view payload) -> std::string {
            // An ELF file or PTX text, decompressed where fatbinary compressed it; an image that does
            // not decompress is not read.
            const std::optional<std::string> decompressed = fatbin_image(header, payload);
            if (!decompressed) return {};
            const std::string_view image = *decompressed;
            std::vector<std::string> found;
            if (is_elf64(image)) found = cubin_defined_symbols(image);
            else if (image.find(".version") != std::string_view::npos) found = ptx_defined_symbols(image);
            for (std::string& name : found)
                if (seen.insert(name).second) names.push_back(std::move(name));
            return {};
        });
    return names;
}

WriteStatus write_regular_file(const fs::path& path, std::string_view bytes, bool exclusive, int& error) {
    // O_NONBLOCK: opening a FIFO for writing would otherwise wait for a reader (ENXIO instead). The
    // file is truncated only once the descriptor shows a regular file.
    int flags = O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC;
    if (exclusive) flags |= O_EXCL | O_NOFOLLOW;
    const int fd = ::open(path.c_str(), flags, 0666);  // NOLINT(cppcoreguidelines-pro-type-vararg)
    if (fd < 0) {
        error = errno;
        return error == ENXIO || error == EISDIR ? WriteStatus::not_regular : WriteStatus::failed;
    }
    bool closed = false;
    const ScopeExit close_fd([&] {
        if (!closed) (void)::close(fd);
    });
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        error = errno;
        return WriteStatus::failed;
    }
    if (!S_ISREG(st.st_mode)) return WriteStatus::not_regular;
    // A regular file: writes may block again (some network file systems honour O_NONBLOCK).
    if (const int fl = ::fcntl(fd, F_GETFL); fl < 0 || ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {  // NOLINT
        error = errno;
        return WriteStatus::failed;
    }
    if (!exclusive && ::ftruncate(fd, 0) != 0) {
        error = errno;
        return WriteStatus::failed;
    }
    while (!bytes.empty()) {
        const ssize_t n = ::write(fd, bytes.data(), bytes.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            error = errno;
            return WriteStatus::failed;
        }
        bytes.remove_prefix(std::size_t(n));
    }
    closed = true;
    if (::close(fd) != 0) {
        error = errno;
        return WriteStatus::failed;
    }
    return WriteStatus::ok;
}

bool replace_regular_file(const fs::path& path, std::string_view bytes, int& error, std::string& reason) {
    static std::atomic<std::uint64_t> counter{0};
    const fs::path tmp =
        path.parent_path() / fmt::format(".{}.tmp.{}.{}.{}", path.filename().string(), ::getpid(),
                                         std::hash<std::thread::id>{}(std::this_thread::get_id()) & 0xffffff,
                                         counter.fetch_add(1));
    error = 0;
    std::error_code ec;
    const bool written = write_regular_file(tmp, bytes, /*exclusive=*/true, error) == WriteStatus::ok;
    if (written) {
        fs::rename(tmp, path, ec);
        if (!ec) return true;
        error = ec.value();
    }
    reason = ec ? ec.message() : error != 0 ? std::string(std::strerror(error)) : std::string("not a regular file");
    // Not someone else's file that already sat at the temporary name.
    if (written || (error != EEXIST && error != ELOOP)) fs::remove(tmp, ec);
    return false;
}

std::string cubin_arch(std::string_view elf) {
    if (!is_elf64(elf)) return {};
    std::uint16_t machine = 0;
    std::uint32_t flags = 0;
    if (!read_at(elf, 0x12, machine) || !read_at(elf, 0x30, flags) || machine != 190 /* EM_CUDA */) return {};
    const auto abi_version = static_cast<std::uint8_t>(elf[8]);
    // ABI version 8 and later keep the SM number in bits 8..15 of e_flags, older ones in bits 0..7.
    const unsigned sm = abi_version >= 8 ? (flags >> 8) & 0xffu : flags & 0xffu;
    if (sm < 10) return {};
    return fmt::format("sm_{}", sm);
}

core::ObjectCode ObjectCodeAccess::make(std::shared_ptr<const ObjectCodeData> data) noexcept {
    return core::ObjectCode(std::move(data));
}

}  // namespace gpumath::detail

namespace gpumath::core {

std::string_view to_string(CodeType type) noexcept {
    switch (type) {
        case CodeType::ptx:
            return "ptx";
        case CodeType::cubin:
            return "cubin";
        case CodeType::ltoir:
            return "ltoir";
        case CodeType::fatbin:
            return "fatbin";
    }
    return "unknown";
}

void ObjectCode::throw_empty() {
    detail::throw_invalid("this ObjectCode is empty (default-constructed or moved from)", "ObjectCode");
}

namespace {

// Validated code data for from_bytes and from_file: `api` names the caller in errors.
std::shared_ptr<detail::ObjectCodeData> code_data(std::string_view bytes, CodeType type, std::string arch,
                                                  std::vector<std::pair<std::string, std::string>> lowered_names,
                                                  std::string name, const char* api) {
    detail::check_code_type(type, "type", api);
    if (bytes.empty()) detail::throw_invalid("bytes: empty; device code cannot be empty", api);
    // PTX is text the driver and nvJitLink read up to its first NUL: one before the end (a final
    // terminator is fine) would silently drop the code after it.
    if (type == CodeType::ptx) {
        const std::size_t nul = bytes.find('\0');
        if (nul != std::string_view::npos && bytes.find_first_not_of('\0', nul) != std::string_view::npos)
            detail::throw_invalid(
                fmt::format("bytes: PTX with a NUL byte at offset {} of {}; the code after it would be ignored", nul,
                            bytes.size()),
                api);
    }
    // nvJitLink and the driver read a cubin's tables, and the driver a fatbin's entries, where their
    // headers say they are (the driver is not even told the size).
    const std::string defect = type == CodeType::cubin    ? detail::cubin_defect(bytes)
                               : type == CodeType::fatbin ? detail::fatbin_defect(bytes)
                                                          : std::string();
    if (!defect.empty())
        detail::throw_invalid(fmt::format("bytes: not a well-formed {}: {}", core::to_string(type), defect), api);
    // Module::kernel hands a lowered name to the driver as a C string: one cut short by a NUL
    // would name another kernel.
    std::map<std::string_view, std::size_t> seen;
    for (std::size_t i = 0; i < lowered_names.size(); ++i) {
        const auto& [expression, lowered] = lowered_names[i];
        const std::string field = fmt::format("lowered_names[{}]", i);
        if (expression.empty() || lowered.empty())
            detail::throw_invalid(fmt::format("{}: (\"{}\", \"{}\") has an empty {}", field, expression, lowered,
                                              expression.empty() ? "expression" : "lowered name"),
                                  api);
        detail::check_no_nul(expression, field + ".first", api);
        detail::check_no_nul(lowered, field + ".second", api);
        if (const auto [it, fresh] = seen.emplace(expression, i); !fresh)
            detail::throw_invalid(fmt::format("{}: expression \"{}\" is also lowered_names[{}]; give each once", field,
                                              expression, it->second),
                                  api);
    }
    if (!arch.empty() && !detail::parse_arch(arch))
        detail::throw_invalid(fmt::format("arch: \"{}\" is not an architecture name (sm_NN or compute_NN)", arch), api);
    auto data = std::make_shared<detail::ObjectCodeData>();
    data->type = type;
    data->bytes.assign(bytes.data(), bytes.size());
    if (arch.empty() && type == CodeType::cubin) arch = detail::cubin_arch(data->bytes);
    data->arch = std::move(arch);
    data->name = std::move(name);
    data->lowered_names = std::move(lowered_names);
    return data;
}

}  // namespace

ObjectCode ObjectCode::from_bytes(std::string_view bytes, CodeType type, std::string arch,
                                  std::vector<std::pair<std::string, std::string>> lowered_names) {
    return ObjectCode(
        code_data(bytes, type, std::move(arch), std::move(lowered_names), "from_bytes", "ObjectCode::from_bytes"));
}

ObjectCode ObjectCode::from_bytes(std::span<const std::byte> bytes, CodeType type, std::string arch,
                                  std::vector<std::pair<std::string, std::string>> lowered_names) {
    return from_bytes(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), type,
                      std::move(arch), std::move(lowered_names));
}

ObjectCode ObjectCode::from_file(const fs::path& path, std::optional<CodeType> type, std::string arch) {
    constexpr const char* api = "ObjectCode::from_file";
    if (type) detail::check_code_type(*type, "type", api);
    if (!type) {
        const std::string ext = path.extension().string();
        const std::string name = path.filename().string();
        if (ext == ".ptx") type = CodeType::ptx;
        else if (ext == ".cubin") type = CodeType::cubin;
        else if (ext == ".ltoir" || ext == ".lto") type = CodeType::ltoir;
        else if (ext == ".fatbin" || name.ends_with(".fatbin.bin")) type = CodeType::fatbin;
        else
            detail::throw_invalid(fmt::format("path: cannot tell the code type of \"{}\" from its extension (.ptx, "
                                              ".cubin, .ltoir, .fatbin); pass the type",
                                              path.string()),
                                  api);
    }
    std::string bytes;
    switch (detail::read_regular_file(path, bytes, /*follow_symlinks=*/true)) {
        case detail::FileStatus::ok:
            break;
        case detail::FileStatus::missing:
            detail::throw_invalid(fmt::format("path: \"{}\" does not exist", path.string()), api);
        case detail::FileStatus::not_regular:
            detail::throw_invalid(
                fmt::format("path: \"{}\" is not a regular file (a directory, FIFO, socket or device); "
                            "give a file of device code",
                            path.string()),
                api);
        case detail::FileStatus::unreadable:
            detail::throw_invalid(fmt::format("path: cannot read \"{}\"", path.string()), api);
        case detail::FileStatus::too_large:
            detail::throw_invalid(fmt::format("path: \"{}\" is larger than 4 GiB, more than any device code; "
                                              "give a file of device code",
                                              path.string()),
                                  api);
    }
    if (bytes.empty()) detail::throw_invalid(fmt::format("path: \"{}\" is empty", path.string()), api);
    return ObjectCode(code_data(bytes, *type, std::move(arch), {}, path.filename().string(), api));
}

void ObjectCode::save(const fs::path& path) const {
    constexpr const char* api = "ObjectCode::save";
    int error = 0;
    switch (detail::write_regular_file(path, data().bytes, /*exclusive=*/false, error)) {
        case detail::WriteStatus::ok:
            return;
        case detail::WriteStatus::not_regular:
            detail::throw_invalid(fmt::format("path: \"{}\" is not a regular file (a directory, FIFO, socket or "
                                              "device); give a file path",
                                              path.string()),
                                  api);
        case detail::WriteStatus::failed:
            break;
    }
    throw Error(fmt::format("{}: cannot write \"{}\": {}", api, path.string(), std::strerror(error)), 0, api);
}

const std::string& ObjectCode::lowered_name(std::string_view expression) const {
    const auto& names = data().lowered_names;
    for (const auto& [e, l] : names)
        if (e == expression) return l;
    std::string known;
    for (const auto& [e, l] : names) known += fmt::format("{}\"{}\"", known.empty() ? "" : ", ", e);
    detail::throw_invalid(fmt::format("expression: \"{}\" was not registered with Program::add_name_expression "
                                      "before compiling; registered: {}",
                                      expression, known.empty() ? std::string("none") : known),
                          "ObjectCode::lowered_name");
}

std::vector<std::string> ObjectCode::kernel_names() const {
    const detail::ObjectCodeData& d = data();
    switch (d.type) {
        case CodeType::ptx:
            return detail::ptx_entry_names(d.bytes);
        case CodeType::cubin:
            return detail::cubin_entry_names(d.bytes);
        default:
            return {};
    }
}

Module ObjectCode::load() const { return Module(*this); }

}  // namespace gpumath::core
