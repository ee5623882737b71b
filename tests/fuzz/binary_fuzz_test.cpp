// SPDX-License-Identifier: Apache-2.0
// Hostile bytes where gpumath reads binary or text formats that come from files: cubin ELF headers
// (kernel names and architecture, read by gpumath itself), object code handed to nvJitLink, compile
// cache entries whose checksum was made to match again (so the payload parser sees the damage),
// and tuning files. Each case starts from a valid input made here and mutates it: random bytes,
// boundary values written over the header and size fields, truncation and appended garbage. A
// crash, a hang, a sanitizer report or an escaped std:: exception is a failure; results that are
// read must still describe bytes that are in the input. Deterministic like the other fuzz tests
// (GPUMATH_FUZZ_SEED, GPUMATH_FUZZ_ITERATIONS).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpumath/core.hpp>

#include "common/test_util.hpp"
#include "core/hash.hpp"
#include "core/jit.hpp"
#include "core/jit_test_util.hpp"
#include "fuzz/fuzz_util.hpp"
#include "matmul/call.hpp"
#include "matmul/internal.hpp"
#include "matmul/tuning.hpp"

using namespace gpumath;
using namespace gpumath::test::fuzz;
namespace fs = std::filesystem;

namespace {

// Three kernels, so a cubin has a symbol table worth damaging.
constexpr std::string_view k_kernels =
    "extern \"C\" __global__ void first(float* x) { x[threadIdx.x] += 1.0f; }\n"
    "extern \"C\" __global__ void second(int* x, int n) { if (int(threadIdx.x) < n) x[threadIdx.x] = n; }\n"
    "extern \"C\" __global__ void third(double* x) { x[blockIdx.x] *= 2.0; }\n";

template <class T>
void put(std::string& s, std::size_t at, T v) {
    if (at <= s.size() && s.size() - at >= sizeof v) std::memcpy(s.data() + at, &v, sizeof v);
}

template <class T>
T get(const std::string& s, std::size_t at) {
    T v{};
    if (at <= s.size() && s.size() - at >= sizeof v) std::memcpy(&v, s.data() + at, sizeof v);
    return v;
}

/// Damages `s` one to four times. `hot` lists byte ranges [begin, end) that hold headers and
/// sizes: half the writes land there, with values at the edges of
/// what a reader must check.
std::string mutate(Fuzzer& fz, std::string s, const std::vector<std::pair<std::size_t, std::size_t>>& hot) {
    const std::uint64_t n = s.size();
    const std::array<std::uint64_t, 12> edges{
        0, 1, 2, 23, 24, 64, n - 1, n, n + 1, n / 2, 0x7fffffffffffffffULL, ~std::uint64_t(0)};
    const int count = 1 + fz.below(4);
    for (int m = 0; m < count && !s.empty(); ++m) {
        std::size_t at = std::size_t(fz.below(int(std::min<std::size_t>(s.size(), 1 << 30))));
        if (!hot.empty() && fz.chance(50)) {
            const auto& [begin, end] = hot[std::size_t(fz.below(int(hot.size())))];
            if (begin < end && end <= s.size()) at = begin + std::size_t(fz.below(int(end - begin)));
        }
        switch (fz.below(7)) {
            case 0:
                s[at] = char(fz.below(256));
                break;
            case 1:
                s[at] = char(s[at] ^ char(1 << fz.below(8)));
                break;
            case 2:
                put(s, at, std::uint16_t(fz.pick(edges)));
                break;
            case 3:
                put(s, at, std::uint32_t(fz.pick(edges)));
                break;
            case 4:
                put(s, at, fz.pick(edges));
                break;
            case 5:
                s.resize(at);
                break;
            default:
                for (int i = fz.below(64); i > 0; --i) s.push_back(char(fz.below(256)));
                break;
        }
    }
    return s;
}

core::ObjectCode compile(core::CodeType type) {
    core::ProgramOptions options;
    options.arch = "sm_90";
    return core::Program(std::string(k_kernels), options).compile(type);
}

// Relocatable code with a global array and static shared memory: sections of CUDA's own types
// that hold device memory rather than file bytes.
core::ObjectCode relocatable_cubin() {
    core::ProgramOptions options;
    options.arch = "sm_90";
    options.relocatable = true;
    return core::Program(
               "__device__ float table[4096];\n"
               "extern \"C\" __global__ void k(float* x) {\n"
               "    __shared__ float s[1024];\n"
               "    s[threadIdx.x] = x[threadIdx.x] + table[threadIdx.x];\n"
               "    __syncthreads();\n"
               "    x[threadIdx.x] = s[1023 - threadIdx.x];\n"
               "}\n",
               options)
        .compile(core::CodeType::cubin);
}

std::string bytes_of(const core::ObjectCode& code) {
    return {reinterpret_cast<const char*>(code.bytes().data()), code.bytes().size()};
}

/// The byte ranges of a cubin that hold its structure: the ELF header, the section header table
/// and the first bytes of every section.
std::vector<std::pair<std::size_t, std::size_t>> elf_structure(const std::string& cubin) {
    const auto shoff = get<std::uint64_t>(cubin, 0x28);
    const auto shnum = get<std::uint16_t>(cubin, 0x3c);
    std::vector<std::pair<std::size_t, std::size_t>> hot{{0, 64}, {shoff, shoff + std::size_t(shnum) * 64}};
    for (std::uint16_t i = 0; i < shnum; ++i) {
        const auto offset = get<std::uint64_t>(cubin, shoff + std::size_t(i) * 64 + 0x18);
        if (offset < cubin.size()) hot.emplace_back(offset, std::min<std::size_t>(cubin.size(), offset + 96));
    }
    return hot;
}

}  // namespace

