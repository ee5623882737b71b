// SPDX-License-Identifier: Apache-2.0
/// @file
/// FFTs on cuFFT: the stateful FFT plan and the fft/ifft/rfft/irfft functions.
#pragma once

#include <cstddef>
#include <memory>

#include <gpumath/core/stream.hpp>
#include <gpumath/fft/options.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/tensor.hpp>

namespace gpumath {

namespace detail {
struct FFTImpl;
struct FFTAccess;
}  // namespace detail

/// A planned FFT over a fixed input layout (and output layout), reusable for any data of those
/// layouts. Move-only; owns its cuFFT plans. A moved-from FFT may only be destroyed or assigned
/// to: `plan` and `execute` throw InvalidArgument, the accessors report an empty plan (a default
/// TensorLayout and FFTOptions, FFTKind::automatic, not planned, zeros).
///
/// The constructor validates only (InvalidArgument / NotSupported, no GPU work). `plan()` creates
/// the cuFFT plan on the current device (implicitly on the first `execute`): cuFFT's
/// auto-allocation is off, the work area comes from `options.memory_resource` (default: the
/// device's pool), one per stream, bound before each execution. With callbacks, `plan()` also
/// compiles them and, in CallbackMode::automatic, times the fused and the separate way once and
/// keeps the faster (planning then blocks on a private stream).
///
/// `execute` enqueues on the caller's stream and never synchronizes. Executions from several
/// threads or streams are safe: they are serialized per cuFFT plan for the few microseconds of
/// enqueueing. A `core::Stream` passed to `execute` may be destroyed before the FFT (it frees its
/// work areas on itself first); a stream made outside gpumath must outlive the FFT when
/// `options.memory_resource` is set (its work areas are freed in stream order on it).
class FFT {
public:
    /// Plans the transform of data laid out as `input`, writing a row-major output (or, with
    /// `options.inplace`, the input layout). Validates the layout and options (InvalidArgument for
    /// an enum value outside its enumerators, or a callback `code` that is not LTO-IR).
    explicit FFT(const TensorLayout& input, const FFTOptions& options = {});
    /// The same with an explicit output layout (any strides; shape and dtype must be the
    /// transform's).
    FFT(const TensorLayout& input, const TensorLayout& output, const FFTOptions& options = {});
    ~FFT();
    /// Moves the plans; the moved-from FFT is empty (see above).
    FFT(FFT&&) noexcept;
    /// Releases this FFT's plans and takes the other's; the moved-from FFT is empty.
    FFT& operator=(FFT&&) noexcept;
    FFT(const FFT&) = delete;
    FFT& operator=(const FFT&) = delete;

    /// Creates the cuFFT plan(s) now (idempotent, thread-safe). Throws CufftError when cuFFT
    /// refuses the plan, NotSupported for bf16 below compute capability 8.0, CompileError for a
    /// callback that does not compile, CudaError without a device; InvalidArgument when moved from.
    void plan();
    /// True once `plan()` has run (false when moved from).
    [[nodiscard]] bool planned() const noexcept;

    /// Transforms `in` into `out` on `stream`. Before any GPU work, InvalidArgument unless `in` and
    /// `out` have the planned layouts, each data pointer is aligned to its element (complex ones,
    /// f16/bf16 pairs included, to the whole complex element; a real r2c input or c2r output may
    /// start at an odd element) and `out` does not overlap `in`, except that `out` may be `in`
    /// itself for c2c (in place: same pointer and layout). r2c runs forward only, c2r inverse only.
    void execute(const TensorView& in, const TensorView& out, Direction direction,
                 core::StreamRef stream = core::current_stream());
    /// Transforms `in` into a new tensor of the output layout (allocated on `stream` from the
    /// memory resource, after `in` and `direction` are checked as above). Not for in-place plans
    /// (InvalidArgument).
    [[nodiscard]] Tensor execute(const TensorView& in, Direction direction,
                                 core::StreamRef stream = core::current_stream());

