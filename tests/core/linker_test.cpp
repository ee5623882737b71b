// SPDX-License-Identifier: Apache-2.0
// Linker with nvJitLink for real (no GPU needed): LTO of two programs, non-LTO links of relocatable
// code, unresolved symbols, architecture mismatches and bad options; and the structure checks that
// keep damaged cubins and fatbins from nvJitLink and the driver.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <gpumath/core.hpp>

#include "common/test_util.hpp"
#include "core/decompress.hpp"
#include "core/jit.hpp"
#include "jit_test_util.hpp"

using namespace gpumath;
using core::CodeType;
using core::Linker;
using core::ObjectCode;
using core::Program;

namespace {

// The kernel calls a function defined in another program.
constexpr const char* k_caller = R"(
__device__ float twice(float v);
template <class T>
__global__ void apply(T* x, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = twice(x[i]) + T(1);
}
template __global__ void apply<float>(float*, int);
)";
constexpr const char* k_callee = "__device__ float twice(float v) { return 2.0f * v; }\n";
constexpr const char* k_device_data = R"(
__device__ float table[1 << 20];
__managed__ int counters[100000];
extern "C" __global__ void kb(float* x) {
    __shared__ float s[4096];
    s[threadIdx.x] = x[threadIdx.x] + table[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = s[4095 - threadIdx.x] + float(counters[threadIdx.x]);
}
)";
constexpr const char* k_callee_kernel = "extern \"C\" __global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }\n";

ObjectCode compile(const char* src, CodeType t, const char* arch = "sm_90", bool names = false) {
    Program p(src, {.name = names ? "caller" : "callee", .arch = arch, .relocatable = true});
    if (names) p.add_name_expression("apply<float>");
    return p.compile(t);
}

const ObjectCode& caller_lto() {
    static const ObjectCode c = compile(k_caller, CodeType::ltoir, "sm_90", true);
    return c;
}
const ObjectCode& callee_lto() {
    static const ObjectCode c = compile(k_callee, CodeType::ltoir);
    return c;
}

}  // namespace

TEST(Linker, LtoOfTwoProgramsToCubin) {
    const ObjectCode linked = Linker().add(caller_lto()).add(callee_lto()).link();
    EXPECT_EQ(linked.type(), CodeType::cubin);
    EXPECT_EQ(linked.arch(), "sm_90");
    EXPECT_EQ(std::string_view(linked.text().data(), 4),
              "\x7f"
              "ELF");
    // The caller's lowered names carry over, and the kernel is in the image under that name.
    const std::string& mangled = linked.lowered_name("apply<float>");
    EXPECT_EQ(mangled, "_Z5applyIfEvPT_i");
    const std::vector<std::string> names = linked.kernel_names();
    ASSERT_EQ(names.size(), 1u);
    EXPECT_EQ(names[0], mangled);
}

TEST(Linker, LtoToPtx) {
    const ObjectCode ptx = Linker({.arch = "sm_90"}).add(caller_lto()).add(callee_lto()).link(CodeType::ptx);
    EXPECT_EQ(ptx.type(), CodeType::ptx);
    EXPECT_EQ(ptx.arch(), "compute_90");
    EXPECT_NE(ptx.text().find(".entry _Z5applyIfEvPT_i"), std::string_view::npos);
    // twice() was inlined across the two programs: no call remains.
    EXPECT_EQ(ptx.text().find("twice"), std::string_view::npos) << ptx.text();
}

TEST(Linker, RelocatableCubinWithPtx) {
    // Without LTO: a relocatable cubin plus PTX of the callee.
    const ObjectCode caller = compile(k_caller, CodeType::cubin, "sm_90", true);
    const ObjectCode callee = compile(k_callee, CodeType::ptx);
    const ObjectCode linked = Linker({.optimization_level = 0, .lineinfo = true}).add(caller).add(callee).link();
    EXPECT_EQ(linked.arch(), "sm_90");
    EXPECT_EQ(linked.kernel_names(), std::vector<std::string>{"_Z5applyIfEvPT_i"});
}

