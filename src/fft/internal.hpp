// SPDX-License-Identifier: Apache-2.0
// Private to src/fft: compiling, the per-stream work areas, elementwise passes.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include <cuda_runtime_api.h>

#include <gpumath/core/launch.hpp>
#include <gpumath/core/memory.hpp>
#include <gpumath/core/module.hpp>
#include <gpumath/core/program.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/detail/fft_geometry.hpp>
#include <gpumath/detail/fft_sources.hpp>
#include <gpumath/fft/callback.hpp>
#include <gpumath/fft/fft.hpp>
#include <gpumath/fft/options.hpp>

namespace gpumath::detail {

/// Builds FFT objects for the free functions, whose kind is fixed and whose messages name them.
struct FFTAccess {
    [[nodiscard]] static FFT make(const TensorLayout& in, const TensorLayout* out, const FFTOptions& options,
                                  FFTKind forced, const char* api);
};

/// Compiles `source` for `target` with the callback headers; a CompileError for a user callback
/// (`callback` not null) names it and its expected signature.
[[nodiscard]] core::ObjectCode compile_with_context(const std::string& source, core::CodeType target, std::string arch,
                                                    const char* name, const FFTCallback* callback, FFTCallbackKind kind,
                                                    DataType element);

/// LTO-IR of a fused callback entry (see fft_fused_callback_source).
[[nodiscard]] core::ObjectCode compile_fused_callback(const FFTCallback& callback, FFTCallbackKind kind,
                                                      DataType element, double scale, const std::string& rename,
                                                      std::string arch);

/// Grow-only work areas, one per stream, from one memory resource. `acquire` holds the stream's
/// entry locked for as long as the lease lives, so a concurrent caller on the same stream cannot
/// free the area (by growing it) before this caller has enqueued the work that uses it. Work on
/// one stream is ordered, so reusing a stream's area across calls is safe.
class FftWorkspace {
public:
    explicit FftWorkspace(std::shared_ptr<core::MemoryResource> resource) : resource_(std::move(resource)) {}

    struct Lease {
        std::unique_lock<std::mutex> lock;
        void* data = nullptr;
    };
    /// At least `bytes` usable on `stream` until the lease is dropped (null for 0 bytes).
    [[nodiscard]] Lease acquire(std::size_t bytes, core::StreamRef stream);
    /// Frees every area. The caller makes sure nothing is in flight (release_default_fft_workspaces
    /// synchronizes the device first).
    void release();

private:
    struct Entry {
        std::mutex mutex;
        core::Buffer buffer;
    };
    std::mutex mutex_;
    std::shared_ptr<core::MemoryResource> resource_;
    std::unordered_map<cudaStream_t, std::unique_ptr<Entry>> entries_;
};

/// The work areas of plans using device `device`'s default pool (alive until the process exits).
[[nodiscard]] FftWorkspace& default_fft_workspace(int device);
/// Synchronizes each device that has default work areas and frees them.
void release_default_fft_workspaces();

/// The built-in pass kernel (copy/scale, no callback) for `element` (pairs: f16/bf16 complex), on
/// `device` with architecture `arch`; compiled once per process.
[[nodiscard]] core::Kernel builtin_pass_kernel(DataType element, bool pairs, int device, const std::string& arch);

/// Enqueues a pass of `kernel` on `stream`. `single` selects a float scale argument (else double).
void launch_pass(const core::Kernel& kernel, core::StreamRef stream, const void* src, void* dst, const FftPass& pass,
                 double scale, bool single, void* info);

}  // namespace gpumath::detail
