// SPDX-License-Identifier: Apache-2.0
// Private: the checks a collective's arguments pass before anything is enqueued, apart from the
// CUDA lookups they need (passed in, so the checks run and are tested without a GPU).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include <gpumath/core/stream.hpp>
#include <gpumath/dist/communicator.hpp>
#include <gpumath/layout.hpp>

namespace gpumath::detail {

enum class Collective : std::uint8_t { all_reduce, reduce_scatter, all_gather, broadcast };

/// NCCL's fp8 types (e4m3, e5m2): since NCCL 2.24, on devices of compute capability 9.0 or later.
inline constexpr int nccl_fp8_version = 22400;
inline constexpr int nccl_fp8_compute_major = 9;

/// One rank this process holds.
struct LocalRank {
    int rank = 0;
    int device = 0;
};

/// Where a pointer's memory lives: `device` is its device for device (or managed) memory, -1 for
/// host memory or a pointer CUDA does not know.
struct PointerPlace {
    int device = -1;
    bool managed = false;
};

/// The CUDA lookups the checks need: the place of a pointer, the device of a stream that is not
/// a default stream, and a device's compute capability major. Each throws CudaError on failure.
struct CollectiveLookups {
    PointerPlace (*pointer)(const void* p) = nullptr;
    int (*stream_device)(core::StreamRef stream) = nullptr;
    int (*compute_major)(int device) = nullptr;
};

/// An operand's name for messages, formatted only when a check fails: `<prefix><which>[<index>]<suffix>`,
/// e.g. "all_reduce: send[1]" or "ranks[0].bias".
struct OperandName {
    std::string_view prefix;
    std::string_view which;
    std::size_t index = 0;
    std::string_view suffix;

    [[nodiscard]] std::string text() const;
};

/// A collective's arguments as the caller gave them.
struct CollectiveCall {
    Collective kind = Collective::all_reduce;
    std::span<const TensorView> send;
    std::span<const TensorView> recv;
    std::span<const core::StreamRef> streams;
    dist::ReduceOp op = dist::ReduceOp::sum;
    int root = 0;
};

/// What NCCL is called with, the same for every local rank.
struct CheckedCollective {
    int nccl_type = 0;      // ncclDataType_t
    std::size_t count = 0;  // NCCL's count: all_reduce/broadcast elements, reduce_scatter's receive count,
                            // all_gather's send count (complex elements count as two reals)
    int nccl_op = 0;        // ncclRedOp_t (all_reduce, reduce_scatter)
};

/// InvalidArgument (naming the collective, the local rank and the operand) or NotSupported unless
/// the call is one NCCL can run for communicator `size` with these local ranks and NCCL
/// `nccl_version`; `api` starts the messages. Lookups run last, after every check on the values.
CheckedCollective check_collective(const CollectiveCall& call, int size, std::span<const LocalRank> ranks,
                                   int nccl_version, const CollectiveLookups& lookups, const char* api);

/// InvalidArgument unless the memory of `v` (named `what`) is device memory of `device` or managed
/// memory; an empty view passes. `api` starts the message.
void check_memory_on(const TensorView& v, const OperandName& what, int device, const CollectiveLookups& lookups,
                     const char* api);

/// InvalidArgument unless `stream` is a default stream (the legacy or per-thread default stream of
/// whichever device is current when the rank's work is enqueued) or a stream of `device`.
void check_stream_on(core::StreamRef stream, const OperandName& what, int device, const CollectiveLookups& lookups,
                     const char* api);

/// The CUDA lookups of a real process (cudaPointerGetAttributes, the stream's context's device).
const CollectiveLookups& cuda_lookups() noexcept;

/// InvalidArgument unless `devices` is a non-empty list of distinct devices, each below `count`.
void check_device_list(std::span<const int> devices, int count, const char* api);

}  // namespace gpumath::detail
