// SPDX-License-Identifier: Apache-2.0
// Shared by the JIT tests: the disk cache off for the whole test program (registered by including
// this header), temporary directories, unique tokens.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include <unistd.h>

#include <gpumath/core/program.hpp>

namespace gpumath::test {

/// A fresh directory under the system's temporary directory, removed on destruction.
class TempDir {
public:
    TempDir() {
        static std::atomic<int> counter{0};
        std::random_device rd;
        path_ = std::filesystem::temp_directory_path() / ("gpumath-jit-test-" + std::to_string(::getpid()) + "-" +
                                                          std::to_string(rd()) + "-" + std::to_string(counter++));
        std::filesystem::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

private:
    std::filesystem::path path_;
};

/// A token unique to this process and call, to make sources that no cache has seen.
inline std::string unique_token() {
    static std::atomic<int> counter{0};
    std::random_device rd;
    return std::to_string(::getpid()) + "_" + std::to_string(rd()) + "_" + std::to_string(counter++) + "_" +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

/// A fatbin holding `cubin` (sm_90) and `ptx` (compute_90), made by the toolkit's fatbinary tool
/// with its default options and then `options` (e.g. "--compress-all --compress-mode=speed");
/// empty where the build found no such tool (GPUMATH_TEST_FATBINARY names it).
inline std::string fatbin_of(const std::string& cubin, const std::string& ptx, const std::string& options = {}) {
#ifdef GPUMATH_TEST_FATBINARY
    const TempDir dir;
    const std::filesystem::path c = dir.path() / "k.cubin", p = dir.path() / "k.ptx", out = dir.path() / "k.fatbin";
    std::ofstream(c, std::ios::binary) << cubin;
    std::ofstream(p, std::ios::binary) << ptx;
    const std::string command = std::string("\"") + GPUMATH_TEST_FATBINARY + "\" --create=\"" + out.string() +
                                "\" --image3=kind=elf,sm=90,file=\"" + c.string() +
                                "\" --image3=kind=ptx,sm=90,file=\"" + p.string() + "\" " + options;
    if (std::system(command.c_str()) != 0) return {};
    std::ifstream in(out, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
#else
    (void)cubin;
    (void)ptx;
    (void)options;
    return {};
#endif
}

/// Keeps the test program's compiles out of the user's cache directory: the disk cache is off
/// unless a test turns it on for a temporary directory.
class NoDiskCacheEnvironment : public ::testing::Environment {
public:
    void SetUp() override { core::compile_cache().set_directory({}); }
};

/// Registers NoDiskCacheEnvironment once for every test program that includes this header (an
/// inline variable: one registration however many of the program's files include it).
inline ::testing::Environment* const no_disk_cache_environment =
    ::testing::AddGlobalTestEnvironment(new NoDiskCacheEnvironment);

}  // namespace gpumath::test
