// SPDX-License-Identifier: Apache-2.0
/// @file
/// Communication between GPUs on NCCL: the Communicator and its collectives.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include <gpumath/core/stream.hpp>
#include <gpumath/layout.hpp>

namespace gpumath::detail {
struct CommunicatorState;
struct CommunicatorAccess;
}  // namespace gpumath::detail

/// The multi-GPU module (target gpumath::dist, built when gpumath found nccl.h: GPUMATH_HAS_DIST):
/// the NCCL Communicator and its collectives, FFTs across the GPUs of a node (cuFFT Xt) and
/// tensor-parallel matrix products. NCCL is loaded at run time, never linked.
namespace gpumath::dist {

/// The reduction of `all_reduce` and `reduce_scatter`.
enum class ReduceOp : std::uint8_t {
    sum,   ///< The ranks' values added.
    prod,  ///< The ranks' values multiplied.
    min,   ///< The smallest of the ranks' values.
    max,   ///< The largest of the ranks' values.
    avg    ///< The ranks' values added and divided by the number of ranks.
};

/// Number of ReduceOp enumerators.
inline constexpr int reduce_op_count = 5;

/// "sum", "prod", "min", "max", "avg" ("unknown" for a value that is none of them).
[[nodiscard]] constexpr std::string_view to_string(ReduceOp op) noexcept {
    switch (op) {
        case ReduceOp::sum:
            return "sum";
        case ReduceOp::prod:
            return "prod";
        case ReduceOp::min:
            return "min";
        case ReduceOp::max:
            return "max";
        case ReduceOp::avg:
            return "avg";
    }
    return "unknown";
}

/// NCCL's version as loaded: 22803 for 2.28.3. gpumath loads NCCL on first use, never links
/// it: from the file named by the environment variable GPUMATH_NCCL_LIBRARY when set, otherwise
/// "libnccl.so.2" (already loaded, else found through LD_LIBRARY_PATH, /etc/ld.so.cache, the
/// system's folders, and last the dynamic loader's own search). The file is checked first: one
/// that is not a regular file, not a shared library of this machine or truncated is refused.
/// Throws NcclError (status 0) naming the file and the reason (or the loader's) when NCCL cannot
/// be loaded or lacks a function gpumath uses.
[[nodiscard]] int nccl_version();

/// The identifier that the ranks of one communicator share (NCCL's `ncclUniqueId`, 128 bytes).
/// One process makes it with `create()` and hands the bytes to the others by any channel (a file,
/// MPI, a TCP store); each then constructs its `Communicator` from it. The bytes are plain data.
struct UniqueId {
    /// The identifier's bytes.
    std::array<std::byte, 128> bytes{};

    /// A new identifier (`ncclGetUniqueId`: it also starts the bootstrap listener of this process,
    /// which rank 0 must run). Needs no GPU. Throws NcclError.
    [[nodiscard]] static UniqueId create();

    /// Equal when all 128 bytes are.
    friend bool operator==(const UniqueId&, const UniqueId&) = default;
};

/// A group of GPUs that exchange data through NCCL: its ranks are numbered 0 to `size() - 1`, each
/// on one device. The ranks this object holds ("local ranks") are either every rank (one process
/// drives all the GPUs, `Communicator(devices)`) or one rank of a communicator spread over
/// processes (`Communicator(id, size, rank, device)`; several processes, or several nodes). Move-only.
///
/// Collectives take one send and one receive view and one stream per local rank, in local rank
/// order; with one local rank, the overloads taking single views are shorter. Each view is
/// row-major and contiguous, on its rank's device, all of one dtype: f16, bf16, f32, f64, i8, i32,
/// e4m3 and e5m2 (NCCL 2.24 or later, compute capability 9.0 or later), and c32/c64 (as pairs of
/// reals: `sum` and `avg` only). The calls enqueue on the streams and return; they never
/// synchronize and may be captured into a CUDA graph. Every argument is checked before anything is
/// enqueued (InvalidArgument naming the rank and operand); NcclError when NCCL fails. A moved-from
/// Communicator throws InvalidArgument. gpumath needs NCCL 2.14 or later.
///
/// Calls from several threads on one Communicator are serialized while they enqueue (NCCL takes
/// one thread at a time per communicator), but NCCL also needs every rank to issue the same
/// collectives in the same order: in a communicator spread over processes, threads sharing it must
/// agree on their order, or the ranks wait for each other forever.
///
/// When several processes share a host's GPUs through a scheduler (containers, MIG, a shared
/// node), set `NCCL_NVLS_ENABLE=0` before the first Communicator: NVLink SHARP multicast needs
/// fabric resources such hosts do not lend (see docs/distributed.md).
class Communicator {
public:
    /// One rank per listed device, all in this process (`ncclCommInitAll`): rank i runs on
    /// `devices[i]`. InvalidArgument for an empty list, a repeated device or one that is not
    /// below `core::Device::count()` (0 without a driver, so every device is refused there). Blocks
    /// until every rank is set up.
    explicit Communicator(std::span<const int> devices);
    /// The same for a braced list: `Communicator comm{0, 1, 2, 3}`.
    Communicator(std::initializer_list<int> devices);
    /// Rank `rank` of `size` ranks that share `id`, run on `device` by this process
    /// (`ncclCommInitRank`). Blocks until all `size` ranks have joined. InvalidArgument unless
    /// `0 <= rank < size`, `device` is below `core::Device::count()` and `id` is not all zeros.
    Communicator(const UniqueId& id, int size, int rank, int device);
    /// Every GPU of this process, ranks in device order.
    [[nodiscard]] static Communicator all_devices();

