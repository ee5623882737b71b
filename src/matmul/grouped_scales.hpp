// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: per-group FP8 scales. cuBLASLt reads a scale or amax pointer only when it
// is 16-byte aligned, while the (G,) f32 tensors users hold step by 4 bytes. A call with scales
// copies them to slots of 16 bytes each (one small run-time compiled kernel on the caller's stream)
// in the caller stream's workspace, past the scratch its products use, and copies each group's
// amax back to the user's tensor after the products.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include <gpumath/core/object_code.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/matmul/grouped.hpp>

#include "matmul/grouped_streams.hpp"
#include "matmul/internal.hpp"

namespace gpumath::detail {

struct GroupOperands;

/// Bytes of one group's slots: a, b, d and amax, 16 bytes each.
inline constexpr std::size_t scale_slot_stride = 64;

/// The kernels that copy scales to their slots and amax values back, compiled for `arch` ("sm_90").
[[nodiscard]] core::ObjectCode compile_scale_kernels(const std::string& arch);

/// Enqueues the products of a validated grouped call as enqueue_grouped() does. Without scales
/// that is all, and so it is with scales already 16-byte aligned for every group and no amax_d
/// (each group's scales then point into the user's tensors). Otherwise it first leases the caller
/// stream's workspace for the products' scratch plus the slots of `group_count` groups, copies the
/// scales to the slots, points every group's scales (placeholders until now) at its slots and runs
/// the products with the leased area (held until the last one is enqueued), then copies the
/// groups' amax values to `args.scales.amax_d`. `kernel`: the call as one grouped-kernel launch,
/// where that can run it (a candidate of `automatic`).
void enqueue_grouped_call(std::span<GroupOperands> groups, std::span<const std::shared_ptr<MatmulPlan>> plans,
                          PartitionedPlans& partitioned, const GroupedMatmulArgs& args, std::int64_t group_count,
                          core::StreamRef stream, int device, GroupedBackend backend, BackendChoices& choices,
                          const BackendChoiceKey& key, const HostKernelCall* kernel, const char* who);

}  // namespace gpumath::detail
