// SPDX-License-Identifier: Apache-2.0
// CUDA C++ generated for FFTs: callback entries for cuFFT and elementwise passes.
#include "fft/sources.hpp"

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "detail/identifier.hpp"
#include "detail/status.hpp"

namespace gpumath::detail {
namespace {

// cuFFT's callback types and typedefs, without its host API. Guarded so that including both
// cufft.h and cufftXt.h works.
constexpr std::string_view cufft_types = R"(#pragma once
#ifndef GPUMATH_FFT_CALLBACK_TYPES
#define GPUMATH_FFT_CALLBACK_TYPES
#include <cuComplex.h>
typedef float cufftReal;
typedef double cufftDoubleReal;
typedef cuComplex cufftComplex;
typedef cuDoubleComplex cufftDoubleComplex;
#define CUFFT_FORWARD -1
#define CUFFT_INVERSE 1
typedef enum cufftXtCallbackType_t {
    CUFFT_CB_LD_COMPLEX = 0x0,
    CUFFT_CB_LD_COMPLEX_DOUBLE = 0x1,
    CUFFT_CB_LD_REAL = 0x2,
    CUFFT_CB_LD_REAL_DOUBLE = 0x3,
    CUFFT_CB_ST_COMPLEX = 0x4,
    CUFFT_CB_ST_COMPLEX_DOUBLE = 0x5,
    CUFFT_CB_ST_REAL = 0x6,
    CUFFT_CB_ST_REAL_DOUBLE = 0x7,
    CUFFT_CB_UNDEFINED = 0x8
} cufftXtCallbackType;
typedef cufftComplex (*cufftJITCallbackLoadC)(void*, unsigned long long, void*, void*);
typedef cufftDoubleComplex (*cufftJITCallbackLoadZ)(void*, unsigned long long, void*, void*);
typedef cufftReal (*cufftJITCallbackLoadR)(void*, unsigned long long, void*, void*);
typedef cufftDoubleReal (*cufftJITCallbackLoadD)(void*, unsigned long long, void*, void*);
typedef void (*cufftJITCallbackStoreC)(void*, unsigned long long, cufftComplex, void*, void*);
typedef void (*cufftJITCallbackStoreZ)(void*, unsigned long long, cufftDoubleComplex, void*, void*);
typedef void (*cufftJITCallbackStoreR)(void*, unsigned long long, cufftReal, void*, void*);
typedef void (*cufftJITCallbackStoreD)(void*, unsigned long long, cufftDoubleReal, void*, void*);
#endif
)";

bool is_double_element(DataType t) { return t == DataType::f64 || t == DataType::c64; }

// How generated code names and scales each FFT element type; `pair` for f16/bf16 complex data.
struct ElementText {
    DataType element;
    const char* value;       // the pass kernel's element type
    const char* pair_value;  // ... for complex data (pairs), where it differs
    const char* scale;       // body of gm_scale(v, s)
    const char* pair_scale;  // ... for pairs
    const char* callback;    // cuFFT's callback value type; null: no callbacks
    const char* include;     // header the element type needs under NVRTC, or null
};

constexpr std::array<ElementText, 6> element_texts{{
    {DataType::f32, "float", nullptr, "return v * s;", nullptr, "cufftReal", nullptr},
    {DataType::f64, "double", nullptr, "return v * s;", nullptr, "cufftDoubleReal", nullptr},
    {DataType::c32, "float2", nullptr, "return make_float2(v.x * s, v.y * s);", nullptr, "cufftComplex", nullptr},
    {DataType::c64, "double2", nullptr, "return make_double2(v.x * s, v.y * s);", nullptr, "cufftDoubleComplex",
     nullptr},
    {DataType::f16, "__half", "__half2", "return __float2half_rn(__half2float(v) * s);",
     "return __floats2half2_rn(__low2float(v) * s, __high2float(v) * s);", nullptr, "cuda_fp16.h"},
    {DataType::bf16, "__nv_bfloat16", "__nv_bfloat162", "return __float2bfloat16_rn(__bfloat162float(v) * s);",
     "return __floats2bfloat162_rn(__low2float(v) * s, __high2float(v) * s);", nullptr, "cuda_bf16.h"},
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

std::string parameter_list(FFTCallbackKind kind, const char* value_type) {
    if (kind == FFTCallbackKind::load) return "void* data, unsigned long long offset, void* info, void* shared";
    return fmt::format("void* data, unsigned long long offset, {} element, void* info, void* shared", value_type);
}

// "#line 1" so compiler messages point into the user's own text.
std::string user_text(const FFTCallback& cb, FFTCallbackKind kind) {
    return fmt::format("#line 1 \"fft_{}_callback.cu\"\n{}\n", kind == FFTCallbackKind::load ? "prolog" : "epilog",
                       cb.source);
}

// Multiplies `var` (of the callback value type) by `lit` in place.
std::string scale_statement(DataType element, const std::string& var, const std::string& lit) {
    if (is_complex(element)) return fmt::format("{0}.x *= {1}; {0}.y *= {1};", var, lit);
    return fmt::format("{} *= {};", var, lit);
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

const std::map<std::string, std::string>& fft_callback_headers() {
    static const std::map<std::string, std::string> headers = {
        {"cufft.h", std::string(cufft_types)},
        {"cufftXt.h", "#pragma once\n#include \"cufft.h\"\n"},
    };
    return headers;
}

std::string fft_literal(double v, bool single) {
    if (single) return fmt::format("{:a}f", static_cast<float>(v));
    return fmt::format("{:a}", v);
}

std::string fft_fused_callback_source(const FFTCallback& callback, FFTCallbackKind kind, DataType element, double scale,
                                      const std::string& rename) {
    const char* type = fft_callback_value_type(element, "gpumath::compile_fft_callback");
    std::string s = "#include <cufftXt.h>\n";
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
        s += fmt::format("#define {0} gpumath_fft_renamed_{0}\n", other);
    }
    s += user_text(callback, kind);
    s += "#line 1 \"gpumath_fft_callback_entry\"\n";
    const char* entry = fft_callback_entry_name(kind);
    if (kind == FFTCallbackKind::load) {
        s += fmt::format("__device__ {} {}({}) {{ return {}(data, offset, info, shared); }}\n", type, entry,
                         parameter_list(kind, type), callback.symbol);
    } else {
        const std::string scaling =
            scale == 1.0 ? std::string()
                         : scale_statement(element, "element", fft_literal(scale, !is_double_element(element)));
        s += fmt::format("__device__ void {}({}) {{ {} {}(data, offset, element, info, shared); }}\n", entry,
                         parameter_list(kind, type), scaling, callback.symbol);
    }
    return s;
}

std::string fft_scale_callback_source(DataType element, double scale) {
    const char* type = fft_callback_value_type(element, "gpumath::FFT");
    return fmt::format(
        "#include <cufftXt.h>\n"
        "__device__ void {}({}) {{ {} static_cast<{}*>(data)[offset] = element; }}\n",
        fft_callback_entry_name(FFTCallbackKind::store), parameter_list(FFTCallbackKind::store, type),
        scale_statement(element, "element", fft_literal(scale, !is_double_element(element))), type);
}

std::string fft_pass_source(const FftPassSpec& spec) {
    const bool single = !is_double_element(spec.element);
    const ElementText* text = element_text(spec.element);
    if (text == nullptr)
        throw_invalid(fmt::format("element: {} is not an FFT element type", gpumath::to_string(spec.element)),
                      "gpumath::FFT");
    const bool pairs = spec.pairs && text->pair_value != nullptr;
    const char* value = pairs ? text->pair_value : text->value;
    const char* scale_fn = pairs ? text->pair_scale : text->scale;
    const char* scalar = single ? "float" : "double";

    std::string s;
    if (text->include != nullptr) s += fmt::format("#include <{}>\n", text->include);

    std::string load = "return static_cast<const gm_t*>(base)[o];";
    std::string store = "static_cast<gm_t*>(base)[o] = v;";
    if (spec.callback != nullptr) {
        const FFTCallback& cb = *spec.callback;
        const char* type = fft_callback_value_type(spec.element, "gpumath::FFT");
        s += "#include <cufftXt.h>\n";
        if (spec.declare_only) {
            const std::vector<std::string> parts = split_qualified(cb.symbol);
            std::string decl = fmt::format("__device__ {} {}({});", spec.kind == FFTCallbackKind::load ? type : "void",
                                           parts.back(), parameter_list(spec.kind, type));
            if (spec.c_linkage) decl = "extern \"C\" " + decl;
            for (std::size_t i = parts.size() - 1; i-- > 0;)
                decl = fmt::format("namespace {} {{ {} }}", parts[i], decl);
            s += decl + "\n";
        } else {
            s += user_text(cb, spec.kind);
        }
        if (spec.kind == FFTCallbackKind::load)
            load = fmt::format("return {}(const_cast<void*>(base), static_cast<unsigned long long>(o), info, nullptr);",
                               cb.symbol);
        else store = fmt::format("{}(base, static_cast<unsigned long long>(o), v, info, nullptr);", cb.symbol);
    }

    s += "#line 1 \"gpumath_fft_pass\"\n";
    s += fmt::format(R"(typedef {0} gm_t;
typedef {1} gm_s;
struct gm_fft_pass {{
    int rank;
    long long extent[8];
    long long src[8];
    long long dst[8];
    long long total;
}};
static __device__ __forceinline__ gm_t gm_scale(gm_t v, gm_s s) {{ {2} }}
static __device__ __forceinline__ gm_t gm_load(const void* base, long long o, void* info) {{ {3} }}
static __device__ __forceinline__ void gm_store(void* base, long long o, gm_t v, void* info) {{ {4} }}
extern "C" __global__ void __launch_bounds__(256)
gpumath_fft_pass(const void* src, void* dst, gm_fft_pass g, gm_s scale, void* info) {{
    long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
    if (g.rank == 1) {{
        const long long ss = g.src[0], ds = g.dst[0];
        for (; i < g.total; i += step) gm_store(dst, i * ds, gm_scale(gm_load(src, i * ss, info), scale), info);
        return;
    }}
    for (; i < g.total; i += step) {{
        long long rem = i, so = 0, dof = 0;
#pragma unroll
        for (int d = 7; d >= 0; --d) {{
            if (d < g.rank) {{
                const long long e = g.extent[d];
                const long long q = rem / e;
                const long long k = rem - q * e;
                rem = q;
                so += k * g.src[d];
                dof += k * g.dst[d];
            }}
        }}
        gm_store(dst, dof, gm_scale(gm_load(src, so, info), scale), info);
    }}
}}
)",
                     value, scalar, scale_fn, load, store);
    return s;
}

}  // namespace gpumath::detail
