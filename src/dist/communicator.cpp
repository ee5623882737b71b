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
#include "dist/communicator_state.hpp"
#include "dist/nccl_api.hpp"

namespace gpumath::detail {

// Several communicators driven by this thread finalize together (in one group): finalizing them
// one after another could wait on a peer that has not begun to.
CommunicatorState::~CommunicatorState() {
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

const std::shared_ptr<CommunicatorState>& CommunicatorAccess::state(const dist::Communicator& comm, const char* api) {
    if (!comm.state_) [[unlikely]]
        throw_moved_from("Communicator", api);
    return comm.state_;
}

CheckedCollective check_on(const CommunicatorState& s, const CollectiveCall& call, const char* api) {
    return check_collective(call, s.size, s.ranks, nccl().version, cuda_lookups(), api);
}

void enqueue(CommunicatorState& s, const CollectiveCall& call, const CheckedCollective& c, const char* api) {
    const NcclApi& n = nccl();
    const auto type = ncclDataType_t(c.nccl_type);
    const auto op = ncclRedOp_t(c.nccl_op);
    const auto one = [&](std::size_t i) {
        const DeviceGuard guard(s.ranks[i].device);
        const void* send = call.send[i].data();
        void* recv = call.recv[i].data();
        cudaStream_t stream = call.streams[i].handle();
        ncclResult_t status = ncclSuccess;
        const char* function = "";
        switch (call.kind) {
            case Collective::all_reduce:
                function = "ncclAllReduce";
                status = n.ncclAllReduce(send, recv, c.count, type, op, s.comms[i], stream);
                break;
            case Collective::reduce_scatter:
                function = "ncclReduceScatter";
                status = n.ncclReduceScatter(send, recv, c.count, type, op, s.comms[i], stream);
                break;
            case Collective::all_gather:
                function = "ncclAllGather";
                status = n.ncclAllGather(send, recv, c.count, type, s.comms[i], stream);
                break;
            case Collective::broadcast:
                function = "ncclBroadcast";
                status = n.ncclBroadcast(send, recv, c.count, type, call.root, s.comms[i], stream);
                break;
        }
        check_nccl(status, function, [&] { return fmt::format("{}: local rank {}", api, i); });
    };
    const std::lock_guard lock(s.mutex);
    if (s.ranks.size() == 1) {
        one(0);
        return;
    }
    // One thread driving several GPUs must group their calls, or the first would wait for the others.
    check_nccl(n.ncclGroupStart(), "ncclGroupStart", api);
    bool ended = false;
    const ScopeExit end_group([&] {
        if (!ended) (void)n.ncclGroupEnd();
    });
    for (std::size_t i = 0; i < s.ranks.size(); ++i) one(i);
    ended = true;
    check_nccl(n.ncclGroupEnd(), "ncclGroupEnd", api);
}

namespace {

// Checks and enqueues one collective.
void run(const dist::Communicator& comm, const CollectiveCall& call, const char* api) {
    CommunicatorState& s = *CommunicatorAccess::state(comm, api);
    const CheckedCollective checked = check_on(s, call, api);
    enqueue(s, call, checked, api);
}

}  // namespace
}  // namespace gpumath::detail

namespace gpumath::dist {

using gpumath::detail::check_nccl;
using gpumath::detail::Collective;
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
    gpumath::detail::check_device_list(devices, core::Device::count(), api);
    const gpumath::detail::NcclApi& n = nccl();
    auto state = std::make_shared<CommunicatorState>();
    state->comms.assign(devices.size(), nullptr);
    check_nccl(n.ncclCommInitAll(state->comms.data(), int(devices.size()), devices.data()), "ncclCommInitAll",
               [&] { return fmt::format("making a communicator of {} devices", devices.size()); });
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
    if (id == UniqueId{}) {
        gpumath::detail::throw_invalid(
            "id: every byte is zero, which no UniqueId::create() returns; give every "
            "rank the id rank 0 made",
            api);
    }
    const int one[] = {device};
    gpumath::detail::check_device_list(one, core::Device::count(), api);
    const gpumath::detail::NcclApi& n = nccl();
    ncclUniqueId native{};
    std::memcpy(&native, id.bytes.data(), sizeof(native));
    auto state = std::make_shared<CommunicatorState>();
    state->comms.assign(1, nullptr);
    {
        const gpumath::detail::DeviceGuard guard(device);
        check_nccl(n.ncclCommInitRank(&state->comms[0], size, native, rank), "ncclCommInitRank",
                   [&] { return fmt::format("joining rank {} of {} on device {}", rank, size, device); });
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

Communicator::~Communicator() = default;
Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;

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
}  // namespace

int Communicator::rank(int local) const {
    constexpr const char* api = "Communicator::rank";
    const CommunicatorState& s = *gpumath::detail::CommunicatorAccess::state(*this, api);
    return s.ranks[local_index(s, local, api)].rank;
}

int Communicator::device(int local) const {
    constexpr const char* api = "Communicator::device";
    const CommunicatorState& s = *gpumath::detail::CommunicatorAccess::state(*this, api);
    return s.ranks[local_index(s, local, api)].device;
}

void* Communicator::native_handle(int local) const {
    constexpr const char* api = "Communicator::native_handle";
    const CommunicatorState& s = *gpumath::detail::CommunicatorAccess::state(*this, api);
    return s.comms[local_index(s, local, api)];
}

void Communicator::all_reduce(std::span<const TensorView> send, std::span<const TensorView> recv, ReduceOp op,
                              std::span<const core::StreamRef> streams) {
    gpumath::detail::run(*this, {Collective::all_reduce, send, recv, streams, op, 0}, "Communicator::all_reduce");
}

void Communicator::all_reduce(const TensorView& send, const TensorView& recv, ReduceOp op, core::StreamRef stream) {
    all_reduce({&send, 1}, {&recv, 1}, op, {&stream, 1});
}

void Communicator::reduce_scatter(std::span<const TensorView> send, std::span<const TensorView> recv, ReduceOp op,
                                  std::span<const core::StreamRef> streams) {
    gpumath::detail::run(*this, {Collective::reduce_scatter, send, recv, streams, op, 0},
                         "Communicator::reduce_scatter");
}

void Communicator::reduce_scatter(const TensorView& send, const TensorView& recv, ReduceOp op, core::StreamRef stream) {
    reduce_scatter({&send, 1}, {&recv, 1}, op, {&stream, 1});
}

void Communicator::all_gather(std::span<const TensorView> send, std::span<const TensorView> recv,
                              std::span<const core::StreamRef> streams) {
    gpumath::detail::run(*this, {Collective::all_gather, send, recv, streams, ReduceOp::sum, 0},
                         "Communicator::all_gather");
}

void Communicator::all_gather(const TensorView& send, const TensorView& recv, core::StreamRef stream) {
    all_gather({&send, 1}, {&recv, 1}, {&stream, 1});
}

void Communicator::broadcast(std::span<const TensorView> send, std::span<const TensorView> recv, int root,
                             std::span<const core::StreamRef> streams) {
    gpumath::detail::run(*this, {Collective::broadcast, send, recv, streams, ReduceOp::sum, root},
                         "Communicator::broadcast");
}

void Communicator::broadcast(const TensorView& send, const TensorView& recv, int root, core::StreamRef stream) {
    broadcast({&send, 1}, {&recv, 1}, root, {&stream, 1});
}

}  // namespace gpumath::dist
