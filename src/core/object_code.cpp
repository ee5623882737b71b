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
    detail::DecompressionBudget budget = detail::decompression_budget();
    const detail::CodeRead read = detail::check_object_code(bytes, type, budget);
    if (read.unsupported) detail::throw_not_supported(fmt::format("bytes: {}", read.defect), api);
    if (!read.defect.empty()) {
        if (type == CodeType::ptx) detail::throw_invalid(fmt::format("bytes: {}", read.defect), api);
        detail::throw_invalid(fmt::format("bytes: not a well-formed {}: {}", core::to_string(type), read.defect), api);
    }
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
