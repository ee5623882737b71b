// SPDX-License-Identifier: Apache-2.0
/// @file
/// FFTs across the GPUs of one node through cuFFT Xt: the stateful dist::FFT plan, its device-resident
/// dist::FFTData, and the cached dist::fft/ifft/rfft/irfft on host data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include <gpumath/core/cache.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/fft/options.hpp>
#include <gpumath/fft/plan_cache.hpp>
#include <gpumath/layout.hpp>

namespace gpumath::dist {

namespace detail {
struct FFTState;
struct FFTAccess;
}  // namespace detail

/// Options of a multi-GPU FFT plan or a dist::fft/ifft/rfft/irfft call. An aggregate: use
/// designated initializers, e.g. `{.devices = {0, 1}, .normalization = Normalization::ortho}`. An
/// enum field holding a value that is none of its enumerators is InvalidArgument naming the field.
struct FFTOptions {
    /// The GPUs the transform is spread over, in the order the data is distributed (the first slab
    /// goes to the first device). 1 to 16 distinct ordinals of this machine; one device gives an
    /// ordinary single-GPU cuFFT plan on it with the same data layout, so code runs unchanged on one
    /// GPU. Required: an empty list is InvalidArgument.
    std::vector<int> devices{};
    /// The transform kind. `automatic` picks c2c for c32/c64 input and r2c for f32/f64 input; c2r
    /// must be asked for (or use `irfft`). The free functions set it; a contradicting value is
    /// InvalidArgument.
    FFTKind kind = FFTKind::automatic;
    /// Scaling of results, as gpumath's one-GPU FFT (default `backward`: the inverse divides by n,
    /// the product of the transform lengths, c2r's output lengths).
    Normalization normalization = Normalization::backward;
    /// c2r only: the output length n along the last axis, whose input extent must be n/2 + 1. 0
    /// (default) means 2 * (m - 1) for an input extent m, as NumPy's irfft.
    std::int64_t last_axis_size = 0;
};

/// How the elements of an FFTData are spread over its devices. `natural`: the row-major array cut
/// into consecutive slabs along its first axis, the first slab on the first device (cuFFT's
/// CUFFT_XT_FORMAT_INPLACE). `shuffled`: the permuted order cuFFT Xt leaves after a transform
/// across several GPUs (CUFFT_XT_FORMAT_INPLACE_SHUFFLED: slabs of the second axis for 2-D and 3-D,
/// cuFFT's 1-D factor order for 1-D); `FFTData::copy_to` and `FFT::to_natural` give natural order
/// back. See docs/distributed.md.
enum class DataOrder : std::uint8_t {
    natural,  ///< Row-major, in consecutive slabs along the first axis, one per device in order.
    shuffled  ///< The permuted order cuFFT Xt leaves after a transform across several GPUs.
};

/// Name of a DataOrder ("natural", "shuffled").
[[nodiscard]] constexpr std::string_view to_string(DataOrder order) noexcept {
    return order == DataOrder::natural ? "natural" : "shuffled";
}

/// One device's part of an FFTData: its device, the first byte of its memory there and how many
/// bytes it holds (the allocation cuFFT made for that device, which may end in padding).
struct FFTPart {
    /// The device ordinal.
    int device = -1;
    /// The part's first byte in that device's memory (owned by the FFTData).
    void* data = nullptr;
    /// Bytes the part holds, padding included.
    std::size_t bytes = 0;
};

/// Device-resident data of one dist::FFT plan, spread over the plan's devices (cuFFT Xt's
/// `cudaLibXtDesc` from `cufftXtMalloc`, or one device buffer for a one-device plan). Made by
/// `FFT::allocate` (or `FFT::to_natural`); move-only; frees its memory when destroyed (no throw; it
/// also keeps its plan's cuFFT state alive). The buffer is in place: it holds the transform's input
/// before `FFT::execute` and its output after; real data is stored padded as cuFFT's in-place
/// real transforms need (the last axis n rounded up to 2 * (n/2 + 1) reals), which `copy_from` and
/// `copy_to` add and remove.
///
/// `copy_from` and `copy_to` block: each first waits for the executions of this data that are still
/// in flight (`FFT::execute` enqueued outside a graph capture, on whatever stream), then copies and
/// returns once its copies have finished. Kernels of the caller working on `part(i)` order
/// themselves with `FFT::execute`'s stream. A moved-from FFTData may only be destroyed or assigned
/// to: its methods throw InvalidArgument, `parts()` is 0.
class FFTData {
public:
    ~FFTData();
    /// Moves the memory; `other` is then moved-from (see above).
    FFTData(FFTData&& other) noexcept;
    /// Frees this data's memory (as the destructor does) and takes `other`'s; `other` is then
    /// moved-from.
    FFTData& operator=(FFTData&& other) noexcept;
    FFTData(const FFTData&) = delete;
    FFTData& operator=(const FFTData&) = delete;