TEST(Linker, UnresolvedSymbolCarriesTheLog) {
    try {
        (void)Linker({.name = "lonely"}).add(caller_lto()).link();
        FAIL() << "expected LinkError";
    } catch (const LinkError& e) {
        EXPECT_NE(e.log().find("_Z5twicef"), std::string::npos) << e.log();
        const std::string what = e.what();
        EXPECT_NE(what.find("nvJitLinkComplete"), std::string::npos) << what;
        EXPECT_NE(what.find("lonely"), std::string::npos) << what;
        EXPECT_NE(what.find("_Z5twicef"), std::string::npos) << what;
        EXPECT_NE(e.status(), 0);
    }
}

TEST(Linker, DifferentArchitecturesAreRejectedBeforeLinking) {
    const ObjectCode callee80 = compile(k_callee, CodeType::ltoir, "sm_80");
    test::expect_throw_with<InvalidArgument>([&] { (void)Linker().add(caller_lto()).add(callee80).link(); },
                                             {"inputs[1]: 'callee'", "sm_80", "sm_90", "same architecture"});
    test::expect_throw_with<InvalidArgument>(
        [&] { (void)Linker({.arch = "sm_100"}).add(caller_lto()).add(callee_lto()).link(); },
        {"inputs[0]: ", "sm_90", "sm_100"});
}

TEST(Linker, BadRequests) {
    test::expect_throw_with<InvalidArgument>([] { (void)Linker().link(); }, {"no inputs"});
    test::expect_throw_with<InvalidArgument>([] { Linker().add(ObjectCode()); }, {"empty"});
    test::expect_throw_with<InvalidArgument>([] { (void)Linker().add(caller_lto()).link(CodeType::ltoir); },
                                             {"target", "ltoir"});
    test::expect_throw_with<InvalidArgument>([] { (void)Linker({.optimization_level = 5}).add(caller_lto()).link(); },
                                             {"LinkerOptions::optimization_level", "5", "0 or 3"});
    test::expect_throw_with<InvalidArgument>([] { (void)Linker({.arch = "sm_xx"}).add(caller_lto()).link(); },
                                             {"LinkerOptions::arch", "sm_xx"});
    test::expect_throw_with<InvalidArgument>([] { (void)Linker({.arch = "compute_90"}).add(caller_lto()).link(); },
                                             {"LinkerOptions::arch", "compute_90", "sm_90"});
    test::expect_throw_with<InvalidArgument>([] { (void)Linker({.extra = {"oops"}}).add(caller_lto()).link(); },
                                             {"LinkerOptions::extra[0]", "oops"});
    // The result is labelled with LinkerOptions::arch: a target given among the flags would belie it.
    test::expect_throw_with<InvalidArgument>(
        [] {
            (void)Linker({.arch = "sm_90", .extra = {"-O3", "-arch=sm_80"}}).add(caller_lto()).link();
        },
        {"LinkerOptions::extra[1]", "-arch=sm_80", "LinkerOptions::arch"});
    test::expect_throw_with<InvalidArgument>(
        [] { (void)Linker({.extra = {std::string("-DZ\0 --x", 8)}}).add(caller_lto()).link(); },
        {"LinkerOptions::extra[0]", "NUL byte"});
    test::expect_throw_with<InvalidArgument>(
        [] { (void)Linker().add(compile(k_callee, CodeType::ptx)).link(CodeType::ptx); }, {"PTX", "LTO-IR"});
    // No arch given and none stated by an input: the current device's, which a machine without one
    // lacks; the message names the field.
    if (!test::has_gpu()) {
        const ObjectCode ptx = ObjectCode::from_bytes(compile(k_callee, CodeType::ptx).text(), CodeType::ptx);
        ASSERT_TRUE(ptx.arch().empty());
        test::expect_throw_with<InvalidArgument>([&] { (void)Linker().add(ptx).link(); },
                                                 {"Linker::link: LinkerOptions::arch: empty", "no CUDA driver/device"});
    }
}

