// SPDX-License-Identifier: Apache-2.0
// The programs of FFTs: the fixed device code of kernels/ (callback entries for cuFFT, the
// elementwise pass, cuFFT's callback types) with the macros and headers of each variant.
#include "fft/sources.hpp"

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "detail/identifier.hpp"
#include "detail/status.hpp"
#include "fft/kernels/cufft_types.cuh.inc"
#include "fft/kernels/fft_callback_entry.cu.inc"
#include "fft/kernels/fft_pass.cu.inc"
#include "fft/kernels/fft_pass_params.hpp.inc"

namespace gpumath::detail {
namespace {

// The in-memory header that holds the user's callback (or its declaration) in both programs.
constexpr const char* callback_header = "gpumath_fft_callback.cuh";

bool is_double_element(DataType t) { return t == DataType::f64 || t == DataType::c64; }

// How the programs name each FFT element type; `pair` for f16/bf16 complex data.
struct ElementText {
    DataType element;
    const char* value;       // the pass kernel's element type
    const char* pair_value;  // ... for complex data (pairs), where it differs
    const char* half;        // the macro by which fft_pass.cu includes the type's header, or null
    const char* callback;    // cuFFT's callback value type; null: no callbacks
};

constexpr std::array<ElementText, 6> element_texts{{
    {DataType::f32, "float", nullptr, nullptr, "cufftReal"},
    {DataType::f64, "double", nullptr, nullptr, "cufftDoubleReal"},
    {DataType::c32, "float2", nullptr, nullptr, "cufftComplex"},
    {DataType::c64, "double2", nullptr, nullptr, "cufftDoubleComplex"},
    {DataType::f16, "__half", "__half2", "GM_FFT_FP16", nullptr},
    {DataType::bf16, "__nv_bfloat16", "__nv_bfloat162", "GM_FFT_BF16", nullptr},
}};

const ElementText* element_text(DataType element) noexcept {
    for (const ElementText& t : element_texts)
        if (t.element == element) return &t;
    return nullptr;
}

// `symbol` split at "::" (a leading "::" is dropped).
std::vector<std::string> split_qualified(const std::string& symbol) {
    std::vector<std::string> parts;
    std::string_view s = symbol;
    if (s.starts_with("::")) s.remove_prefix(2);
    while (true) {
        const auto pos = s.find("::");
        parts.emplace_back(s.substr(0, pos));
        if (pos == std::string_view::npos) break;
        s.remove_prefix(pos + 2);
    }
    return parts;
}

// The unqualified name a (possibly qualified) symbol ends in: "win" for "cb::win".
std::string_view last_component(std::string_view symbol) noexcept {
    const auto pos = symbol.rfind("::");
    return pos == std::string_view::npos ? symbol : symbol.substr(pos + 2);
}

// "#line 1" so compiler messages point into the user's own text.
std::string user_text(const FFTCallback& cb, FFTCallbackKind kind) {
    return fmt::format("#line 1 \"fft_{}_callback.cu\"\n{}\n", kind == FFTCallbackKind::load ? "prolog" : "epilog",
                       cb.source);
}

// Options every FFT program starts from; `callbacks` adds the stand-ins for cufft.h and cufftXt.h.
core::ProgramOptions base_options(const char* name, bool callbacks) {
    core::ProgramOptions o;
    o.name = name;
    o.std = "c++17";
    if (callbacks) {
        o.headers["cufft.h"] = std::string(embedded::fft_kernels_cufft_types_cuh);
        o.headers["cufftXt.h"] = std::string(embedded::fft_kernels_cufft_types_cuh);
    }
    return o;
}

// The entry program of `kind` for `element`, without the user's part.
FftProgram entry_program(const char* name, FFTCallbackKind kind, DataType element, const char* type) {
    FftProgram program{embedded::fft_kernels_fft_callback_entry_cu, base_options(name, true)};
    auto& defines = program.options.defines;
    defines.emplace("GM_FFT_VALUE", type);
    defines.emplace("GM_FFT_COMPLEX", is_complex(element) ? "1" : "0");
    if (kind == FFTCallbackKind::load) defines.emplace("GM_FFT_LOAD", "");
    return program;
}

}  // namespace

const char* fft_callback_entry_name(FFTCallbackKind kind) noexcept {
    return kind == FFTCallbackKind::load ? "gpumath_fft_load_entry" : "gpumath_fft_store_entry";
}

bool fft_callbacks_share_source(const FFTOptions& options) noexcept {
    return !options.prolog.source.empty() && options.prolog.source == options.epilog.source;
}

bool fft_callbacks_share_name(const FFTOptions& options) noexcept {
    return fft_callbacks_share_source(options) &&
           last_component(options.prolog.symbol) == last_component(options.epilog.symbol);
}

const char* fft_callback_value_type(DataType element, const char* api) {
    const ElementText* text = element_text(element);
    if (text != nullptr && text->callback != nullptr) return text->callback;
    throw_invalid(fmt::format("element: {} has no cuFFT callbacks; callbacks read or write c32, c64, f32 or f64 "
                              "elements",
                              gpumath::to_string(element)),
                  api);
}

std::string fft_literal(double v, bool single) {
    if (single) return fmt::format("{:a}f", static_cast<float>(v));
    return fmt::format("{:a}", v);
}

FftProgram fft_fused_callback_program(const FFTCallback& callback, FFTCallbackKind kind, DataType element, double scale,
                                      const std::string& rename) {
    const char* type = fft_callback_value_type(element, "gpumath::compile_fft_callback");
    std::string header;
    if (!rename.empty()) {
        // A macro renames the other function's own name, whatever namespace it is declared in; it
        // cannot rename that function alone when both end in the same name.
        const std::string_view other = last_component(rename);
        if (other == last_component(callback.symbol) || !is_identifier(other))
            throw_invalid(fmt::format("symbol: \"{}\" and \"{}\" come from one source and end in the same name, so "
                                      "the fused modules of that source cannot tell them apart; name the functions "
                                      "differently, or run them in CallbackMode::separate",
                                      callback.symbol, rename),
                          "gpumath::FFT");
        header = fmt::format("#define {0} gpumath_fft_renamed_{0}\n", other);
    }
    header += user_text(callback, kind);
    FftProgram program =
        entry_program(kind == FFTCallbackKind::load ? "fft_prolog" : "fft_epilog", kind, element, type);
    program.options.headers[callback_header] = std::move(header);
    program.options.defines["GM_FFT_CALLBACK"] = callback.symbol;
    if (kind == FFTCallbackKind::store && scale != 1.0)
        program.options.defines["GM_FFT_SCALE"] = fft_literal(scale, !is_double_element(element));
    return program;
}

FftProgram fft_scale_callback_program(DataType element, double scale) {
    const char* type = fft_callback_value_type(element, "gpumath::FFT");
    FftProgram program = entry_program("fft_scale_store", FFTCallbackKind::store, element, type);
    program.options.defines["GM_FFT_SCALE"] = fft_literal(scale, !is_double_element(element));
    return program;
}

std::string fft_callback_declaration(const FftPassSpec& spec) {
    const char* type = fft_callback_value_type(spec.element, "gpumath::FFT");
    const std::vector<std::string> parts = split_qualified(spec.callback->symbol);
    std::string decl =
        spec.kind == FFTCallbackKind::load
            ? fmt::format("__device__ {} {}(void* data, unsigned long long offset, void* info, void* shared);", type,
                          parts.back())
            : fmt::format(
                  "__device__ void {}(void* data, unsigned long long offset, {} element, void* info, "
                  "void* shared);",
                  parts.back(), type);
    if (spec.c_linkage) decl = fmt::format("extern \"C\" {}", decl);
    for (std::size_t i = parts.size() - 1; i-- > 0;) decl = fmt::format("namespace {} {{ {} }}", parts[i], decl);
    return decl + "\n";
}

FftProgram fft_pass_program(const FftPassSpec& spec) {
    const ElementText* text = element_text(spec.element);
    if (text == nullptr)
        throw_invalid(fmt::format("element: {} is not an FFT element type", gpumath::to_string(spec.element)),
                      "gpumath::FFT");
    const FFTCallback* cb = spec.callback;
    const bool load = spec.kind == FFTCallbackKind::load;
    const char* name = cb == nullptr       ? "fft_pass"
                       : spec.declare_only ? "fft_callback_pass"
                       : load              ? "fft_prolog_pass"
                                           : "fft_epilog_pass";
    FftProgram program{embedded::fft_kernels_fft_pass_cu, base_options(name, cb != nullptr)};
    core::ProgramOptions& o = program.options;
    o.headers["fft_pass_params.hpp"] = std::string(embedded::fft_kernels_fft_pass_params_hpp);
    const bool pairs = spec.pairs && text->pair_value != nullptr;
    o.defines.emplace("GM_FFT_VALUE", pairs ? text->pair_value : text->value);
    o.defines.emplace("GM_FFT_SCALAR", is_double_element(spec.element) ? "double" : "float");
    if (text->half != nullptr) o.defines.emplace(text->half, "");
    if (cb != nullptr) {
        (void)fft_callback_value_type(spec.element, "gpumath::FFT");
        o.headers[callback_header] = spec.declare_only ? fft_callback_declaration(spec) : user_text(*cb, spec.kind);
        o.defines.emplace(load ? "GM_FFT_LOAD_CALLBACK" : "GM_FFT_STORE_CALLBACK", cb->symbol);
    }
    return program;
}

}  // namespace gpumath::detail
