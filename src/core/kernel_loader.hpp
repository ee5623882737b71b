// SPDX-License-Identifier: Apache-2.0
// Private: the one loader of gpumath's own device code. A program (its source, headers and
// options) is compiled through the compile cache and loaded once per process and device; threads
// that ask for it at once wait for the one loading it (single flight), and the module then lives
// for the life of the process, like every per-device state (no static destructor may run after
// the CUDA runtime has shut down).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include <gpumath/core/module.hpp>
#include <gpumath/core/program.hpp>

namespace gpumath::detail {

/// A program of gpumath's own kernels, as `device_module` compiles it. `options.arch` is left
/// empty: the device's architecture is filled in.
struct DeviceProgram {
    /// The CUDA C++ text (an embedded device source).
    std::string_view source;
    /// Name, in-memory headers (the program's parameter header, shared with the host), defines and
    /// the rest of NVRTC's options.
    core::ProgramOptions options{};
    /// Expressions whose lowered names the kernels are looked up by ("cast<float, __half>").
    std::span<const std::string> name_expressions{};
};

/// The module of `program` loaded for `device`: compiled and loaded on the first call for this
/// (device, program), returned from memory afterwards. The program is identified by all of its
/// text and options, so two callers with the same program share one module. Loading may happen
/// while a stream captures (the compile and the load are not recorded into it). Throws what
/// compiling or loading throws (CompileError for a kernel gpumath got wrong, CudaError); a failed
/// load is tried again by the next caller.
[[nodiscard]] const core::Module& device_module(int device, const DeviceProgram& program);

/// `device_module(device, program).kernel(name, device)`, the kernel by name or name expression.
[[nodiscard]] core::Kernel device_kernel(int device, const DeviceProgram& program, std::string_view name);

}  // namespace gpumath::detail
