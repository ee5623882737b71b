// SPDX-License-Identifier: Apache-2.0
/// @file
/// Linking device code with nvJitLink: LinkerOptions, Linker.
#pragma once

#include <string>
#include <vector>

#include <gpumath/core/program.hpp>

namespace gpumath::core {

/// Options of a link, validated by `Linker::link` (InvalidArgument).
struct LinkerOptions {
    /// Name used in messages.
    std::string name = "gpumath_link";
    /// Target architecture "sm_NN" (optionally with an "a"/"f" suffix). Empty: the architecture of
    /// the first input that states one, else the current device's.
    std::string arch{};
    /// Optimisation level (-O): 0 or 3, the two nvJitLink accepts.
    int optimization_level = 3;
    /// -g: device debug information.
    bool debug = false;
    /// -lineinfo: line tables.
    bool lineinfo = false;
    /// -maxrregcount, 0 = no limit (otherwise 1..255).
    int max_registers = 0;
    /// Further nvJitLink flags, each starting with '-'.
    std::vector<std::string> extra{};
};

/// Links PTX, cubin, LTO-IR and fatbin objects into one cubin (or, with LTO, PTX) with nvJitLink.
/// Link-time optimisation (-lto) is switched on whenever an input is LTO-IR. The lowered names of
/// all inputs carry over to the result. Holds copies of its inputs (cheap: ObjectCode is shared).
/// A moved-from Linker throws InvalidArgument from `add` and `link`; its accessors return empty values.
class Linker {
public:
    /// A linker with no inputs yet; options are validated by `link`.
    explicit Linker(LinkerOptions options = {}) : options_(std::move(options)) {}

    /// Adds an input. InvalidArgument for an empty object, one whose type is not a CodeType, or a
    /// moved-from Linker. Returns *this.
    Linker& add(const ObjectCode& code);

    /// Links the inputs into `target` (cubin, or ptx when every input is LTO-IR).
    /// InvalidArgument before linking for: no inputs, bad options, inputs whose architectures
    /// differ from the target's (naming the input), a symbol defined by two PTX or cubin inputs
    /// (naming both), a target other than cubin/ptx, a moved-from Linker. Throws LinkError
    /// carrying nvJitLink's log when linking fails (e.g. an unresolved symbol).
    [[nodiscard]] ObjectCode link(CodeType target = CodeType::cubin) const;

    /// The options given.
    [[nodiscard]] const LinkerOptions& options() const noexcept { return options_; }
    /// The inputs added so far.
    [[nodiscard]] const std::vector<ObjectCode>& inputs() const noexcept { return inputs_; }

private:
    LinkerOptions options_;
    std::vector<ObjectCode> inputs_{};
    detail::MovedFrom moved_from_{};
};

}  // namespace gpumath::core
