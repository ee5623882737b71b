// SPDX-License-Identifier: Apache-2.0
#include "dist/collective_checks.hpp"

#include <cstdint>
#include <string_view>
#include <utility>

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include "core/driver_api.hpp"
#include "detail/enum_check.hpp"
#include "detail/status.hpp"
#include "matmul/checks.hpp"

namespace gpumath::detail {
namespace {

std::string_view name_of(Collective c) {
    switch (c) {
        case Collective::all_reduce:
            return "all_reduce";
        case Collective::reduce_scatter:
            return "reduce_scatter";
        case Collective::all_gather:
            return "all_gather";
        case Collective::broadcast:
            return "broadcast";
    }
    return "collective";
}

bool reduces(Collective c) { return c == Collective::all_reduce || c == Collective::reduce_scatter; }

// The NCCL type of `t` and how many NCCL elements one of its elements is (2 for complex).
struct NcclType {
    ncclDataType_t type = ncclFloat32;
    int reals = 1;
};

NcclType nccl_type(DataType t, const CollectiveCall& call, int nccl_version, const char* api) {
    switch (t) {
        case DataType::f16:
            return {ncclFloat16, 1};
        case DataType::bf16:
            return {ncclBfloat16, 1};
        case DataType::f32:
            return {ncclFloat32, 1};
        case DataType::f64:
            return {ncclFloat64, 1};
        case DataType::i8:
            return {ncclInt8, 1};
        case DataType::i32:
            return {ncclInt32, 1};
        case DataType::i64:
            return {ncclInt64, 1};
        case DataType::c32:
        case DataType::c64:
            if (reduces(call.kind) && call.op != dist::ReduceOp::sum && call.op != dist::ReduceOp::avg) {
                throw_not_supported(
                    fmt::format("{}: {} of complex ({}) data: NCCL reduces real numbers, so complex data is reduced as "
                                "pairs of reals, which only sum and avg do right",
                                name_of(call.kind), dist::to_string(call.op), to_string(t)),
                    api);
            }
            return {t == DataType::c32 ? ncclFloat32 : ncclFloat64, 2};
        case DataType::e4m3:
        case DataType::e5m2:
            if (nccl_version < nccl_fp8_version) {
                throw_not_supported(fmt::format("{}: {} data needs NCCL 2.24 or later; the NCCL loaded is {}",
                                                name_of(call.kind), to_string(t), nccl_version),
                                    api);
            }
            return {t == DataType::e4m3 ? ncclFloat8e4m3 : ncclFloat8e5m2, 1};
    }
    throw_invalid(fmt::format("{}: dtype {} is not a DataType", name_of(call.kind), int(t)), api);
}

ncclRedOp_t nccl_op(dist::ReduceOp op) {
    switch (op) {
        case dist::ReduceOp::sum:
            return ncclSum;
        case dist::ReduceOp::prod:
            return ncclProd;
        case dist::ReduceOp::min:
            return ncclMin;
        case dist::ReduceOp::max:
            return ncclMax;
        case dist::ReduceOp::avg:
            return ncclAvg;
    }
    return ncclSum;
}

using Operand = std::pair<const TensorView*, const char*>;

// The operand `which` ("send", "recv") of local rank `i`: aligned and contiguous.
void check_view(const TensorView& v, std::string_view which, std::size_t i, const CollectiveCall& call,
                const char* api) {
    if (reinterpret_cast<std::uintptr_t>(v.data()) % size_of(v.dtype()) != 0) {
        throw_invalid(fmt::format("{}: {}[{}]'s data is not aligned to its {}-byte element", name_of(call.kind), which,
                                  i, size_of(v.dtype())),
                      api);
    }
    if (!v.is_contiguous()) {
        throw_invalid(fmt::format("{}: {}[{}] is not contiguous (row-major, dense): NCCL sends one run of "
                                  "elements; copy it into a contiguous tensor first",
                                  name_of(call.kind), which, i),
                      api);
    }
}

PointerPlace pointer_place(const void* p) {
    cudaPointerAttributes attributes{};
    check(cudaPointerGetAttributes(&attributes, p), "cudaPointerGetAttributes", "finding the device of an operand");
    switch (attributes.type) {
        case cudaMemoryTypeDevice:
            return {attributes.device, false};
        case cudaMemoryTypeManaged:
            return {attributes.device, true};
        default:
            return {-1, false};
    }
}

int stream_place(core::StreamRef stream) {
    return stream_device(reinterpret_cast<CUstream>(stream.handle()), "finding the device of a stream");
}

int compute_major(int device) {
    int major = 0;
    check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute",
          "reading a device's compute capability");
    return major;
}

constexpr CollectiveLookups real_lookups{&pointer_place, &stream_place, &compute_major};

}  // namespace

