// SPDX-License-Identifier: Apache-2.0
// Private: what a Communicator owns, shared with the dist::Matmul objects made on it, and the two
// halves of a collective (the checks, the enqueue) that dist::Matmul's pipeline calls apart.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include <nccl.h>

#include <gpumath/dist/communicator.hpp>

#include "dist/collective_checks.hpp"

namespace gpumath::detail {

/// The NCCL communicators of the local ranks. Destroyed when the last owner (the Communicator, or
/// a dist::Matmul made on it) goes.
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
    ~CommunicatorState();
};

/// The state of a Communicator; InvalidArgument naming `api` when it is moved from.
struct CommunicatorAccess {
    static const std::shared_ptr<CommunicatorState>& state(const dist::Communicator& comm, const char* api);
};

/// Every check of `call` on `s` (check_collective with the CUDA lookups and the loaded NCCL).
[[nodiscard]] CheckedCollective check_on(const CommunicatorState& s, const CollectiveCall& call, const char* api);

/// Enqueues a call that `check_on` passed, one NCCL call per local rank (grouped when several),
/// each with its rank's device current. NcclError.
void enqueue(CommunicatorState& s, const CollectiveCall& call, const CheckedCollective& checked, const char* api);

}  // namespace gpumath::detail