    /// Copies the whole array `host` (host memory, dense row-major, of the plan's input layout, or its
    /// output layout) onto the devices (cufftXtMemcpy host to device), in natural order; for a c2r
    /// plan given its input layout, in the shuffled order that its transform across several GPUs
    /// reads. InvalidArgument before any copy when the layout matches neither or the pointer is null
    /// or misaligned; InvalidArgument when moved from.
    void copy_from(const TensorView& host);
    /// Copies the whole array into `host` (host memory, dense row-major, the plan's output or input
    /// layout), always in natural order whatever `order()` is (cufftXtMemcpy device to host
    /// reorders). Same checks as `copy_from`.
    void copy_to(const TensorView& host) const;
    /// The order the devices hold the elements in now (natural after `copy_from` of an input
    /// except for c2r, shuffled after a transform across several GPUs).
    [[nodiscard]] DataOrder order() const;
    /// Declares the order of the elements the caller wrote through `part(i)`: `natural` for a
    /// fresh array in X-slabs, `shuffled` for data in the order a transform across the GPUs leaves
    /// (what a c2r across several GPUs reads). The next transform reads them so. InvalidArgument
    /// for `shuffled` on one device (one part has one order), a value that is not a DataOrder, or
    /// when moved from.
    void set_order(DataOrder order);
    /// Number of device parts (0 when moved from).
    [[nodiscard]] int parts() const noexcept;
    /// Part `i` (0 <= i < parts(); InvalidArgument otherwise): lets kernels of the caller work on
    /// each device's elements (in the order `order()` says).
    [[nodiscard]] FFTPart part(int i) const;

private:
    friend struct detail::FFTAccess;
    struct Impl;
    explicit FFTData(std::unique_ptr<Impl> impl) noexcept;
    std::unique_ptr<Impl> impl_;
};

/// A planned FFT of one whole dense row-major array (rank 1 to 3, every axis transformed, no batch)
/// across `options.devices` with cuFFT Xt. Move-only; shares its cuFFT plan with the FFTData it
/// allocates. A moved-from FFT may only be destroyed or assigned to: `plan`, `allocate` and
/// `execute` throw InvalidArgument, the accessors report an empty plan.
///
/// The constructor validates only (InvalidArgument / NotSupported, no GPU work; then the device
/// ordinals against `core::Device::count()`, InvalidArgument without a driver). `plan()` (implicit
/// on first use) creates the plan: `cufftXtSetGPUs` then `cufftMakePlan1d/2d/3d` on several devices,
/// an ordinary cuFFT plan on one; cuFFT allocates each device's work area then.
///
/// `execute(data, direction, stream)` enqueues on `stream` and returns without waiting for the
/// device, as every gpumath call does: on one device cuFFT and the normalization run on the stream
/// (capturable into a CUDA graph); across several, cuFFT Xt runs on the stream and each device's
/// normalization on a stream the plan made when planning, which `stream` then waits for (not
/// capturable). The calls that copy host data (`execute(in, out, direction)`, `to_natural`,
/// `FFTData::copy_from`/`copy_to`, the free functions) block, and say so. Calls on one plan from
/// several threads are serialized while they enqueue.
class FFT {
public:
    /// Plans the transform of arrays laid out as `input` (dtype c32/c64 for c2c and c2r, f32/f64 for
    /// r2c; dense row-major; rank 1 to 3). InvalidArgument / NotSupported as described in
    /// docs/distributed.md (device list, kind and dtype, rank, layout, sizes cuFFT Xt refuses for the
    /// number of devices).
    explicit FFT(const TensorLayout& input, const FFTOptions& options);
    ~FFT();
    /// Moves the plan; the moved-from FFT is empty: `planned()` is false, the other calls throw
    /// InvalidArgument.
    FFT(FFT&&) noexcept;
    /// Releases this plan (its cuFFT state lives on while FFTData made by it does) and takes the
    /// other's; the moved-from FFT is empty.
    FFT& operator=(FFT&&) noexcept;
    FFT(const FFT&) = delete;
    FFT& operator=(const FFT&) = delete;

    /// Creates the cuFFT plan now (idempotent, thread-safe). NotSupported when the devices differ
    /// in compute capability (a cuFFT Xt rule); CufftError when cuFFT refuses the plan; CudaError
    /// without a device; InvalidArgument when moved from.
    void plan();
    /// True once `plan()` has run (false when moved from).
    [[nodiscard]] bool planned() const noexcept;

