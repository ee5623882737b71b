// SPDX-License-Identifier: Apache-2.0
/// @file
/// Grouped products: G matrix products of different M sharing K and N, as a mixture-of-experts
/// layer runs them (each expert's tokens times that expert's weights).
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include <gpumath/core/stream.hpp>
#include <gpumath/detail/integral_range.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/matmul/options.hpp>
#include <gpumath/tensor.hpp>

namespace gpumath {

namespace detail {
class GroupedState;
}  // namespace detail

/// How a grouped product with group sizes on the host runs its G products (sizes in device memory
/// always run gpumath's grouped kernel: see DeviceGroupSizes).
enum class GroupedBackend : std::uint8_t {
    /// gpumath chooses per call: `strided_batched` when every group of a mixture-of-experts call has
    /// the same number of rows (G > 1) and D is row-major; otherwise `loop`, `streams`,
    /// `streams_partitioned`, `cublas` or `kernel` (the last two where they apply), whichever was
    /// fastest on the GPU (the host's time to enqueue decides among those within 25 % of the
    /// fastest: calls in a row go no faster than the longer of the two) when this class of call
    /// (the number of products, the powers of two of their largest and mean rows; per device, N, K,
    /// types, epilog, which grouped kernel the operands get and whether `cublas` can run them) was
    /// first met outside a capture: that call runs its products with each, the chosen one last (and
    /// synchronizes the stream once), the choice is kept and logged at info level. A capture
    /// meeting a class not measured yet runs the loop.
    automatic,
    /// One cuBLASLt product per non-empty group, on the caller's stream, in group order; each
    /// group's plan is made once (per M, layout and pointer alignment) and cached.
    loop,
    /// One strided-batched cuBLASLt product over every group: the mixture-of-experts form with equal
    /// group sizes and a row-major D only, and FP8 scales (if any) shared by every group (stride 0)
    /// without amax_d (NotSupported otherwise, before any GPU work).
    strided_batched,
    /// The loop's products (plans as for `loop`) spread over the caller's stream and up to four side
    /// streams of gpumath's, forked from the caller's stream and joined back to it with events, so
    /// that products too small to fill the GPU run side by side: the largest first, each to the
    /// stream with the least work. Work enqueued on the caller's stream afterwards waits for all of
    /// them, and a CUDA graph captured on it holds them all (the side streams join the capture).
    streams,
    /// cuBLAS's cublasGemmGroupedBatchedEx: every group's product in one call (one per 128 groups),
    /// the operands arranged as the loop's cuBLASLt plans arrange them. It has no epilogs (epilog
    /// `none` only) and takes f16, bf16 and f32 each into its own type (no FP8), with f32 compute types;
    /// NotSupported otherwise, before any GPU work. The device arrays of pointers it reads are
    /// written by a small run-time compiled kernel on the caller's stream.
    cublas,
    /// `streams` with each product planned for its share of the device: cuBLASLt's SM count target
    /// set to the SMs divided by the streams the call uses, so that its heuristics pick kernels
    /// that leave room for the products beside them (separate plans from the loop's, hence other
    /// algorithms and other bits than `loop` and `streams`).
    streams_partitioned,
    /// gpumath's run-time compiled grouped kernel, the one device group sizes run (DeviceGroupSizes),
    /// given the host sizes in its launch parameters: every group's product in one launch with f32
    /// accumulation, no cuBLASLt plan (on compute capability 9.0, warpgroup MMA with TMA loads for
    /// f16 and bf16 operands contiguous along K and 16-byte aligned; a portable kernel otherwise).
    /// The mixture-of-experts form with f16, bf16 or f32 inputs and at most 512 groups only
    /// (NotSupported otherwise, before any GPU work). The kernel is compiled on first use per type,
    /// epilog and weight layout (plan() compiles it ahead).
    kernel,
};

/// The enumerator's name ("loop", ...).
[[nodiscard]] constexpr std::string_view to_string(GroupedBackend b) noexcept {
    switch (b) {
        case GroupedBackend::automatic:
            return "automatic";
        case GroupedBackend::loop:
            return "loop";
        case GroupedBackend::strided_batched:
            return "strided_batched";
        case GroupedBackend::streams:
            return "streams";
        case GroupedBackend::cublas:
            return "cublas";
        case GroupedBackend::streams_partitioned:
            return "streams_partitioned";
        case GroupedBackend::kernel:
            return "kernel";
    }
    return "invalid GroupedBackend";
}

/// Options of a grouped product beyond MatmulOptions.
struct GroupedOptions {
    /// Which backend runs the products.
    GroupedBackend backend = GroupedBackend::automatic;
};

/// FP8 scales of a grouped product, one f32 per group in device memory: each a (G,) f32 tensor of
/// any stride (0 shares one value among the groups). Group g computes
/// `D_g = d[g] * epilog(alpha * (a[g] * A_g) @ (b[g] * B_g) + bias_g)` and writes max |D_g| (before
/// d[g] is applied) to amax_d[g]. An absent scale is 1. Only for FP8 inputs; `d` and `amax_d` only
/// with an FP8 result. cuBLASLt reads scales from 16-byte aligned addresses only, so gpumath copies
/// them to slots of its own on the stream first (one small kernel; the amax values are copied back
/// by another after the products), within the stream's workspace: capturable, nothing allocated.
/// Scales whose every element is 16-byte aligned (e.g. the first column of a (G, 4) tensor, or a
/// stride of 0 at an aligned address) are read where they are, without the copy, when there is no
/// amax_d.
struct GroupedScales {
    /// Scale of each A_g (for a per-tensor scale of all tokens, a stride of 0).
    std::optional<TensorView> a{};
    /// Scale of each B_g (each expert's weights).
    std::optional<TensorView> b{};
    /// Scale of each D_g (an FP8 result only).
    std::optional<TensorView> d{};
    /// Output: max |D_g| of each group before its D scale (an FP8 result only); 0 for a group of no
    /// rows. Its G elements must be distinct (a stride other than 0 when G > 1).
    std::optional<TensorView> amax_d{};
};

/// The per-call arguments of a grouped product. Views are not owned and must stay valid until the
/// work enqueued on the stream has finished.
struct GroupedMatmulArgs {
    /// Scales every A_g @ B_g.
    Scalar alpha = 1.0;
    /// Bias of the *_bias epilogs: (G, N), row g added to every row of D_g (a bias per column of
    /// D_g, as `MatmulArgs::bias` of shape (N,)); a stride of 0 along G shares one row.
    std::optional<TensorView> bias{};
    /// Per-group FP8 scales.
    GroupedScales scales{};
};

/// Group sizes in device memory, as a router kernel writes them, for the form of execute() that
/// needs no host synchronization: the products run in one launch of gpumath's grouped kernel (run-time
/// compiled, f32 accumulation), which reads the sizes when it runs, so a captured graph may be
/// replayed after the sizes changed. The launch covers `max_total_rows` rows (tiles past the groups'
/// rows exit at once: that is the cost of the bound); negative sizes count as 0, rows at or past the
/// bound are never computed, and rows of D past the sizes' sum are not written.
struct DeviceGroupSizes {
    /// (G,) i32 device tensor, contiguous (stride 1): the rows of A (and D) of each group, in order.
    TensorView sizes{};
    /// Upper bound on the sum of the sizes, known on the host (at most A's rows); required.
    std::int64_t max_total_rows = -1;
};

/// G planned products `D_g = epilog(alpha * A_g @ B_g + bias_g)` of different M_g sharing K and N:
/// the products of a mixture-of-experts layer.
///
/// Two forms. Per-group layouts: G layouts of A_g (M_g, K) and of B_g (K, N), executed with G
/// views of each (and G views of D_g (M_g, N)). Mixture of experts: one A (T, K) whose rows are
/// sorted by group (group g owns M_g consecutive rows), weights B (G, K, N) and one D (T, N),
/// executed with the M_g as a host array (or in device memory: DeviceGroupSizes). Every matrix needs
/// one unit-stride dimension (row- or column-major, per expert too). Groups of 0 rows are legal and
/// compute nothing.
///
/// Types f16, bf16, f32 and FP8 e4m3 (A and B of one type; D of MatmulOptions::result_type or
/// theirs), FP8 with per-group scales (GroupedScales) and cuBLASLt's FP8 rules for each group (on
/// Hopper: A row-major and every B_g column-major, i.e. K the unit-stride dimension of both); epilogs
/// none, relu, gelu, silu and their _bias forms (bias as GroupedMatmulArgs::bias). Epilogs with aux
/// outputs or inputs, bias gradients and user epilog functions are NotSupported, and so is FP8 with
/// the cublas backend or device group sizes.
///
/// The constructor only validates (it runs on machines without a GPU); plan() makes the plans of
/// the constructed sizes and is implicit on the first execute(). Execution is thread-safe: several
/// threads may call execute() on one GroupedMatmul with different streams. Nothing is allocated
/// while a stream captures a CUDA graph.
///
/// Throws InvalidArgument or NotSupported naming the operand and the group, before any GPU work;
/// CudaError without a device, CublasError when cuBLASLt fails.
class GroupedMatmul {
public:
    /// Products of per-group operands laid out like `a[g]` (M_g, K) and `b[g]` (K, N); G =
    /// a.size() = b.size() > 0. Pointers are not needed yet.
    GroupedMatmul(std::span<const TensorLayout> a, std::span<const TensorLayout> b, const MatmulOptions& options = {},
                  const GroupedOptions& grouped = {});
    /// The mixture-of-experts form: `a` (T, K) with rows sorted by group, weights `b` (G, K, N) and
    /// `group_sizes` (G values summing to T) that plan() plans for; execute() may pass other sizes.
    GroupedMatmul(const TensorLayout& a, const TensorLayout& b, std::span<const std::int64_t> group_sizes,
                  const MatmulOptions& options = {}, const GroupedOptions& grouped = {});
    /// The same with the sizes in any range of integers (`std::vector<int>`, `std::array`, ...),
    /// copied as int64 (InvalidArgument for an unsigned value past INT64_MAX).
    template <detail::IntegralRange Sizes>
    requires(!std::convertible_to<const Sizes&, std::span<const std::int64_t>>)
        GroupedMatmul(const TensorLayout& a, const TensorLayout& b, const Sizes& group_sizes,
                      const MatmulOptions& options = {}, const GroupedOptions& grouped = {})
        : GroupedMatmul(a, b,
                        std::span<const std::int64_t>(detail::to_int64(group_sizes, "group_sizes", "GroupedMatmul")),
                        options, grouped) {}
    /// Moves the plans; the moved-from GroupedMatmul is empty: its methods throw InvalidArgument
    /// ("moved-from GroupedMatmul") and its noexcept accessors return 0 or defaults.
    GroupedMatmul(GroupedMatmul&&) noexcept;
    /// Releases this object's plans and takes the other's; the moved-from GroupedMatmul is empty,
    /// as above.
    GroupedMatmul& operator=(GroupedMatmul&&) noexcept;
    GroupedMatmul(const GroupedMatmul&) = delete;
    GroupedMatmul& operator=(const GroupedMatmul&) = delete;
    ~GroupedMatmul();

