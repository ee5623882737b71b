// SPDX-License-Identifier: Apache-2.0
// Shared by the JIT tests: the disk cache off for the whole test program (registered by including
// this header), temporary directories, unique tokens.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
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