    /// Releases the NCCL communicators, which the dist::Matmul objects made on them share: the last
    /// owner finalizes and destroys them (`ncclCommFinalize`, `ncclCommDestroy`), which waits for the
    /// collectives still queued on them, and also until every CUDA graph that captured one of their
    /// collectives is destroyed (NCCL holds the communicator for the graph). Destroy such graphs
    /// first, and the communicator once its work is done.
    ~Communicator();
    /// Moves the communicators; the moved-from Communicator throws InvalidArgument.
    Communicator(Communicator&&) noexcept;
    /// Releases this object's communicators as the destructor does (which may wait), then takes
    /// the other's; the moved-from Communicator throws InvalidArgument.
    Communicator& operator=(Communicator&&) noexcept;
    Communicator(const Communicator&) = delete;
    Communicator& operator=(const Communicator&) = delete;

    /// Number of ranks in the communicator (all processes). 0 when moved from.
    [[nodiscard]] int size() const noexcept;
    /// Number of ranks this object holds. 0 when moved from.
    [[nodiscard]] int local_size() const noexcept;
    /// The communicator rank of local rank `local`. InvalidArgument unless `0 <= local < local_size()`.
    [[nodiscard]] int rank(int local = 0) const;
    /// The device of local rank `local`. InvalidArgument as `rank`.
    [[nodiscard]] int device(int local = 0) const;
    /// The `ncclComm_t` of local rank `local`, for calling NCCL directly. Owned by this object.
    [[nodiscard]] void* native_handle(int local = 0) const;

    /// Element-wise reduction over all ranks: every `recv[i]` gets op(send of every rank). Each
    /// `recv[i]` has `send[i]`'s element count; `recv[i]` may be `send[i]` (in place) but not
    /// overlap it otherwise.
    void all_reduce(std::span<const TensorView> send, std::span<const TensorView> recv, ReduceOp op,
                    std::span<const core::StreamRef> streams);
    /// `all_reduce` with one local rank.
    void all_reduce(const TensorView& send, const TensorView& recv, ReduceOp op,
                    core::StreamRef stream = core::current_stream());

    /// Reduction then scatter: rank r's `recv` gets block r (of `size()` equal blocks of `send`)
    /// of op(send of every rank). Each `send[i]` has `size()` times `recv[i]`'s element count;
    /// `recv[i]` may be block `rank(i)` of `send[i]` (in place), and must not overlap it otherwise.
    void reduce_scatter(std::span<const TensorView> send, std::span<const TensorView> recv, ReduceOp op,
                        std::span<const core::StreamRef> streams);
    /// `reduce_scatter` with one local rank.
    void reduce_scatter(const TensorView& send, const TensorView& recv, ReduceOp op,
                        core::StreamRef stream = core::current_stream());

    /// Gather: every `recv[i]` gets the `send` of rank 0, 1, ... one after the other. Each `recv[i]`
    /// has `size()` times `send[i]`'s element count; `send[i]` may be block `rank(i)` of `recv[i]`
    /// (in place), and must not overlap it otherwise.
    void all_gather(std::span<const TensorView> send, std::span<const TensorView> recv,
                    std::span<const core::StreamRef> streams);
    /// `all_gather` with one local rank.
    void all_gather(const TensorView& send, const TensorView& recv, core::StreamRef stream = core::current_stream());

    /// Copies rank `root`'s `send` into every rank's `recv` (only the root's `send` is read; the
    /// other ranks may pass their `recv` as `send`). `recv[i]` has `send[i]`'s element count and
    /// may be `send[i]`. InvalidArgument unless `0 <= root < size()`.
    void broadcast(std::span<const TensorView> send, std::span<const TensorView> recv, int root,
                   std::span<const core::StreamRef> streams);
    /// `broadcast` with one local rank.
    void broadcast(const TensorView& send, const TensorView& recv, int root,
                   core::StreamRef stream = core::current_stream());

private:
    friend struct gpumath::detail::CommunicatorAccess;
    // Shared with the dist::Matmul objects made on this communicator, which keep it alive.
    std::shared_ptr<gpumath::detail::CommunicatorState> state_;
};

}  // namespace gpumath::dist
