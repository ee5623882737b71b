// SPDX-License-Identifier: Apache-2.0
// The grouped kernel's call of a validated mixture-of-experts product: its parameters from the
// operands, the limits of its grid, the refusals that send a call to another backend, and the
// automatic backend's kernel step. Host only, but for the launch the automatic step may make.
#include "matmul/grouped.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>

#include <fmt/format.h>

#include "matmul/checks.hpp"
#include "matmul/shapes.hpp"
#include "matmul/types.hpp"

namespace gpumath::detail {

namespace {

/// The grouped-kernel call of a validated mixture-of-experts call covering `max_rows` rows (sizes
/// not filled in), after the matmul rules of one group and the bias's type; NotSupported past the
/// kernel's grid, naming `bound` (where the rows come from) and ending with `remedy`.
GroupedKernelCall kernel_call(const TensorView& a, const TensorView& b, const TensorView& d, std::int64_t max_rows,
                              const GroupedMatmulArgs& args, const GroupedShape& shape, const MatmulOptions& options,
                              const char* bound, const char* remedy, const char* api) {
    if (args.bias && args.bias->dtype() != shape.result)
        invalid(api, "bias: dtype {}; the bias of a grouped product has the result type {}",
                to_string(args.bias->dtype()), to_string(shape.result));
    // The matmul rules (layouts, types, epilog) through one group of (up to) two rows: every group
    // of the call has these layouts but for its number of rows, and two rows keep a matrix without a
    // unit stride from passing as a one-row matrix with a leading dimension.
    MatmulSignature sig;
    const std::int64_t rows = std::min<std::int64_t>(2, std::max<std::int64_t>(1, a.shape(0)));
    const std::int64_t a_shape[] = {rows, shape.k}, a_strides[] = {a.stride(0), a.stride(1)};
    const std::int64_t d_shape[] = {rows, shape.n}, d_strides[] = {d.stride(0), d.stride(1)};
    sig.a = TensorLayout(a.dtype(), a_shape, a_strides);
    sig.b = weights_of(b);
    sig.d = TensorLayout(d.dtype(), d_shape, d_strides);
    if (args.bias) {
        const std::int64_t bias_shape[] = {shape.n}, bias_strides[] = {args.bias->stride(1)};
        sig.bias = TensorLayout(args.bias->dtype(), bias_shape, bias_strides);
    }
    (void)analyze(sig, options, api);
    GroupedKernelCall c;
    c.variant = {.input = shape.input, .result = shape.result, .epilog = options.epilog};
    GroupedKernelParams& p = c.params;
    p.a = a.data();
    p.b = b.data();
    p.d = d.data();
    p.bias = args.bias ? args.bias->data() : nullptr;
    p.groups = shape.groups;
    p.max_rows = max_rows;
    p.n = shape.n;
    p.k = shape.k;
    p.a_row = a.stride(0);
    p.a_col = a.stride(1);
    p.b_group = b.stride(0);
    p.b_row = b.stride(1);
    p.b_col = b.stride(2);
    p.d_row = d.stride(0);
    p.d_col = d.stride(1);
    p.bias_group = args.bias ? args.bias->stride(0) : 0;
    p.bias_col = args.bias ? args.bias->stride(1) : 0;
    p.alpha = static_cast<float>(args.alpha.real);
    if ((shape.n + grouped_tile - 1) / grouped_tile > 65535)
        unsupported(api, "b: N = {}; the grouped kernel covers N in at most 65535 tiles of {} columns", shape.n,
                    grouped_tile);
    if (grouped_row_tiles(p.max_rows, p.groups) > std::numeric_limits<std::int32_t>::max())
        unsupported(api,
                    "{}: {} rows over {} groups; the grouped kernel covers them in at most 2^31 - 1 row tiles of {} "
                    "rows plus one per group: split the call{}",
                    bound, p.max_rows, p.groups, grouped_tile, remedy);
    return c;
}

}  // namespace

GroupedKernelCall device_sizes_call(const TensorView& a, const TensorView& b, const TensorView& d,
                                    const DeviceGroupSizes& sizes, const GroupedMatmulArgs& args,
                                    const GroupedShape& shape, const MatmulOptions& options, const char* api) {
    if (is_fp8(shape.input))
        unsupported(api,
                    "a: {} inputs with group sizes in device memory; gpumath's grouped kernel takes f16, bf16 and "
                    "f32 (FP8 grouped products run with host group sizes)",
                    to_string(shape.input));
    if (shape.groups > grouped_device_groups)
        unsupported(api,
                    "b: {} groups; with sizes in device memory each tile of the grouped kernel finds its group by "
                    "reading the sizes before it, so a call takes at most {} groups: split the call, or pass the "
                    "sizes on the host",
                    shape.groups, grouped_device_groups);
    GroupedKernelCall c = kernel_call(a, b, d, sizes.max_total_rows, args, shape, options, "group_sizes.max_total_rows",
                                      ", or pass the sizes on the host", api);
    c.params.sizes = static_cast<const std::int32_t*>(sizes.sizes.data());
    return c;
}

std::string host_kernel_refusal(const GroupedShape& shape, std::int64_t rows) {
    if (is_fp8(shape.input))
        return fmt::format("{} inputs; gpumath's grouped kernel takes f16, bf16 and f32", to_string(shape.input));
    if (shape.groups > grouped_inline_groups)
        return fmt::format("{} groups; the kernel takes the host sizes of at most {} groups in its launch",
                           shape.groups, grouped_inline_groups);
    if (rows > std::numeric_limits<std::int32_t>::max())
        return fmt::format("{} rows; the kernel's group sizes are 32-bit", rows);
    return {};
}

HostKernelCall host_sizes_call(const TensorView& a, const TensorView& b, const TensorView& d,
                               std::span<const std::int64_t> sizes, const GroupedMatmulArgs& args,
                               const GroupedShape& shape, const MatmulOptions& options, const char* api) {
    if (std::string why = host_kernel_refusal(shape, a.shape(0)); !why.empty())
        unsupported(api, "grouped.backend: kernel cannot run this call: {}", why);
    HostKernelCall h{.call = kernel_call(a, b, d, a.shape(0), args, shape, options, "a", "", api), .sizes = {}};
    for (std::size_t g = 0; g < sizes.size(); ++g) h.sizes.v[g] = std::int32_t(sizes[g]);
    h.call.variant.inline_sizes = true;
    return h;
}

std::optional<HostKernelCall> kernel_candidate(const TensorView& a, const TensorView& b, const TensorView& d,
                                               std::span<const std::int64_t> sizes, const GroupedCallClass& calls,
                                               const GroupedMatmulArgs& args, const GroupedShape& shape,
                                               const MatmulOptions& options, int device, BackendChoiceKey& key,
                                               const char* api) {
    key.device = device;
    key.calls = calls;
    key.kernel = -1;
    if (!host_kernel_refusal(shape, a.shape(0)).empty()) return std::nullopt;
    // The kernel accumulates in f32: a candidate only where that is what the compute type asks
    // for, and on GPUs its tensor-core kernels run on (cp.async: compute capability 8.0).
    if (options.compute_type != ComputeType::automatic && options.compute_type != ComputeType::f32) return std::nullopt;
    if (!grouped_kernel_device_refusal(shape.input, grouped_device_traits(device).cc).empty()) return std::nullopt;
    std::optional<HostKernelCall> h;
    try {
        h = host_sizes_call(a, b, d, sizes, args, shape, options, api);
    } catch (const InvalidArgument&) {
        return std::nullopt;
    } catch (const NotSupported&) {
        return std::nullopt;
    }
    key.kernel = int(grouped_kernel_layout(h->call.variant, h->call.params, device));
    return h;
}

std::optional<HostKernelCall> automatic_kernel_step(const TensorView& a, const TensorView& b, const TensorView& d,
                                                    std::span<const std::int64_t> sizes, const GroupedMatmulArgs& args,
                                                    const GroupedShape& shape, const MatmulOptions& options,
                                                    int (*current_device)(), const BackendChoices& choices,
                                                    BackendChoiceKey& key, core::StreamRef stream, bool& launched,
                                                    const char* api) {
    launched = false;
    const GroupedCallClass calls = call_class(sizes);
    if (calls.products <= 1) return std::nullopt;  // automatic measures two products or more
    const int device = current_device();
    if (device < 0) return std::nullopt;
    std::optional<HostKernelCall> kernel =
        kernel_candidate(a, b, d, sizes, calls, args, shape, options, device, key, api);
    if (kernel && choices.find(key) == GroupedBackend::kernel) {
        run_host_kernel(*kernel, stream, api);
        launched = true;
    }
    return kernel;
}

}  // namespace gpumath::detail
