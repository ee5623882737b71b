// SPDX-License-Identifier: Apache-2.0
// The programs gpumath compiles for FFTs (kernels/*.cu with each variant's macros and headers)
// compile with NVRTC and link with nvJitLink (no GPU needed), and the callback entry handed to cuFFT
// has C++ linkage whatever the user wrote.
#include "fft/sources.hpp"

#include <string>
#include <utility>

#include <fmt/format.h>

#include <gpumath/core/linker.hpp>
#include <gpumath/core/program.hpp>
#include <gpumath/error.hpp>

#include "common/test_util.hpp"

#ifndef GPUMATH_TEST_ARCH
#define GPUMATH_TEST_ARCH "sm_90"
#endif

namespace gpumath::detail {
namespace {

core::ObjectCode compile(const FftProgram& program, core::CodeType target, bool relocatable = false) {
    core::ProgramOptions o = program.options;
    o.arch = GPUMATH_TEST_ARCH;
    o.relocatable = relocatable;
    return core::Program(std::string(program.source), o).compile(target);
}

// The user's text and the lines gpumath puts in front of it (the header the programs include).
const std::string& callback_header(const FftProgram& program) {
    return program.options.headers.at("gpumath_fft_callback.cuh");
}

TEST(FftSources, BuiltinPassesCompile) {
    for (auto [element, pairs] : {std::pair{DataType::f32, false},
                                  {DataType::f64, false},
                                  {DataType::c32, false},
                                  {DataType::c64, false},
                                  {DataType::f16, false},
                                  {DataType::f16, true},
                                  {DataType::bf16, false},
                                  {DataType::bf16, true}}) {
        const FftProgram program = fft_pass_program({.element = element, .pairs = pairs});
        EXPECT_NE(program.source.find("src/fft/kernels/fft_pass.cu"), std::string_view::npos);
        const core::ObjectCode code = compile(program, core::CodeType::ptx);
        EXPECT_NE(code.text().find(".entry gpumath_fft_pass"), std::string_view::npos)
            << to_string(element) << (pairs ? " pairs" : "");
    }
}

const char* const window_c = R"(
#include <cufftXt.h>
extern "C" __device__ cufftComplex window(void* data, unsigned long long offset, void* info, void* shared) {
    cufftComplex v = static_cast<cufftComplex*>(data)[offset];
    const float w = 0.5f;
    v.x *= w; v.y *= w;
    return v;
}
__device__ void scale_store(void* data, unsigned long long offset, cufftComplex e, void* info, void*) {
    static_cast<cufftComplex*>(data)[offset] = e;
}
)";

TEST(FftSources, FusedEntryHasCxxLinkage) {
    // Whether the user's function is extern "C" or not, the entry cuFFT looks up is the mangled
    // C++ name of `gpumath_fft_load_entry(void*, unsigned long long, void*, void*)`.
    const FFTCallback load{.source = window_c, .symbol = "window"};
    const FftProgram src = fft_fused_callback_program(load, FFTCallbackKind::load, DataType::c32, 1.0, "scale_store");
    EXPECT_NE(src.source.find("src/fft/kernels/fft_callback_entry.cu"), std::string_view::npos);
    const core::ObjectCode ptx = compile(src, core::CodeType::ptx, true);
    EXPECT_NE(ptx.text().find("_Z22gpumath_fft_load_entryPvyS_S_"), std::string_view::npos) << ptx.text();
    // The other callback's symbol was renamed away in this module.
    EXPECT_EQ(ptx.text().find("_Z11scale_store"), std::string_view::npos);
    EXPECT_NE(ptx.text().find("gpumath_fft_renamed_scale_store"), std::string_view::npos);
    EXPECT_EQ(compile(src, core::CodeType::ltoir).type(), core::CodeType::ltoir);

    const FFTCallback store{.source = window_c, .symbol = "scale_store"};
    const FftProgram s2 = fft_fused_callback_program(store, FFTCallbackKind::store, DataType::c32, 0.25, "window");
    EXPECT_EQ(s2.options.defines.at("GM_FFT_SCALE"), "0x1p-2f");
    const core::ObjectCode ptx2 = compile(s2, core::CodeType::ptx, true);
    EXPECT_NE(ptx2.text().find("_Z23gpumath_fft_store_entryPvy6float2S_S_"), std::string_view::npos) << ptx2.text();
    // The scale, 0.25f, multiplies the element before the user's store.
    EXPECT_NE(ptx2.text().find("0f3E800000"), std::string_view::npos) << ptx2.text();
    EXPECT_EQ(fft_fused_callback_program(store, FFTCallbackKind::store, DataType::c32, 1.0, "window")
                  .options.defines.count("GM_FFT_SCALE"),
              0u);
}

// Prolog and epilog from one source with namespace-qualified names: each fused module renames
// the other function by its last name component, so the two modules link together (cuFFT links
// them into one program) without two definitions of either function.
const char* const qualified_pair = R"(
#include <cufftXt.h>
namespace cb {
__device__ cufftComplex win(void* data, unsigned long long offset, void* info, void* shared) {
    cufftComplex v = static_cast<cufftComplex*>(data)[offset];
    v.x *= 0.5f; v.y *= 0.5f;
    return v;
}
__device__ void gain(void* data, unsigned long long offset, cufftComplex e, void* info, void* shared) {
    e.x *= 2.0f; e.y *= 2.0f;
    static_cast<cufftComplex*>(data)[offset] = e;
}
}  // namespace cb
)";

