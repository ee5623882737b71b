// SPDX-License-Identifier: Apache-2.0
// Shared by the JIT tests: the disk cache off for the whole test program (registered by including
// this header), temporary directories, unique tokens.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <gpumath/core/object_code.hpp>
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

/// A fatbin of `images` (each a fatbinary kind, "elf", "ptx" or "nvvm" (LTO-IR), and its bytes, all
/// for sm_90), made by the toolkit's fatbinary tool with its default options and then `options`
/// (e.g. "--compress-all --compress-mode=speed"); empty where the build found no such tool
/// (GPUMATH_TEST_FATBINARY names it). fatbinary copies damaged images as they are.
inline std::string fatbin_of_images(const std::vector<std::pair<std::string, std::string>>& images,
                                    const std::string& options = {}) {
#ifdef GPUMATH_TEST_FATBINARY
    const TempDir dir;
    const std::filesystem::path out = dir.path() / "k.fatbin";
    std::string command = std::string("\"") + GPUMATH_TEST_FATBINARY + "\" --create=\"" + out.string() + "\"";
    for (std::size_t i = 0; i < images.size(); ++i) {
        const std::filesystem::path file = dir.path() / ("image" + std::to_string(i));
        std::ofstream(file, std::ios::binary) << images[i].second;
        command += " --image3=kind=" + images[i].first + ",sm=90,file=\"" + file.string() + "\"";
    }
    command += " " + options;
    if (std::system(command.c_str()) != 0) return {};
    std::ifstream in(out, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
#else
    (void)images;
    (void)options;
    return {};
#endif
}

/// A fatbin holding `cubin` (sm_90) and `ptx` (compute_90): fatbin_of_images with those two.
inline std::string fatbin_of(const std::string& cubin, const std::string& ptx, const std::string& options = {}) {
    return fatbin_of_images({{"elf", cubin}, {"ptx", ptx}}, options);
}

/// The bytes of `code` as a string.
inline std::string bytes_of(const core::ObjectCode& code) { return {code.text().data(), code.text().size()}; }

/// The `T` stored little-endian at `at` of `s` (which must hold it).
template <class T>
T get(const std::string& s, std::size_t at) {
    T v{};
    std::memcpy(&v, s.data() + at, sizeof v);
    return v;
}

/// `s` with `v` stored little-endian at `at`.
template <class T>
std::string with(std::string s, std::size_t at, T v) {
    std::memcpy(s.data() + at, &v, sizeof v);
    return s;
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
