// SPDX-License-Identifier: Apache-2.0
#include <gpumath/dist/communicator.hpp>

#include <cstring>
#include <mutex>
#include <vector>

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <gpumath/core/device.hpp>
#include <gpumath/error.hpp>

#include "detail/scope_exit.hpp"
#include "detail/status.hpp"
#include "dist/collective_checks.hpp"
#include "dist/nccl_api.hpp"

namespace gpumath::detail {

struct CommunicatorState {
    std::vector<ncclComm_t> comms;
    std::vector<LocalRank> ranks;
    int size = 0;
    std::mutex mutex;  // NCCL takes one thread at a time per communicator

    CommunicatorState() = default;
    CommunicatorState(const CommunicatorState&) = delete;
    CommunicatorState& operator=(const CommunicatorState&) = delete;
    CommunicatorState(CommunicatorState&&) = delete;
    CommunicatorState& operator=(CommunicatorState&&) = delete;
    // Several communicators driven by this thread finalize together (in one group): finalizing
    // them one after another could wait on a peer that has not begun to.
    ~CommunicatorState() {
        release_noexcept([&] {
            const NcclApi& n = nccl();
            if (comms.size() > 1) {
                (void)n.ncclGroupStart();
                for (ncclComm_t c : comms)
                    if (c != nullptr) (void)n.ncclCommFinalize(c);
                (void)n.ncclGroupEnd();
            }
            for (ncclComm_t c : comms)
                if (c != nullptr) (void)n.ncclCommDestroy(c);
        });
    }
};

namespace {

int visible_devices() { return core::Device::count(); }

}  // namespace
}  // namespace gpumath::detail

