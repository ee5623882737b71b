// SPDX-License-Identifier: Apache-2.0
// Files for the library-loading tests: a temporary folder, bytes written to and read from files,
// and a real shared library of this machine to copy and truncate.
#pragma once

#include <stdlib.h>  // mkdtemp

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>

namespace gpumath::test {

/// A fresh folder under $TMPDIR (or /tmp), removed with everything in it when this goes.
class TempDir {
public:
    TempDir() {
        const char* base = std::getenv("TMPDIR");
        std::string pattern = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/gpumath-test-XXXXXX";
        if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
    }
    ~TempDir() {
        std::error_code ignored;
        if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    TempDir(TempDir&&) = delete;
    TempDir& operator=(TempDir&&) = delete;

    /// The folder; empty when it could not be made.
    [[nodiscard]] const std::string& path() const { return path_; }
    /// `name` inside the folder.
    [[nodiscard]] std::string operator/(const std::string& name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

/// Writes `bytes` to `path` (replacing it); false on failure.
inline bool write_file(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return static_cast<bool>(out);
}

/// The bytes of `path`; empty when it cannot be read.
inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The file libzstd.so.1 resolves to in the system's library folders, symbolic links resolved (e.g.
/// /usr/lib/x86_64-linux-gnu/libzstd.so.1.5.4); empty when the machine has none. A real shared
/// library that the test processes have not loaded: its ZSTD_versionNumber is a known symbol.
inline std::string system_zstd() {
    for (const char* folder : {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
                               "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/lib64", "/usr/lib"}) {
        std::error_code error;
        const std::filesystem::path found =
            std::filesystem::canonical(std::filesystem::path(folder) / "libzstd.so.1", error);
        if (!error) return found.string();
    }
    return {};
}

}  // namespace gpumath::test
