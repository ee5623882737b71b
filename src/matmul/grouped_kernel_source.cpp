// SPDX-License-Identifier: Apache-2.0
// The programs of the grouped kernels: kernels/grouped_gemm.cu (embedded at build time) with one set
// of macros per variant, each made on first use and compiled and loaded by the core kernel loader.
#include "matmul/grouped_kernel_source.hpp"

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include <fmt/format.h>

#include <gpumath/core/program.hpp>
#include "detail/status.hpp"
#include "matmul/kernels/element_conversions.cuh.inc"
#include "matmul/kernels/grouped_gemm.cu.inc"
#include "matmul/kernels/grouped_gemm_params.hpp.inc"
#include "matmul/kernels/grouped_gemm_simt.cuh.inc"
#include "matmul/kernels/grouped_gemm_sm90.cuh.inc"
#include "matmul/kernels/grouped_gemm_wgmma.cuh.inc"
#include "matmul/kernels/grouped_gemm_wmma.cuh.inc"
#include "matmul/types.hpp"

namespace gpumath::detail {
namespace {

/// The element types of A, B, D and the bias, in the order of the program tables.
std::size_t type_index(DataType t) {
    switch (t) {
        case DataType::bf16:
            return 0;
        case DataType::f16:
            return 1;
        case DataType::f32:
            return 2;
        default:
            throw_invalid(fmt::format("{}: the grouped kernel takes f16, bf16 and f32", gpumath::to_string(t)),
                          "grouped_kernel_options");
    }
}

/// GM_ACT of `e`.
int activation(Epilog e) {
    switch (e) {
        case Epilog::none:
        case Epilog::bias:
            return 0;
        case Epilog::relu:
        case Epilog::relu_bias:
            return 1;
        case Epilog::gelu:
        case Epilog::gelu_bias:
            return 2;
        case Epilog::silu:
        case Epilog::silu_bias:
            return 3;
        default:
            throw_invalid(fmt::format("epilog: {} has no grouped-kernel form", gpumath::to_string(e)),
                          "grouped_kernel_options");
    }
}

/// The variants, as their macros tell them apart: input and result type, activation, bias, where
/// the sizes are.
constexpr std::size_t variant_count = std::size_t{3} * 3 * 4 * 2 * 2;

std::size_t variant_index(const GroupedKernelVariant& v) {
    const std::size_t types = type_index(v.input) * 3 + type_index(v.result);
    const std::size_t epilog = std::size_t(activation(v.epilog)) * 2 + (epilog_takes_bias(v.epilog) ? 1 : 0);
    return (types * 8 + epilog) * 2 + (v.inline_sizes ? 1 : 0);
}

/// The Hopper kernel's shapes per variant: weight layout, block width and cluster, two of each.
constexpr std::size_t wgmma_shapes = 8;

/// InvalidArgument for what the Hopper kernel lacks.
void check_wgmma(const GroupedKernelVariant& v, GroupedWgmmaLayout layout, int block_n, int cluster) {
    constexpr const char* api = "grouped_wgmma_options";
    if (!uses_tensor_cores(v))
        throw_invalid(fmt::format("{}: the Hopper grouped kernel takes f16 and bf16", gpumath::to_string(v.input)),
                      api);
    if (layout == GroupedWgmmaLayout::none) throw_invalid("layout: none has no Hopper grouped kernel", api);
    if (block_n != 128 && block_n != 256)
        throw_invalid(fmt::format("block_n: {} columns per block; the kernel has 128 or 256", block_n), api);
    if (cluster != 1 && cluster != 2)
        throw_invalid(fmt::format("cluster: {} blocks per cluster; the kernel has 1 or 2", cluster), api);
}

/// Programs made on first use, each once; a lookup takes no lock once its program exists. Kept for
/// the process, like the modules the loader makes of them.
template <std::size_t N>
class ProgramTable {
public:
    template <class Make>
    const DeviceProgram& get(std::size_t i, const Make& make) {
        if (const DeviceProgram* p = made_[i].load(std::memory_order_acquire)) return *p;
        const std::lock_guard lock(making_);
        if (const DeviceProgram* p = made_[i].load(std::memory_order_relaxed)) return *p;
        owned_[i] = std::make_unique<const DeviceProgram>(make());
        made_[i].store(owned_[i].get(), std::memory_order_release);
        return *owned_[i];
    }

private:
    std::array<std::atomic<const DeviceProgram*>, N> made_{};
    std::array<std::unique_ptr<const DeviceProgram>, N> owned_{};
    std::mutex making_;
};

/// What every program of `v` has: its name, the element types, the epilog's macros, where the sizes
/// are, and the headers every kernel includes.
core::ProgramOptions variant_options(const GroupedKernelVariant& v, std::string name) {
    (void)type_index(v.input);  // InvalidArgument for a type the kernels lack
    (void)type_index(v.result);
    core::ProgramOptions o;
    o.name = std::move(name);
    o.std = "c++17";
    o.defines = {{"GM_IN_TYPE", cuda_element_type(v.input)},
                 {"GM_OUT_TYPE", cuda_element_type(v.result)},
                 {"GM_ACT", std::to_string(activation(v.epilog))},
                 {"GM_BIAS", epilog_takes_bias(v.epilog) ? "1" : "0"},
                 {"GM_INLINE_SIZES", v.inline_sizes ? "1" : "0"}};
    o.headers = {{"element_conversions.cuh", std::string(embedded::matmul_kernels_element_conversions_cuh)},
                 {"grouped_gemm_params.hpp", std::string(embedded::matmul_kernels_grouped_gemm_params_hpp)}};
    return o;
}

std::string_view source() { return embedded::matmul_kernels_grouped_gemm_cu; }

core::ObjectCode compile_cubin(core::ProgramOptions options, const std::string& arch) {
    options.arch = arch;
    return core::Program(std::string(source()), std::move(options)).compile(core::CodeType::cubin);
}

}  // namespace

std::string_view grouped_gemm_source() { return source(); }

core::ProgramOptions grouped_kernel_options(const GroupedKernelVariant& v) {
    core::ProgramOptions o = variant_options(
        v, fmt::format("gpumath_grouped_{}_{}_{}{}", gpumath::to_string(v.input), gpumath::to_string(v.result),
                       gpumath::to_string(v.epilog), v.inline_sizes ? "_host_sizes" : ""));
    if (uses_tensor_cores(v)) {
        o.defines.insert({{"GM_WMMA", "1"},
                          {"GM_TC_M", std::to_string(grouped_tc_tile_m)},
                          {"GM_TC_N", std::to_string(grouped_tc_tile_n)},
                          {"GM_TC_K", std::to_string(grouped_tc_tile_k)}});
        o.headers.emplace("grouped_gemm_wmma.cuh", embedded::matmul_kernels_grouped_gemm_wmma_cuh);
    } else {
        o.defines.insert({{"GM_TILE", std::to_string(grouped_tile)}, {"GM_TILE_K", std::to_string(grouped_tile_k)}});
        o.headers.emplace("grouped_gemm_simt.cuh", embedded::matmul_kernels_grouped_gemm_simt_cuh);
    }
    return o;
}

core::ProgramOptions grouped_wgmma_options(const GroupedKernelVariant& v, GroupedWgmmaLayout layout, int block_n,
                                           int cluster) {
    check_wgmma(v, layout, block_n, cluster);
    const bool b_rows = layout == GroupedWgmmaLayout::b_rows;
    core::ProgramOptions o = variant_options(
        v, fmt::format("gpumath_grouped_wgmma_{}_{}_{}_{}_n{}{}{}", gpumath::to_string(v.input),
                       gpumath::to_string(v.result), gpumath::to_string(v.epilog), b_rows ? "b_rows" : "b_cols",
                       block_n, cluster > 1 ? "_pair" : "", v.inline_sizes ? "_host_sizes" : ""));
    o.arch = "sm_90a";
    // Weights contiguous along N: the leading byte offset steps between 64-column blocks (8192
    // bytes apart), the stride byte offset between groups of 8 k-rows (1024 bytes apart). Measured
    // on the H200: the two exchanged give wrong products once an MMA spans two blocks.
    o.defines.insert({{"GM_WGMMA", "1"},
                      {"GM_WG_TYPE", v.input == DataType::bf16 ? "bf16" : "f16"},
                      {"GM_WG_B_ROWS", b_rows ? "1" : "0"},
                      {"GM_WG_BN", std::to_string(block_n)},
                      {"GM_WG_STAGES", std::to_string(grouped_wgmma_stages(block_n))},
                      {"GM_WG_BAND", std::to_string(grouped_wgmma_band)},
                      {"GM_WG_MN_LBO", "8192"},
                      {"GM_WG_MN_SBO", "1024"},
                      {"GM_WG_CLUSTER", std::to_string(cluster)}});
    o.headers.emplace("grouped_gemm_sm90.cuh", embedded::matmul_kernels_grouped_gemm_sm90_cuh);
    o.headers.emplace("grouped_gemm_wgmma.cuh", embedded::matmul_kernels_grouped_gemm_wgmma_cuh);
    return o;
}

const DeviceProgram& grouped_kernel_program(const GroupedKernelVariant& v) {
    static auto* programs = new ProgramTable<variant_count>();  // never destroyed (see ProgramTable)
    return programs->get(variant_index(v),
                         [&] { return DeviceProgram(grouped_gemm_source(), grouped_kernel_options(v)); });
}

const DeviceProgram& grouped_wgmma_program(const GroupedKernelVariant& v, GroupedWgmmaLayout layout, int block_n,
                                           int cluster) {
    check_wgmma(v, layout, block_n, cluster);
    const std::size_t shape =
        (layout == GroupedWgmmaLayout::b_cols ? 4 : 0) + (block_n == 256 ? 2 : 0) + (cluster == 2 ? 1 : 0);
    static auto* programs = new ProgramTable<variant_count * wgmma_shapes>();  // never destroyed
    return programs->get(variant_index(v) * wgmma_shapes + shape, [&] {
        return DeviceProgram(grouped_gemm_source(), grouped_wgmma_options(v, layout, block_n, cluster));
    });
}

core::ObjectCode compile_grouped_kernel(const GroupedKernelVariant& v, const std::string& arch) {
    return compile_cubin(grouped_kernel_options(v), arch);
}

core::ObjectCode compile_grouped_wgmma_kernel(const GroupedKernelVariant& v, GroupedWgmmaLayout layout, int block_n,
                                              const std::string& arch, int cluster) {
    return compile_cubin(grouped_wgmma_options(v, layout, block_n, cluster), arch);
}

}  // namespace gpumath::detail