TEST(BinaryFuzz, CubinHeadersAreReadWithinTheFile) {
    const std::string cubin = bytes_of(compile(core::CodeType::cubin));
    std::vector<std::string> names = detail::cubin_entry_names(cubin);
    std::sort(names.begin(), names.end());
    ASSERT_EQ(names, (std::vector<std::string>{"first", "second", "third"}));
    ASSERT_EQ(detail::cubin_arch(cubin), "sm_90");
    ASSERT_EQ(detail::cubin_defect(cubin), "");
    // Relocatable code too: relocation tables, and sections of device memory without file bytes.
    const std::string relocatable = bytes_of(relocatable_cubin());
    ASSERT_EQ(detail::cubin_defect(relocatable), "");
    ASSERT_EQ(detail::cubin_entry_names(relocatable), std::vector<std::string>{"k"});
    const std::array<std::pair<const std::string*, std::vector<std::pair<std::size_t, std::size_t>>>, 2> inputs{
        {{&cubin, elf_structure(cubin)}, {&relocatable, elf_structure(relocatable)}}};

    const std::uint64_t seed = fuzz_seed() + 20;
    Fuzzer fz(seed);
    const int n = iterations(4000) * 5;
    int with_names = 0, defects = 0;
    for (int i = 0; i < n; ++i) {
        const auto& [original, hot] = inputs[std::size_t(i % 2)];
        const std::string damaged = mutate(fz, *original, hot);
        const std::vector<std::string> found = detail::cubin_entry_names(damaged);
        // What was read is in the file: each name once, no more symbols than the file can hold.
        EXPECT_LE(found.size(), damaged.size() / 24) << "#" << i;
        EXPECT_EQ(std::set<std::string>(found.begin(), found.end()).size(), found.size()) << "#" << i;
        for (const std::string& name : found)
            EXPECT_NE(damaged.find(name + '\0'), std::string::npos) << "#" << i << ": " << name;
        with_names += found.empty() ? 0 : 1;
        const std::string arch = detail::cubin_arch(damaged);
        EXPECT_TRUE(arch.empty() || (arch.rfind("sm_", 0) == 0 && arch.size() <= 6)) << "#" << i << ": " << arch;
        defects += detail::cubin_defect(damaged).empty() ? 0 : 1;
    }
    std::printf("[ fuzz     ] cubin headers: seed %llu, %d damaged cubins, %d still name kernels, %d malformed\n",
                static_cast<unsigned long long>(seed), n, with_names, defects);
    EXPECT_GT(with_names, 0) << "no damage left the symbol table readable: the mutations are too coarse";
    EXPECT_LT(with_names, n) << "no damage reached the symbol table";
    EXPECT_GT(defects, n / 4);
}

