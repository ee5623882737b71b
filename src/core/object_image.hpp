// SPDX-License-Identifier: Apache-2.0
// Private to src/core: the readers of device code gpumath did not write (PTX text, cubins, LTO-IR,
// fatbins and their compressed images), every read bounded by the bytes given. One entry point,
// check_object_code, checks code of any type before nvJitLink or the driver sees it: they trust
// these structures, and damaged ones crash or hang them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <gpumath/core/object_code.hpp>

namespace gpumath::detail {

// ---- PTX (ptx_text.cpp)

/// Entry points found in PTX text (".entry name(").
[[nodiscard]] std::vector<std::string> ptx_entry_names(std::string_view ptx);
/// Symbols PTX text defines with external linkage: `.visible` kernels and functions with a body
/// (not prototypes) and `.visible` variables. Weak and extern symbols are not definitions.
[[nodiscard]] std::vector<std::string> ptx_defined_symbols(std::string_view ptx);
/// Empty when `ptx` can be handed to nvJitLink and the driver as text, else what is wrong: they read
/// it up to its first NUL, so a NUL before the end (a final run of NULs is fine) would silently
/// drop the code after it.
[[nodiscard]] std::string ptx_defect(std::string_view ptx);

// ---- CUDA ELF images (elf.cpp)

/// Kernel symbols of a CUDA ELF image (function symbols flagged as entries); empty when the bytes
/// are not a readable ELF file.
[[nodiscard]] std::vector<std::string> cubin_entry_names(std::string_view elf);
/// Global (not weak) function and variable symbols a CUDA ELF image defines; empty when the bytes
/// are not a readable ELF file.
[[nodiscard]] std::vector<std::string> cubin_defined_symbols(std::string_view elf);
/// "sm_NN" from a cubin's ELF header, empty when unreadable.
[[nodiscard]] std::string cubin_arch(std::string_view elf);
/// Empty when `elf` is a CUDA ELF file whose structure holds together: the ELF header, the
/// program and section header tables, and the string, symbol and relocation tables inside the file
/// and referring to sections and symbols that exist. Otherwise what is wrong, for a message ("its
/// 21 section headers at offset 5200 run past the end of its 6824 bytes").
[[nodiscard]] std::string cubin_defect(std::string_view elf);

// ---- LTO-IR (fatbin.cpp)

/// Empty when `ir` starts as NVVM's LTO-IR does (the magic 0x7f4e43ed), else what is wrong.
/// nvJitLink reads the rest; gpumath cannot.
[[nodiscard]] std::string ltoir_defect(std::string_view ir);

// ---- fatbins and their compressed images (fatbin.cpp, decompress.cpp)

/// What one read of object code may still decompress: the bytes left of
/// `core::DecompressionLimits::max_bytes` and the ratio limit. One budget serves a whole read (a
/// fatbin, or every input of a link), so many small images cannot add up past the limit.
struct DecompressionBudget {
    std::uint64_t remaining = 0;
    std::uint64_t max_ratio = 0;
};

/// A budget holding the process's current limits (core::decompression_limits()).
[[nodiscard]] DecompressionBudget decompression_budget();

/// What a read of object code found.
struct CodeRead {
    /// Empty when the code and every image inside it holds together; else what is wrong, naming the
    /// entry ("entry 1 at offset 1424 (ELF for sm_90, Zstandard): section 3 ...").
    std::string defect;
    /// The defect is a codec this process cannot decode (no libzstd.so.1): NotSupported rather than
    /// InvalidArgument.
    bool unsupported = false;
    /// The code is LTO-IR, or a fatbin holding an LTO-IR entry: a link of it needs nvJitLink's -lto.
    bool ltoir = false;
    /// With `symbols` asked for: the symbols the fatbin's PTX and ELF images define, all entries
    /// together (nvJitLink picks one entry per link, and an entry for another architecture holds
    /// the same program's symbols).
    std::vector<std::string> fatbin_symbols{};
};

/// The one check of device code of `type` before nvJitLink or the driver sees it: PTX as
/// ptx_defect, a cubin as cubin_defect, LTO-IR as ltoir_defect, and a fatbin's container, entry
/// headers, compression flags and each image (decompressed within `budget`, then checked as the
/// same kind given alone). A compressed image is refused before anything is allocated when its
/// declared size is over the budget left or over `max_ratio` times its compressed bytes, and the
/// declared sizes of all of a fatbin's images are summed against the budget before the first is
/// decompressed, so a small file declaring gigabytes costs nothing. `type` must be a CodeType.
[[nodiscard]] CodeRead check_object_code(std::string_view bytes, core::CodeType type, DecompressionBudget& budget,
                                         bool symbols = false);

/// check_object_code(fatbin, CodeType::fatbin, a fresh budget).defect.
[[nodiscard]] std::string fatbin_defect(std::string_view fatbin);
/// check_object_code(fatbin, CodeType::fatbin, a fresh budget, true).fatbin_symbols; empty when the
/// fatbin has a defect.
[[nodiscard]] std::vector<std::string> fatbin_defined_symbols(std::string_view fatbin);

}  // namespace gpumath::detail
