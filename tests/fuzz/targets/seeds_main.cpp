// SPDX-License-Identifier: Apache-2.0
// Writes every target's seeds to DIR/<target>/seed-<n> (scripts/fuzz.sh's corpus).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gpumath/log.hpp>

#include "fuzz/targets/seeds.hpp"
#include "fuzz/targets/target.hpp"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    for (const gpumath::fuzz::Target& t : gpumath::fuzz::targets()) {
        const std::filesystem::path dir = std::filesystem::path(argv[1]) / t.name;
        std::filesystem::create_directories(dir);
        const std::vector<std::string> seeds = gpumath::fuzz::seeds(t.name);
        for (std::size_t i = 0; i < seeds.size(); ++i)
            std::ofstream(dir / ("seed-" + std::to_string(i)), std::ios::binary) << seeds[i];
        std::printf("%s: %zu seeds\n", t.name.c_str(), seeds.size());
    }
    return 0;
}
