// SPDX-License-Identifier: Apache-2.0
// Per-group FP8 scales: their 16-byte slots in the caller stream's workspace, and the two small
// kernels that fill them and read the amax values back.
#include "matmul/grouped_scales.hpp"

#include <algorithm>

#include <gpumath/core/device.hpp>
#include <gpumath/core/launch.hpp>
#include <gpumath/core/module.hpp>
#include <gpumath/core/program.hpp>

#include "core/stream_workspace.hpp"
#include "detail/capture_mode.hpp"
#include "detail/device_registry.hpp"
#include "matmul/grouped.hpp"

namespace gpumath::detail {
namespace {

/// The kernels' parameter, by value. Strides in elements; a null scale reads as 1.
struct ScaleSlotParams {
    float* slots = nullptr;
    const float* a = nullptr;
    const float* b = nullptr;
    const float* d = nullptr;
    float* amax = nullptr;
    std::int64_t a_stride = 0, b_stride = 0, d_stride = 0, amax_stride = 0;
    std::int64_t groups = 0;
};
static_assert(sizeof(ScaleSlotParams) == 5 * sizeof(void*) + 5 * sizeof(std::int64_t),
              "ScaleSlotParams must match gm_scale_slots");

// Slot floats of group g: [16 g] a, [16 g + 4] b, [16 g + 8] d, [16 g + 12] amax.
constexpr const char* scale_kernel_source = R"(
struct gm_scale_slots {
    float* slots; const float* a; const float* b; const float* d; float* amax;
    long long sa, sb, sd, samax, groups;
};
extern "C" __global__ void gm_spread_scales(const gm_scale_slots p) {
    for (long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x; g < p.groups;
         g += (long long)gridDim.x * blockDim.x) {
        float* s = p.slots + 16 * g;
        s[0] = p.a ? p.a[g * p.sa] : 1.0f;
        s[4] = p.b ? p.b[g * p.sb] : 1.0f;
        s[8] = p.d ? p.d[g * p.sd] : 1.0f;
        s[12] = 0.0f;  // a group of no rows runs no product: its amax is 0
    }
}
// Without slots (a call of no products): every group's amax is 0.
extern "C" __global__ void gm_gather_amax(const gm_scale_slots p) {
    for (long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x; g < p.groups;
         g += (long long)gridDim.x * blockDim.x)
        p.amax[g * p.samax] = p.slots ? p.slots[16 * g + 12] : 0.0f;
}
)";

/// Per device: the two kernels, made on first use and never destroyed.
struct ScaleKernels {
    core::Kernel spread;
    core::Kernel gather;
};

ScaleKernels& scale_kernels(int device) {
    static auto& kernels = *new DeviceRegistry<ScaleKernels>();  // never destroyed
    return kernels.get(device, "grouped matmul (FP8 scales)", [](int d) {
        DeviceGuard guard(d);
        auto k = std::make_unique<ScaleKernels>();
        const RelaxedCaptureMode relaxed("loading the kernels of grouped FP8 scales");  // may be in a capture
        const core::Module module(compile_scale_kernels(core::Device(d).arch()));
        k->spread = module.kernel("gm_spread_scales", d);
        k->gather = module.kernel("gm_gather_amax", d);
        return k.release();
    });
}

constexpr std::size_t round_up(std::size_t v, std::size_t to) { return (v + to - 1) / to * to; }

/// Both kernels: a thread per group, grid-stride beyond 1024 blocks.
core::LaunchConfig scale_launch(std::int64_t groups) {
    constexpr unsigned block = 128;
    return {.grid = {unsigned(std::min<std::int64_t>((groups + block - 1) / block, 1024))}, .block = {block}};
}

}  // namespace

core::ObjectCode compile_scale_kernels(const std::string& arch) {
    core::ProgramOptions options;
    options.name = "gpumath_grouped_scales";
    options.arch = arch;
    return core::Program(scale_kernel_source, std::move(options)).compile(core::CodeType::cubin);
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
            core::launch(stream, scale_launch(group_count), scale_kernels(device).gather, params);
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
    ScaleKernels& kernels = scale_kernels(device);
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