TEST(FftSources, SharedSourceRenamesQualifiedSymbols) {
    const FFTCallback load{.source = qualified_pair, .symbol = "cb::win"};
    const FFTCallback store{.source = qualified_pair, .symbol = "::cb::gain"};
    const FFTOptions options{.prolog = load, .epilog = store};
    EXPECT_TRUE(fft_callbacks_share_source(options));
    EXPECT_FALSE(fft_callbacks_share_name(options));
    const FftProgram s1 = fft_fused_callback_program(load, FFTCallbackKind::load, DataType::c32, 1.0, store.symbol);
    const FftProgram s2 = fft_fused_callback_program(store, FFTCallbackKind::store, DataType::c32, 0.5, load.symbol);
    EXPECT_TRUE(callback_header(s1).starts_with("#define gain gpumath_fft_renamed_gain\n")) << callback_header(s1);
    EXPECT_TRUE(callback_header(s2).starts_with("#define win gpumath_fft_renamed_win\n")) << callback_header(s2);
    const std::string p1(compile(s1, core::CodeType::ptx, true).text());
    const std::string p2(compile(s2, core::CodeType::ptx, true).text());
    // cb::win and cb::gain, mangled, each defined by exactly one of the modules.
    EXPECT_NE(p1.find("_ZN2cb3winEPvyS0_S0_"), std::string::npos) << p1;
    EXPECT_EQ(p1.find("_ZN2cb4gain"), std::string::npos) << p1;
    EXPECT_NE(p1.find("gpumath_fft_renamed_gain"), std::string::npos) << p1;
    EXPECT_NE(p2.find("_ZN2cb4gainEPvy6float2S0_S0_"), std::string::npos) << p2;
    EXPECT_EQ(p2.find("_ZN2cb3win"), std::string::npos) << p2;
    EXPECT_NE(p2.find("_Z23gpumath_fft_store_entryPvy6float2S_S_"), std::string::npos) << p2;
    // What cuFFT does with the two modules: link them into one program.
    core::Linker linker(core::LinkerOptions{.name = "fft_sources_test", .arch = GPUMATH_TEST_ARCH});
    linker.add(compile(s1, core::CodeType::ltoir)).add(compile(s2, core::CodeType::ltoir));
    EXPECT_EQ(linker.link(core::CodeType::cubin).type(), core::CodeType::cubin);
}

