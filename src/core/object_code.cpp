// SPDX-License-Identifier: Apache-2.0
// ObjectCode: construction from memory and files, saving, lowered names, kernel names.
#include <gpumath/core/object_code.hpp>

#include <cstring>
#include <fstream>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "core/jit.hpp"
#include <gpumath/core/module.hpp>
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

}  // namespace

std::vector<std::string> cubin_entry_names(std::string_view elf) {
    std::vector<std::string> names;
    if (!is_elf64(elf)) return names;
    std::uint64_t shoff = 0;
    std::uint16_t shentsize = 0, shnum = 0;
    if (!read_at(elf, 0x28, shoff) || !read_at(elf, 0x3a, shentsize) || !read_at(elf, 0x3c, shnum)) return names;
    if (shentsize < 64) return names;
    const auto section = [&](std::uint32_t i, std::uint32_t& type, std::uint64_t& offset, std::uint64_t& size,
                             std::uint32_t& link, std::uint64_t& entsize) {
        const std::uint64_t base = shoff + std::uint64_t(i) * shentsize;
        return read_at(elf, base + 4, type) && read_at(elf, base + 0x18, offset) && read_at(elf, base + 0x20, size) &&
               read_at(elf, base + 0x28, link) && read_at(elf, base + 0x38, entsize);
    };
    // A hostile ELF may point many section headers at one symbol table: read each (offset, size)
    // range once, visit at most as many symbols as the file can hold, and report each name once.
    std::set<std::pair<std::uint64_t, std::uint64_t>> visited;
    std::set<std::string_view> seen;
    std::uint64_t budget = elf.size() / 24;
    for (std::uint32_t i = 0; i < shnum; ++i) {
        std::uint32_t type = 0, link = 0;
        std::uint64_t offset = 0, size = 0, entsize = 0;
        if (!section(i, type, offset, size, link, entsize)) return names;
        if (type != 2 /* SHT_SYMTAB */ || entsize < 24) continue;
        if (!visited.emplace(offset, size).second) continue;
        std::uint32_t st_type = 0, st_link = 0;
        std::uint64_t str_off = 0, str_size = 0, st_entsize = 0;
        if (link >= shnum || !section(link, st_type, str_off, str_size, st_link, st_entsize)) return names;
        if (str_off > elf.size() || elf.size() - str_off < str_size) return names;
        const std::string_view strtab = elf.substr(str_off, str_size);
        for (std::uint64_t s = 0; s + entsize <= size; s += entsize) {
            if (budget == 0) return names;
            --budget;
            std::uint32_t name_off = 0;
            std::uint8_t info = 0, other = 0;
            if (!read_at(elf, offset + s, name_off) || !read_at(elf, offset + s + 4, info) ||
                !read_at(elf, offset + s + 5, other))
                return names;
            // STT_FUNC symbols marked as CUDA entry points (st_other bit 0x10) are kernels.
            if ((info & 0xf) != 2 || (other & 0x10) == 0 || name_off >= strtab.size()) continue;
            const std::size_t end = strtab.find('\0', name_off);
            if (end == std::string_view::npos) continue;
            const std::string_view name = strtab.substr(name_off, end - name_off);
            if (seen.insert(name).second) names.emplace_back(name);
        }
    }
    return names;
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
    const std::string& b = data().bytes;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(b.data(), std::streamsize(b.size()));
    out.close();
    if (!out) throw Error(fmt::format("ObjectCode::save: cannot write \"{}\"", path.string()), 0, "ObjectCode::save");
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
