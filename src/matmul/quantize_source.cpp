// SPDX-License-Identifier: Apache-2.0
// The programs of FP8 quantization: kernels/quantize.cu (embedded at build time) with one set of
// macros per (element type, FP8 type), compiled and loaded by the core kernel loader.
#include "matmul/quantize_source.hpp"

#include <array>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include <gpumath/core/program.hpp>
#include "detail/status.hpp"
#include "matmul/kernels/quantize.cu.inc"
#include "matmul/kernels/quantize_params.hpp.inc"

namespace gpumath::detail {
namespace {

struct ElementMacros {
    int kind;  // GM_IN_KIND
    int bytes;
    const char* type;
};

ElementMacros element_macros(DataType element) {
    switch (element) {
        case DataType::f16:
            return {0, 2, "__half"};
        case DataType::bf16:
            return {1, 2, "__nv_bfloat16"};
        case DataType::f32:
            return {2, 4, "float"};
        default:
            throw_invalid(fmt::format("element: {} cannot be quantized to FP8; bf16, f16 and f32 can",
                                      gpumath::to_string(element)),
                          "quantize_source");
    }
}

/// InvalidArgument unless `fp8` is an FP8 type.
void check_fp8(DataType fp8) {
    if (!is_fp8(fp8))
        throw_invalid(fmt::format("fp8: {} is not an FP8 type; e4m3 and e5m2 are", gpumath::to_string(fp8)),
                      "quantize_source");
}

}  // namespace

core::ProgramOptions quantize_options(DataType element, DataType fp8) {
    const ElementMacros e = element_macros(element);
    check_fp8(fp8);
    const bool e4m3 = fp8 == DataType::e4m3;
    core::ProgramOptions options;
    options.name = fmt::format("gpumath_quantize_{}_{}", gpumath::to_string(element), gpumath::to_string(fp8));
    options.std = "c++17";
    options.defines = {{"GM_IN_KIND", std::to_string(e.kind)},
                       {"GM_IN_BYTES", std::to_string(e.bytes)},
                       {"GM_IN_TYPE", e.type},
                       {"GM_FP8_KIND", e4m3 ? "__NV_E4M3" : "__NV_E5M2"},
                       {"GM_FP8_MAX", e4m3 ? "448.0f" : "57344.0f"},
                       {"GM_GROUP", std::to_string(quantize_group)},
                       {"GM_THREADS", std::to_string(quantize_block_threads)},
                       {"GM_UNROLL", std::to_string(quantize_unroll)}};
    options.headers["quantize_params.hpp"] = std::string(embedded::matmul_kernels_quantize_params_hpp);
    return options;
}

std::string_view quantize_source() { return embedded::matmul_kernels_quantize_cu; }

const DeviceProgram& quantize_program(DataType element, DataType fp8) {
    // The six programs, made once (their digests computed once); an unknown pair throws first,
    // checked without building its options (this runs on every quantize_fp8 call).
    (void)element_macros(element);
    check_fp8(fp8);
    static const std::array<DeviceProgram, 6> programs = [] {
        const auto make = [](DataType e, DataType f) {
            return DeviceProgram(quantize_source(), quantize_options(e, f));
        };
        return std::array<DeviceProgram, 6>{make(DataType::f16, DataType::e4m3),  make(DataType::f16, DataType::e5m2),
                                            make(DataType::bf16, DataType::e4m3), make(DataType::bf16, DataType::e5m2),
                                            make(DataType::f32, DataType::e4m3),  make(DataType::f32, DataType::e5m2)};
    }();
    const std::size_t row = element == DataType::f16 ? 0 : element == DataType::bf16 ? 1 : 2;
    return programs[2 * row + (fp8 == DataType::e4m3 ? 0 : 1)];
}

core::ObjectCode compile_quantize_kernels(DataType element, DataType fp8, const std::string& arch) {
    core::ProgramOptions options = quantize_options(element, fp8);
    options.arch = arch;
    return core::Program(std::string(quantize_source()), std::move(options)).compile(core::CodeType::cubin);
}

}  // namespace gpumath::detail
