// SPDX-License-Identifier: Apache-2.0
#include "fuzz/targets/seeds.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gpumath/core.hpp>
#include <gpumath/matmul/options.hpp>

#include "core/jit.hpp"
#include "fuzz/targets/fuzz_inputs.hpp"
#include "matmul/call.hpp"
#include "matmul/tuning.hpp"

namespace gpumath::fuzz {

namespace {

namespace fs = std::filesystem;
using core::CodeType;

// Kernels, a device function called across programs, global data and a call graph.
constexpr const char* k_source = R"(
__device__ float table[64] = {1, 2, 3, 4};
__device__ float helper(float v) { return 2.0f * v + table[3]; }
extern "C" __global__ void scale(float* x, float s, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = helper(x[i]) * s + table[i & 63];
}
extern "C" __global__ void twice(double* x) {
    __shared__ double tile[128];
    tile[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = 2.0 * tile[127 - threadIdx.x];
}
)";

std::string bytes_of(const core::ObjectCode& code) { return {code.text().data(), code.text().size()}; }

std::string compiled(CodeType type, bool relocatable, bool debug = false) {
    core::ProgramOptions options;
    options.name = "seed";
    options.arch = "sm_90";
    options.relocatable = relocatable;
    options.debug = debug;
    return bytes_of(core::Program(k_source, options).compile(type));
}

struct Images {
    std::string whole_cubin, relocatable_cubin, debug_cubin, linked_cubin, whole_ptx, relocatable_ptx, ltoir;
};

const Images& images() {
    static const Images i = [] {
        Images m;
        m.whole_cubin = compiled(CodeType::cubin, false);
        m.relocatable_cubin = compiled(CodeType::cubin, true);
        m.debug_cubin = compiled(CodeType::cubin, true, true);
        m.whole_ptx = compiled(CodeType::ptx, false);
        m.relocatable_ptx = compiled(CodeType::ptx, true);
        m.ltoir = compiled(CodeType::ltoir, true);
        m.linked_cubin = bytes_of(core::Linker({.arch = "sm_90"})
                                      .add(core::ObjectCode::from_bytes(m.relocatable_cubin, CodeType::cubin, "sm_90"))
                                      .link());
        return m;
    }();
    return i;
}

// A fatbin of `parts` (fatbinary kind, bytes) made by the toolkit's fatbinary with `options`;
// empty without the tool.
std::string fatbin(const std::vector<std::pair<const char*, const std::string*>>& parts, const char* options) {
#ifdef GPUMATH_TEST_FATBINARY
    std::random_device rd;
    const fs::path dir = fs::temp_directory_path() / ("gpumath-fuzz-seeds-" + std::to_string(rd()));
    fs::create_directories(dir);
    std::string command = std::string("\"") + GPUMATH_TEST_FATBINARY + "\" --create=\"" + (dir / "f").string() + "\"";
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const fs::path file = dir / std::to_string(i);
        std::ofstream(file, std::ios::binary) << *parts[i].second;
        command += std::string(" --image3=kind=") + parts[i].first + ",sm=90,file=\"" + file.string() + "\"";
    }
    command += std::string(" ") + options + " >/dev/null 2>&1";
    std::string out;
    if (std::system(command.c_str()) == 0) {
        std::ifstream in(dir / "f", std::ios::binary);
        out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
    return out;
#else
    (void)parts;
    (void)options;
    return {};
#endif
}

const std::vector<std::string>& fatbins() {
    static const std::vector<std::string> all = [] {
        const Images& m = images();
        std::vector<std::string> out;
        for (const char* options : {"--compress=false", "", "--compress-all --compress-mode=speed", "--compress-all"}) {
            out.push_back(fatbin({{"elf", &m.whole_cubin}, {"ptx", &m.whole_ptx}}, options));
            out.push_back(fatbin({{"elf", &m.relocatable_cubin}, {"ptx", &m.relocatable_ptx}}, options));
            out.push_back(fatbin({{"nvvm", &m.ltoir}}, options));
        }
        std::erase_if(out, [](const std::string& f) { return f.empty(); });
        return out;
    }();
    return all;
}

// The compressed images of a fatbin whose entries carry `flag` (0x2000 LZ4, 0x8000 Zstandard), each
// as a target input: the u32 declared size, then the compressed bytes.
std::vector<std::string> compressed_images(std::uint64_t flag) {
    std::vector<std::string> out;
    for (const std::string& f : fatbins()) {
        const auto get = [&](std::size_t at, auto v) {
            std::memcpy(&v, f.data() + at, sizeof v);
            return v;
        };
        const std::size_t end = get(6, std::uint16_t{}) + get(8, std::uint64_t{});
        for (std::size_t at = get(6, std::uint16_t{}); at + 64 <= end && end <= f.size();
             at += get(at + 4, std::uint32_t{}) + get(at + 8, std::uint64_t{})) {
            if ((get(at + 0x28, std::uint64_t{}) & 0x1f000) != flag) continue;
            const auto size = std::uint32_t(get(at + 0x38, std::uint64_t{}));
            std::string input(reinterpret_cast<const char*>(&size), 4);
            input.append(f, at + get(at + 4, std::uint32_t{}), get(at + 0x10, std::uint32_t{}));
            out.push_back(std::move(input));
        }
    }
    return out;
}

std::vector<std::string> cache_entries() {
    detail::ObjectCodeData d;
    d.type = CodeType::cubin;
    d.arch = "sm_90";
    d.name = cache_entry_name;
    d.log = "warning: a log";
    d.bytes = images().whole_cubin;
    const std::string entry = detail::encode_entry(cache_entry_key(), d);
    d.lowered_names = {{"scale", "scale"}, {"twice", "twice"}};
    return {"\x01" + entry, std::string(1, '\0') + entry, "\x01" + detail::encode_entry(cache_entry_key(), d)};
}

std::vector<std::string> tuning_files() {
    const detail::TuningHost& host = tuning_host();
    std::string text = "# gpumath matmul tuning v1\n";
    for (int i = 0; i < 3; ++i) {
        detail::MatmulSignature s;
        s.a = TensorLayout(DataType::f32, {3, 8 + i, 4});
        s.b = TensorLayout(DataType::f32, {4, 6});
        s.d = TensorLayout(DataType::f32, {3, 8 + i, 6});
        s.align[detail::slot_b] = 16;
        cublasLtMatmulAlgo_t algo{};
        for (std::size_t w = 0; w < 8; ++w) algo.data[w] = 0x0123456789abcdefULL * (w + 1) + std::uint64_t(i);
        const std::string key = detail::key_to_text(detail::make_key(s.call(), {.epilog = Epilog::relu}, -1));
        text += host.name + "\t" + host.cc + "\t" + host.version + "\t" + key + "\t" + detail::algo_to_hex(algo) +
                "\t0\t0.5\n";
    }
    return {text, "NVIDIA A100\t8.0\t120000\t00\t00\n"};
}

std::vector<std::string> dlpack_inputs() {
    std::vector<std::string> out;
    DLPackInput in;
    in.ndim = 2;
    in.code = 2;  // kDLFloat
    in.bits = 32;
    in.lanes = 1;
    in.device_type = 1;  // kDLCPU
    in.data = 4096;
    in.shape = {3, 4};
    out.push_back(write_dlpack_input(in));
    in.has_strides = true;
    in.strides = {1, 3};  // column-major
    out.push_back(write_dlpack_input(in));
    in.device_type = 2;  // kDLCUDA
    in.byte_offset = 256;
    out.push_back(write_dlpack_input(in));
    in = {};
    in.ndim = 0;
    in.code = 0;  // kDLInt
    in.bits = 8;
    in.lanes = 1;
    in.device_type = 1;
    in.data = 64;
    out.push_back(write_dlpack_input(in));
    in.ndim = 3;
    in.code = 4;  // kDLBfloat
    in.bits = 16;
    in.shape = {2, 0, 5};
    in.has_strides = true;
    in.strides = {0, 5, 1};
    out.push_back(write_dlpack_input(in));
    return out;
}

}  // namespace

std::vector<std::string> seeds(std::string_view name) {
    const Images& m = images();
    if (name == "fatbin") return fatbins();
    if (name == "elf") return {m.whole_cubin, m.relocatable_cubin, m.debug_cubin, m.linked_cubin};
    if (name == "ptx") return {m.whole_ptx, m.relocatable_ptx};
    if (name == "lz4") return compressed_images(0x2000);
    if (name == "zstd") return compressed_images(0x8000);
    if (name == "compile_cache") return cache_entries();
    if (name == "tuning") return tuning_files();
    if (name == "linalg_choices")
        return {"# gpumath linalg backend choices 1\nNVIDIA_H100_80GB_HBM3\teigh\tf32\t100\t500\tbatched\n",
                "# gpumath linalg backend choices 1\nNVIDIA_H200\tcholesky\tf64\t3\t512\twarp\n"
                "NVIDIA_H200\tsvd thin m=16\tc32\t16\t1000\tjacobi\n\nNVIDIA_H200\tlu\tc64\t33\t128\tlooped\n",
                "# gpumath linalg backend choices 1\n"};
    if (name == "dlpack") return dlpack_inputs();
    if (name == "ld_so_cache") {
        std::ifstream in("/etc/ld.so.cache", std::ios::binary);
        const std::string cache{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        if (cache.empty()) return {};
        std::vector<std::string> out;
        for (const std::string library : {"libzstd.so.1", "libc.so.6", "libm.so.6"})
            out.push_back(std::string(1, char(library.size())) + library + cache);
        return out;
    }
    if (name == "environment")
        return {"256M\nwarn\n/tmp/cache\n/home/u/.cache\n/home/u\n64", "1GiB\ndebug\noff\n\n/root\n12K",
                "18446744073709551615\nINFO\n\n/xdg\n\n0x10"};
    return {};
}

}  // namespace gpumath::fuzz
