// SPDX-License-Identifier: Apache-2.0
// sparse::check: the content of a sparse matrix checked on the device (kernels/check.cu), the first
// bad entry of each array kept by atomicMin and reported on the host.
#include "sparse/check.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include <gpumath/core/launch.hpp>
#include <gpumath/core/memory.hpp>
#include <gpumath/error.hpp>
#include <gpumath/sparse/check.hpp>
#include "core/kernel_loader.hpp"
#include "detail/status.hpp"
#include "sparse/kernels/check.cu.inc"
#include "sparse/kernels/check_params.hpp.inc"

namespace gpumath::detail {
namespace {

constexpr std::int64_t threads = 256;
constexpr unsigned long long nothing = std::numeric_limits<unsigned long long>::max();

const DeviceProgram& program() {
    static const DeviceProgram p(sparse_check_source(), sparse_check_options(), sparse_check_names());
    return p;
}

int current() {
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice", "finding the device of sparse::check");
    return device;
}

/// (major, minor) extents the offsets and indices of `m` count over.
std::array<std::int64_t, 2> extents(const sparse::MatrixView& m) {
    switch (m.format()) {
        case sparse::Format::csc:
            return {m.cols(), m.rows()};
        case sparse::Format::bsr:
            return {m.rows() / m.block(), m.cols() / m.block()};
        default:
            return {m.rows(), m.cols()};
    }
}

std::string describe(int kind, long long position, const char* array, const sparse::MatrixView& m) {
    const auto [major, minor] = extents(m);
    switch (kind) {
        case kernels::sparse_offset_first:
            return fmt::format("{}[0] is not 0; offsets start at 0", array);
        case kernels::sparse_offset_decrease:
            return fmt::format("{}[{}] is smaller than {}[{}]; offsets never decrease", array, position, array,
                               position - 1);
        case kernels::sparse_offset_last:
            return fmt::format("{}[{}] is not {}, the number of stored entries", array, position, m.stored());
        case kernels::sparse_index_range:
            return fmt::format(
                "{}[{}] is outside [0, {})", array, position,
                m.format() == sparse::Format::coo && array == std::string_view("row_indices") ? major : minor);
        default:
            return m.format() == sparse::Format::coo && array == std::string_view("row_indices")
                       ? fmt::format("{}[{}] is smaller than {}[{}]; COO entries are sorted by row", array, position,
                                     array, position - 1)
                       : fmt::format(
                             "{}[{}] is not greater than {}[{}]; indices within a {} are strictly increasing "
                             "(no duplicates)",
                             array, position, array, position - 1,
                             m.format() == sparse::Format::csc ? "column" : "row");
    }
}

}  // namespace

std::string_view sparse_check_source() { return embedded::sparse_kernels_check_cu; }

core::ProgramOptions sparse_check_options() {
    core::ProgramOptions options;
    options.name = "gpumath_sparse_check";
    options.std = "c++17";
    options.headers["check_params.hpp"] = std::string(embedded::sparse_kernels_check_params_hpp);
    return options;
}

std::vector<std::string> sparse_check_names() {
    return {"gpumath::kernels::sparse_check<int>", "gpumath::kernels::sparse_check<long long>"};
}

std::array<const char*, 3> sparse_array_names(sparse::Format format) noexcept {
    switch (format) {
        case sparse::Format::csc:
            return {"col_offsets", "", "row_indices"};
        case sparse::Format::coo:
            return {"", "row_indices", "col_indices"};
        case sparse::Format::bsr:
            return {"block_row_offsets", "", "block_col_indices"};
        default:
            return {"row_offsets", "", "col_indices"};
    }
}

void enqueue_sparse_check(const sparse::MatrixView& matrix, bool sorted, unsigned long long* result,
                          core::StreamRef stream) {
    check(cudaMemsetAsync(result, 0xFF, kernels::sparse_slot_count * sizeof(unsigned long long), stream.handle()),
          "cudaMemsetAsync", "clearing the result of sparse::check");
    const auto [major, minor] = extents(matrix);
    const bool coo = matrix.format() == sparse::Format::coo;
    const kernels::SparseCheckParams p{.offsets = coo ? nullptr : matrix.offsets().data(),
                                       .rows = coo ? matrix.row_indices().data() : nullptr,
                                       .indices = matrix.indices().data(),
                                       .major = major,
                                       .minor = minor,
                                       .stored = matrix.stored(),
                                       .sorted = sorted ? 1 : 0,
                                       .result = result};
    const std::int64_t work = std::max(matrix.stored(), coo ? std::int64_t{0} : major + 1);
    if (work == 0) return;
    const core::Kernel k =
        device_kernel(current(), program(),
                      matrix.index_type() == DataType::i64 ? "gpumath::kernels::sparse_check<long long>"
                                                           : "gpumath::kernels::sparse_check<int>");
    core::launch(stream, {.grid = std::min<std::int64_t>((work + threads - 1) / threads, 8192), .block = threads}, k,
                 p);
}

void throw_sparse_check_result(const sparse::MatrixView& matrix, const unsigned long long* result, const char* api) {
    const std::array<const char*, 3> names = sparse_array_names(matrix.format());
    for (int slot = 0; slot < kernels::sparse_slot_count; ++slot) {
        if (result[slot] == nothing) continue;
        const auto position = static_cast<long long>(result[slot] / 8);
        const int kind = static_cast<int>(result[slot] % 8);
        const char* array = names[std::size_t(slot)];
        throw InvalidSparseData(
            fmt::format("{}: {} {} matrix: {}", api, to_string(matrix.format()),
                        fmt::format("{} × {}", matrix.rows(), matrix.cols()), describe(kind, position, array, matrix)),
            api, array, position);
    }
}

void check_sparse_content(const sparse::MatrixView& matrix, bool sorted, core::StreamRef stream, const char* api) {
    if (matrix.empty()) throw_invalid("matrix: the view is empty (default-constructed); nothing to check", api);
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    check(cudaStreamIsCapturing(stream.handle(), &status), "cudaStreamIsCapturing", "asking whether a stream captures");
    if (status != cudaStreamCaptureStatusNone)
        throw_invalid("stream: captures a CUDA graph; the check synchronizes, so run it before capturing", api);
    const core::Buffer result(kernels::sparse_slot_count * sizeof(unsigned long long), stream);
    auto* device = static_cast<unsigned long long*>(result.data());
    enqueue_sparse_check(matrix, sorted, device, stream);
    std::array<unsigned long long, kernels::sparse_slot_count> host{};
    copy_async(host.data(), device, sizeof(host), stream);
    stream.synchronize();
    throw_sparse_check_result(matrix, host.data(), api);
}

}  // namespace gpumath::detail

namespace gpumath::sparse {

void check(const MatrixView& matrix, CheckOptions options, core::StreamRef stream) {
    detail::check_sparse_content(matrix, options.sorted, stream, "sparse::check");
}

}  // namespace gpumath::sparse