    /// Makes the plan of every non-empty group of the constructed layouts and sizes (D row-major
    /// and dense, pointers 256-byte aligned; FP8 with scales a and b, and d for an FP8 result), so
    /// that an execute() with such operands plans nothing. Needs a device.
    void plan();

    /// Enqueues the products of the per-group form on `stream`: `a`, `b` and `d` hold G views each,
    /// `a[g]` and `b[g]` laid out as constructed, `d[g]` (M_g, N) of the result type, row- or
    /// column-major. No D may overlap another D or any input.
    void execute(std::span<const TensorView> a, std::span<const TensorView> b, std::span<const TensorView> d,
                 const GroupedMatmulArgs& args = {}, core::StreamRef stream = core::current_stream());
    /// Enqueues the products of the mixture-of-experts form: `a` (T, K) and `b` (G, K, N) laid out as
    /// constructed except that T = the sum of `group_sizes` (host memory, G non-negative values);
    /// `d` (T, N) of the result type, row- or column-major, overlapping no input.
    void execute(const TensorView& a, const TensorView& b, const TensorView& d,
                 std::span<const std::int64_t> group_sizes, const GroupedMatmulArgs& args = {},
                 core::StreamRef stream = core::current_stream());
    /// The same with the sizes in any range of integers, copied as int64 first (pass int64 to avoid
    /// the copy on a hot path).
    template <detail::IntegralRange Sizes>
    requires(!std::convertible_to<const Sizes&, std::span<const std::int64_t>>) void execute(
        const TensorView& a, const TensorView& b, const TensorView& d, const Sizes& group_sizes,
        const GroupedMatmulArgs& args = {}, core::StreamRef stream = core::current_stream()) {
        execute(a, b, d, std::span<const std::int64_t>(detail::to_int64(group_sizes, "group_sizes", "GroupedMatmul")),
                args, stream);
    }
    /// The mixture-of-experts form with group sizes in device memory (capturable: no host
    /// synchronization): `a` and `d` hold at least `group_sizes.max_total_rows` rows, laid out as for
    /// host sizes. One launch of gpumath's grouped kernel (compiled on first use per type and epilog).
    void execute(const TensorView& a, const TensorView& b, const TensorView& d, const DeviceGroupSizes& group_sizes,
                 const GroupedMatmulArgs& args = {}, core::StreamRef stream = core::current_stream());

