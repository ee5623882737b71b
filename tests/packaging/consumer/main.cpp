// SPDX-License-Identifier: Apache-2.0
#include <cstdio>
#include <cstring>

#include <gpumath/gpumath.hpp>

int main() {
    if (std::strcmp(gpumath::version_string, EXPECTED_VERSION) != 0) {
        std::printf("version mismatch: headers say %s, package says %s\n", gpumath::version_string, EXPECTED_VERSION);
        return 1;
    }
    const gpumath::TensorLayout layout(gpumath::DataType::bf16, {2, 3, 4});
    if (layout.stride(0) != 12 || layout.stride(1) != 4 || layout.stride(2) != 1 || layout.size() != 24) {
        std::printf("unexpected layout %s\n", gpumath::to_string(layout).c_str());
        return 1;
    }
    try {
        (void)gpumath::TensorLayout(gpumath::DataType::f32, {-1});
        std::printf("a negative extent was accepted\n");
        return 1;
    } catch (const gpumath::InvalidArgument&) {
    }
    std::printf("gpumath %s consumer: %d CUDA device(s)\n", gpumath::version_string, gpumath::core::Device::count());
    return 0;
}
