// SPDX-License-Identifier: Apache-2.0
// CUDA ELF images (cubins, and the ELF entries of fatbins): their structure checked within the
// file's bytes, their kernels, defined symbols and architecture read.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/byte_reader.hpp"
#include "core/object_image.hpp"

namespace gpumath::detail {

namespace {

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
constexpr std::uint16_t shn_loreserve = 0xff00, shn_abs = 0xfff1, shn_common = 0xfff2, shn_xindex = 0xffff;
constexpr std::uint64_t section_header_bytes = 64, program_header_bytes = 56, symbol_bytes = 24;

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

// More CUDA section types (the LOPROC range): attribute records (.nv.info, .nv.info.<kernel>), the
// call graph and function prototypes of relocatable code.
constexpr std::uint32_t sht_cuda_info = 0x70000000, sht_cuda_callgraph = 0x70000001, sht_cuda_prototype = 0x70000002;
constexpr std::uint64_t shf_exec = 0x4, shf_info_link = 0x40;
constexpr std::uint64_t max_relocation_type = 0xffff, max_alignment = std::uint64_t(1) << 16;
constexpr std::uint16_t et_rel = 1, et_exec = 2;

/// What cubin_defect reads of an ELF file once its headers hold together: the sections, all inside
/// the file.
struct ElfView {
    std::string_view elf;
    std::uint64_t shoff = 0, sections = 0;
    Section names{};  // the section name table