    /// Allocates device memory for one array of this plan on its devices (plans first), holding
    /// nothing yet (`order()` natural).
    [[nodiscard]] FFTData allocate();
    /// Enqueues the transform of `data` in place in `direction` (r2c forward only, c2r inverse only)
    /// and the normalization of each device's part on `stream`, and returns without waiting for
    /// them. `stream` belongs to one of the plan's devices; a default stream (`{}`, the legacy or
    /// per-thread one) means that stream of the plan's first device. One device: cuFFT and the scale
    /// run on `stream` with a work area of that stream's (so executions on several streams run side
    /// by side), and the call may be captured into a CUDA graph (the graph keeps the plan alive).
    /// Several devices: cuFFT Xt runs on `stream` after every earlier execution of this plan, each
    /// device's scale on the plan's own stream of that device after the transform, and `stream`
    /// waits for them; not capturable. Work the caller enqueues on `stream` afterwards sees the
    /// result; read it from other streams or the host after synchronizing (FFTData's copies wait by
    /// themselves). InvalidArgument, before any GPU work, for data of another plan, a moved-from
    /// FFTData or a wrong direction, across several GPUs for a c2r on data in natural order (c2r
    /// reads the shuffled order that `copy_from` of the complex input places, or `set_order`) or an
    /// r2c on data in shuffled order, and for a stream of another device or, across several GPUs, a
    /// capturing stream (then before anything is enqueued). Across several GPUs, natural-order input
    /// gives shuffled output and shuffled input natural output (`data.order()`).
    void execute(FFTData& data, Direction direction, core::StreamRef stream = core::current_stream());
    /// Copies `src` into new device memory in natural order (cufftXtMemcpy device to device, which
    /// redistributes between the GPUs). Blocks: waits for the executions of `src` still in flight,
    /// then until the copy is done.
    [[nodiscard]] FFTData to_natural(const FFTData& src);
    /// Host convenience: copies `in` onto the devices, transforms, normalizes and copies the result
    /// into `out` in natural order. `in` has the input layout, `out` the output layout (both host
    /// memory, dense row-major); `out` may be `in` for c2c. Allocates device memory for the call.
    /// Blocks: the transform runs on the default stream of the plan's first device, and the call
    /// waits for it before copying the result to the host.
    void execute(const TensorView& in, const TensorView& out, Direction direction);

    /// The whole input array's layout (a default TensorLayout when moved from).
    [[nodiscard]] const TensorLayout& input_layout() const noexcept;
    /// The whole output array's layout, row-major (a default TensorLayout when moved from).
    [[nodiscard]] const TensorLayout& output_layout() const noexcept;
    /// c2c, r2c or c2r (FFTKind::automatic when moved from).
    [[nodiscard]] FFTKind kind() const noexcept;
    /// The devices, in distribution order (empty when moved from).
    [[nodiscard]] std::span<const int> devices() const noexcept;
    /// The options the plan was made with, `kind` resolved (default FFTOptions when moved from).
    [[nodiscard]] const FFTOptions& options() const noexcept;
    /// cuFFT's work area size on each device, in device order; empty before `plan()` or when moved from.
    [[nodiscard]] std::span<const std::size_t> workspace_sizes() const noexcept;

private:
    friend struct detail::FFTAccess;
    explicit FFT(std::shared_ptr<detail::FFTState> state) noexcept;
    std::shared_ptr<detail::FFTState> state_;
};

/// Forward complex-to-complex FFT of the host array `in` into the host array `out` (same layout; may
/// be `in`) across `options.devices`, through the plan cache. Validated as `FFT` and
/// `FFT::execute` validate, before any GPU work. Blocks (as `FFT::execute(in, out, direction)`).
void fft(const TensorView& in, const TensorView& out, const FFTOptions& options);
/// Inverse complex-to-complex FFT (scaled by 1/n under the default backward normalization).
void ifft(const TensorView& in, const TensorView& out, const FFTOptions& options);
/// Real-to-complex FFT: `out` is complex with the last axis n/2 + 1 long.
void rfft(const TensorView& in, const TensorView& out, const FFTOptions& options);
/// Complex-to-real inverse FFT; the output length along the last axis comes from `out`'s shape or
/// `options.last_axis_size` (default 2 * (m - 1)).
void irfft(const TensorView& in, const TensorView& out, const FFTOptions& options);

/// The process-wide, thread-safe LRU cache of multi-GPU FFT plans behind dist::fft/ifft/rfft/irfft,
/// reached through `fft_plan_cache()`. Keys are the devices (in order), the input layout, the kind,
/// the normalization and the c2r output length. Counters as core::CacheStats (the disk counters stay
/// zero). A cached plan holds cuFFT work areas on each of its devices. The controls (`capacity`,
/// `set_capacity`, `clear`, `stats`, `reset_stats`) are those of every FFT plan cache
/// (gpumath::detail::PlanCacheControl); 0 plans disables caching.
class FFTPlanCache final : public gpumath::detail::PlanCacheControl {
public:
    /// Capacity when the process starts, in plans.
    static constexpr std::size_t default_capacity = 8;

    FFTPlanCache(const FFTPlanCache&) = delete;
    FFTPlanCache& operator=(const FFTPlanCache&) = delete;
    FFTPlanCache(FFTPlanCache&&) = delete;
    FFTPlanCache& operator=(FFTPlanCache&&) = delete;

private:
    friend FFTPlanCache& fft_plan_cache();
    FFTPlanCache();
    ~FFTPlanCache() = default;
};

/// The process-wide multi-GPU FFT plan cache.
[[nodiscard]] FFTPlanCache& fft_plan_cache();

}  // namespace gpumath::dist
