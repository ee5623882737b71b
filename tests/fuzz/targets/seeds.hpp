// SPDX-License-Identifier: Apache-2.0
// The fuzz targets' seed inputs: real data made here by NVRTC, nvJitLink, the toolkit's fatbinary
// (where the build found it) and gpumath's own writers, so that fuzzing starts from what these
// parsers meet in practice.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpumath::fuzz {

/// The seeds of the target `name` (empty for a target without any).
[[nodiscard]] std::vector<std::string> seeds(std::string_view name);

}  // namespace gpumath::fuzz
