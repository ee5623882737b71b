// SPDX-License-Identifier: Apache-2.0
// The runtime layer: devices, streams, events, memory, and (with the JIT runtime) programs,
// linking, modules, kernels and launches.
#pragma once

#include <gpumath/core/device.hpp>
#include <gpumath/core/event.hpp>
#include <gpumath/core/memory.hpp>
#include <gpumath/core/stream.hpp>
