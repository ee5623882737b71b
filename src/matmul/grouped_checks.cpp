// SPDX-License-Identifier: Apache-2.0
// The rules of grouped products that no single matmul checks: the group count, shared K and N, one
// input type, group sizes, the (G, N) bias and outputs overlapping across groups. Host only: no CUDA
// calls. The grouped kernel's own call (its parameters, limits and the automatic backend's kernel
// step) is in grouped_kernel_call.cpp, the slicing of a call into one matmul per group in
// grouped_slices.cpp.
#include "matmul/grouped.hpp"
#include "matmul/shapes.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <queue>
#include <span>
#include <tuple>
#include <utility>
#include <vector>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "detail/enum_check.hpp"
#include "matmul/checks.hpp"
#include "matmul/types.hpp"

namespace gpumath::detail {
namespace {

bool grouped_epilog(Epilog e) noexcept {
    return e == Epilog::none || e == Epilog::relu || e == Epilog::gelu || e == Epilog::silu || e == Epilog::bias ||
           e == Epilog::relu_bias || e == Epilog::gelu_bias || e == Epilog::silu_bias;
}

/// f16, bf16, f32 or FP8; the other matmul types are NotSupported.
void check_input_type(DataType t, const char* name, const char* api) {
    if (t == DataType::f16 || t == DataType::bf16 || t == DataType::f32 || is_fp8(t)) return;
    unsupported(api, "{}: {} given; grouped products take f16, bf16, f32 or FP8 (e4m3)", name, to_string(t));
}

DataType result_of(DataType input, const MatmulOptions& options) {
    return options.result_type ? *options.result_type : *default_result(input);
}

/// An operand's bytes, with the group and name a message gives it.
struct Range : ByteRange {
    std::int64_t group = 0;
    const char* name = "";
    const TensorView* view = nullptr;
};

Range range_of(const TensorView& v, std::int64_t group, const char* name) { return {bytes_of(v), group, name, &v}; }

/// Where a matrix lies on the grid of its parent: outputs that are blocks of one parent matrix (the
/// same element size and strides, a unit stride, the other stride at least both extents, starts a
/// whole number of elements apart) share a lattice and interleave in memory without sharing an
/// element (column-major slices of a D, say); whether two of them do is a question about
/// rectangles on that grid.
struct Lattice {
    std::int64_t element = 0, ld = 0;
    int unit = -1;               // the dimension of stride 1
    std::uintptr_t residue = 0;  // the start's address modulo the element size
};

/// The lattice of `v`, or none (unit -1) for a matrix no block rule covers.
Lattice lattice_of(const TensorView& v) {
    if (v.rank() != 2) return {};
    const int unit = v.stride(1) == 1 ? 1 : v.stride(0) == 1 ? 0 : -1;
    if (unit < 0) return {};
    const std::int64_t ld = v.stride(1 - unit);
    if (ld <= 0 || v.shape(unit) > ld) return {};
    const auto element = std::int64_t(size_of(v.dtype()));
    return {element, ld, unit, reinterpret_cast<std::uintptr_t>(v.data()) % std::uintptr_t(element)};
}

/// Rows [r0, r1) and columns [c0, c1) of a lattice's grid (rows of `ld` elements from its origin),
/// covered by output `output`.
struct Rect {
    std::int64_t r0, r1, c0, c1;
    std::size_t output;
};

/// Two outputs of one lattice sharing an element, as indices into `outputs` (none when they are all
/// apart): each output is one rectangle of the grid, or two where it wraps past the grid's width,
/// swept by rows with the active rectangles ordered by column (they never overlap, so a new one
/// meets one only if it meets a neighbour). O(n log n).
std::optional<std::pair<std::size_t, std::size_t>> lattice_overlap(const std::vector<Range>& outputs,
                                                                   std::span<const std::size_t> members,
                                                                   const Lattice& l) {
    std::uintptr_t origin = std::numeric_limits<std::uintptr_t>::max();
    for (std::size_t i : members) origin = std::min(origin, outputs[i].lo);
    std::vector<Rect> rects;
    for (std::size_t i : members) {
        const TensorView& v = *outputs[i].view;
        const auto offset = std::int64_t((outputs[i].lo - origin) / std::uintptr_t(l.element));
        const std::int64_t q = offset / l.ld, r = offset % l.ld, rows = v.shape(1 - l.unit), width = v.shape(l.unit);
        if (r + width <= l.ld) {
            rects.push_back({q, q + rows, r, r + width, i});
        } else {
            rects.push_back({q, q + rows, r, l.ld, i});
            rects.push_back({q + 1, q + rows + 1, 0, r + width - l.ld, i});
        }
    }
    std::sort(rects.begin(), rects.end(), [](const Rect& x, const Rect& y) { return x.r0 < y.r0; });
    std::map<std::int64_t, const Rect*> active;  // by first column
    auto later_end = [](const Rect* x, const Rect* y) { return x->r1 > y->r1; };
    std::priority_queue<const Rect*, std::vector<const Rect*>, decltype(later_end)> ending(later_end);
    for (const Rect& rect : rects) {
        while (!ending.empty() && ending.top()->r1 <= rect.r0) {
            active.erase(ending.top()->c0);
            ending.pop();
        }
        const auto next = active.lower_bound(rect.c0);
        if (next != active.end() && next->first < rect.c1) return std::pair{next->second->output, rect.output};
        if (next != active.begin() && std::prev(next)->second->c1 > rect.c0)
            return std::pair{std::prev(next)->second->output, rect.output};
        active.emplace(rect.c0, &rect);
        ending.push(&rect);
    }
    return std::nullopt;
}

/// InvalidArgument when an output overlaps another output or an input (inputs may share memory).
void check_disjoint(std::vector<Range> outputs, std::vector<Range> inputs, const char* api) {
    auto by_lo = [](const Range& x, const Range& y) { return x.lo < y.lo; };
    auto empty = [](const Range& r) { return r.lo == r.hi; };
    outputs.erase(std::remove_if(outputs.begin(), outputs.end(), empty), outputs.end());
    inputs.erase(std::remove_if(inputs.begin(), inputs.end(), empty), inputs.end());
    std::sort(outputs.begin(), outputs.end(), by_lo);
    auto overlapping = [&](std::size_t i, std::size_t j) {
        const std::size_t first = std::min(i, j), second = std::max(i, j);
        invalid(api, "d[{}]: its memory overlaps d[{}]'s; every group's D needs memory of its own",
                outputs[second].group, outputs[first].group);
    };
    // Outputs of different lattices (or of none) must not even share a byte: by start, each against
    // the furthest-reaching earlier output of another lattice.
    std::vector<Lattice> lattices;
    std::vector<std::size_t> lattice(outputs.size());  // index into lattices; a lattice of none is its own
    std::map<std::tuple<std::int64_t, std::int64_t, int, std::uintptr_t>, std::size_t> known;
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        const Lattice l = lattice_of(*outputs[i].view);
        if (l.unit >= 0) {
            const auto [at, fresh] = known.try_emplace(std::tuple(l.element, l.ld, l.unit, l.residue), lattices.size());
            lattice[i] = at->second;
            if (!fresh) continue;
        } else {
            lattice[i] = lattices.size();
        }
        lattices.push_back(l);
    }
    constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
    std::size_t best = none, other = none;  // the furthest end, and the furthest of another lattice than best's
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        const std::size_t rival = best != none && lattice[best] != lattice[i] ? best : other;
        if (rival != none && outputs[rival].hi > outputs[i].lo) overlapping(rival, i);
        if (best == none || outputs[i].hi > outputs[best].hi) {
            if (best != none && lattice[best] != lattice[i]) other = best;
            best = i;
        } else if (lattice[i] != lattice[best] && (other == none || outputs[i].hi > outputs[other].hi)) {
            other = i;
        }
    }
    // Within a lattice, the rectangles each output covers.
    std::vector<std::vector<std::size_t>> members(lattices.size());
    for (std::size_t i = 0; i < outputs.size(); ++i) members[lattice[i]].push_back(i);
    for (std::size_t k = 0; k < lattices.size(); ++k)
        if (members[k].size() > 1 && lattices[k].unit >= 0)
            if (const auto pair = lattice_overlap(outputs, members[k], lattices[k]))
                overlapping(pair->first, pair->second);
    // An output overlaps an input when some input starting before the output's end ends after its
    // start: inputs sorted by start, with the running maximum of their ends.
    std::sort(inputs.begin(), inputs.end(), by_lo);
    std::vector<std::size_t> furthest(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i)
        furthest[i] = (i > 0 && inputs[furthest[i - 1]].hi >= inputs[i].hi) ? furthest[i - 1] : i;
    for (const Range& o : outputs) {
        const auto end = std::lower_bound(inputs.begin(), inputs.end(), Range{{o.hi}}, by_lo);
        if (end == inputs.begin()) continue;
        const Range& in = inputs[furthest[std::size_t(end - inputs.begin()) - 1]];
        if (in.hi > o.lo)
            invalid(api, "d[{}]: its memory overlaps {}{}'s; an output must not alias an input", o.group, in.name,
                    in.group < 0 ? std::string() : fmt::format("[{}]", in.group));
    }
}