// Two functions of one source that end in the same name cannot be renamed apart.
TEST(FftSources, SharedSourceSameNameIsRefused) {
    const char* const overloads = R"(
#include <cufftXt.h>
__device__ cufftComplex f(void* d, unsigned long long o, void*, void*) { return static_cast<cufftComplex*>(d)[o]; }
__device__ void f(void* d, unsigned long long o, cufftComplex e, void*, void*) { static_cast<cufftComplex*>(d)[o] = e; }
namespace a { using ::f; }
)";
    const FFTCallback load{.source = overloads, .symbol = "f"};
    for (const char* other : {"f", "::f", "a::f"}) {
        const FFTCallback store{.source = overloads, .symbol = other};
        EXPECT_TRUE(fft_callbacks_share_name({.prolog = load, .epilog = store})) << other;
        test::expect_throw_with<InvalidArgument>(
            [&] { (void)fft_fused_callback_program(load, FFTCallbackKind::load, DataType::c32, 1.0, store.symbol); },
            {"\"f\" and", "end in the same name", "CallbackMode::separate"});
    }
    // Different sources, or different last names, are fine.
    EXPECT_FALSE(fft_callbacks_share_name({.prolog = load, .epilog = {.source = window_c, .symbol = "f"}}));
    EXPECT_FALSE(fft_callbacks_share_name({.prolog = load, .epilog = {.source = overloads, .symbol = "f::g"}}));
    // Separate passes compile each callback on its own: the overloads are no obstacle there.
    const FFTCallback store{.source = overloads, .symbol = "f"};
    FftPassSpec gather{.element = DataType::c32, .callback = &load, .kind = FFTCallbackKind::load};
    FftPassSpec scatter{.element = DataType::c32, .callback = &store, .kind = FFTCallbackKind::store};
    EXPECT_GT(compile(fft_pass_program(gather), core::CodeType::cubin).bytes().size(), 0u);
    EXPECT_GT(compile(fft_pass_program(scatter), core::CodeType::cubin).bytes().size(), 0u);
}

// A source can be valid for a separate pass and still break the entry gpumath wraps around it for
// cuFFT (here a macro named like one of the entry's parameters); automatic mode then falls back
// to separate passes (callbacks_test.cpp checks that on a GPU).
TEST(FftSources, FusedOnlyCompileError) {
    const FFTCallback load{.source = R"(
#include <cufftXt.h>
#define shared
__device__ cufftComplex twice(void* d, unsigned long long o, void*, void*) {
    cufftComplex v = static_cast<cufftComplex*>(d)[o];
    v.x *= 2.0f; v.y *= 2.0f;
    return v;
})",
                           .symbol = "twice"};
    FftPassSpec gather{.element = DataType::c32, .callback = &load, .kind = FFTCallbackKind::load};
    EXPECT_GT(compile(fft_pass_program(gather), core::CodeType::cubin).bytes().size(), 0u);
    EXPECT_THROW((void)compile(fft_fused_callback_program(load, FFTCallbackKind::load, DataType::c32, 1.0, {}),
                               core::CodeType::ltoir),
                 CompileError);
}

TEST(FftSources, ScaleStoreCompiles) {
    for (DataType t : {DataType::c32, DataType::c64, DataType::f32, DataType::f64}) {
        const core::ObjectCode code = compile(fft_scale_callback_program(t, 1.0 / 3.0), core::CodeType::ltoir);
        EXPECT_GT(code.bytes().size(), 0u);
    }
    EXPECT_EQ(fft_literal(0.5, true), "0x1p-1f");
    EXPECT_EQ(fft_literal(0.5, false), "0x1p-1");
}

TEST(FftSources, PassesWithUserCallbacksCompile) {
    const FFTCallback load{.source = window_c, .symbol = "window"};
    FftPassSpec gather{.element = DataType::c32, .callback = &load, .kind = FFTCallbackKind::load};
    EXPECT_NE(compile(fft_pass_program(gather), core::CodeType::ptx).text().find(".entry gpumath_fft_pass"),
              std::string_view::npos);
    const FFTCallback store{.source = window_c, .symbol = "scale_store"};
    FftPassSpec scatter{.element = DataType::c32, .callback = &store, .kind = FFTCallbackKind::store};
    EXPECT_GT(compile(fft_pass_program(scatter), core::CodeType::cubin).bytes().size(), 0u);
    // Declared only (LTO-IR given by the user), qualified and C-linkage forms.
    const FFTCallback qualified{.source = {}, .symbol = "filters::window"};
    FftPassSpec decl{
        .element = DataType::f64, .callback = &qualified, .kind = FFTCallbackKind::load, .declare_only = true};
    const std::string d = fft_callback_declaration(decl);
    EXPECT_NE(d.find("namespace filters { __device__ cufftDoubleReal window("), std::string::npos) << d;
    EXPECT_EQ(callback_header(fft_pass_program(decl)), d);
    EXPECT_EQ(compile(fft_pass_program(decl), core::CodeType::ltoir).type(), core::CodeType::ltoir);
    const FFTCallback plain{.source = {}, .symbol = "w"};
    FftPassSpec c_decl{.element = DataType::c64,
                       .callback = &plain,
                       .kind = FFTCallbackKind::store,
                       .declare_only = true,
                       .c_linkage = true};
    EXPECT_NE(fft_callback_declaration(c_decl).find("extern \"C\" __device__ void w("), std::string::npos);
}