    [[nodiscard]] Section section(std::uint64_t i) const {
        Section s;
        (void)read_section(elf, shoff, section_header_bytes, i, s);
        return s;
    }
    [[nodiscard]] std::uint64_t flags(std::uint64_t i) const {
        std::uint64_t f = 0;
        (void)read_at(elf, shoff + i * section_header_bytes + 0x08, f);
        return f;
    }
    [[nodiscard]] std::string_view bytes(const Section& s) const { return elf.substr(s.offset, s.size); }
};

std::string elf_header_defect(std::string_view elf) {
    if (!is_elf64(elf)) return "it is not a 64-bit little-endian ELF file";
    std::uint16_t type = 0, machine = 0;
    (void)read_at(elf, 0x10, type);
    (void)read_at(elf, 0x12, machine);
    if (machine != 190 /* EM_CUDA */) return fmt::format("its ELF header names machine {}, not CUDA (190)", machine);
    // nvJitLink reads CUDA's sections by the file's type, and crashed on damaged ones of another.
    if (type != et_rel && type != et_exec)
        return fmt::format("its ELF header gives type {}, not relocatable ({}) or executable ({})", type, et_rel,
                           et_exec);
    return {};
}

std::string program_headers_defect(std::string_view elf) {
    std::uint16_t phentsize = 0, phnum = 0;
    std::uint64_t phoff = 0;
    (void)read_at(elf, 0x20, phoff);
    (void)read_at(elf, 0x36, phentsize);
    (void)read_at(elf, 0x38, phnum);
    if (phnum == 0) return {};
    if (phentsize != program_header_bytes)
        return fmt::format("its program headers are {} bytes each, not {}", phentsize, program_header_bytes);
    if (!inside(elf.size(), phoff, phnum, program_header_bytes))
        return fmt::format("its {} program headers at offset {} run past the end of its {} bytes", phnum, phoff,
                           elf.size());
    for (std::uint64_t i = 0; i < phnum; ++i) {
        std::uint64_t offset = 0, filesz = 0;
        const std::uint64_t at = phoff + i * program_header_bytes;
        (void)read_at(elf, at + 0x08, offset);
        (void)read_at(elf, at + 0x20, filesz);
        if (!inside(elf.size(), offset, filesz, 1))
            return fmt::format("program header {} ({} bytes at offset {}) runs past the end of its {} bytes", i, filesz,
                               offset, elf.size());
    }
    return {};
}

/// The section header table (more than 0xff00 sections keep their count in section 0) and the
/// section name table; `view` is set when they hold together.
std::string section_table_defect(std::string_view elf, ElfView& view) {
    std::uint16_t shentsize = 0, shnum = 0, shstrndx = 0;
    std::uint64_t shoff = 0;
    (void)read_at(elf, 0x28, shoff);
    (void)read_at(elf, 0x3a, shentsize);
    (void)read_at(elf, 0x3c, shnum);
    (void)read_at(elf, 0x3e, shstrndx);
    const std::uint64_t file = elf.size();
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
    view = {.elf = elf, .shoff = shoff, .sections = sections};
    std::uint64_t names = shstrndx;
    if (shstrndx == shn_xindex) names = view.section(0).link;
    if (names >= sections) return fmt::format("its section name table is section {} of {}", names, sections);
    view.names = view.section(names);
    if (view.names.type != sht_strtab)
        return fmt::format("its section name table (section {}) is not a string table", names);
    return {};
}

std::string symbol_table_defect(const ElfView& v, std::uint64_t i, const Section& s) {
    if (s.entsize != symbol_bytes || s.size % symbol_bytes != 0)
        return fmt::format("symbol table section {} has {}-byte entries over {} bytes, not 24-byte ones", i, s.entsize,
                           s.size);
    const Section strings = v.section(s.link);
    if (strings.type != sht_strtab)
        return fmt::format("symbol table section {} links to section {}, which is not a string table", i, s.link);
    for (std::uint64_t at = s.offset; at < s.offset + s.size; at += symbol_bytes) {
        std::uint32_t name = 0;
        std::uint8_t info = 0;
        std::uint16_t index = 0;
        (void)read_at(v.elf, at, name);
        (void)read_at(v.elf, at + 4, info);
        (void)read_at(v.elf, at + 6, index);
        // Local, global or weak: nvJitLink crashed on the other bindings.
        if ((info >> 4) > 2)
            return fmt::format("symbol {} of section {} has binding {}, not local, global or weak",
                               (at - s.offset) / symbol_bytes, i, info >> 4);
        if (name >= strings.size && !(name == 0 && strings.size == 0))
            return fmt::format("symbol {} of section {} names offset {} of a {}-byte string table",
                               (at - s.offset) / symbol_bytes, i, name, strings.size);
        if (index >= v.sections && index != shn_abs && index != shn_common)
            return fmt::format("symbol {} of section {} lies in section {} of {}{}", (at - s.offset) / symbol_bytes, i,
                               index, v.sections,
                               index >= shn_loreserve ? " (a reserved index other than ABS, COMMON)" : "");
    }
    return {};
}

/// The symbols of the symbol table section `link` refers to; nothing when it is not one.
std::optional<std::uint64_t> symbol_count(const ElfView& v, std::uint64_t link) {
    const Section symbols = v.section(link);
    if (symbols.type != sht_symtab && symbols.type != sht_dynsym) return std::nullopt;
    return symbols.size / symbol_bytes;
}

/// The type (STT_*) of symbol `index` of the symbol table section `link`; nothing when there is no
/// such symbol.
std::optional<std::uint8_t> symbol_type(const ElfView& v, std::uint64_t link, std::uint64_t index) {
    const Section symbols = v.section(link);
    std::uint8_t info = 0;
    if ((symbols.type != sht_symtab && symbols.type != sht_dynsym) || index >= symbols.size / symbol_bytes ||
        !read_at(v.elf, symbols.offset + index * symbol_bytes + 4, info))
        return std::nullopt;
    return std::uint8_t(info & 0xf);
}

constexpr std::uint8_t stt_section = 3;

std::string relocation_defect(const ElfView& v, std::uint64_t i, const Section& s) {
    const std::uint64_t bytes = s.type == sht_rel ? 16 : 24;
    if (s.entsize != bytes || s.size % bytes != 0)
        return fmt::format("relocation section {} has {}-byte entries over {} bytes, not {}-byte ones", i, s.entsize,
                           s.size, bytes);
    const std::optional<std::uint64_t> count = symbol_count(v, s.link);
    if (!count) return fmt::format("relocation section {} links to section {}, which is not a symbol table", i, s.link);
    if (s.info >= v.sections)
        return fmt::format("relocation section {} applies to section {} of {}", i, s.info, v.sections);
    const Section target = v.section(s.info);
    for (std::uint64_t at = s.offset; at < s.offset + s.size; at += bytes) {
        std::uint64_t offset = 0, info = 0;
        (void)read_at(v.elf, at, offset);
        (void)read_at(v.elf, at + 8, info);
        const std::uint64_t r = (at - s.offset) / bytes;
        if ((info >> 32) >= *count)
            return fmt::format("relocation {} of section {} refers to symbol {} of {}", r, i, info >> 32, *count);
        // CUDA's relocation types are small numbers; nvJitLink indexes a table with them.
        if ((info & 0xffffffffU) > max_relocation_type)
            return fmt::format("relocation {} of section {} is of type {}, past CUDA's relocation types", r, i,
                               info & 0xffffffffU);
        if (offset >= target.size)
            return fmt::format("relocation {} of section {} applies at offset {} of section {}, which holds {} bytes",
                               r, i, offset, s.info, target.size);
    }
    return {};
}

/// CUDA's attribute records (.nv.info and .nv.info.<kernel>): each a u8 format (1 to 4), a u8
/// attribute and a u16, which for the format 4 (a value of its own size) is the size of the bytes
/// that follow; together they fill the section. Where an attribute's value starts with a symbol's
/// index (frame, stack and register sizes in .nv.info, a kernel's parameter bank), the symbol must
/// exist. nvJitLink crashed on each of these damaged.
std::string attributes_defect(const ElfView& v, std::uint64_t i, const Section& s) {
    const std::string_view records = v.bytes(s);
    const std::optional<std::uint64_t> symbols = symbol_count(v, s.link);
    constexpr std::uint8_t format_value = 4, param_cbank = 0x0a, frame_size = 0x11, min_stack_size = 0x12,
                           kparam_info = 0x17, max_stack_size = 0x23, register_count = 0x2f;
    for (std::uint64_t at = 0; at < records.size();) {
        std::uint8_t format = 0, attribute = 0;
        std::uint16_t size = 0;
        if (!read_at(records, at, format) || !read_at(records, at + 1, attribute) || !read_at(records, at + 2, size))
            return fmt::format("attribute section {} ends inside the record at its byte {}", i, at);
        if (format < 1 || format > format_value)
            return fmt::format("attribute section {} has a record of format {} at its byte {}, not 1 to 4", i, format,
                               at);
        const std::uint64_t length = format == format_value ? 4 + std::uint64_t(size) : 4;
        if (length > records.size() - at)
            return fmt::format("attribute section {} has a {}-byte record at its byte {}, past its {} bytes", i, length,
                               at, records.size());
        // The per-function attributes of .nv.info (info 0), and a kernel's parameter bank, start with
        // a symbol's index; a kernel's parameters with an index compilers write as 0.
        const bool names_symbol = s.info == 0 ? attribute == frame_size || attribute == min_stack_size ||
                                                    attribute == max_stack_size || attribute == register_count
                                              : attribute == param_cbank;
        std::uint32_t first = 0;
        if (format == format_value && size >= 4 && read_at(records, at + 4, first)) {
            if (names_symbol) {
                // A function's attributes name the function; a parameter bank its section.
                const std::uint8_t wanted = attribute == param_cbank ? stt_section : stt_func;
                const std::optional<std::uint8_t> type = symbol_type(v, s.link, first);
                if (!symbols || first >= *symbols)
                    return fmt::format("attribute section {} names symbol {} of {} at its byte {}", i, first,
                                       symbols.value_or(0), at);
                if (type != wanted)
                    return fmt::format("attribute section {} names symbol {} at its byte {}, of type {}, not {}", i,
                                       first, at, type.value_or(0), wanted);
            }
            if (s.info != 0 && attribute == kparam_info && first != 0)
                return fmt::format(
                    "attribute section {} gives a parameter the index {} at its byte {}; compilers "
                    "write 0",
                    i, first, at);
        }
        at += length;
    }
    return {};
}

/// The call graph and prototypes of relocatable code: pairs of u32 naming functions.
std::string symbol_pairs_defect(const ElfView& v, std::uint64_t i, const Section& s) {
    if (s.entsize != 8 || s.size % 8 != 0)
        return fmt::format("section {} of CUDA type 0x{:x} has {}-byte entries over {} bytes, not 8-byte ones", i,
                           s.type, s.entsize, s.size);
    const std::optional<std::uint64_t> symbols = symbol_count(v, s.link);
    if (!symbols)
        return fmt::format("section {} of CUDA type 0x{:x} links to section {}, which is not a symbol table", i, s.type,
                           s.link);
    const std::string_view pairs = v.bytes(s);
    const bool callgraph = s.type == sht_cuda_callgraph;
    // The call graph pairs a caller with a callee (0, or a negative marker, where there is none);
    // a prototype pairs a function with the prototype's number.
    for (std::uint64_t at = 0; at + 4 <= pairs.size(); at += callgraph ? 4 : 8) {
        std::uint32_t index = 0, number = 0;
        (void)read_at(pairs, at, index);
        // nvJitLink crashed on prototype numbers past a byte; compilers number from 1.
        if (!callgraph && read_at(pairs, at + 4, number) && number > 0xff)
            return fmt::format("section {} of CUDA type 0x{:x} gives prototype number {} at its byte {}, past 255", i,
                               s.type, number, at + 4);
        if (callgraph && (index == 0 || index >= 0xffffff00U)) continue;
        if (index >= *symbols)
            return fmt::format("section {} of CUDA type 0x{:x} names symbol {} of {} at its byte {}", i, s.type, index,
                               *symbols, at);
        if (const std::optional<std::uint8_t> type = symbol_type(v, s.link, index); type != stt_func)
            return fmt::format(
                "section {} of CUDA type 0x{:x} names symbol {} at its byte {}, of type {}, not a "
                "function",
                i, s.type, index, at, type.value_or(0));
    }
    return {};
}

/// The section types of cubins: program bits, symbol and string tables, relocations, notes, no-bits,
/// and the OS's and CUDA's own ranges. Dynamic linking's tables and arrays of initializers (5, 6,
/// 10 to 19) are not in them, and nvJitLink crashed on a note turned into one.
bool cubin_section_type(std::uint32_t type) {
    constexpr std::uint32_t null = 0, progbits = 1, note = 7;
    switch (type) {
        case null:
        case progbits:
        case sht_symtab:
        case sht_strtab:
        case sht_rela:
        case note:
        case sht_nobits:
        case sht_rel:
            return true;
        default:
            return type >= 0x60000000U && type < 0x80000000U;
    }
}

/// The fields nvJitLink reads of every section header: a type cubins hold (section 0 the null
/// section), an alignment that is a power of two from 1 (0 and huge ones crashed or spun
/// nvJitLink), and `sh_info` where its meaning is
/// known: a section's index with SHF_INFO_LINK, a symbol's index in the low 24 bits for code (the
/// register count above), the first global symbol's for a symbol table, nothing elsewhere.
std::string section_fields_defect(const ElfView& v, std::uint64_t i, const Section& s) {
    // Standard types stop at 19; 0x60000000 up are the OS's, 0x70000000 up the processor's
    // (CUDA's), 0x80000000 up an application's, which no cubin holds.
    if (i == 0) {
        if (s.type != 0) return fmt::format("section 0 is of type {}, not the null section", s.type);
        return {};
    }
    if (!cubin_section_type(s.type))
        return fmt::format("section {} is of type 0x{:x}, which no cubin holds", i, s.type);
    std::uint64_t align = 0;
    (void)read_at(v.elf, v.shoff + i * section_header_bytes + 0x30, align);
    if (align == 0 || align > max_alignment || (align & (align - 1)) != 0)
        return fmt::format("section {} asks for an alignment of {}, not a power of two from 1 to {}", i, align,
                           max_alignment);
    const std::uint64_t flags = v.flags(i);
    if ((flags & shf_info_link) != 0) {
        if (s.info >= v.sections) return fmt::format("section {} refers to section {} of {}", i, s.info, v.sections);
    } else if ((flags & shf_exec) != 0) {
        const std::optional<std::uint64_t> symbols = symbol_count(v, s.link);
        if (symbols && (s.info & 0xffffffU) >= *symbols)
            return fmt::format("code section {} names symbol {} of {}", i, s.info & 0xffffffU, *symbols);
    } else if (s.type == sht_symtab || s.type == sht_dynsym) {
        if (s.info > s.size / symbol_bytes)
            return fmt::format("symbol table section {} starts its global symbols at {} of {}", i, s.info,
                               s.size / symbol_bytes);
    } else if (s.type != sht_rel && s.type != sht_rela && s.info != 0) {
        return fmt::format("section {} of type 0x{:x} has info {} where it should hold none", i, s.type, s.info);
    }
    return {};
}

std::string section_defect(const ElfView& v, std::uint64_t i) {
    const Section s = v.section(i);
    const bool no_bytes = s.type == sht_nobits || s.type == sht_cuda_global || s.type == sht_cuda_local ||
                          s.type == sht_cuda_shared || s.type == sht_cuda_reserved_shared;
    if (!no_bytes && !inside(v.elf.size(), s.offset, s.size, 1))
        return fmt::format("section {} ({} bytes at offset {}) runs past the end of its {} bytes", i, s.size, s.offset,
                           v.elf.size());
    if (i > 0 && s.name >= v.names.size)
        return fmt::format("section {} names offset {} of a {}-byte name table", i, s.name, v.names.size);
    if (s.link >= v.sections) return fmt::format("section {} links to section {} of {}", i, s.link, v.sections);
    if (std::string defect = section_fields_defect(v, i, s); !defect.empty()) return defect;
    switch (s.type) {
        case sht_strtab:
            if (s.size > 0 && v.elf[s.offset + s.size - 1] != '\0')
                return fmt::format("string table section {} does not end in a NUL", i);
            return {};
        case sht_symtab:
        case sht_dynsym:
            return symbol_table_defect(v, i, s);
        case sht_rel:
        case sht_rela:
            return relocation_defect(v, i, s);
        case sht_cuda_info:
            return attributes_defect(v, i, s);
        case sht_cuda_callgraph:
        case sht_cuda_prototype:
            return symbol_pairs_defect(v, i, s);
        default:
            return {};
    }
}

/// The file's parts (the ELF header, the header tables and each section's bytes) do not overlap:
/// a section moved onto another's bytes reads as that one, which nvJitLink crashed on.
std::string overlap_defect(const ElfView& v) {
    struct Part {
        std::uint64_t begin, end;
        std::string what;
    };
    std::vector<Part> parts{{0, 64, "the ELF header"},
                            {v.shoff, v.shoff + v.sections * section_header_bytes, "the section header table"}};
    std::uint16_t phnum = 0;
    std::uint64_t phoff = 0;
    (void)read_at(v.elf, 0x20, phoff);
    (void)read_at(v.elf, 0x38, phnum);
    if (phnum > 0) parts.push_back({phoff, phoff + phnum * program_header_bytes, "the program header table"});
    for (std::uint64_t i = 1; i < v.sections; ++i) {
        const Section s = v.section(i);
        const bool no_bytes = s.type == sht_nobits || s.type == sht_cuda_global || s.type == sht_cuda_local ||
                              s.type == sht_cuda_shared || s.type == sht_cuda_reserved_shared;
        if (!no_bytes && s.size > 0) parts.push_back({s.offset, s.offset + s.size, fmt::format("section {}", i)});
    }
    std::sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) { return a.begin < b.begin; });
    for (std::size_t k = 1; k < parts.size(); ++k)
        if (parts[k].begin < parts[k - 1].end)
            return fmt::format("{} (bytes {} to {}) overlaps {} (bytes {} to {})", parts[k].what, parts[k].begin,
                               parts[k].end, parts[k - 1].what, parts[k - 1].begin, parts[k - 1].end);
    return {};
}

}  // namespace

std::string cubin_defect(std::string_view elf) {
    if (std::string defect = elf_header_defect(elf); !defect.empty()) return defect;
    if (std::string defect = program_headers_defect(elf); !defect.empty()) return defect;
    ElfView view;
    if (std::string defect = section_table_defect(elf, view); !defect.empty()) return defect;
    for (std::uint64_t i = 0; i < view.sections; ++i)
        if (std::string defect = section_defect(view, i); !defect.empty()) return defect;
    return overlap_defect(view);
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

}  // namespace gpumath::detail