void check_bias(const GroupedMatmulArgs& args, const GroupedShape& shape, Epilog epilog, const char* api) {
    if (!args.bias) {
        if (epilog_takes_bias(epilog))
            invalid(api, "bias: epilog {} needs GroupedMatmulArgs::bias of shape (G, N) = ({}, {})", to_string(epilog),
                    shape.groups, shape.n);
        return;
    }
    if (!epilog_takes_bias(epilog))
        invalid(api, "bias: given, but epilog {} takes no bias; use a *_bias epilog (bias, relu_bias, ...)",
                to_string(epilog));
    const TensorView& bias = *args.bias;
    if (bias.rank() != 2 || bias.shape(0) != shape.groups || bias.shape(1) != shape.n)
        invalid(api, "bias: shape {}; a grouped bias is (G, N) = ({}, {}), row g added to group g's rows",
                shape_text(bias), shape.groups, shape.n);
}

/// The per-group FP8 scales: (G,) f32 tensors (strides are never negative), only for FP8 inputs (d and
/// amax_d for an FP8 result), amax_d with an element per group.
void check_scales(const GroupedScales& scales, const GroupedShape& shape, const char* api) {
    auto one = [&](const std::optional<TensorView>& t, const char* name) {
        if (!t) return;
        if (!is_fp8(shape.input))
            invalid(api, "scales.{}: per-group scales apply to FP8 inputs only; a is {}", name, to_string(shape.input));
        if (t->rank() != 1 || t->shape(0) != shape.groups)
            invalid(api, "scales.{}: shape {}; per-group scales are (G,) = ({},), one f32 per group", name,
                    shape_text(*t), shape.groups);
        if (t->dtype() != DataType::f32)
            invalid(api, "scales.{}: dtype {}; scales are f32", name, to_string(t->dtype()));
        check_view_memory(*t, fmt::format("scales.{}", name).c_str(), api);
        if (reinterpret_cast<std::uintptr_t>(t->data()) % sizeof(float) != 0)
            invalid(api, "scales.{}: data pointer {} is not aligned to the 4 bytes of an f32", name, t->data());
    };
    one(scales.a, "a");
    one(scales.b, "b");
    one(scales.d, "d");
    one(scales.amax_d, "amax_d");
    if ((scales.d || scales.amax_d) && !is_fp8(shape.result))
        invalid(api, "scales.{}: applies to an FP8 result only; d is {}", scales.d ? "d" : "amax_d",
                to_string(shape.result));
    if (scales.amax_d && shape.groups > 1 && scales.amax_d->stride(0) == 0)
        invalid(api,
                "scales.amax_d: stride 0 makes every group write the same element; give each group its own (a "
                "stride other than 0)");
}