// nvJitLink keeps the names of its inputs and reads them again when it completes the link, e.g. to
// say which input refers to a symbol no input defines: the names must stay alive until then.
TEST(Linker, InputNamesStayValidForTheWholeLink) {
    // Names too long for a short-string buffer: their characters live on the heap.
    const ObjectCode caller =
        Program(k_caller, {.name = "linker_input_names_test", .arch = "sm_90", .relocatable = true})
            .compile(CodeType::ptx);
    const ObjectCode other =
        Program(k_callee_kernel, {.name = "another_linker_input", .arch = "sm_90", .relocatable = true})
            .compile(CodeType::ptx);
    try {
        (void)Linker({.arch = "sm_90"}).add(caller).add(other).link();
        ADD_FAILURE() << "expected LinkError: twice() is defined by no input";
    } catch (const LinkError& e) {
        EXPECT_NE(e.log().find("_Z5twicef' in 'linker_input_names_test#0'"), std::string::npos) << e.log();
    }
}

// Definitions with external linkage, prototypes, extern and static symbols, one of each kind.
constexpr const char* k_symbols = R"(
__device__ float twice(float v);
__device__ __noinline__ float thrice(float v) { return 3.0f * twice(v); }
__device__ float g;
__device__ int arr[4] = {1, 2, 3, 4};
__constant__ float c[2];
extern __device__ float elsewhere;
static __device__ float hidden;
__device__ __noinline__ float twice(float v) { return 2.0f * v + hidden; }
extern "C" __global__ void __launch_bounds__(256) k(float* x) { x[threadIdx.x] = thrice(x[0]) + g + arr[1] + c[0] + elsewhere; }
)";

TEST(Linker, TheSymbolsEachInputDefinesAreReadFromPtxAndCubin) {
    const std::vector<std::string> want{"_Z5twicef", "_Z6thricef", "arr", "c", "g", "k"};
    for (const CodeType t : {CodeType::ptx, CodeType::cubin}) {
        const ObjectCode code = Program(k_symbols, {.arch = "sm_90", .relocatable = true}).compile(t);
        const std::string_view bytes(reinterpret_cast<const char*>(code.bytes().data()), code.bytes().size());
        std::vector<std::string> got =
            t == CodeType::ptx ? detail::ptx_defined_symbols(bytes) : detail::cubin_defined_symbols(bytes);
        std::sort(got.begin(), got.end());
        EXPECT_EQ(got, want) << core::to_string(t) << ": the prototype of twice(), the extern and the static "
                             << "variable are no definitions";
    }
    // Comments, weak and extern symbols, and prototypes define nothing.
    EXPECT_EQ(detail::ptx_defined_symbols("// .visible .entry a(\n/* .visible .global .f32 b; */\n"
                                          ".weak .func w()\n{\n}\n.extern .global .f32 e;\n"
                                          ".visible .func p(.param .b32 x);\n"),
              std::vector<std::string>{});
    EXPECT_EQ(detail::ptx_defined_symbols(".visible .entry z()\n.maxntid 64, 1, 1\n{\nret;\n}\n"),
              std::vector<std::string>{"z"});
    EXPECT_TRUE(detail::cubin_defined_symbols("not an ELF file").empty());
}

// Sets the section index of symbol `name` in a cubin's symbol table (a test-side ELF walk).
std::string with_symbol_section(std::string elf, std::string_view name, std::uint16_t section) {
    const auto get = [&](std::size_t at, auto v) {
        std::memcpy(&v, elf.data() + at, sizeof(v));
        return v;
    };
    const auto shoff = get(0x28, std::uint64_t{});
    const auto shentsize = get(0x3a, std::uint16_t{});
    const auto shnum = get(0x3c, std::uint16_t{});
    for (std::uint16_t i = 0; i < shnum; ++i) {
        const std::size_t h = shoff + std::size_t(i) * shentsize;
        if (get(h + 4, std::uint32_t{}) != 2 /* SHT_SYMTAB */) continue;
        const auto offset = get(h + 0x18, std::uint64_t{}), size = get(h + 0x20, std::uint64_t{});
        const std::size_t strings = shoff + std::size_t(get(h + 0x28, std::uint32_t{})) * shentsize;
        const auto strtab = get(strings + 0x18, std::uint64_t{});
        for (std::uint64_t at = offset; at + 24 <= offset + size; at += 24)
            if (std::string_view(elf.c_str() + strtab + get(at, std::uint32_t{})) == name) {
                std::memcpy(elf.data() + at + 6, &section, sizeof(section));
                return elf;
            }
    }
    ADD_FAILURE() << "no symbol " << name;
    return elf;
}