    /// The planned input layout (a default TensorLayout when moved from).
    [[nodiscard]] const TensorLayout& input_layout() const noexcept;
    /// The output layout (a default TensorLayout when moved from).
    [[nodiscard]] const TensorLayout& output_layout() const noexcept;
    /// c2c, r2c or c2r (FFTKind::automatic when moved from).
    [[nodiscard]] FFTKind kind() const noexcept;
    /// The options the plan was made with (default FFTOptions when moved from).
    [[nodiscard]] const FFTOptions& options() const noexcept;
    /// Where the callbacks run after planning: fused or separate (automatic before `plan()`,
    /// without callbacks or when moved from).
    [[nodiscard]] CallbackMode callback_mode() const noexcept;
    /// Bytes of workspace one execution needs (cuFFT's work area plus gpumath's temps); 0 before
    /// `plan()` (or when moved from). Like `copies()` and `executions_per_transform()`, it describes executions on
    /// operands aligned as cuFFT needs: an r2c input or c2r output at an odd real offset is copied
    /// through a temp (docs/fft.md), which takes more.
    [[nodiscard]] std::size_t workspace_size() const noexcept;
    /// True when executions copy the input or output through a workspace temp (layouts cuFFT
    /// cannot address, c2r input preservation, separate callbacks); see docs/fft.md. False before
    /// `plan()` (or when moved from).
    [[nodiscard]] bool copies() const noexcept;
    /// Number of cuFFT executions per transform (more than 1 when the batch dimensions cannot be
    /// expressed as one cuFFT batch and gpumath loops over them); 0 before `plan()` (or when moved
    /// from).
    [[nodiscard]] std::int64_t executions_per_transform() const noexcept;

private:
    friend struct detail::FFTAccess;
    explicit FFT(std::unique_ptr<detail::FFTImpl> impl) noexcept;
    // The plan, or InvalidArgument (messages start with `api`) when moved from.
    [[nodiscard]] detail::FFTImpl& impl(const char* api) const;
    std::unique_ptr<detail::FFTImpl> impl_;
};

/// Forward complex-to-complex FFT of `in` into `out` along `options.axes` (default: last axis),
/// through the plan cache. `out` may be `in` (in place). Enqueued on `stream`. The operands and
/// options are validated as `FFT` and `FFT::execute` validate them before any CUDA call, in every
/// one of these functions (InvalidArgument / NotSupported, also without a device).
void fft(const TensorView& in, const TensorView& out, const FFTOptions& options = {},
         core::StreamRef stream = core::current_stream());
/// Forward c2c FFT into a new row-major tensor.
[[nodiscard]] Tensor fft(const TensorView& in, const FFTOptions& options = {},
                         core::StreamRef stream = core::current_stream());
/// Inverse complex-to-complex FFT (scaled by 1/n under the default backward normalization).
void ifft(const TensorView& in, const TensorView& out, const FFTOptions& options = {},
          core::StreamRef stream = core::current_stream());
/// Inverse c2c FFT into a new row-major tensor.
[[nodiscard]] Tensor ifft(const TensorView& in, const FFTOptions& options = {},
                          core::StreamRef stream = core::current_stream());
/// Real-to-complex FFT: the last transform axis of the output has n/2 + 1 elements.
void rfft(const TensorView& in, const TensorView& out, const FFTOptions& options = {},
          core::StreamRef stream = core::current_stream());
/// Real-to-complex FFT into a new row-major tensor.
[[nodiscard]] Tensor rfft(const TensorView& in, const FFTOptions& options = {},
                          core::StreamRef stream = core::current_stream());
/// Complex-to-real inverse FFT; the output length along the last transform axis comes from
/// `out`'s shape or `options.last_axis_size` (default 2 * (m - 1)). Odd lengths work. The input
/// is preserved unless `options.overwrite_input`.
void irfft(const TensorView& in, const TensorView& out, const FFTOptions& options = {},
           core::StreamRef stream = core::current_stream());
/// Complex-to-real inverse FFT into a new row-major tensor.
[[nodiscard]] Tensor irfft(const TensorView& in, const FFTOptions& options = {},
                           core::StreamRef stream = core::current_stream());

}  // namespace gpumath