/// InvalidArgument when amax_d shares memory with any of `others` (the outputs and inputs).
void check_amax_apart(const GroupedScales& scales, const std::vector<Range>& others, const char* api) {
    if (!scales.amax_d) return;
    const Range amax = range_of(*scales.amax_d, 0, "scales.amax_d");
    for (const Range& o : others)
        if (meet(o, amax))
            invalid(api, "scales.amax_d: its memory overlaps {}{}'s; an output needs memory of its own", o.name,
                    o.group < 0 ? std::string() : fmt::format("[{}]", o.group));
}

/// The scale tensors that are inputs, as ranges.
void push_scale_inputs(const GroupedScales& scales, std::vector<Range>& inputs) {
    if (scales.a) inputs.push_back(range_of(*scales.a, -1, "scales.a"));
    if (scales.b) inputs.push_back(range_of(*scales.b, -1, "scales.b"));
    if (scales.d) inputs.push_back(range_of(*scales.d, -1, "scales.d"));
}

/// `group` < 0: the one D of the mixture-of-experts form.
void check_d_type(const TensorLayout& d, std::int64_t group, const GroupedShape& shape, const char* api) {
    if (d.dtype() != shape.result)
        invalid(api, "d{}: dtype {}; the result type is {} (MatmulOptions::result_type or the inputs' default)",
                group < 0 ? std::string() : fmt::format("[{}]", group), to_string(d.dtype()), to_string(shape.result));
}

}  // namespace

