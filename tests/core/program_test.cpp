// SPDX-License-Identifier: Apache-2.0
// Program and ObjectCode with NVRTC for real (no GPU needed): every target kind for an explicit
// architecture, compile errors with the log, name expressions, in-memory and toolkit headers, option
// validation, saving and loading code, and what happens without a GPU.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <string>
#include <utility>
#include <vector>

#include <sys/stat.h>

#include <gpumath/core.hpp>

#include "common/test_util.hpp"
#include "jit_test_util.hpp"

using namespace gpumath;
using core::CodeType;
using core::ObjectCode;
using core::Program;
using core::ProgramOptions;

namespace {

constexpr const char* k_source = R"(
template <class T>
__global__ void scale(T* x, T a, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
extern "C" __global__ void add_one(float* x, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
)";

// One compile per target for the whole program (NVRTC takes tens of milliseconds per compile).
const ObjectCode& compiled(CodeType target) {
    static const auto make = [](CodeType t) {
        Program p(k_source, {.name = "targets", .arch = "sm_90"});
        p.add_name_expression("scale<float>").add_name_expression("scale<double>");
        return p.compile(t);
    };
    static const ObjectCode ptx = make(CodeType::ptx);
    static const ObjectCode cubin = make(CodeType::cubin);
    static const ObjectCode ltoir = make(CodeType::ltoir);
    return target == CodeType::ptx ? ptx : target == CodeType::cubin ? cubin : ltoir;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

TEST(Program, EveryTargetForAnExplicitArch) {
    const ObjectCode& ptx = compiled(CodeType::ptx);
    EXPECT_EQ(ptx.type(), CodeType::ptx);
    EXPECT_EQ(ptx.arch(), "compute_90");
    EXPECT_NE(ptx.text().find(".target sm_90"), std::string_view::npos);
    EXPECT_NE(ptx.text().find(".entry add_one("), std::string_view::npos);
    EXPECT_EQ(ptx.name(), "targets");

    const ObjectCode& cubin = compiled(CodeType::cubin);
    EXPECT_EQ(cubin.type(), CodeType::cubin);
    EXPECT_EQ(cubin.arch(), "sm_90");
    ASSERT_GT(cubin.bytes().size(), 4u);
    EXPECT_EQ(std::string_view(cubin.text().data(), 4),
              "\x7f"
              "ELF");

    const ObjectCode& ltoir = compiled(CodeType::ltoir);
    EXPECT_EQ(ltoir.type(), CodeType::ltoir);
    EXPECT_EQ(ltoir.arch(), "sm_90");
    EXPECT_GT(ltoir.bytes().size(), 100u);
    EXPECT_TRUE(ltoir.kernel_names().empty());

    // The kernels are there, under their driver names, in both PTX and cubin.
    for (const ObjectCode* c : {&ptx, &cubin}) {
        const std::vector<std::string> names = c->kernel_names();
        EXPECT_TRUE(contains(names, "add_one")) << core::to_string(c->type());
        EXPECT_TRUE(contains(names, c->lowered_name("scale<float>"))) << core::to_string(c->type());
        EXPECT_TRUE(contains(names, c->lowered_name("scale<double>"))) << core::to_string(c->type());
        EXPECT_EQ(names.size(), 3u);
    }
}

TEST(Program, NameExpressions) {
    for (CodeType t : {CodeType::ptx, CodeType::cubin, CodeType::ltoir}) {
        const ObjectCode& c = compiled(t);
        const std::string& f = c.lowered_name("scale<float>");
        const std::string& d = c.lowered_name("scale<double>");
        EXPECT_EQ(f, "_Z5scaleIfEvPT_S0_i");  // the Itanium mangling of void scale<float>(float*, float, int)
        EXPECT_EQ(d, "_Z5scaleIdEvPT_S0_i");
        ASSERT_EQ(c.lowered_names().size(), 2u);
        EXPECT_EQ(c.lowered_names()[0].first, "scale<float>");
    }
    test::expect_throw_with<InvalidArgument>([] { (void)compiled(CodeType::cubin).lowered_name("scale<int>"); },
                                             {"scale<int>", "not registered", "\"scale<float>\"", "\"scale<double>\""});
    test::expect_throw_with<InvalidArgument>([] { Program("", {.arch = "sm_90"}).add_name_expression(""); },
                                             {"name expression"});
}

TEST(Program, CompileErrorCarriesTheLog) {
    Program p("__global__ void broken(float* x) { x[0] = undeclared_thing; }",
              {.name = "broken_prog", .arch = "sm_90"});
    try {
        (void)p.compile(CodeType::ptx);
        FAIL() << "expected CompileError";
    } catch (const CompileError& e) {
        EXPECT_NE(e.log().find("undeclared_thing"), std::string::npos) << e.log();
        EXPECT_NE(e.log().find("error"), std::string::npos) << e.log();
        const std::string what = e.what();
        EXPECT_NE(what.find("nvrtcCompileProgram"), std::string::npos) << what;
        EXPECT_NE(what.find("NVRTC_ERROR_COMPILATION"), std::string::npos) << what;
        EXPECT_NE(what.find("broken_prog"), std::string::npos) << what;
        EXPECT_NE(what.find("undeclared_thing"), std::string::npos) << what;  // the log is in the message too
        EXPECT_EQ(e.api(), "nvrtcCompileProgram");
        EXPECT_EQ(e.status(), 6);
    }
}

TEST(Program, InMemoryHeaders) {
    const std::string src =
        "#include \"params.h\"\n#include <sub/more.h>\n"
        "extern \"C\" __global__ void k(int* out) { out[0] = factor * extra; }\n";
    ProgramOptions o{
        .arch = "sm_90",
        .headers = {{"params.h", "constexpr int factor = 7;\n"}, {"sub/more.h", "constexpr int extra = 1234567;\n"}}};
    const ObjectCode ptx = Program(src, o).compile(CodeType::ptx);
    // 7 * 1234567 = 8641969, folded into the PTX as an immediate.
    EXPECT_NE(ptx.text().find("8641969"), std::string_view::npos) << ptx.text();
    o.headers.erase("params.h");
    test::expect_throw_with<CompileError>([&] { (void)Program(src, o).compile(CodeType::ptx); }, {"params.h"});
}

TEST(Program, ToolkitHeadersWithoutCallerPaths) {
    const std::string src = R"(
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda/std/type_traits>
#include <cuda/std/limits>
static_assert(cuda::std::is_same_v<cuda::std::remove_cv_t<const float>, float>, "libcu++ works");
extern "C" __global__ void halves(__half* h, __nv_bfloat16* b, float* out) {
    out[0] = __half2float(h[0]) + __bfloat162float(b[0]) + cuda::std::numeric_limits<float>::epsilon();
}
)";
    Program p(src, {.name = "toolkit_headers", .arch = "sm_90"});
    ASSERT_FALSE(p.toolkit_include_dirs().empty()) << "no CUDA toolkit headers found";
    const ObjectCode ptx = p.compile(CodeType::ptx);
    EXPECT_NE(ptx.text().find(".entry halves("), std::string_view::npos);
    // CUDA 13 keeps libcu++ under include/cccl; both directories are searched when present.
    bool has_cccl = false;
    for (const std::string& d : p.toolkit_include_dirs()) has_cccl = has_cccl || d.ends_with("cccl");
    if (std::filesystem::is_directory(std::filesystem::path(p.toolkit_include_dirs()[0]) / "cccl")) {
        EXPECT_TRUE(has_cccl);
    }
}

TEST(Program, ToolkitLookupOrder) {
    // An explicit root that is not a toolkit is an error, not a silent fallback.
    test::expect_throw_with<InvalidArgument>(
        [] { Program("", {.arch = "sm_90", .toolkit_root = "/nonexistent/cuda"}); },
        {"ProgramOptions::toolkit_root", "/nonexistent/cuda", "cuda_fp16.h"});
    // A CUDA_PATH without headers is skipped; the next candidate is used.
    const char* old = std::getenv("CUDA_PATH");
    const std::string saved = old != nullptr ? old : "";
    ::setenv("CUDA_PATH", "/nonexistent/cuda", 1);
    const Program p("", {.arch = "sm_90"});
    if (old != nullptr) ::setenv("CUDA_PATH", saved.c_str(), 1);
    else ::unsetenv("CUDA_PATH");
    EXPECT_FALSE(p.toolkit_include_dirs().empty());
    // An explicit root that is a toolkit is used first.
    const std::filesystem::path root = std::filesystem::path(p.toolkit_include_dirs()[0]).parent_path();
    const Program q("", {.arch = "sm_90", .toolkit_root = root.string()});
    ASSERT_FALSE(q.toolkit_include_dirs().empty());
    EXPECT_EQ(std::filesystem::path(q.toolkit_include_dirs()[0]).parent_path(), root);
}

TEST(Program, BadOptionsAreRejectedBeforeCompiling) {
    const auto bad = [](ProgramOptions o, std::initializer_list<std::string> needles) {
        test::expect_throw_with<InvalidArgument>([&] { Program("", o); }, needles);
    };
    bad({.arch = "garbage"}, {"ProgramOptions::arch", "\"garbage\"", "sm_90"});
    bad({.arch = "sm_9"}, {"ProgramOptions::arch", "\"sm_9\""});
    bad({.arch = "sm_91"}, {"ProgramOptions::arch", "\"sm_91\"", "supported", "sm_90"});
    bad({.arch = "compute_90x"}, {"ProgramOptions::arch", "compute_90x"});
    bad({.arch = "sm_80a"}, {"ProgramOptions::arch", "'a'", "sm_90"});
    bad({.arch = "sm_90f"}, {"ProgramOptions::arch", "'f'", "sm_100"});
    bad({.arch = "SM_90"}, {"ProgramOptions::arch"});
    bad({.arch = "sm_90", .std = "c++23"}, {"ProgramOptions::std", "c++23", "c++20"});
    bad({.arch = "sm_90", .defines = {{"1BAD", "x"}}}, {"ProgramOptions::defines", "1BAD"});
    bad({.arch = "sm_90", .defines = {{"OK", "a\nb"}}}, {"ProgramOptions::defines", "OK", "single line"});
    bad({.arch = "sm_90", .include_dirs = {"/nonexistent/include"}},
        {"ProgramOptions::include_dirs[0]", "/nonexistent/include"});
    bad({.arch = "sm_90", .headers = {{"", "x"}}}, {"ProgramOptions::headers"});
    bad({.arch = "sm_90", .max_registers = 300}, {"ProgramOptions::max_registers", "300", "1..255"});
    bad({.arch = "sm_90", .max_registers = -1}, {"ProgramOptions::max_registers", "-1"});
    bad({.arch = "sm_90", .extra = {"nodash"}}, {"ProgramOptions::extra[0]", "nodash"});
    bad({.arch = "sm_90", .extra = {"-G", "-arch=sm_80"}},
        {"ProgramOptions::extra[1]", "-arch=sm_80", "ProgramOptions::arch"});
    bad({.arch = "sm_90", .extra = {"-std=c++14"}}, {"ProgramOptions::extra[0]", "ProgramOptions::std"});
    bad({.arch = "sm_90", .extra = {"-dlto"}}, {"ProgramOptions::extra[0]", "ltoir"});
    // Every spelling NVRTC accepts for an include path or a pre-included header: the compile cache
    // keys the headers found through include_dirs and #include, so these have no way around it.
    for (const char* f : {"-I/tmp", "-I", "-I=/tmp", "--include-path=/tmp", "--include-path"})
        bad({.arch = "sm_90", .extra = {"-G", f}}, {"ProgramOptions::extra[1]", f, "ProgramOptions::include_dirs"});
    for (const char* f : {"-include", "-include=x.h", "--pre-include=x.h", "--pre-include"})
        bad({.arch = "sm_90", .extra = {f}}, {"ProgramOptions::extra[0]", f, "#include the header"});
    bad({.name = ""}, {"ProgramOptions::name"});
    // NVRTC reads C strings: a NUL byte anywhere would cut off what follows it without a word.
    const std::string nul("a\0b", 3);
    bad({.name = nul, .arch = "sm_90"}, {"ProgramOptions::name", "NUL byte"});
    bad({.arch = "sm_90", .defines = {{"X", "1" + nul}}}, {"ProgramOptions::defines[\"X\"]", "NUL byte"});
    bad({.arch = "sm_90", .include_dirs = {"/tmp" + nul}}, {"ProgramOptions::include_dirs[0]", "NUL byte"});
    bad({.arch = "sm_90", .headers = {{"h.h", nul}}}, {"ProgramOptions::headers[\"h.h\"]", "NUL byte"});
    bad({.arch = "sm_90", .headers = {{"h" + nul, "x"}}}, {"ProgramOptions::headers", "NUL byte"});
    bad({.arch = "sm_90", .extra = {"-DZ" + nul}}, {"ProgramOptions::extra[0]", "NUL byte"});
    test::expect_throw_with<InvalidArgument>(
        [&] { Program(std::string("extern \"C\" __global__ void k() {}") + nul, {.arch = "sm_90"}); },
        {"source", "NUL byte", "offset 34"});
    test::expect_throw_with<InvalidArgument>([&] { Program("", {.arch = "sm_90"}).add_name_expression("k" + nul); },
                                             {"name expression", "NUL byte"});

    // A flag only NVRTC can judge: rejected as InvalidArgument with NVRTC's words, nothing cached.
    test::expect_throw_with<InvalidArgument>(
        [] { (void)Program("", {.arch = "sm_90", .extra = {"--no-such-flag"}}).compile(CodeType::ptx); },
        {"ProgramOptions", "--no-such-flag"});
}

TEST(Program, TargetsTheArchCannotGive) {
    test::expect_throw_with<InvalidArgument>([] { (void)Program("", {.arch = "compute_90"}).compile(CodeType::cubin); },
                                             {"cubin", "compute_90", "sm_90", "ptx"});
    test::expect_throw_with<InvalidArgument>([] { (void)Program("", {.arch = "sm_90"}).compile(CodeType::fatbin); },
                                             {"fatbin"});
}

TEST(Program, ArchSuffixesAndVirtualArchs) {
    const std::string src = "extern \"C\" __global__ void k(int* p) { *p = 1; }";
    const ObjectCode a = Program(src, {.arch = "sm_90a"}).compile(CodeType::ptx);
    EXPECT_EQ(a.arch(), "compute_90a");
    EXPECT_NE(a.text().find(".target sm_90a"), std::string_view::npos);
    const ObjectCode v = Program(src, {.arch = "compute_80"}).compile(CodeType::ptx);
    EXPECT_EQ(v.arch(), "compute_80");
    EXPECT_NE(v.text().find(".target sm_80"), std::string_view::npos);
}

TEST(Program, EmptyArchTakesTheCurrentDevice) {
    if (test::has_gpu()) {
        const Program p("", {});
        EXPECT_EQ(p.options().arch, core::Device::current().arch());
    } else {
        test::expect_throw_with<InvalidArgument>(
            [] { Program("", {}); },
            {"Program: ProgramOptions::arch: empty", "no CUDA driver/device", "set ProgramOptions::arch", "sm_90"});
    }
}

TEST(ObjectCode, SaveAndLoadFiles) {
    test::TempDir dir;
    const ObjectCode& cubin = compiled(CodeType::cubin);
    const auto file = dir.path() / "kernels.cubin";
    cubin.save(file);
    const ObjectCode back = ObjectCode::from_file(file);
    EXPECT_EQ(back.type(), CodeType::cubin);
    EXPECT_EQ(back.arch(), "sm_90");  // read from the ELF header
    EXPECT_EQ(back.name(), "kernels.cubin");
    ASSERT_EQ(back.bytes().size(), cubin.bytes().size());
    EXPECT_TRUE(std::equal(back.bytes().begin(), back.bytes().end(), cubin.bytes().begin()));
    EXPECT_EQ(back.kernel_names(), cubin.kernel_names());
    EXPECT_TRUE(back.lowered_names().empty());

    const ObjectCode& ptx = compiled(CodeType::ptx);
    ptx.save(dir.path() / "k.ptx");
    EXPECT_EQ(ObjectCode::from_file(dir.path() / "k.ptx").type(), CodeType::ptx);
    compiled(CodeType::ltoir).save(dir.path() / "k.ltoir");
    EXPECT_EQ(ObjectCode::from_file(dir.path() / "k.ltoir").type(), CodeType::ltoir);
    ptx.save(dir.path() / "k.data");
    EXPECT_EQ(ObjectCode::from_file(dir.path() / "k.data", CodeType::ptx).type(), CodeType::ptx);

    test::expect_throw_with<InvalidArgument>([&] { (void)ObjectCode::from_file(dir.path() / "k.data"); },
                                             {"k.data", "extension"});
    test::expect_throw_with<InvalidArgument>([&] { (void)ObjectCode::from_file(dir.path() / "missing.cubin"); },
                                             {"missing.cubin"});
    // A (sparse) file of more than 4 GiB is refused without reading it into memory.
    const auto huge = dir.path() / "huge.cubin";
    cubin.save(huge);
    std::filesystem::resize_file(huge, (std::uintmax_t(1) << 32) + 1);
    test::expect_throw_with<InvalidArgument>([&] { (void)ObjectCode::from_file(huge); },
                                             {"huge.cubin", "larger than 4 GiB"});
}

TEST(ObjectCode, FromBytesAndEmpty) {
    const ObjectCode& cubin = compiled(CodeType::cubin);
    const ObjectCode copy = ObjectCode::from_bytes(cubin.bytes(), CodeType::cubin, {}, cubin.lowered_names());
    EXPECT_EQ(copy.arch(), "sm_90");
    EXPECT_EQ(copy.lowered_name("scale<float>"), cubin.lowered_name("scale<float>"));
    const ObjectCode ptx =
        ObjectCode::from_bytes(std::string_view(".version 9.0\n.target sm_90\n"), CodeType::ptx, "compute_90");
    EXPECT_EQ(ptx.arch(), "compute_90");
    test::expect_throw_with<InvalidArgument>([] { (void)ObjectCode::from_bytes(std::string_view(), CodeType::ptx); },
                                             {"empty"});
    test::expect_throw_with<InvalidArgument>(
        [] { (void)ObjectCode::from_bytes(std::string_view("x"), CodeType::ptx, "bogus"); }, {"arch", "bogus"});
    // PTX is read up to its first NUL: a terminator is fine, code after one is not.
    EXPECT_NO_THROW((void)ObjectCode::from_bytes(std::string(".version 9.0\n.target sm_90\n\0", 28), CodeType::ptx));
    test::expect_throw_with<InvalidArgument>(
        [] { (void)ObjectCode::from_bytes(std::string(".version 9.0\n\0.target sm_90\n", 28), CodeType::ptx); },
        {"bytes", "NUL byte at offset 13"});
    const ObjectCode empty;
    EXPECT_TRUE(empty.empty());
    test::expect_throw_with<InvalidArgument>([&] { (void)empty.type(); }, {"empty"});
}

TEST(ObjectCode, LoadingLtoIrIsRejected) {
    test::expect_throw_with<InvalidArgument>([] { (void)compiled(CodeType::ltoir).load(); }, {"LTO-IR", "Linker"});
    test::expect_throw_with<InvalidArgument>([] { core::Module m{ObjectCode()}; }, {"empty"});
}

TEST(NoDriver, LoadingAndLaunchingSayThereIsNoDevice) {
    if (test::has_gpu()) GTEST_SKIP() << "a CUDA device is present: the no-driver behaviour cannot be observed here";
    for (CodeType t : {CodeType::ptx, CodeType::cubin}) {
        try {
            (void)compiled(t).load();
            ADD_FAILURE() << "expected CudaError";
        } catch (const CudaError& e) {
            EXPECT_NE(std::string(e.what()).find("no CUDA driver/device"), std::string::npos) << e.what();
        }
    }
    // Without a device there is no Kernel to launch: an empty one is rejected as such.
    test::expect_throw_with<InvalidArgument>([] { core::launch({}, {}, core::Kernel{}); }, {"Kernel", "empty"});
}

TEST(Program, CodeTypesOutsideTheEnumAreRejectedWhereTheyEnter) {
    const auto bad_type = static_cast<CodeType>(9);
    const std::initializer_list<std::string> names = {"type: 9 is not a CodeType", "ptx, cubin, ltoir, fatbin"};
    // Before: accepted, and only nvJitLink or the loader found out.
    test::expect_throw_with<InvalidArgument>(
        [&] { (void)ObjectCode::from_bytes(std::string_view(".version 9.0\n"), bad_type, "compute_90"); }, names);
    test::expect_throw_with<InvalidArgument>(
        [&] { (void)ObjectCode::from_bytes(compiled(CodeType::cubin).bytes(), bad_type); },
        {"ObjectCode::from_bytes", "type: 9 is not a CodeType"});
    test::TempDir dir;
    compiled(CodeType::ptx).save(dir.path() / "k.ptx");
    test::expect_throw_with<InvalidArgument>([&] { (void)ObjectCode::from_file(dir.path() / "k.ptx", bad_type); },
                                             {"ObjectCode::from_file", "type: 9 is not a CodeType"});
    // Before: NVRTC was run and its rejection of the missing output blamed an option.
    test::expect_throw_with<InvalidArgument>(
        [&] { (void)Program("", {.arch = "sm_90"}).compile(bad_type); },
        {"Program::compile", "target: 9 is not a CodeType; allowed: ptx, cubin, ltoir, fatbin"});
    test::expect_throw_with<InvalidArgument>(
        [&] { (void)Program("", {.arch = "sm_90"}).compile(static_cast<CodeType>(-1)); },
        {"target: -1 is not a CodeType"});
}

TEST(ObjectCode, FromFileRefusesWhatIsNotARegularFile) {
    test::TempDir dir;
    const auto fifo = dir.path() / "k.ptx";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    // Before: opening the FIFO waited for a writer forever.
    auto result = std::async(std::launch::async, [&] {
        try {
            (void)ObjectCode::from_file(fifo);
            return std::string("no exception");
        } catch (const InvalidArgument& e) {
            return std::string(e.what());
        }
    });
    if (result.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
        // Unblock the reader so the test fails instead of hanging the suite.
        std::ofstream(fifo) << "x";
        FAIL() << "ObjectCode::from_file blocked on a FIFO";
    }
    const std::string what = result.get();
    EXPECT_NE(what.find("not a regular file"), std::string::npos) << what;
    EXPECT_NE(what.find("k.ptx"), std::string::npos) << what;
    test::expect_throw_with<InvalidArgument>([&] { (void)ObjectCode::from_file(dir.path(), CodeType::ptx); },
                                             {"not a regular file"});
    test::expect_throw_with<InvalidArgument>([&] { (void)ObjectCode::from_file(dir.path() / "none.ptx"); },
                                             {"none.ptx", "does not exist"});
}

TEST(Program, MovedFromProgramThrowsFromItsMethods) {
    Program p("extern \"C\" __global__ void k(int* x) { *x = 1; }", {.name = "moved", .arch = "sm_90"});
    const Program q = std::move(p);
    // NOLINTBEGIN(bugprone-use-after-move): the moved-from state is what is tested
    test::expect_throw_with<InvalidArgument>([&] { (void)p.compile(CodeType::ptx); },
                                             {"Program::compile: this Program was moved from"});
    test::expect_throw_with<InvalidArgument>([&] { p.add_name_expression("k"); },
                                             {"Program::add_name_expression: this Program was moved from"});
    EXPECT_NO_THROW((void)p.source());  // accessors stay safe
    EXPECT_NO_THROW((void)p.name_expressions().size());
    // NOLINTEND(bugprone-use-after-move)
    EXPECT_EQ(q.compile(CodeType::ptx).kernel_names(), std::vector<std::string>{"k"});
    // Assigning to a moved-from Program makes it usable again; a copy of a live one is live.
    p = q;
    EXPECT_EQ(p.compile(CodeType::ptx).kernel_names(), std::vector<std::string>{"k"});
    Program copy = q;
    EXPECT_EQ(copy.options().name, "moved");
}

TEST(ObjectCode, KernelNamesOfAHostileCubinVisitEachSymbolTableOnce) {
    // 65535 section headers, all SHT_SYMTAB over the same three symbols: reading the table once per
    // header took O(sections x symbols) and, over a large table, effectively hung kernel_names().
    constexpr std::uint16_t shnum = 65535;
    constexpr std::size_t strtab_off = 64, symtab_off = 80, sym_size = 24, nsyms = 4;
    constexpr std::size_t shoff = symtab_off + nsyms * sym_size;
    std::string elf(shoff + std::size_t(shnum) * 64, '\0');
    const auto put = [&](std::size_t at, auto value) { std::memcpy(elf.data() + at, &value, sizeof(value)); };
    std::memcpy(elf.data(),
                "\x7f"
                "ELF",
                4);
    elf[4] = 2;  // 64-bit
    elf[5] = 1;  // little-endian
    put(0x28, std::uint64_t(shoff));
    put(0x3a, std::uint16_t(64));
    put(0x3c, shnum);
    const char strtab[] = "\0kern_a\0kern_b\0helper";
    std::memcpy(elf.data() + strtab_off, strtab, sizeof(strtab));
    // Symbols: null; two entry points; kern_a again; a function that is not an entry point.
    const std::array<std::pair<std::uint32_t, std::uint8_t>, nsyms> syms = {
        {{1, 0x10}, {8, 0x10}, {1, 0x10}, {15, 0x00}}};
    for (std::size_t i = 0; i < nsyms; ++i) {
        put(symtab_off + i * sym_size, syms[i].first);
        put(symtab_off + i * sym_size + 4, std::uint8_t(0x12));  // STB_GLOBAL, STT_FUNC
        put(symtab_off + i * sym_size + 5, syms[i].second);
    }
    // Section 0 is the string table, every other one the same symbol table.
    put(shoff + 4, std::uint32_t(3));  // SHT_STRTAB
    put(shoff + 0x18, std::uint64_t(strtab_off));
    put(shoff + 0x20, std::uint64_t(sizeof(strtab)));
    for (std::size_t i = 1; i < shnum; ++i) {
        const std::size_t h = shoff + i * 64;
        put(h + 4, std::uint32_t(2));  // SHT_SYMTAB
        put(h + 0x18, std::uint64_t(symtab_off));
        put(h + 0x20, std::uint64_t(nsyms * sym_size));
        put(h + 0x28, std::uint32_t(0));  // sh_link: the string table
        put(h + 0x38, std::uint64_t(sym_size));
    }
    // from_bytes refuses such a file (no CUDA machine, no section name table); the reader must
    // still be quick on data that reaches it otherwise.
    test::expect_throw_with<InvalidArgument>(
        [&] { (void)ObjectCode::from_bytes(std::string_view(elf), CodeType::cubin, "sm_90"); },
        {"bytes: not a well-formed cubin"});
    auto data = std::make_shared<detail::ObjectCodeData>();
    data->type = CodeType::cubin;
    data->bytes = elf;
    const ObjectCode code = detail::ObjectCodeAccess::make(std::move(data));
    EXPECT_EQ(code.kernel_names(), (std::vector<std::string>{"kern_a", "kern_b"}));
}