TEST(Linker, PtxDirectivesAroundDefinitionsAndCommonSymbolsAreReadRight) {
    // A pragma between the parameters and the body, attributes before the return parameters, and
    // lists of variables with initializers.
    std::vector<std::string> got = detail::ptx_defined_symbols(
        ".visible .entry foo(.param .u64 a)\n.maxntid 32, 1, 1\n.pragma \"nounroll\";\n{\nret;\n}\n"
        ".visible .func .attribute(.unified(0x1, 0x2)) (.param .b32 r) f(.param .b32 x)\n{\nret;\n}\n"
        ".visible .global .u32 a1, b1;\n.visible .global .align 4 .b8 a2[2] = {1, 2}, b2[2];\n"
        ".visible .const .f32 k1 = 0f3F800000, k2;\n");
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, (std::vector<std::string>{"a1", "a2", "b1", "b2", "f", "foo", "k1", "k2"}));
    // A common symbol (SHN_COMMON) is merged by the linker, not defined twice; nor is an absolute one.
    const ObjectCode code =
        Program("__device__ int cm;\n__device__ int kept;\n", {.arch = "sm_90", .relocatable = true})
            .compile(CodeType::cubin);
    const std::string bytes(reinterpret_cast<const char*>(code.bytes().data()), code.bytes().size());
    for (const std::uint16_t section : {std::uint16_t(0xfff2), std::uint16_t(0xfff1)})
        EXPECT_EQ(detail::cubin_defined_symbols(with_symbol_section(bytes, "cm", section)),
                  std::vector<std::string>{"kept"});
}

TEST(Linker, ACubinWhoseSymbolsShareOneLongNameIsReadInBoundedWork) {
    // Symbols pointing at successive offsets of one long run of characters would each name most of
    // it (gigabytes of names from a megabyte file): the names read stay within a few file sizes.
    const ObjectCode base =
        Program("extern \"C\" __global__ void k() {}", {.arch = "sm_90", .relocatable = true}).compile(CodeType::cubin);
    std::string elf(reinterpret_cast<const char*>(base.bytes().data()), base.bytes().size());
    const auto get = [&](std::size_t at, auto v) {
        std::memcpy(&v, elf.data() + at, sizeof(v));
        return v;
    };
    const auto put = [&](std::size_t at, auto v) { std::memcpy(elf.data() + at, &v, sizeof(v)); };
    const auto shoff = get(0x28, std::uint64_t{});
    const auto shnum = get(0x3c, std::uint16_t{});
    std::size_t symtab = 0;
    for (std::uint16_t i = 0; i < shnum; ++i)
        if (get(shoff + i * 64U + 4, std::uint32_t{}) == 2) symtab = shoff + i * 64U;
    ASSERT_NE(symtab, 0U);
    const std::size_t strtab = shoff + std::size_t(get(symtab + 0x28, std::uint32_t{})) * 64;
    const std::size_t chars = std::size_t(1) << 19, symbols = chars / 24;
    const std::uint64_t strings_at = elf.size();
    elf.append(chars - 1, 'A').push_back('\0');
    const std::uint64_t symbols_at = elf.size();
    for (std::size_t j = 0; j < symbols; ++j) {
        std::string entry(24, '\0');
        const auto name = std::uint32_t(j * 8 % (chars - 1));
        std::memcpy(entry.data(), &name, 4);
        entry[4] = char(0x12);  // STB_GLOBAL, STT_FUNC
        entry[6] = 1;           // section 1
        elf += entry;
    }
    put(strtab + 0x18, strings_at);
    put(strtab + 0x20, std::uint64_t(chars));
    put(symtab + 0x18, symbols_at);
    put(symtab + 0x20, std::uint64_t(symbols * 24));
    std::size_t bytes = 0;
    for (const std::string& n : detail::cubin_defined_symbols(elf)) bytes += n.size();
    EXPECT_GT(bytes, 0U);
    EXPECT_LE(bytes, 4 * elf.size() + 4096) << "names read from a " << elf.size() << "-byte file";
}

