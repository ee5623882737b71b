// SPDX-License-Identifier: Apache-2.0
// The fuzz targets (tests/fuzz/targets) in the test suite: each one runs its seeds, every input
// kept in tests/fuzz/regressions/<target>/ (crashes fuzzing found, kept after their fix so they
// stay fixed), and deterministic mutations of its seeds (GPUMATH_FUZZ_SEED,
// GPUMATH_FUZZ_ITERATIONS). A finding aborts the program, as it does the fuzzer; under the asan
// preset the sanitizers watch too. scripts/fuzz.sh runs the same targets coverage-guided.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <gpumath/log.hpp>

#include "fuzz/fuzz_util.hpp"
#include "fuzz/targets/seeds.hpp"
#include "fuzz/targets/target.hpp"

namespace fs = std::filesystem;

namespace {

std::vector<std::string> expected_names() {
    std::vector<std::string> names;
    std::stringstream list(GPUMATH_FUZZ_TARGET_NAMES);
    for (std::string name; std::getline(list, name, ',');) names.push_back(name);
    return names;
}

void run(const gpumath::fuzz::Target& t, const std::string& input) {
    t.body(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(input.data()), input.size()));
}

// One to eight changes: a byte replaced or inverted, a cut, bytes inserted or repeated.
std::string mutated(std::mt19937_64& rng, std::string s) {
    const int changes = 1 + int(rng() % 8);
    for (int c = 0; c < changes; ++c) {
        const std::size_t at = s.empty() ? 0 : std::size_t(rng() % s.size());
        switch (rng() % 5) {
            case 0:
                if (!s.empty()) s[at] = char(rng());
                break;
            case 1:
                if (!s.empty()) s[at] = char(~s[at]);
                break;
            case 2:
                s.resize(at);
                break;
            case 3:
                s = s.substr(0, at) + std::string(1 + rng() % 16, char(rng())) + s.substr(at);
                break;
            default:
                s = s.substr(0, at) + s.substr(at, 1 + rng() % 64) + s.substr(at);
                break;
        }
    }
    return s;
}

class QuietLog {
public:
    QuietLog() : level_(gpumath::log_level()) { gpumath::set_log_level(gpumath::LogLevel::off); }
    ~QuietLog() { gpumath::set_log_level(level_); }
    QuietLog(const QuietLog&) = delete;
    QuietLog& operator=(const QuietLog&) = delete;

private:
    gpumath::LogLevel level_;
};

}  // namespace

TEST(FuzzTargets, EveryTargetIsRegisteredWithSeeds) {
    std::set<std::string> registered;
    for (const gpumath::fuzz::Target& t : gpumath::fuzz::targets()) registered.insert(t.name);
    for (const std::string& name : expected_names()) {
        EXPECT_TRUE(registered.count(name)) << name << " is not linked into the test";
#ifndef GPUMATH_TEST_FATBINARY
        if (name == "fatbin" || name == "lz4" || name == "zstd") continue;  // their seeds come from fatbinary
#endif
        if (name == "ld_so_cache" && !fs::exists("/etc/ld.so.cache")) continue;  // its seed is the system's
        EXPECT_FALSE(gpumath::fuzz::seeds(name).empty()) << name << " has no seeds";
    }
    EXPECT_EQ(registered.size(), expected_names().size());
}

TEST(FuzzTargets, SeedsRegressionsAndMutationsRunClean) {
    const QuietLog quiet;
    const int per_seed = gpumath::test::fuzz::iterations(4000) / 20;
    std::mt19937_64 rng(gpumath::test::fuzz::fuzz_seed() + 40);
    for (const gpumath::fuzz::Target& t : gpumath::fuzz::targets()) {
        SCOPED_TRACE(t.name);
        const std::vector<std::string> seeds = gpumath::fuzz::seeds(t.name);
        for (const std::string& seed : seeds) run(t, seed);
        int kept = 0;
        const fs::path dir = fs::path(GPUMATH_FUZZ_REGRESSIONS) / t.name;
        if (fs::is_directory(dir))
            for (const auto& file : fs::directory_iterator(dir)) {
                std::ifstream in(file.path(), std::ios::binary);
                run(t, std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
                ++kept;
            }
        int mutations = 0;
        for (const std::string& seed : seeds)
            for (int i = 0; i < per_seed; ++i, ++mutations) run(t, mutated(rng, seed));
        std::printf("[ fuzz     ] %s: %zu seeds, %d kept inputs, %d mutations\n", t.name.c_str(), seeds.size(), kept,
                    mutations);
    }
}
