// SPDX-License-Identifier: Apache-2.0
// Private: the one loader of gpumath's own device code. A program (its source, headers and
// options) is compiled through the compile cache and loaded once per process and device; threads
// that ask for it at once wait for the one loading it (single flight), and the module then lives
// for the life of the process, like every per-device state (no static destructor may run after
// the CUDA runtime has shut down). Kernel handles are then served from a lookup keyed by the
// program's digest, computed once when the program is made, so a hot path pays a hash lookup.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <gpumath/core/module.hpp>
#include <gpumath/core/object_code.hpp>
#include <gpumath/core/program.hpp>

#include "core/hash.hpp"

namespace gpumath::detail {

/// A program of gpumath's own kernels, as `device_kernel` compiles it: the CUDA C++ text (an
/// embedded device source, see cmake/gpumath-embed.cmake), NVRTC's options (name, in-memory headers
/// such as the kernel's parameter header, defines; `arch` left empty is each device's, and a program
/// of one architecture's own instructions names it, as "sm_90a"), the name expressions its kernels
/// are looked up by ("cast<float, __half>") and, rarely, objects to link it with (a caller's LTO-IR
/// that the program calls: the program is then compiled to LTO-IR and linked with them by
/// nvJitLink). Identified by a digest of all of that, computed
/// once here: make each program once (a static, or kept in a table) and pass it to every call.
class DeviceProgram {
public:
    DeviceProgram(std::string_view source, core::ProgramOptions options, std::vector<std::string> name_expressions = {},
                  std::vector<core::ObjectCode> link_inputs = {});

    [[nodiscard]] std::string_view source() const noexcept { return source_; }
    [[nodiscard]] const core::ProgramOptions& options() const noexcept { return options_; }
    [[nodiscard]] std::span<const std::string> name_expressions() const noexcept { return name_expressions_; }
    [[nodiscard]] std::span<const core::ObjectCode> link_inputs() const noexcept { return link_inputs_; }
    /// What identifies the program: its text, headers, options, name expressions and link inputs.
    [[nodiscard]] const Digest& digest() const noexcept { return digest_; }

private:
    std::string_view source_;
    core::ProgramOptions options_;
    std::vector<std::string> name_expressions_;
    std::vector<core::ObjectCode> link_inputs_;
    Digest digest_{};
};

/// The module of `program` loaded for `device`: compiled and loaded on the first call for this
/// (program, device), returned from memory afterwards. Two callers with the same program share one
/// module. Loading may happen while a stream captures (the compile and the load are not recorded
/// into it). Throws what compiling, linking or loading throws (CompileError for a kernel gpumath got
/// wrong, LinkError, CudaError); a failed load is tried again by the next caller.
[[nodiscard]] const core::Module& device_module(int device, const DeviceProgram& program);

/// The kernel `name` (a kernel's name or one of the program's name expressions) of `program` on
/// `device`: loaded as `device_module` loads, then served from a lookup.
[[nodiscard]] core::Kernel device_kernel(int device, const DeviceProgram& program, std::string_view name);

}  // namespace gpumath::detail