TEST(Linker, AFatbinDefiningASymbolAnotherInputDefinesIsRefused) {
    const ObjectCode cubin = compile(k_callee_kernel, CodeType::cubin);
    const ObjectCode ptx = compile(k_callee_kernel, CodeType::ptx);
    const auto text = [](const ObjectCode& c) {
        return std::string(reinterpret_cast<const char*>(c.bytes().data()), c.bytes().size());
    };
    const std::string fatbin = test::fatbin_of(text(cubin), text(ptx));
    if (fatbin.empty()) GTEST_SKIP() << "the CUDA toolkit's fatbinary tool was not found at build time";
    EXPECT_EQ(detail::fatbin_defined_symbols(fatbin), std::vector<std::string>{"twice"});
    (void)Linker().add(caller_lto()).add(callee_lto()).link();  // nvJitLink crashed after an LTO link
    const ObjectCode fat = ObjectCode::from_bytes(fatbin, CodeType::fatbin);
    test::expect_throw_with<InvalidArgument>([&] { (void)Linker({.arch = "sm_90"}).add(ptx).add(fat).link(); },
                                             {"inputs[1]", "(fatbin) defines 'twice'", "inputs[0]"});
}

TEST(Linker, ASymbolDefinedByTwoInputsIsRefusedBeforeNvJitLink) {
    // nvJitLink reports such a link on stderr and links anyway, or crashes once an LTO link has run
    // in the process: run one first, so a link that got through would show it.
    (void)Linker().add(caller_lto()).add(callee_lto()).link();
    const char* const sources[] = {k_callee_kernel, k_callee, "__device__ float g;\n"};
    const char* const symbols[] = {"'twice'", "'_Z5twicef'", "'g'"};
    for (std::size_t s = 0; s < 3; ++s)
        for (const CodeType first : {CodeType::ptx, CodeType::cubin})
            for (const CodeType second : {CodeType::ptx, CodeType::cubin}) {
                const ObjectCode a =
                    Program(sources[s], {.name = "first_input", .arch = "sm_90", .relocatable = true}).compile(first);
                const ObjectCode b = Program(std::string(sources[s]) + "\n",
                                             {.name = "second_input", .arch = "sm_90", .relocatable = true})
                                         .compile(second);
                test::expect_throw_with<InvalidArgument>([&] { (void)Linker({.arch = "sm_90"}).add(a).add(b).link(); },
                                                         {"Linker::link: inputs[1]: 'second_input'", symbols[s],
                                                          "inputs[0] ('first_input'", "defined once"});
            }
    // The same input twice.
    const ObjectCode once = compile(k_callee, CodeType::ptx);
    test::expect_throw_with<InvalidArgument>([&] { (void)Linker().add(once).add(once).link(); },
                                             {"inputs[1]", "'_Z5twicef'", "inputs[0]"});
    // A declaration in one input and the definition in another still link.
    const ObjectCode caller = compile(k_caller, CodeType::ptx, "sm_90", true);
    EXPECT_NO_THROW((void)Linker().add(caller).add(once).link());
}

TEST(Linker, CodeTypesOutsideTheEnumAreRejectedBeforeNvJitLink) {
    const auto bad_type = static_cast<CodeType>(9);
    test::expect_throw_with<InvalidArgument>(
        [] { (void)Linker().add(caller_lto()).link(static_cast<CodeType>(9)); },
        {"Linker::link", "target: 9 is not a CodeType; allowed: ptx, cubin, ltoir, fatbin"});
    // An ObjectCode built from its data directly bypasses from_bytes' check: add() catches it.
    auto data = std::make_shared<detail::ObjectCodeData>(*callee_lto().shared_data());
    data->type = bad_type;
    const ObjectCode forged = detail::ObjectCodeAccess::make(std::move(data));
    test::expect_throw_with<InvalidArgument>([&] { Linker().add(forged); },
                                             {"Linker::add", "code.type(): 9 is not a CodeType"});
    test::expect_throw_with<InvalidArgument>([&] { core::Module m(forged); },
                                             {"Module", "code.type(): 9 is not a CodeType"});
}

TEST(Linker, MovedFromLinkerThrowsFromItsMethods) {
    Linker a({.name = "moved"});
    a.add(caller_lto()).add(callee_lto());
    const Linker b = std::move(a);
    // NOLINTBEGIN(bugprone-use-after-move): the moved-from state is what is tested
    // Before: link() said "no inputs" and add() quietly started a new input list.
    test::expect_throw_with<InvalidArgument>([&] { (void)a.link(); }, {"Linker::link: this Linker was moved from"});
    test::expect_throw_with<InvalidArgument>([&] { a.add(callee_lto()); }, {"Linker::add: this Linker was moved from"});
    EXPECT_TRUE(a.inputs().empty());
    // NOLINTEND(bugprone-use-after-move)
    EXPECT_EQ(b.inputs().size(), 2u);
    EXPECT_EQ(b.link().type(), CodeType::cubin);
}