// nvJitLink reads a cubin's tables where its headers point, and a fatbin's entries and images
// where their headers say: damaged structure must stop at ObjectCode (InvalidArgument); what passes
// that check, and damaged PTX, must give nvJitLink's LinkError or link. What gpumath does not check
// -- the flags and CUDA's own sections of relocatable code (.nv.info attributes name symbols by
// index), LTO-IR past its magic -- nvJitLink trusts, and some damage there crashes or aborts it
// (docs/runtime.md). So a whole-program cubin, PTX and fatbins of them (uncompressed and in both
// codecs, their images decompressed and checked) are damaged anywhere, and relocatable code and
// LTO-IR not at all here (the cubin test above damages a relocatable cubin for gpumath's own
// readers).
TEST(BinaryFuzz, DamagedObjectCodeIsRefusedOrALinkError) {
    const std::uint64_t seed = fuzz_seed() + 21;
    Fuzzer fz(seed);
    Tally t;
    struct Input {
        core::CodeType type;
        std::string bytes;
        std::vector<std::pair<std::size_t, std::size_t>> hot;
    };
    std::vector<Input> inputs;
    const std::string cubin = bytes_of(compile(core::CodeType::cubin));
    inputs.push_back({core::CodeType::cubin, cubin, elf_structure(cubin)});
    const std::string ptx = bytes_of(compile(core::CodeType::ptx));
    inputs.push_back({core::CodeType::ptx, ptx, {{0, std::min<std::size_t>(ptx.size(), 256)}}});
    for (const char* options : {"", "--compress-all --compress-mode=speed", "--compress-all"}) {
        const std::string fatbin = test::fatbin_of(cubin, ptx, options);
        if (fatbin.empty()) {
            std::printf("[ fuzz     ] no fatbinary tool: fatbins are not fuzzed\n");
            break;
        }
        // The container header and each entry's header.
        std::vector<std::pair<std::size_t, std::size_t>> headers{{0, 16}};
        for (std::size_t at = 16; at + 16 <= fatbin.size() && headers.size() < 8;
             at += get<std::uint32_t>(fatbin, at + 4) + get<std::uint64_t>(fatbin, at + 8))
            headers.emplace_back(at, at + get<std::uint32_t>(fatbin, at + 4));
        ASSERT_EQ(detail::fatbin_defect(fatbin), "");
        inputs.push_back({core::CodeType::fatbin, fatbin, headers});
    }
    // nvJitLink runs for every call that passes ObjectCode's checks: fewer iterations.
    const int n = iterations(4000) / 4;
    for (int i = 0; i < n; ++i) {
        const Input& in = inputs[std::size_t(fz.below(int(inputs.size())))];
        const std::string damaged = mutate(fz, in.bytes, in.hot);
        classify("linker", i, t, [&] {
            core::Linker linker({.arch = "sm_90"});
            linker.add(core::ObjectCode::from_bytes(damaged, in.type, "sm_90"));
            (void)linker.link(core::CodeType::cubin);
        });
    }
    report("damaged object code", seed, n, t);
    EXPECT_GT(t.rejected, n / 10) << "ObjectCode refused too little: the mutations are too gentle";
    EXPECT_GT(t.passed, n / 10) << "too little passed: the mutations never reach nvJitLink";
}

namespace {

constexpr std::size_t k_entry_header = 32;  // magic, version, zero, payload size, payload checksum

/// `entry` with its checksum and size made to match its payload again.
std::string reseal(std::string entry) {
    if (entry.size() < k_entry_header) return entry;
    const std::uint64_t size = entry.size() - k_entry_header;
    const std::uint64_t sum = detail::checksum64(entry.data() + k_entry_header, size);
    put(entry, 16, size);
    put(entry, 24, sum);
    return entry;
}

}  // namespace