    /// Number of groups G (0 when moved from).
    [[nodiscard]] std::int64_t group_count() const noexcept;
    /// N, the columns of every group's B and D (0 when moved from).
    [[nodiscard]] std::int64_t n() const noexcept;
    /// K, shared by every group: the columns of A and rows of B (0 when moved from).
    [[nodiscard]] std::int64_t k() const noexcept;
    /// True for the mixture-of-experts form (one A, B (G, K, N), one D).
    [[nodiscard]] bool contiguous() const noexcept;
    /// The backend asked for (GroupedOptions::backend; `automatic` chooses per call, see
    /// GroupedBackend; `automatic` when moved from).
    [[nodiscard]] GroupedBackend backend() const noexcept;
    /// The element type of every D.
    [[nodiscard]] DataType result_type() const noexcept;
    /// The options given at construction.
    [[nodiscard]] const MatmulOptions& options() const noexcept;

private:
    detail::GroupedState& state(const char* api) const;
    std::unique_ptr<detail::GroupedState> state_;
};

/// The per-group form in one call: `D_g = epilog(alpha * A_g @ B_g + bias_g)` for the G views of
/// `a`, `b` and `d`, enqueued on `stream`. Each group's plan comes from matmul()'s plan cache
/// (MatmulPlanCache: a group of the same operands as a matmul() call shares its plan); the products
/// run with the backend GroupedBackend::automatic measures (choices kept process-wide). Throws as
/// GroupedMatmul.
void grouped_matmul(std::span<const TensorView> a, std::span<const TensorView> b, std::span<const TensorView> d,
                    const GroupedMatmulArgs& args = {}, const MatmulOptions& options = {},
                    core::StreamRef stream = core::current_stream());

/// The mixture-of-experts form in one call: `a` (T, K) rows sorted by group, `b` (G, K, N), `d`
/// (T, N), `group_sizes` on the host (G values summing to T). Plans as the per-group form and runs
/// as GroupedBackend::automatic: equal sizes as one strided-batched product, others with the backend
/// measured fastest, gpumath's grouped kernel among them (choices kept process-wide).
void grouped_matmul(const TensorView& a, const TensorView& b, const TensorView& d,
                    std::span<const std::int64_t> group_sizes, const GroupedMatmulArgs& args = {},
                    const MatmulOptions& options = {}, core::StreamRef stream = core::current_stream());
/// The same with the sizes in any range of integers, copied as int64 first.
template <detail::IntegralRange Sizes>
requires(!std::convertible_to<const Sizes&, std::span<const std::int64_t>>) void grouped_matmul(
    const TensorView& a, const TensorView& b, const TensorView& d, const Sizes& group_sizes,
    const GroupedMatmulArgs& args = {}, const MatmulOptions& options = {},
    core::StreamRef stream = core::current_stream()) {
    grouped_matmul(a, b, d,
                   std::span<const std::int64_t>(detail::to_int64(group_sizes, "group_sizes", "grouped_matmul")), args,
                   options, stream);
}

/// The mixture-of-experts form returning a new D (T, N), row-major, of the type matmul's
/// allocating form gives a (T, K) times one (K, N) group of `b` (`options.result_type` when set).
/// Validated as the form with a `d` view before anything is allocated; allocates, so it is refused
/// (InvalidArgument) while `stream` captures: pass `d` there.
[[nodiscard]] Tensor grouped_matmul(const TensorView& a, const TensorView& b, std::span<const std::int64_t> group_sizes,
                                    const GroupedMatmulArgs& args = {}, const MatmulOptions& options = {},
                                    core::StreamRef stream = core::current_stream());
/// The allocating form with the sizes in any range of integers, copied as int64 first.
template <detail::IntegralRange Sizes>
requires(!std::convertible_to<const Sizes&, std::span<const std::int64_t>>) [[nodiscard]] Tensor
    grouped_matmul(const TensorView& a, const TensorView& b, const Sizes& group_sizes,
                   const GroupedMatmulArgs& args = {}, const MatmulOptions& options = {},
                   core::StreamRef stream = core::current_stream()) {
    return grouped_matmul(a, b,
                          std::span<const std::int64_t>(detail::to_int64(group_sizes, "group_sizes", "grouped_matmul")),
                          args, options, stream);
}

/// The mixture-of-experts form with group sizes in device memory, in one launch of gpumath's
/// grouped kernel (see DeviceGroupSizes).
void grouped_matmul(const TensorView& a, const TensorView& b, const TensorView& d, const DeviceGroupSizes& group_sizes,
                    const GroupedMatmulArgs& args = {}, const MatmulOptions& options = {},
                    core::StreamRef stream = core::current_stream());

}  // namespace gpumath