namespace {

using test::bytes_of;
using test::get;
using test::with;

// The offset of the header of the first section of ELF type `type` in `elf`.
std::size_t section_of_type(const std::string& elf, std::uint32_t type) {
    const auto shoff = get<std::uint64_t>(elf, 0x28);
    for (std::size_t i = 0; i < get<std::uint16_t>(elf, 0x3c); ++i)
        if (get<std::uint32_t>(elf, shoff + i * 64 + 4) == type) return shoff + i * 64;
    ADD_FAILURE() << "no section of type " << type;
    return 0;
}

void expect_refused(const std::string& bytes, CodeType type, std::initializer_list<std::string> needles) {
    std::vector<std::string> all{"ObjectCode::from_bytes", "bytes: not a well-formed"};
    all.insert(all.end(), needles);
    try {
        (void)ObjectCode::from_bytes(bytes, type, "sm_90");
        ADD_FAILURE() << "accepted";
    } catch (const InvalidArgument& e) {
        for (const auto& n : all) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what() << "\n" << n;
    }
}

}  // namespace

TEST(ObjectCodeStructure, CubinsFromEveryProducerAreWellFormed) {
    // NVRTC whole-program and relocatable, with debug information, and nvJitLink's output of LTO
    // and of PTX: the checks that guard nvJitLink and the driver must accept them all.
    const std::vector<std::pair<std::string, ObjectCode>> cubins = {
        {"nvrtc", Program(k_callee_kernel, {.arch = "sm_90"}).compile(CodeType::cubin)},
        {"nvrtc relocatable", compile(k_caller, CodeType::cubin, "sm_90", true)},
        // Relocatable code keeps globals and static shared memory in CUDA's own section types,
        // whose sizes are device memory, not bytes of the file.
        {"nvrtc relocatable with device and shared arrays",
         Program(k_device_data, {.arch = "sm_90", .relocatable = true}).compile(CodeType::cubin)},
        {"nvrtc relocatable -G with device and shared arrays",
         Program(k_device_data, {.arch = "sm_80", .debug = true, .relocatable = true}).compile(CodeType::cubin)},
        {"nvrtc with device and shared arrays", Program(k_device_data, {.arch = "sm_90"}).compile(CodeType::cubin)},
        {"nvrtc -G", Program(k_callee_kernel, {.arch = "sm_90", .debug = true}).compile(CodeType::cubin)},
        {"nvrtc -lineinfo sm_90a",
         Program(k_callee_kernel, {.arch = "sm_90a", .lineinfo = true}).compile(CodeType::cubin)},
        {"nvJitLink LTO", Linker().add(caller_lto()).add(callee_lto()).link()},
        {"nvJitLink PTX",
         Linker({.arch = "sm_90"}).add(Program(k_callee_kernel, {.arch = "sm_90"}).compile(CodeType::ptx)).link()},
    };
    for (const auto& [what, code] : cubins) {
        EXPECT_EQ(detail::cubin_defect(bytes_of(code)), "") << what;
        EXPECT_NO_THROW((void)ObjectCode::from_bytes(code.bytes(), CodeType::cubin)) << what;
    }
}

