// SPDX-License-Identifier: Apache-2.0
/// @file
/// The runtime layer: devices, streams, events, memory, programs (NVRTC), linking (nvJitLink),
/// modules, kernels, launches and graphs.
#pragma once

#include <gpumath/core/device.hpp>
#include <gpumath/core/event.hpp>
#include <gpumath/core/graph.hpp>
#include <gpumath/core/launch.hpp>
#include <gpumath/core/linker.hpp>
#include <gpumath/core/memory.hpp>
#include <gpumath/core/module.hpp>
#include <gpumath/core/program.hpp>
#include <gpumath/core/stream.hpp>
