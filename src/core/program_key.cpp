// SPDX-License-Identifier: Apache-2.0
// The compile cache's key of a program: its text, options and every file it reaches through
// #include outside the toolkit, found as NVRTC finds them; and the bounded reads of those files.
#include <algorithm>
#include <set>
#include <cerrno>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <gpumath/core/program.hpp>

#include "core/jit.hpp"
#include "detail/scope_exit.hpp"
#include "detail/status.hpp"

namespace fs = std::filesystem;

namespace gpumath::detail {

namespace {

// Quoted or angled #include targets in `text`, in order.
std::vector<std::pair<std::string, bool>> include_directives(std::string_view text) {
    std::vector<std::pair<std::string, bool>> out;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t eol = text.find('\n', pos);
        if (eol == std::string_view::npos) eol = text.size();
        std::string_view line = text.substr(pos, eol - pos);
        pos = eol + 1;
        std::size_t i = line.find_first_not_of(" \t");
        if (i == std::string_view::npos || line[i] != '#') continue;
        i = line.find_first_not_of(" \t", i + 1);
        if (i == std::string_view::npos || line.substr(i, 7) != "include") continue;
        i = line.find_first_not_of(" \t", i + 7);
        if (i == std::string_view::npos || (line[i] != '"' && line[i] != '<')) continue;
        const char close = line[i] == '"' ? '"' : '>';
        const std::size_t end = line.find(close, i + 1);
        if (end == std::string_view::npos) continue;
        out.emplace_back(std::string(line.substr(i + 1, end - i - 1)), close == '"');
    }
    return out;
}

// Where NVRTC looks for a file named in `#include`, read from the flags it is given: a quoted
// name first in the directory of the file that includes it (the program's name and the names of
// in-memory headers count as paths, relative to the working directory) unless the flags have
// -no-source-include; then, quoted or angled, each -I directory in order. validate_options refuses
// every other spelling of an include path and --pre-include, so "-I<dir>" is the only form here.
struct IncludeSearch {
    struct Dir {
        fs::path path;
        bool hashed = true;  // false for the toolkit's: covered by its path and the NVRTC version
    };
    std::vector<Dir> dirs;
    bool source_dirs = true;
};

IncludeSearch include_search(const CompileJob& job) {
    const core::ProgramOptions& o = *job.options;
    IncludeSearch s;
    for (const std::string& f : job.flags) {
        if (f == "-no-source-include" || f == "--no-source-include") s.source_dirs = false;
        if (!f.starts_with("-I")) continue;
        std::string dir = f.substr(2);
        const bool user = std::find(o.include_dirs.begin(), o.include_dirs.end(), dir) != o.include_dirs.end();
        s.dirs.push_back({std::move(dir), user});
    }
    return s;
}

struct IncludeWalk {
    const core::ProgramOptions& options;
    const IncludeSearch& search;
    KeyHasher* hasher;  // gets each file's path and contents; null: the walk only checks
    std::set<std::string> seen;

    // Follows every #include of `text` (a file in `dir`) as NVRTC would resolve it, recursively.
    // Conditional includes are followed regardless of their condition, so the list may hold more
    // files than the compile reads, never fewer (except for includes spelled through macros).
    void follow(std::string_view text, const fs::path& dir) {
        for (const auto& [name, quoted] : include_directives(text)) {
            if (seen.size() > 4096) return;
            if (auto it = options.headers.find(name); it != options.headers.end()) {
                if (seen.insert("mem:" + name).second) follow(it->second, fs::path(name).parent_path());
                continue;
            }
            resolve(name, quoted, dir);
        }
    }