TEST(ObjectCodeStructure, CubinsWhoseTablesLieOutsideAreRefusedBeforeNvJitLink) {
    const std::string cubin = bytes_of(compile(k_caller, CodeType::cubin, "sm_90", true));
    const auto shoff = get<std::uint64_t>(cubin, 0x28);
    const auto shnum = get<std::uint16_t>(cubin, 0x3c);
    expect_refused(cubin.substr(0, 63), CodeType::cubin, {"not a 64-bit little-endian ELF file"});
    expect_refused(with(cubin, 0x12, std::uint16_t(62)), CodeType::cubin, {"machine 62, not CUDA"});
    // nvJitLink read these past the end of the bytes (a segmentation fault).
    expect_refused(with(cubin, 0x28, shoff + (std::uint64_t(1) << 40)), CodeType::cubin,
                   {"section header table at offset", "past the end"});
    expect_refused(cubin.substr(0, cubin.size() - 8), CodeType::cubin,
                   {fmt::format("{} section headers at offset {} run past the end", shnum, shoff)});
    expect_refused(with(cubin, 0x3a, std::uint16_t(32)), CodeType::cubin, {"section headers are 32 bytes each"});
    expect_refused(with(cubin, 0x3e, std::uint16_t(shnum)), CodeType::cubin, {"section name table is section"});
    const std::size_t symtab = section_of_type(cubin, 2);
    expect_refused(with(cubin, symtab + 0x18, std::uint64_t(cubin.size() - 8)), CodeType::cubin,
                   {"runs past the end of its"});
    expect_refused(with(cubin, symtab + 0x28, std::uint32_t(shnum + 5)), CodeType::cubin, {"links to section"});
    expect_refused(with(cubin, symtab + 0x38, std::uint64_t(16)), CodeType::cubin, {"16-byte entries"});
    // A symbol naming text past its string table, and one in a section that does not exist.
    const auto symbols = get<std::uint64_t>(cubin, symtab + 0x18);
    expect_refused(with(cubin, symbols + 24, std::uint32_t(0x7fffffff)), CodeType::cubin,
                   {"symbol 1 of section", "string table"});
    expect_refused(with(cubin, symbols + 24 + 6, std::uint16_t(shnum + 1)), CodeType::cubin,
                   {"symbol 1 of section", fmt::format("lies in section {} of {}", shnum + 1, shnum)});
    // A relocation naming a symbol that does not exist (relocatable code has them).
    const std::size_t rel = section_of_type(cubin, 4);  // SHT_RELA
    const auto relocations = get<std::uint64_t>(cubin, rel + 0x18);
    expect_refused(with(cubin, relocations + 8, std::uint64_t(0xffffff) << 32), CodeType::cubin,
                   {"relocation 0 of section", "refers to symbol 16777215"});
    // The same checks guard from_file.
    const test::TempDir dir;
    std::ofstream(dir.path() / "cut.cubin", std::ios::binary) << cubin.substr(0, cubin.size() / 2);
    test::expect_throw_with<InvalidArgument>([&] { (void)ObjectCode::from_file(dir.path() / "cut.cubin"); },
                                             {"ObjectCode::from_file", "bytes: not a well-formed cubin"});
}

TEST(ObjectCodeStructure, FatbinsWhoseEntriesLieOutsideAreRefused) {
    const std::string cubin = bytes_of(Program(k_callee_kernel, {.arch = "sm_90"}).compile(CodeType::cubin));
    const std::string ptx = bytes_of(Program(k_callee_kernel, {.arch = "sm_90"}).compile(CodeType::ptx));
    expect_refused(cubin, CodeType::fatbin, {"not the fatbin magic 0xba55ed50"});
    expect_refused("\x50\xed\x55\xba", CodeType::fatbin, {"4 bytes, shorter than a fatbin header"});
    const std::string fatbin = test::fatbin_of(cubin, ptx);
    if (fatbin.empty()) GTEST_SKIP() << "the CUDA toolkit's fatbinary tool was not found at build time";
    EXPECT_EQ(detail::fatbin_defect(fatbin), "");
    const ObjectCode good = ObjectCode::from_bytes(fatbin, CodeType::fatbin);
    EXPECT_NO_THROW((void)Linker({.arch = "sm_90"}).add(good).link());
    expect_refused(fatbin.substr(0, fatbin.size() - 1), CodeType::fatbin,
                   {"bytes of entries follow its 16-byte header"});
    expect_refused(with(fatbin, 6, std::uint16_t(8)), CodeType::fatbin, {"header claims 8 bytes"});
    expect_refused(with(fatbin, 16 + 8, std::uint64_t(1) << 60), CodeType::fatbin,
                   {"entry 0 at offset 16", "runs past the end of the entries"});
    expect_refused(with(fatbin, 16 + 4, std::uint32_t(4)), CodeType::fatbin, {"entry 0 at offset 16 (4-byte header"});
    // Entry kinds other than those fatbinary writes (PTX 1, ELF 2, LTO-IR 8): nvJitLink crashed
    // reading the ELF entry of this fatbin marked as kind 16.
    for (const std::uint16_t kind : std::initializer_list<std::uint16_t>{0, 4, 16, 0xffff})
        expect_refused(with(fatbin, 16, kind), CodeType::fatbin,
                       {"entry 0 at offset 16 is of kind " + std::to_string(kind), "PTX (1), ELF (2) or LTO-IR (8)"});
    // A kind fatbinary writes, but not the image's: the image is checked as that kind.
    expect_refused(with(fatbin, 16, std::uint16_t(8)), CodeType::fatbin,
                   {"entry 0 at offset 16 (LTO-IR): it does not start with LTO-IR's magic"});
    expect_refused(with(fatbin, 16, std::uint16_t(1)), CodeType::fatbin,
                   {"entry 0 at offset 16 (PTX): PTX with a NUL"});
}

