// SPDX-License-Identifier: Apache-2.0
// Fuzz targets for device code from outside: fatbins (container, entries, compressed images),
// CUDA ELF images and PTX text, each through the reader that checks it before nvJitLink or the
// driver sees it, and through the readers of names and symbols.
#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <gpumath/core/object_code.hpp>

#include "core/object_image.hpp"
#include "fuzz/targets/target.hpp"

namespace {

using gpumath::fuzz::text;

// A name a reader returned lies in the input (as written, ended by a NUL in an ELF file).
bool named_in(std::string_view bytes, const std::string& name, bool nul_ended) {
    return bytes.find(nul_ended ? name + '\0' : name) != std::string_view::npos;
}

}  // namespace

GPUMATH_FUZZ_TARGET(fatbin) {
    const std::string_view bytes = text(data);
    // Small limits keep each iteration short; the rules are those of every read.
    gpumath::detail::DecompressionBudget budget{.remaining = std::uint64_t(64) << 20, .max_ratio = 4096};
    const gpumath::detail::CodeRead read =
        gpumath::detail::check_object_code(bytes, gpumath::core::CodeType::fatbin, budget, /*symbols=*/true);
    GPUMATH_FUZZ_CHECK(budget.remaining <= std::uint64_t(64) << 20, "the budget grew");
    GPUMATH_FUZZ_CHECK(!read.unsupported || !read.defect.empty(), "unsupported without saying why");
    for (const std::string& name : read.fatbin_symbols) GPUMATH_FUZZ_CHECK(!name.empty(), "an empty symbol");
}

GPUMATH_FUZZ_TARGET(elf) {
    const std::string_view bytes = text(data);
    (void)gpumath::detail::cubin_defect(bytes);
    for (const std::string& name : gpumath::detail::cubin_entry_names(bytes))
        GPUMATH_FUZZ_CHECK(named_in(bytes, name, true), "a kernel name that is not in the file");
    for (const std::string& name : gpumath::detail::cubin_defined_symbols(bytes))
        GPUMATH_FUZZ_CHECK(named_in(bytes, name, true), "a symbol that is not in the file");
    const std::string arch = gpumath::detail::cubin_arch(bytes);
    GPUMATH_FUZZ_CHECK(arch.empty() || (arch.starts_with("sm_") && arch.size() <= 6), "an architecture name");
}

GPUMATH_FUZZ_TARGET(ptx) {
    const std::string_view bytes = text(data);
    const std::string defect = gpumath::detail::ptx_defect(bytes);
    GPUMATH_FUZZ_CHECK(defect.empty() == (bytes.find('\0') == std::string_view::npos ||
                                          bytes.find_first_not_of('\0', bytes.find('\0')) == std::string_view::npos),
                       "the NUL rule");
    for (const std::string& name : gpumath::detail::ptx_entry_names(bytes))
        GPUMATH_FUZZ_CHECK(named_in(bytes, name, false), "an entry name that is not in the text");
    for (const std::string& name : gpumath::detail::ptx_defined_symbols(bytes))
        GPUMATH_FUZZ_CHECK(named_in(bytes, name, false) && !name.empty(), "a symbol that is not in the text");
}