    void resolve(const std::string& name, bool quoted, const fs::path& dir) {
        const auto try_candidate = [&](const fs::path& c, bool hashed) {
            std::error_code ec;
            const fs::file_status st = fs::status(c, ec);
            // NVRTC passes over what is missing or a directory and tries the next candidate.
            if (ec || !fs::exists(st) || fs::is_directory(st)) return false;
            if (!fs::is_regular_file(st))  // NVRTC would open a FIFO and wait for a writer forever
                throw_invalid(fmt::format("#include {}{}{}: \"{}\" is not a regular file (a FIFO, socket or device); "
                                          "NVRTC cannot read it as a header",
                                          quoted ? '"' : '<', name, quoted ? '"' : '>', c.string()),
                              "Program::compile");
            if (!hashed) return true;
            std::string key = c.lexically_normal().string();
            if (!seen.insert(key).second) return true;
            const std::optional<std::string> contents = read_file(c);
            if (hasher != nullptr) {
                hasher->field(key);
                hasher->field(contents ? *contents : std::string("(unreadable)"));
            }
            if (contents) follow(*contents, c.parent_path());
            return true;
        };
        if (quoted && search.source_dirs && try_candidate(dir / name, true)) return;
        for (const IncludeSearch::Dir& d : search.dirs)
            if (try_candidate(d.path / name, d.hashed)) return;
    }
};

}  // namespace

// Walks the files `job` reaches through #include outside the toolkit, in the order NVRTC finds
// them, giving `hasher` (unless null) each one's path and contents. InvalidArgument when one
// resolves to something other than a regular file.
void walk_includes(const CompileJob& job, KeyHasher* hasher) {
    const IncludeSearch search = include_search(job);
    IncludeWalk walk{*job.options, search, hasher, {}};
    walk.follow(*job.source, fs::path(job.options->name).parent_path());
}

Digest compile_key(const CompileJob& job) {
    const core::ProgramOptions& o = *job.options;
    KeyHasher h;
    h.field("gpumath jit compile key v2");
    h.field(std::uint64_t(nvrtc_version()));
    h.field(std::uint64_t(job.target));
    h.field(o.name);
    h.field(*job.source);
    h.field(std::uint64_t(job.flags.size()));
    for (const std::string& f : job.flags) h.field(f);
    h.field(std::uint64_t(o.headers.size()));
    for (const auto& [name, text] : o.headers) {
        h.field(name);
        h.field(text);
    }
    h.field(std::uint64_t(job.name_expressions.size()));
    for (const std::string& e : job.name_expressions) h.field(e);
    walk_includes(job, &h);
    return h.finish();
}

FileStatus read_regular_file(const fs::path& path, std::string& out, bool follow_symlinks, std::uint64_t max_bytes) {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever. The type
    // is checked on the descriptor itself, so nothing can swap the file between check and read.
    int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC;
    if (!follow_symlinks) flags |= O_NOFOLLOW;
    const int fd = ::open(path.c_str(), flags);  // NOLINT(cppcoreguidelines-pro-type-vararg)
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) return FileStatus::missing;
        // ELOOP: a symbolic link refused by O_NOFOLLOW; ENXIO: a socket or a device without driver.
        return errno == ELOOP || errno == ENXIO ? FileStatus::not_regular : FileStatus::unreadable;
    }
    const ScopeExit close_fd([fd] { (void)::close(fd); });
    struct stat st {};
    if (::fstat(fd, &st) != 0) return FileStatus::unreadable;
    if (!S_ISREG(st.st_mode)) return FileStatus::not_regular;
    if (std::uint64_t(st.st_size) > max_bytes) return FileStatus::too_large;
    out.clear();
    out.reserve(std::size_t(st.st_size));
    char buffer[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            return FileStatus::unreadable;
        }
        // The size fstat gives is not a bound: files of /proc report 0 and may be far larger.
        if (out.size() + std::size_t(n) > max_bytes) return FileStatus::too_large;
        out.append(buffer, std::size_t(n));
    }
    return FileStatus::ok;
}

std::optional<std::string> read_file(const fs::path& path) {
    std::string out;
    if (read_regular_file(path, out, /*follow_symlinks=*/true) != FileStatus::ok) return std::nullopt;
    return out;
}

}  // namespace gpumath::detail