const CollectiveLookups& cuda_lookups() noexcept { return real_lookups; }

std::string OperandName::text() const { return fmt::format("{}{}[{}]{}", prefix, which, index, suffix); }

void check_memory_on(const TensorView& v, const OperandName& what, int device, const CollectiveLookups& lookups,
                     const char* api) {
    if (v.size() == 0) return;
    const PointerPlace place = lookups.pointer(v.data());
    if (place.device < 0) {
        throw_invalid(fmt::format("{} is host memory (or memory CUDA does not know); it must be memory of device {}",
                                  what.text(), device),
                      api);
    }
    if (!place.managed && place.device != device) {
        throw_invalid(
            fmt::format("{} is memory of device {}, but its rank runs on device {}", what.text(), place.device, device),
            api);
    }
}

void check_stream_on(core::StreamRef stream, const OperandName& what, int device, const CollectiveLookups& lookups,
                     const char* api) {
    // The default streams name no device: they are the current device's when the rank's work is
    // enqueued, which is the rank's.
    if (stream.handle() == nullptr || stream.handle() == cudaStreamLegacy || stream.handle() == cudaStreamPerThread)
        return;
    const int sd = lookups.stream_device(stream);
    if (sd != device) {
        throw_invalid(fmt::format("{} belongs to device {}, but its rank runs on device {}", what.text(), sd, device),
                      api);
    }
}

void check_device_list(std::span<const int> devices, int count, const char* api) {
    if (devices.empty()) throw_invalid("devices: the list is empty; give at least one device", api);
    for (std::size_t i = 0; i < devices.size(); ++i) {
        const int d = devices[i];
        if (d < 0 || d >= count) {
            throw_invalid(fmt::format("devices[{}]: device {} does not exist; this process sees {} device{} "
                                      "(0 to {})",
                                      i, d, count, count == 1 ? "" : "s", count - 1),
                          api);
        }
        for (std::size_t j = 0; j < i; ++j) {
            if (devices[j] == d) {
                throw_invalid(fmt::format("devices[{}]: device {} is listed twice (also devices[{}]); each rank "
                                          "needs a device of its own",
                                          i, d, j),
                              api);
            }
        }
    }
}