void check_grouped_options(const MatmulOptions& options, const GroupedOptions& grouped, const char* api) {
    check_options(options, api);
    check_enum(grouped.backend, int(GroupedBackend::kernel) + 1, "a GroupedBackend", "grouped.backend", api);
    if (!grouped_epilog(options.epilog))
        unsupported(api,
                    "options.epilog: {} in a grouped product; grouped products take none, relu, gelu, silu and "
                    "their _bias forms (no aux outputs, aux inputs or bias gradients)",
                    to_string(options.epilog));
    if (grouped.backend == GroupedBackend::cublas && options.epilog != Epilog::none)
        unsupported(api,
                    "grouped.backend: cublas (cublasGemmGroupedBatchedEx) has no epilogs; epilog {} needs loop, "
                    "streams or automatic",
                    to_string(options.epilog));
    if (options.epilog_function)
        unsupported(api,
                    "options.epilog_function: user epilog functions are not supported in grouped products (their "
                    "row and batch indices would be group-local); use one Matmul per group");
}

template <class L>
GroupedShape check_group_layouts(std::span<const L> a, std::span<const L> b, const MatmulOptions& options,
                                 const char* api) {
    if (a.empty()) invalid(api, "a: 0 groups given; a grouped product needs at least one group");
    if (b.size() != a.size()) invalid(api, "b: {} layouts for {} groups (a has {})", b.size(), a.size(), a.size());
    GroupedShape s;
    s.groups = std::int64_t(a.size());
    for (std::size_t g = 0; g < a.size(); ++g) {
        if (a[g].rank() != 2)
            invalid(api, "a[{}]: rank {} {}; each group's A is a matrix (M_g, K)", g, a[g].rank(), shape_text(a[g]));
        if (b[g].rank() != 2)
            invalid(api, "b[{}]: rank {} {}; each group's B is a matrix (K, N)", g, b[g].rank(), shape_text(b[g]));
    }
    s.input = a[0].dtype();
    check_input_type(s.input, "a[0]", api);
    s.k = b[0].shape(0);
    s.n = b[0].shape(1);
    if (s.k == 0 || s.n == 0) invalid(api, "b[0]: shape {} is empty; K and N must be positive", shape_text(b[0]));
    for (std::size_t g = 0; g < a.size(); ++g) {
        if (a[g].dtype() != s.input)
            invalid(api, "a[{}]: dtype {} differs from a[0]'s {}; every A and B of a grouped product has one type", g,
                    to_string(a[g].dtype()), to_string(s.input));
        if (b[g].dtype() != s.input)
            invalid(api, "b[{}]: dtype {} differs from a[0]'s {}; every A and B of a grouped product has one type", g,
                    to_string(b[g].dtype()), to_string(s.input));
        if (a[g].shape(1) != s.k)
            invalid(api, "a[{}]: shape {} has K = {}; every group shares K = {} (b[0] is {})", g, shape_text(a[g]),
                    a[g].shape(1), s.k, shape_text(b[0]));
        if (b[g].shape(0) != s.k || b[g].shape(1) != s.n)
            invalid(api, "b[{}]: shape {}; every group shares (K, N) = ({}, {}) (b[0]'s)", g, shape_text(b[g]), s.k,
                    s.n);
    }
    s.result = result_of(s.input, options);
    s.f16_scale = f16_scale_type(s.input, options);
    return s;
}

template GroupedShape check_group_layouts<TensorLayout>(std::span<const TensorLayout>, std::span<const TensorLayout>,
                                                        const MatmulOptions&, const char*);
template GroupedShape check_group_layouts<TensorView>(std::span<const TensorView>, std::span<const TensorView>,
                                                      const MatmulOptions&, const char*);

