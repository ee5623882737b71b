// SPDX-License-Identifier: Apache-2.0
// Linker with nvJitLink for real (no GPU needed): LTO of two programs, non-LTO links of relocatable
// code, unresolved symbols, architecture mismatches and bad options.
#include <gtest/gtest.h>

#include <string>

#include <gpumath/core.hpp>

#include "common/test_util.hpp"
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