CheckedCollective check_collective(const CollectiveCall& call, int size, std::span<const LocalRank> ranks,
                                   int nccl_version, const CollectiveLookups& lookups, const char* api) {
    const std::string_view name = name_of(call.kind);
    if (size < 1) throw_invalid(fmt::format("{}: the communicator has {} ranks (moved from?)", name, size), api);
    if (reduces(call.kind)) check_enum(call.op, dist::reduce_op_count, "a ReduceOp", "op", api);
    const std::size_t n = ranks.size();
    if (n == 0) throw_invalid(fmt::format("{}: the communicator holds no local rank (moved from?)", name), api);
    if (call.send.size() != n || call.recv.size() != n || call.streams.size() != n) {
        throw_invalid(fmt::format("{}: {} send, {} recv and {} stream{} given; this communicator holds {} local "
                                  "rank{}: give one of each per local rank, in local rank order",
                                  name, call.send.size(), call.recv.size(), call.streams.size(),
                                  call.streams.size() == 1 ? "" : "s", n, n == 1 ? "" : "s"),
                      api);
    }
    if (call.kind == Collective::broadcast && (call.root < 0 || call.root >= size)) {
        throw_invalid(
            fmt::format("broadcast: root {} is not a rank of this communicator (0 to {})", call.root, size - 1), api);
    }
    const DataType dtype = call.send[0].dtype();
    CheckedCollective checked;
    const NcclType type = nccl_type(dtype, call, nccl_version, api);
    checked.nccl_type = int(type.type);
    checked.nccl_op = int(nccl_op(call.op));
    const auto s = static_cast<std::int64_t>(size);
    std::int64_t count = -1;
    for (std::size_t i = 0; i < n; ++i) {
        const TensorView& send = call.send[i];
        const TensorView& recv = call.recv[i];
        for (const auto& [v, which] : {Operand{&send, "send"}, Operand{&recv, "recv"}}) {
            if (v->dtype() != dtype) {
                throw_invalid(fmt::format("{}: {}[{}] is {} but send[0] is {}: every operand of a collective has "
                                          "one dtype",
                                          name, which, i, to_string(v->dtype()), to_string(dtype)),
                              api);
            }
            check_view(*v, which, i, call, api);
        }
        // The element count each rank passes to NCCL, and the relation between send and recv.
        std::int64_t rank_count = 0;
        std::int64_t expected_recv = 0;
        switch (call.kind) {
            case Collective::all_reduce:
            case Collective::broadcast:
                rank_count = send.size();
                expected_recv = send.size();
                break;
            case Collective::reduce_scatter:
                rank_count = recv.size();
                expected_recv = send.size() % s == 0 ? send.size() / s : -1;
                break;
            case Collective::all_gather:
                rank_count = send.size();
                if (__builtin_mul_overflow(send.size(), s, &expected_recv)) expected_recv = -1;
                break;
        }
        if (recv.size() != expected_recv) {
            const char* rule = call.kind == Collective::reduce_scatter ? "send has size() times recv's elements"
                               : call.kind == Collective::all_gather   ? "recv has size() times send's elements"
                                                                       : "recv has send's element count";
            throw_invalid(fmt::format("{}: rank {} sends {} and receives {} elements with {} ranks; the rule is: {}",
                                      name, ranks[i].rank, send.size(), recv.size(), size, rule),
                          api);
        }
        if (count < 0) count = rank_count;
        if (rank_count != count) {
            throw_invalid(fmt::format("{}: local rank {} passes {} elements but local rank 0 passes {}: every rank "
                                      "of a collective passes the same count",
                                      name, i, rank_count, count),
                          api);
        }
        // Overlap: only the in-place forms NCCL documents.
        const ByteRange sb = bytes_of(send);
        const ByteRange rb = bytes_of(recv);
        const auto element = std::uintptr_t(size_of(dtype));
        bool in_place = false;
        switch (call.kind) {
            case Collective::all_reduce:
            case Collective::broadcast:
                in_place = sb.lo == rb.lo;
                break;
            case Collective::reduce_scatter:
                in_place = rb.lo == sb.lo + std::uintptr_t(ranks[i].rank) * std::uintptr_t(recv.size()) * element;
                break;
            case Collective::all_gather:
                in_place = sb.lo == rb.lo + std::uintptr_t(ranks[i].rank) * std::uintptr_t(send.size()) * element;
                break;
        }
        if (!in_place && meet(sb, rb)) {
            throw_invalid(fmt::format("{}: recv[{}] overlaps send[{}] without being its in-place form (see "
                                      "Communicator::{})",
                                      name, i, i, name),
                          api);
        }
    }
    checked.count = std::size_t(count) * std::size_t(type.reals);
    // Last: where the memory and the streams are, and what the devices can do (CUDA calls, no GPU work).
    for (std::size_t i = 0; i < n; ++i) {
        const int device = ranks[i].device;
        check_memory_on(call.send[i], {name, ": send", i, {}}, device, lookups, api);
        check_memory_on(call.recv[i], {name, ": recv", i, {}}, device, lookups, api);
        check_stream_on(call.streams[i], {name, ": streams", i, {}}, device, lookups, api);
        if (is_fp8(dtype) && lookups.compute_major(device) < nccl_fp8_compute_major) {
            throw_not_supported(fmt::format("{}: {} data on device {}: NCCL's fp8 reductions and copies need compute "
                                            "capability 9.0 or later",
                                            name, to_string(dtype), device),
                                api);
        }
    }
    return checked;
}

}  // namespace gpumath::detail