GroupedShape check_moe_layouts(const TensorLayout& a, const TensorLayout& b, const MatmulOptions& options,
                               const char* api) {
    if (b.rank() != 3)
        invalid(api, "b: rank {} {}; the weights of the mixture-of-experts form are (G, K, N)", b.rank(),
                shape_text(b));
    if (a.rank() != 2)
        invalid(api, "a: rank {} {}; the mixture-of-experts form takes one A (T, K), rows sorted by group", a.rank(),
                shape_text(a));
    GroupedShape s;
    s.groups = b.shape(0);
    s.k = b.shape(1);
    s.n = b.shape(2);
    if (s.groups == 0) invalid(api, "b: shape {} has 0 groups; a grouped product needs at least one", shape_text(b));
    if (s.k == 0 || s.n == 0) invalid(api, "b: shape {} is empty; K and N must be positive", shape_text(b));
    s.input = a.dtype();
    check_input_type(s.input, "a", api);
    if (b.dtype() != s.input)
        invalid(api, "b: dtype {} differs from a's {}; A and B of a grouped product have one type",
                to_string(b.dtype()), to_string(s.input));
    if (a.shape(1) != s.k)
        invalid(api, "a: shape {} has K = {}; b {} has K = {}", shape_text(a), a.shape(1), shape_text(b), s.k);
    s.result = result_of(s.input, options);
    s.f16_scale = f16_scale_type(s.input, options);
    return s;
}

void check_group_sizes(std::span<const std::int64_t> sizes, std::int64_t groups, std::int64_t rows, const char* api) {
    if (std::int64_t(sizes.size()) != groups)
        invalid(api, "group_sizes: {} values for G = {} groups", sizes.size(), groups);
    std::int64_t sum = 0;
    for (std::size_t g = 0; g < sizes.size(); ++g) {
        if (sizes[g] < 0) invalid(api, "group_sizes[{}]: {} is negative; a group has 0 or more rows", g, sizes[g]);
        if (sizes[g] > rows - sum)
            invalid(api, "group_sizes: the first {} sizes already sum past a's {} rows (group_sizes[{}] = {})", g + 1,
                    rows, g, sizes[g]);
        sum += sizes[g];
    }
    if (sum != rows)
        invalid(api, "group_sizes: sum to {}; a and d have {} rows (every row belongs to one group)", sum, rows);
}

void check_group_call(std::span<const TensorView> a, std::span<const TensorView> b, std::span<const TensorView> d,
                      const GroupedMatmulArgs& args, const GroupedShape& shape, Epilog epilog, const char* api) {
    if (std::int64_t(d.size()) != shape.groups) invalid(api, "d: {} views for G = {} groups", d.size(), shape.groups);
    check_bias(args, shape, epilog, api);
    check_scale_range(args.alpha, Scalar(0.0), shape.f16_scale, api);
    std::vector<Range> outputs, inputs;
    outputs.reserve(d.size());
    inputs.reserve(2 * d.size() + 1);
    for (std::size_t g = 0; g < d.size(); ++g) {
        const std::int64_t M = a[g].shape(0);
        if (d[g].rank() != 2 || d[g].shape(0) != M || d[g].shape(1) != shape.n)
            invalid(api, "d[{}]: shape {}; group {} needs (M_g, N) = ({}, {})", g, shape_text(d[g]), g, M, shape.n);
        check_d_type(d[g], std::int64_t(g), shape, api);
        const MatmulArgs margs{.alpha = args.alpha};
        try {
            check_call(a[g], b[g], nullptr, margs, api);  // alignment and alpha; overlaps below
            check_view_memory(d[g], "d", api);
        } catch (const InvalidArgument&) {
            rethrow_for_group(std::int64_t(g));
        }
        if (reinterpret_cast<std::uintptr_t>(d[g].data()) % size_of(d[g].dtype()) != 0)
            invalid(api, "d[{}]: data pointer {} is not aligned to the {}-byte size of a {} element", g, d[g].data(),
                    size_of(d[g].dtype()), to_string(d[g].dtype()));
        outputs.push_back(range_of(d[g], std::int64_t(g), "d"));
        inputs.push_back(range_of(a[g], std::int64_t(g), "a"));
        inputs.push_back(range_of(b[g], std::int64_t(g), "b"));
    }
    if (args.bias) {
        check_view_memory(*args.bias, "bias", api);
        if (reinterpret_cast<std::uintptr_t>(args.bias->data()) % size_of(args.bias->dtype()) != 0)
            invalid(api, "bias: data pointer {} is not aligned to its element size", args.bias->data());
        inputs.push_back(range_of(*args.bias, -1, "bias"));
    }
    check_scales(args.scales, shape, api);
    push_scale_inputs(args.scales, inputs);
    std::vector<Range> others = outputs;
    others.insert(others.end(), inputs.begin(), inputs.end());
    check_amax_apart(args.scales, others, api);
    check_disjoint(std::move(outputs), std::move(inputs), api);
}