// A load callback `ld` and a store callback `st` that copy elements of `type`, with C linkage when
// asked.
std::string copy_callbacks(const char* type, bool c_linkage) {
    const char* linkage = c_linkage ? "extern \"C\" " : "";
    return fmt::format(
        "#include <cufftXt.h>\n"
        "{0}__device__ {1} ld(void* d, unsigned long long o, void*, void*) {{ return static_cast<{1}*>(d)[o]; }}\n"
        "{0}__device__ void st(void* d, unsigned long long o, {1} e, void*, void*) {{ static_cast<{1}*>(d)[o] = e; "
        "}}\n",
        linkage, type);
}

core::ObjectCode link(const core::ObjectCode& pass, const core::ObjectCode& callback) {
    core::Linker linker(core::LinkerOptions{.name = "fft_sources_test", .arch = GPUMATH_TEST_ARCH});
    linker.add(pass).add(callback);
    return linker.link(core::CodeType::cubin);
}

// Every program the FFT module compiles for callbacks, for every element type that has them: the
// fused entries (with and without a scale), the scale-only store, and the passes, from the source
// or declared and linked with the callback's LTO-IR in either linkage (what callback_pass_kernel
// loads on each device).
TEST(FftSources, EveryCallbackVariantCompiles) {
    for (DataType t : {DataType::c32, DataType::c64, DataType::f32, DataType::f64}) {
        SCOPED_TRACE(to_string(t));
        const char* type = fft_callback_value_type(t, "test");
        for (FFTCallbackKind kind : {FFTCallbackKind::load, FFTCallbackKind::store}) {
            const FFTCallback cb{.source = copy_callbacks(type, false),
                                 .symbol = kind == FFTCallbackKind::load ? "ld" : "st"};
            for (double scale : {1.0, 0.5})
                EXPECT_EQ(compile(fft_fused_callback_program(cb, kind, t, scale, {}), core::CodeType::ltoir).type(),
                          core::CodeType::ltoir);
            FftPassSpec spec{.element = t, .callback = &cb, .kind = kind};
            EXPECT_NE(compile(fft_pass_program(spec), core::CodeType::ptx).text().find(".entry gpumath_fft_pass"),
                      std::string_view::npos);
            spec.declare_only = true;
            for (bool c_linkage : {false, true}) {
                core::ProgramOptions o{.name = "user_callback", .arch = GPUMATH_TEST_ARCH};
                o.headers = fft_pass_program(spec).options.headers;  // cufftXt.h
                const core::ObjectCode ir =
                    core::Program(copy_callbacks(type, c_linkage), o).compile(core::CodeType::ltoir);
                spec.c_linkage = c_linkage;
                EXPECT_EQ(link(compile(fft_pass_program(spec), core::CodeType::ltoir), ir).type(),
                          core::CodeType::cubin);
                // Declared in the other linkage, the symbol stays undefined: the loader then tries the other.
                spec.c_linkage = !c_linkage;
                EXPECT_THROW((void)link(compile(fft_pass_program(spec), core::CodeType::ltoir), ir), LinkError);
            }
        }
        EXPECT_EQ(compile(fft_scale_callback_program(t, 0.5), core::CodeType::ltoir).type(), core::CodeType::ltoir);
    }
}

TEST(FftSources, UserSourceMayIncludeCufftHeaders) {
    const FFTCallback cb{.source =
                             "#include <cufft.h>\n#include <cufftXt.h>\n"
                             "__device__ cufftDoubleReal f(void* d, unsigned long long o, void*, void*) {"
                             " return static_cast<cufftDoubleReal*>(d)[o] * 2.0; }",
                         .symbol = "f"};
    EXPECT_EQ(compile_fft_callback(cb, FFTCallbackKind::load, DataType::f64, GPUMATH_TEST_ARCH).type(),
              core::CodeType::ltoir);
}

}  // namespace
}  // namespace gpumath::detail
