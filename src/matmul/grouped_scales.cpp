// SPDX-License-Identifier: Apache-2.0
// Per-group FP8 scales: their 16-byte slots in the caller stream's workspace, and the launches of
// the two small kernels (kernels/grouped_scales.cu) that fill them and read the amax values back.
#include "matmul/grouped_scales.hpp"

#include <algorithm>

#include <gpumath/core/device.hpp>
#include <gpumath/core/launch.hpp>
#include <gpumath/core/module.hpp>
#include <gpumath/core/program.hpp>

#include "core/stream_workspace.hpp"
#include "core/kernel_loader.hpp"
#include "matmul/grouped.hpp"
#include "matmul/kernels/grouped_scales.cu.inc"
#include "matmul/kernels/grouped_scales_params.hpp.inc"
#include "matmul/kernels/grouped_scales_params.hpp"

namespace gpumath::detail {
namespace {

using kernels::ScaleSlotParams;

/// The program of both kernels (kernels/grouped_scales.cu), made once.
const DeviceProgram& scale_program() {
    static const DeviceProgram program = [] {
        core::ProgramOptions options;
        options.name = "gpumath_grouped_scales";
        options.headers["grouped_scales_params.hpp"] = std::string(embedded::matmul_kernels_grouped_scales_params_hpp);
        return DeviceProgram(embedded::matmul_kernels_grouped_scales_cu, std::move(options));
    }();
    return program;
}

/// The two kernels on `device`, from the core kernel loader (compiled and loaded on first use, also
/// while a stream captures).
struct ScaleKernels {
    core::Kernel spread;
    core::Kernel gather;
};

ScaleKernels scale_kernels(int device) {
    return {device_kernel(device, scale_program(), "gm_spread_scales"),
            device_kernel(device, scale_program(), "gm_gather_amax")};
}

constexpr std::size_t round_up(std::size_t v, std::size_t to) { return (v + to - 1) / to * to; }

/// Both kernels: a thread per group, grid-stride beyond 1024 blocks.
core::LaunchConfig scale_launch(std::int64_t groups) {
    constexpr unsigned block = 128;
    return {.grid = {unsigned(std::min<std::int64_t>((groups + block - 1) / block, 1024))}, .block = {block}};
}

}  // namespace

core::ObjectCode compile_scale_kernels(const std::string& arch) {
    core::ProgramOptions options = scale_program().options();
    options.arch = arch;
    return core::Program(std::string(scale_program().source()), std::move(options)).compile(core::CodeType::cubin);
}

void enqueue_grouped_call(std::span<GroupOperands> groups, std::span<const std::shared_ptr<MatmulPlan>> plans,
                          PartitionedPlans& partitioned, const GroupedMatmulArgs& args, std::int64_t group_count,
                          core::StreamRef stream, int device, GroupedBackend backend, BackendChoices& choices,
                          const BackendChoiceKey& key, const HostKernelCall* kernel, const char* who) {
    const GroupedScales& s = args.scales;
    if (groups.empty()) {
        // No products, but amax_d promises 0 for every group of no rows.
        if (s.amax_d) {
            ScaleSlotParams params;
            params.amax = static_cast<float*>(s.amax_d->data());
            params.amax_stride = s.amax_d->stride(0);
            params.groups = group_count;
            core::launch(stream, scale_launch(group_count), device_kernel(device, scale_program(), "gm_gather_amax"),
                         params);
        }
        return;
    }
    if (!s.a && !s.b && !s.d && !s.amax_d) {
        enqueue_grouped(groups, plans, partitioned, GroupCall{.alpha = args.alpha, .kernel = kernel}, stream, device,
                        backend, choices, key, who);
        return;
    }
    // Scales whose every group's address is 16-byte aligned (a base so aligned and a stride of 0 or
    // a multiple of 4 floats) need no slots, unless there is an amax to zero for empty groups.
    auto aligned = [](const std::optional<TensorView>& t) {
        return !t || (reinterpret_cast<std::uintptr_t>(t->data()) % 16 == 0 && t->stride(0) % 4 == 0);
    };
    if (!s.amax_d && aligned(s.a) && aligned(s.b) && aligned(s.d)) {
        auto at = [](const std::optional<TensorView>& t, std::int64_t g) {
            return static_cast<const float*>(t->data()) + std::max<std::int64_t>(g, 0) * t->stride(0);
        };
        for (GroupOperands& g : groups) {
            if (s.a) g.scales.a = at(s.a, g.group);
            if (s.b) g.scales.b = at(s.b, g.group);
            if (s.d) g.scales.d = at(s.d, g.group);
        }
        enqueue_grouped(groups, plans, partitioned, GroupCall{.alpha = args.alpha, .kernel = kernel}, stream, device,
                        backend, choices, key, who);
        return;
    }
    const ScaleKernels kernels = scale_kernels(device);
    // The products' scratch first (each plan uses the start of the area), then the slots. The
    // workspace limit bounds every plan of these options, also those of streams_partitioned,
    // which are looked up later.
    std::size_t scratch = plans.front()->workspace_limit();
    for (const auto& p : plans) scratch = std::max(scratch, p->workspace_bytes());
    scratch = round_up(scratch, 256);
    const std::size_t slot_bytes = round_up(std::size_t(group_count) * scale_slot_stride, 256);
    StreamWorkspace::Lease lease = plans.front()->workspace().acquire(scratch + slot_bytes, stream);
    const WorkspaceArea area{.data = lease.data, .bytes = scratch};
    auto* slots = reinterpret_cast<float*>(static_cast<unsigned char*>(lease.data) + scratch);

    auto data = [](const std::optional<TensorView>& t) { return t ? static_cast<float*>(t->data()) : nullptr; };
    auto stride = [](const std::optional<TensorView>& t) { return t ? t->stride(0) : std::int64_t{0}; };
    ScaleSlotParams params;
    params.slots = slots;
    params.a = data(s.a);
    params.b = data(s.b);
    params.d = data(s.d);
    params.amax = data(s.amax_d);
    params.a_stride = stride(s.a);
    params.b_stride = stride(s.b);
    params.d_stride = stride(s.d);
    params.amax_stride = stride(s.amax_d);
    params.groups = group_count;
    core::launch(stream, scale_launch(group_count), kernels.spread, params);

    constexpr std::size_t floats_per_slot = scale_slot_stride / sizeof(float) / 4;  // 4: a, b, d, amax
    for (GroupOperands& g : groups) {
        // A strided batch (group -1) has shared scales: group 0's slots.
        float* slot = slots + std::size_t(std::max<std::int64_t>(g.group, 0)) * (scale_slot_stride / sizeof(float));
        if (s.a) g.scales.a = slot;
        if (s.b) g.scales.b = slot + floats_per_slot;
        if (s.d) g.scales.d = slot + 2 * floats_per_slot;
        if (s.amax_d) g.scales.amax_d = slot + 3 * floats_per_slot;
    }
    enqueue_grouped(groups, plans, partitioned, GroupCall{.alpha = args.alpha, .area = &area, .kernel = kernel}, stream,
                    device, backend, choices, key, who);
    if (s.amax_d) core::launch(stream, scale_launch(group_count), kernels.gather, params);
}

}  // namespace gpumath::detail
