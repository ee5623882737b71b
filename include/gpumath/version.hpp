// SPDX-License-Identifier: Apache-2.0
/// @file
/// The version, written once here; CMake reads it from this file.
#pragma once

/// The major version.
#define GPUMATH_VERSION_MAJOR 0
/// The minor version (`find_package(gpumath 0.1)` accepts 0.1.x only: same major and minor).
#define GPUMATH_VERSION_MINOR 1
/// The patch version.
#define GPUMATH_VERSION_PATCH 0

/// The version as one integer: major * 10000 + minor * 100 + patch.
#define GPUMATH_VERSION (GPUMATH_VERSION_MAJOR * 10000 + GPUMATH_VERSION_MINOR * 100 + GPUMATH_VERSION_PATCH)

namespace gpumath {
/// The version gpumath was compiled with, as "major.minor.patch".
inline constexpr const char* version_string = "0.1.0";
}  // namespace gpumath