TEST(ObjectCodeFiles, SaveWritesOnlyRegularFilesAndNeverWaits) {
    const test::TempDir dir;
    const ObjectCode code = Program(k_callee_kernel, {.arch = "sm_90"}).compile(CodeType::ptx);
    // A regular file, written whole and replacing what was there.
    const std::filesystem::path file = dir.path() / "k.ptx";
    std::ofstream(file) << std::string(100000, 'x');
    code.save(file);
    EXPECT_EQ(bytes_of(ObjectCode::from_file(file)), bytes_of(code));
    // A FIFO without a reader: std::ofstream waited for one forever.
    const std::filesystem::path fifo = dir.path() / "fifo.ptx";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    auto saved = std::async(std::launch::async, [&] {
        test::expect_throw_with<InvalidArgument>([&] { code.save(fifo); },
                                                 {"ObjectCode::save", "path:", "is not a regular file"});
    });
    if (saved.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
        // Unblock the writer so the test ends.
        const int fd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // NOLINT(cppcoreguidelines-pro-type-vararg)
        saved.wait();
        if (fd >= 0) ::close(fd);
        FAIL() << "ObjectCode::save waited on a FIFO";
    }
    test::expect_throw_with<InvalidArgument>([&] { code.save(dir.path()); }, {"is not a regular file"});
    if (std::filesystem::exists("/dev/full"))
        test::expect_throw_with<InvalidArgument>([&] { code.save("/dev/full"); }, {"is not a regular file"});
    test::expect_throw_with<Error>([&] { code.save(dir.path() / "missing" / "k.ptx"); },
                                   {"ObjectCode::save: cannot write", "No such file or directory"});
}

TEST(ObjectCodeFiles, LoweredNamesAreWholeNonEmptyAndUnique) {
    const std::string ptx = bytes_of(Program(k_callee_kernel, {.arch = "sm_90"}).compile(CodeType::ptx));
    using Names = std::vector<std::pair<std::string, std::string>>;
    const auto make = [&](Names names) { (void)ObjectCode::from_bytes(ptx, CodeType::ptx, "", std::move(names)); };
    EXPECT_NO_THROW(make({{"twice<int>", "twice"}, {"twice<float>", "twice"}}));
    // The driver reads "bar\0evil" as "bar": Module::kernel("foo<int>") would find another kernel.
    test::expect_throw_with<InvalidArgument>(
        [&] {
            make({{"foo<int>", std::string("bar\0evil", 8)}});
        },
        {"ObjectCode::from_bytes", "lowered_names[0].second", "NUL byte"});
    test::expect_throw_with<InvalidArgument>(
        [&] {
            make({{"ok", "twice"}, {std::string("f\0x", 3), "twice"}});
        },
        {"lowered_names[1].first", "NUL byte"});
    test::expect_throw_with<InvalidArgument>([&] { make({{"", "twice"}}); }, {"lowered_names[0]", "empty expression"});
    test::expect_throw_with<InvalidArgument>(
        [&] {
            make({{"twice<int>", ""}});
        },
        {"lowered_names[0]", "empty lowered name"});
    test::expect_throw_with<InvalidArgument>(
        [&] {
            make({{"a", "twice"}, {"b", "twice"}, {"a", "other"}});
        },
        {"lowered_names[2]", "\"a\" is also lowered_names[0]"});
}
