// SPDX-License-Identifier: Apache-2.0
// Fuzz targets for the files and strings gpumath reads from outside: compile-cache entries on
// disk, matmul tuning files, linalg's saved backend choices, and the values of environment variables.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <string_view>

#include <gpumath/core/compile_cache.hpp>
#include <gpumath/log.hpp>

#include "core/hash.hpp"
#include "core/jit.hpp"
#include "detail/environment.hpp"
#include "detail/shared_library.hpp"
#include "fuzz/targets/fuzz_inputs.hpp"
#include "fuzz/targets/target.hpp"
#include "linalg/choice.hpp"
#include "matmul/call.hpp"
#include "matmul/tuning.hpp"

namespace {

using gpumath::fuzz::text;

}  // namespace

// The first byte chooses whether the entry's size and checksum are made to match its payload
// again (odd), so that the payload's parser sees the damage instead of the checksum refusing it.
GPUMATH_FUZZ_TARGET(compile_cache) {
    if (data.empty()) return;
    std::string entry(text(data.subspan(1)));
    if ((data[0] & 1) != 0) gpumath::fuzz::reseal_cache_entry(entry);
    const gpumath::detail::CompileExpectation expect{.type = gpumath::core::CodeType::cubin,
                                                     .arch = "sm_90",
                                                     .name = gpumath::fuzz::cache_entry_name,
                                                     .name_expressions = {}};
    std::string why;
    const std::shared_ptr<gpumath::detail::ObjectCodeData> d =
        gpumath::detail::decode_entry(entry, gpumath::fuzz::cache_entry_key(), expect, why);
    GPUMATH_FUZZ_CHECK((d == nullptr) != why.empty(), "an entry both read and refused, or neither");
    if (d) GPUMATH_FUZZ_CHECK(entry.find(d->bytes) != std::string::npos, "code that is not in the entry");
}

GPUMATH_FUZZ_TARGET(tuning) {
    const std::string input(text(data));
    std::istringstream in(input);
    const gpumath::detail::TuningText parsed = gpumath::detail::parse_tuning_text(in, gpumath::fuzz::tuning_host());
    // An entry that is kept is one gpumath wrote: its algorithm stands as a field of the input, and
    // its key reads back as itself (keys of the older 8-class format are read into today's, so the
    // key's text need not stand in the input as it is written now).
    for (const gpumath::detail::TuningEntry& e : parsed.entries) {
        std::string algo(1, '\t');
        algo += gpumath::detail::algo_to_hex(e.algo);
        GPUMATH_FUZZ_CHECK(input.find(algo) != std::string::npos, "an algorithm that is not in the file");
        gpumath::detail::MatmulKey again;
        GPUMATH_FUZZ_CHECK(gpumath::detail::parse_key(gpumath::detail::key_to_text(e.key), again) && again == e.key,
                           "a key that does not read back as itself");
    }
    GPUMATH_FUZZ_CHECK(parsed.stale >= 0 && parsed.malformed >= 0, "negative counts");
}

// A file of linalg backend choices (linalg::load_backend_choices reads it): refused with
// InvalidArgument as a whole, or every line taken; what is kept is written back as a file that
// reads again to the same choices.
GPUMATH_FUZZ_TARGET(linalg_choices) {
    const std::string_view input = text(data);
    gpumath::detail::clear_choices();
    std::size_t added = 0;
    try {
        added = gpumath::detail::add_choices(input, "fuzz");
    } catch (const gpumath::InvalidArgument&) {
        GPUMATH_FUZZ_CHECK(gpumath::detail::choices_text().find('\n') + 1 == gpumath::detail::choices_text().size(),
                           "a refused file left choices behind");
        return;
    }
    const std::size_t lines = std::size_t(std::count(input.begin(), input.end(), '\n')) + 1;
    GPUMATH_FUZZ_CHECK(added < lines, "more choices than lines after the header");
    const std::string written = gpumath::detail::choices_text();
    const std::size_t kept = std::size_t(std::count(written.begin(), written.end(), '\n')) - 1;
    GPUMATH_FUZZ_CHECK(kept <= added, "more choices kept than read");
    gpumath::detail::clear_choices();
    GPUMATH_FUZZ_CHECK(gpumath::detail::add_choices(written, "fuzz") == kept, "a written file that reads differently");
    GPUMATH_FUZZ_CHECK(gpumath::detail::choices_text() == written, "choices that do not write back the same");
}

// Fields separated by line breaks: a count, a log level, the three cache-directory variables and
// a value for a count variable read from the environment.
GPUMATH_FUZZ_TARGET(environment) {
    const std::vector<std::string> f = gpumath::fuzz::fields(data, '\n', 6);
    const auto field = [&](std::size_t i) -> const std::string& {
        static const std::string none;
        return i < f.size() ? f[i] : none;
    };
    const std::optional<std::uint64_t> count = gpumath::detail::parse_count(field(0));
    const std::string_view digits = field(0);
    if (!digits.empty() && digits.size() <= 19 && digits.find_first_not_of("0123456789") == std::string_view::npos)
        GPUMATH_FUZZ_CHECK(count == std::strtoull(field(0).c_str(), nullptr, 10), "a plain number misread");
    gpumath::fuzz::answered([&] { (void)gpumath::parse_log_level(field(1)); });
    const std::filesystem::path dir =
        gpumath::detail::jit_cache_directory(field(2).c_str(), field(3).c_str(), field(4).c_str());
    GPUMATH_FUZZ_CHECK(dir.empty() || dir.filename() == "jit", "a cache directory not named jit");
    ::setenv("GPUMATH_FUZZ_COUNT", field(5).c_str(), 1);
    const std::uint64_t value = gpumath::detail::env_count("GPUMATH_FUZZ_COUNT", 7, 1, 1000);
    GPUMATH_FUZZ_CHECK(value >= 1 && value <= 1000, "a count outside its range");
}

// The system's library cache, as the loader of run-time libraries reads it: the first byte is the
// length of the library name that follows, the rest the cache's bytes.
GPUMATH_FUZZ_TARGET(ld_so_cache) {
    if (data.empty()) return;
    const std::string_view all = text(data.subspan(1));
    const std::string_view name = all.substr(0, data[0]);
    const std::string_view cache = all.substr(name.size());
    const std::optional<std::string> path = gpumath::detail::find_in_ld_so_cache(cache, name);
    GPUMATH_FUZZ_CHECK(!path || cache.find(*path + '\0') != std::string_view::npos, "a path not in the cache");
}
