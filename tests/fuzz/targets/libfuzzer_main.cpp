// SPDX-License-Identifier: Apache-2.0
// libFuzzer's entry points for one target, the one GPUMATH_FUZZ_NAME names (each fuzz_<target>
// program links every target and runs one).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include <gpumath/log.hpp>

#include "fuzz/targets/target.hpp"

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
    // Warnings about hostile values would flood the fuzzer's output.
    gpumath::set_log_level(gpumath::LogLevel::off);
    if (gpumath::fuzz::find(GPUMATH_FUZZ_NAME) == nullptr) {
        std::fprintf(stderr, "gpumath fuzz: no target named %s\n", GPUMATH_FUZZ_NAME);
        std::abort();
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const gpumath::fuzz::Body body = gpumath::fuzz::find(GPUMATH_FUZZ_NAME);
    body(std::span<const std::uint8_t>(data, size));
    return 0;
}