TEST(BinaryFuzz, ResealedCompileCacheEntriesAreParsedWithinTheirPayload) {
    core::CompileCache& cache = core::compile_cache();
    test::TempDir dir;
    cache.clear();
    cache.set_directory(dir.path());
    core::ProgramOptions options;
    options.arch = "sm_90";
    options.name = "fuzzed_entry";
    core::Program program("// " + test::unique_token() + "\n" + std::string(k_kernels), options);
    program.add_name_expression("first");
    const std::string good = bytes_of(program.compile(core::CodeType::cubin));
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir.path()))
        if (e.path().extension() == ".jit") files.push_back(e.path());
    ASSERT_EQ(files.size(), 1u);
    std::string original;
    {
        std::ifstream in(files[0], std::ios::binary);
        original.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    // The payload's fixed fields and string sizes sit in its first few hundred bytes; the code
    // itself (the cubin) is last.
    const std::vector<std::pair<std::size_t, std::size_t>> hot{
        {k_entry_header, std::min<std::size_t>(original.size(), k_entry_header + 256)},
        {original.size() - good.size() - 8, original.size() - good.size()}};

    const std::uint64_t seed = fuzz_seed() + 22;
    Fuzzer fz(seed);
    // A rejected entry is compiled again by NVRTC: fewer iterations.
    const int n = iterations(4000) / 40;
    int rejected = 0;
    for (int i = 0; i < n; ++i) {
        {
            std::ofstream out(files[0], std::ios::binary | std::ios::trunc);
            out << reseal(mutate(fz, original, hot));
        }
        cache.clear();
        const std::uint64_t before = cache.stats().disk_rejected;
        try {
            const std::string again = bytes_of(program.compile(core::CodeType::cubin));
            EXPECT_FALSE(again.empty()) << "#" << i;
            if (cache.stats().disk_rejected > before) {
                ++rejected;
                EXPECT_EQ(again, good) << "#" << i << ": a rejected entry is compiled again";
            }
        } catch (const std::exception& e) {
            ADD_FAILURE() << "#" << i << ": " << e.what();
        }
    }
    cache.clear();
    cache.set_directory({});
    std::printf("[ fuzz     ] compile cache entries: seed %llu, %d resealed entries, %d rejected\n",
                static_cast<unsigned long long>(seed), n, rejected);
    EXPECT_GT(rejected, n / 4);
}

TEST(BinaryFuzz, TuningFilesKeepOnlyWellFormedEntries) {
    using namespace gpumath::detail;
    // Three keys of different problems, each with its own algorithm.
    std::vector<std::string> lines{"# gpumath matmul tuning v1"};
    for (int i = 0; i < 3; ++i) {
        MatmulSignature s;
        s.a = TensorLayout(DataType::f32, {3, 8 + i, 4});
        s.b = TensorLayout(DataType::f32, {4, 6});
        s.d = TensorLayout(DataType::f32, {3, 8 + i, 6});
        s.align[slot_b] = 16;
        cublasLtMatmulAlgo_t algo{};
        for (std::size_t w = 0; w < 8; ++w) algo.data[w] = 0x0123456789abcdefULL * (w + 1) + std::uint64_t(i);
        const std::string key = key_to_text(make_key(s.call(), {.epilog = Epilog::relu}, -1));
        lines.push_back("NVIDIA H200\t9.0\t130000\t" + key + "\t" + algo_to_hex(algo) + "\t0\t0.5");
    }
    const TuningHost host{"NVIDIA H200", "9.0", "130000"};
    std::string text;
    for (const std::string& l : lines) text += l + "\n";
    {
        std::istringstream in(text);
        ASSERT_EQ(parse_tuning_text(in, host).entries.size(), 3u);
    }

    const std::uint64_t seed = fuzz_seed() + 23;
    Fuzzer fz(seed);
    const int n = iterations(4000);
    int kept = 0, dropped = 0;
    for (int i = 0; i < n; ++i) {
        std::string damaged = mutate(fz, text, {});
        // Text-shaped damage too: a field separator or line break moved, a digit replaced.
        const std::array<char, 6> chars{'\t', '\n', '0', 'f', '-', ' '};
        for (int m = fz.below(3); m > 0 && !damaged.empty(); --m)
            damaged[std::size_t(fz.below(int(damaged.size())))] = fz.pick(chars);
        std::istringstream in(damaged);
        try {
            const TuningText parsed = parse_tuning_text(in, host);
            // An entry that is kept is one gpumath wrote: its key and algorithm print as the fourth
            // and fifth fields of a line of the damaged text (further fields are optional).
            for (const TuningEntry& e : parsed.entries) {
                const std::string fields = "\t" + key_to_text(e.key) + "\t" + algo_to_hex(e.algo);
                bool found = false;
                for (std::size_t at = damaged.find(fields); at != std::string::npos && !found;
                     at = damaged.find(fields, at + 1)) {
                    const std::size_t end = at + fields.size();
                    found = end == damaged.size() || damaged[end] == '\t' || damaged[end] == '\n';
                }
                EXPECT_TRUE(found) << "#" << i << ": " << fields;
            }
            kept += int(parsed.entries.size());
            dropped += parsed.stale + parsed.malformed;
        } catch (const std::exception& e) {
            ADD_FAILURE() << "#" << i << ": " << e.what();
        }
    }
    std::printf("[ fuzz     ] tuning files: seed %llu, %d damaged files, %d entries kept, %d lines dropped\n",
                static_cast<unsigned long long>(seed), n, kept, dropped);
    EXPECT_GT(kept, 0);
    EXPECT_GT(dropped, 0);
}
