// SPDX-License-Identifier: Apache-2.0
// Private to src/sparse: what the SpMV and SpMM plans share: operand checks, α and β in the
// compute type, the plan's state, and the algorithm measured once per problem and kept.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>

#include <cuda_runtime_api.h>
#include <cusparse.h>

#include <gpumath/core/memory.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/sparse/matrix.hpp>
#include <gpumath/sparse/operation.hpp>

namespace gpumath::detail {

/// True when the byte ranges the two views span intersect (views of no bytes never do).
[[nodiscard]] bool views_overlap(const TensorView& a, const TensorView& b) noexcept;

/// InvalidArgument unless `m` is a made view (not default-constructed).
void check_made(const sparse::MatrixView& m, const char* name, const char* api);

/// InvalidArgument unless `v`'s address is aligned to its elements.
void check_aligned_to_elements(const TensorView& v, const char* name, const char* api);

/// InvalidArgument when `out` overlaps `in` (named `in_name`).
void check_apart(const TensorView& out, const char* out_name, const TensorView& in, const char* in_name,
                 const char* api);

/// InvalidArgument when `out` overlaps one of `a`'s arrays.
void check_apart_from_matrix(const TensorView& out, const char* out_name, const sparse::MatrixView& a, const char* api);

/// InvalidArgument unless `a` has `planned`'s format, sizes, pattern arrays (the same pointers) and
/// values layout: a matrix an execute may take in place of the planned one.
void check_same_pattern(const sparse::MatrixView& a, const sparse::MatrixView& planned, const char* api);

/// InvalidArgument: operand `name` has `got`'s layout where the plan has `planned`'s.
[[noreturn]] void throw_layout_mismatch(const char* name, const TensorLayout& got, const TensorLayout& planned,
                                        const char* api);

/// op(A)'s rows and columns.
[[nodiscard]] std::int64_t op_rows(const sparse::MatrixView& a, sparse::Operation op) noexcept;
[[nodiscard]] std::int64_t op_cols(const sparse::MatrixView& a, sparse::Operation op) noexcept;

/// cuSPARSE's operation of `op` on values of `values`: the conjugate transpose of real values is
/// their transpose, and is asked of cuSPARSE as such.
[[nodiscard]] cusparseOperation_t to_cusparse(sparse::Operation op, DataType values) noexcept;

/// α and β in the compute type (real; the imaginary part 0 for complex), for cuSPARSE's host
/// pointer mode.
struct Scalars {
    alignas(16) unsigned char alpha[16] = {};
    alignas(16) unsigned char beta[16] = {};
    Scalars(DataType compute, double a, double b) noexcept;
};

/// InvalidArgument when `device` is not the current device.
void check_plan_device(int device, const char* api);

/// The state every product plan keeps: planned once (thread-safe) on one device, its cuSPARSE
/// buffer, and the lock its executions take while they point the descriptors at their operands.
struct ProductPlan {
    std::atomic<bool> planned{false};
    std::mutex plan_mutex;
    std::mutex execute_mutex;
    int device = -1;
    core::Buffer buffer;
    std::size_t buffer_bytes = 0;

    ProductPlan() = default;
    virtual ~ProductPlan() = default;
    ProductPlan(const ProductPlan&) = delete;
    ProductPlan& operator=(const ProductPlan&) = delete;
    ProductPlan(ProductPlan&&) = delete;
    ProductPlan& operator=(ProductPlan&&) = delete;

    /// Plans on the current device unless planned (idempotent, thread-safe). Planning reads A's
    /// pattern on a private stream (cuSPARSE's preprocess, the measured choice), so when `after` is
    /// given and not capturing, the work enqueued on it so far (the writes of A's arrays) is waited
    /// for first; while it captures, A's arrays must hold their values already.
    void plan(const core::StreamRef* after = nullptr);
    /// Plans if needed, after the work on `stream` (as plan); InvalidArgument naming `api` when
    /// another device is current.
    void ensure_planned(const char* api, core::StreamRef stream);

protected:
    /// The plan's own work under `plan_mutex`, once, on `device` (current).
    virtual void plan_locked() = 0;
};

/// The index of the candidate that runs fastest, measured once per `key` (a text naming the
/// problem and the device model) and kept for the process. For each candidate,
/// `prepare(i, stream)` makes it ready (buffers, preprocess); a CusparseError from it means cuSPARSE
/// refuses the candidate, which is then skipped. `run(i, stream)` runs it once. One warm-up each, then five rounds of
/// one timed run each (the median counts), on a private stream in relaxed capture mode; blocks.
/// Logged at info level as `what`. A kept choice is returned without measuring. CusparseError
/// naming the last refusal when every candidate is refused.
[[nodiscard]] int measured_choice(const std::string& key, const char* what, std::span<const std::string> names,
                                  const std::function<void(int, core::StreamRef)>& prepare,
                                  const std::function<void(int, core::StreamRef)>& run);

/// The name a device's choices are kept under: its model with spaces as underscores.
[[nodiscard]] std::string sparse_device_model(int device);

/// The stream's identity for the stateless plan cache: its handle, and the thread for
/// cudaStreamPerThread (one handle naming a stream per thread).
[[nodiscard]] std::string stream_identity(core::StreamRef stream);

}  // namespace gpumath::detail