namespace gpumath::dist {

using gpumath::detail::check_nccl;
using gpumath::detail::CommunicatorState;
using gpumath::detail::nccl;

int nccl_version() { return nccl().version; }

UniqueId UniqueId::create() {
    ncclUniqueId id{};
    check_nccl(nccl().ncclGetUniqueId(&id), "ncclGetUniqueId", "making a communicator's unique id");
    UniqueId out;
    static_assert(sizeof(id) == sizeof(out.bytes));
    std::memcpy(out.bytes.data(), &id, sizeof(id));
    return out;
}

Communicator::Communicator(std::span<const int> devices) {
    constexpr const char* api = "Communicator";
    gpumath::detail::check_device_list(devices, gpumath::detail::visible_devices(), api);
    const gpumath::detail::NcclApi& n = nccl();
    auto state = std::make_unique<CommunicatorState>();
    state->comms.assign(devices.size(), nullptr);
    check_nccl(n.ncclCommInitAll(state->comms.data(), int(devices.size()), devices.data()), "ncclCommInitAll",
               fmt::format("making a communicator of {} devices", devices.size()));
    state->size = int(devices.size());
    for (std::size_t i = 0; i < devices.size(); ++i) state->ranks.push_back({int(i), devices[i]});
    state_ = std::move(state);
}

Communicator::Communicator(std::initializer_list<int> devices)
    : Communicator(std::span<const int>(devices.begin(), devices.size())) {}

Communicator::Communicator(const UniqueId& id, int size, int rank, int device) {
    constexpr const char* api = "Communicator";
    if (size < 1)
        gpumath::detail::throw_invalid(fmt::format("size: {} ranks; a communicator has at least one", size), api);
    if (rank < 0 || rank >= size) {
        gpumath::detail::throw_invalid(fmt::format("rank: {} is not a rank of {} (0 to {})", rank, size, size - 1),
                                       api);
    }
    const int one[] = {device};
    gpumath::detail::check_device_list(one, gpumath::detail::visible_devices(), api);
    const gpumath::detail::NcclApi& n = nccl();
    ncclUniqueId native{};
    std::memcpy(&native, id.bytes.data(), sizeof(native));
    auto state = std::make_unique<CommunicatorState>();
    state->comms.assign(1, nullptr);
    {
        const gpumath::detail::DeviceGuard guard(device);
        check_nccl(n.ncclCommInitRank(&state->comms[0], size, native, rank), "ncclCommInitRank",
                   fmt::format("joining rank {} of {} on device {}", rank, size, device));
    }
    state->size = size;
    state->ranks.push_back({rank, device});
    state_ = std::move(state);
}

Communicator Communicator::all_devices() {
    int count = 0;
    gpumath::detail::check(cudaGetDeviceCount(&count), "cudaGetDeviceCount", "listing the devices of a communicator");
    std::vector<int> devices(std::size_t(count), 0);
    for (int i = 0; i < count; ++i) devices[std::size_t(i)] = i;
    return Communicator(std::span<const int>(devices));
}

Communicator::Communicator(std::unique_ptr<CommunicatorState> state) noexcept : state_(std::move(state)) {}
Communicator::~Communicator() = default;
Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;

CommunicatorState& Communicator::state(const char* api) const {
    if (!state_) [[unlikely]]
        gpumath::detail::throw_moved_from("Communicator", api);
    return *state_;
}

int Communicator::size() const noexcept { return state_ ? state_->size : 0; }
int Communicator::local_size() const noexcept { return state_ ? int(state_->ranks.size()) : 0; }

namespace {
std::size_t local_index(const CommunicatorState& s, int local, const char* api) {
    if (local < 0 || local >= int(s.ranks.size())) {
        gpumath::detail::throw_invalid(
            fmt::format("local rank {} is not held here: this object holds {} local rank{} "
                        "(0 to {})",
                        local, s.ranks.size(), s.ranks.size() == 1 ? "" : "s", int(s.ranks.size()) - 1),
            api);
    }
    return std::size_t(local);
}

// Enqueues one NCCL call per local rank (`enqueue(i)`), grouped when there are several so that
// NCCL launches them together (one thread driving several GPUs would deadlock otherwise).
template <class Enqueue>
void for_each_rank(CommunicatorState& s, const char* api, Enqueue&& enqueue) {
    const gpumath::detail::NcclApi& n = nccl();
    const std::lock_guard lock(s.mutex);
    if (s.ranks.size() == 1) {
        const gpumath::detail::DeviceGuard guard(s.ranks[0].device);
        enqueue(std::size_t(0));
        return;
    }
    check_nccl(n.ncclGroupStart(), "ncclGroupStart", api);
    bool ended = false;
    const gpumath::detail::ScopeExit end_group([&] {
        if (!ended) (void)n.ncclGroupEnd();
    });
    for (std::size_t i = 0; i < s.ranks.size(); ++i) {
        const gpumath::detail::DeviceGuard guard(s.ranks[i].device);
        enqueue(i);
    }
    ended = true;
    check_nccl(n.ncclGroupEnd(), "ncclGroupEnd", api);
}
}  // namespace

int Communicator::rank(int local) const {
    const CommunicatorState& s = state("Communicator::rank");
    return s.ranks[local_index(s, local, "Communicator::rank")].rank;
}

int Communicator::device(int local) const {
    const CommunicatorState& s = state("Communicator::device");
    return s.ranks[local_index(s, local, "Communicator::device")].device;
}

void* Communicator::native_handle(int local) const {
    const CommunicatorState& s = state("Communicator::native_handle");
    return s.comms[local_index(s, local, "Communicator::native_handle")];
}

void Communicator::all_reduce(std::span<const TensorView> send, std::span<const TensorView> recv, ReduceOp op,
                              std::span<const core::StreamRef> streams) {
    constexpr const char* api = "Communicator::all_reduce";
    CommunicatorState& s = state(api);
    const gpumath::detail::CheckedCollective c =
        gpumath::detail::check_collective({gpumath::detail::Collective::all_reduce, send, recv, streams, op, 0}, s.size,
                                          s.ranks, nccl().version, gpumath::detail::cuda_lookups(), api);
    for_each_rank(s, api, [&](std::size_t i) {
        check_nccl(nccl().ncclAllReduce(send[i].data(), recv[i].data(), c.count, ncclDataType_t(c.nccl_type),
                                        ncclRedOp_t(c.nccl_op), s.comms[i], streams[i].handle()),
                   "ncclAllReduce", fmt::format("local rank {}", i));
    });
}

void Communicator::all_reduce(const TensorView& send, const TensorView& recv, ReduceOp op, core::StreamRef stream) {
    all_reduce({&send, 1}, {&recv, 1}, op, {&stream, 1});
}

void Communicator::reduce_scatter(std::span<const TensorView> send, std::span<const TensorView> recv, ReduceOp op,
                                  std::span<const core::StreamRef> streams) {
    constexpr const char* api = "Communicator::reduce_scatter";
    CommunicatorState& s = state(api);
    const gpumath::detail::CheckedCollective c =
        gpumath::detail::check_collective({gpumath::detail::Collective::reduce_scatter, send, recv, streams, op, 0},
                                          s.size, s.ranks, nccl().version, gpumath::detail::cuda_lookups(), api);
    for_each_rank(s, api, [&](std::size_t i) {
        check_nccl(nccl().ncclReduceScatter(send[i].data(), recv[i].data(), c.count, ncclDataType_t(c.nccl_type),
                                            ncclRedOp_t(c.nccl_op), s.comms[i], streams[i].handle()),
                   "ncclReduceScatter", fmt::format("local rank {}", i));
    });
}

void Communicator::reduce_scatter(const TensorView& send, const TensorView& recv, ReduceOp op, core::StreamRef stream) {
    reduce_scatter({&send, 1}, {&recv, 1}, op, {&stream, 1});
}

void Communicator::all_gather(std::span<const TensorView> send, std::span<const TensorView> recv,
                              std::span<const core::StreamRef> streams) {
    constexpr const char* api = "Communicator::all_gather";
    CommunicatorState& s = state(api);
    const gpumath::detail::CheckedCollective c = gpumath::detail::check_collective(
        {gpumath::detail::Collective::all_gather, send, recv, streams, ReduceOp::sum, 0}, s.size, s.ranks,
        nccl().version, gpumath::detail::cuda_lookups(), api);
    for_each_rank(s, api, [&](std::size_t i) {
        check_nccl(nccl().ncclAllGather(send[i].data(), recv[i].data(), c.count, ncclDataType_t(c.nccl_type),
                                        s.comms[i], streams[i].handle()),
                   "ncclAllGather", fmt::format("local rank {}", i));
    });
}

void Communicator::all_gather(const TensorView& send, const TensorView& recv, core::StreamRef stream) {
    all_gather({&send, 1}, {&recv, 1}, {&stream, 1});
}

void Communicator::broadcast(std::span<const TensorView> send, std::span<const TensorView> recv, int root,
                             std::span<const core::StreamRef> streams) {
    constexpr const char* api = "Communicator::broadcast";
    CommunicatorState& s = state(api);
    const gpumath::detail::CheckedCollective c = gpumath::detail::check_collective(
        {gpumath::detail::Collective::broadcast, send, recv, streams, ReduceOp::sum, root}, s.size, s.ranks,
        nccl().version, gpumath::detail::cuda_lookups(), api);
    for_each_rank(s, api, [&](std::size_t i) {
        check_nccl(nccl().ncclBroadcast(send[i].data(), recv[i].data(), c.count, ncclDataType_t(c.nccl_type), root,
                                        s.comms[i], streams[i].handle()),
                   "ncclBroadcast", fmt::format("local rank {}", i));
    });
}

void Communicator::broadcast(const TensorView& send, const TensorView& recv, int root, core::StreamRef stream) {
    broadcast({&send, 1}, {&recv, 1}, root, {&stream, 1});
}

}  // namespace gpumath::dist