void check_moe_call(const TensorView& a, const TensorView& b, const TensorView& d, std::int64_t rows,
                    const GroupedMatmulArgs& args, const GroupedShape& shape, Epilog epilog, const char* api) {
    if (d.rank() != 2 || d.shape(0) != rows || d.shape(1) != shape.n)
        invalid(api, "d: shape {}; the mixture-of-experts form writes (T, N) = ({}, {})", shape_text(d), rows, shape.n);
    check_d_type(d, -1, shape, api);
    // The groups' D blocks are disjoint when D's rows are: a unit stride along one dimension and a
    // leading dimension that covers the other.
    const std::int64_t M = d.shape(0), N = d.shape(1);  // every group's rows together
    const bool rows_ok = (d.stride(1) == 1 && (M <= 1 || d.stride(0) >= N)) ||
                         (d.stride(0) == 1 && (N <= 1 || d.stride(1) >= M)) || (M <= 1 && N <= 1);
    if (!rows_ok)
        invalid(api,
                "d: strides {} for shape {} make elements of different rows share memory (or have no unit stride); "
                "each group writes its own rows of d",
                strides_text(d), shape_text(d));
    check_bias(args, shape, epilog, api);
    MatmulArgs margs{.alpha = args.alpha};
    if (args.bias) margs.bias = *args.bias;
    check_call(a, b, &d, margs, api);
    check_scale_range(args.alpha, Scalar(0.0), shape.f16_scale, api);
    check_scales(args.scales, shape, api);
    // D must not overlap the scales it is computed from either (check_call saw the rest).
    std::vector<Range> scale_inputs;
    push_scale_inputs(args.scales, scale_inputs);
    const Range out = range_of(d, -1, "d");
    for (const Range& s : scale_inputs)
        if (meet(s, out)) invalid(api, "d: its memory overlaps {}'s; an output must not alias an input", s.name);
    std::vector<Range> others{out, range_of(a, -1, "a"), range_of(b, -1, "b")};
    if (args.bias) others.push_back(range_of(*args.bias, -1, "bias"));
    others.insert(others.end(), scale_inputs.begin(), scale_inputs.end());
    check_amax_apart(args.scales, others, api);
}

void check_device_sizes(const DeviceGroupSizes& sizes, const TensorView& d, const GroupedShape& shape,
                        std::int64_t rows, const char* api) {
    const TensorView& s = sizes.sizes;
    if (s.rank() != 1 || s.shape(0) != shape.groups)
        invalid(api, "group_sizes.sizes: shape {}; the device sizes are (G,) = ({},)", shape_text(s), shape.groups);
    if (s.dtype() != DataType::i32)
        invalid(api, "group_sizes.sizes: dtype {}; device group sizes are i32", to_string(s.dtype()));
    if (s.shape(0) > 1 && s.stride(0) != 1)
        invalid(api,
                "group_sizes.sizes: stride {}; the kernel reads the G sizes as one contiguous i32 array (stride 1)",
                s.stride(0));
    if (reinterpret_cast<std::uintptr_t>(s.data()) % sizeof(std::int32_t) != 0)
        invalid(api, "group_sizes.sizes: data pointer {} is not aligned to the 4 bytes of an i32", s.data());
    check_view_memory(s, "group_sizes.sizes", api);
    if (sizes.max_total_rows < 0)
        invalid(api,
                "group_sizes.max_total_rows: not given ({}); device group sizes need a host-side upper bound on "
                "their sum (at most a's {} rows)",
                sizes.max_total_rows, rows);
    if (sizes.max_total_rows > rows)
        invalid(api, "group_sizes.max_total_rows: {} exceeds a's and d's {} rows", sizes.max_total_rows, rows);
    if (meet(range_of(s, -1, "group_sizes.sizes"), range_of(d, -1, "d")))
        invalid(api, "group_sizes.sizes: its memory overlaps d's; pass separate memory");
}

}  // namespace gpumath::detail
