// SPDX-License-Identifier: Apache-2.0
/// @file
/// Run-time compilation of CUDA C++ with NVRTC: ProgramOptions and Program. Includes what a
/// compile gives and what uses it: ObjectCode, the compile cache and Module.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include <gpumath/core/compile_cache.hpp>
#include <gpumath/core/module.hpp>
#include <gpumath/core/object_code.hpp>
#include <gpumath/detail/moved_from.hpp>

namespace gpumath::core {

/// Options of a Program: typed fields, validated when the Program is constructed (InvalidArgument
/// naming the field, the value given and what is allowed). Use designated initializers:
/// `ProgramOptions{.arch = "sm_90", .std = "c++20", .defines = {{"N", "4"}}}`.
struct ProgramOptions {
    /// The program's name, used in compiler messages and as the source file name.
    std::string name = "gpumath_program";
    /// Target architecture: "sm_NN" (real GPU: PTX, cubin and LTO-IR targets), "compute_NN" (virtual:
    /// PTX and LTO-IR only), optionally with an "a" (arch-specific, NN >= 90) or "f" (family,
    /// NN >= 100) suffix, as in "sm_90a". Empty: the current device's architecture; with no device,
    /// constructing the Program throws InvalidArgument asking for an explicit arch.
    std::string arch{};
    /// Language dialect: "c++11", "c++14", "c++17" or "c++20".
    std::string std = "c++17";
    /// Macros: name -> value (an empty value defines the name as 1, like -DNAME).
    std::map<std::string, std::string> defines{};
    /// Directories searched for `#include`, before the CUDA toolkit's own headers. Must exist.
    std::vector<std::string> include_dirs{};
    /// In-memory headers: include name (as written in `#include`) -> contents. Found before files.
    std::map<std::string, std::string> headers{};
    /// --use_fast_math: approximate division/sqrt/transcendentals, flush denormals to zero.
    bool fast_math = false;
    /// -lineinfo: line tables for profilers and compute-sanitizer.
    bool lineinfo = false;
    /// -G: device debug information (disables optimisation).
    bool debug = false;
    /// -rdc=true: relocatable device code, for linking with other objects (LTO-IR implies it).
    bool relocatable = false;
    /// -maxrregcount: register limit per thread, 0 = no limit (otherwise 1..255).
    int max_registers = 0;
    /// Further NVRTC flags, each starting with '-', passed as given (after the typed ones). The
    /// architecture, dialect and output kind have typed fields and are rejected here, and so are
    /// include paths (-I, --include-path: use `include_dirs`, which the compile cache keys) and
    /// pre-included headers (-include, --pre-include).
    std::vector<std::string> extra{};
    /// CUDA toolkit root whose headers (cuda_fp16.h, cuda_bf16.h, cuda/std/...) JIT sources may
    /// include. Empty: $CUDA_PATH, then $CUDA_HOME, then the toolkit gpumath was built against,
    /// then /usr/local/cuda; the first that has include/cuda_fp16.h wins. When set, it must exist.
    std::string toolkit_root{};
    /// Use the compile cache (memory and, when enabled, disk). See `compile_cache()`.
    bool cache = true;
};

/// CUDA C++ source plus options, compiled with NVRTC on `compile`. Cheap to copy; holds no GPU or
/// NVRTC resources between calls. Thread-safe for concurrent `compile` calls. A moved-from Program
/// throws InvalidArgument from `compile` and `add_name_expression`; its accessors return empty values.
class Program {
public:
    /// Validates `options` (InvalidArgument) and resolves an empty arch to the current device's
    /// (InvalidArgument when there is no device). Does not compile yet.
    explicit Program(std::string source, ProgramOptions options = {});

    /// Registers a name expression such as "scale<float>" or "&ns::table" whose mangled name the
    /// compiled code should report through `ObjectCode::lowered_name`. Returns *this.
    /// InvalidArgument for an empty expression or a moved-from Program.
    Program& add_name_expression(std::string expression);

    /// Compiles to `target` (ptx, cubin or ltoir). Returns the cached result when source, headers,
    /// options, architecture, NVRTC version and name expressions match an earlier compile (in
    /// memory or on disk). Throws CompileError carrying NVRTC's log when the source does not
    /// compile, InvalidArgument for a target the architecture cannot give (a cubin from compute_NN,
    /// or fatbin), a value that is not a CodeType, flags NVRTC rejects or a moved-from Program.
    [[nodiscard]] ObjectCode compile(CodeType target = CodeType::cubin) const;

    /// The CUDA C++ source.
    [[nodiscard]] const std::string& source() const noexcept { return source_; }
    /// The options, with `arch` resolved.
    [[nodiscard]] const ProgramOptions& options() const noexcept { return options_; }
    /// The registered name expressions, in registration order.
    [[nodiscard]] std::span<const std::string> name_expressions() const noexcept { return name_expressions_; }
    /// Include directories used for the toolkit's headers (empty when none was found).
    [[nodiscard]] std::span<const std::string> toolkit_include_dirs() const noexcept { return toolkit_dirs_; }

private:
    std::string source_;
    ProgramOptions options_;
    std::vector<std::string> name_expressions_{};
    std::vector<std::string> toolkit_dirs_{};
    detail::MovedFrom moved_from_{};
};

}  // namespace gpumath::core
