// SPDX-License-Identifier: Apache-2.0
// Fatbins and their compressed images: gpumath's decoders against other encoders' output, the
// check every entry's image gets (the same as the code given alone), compression flags, the
// decompression limits, and damage anywhere in real fatbins refused or linked, never a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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
using test::bytes_of;
using test::get;
using test::with;

namespace {

constexpr const char* k_callee_kernel = "extern \"C\" __global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }\n";
constexpr const char* k_caller = R"(
__device__ float twice(float v);
extern "C" __global__ void apply(float* x) { x[threadIdx.x] = twice(x[threadIdx.x]) + 1.0f; }
)";
constexpr const char* k_callee = "__device__ float twice(float v) { return 2.0f * v; }\n";

ObjectCode relocatable(const char* src, CodeType t) {
    return Program(src, {.arch = "sm_90", .relocatable = true}).compile(t);
}
const ObjectCode& caller_lto() {
    static const ObjectCode c = relocatable(k_caller, CodeType::ltoir);
    return c;
}
const ObjectCode& callee_lto() {
    static const ObjectCode c = relocatable(k_callee, CodeType::ltoir);
    return c;
}
const std::string& whole_cubin() {
    static const std::string c = bytes_of(Program(k_callee_kernel, {.arch = "sm_90"}).compile(CodeType::cubin));
    return c;
}
const std::string& whole_ptx() {
    static const std::string c = bytes_of(Program(k_callee_kernel, {.arch = "sm_90"}).compile(CodeType::ptx));
    return c;
}

// The offsets of a fatbin's entry headers.
std::vector<std::size_t> entry_offsets(const std::string& fatbin) {
    std::vector<std::size_t> at;
    const std::size_t end = get<std::uint16_t>(fatbin, 6) + get<std::uint64_t>(fatbin, 8);
    for (std::size_t e = get<std::uint16_t>(fatbin, 6); e < end;
         e += get<std::uint32_t>(fatbin, e + 4) + get<std::uint64_t>(fatbin, e + 8))
        at.push_back(e);
    return at;
}

// Restores the process's decompression limits when a test changed them.
class LimitsGuard {
public:
    LimitsGuard() : saved_(core::decompression_limits()) {}
    ~LimitsGuard() { core::set_decompression_limits(saved_); }
    LimitsGuard(const LimitsGuard&) = delete;
    LimitsGuard& operator=(const LimitsGuard&) = delete;

private:
    core::DecompressionLimits saved_;
};

void expect_refused(const std::string& bytes, std::initializer_list<std::string> needles) {
    std::vector<std::string> all{"ObjectCode::from_bytes", "bytes: not a well-formed fatbin"};
    all.insert(all.end(), needles);
    test::expect_throw_with<InvalidArgument>([&] { (void)ObjectCode::from_bytes(bytes, CodeType::fatbin); }, all);
}

#define GPUMATH_NEED_FATBIN(fatbin) \
    if ((fatbin).empty()) GTEST_SKIP() << "the CUDA toolkit's fatbinary tool was not found at build time"

}  // namespace

namespace {

std::string from_hex(std::string_view hex) {
    std::string out;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
        out.push_back(char(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
    return out;
}

// 900 bytes of PTX-like text and its LZ4 block and Zstandard frame, as python-lz4 (4.x,
// high-compression mode, no stored size) and python-zstandard (level 19) wrote them: references
// from other encoders for gpumath's decoders.
std::string repeated_text() {
    std::string s;
    for (int i = 0; i < 20; ++i) s += ".visible .entry k" + std::to_string(i % 7) + "(.param .u64 p)\n{\n  ret;\n}\n";
    return s;
}
constexpr std::string_view k_lz4_text =
    "fd1e2e76697369626c65202e656e747279206b30282e706172616d202e7536342070290a7b0a20207265743b0a7d0a2d001f312d00191f"
    "322d00191f332d00191f342d00191f352d00191f362d00080f3b01ffff3350743b0a7d0a";
constexpr std::string_view k_zstd_text =
    "28b52ffd60840265020034032e76697369626c65202e656e747279206b30282e706172616d202e7536342070290a7b0a20207265743b0a"
    "7d0a3132333435360800467c560520bc80c902a604cc0b982c608ac2599501";
// 300 'x', the 36 digits and letters, 17 'y': matches that overlap their own output (offset 1)
// with lengths continued past the token's nibble.
std::string runs_text() {
    return std::string(300, 'x') + "0123456789abcdefghijklmnopqrstuvwxyz" + std::string(17, 'y');
}
constexpr std::string_view k_lz4_runs =
    "1f780100ff19f716303132333435363738396162636465666768696a6b6c6d6e6f707172737475767778797a790100507979797979";

// The flags (u64 at 0x28 of each entry header) of a fatbin's entries.
std::vector<std::uint64_t> entry_flags(const std::string& fatbin) {
    std::vector<std::uint64_t> flags;
    const std::size_t end = get<std::uint16_t>(fatbin, 6) + get<std::uint64_t>(fatbin, 8);
    for (std::size_t at = get<std::uint16_t>(fatbin, 6); at < end;
         at += get<std::uint32_t>(fatbin, at + 4) + get<std::uint64_t>(fatbin, at + 8))
        flags.push_back(get<std::uint64_t>(fatbin, at + 0x28));
    return flags;
}

}  // namespace

TEST(FatbinImages, Lz4BlocksDecodeAsAnotherEncoderWroteThem) {
    if (!detail::lz4_available()) GTEST_SKIP() << "liblz4.so.1 could not be loaded";
    EXPECT_EQ(detail::lz4_block_decompress(from_hex(k_lz4_text), 900), repeated_text());
    EXPECT_EQ(detail::lz4_block_decompress(from_hex(k_lz4_runs), 353), runs_text());
    // A block of literals only.
    EXPECT_EQ(detail::lz4_block_decompress(std::string("\x30", 1) + "abc", 3), "abc");
}

TEST(FatbinImages, DamagedLz4BlocksGiveNothing) {
    if (!detail::lz4_available()) GTEST_SKIP() << "liblz4.so.1 could not be loaded";
    const std::string text = from_hex(k_lz4_text);
    // Another size than the block makes, either way.
    EXPECT_FALSE(detail::lz4_block_decompress(text, 899));
    EXPECT_FALSE(detail::lz4_block_decompress(text, 901));
    // Cut anywhere: inside a length, the literals, an offset or before the last sequence.
    for (std::size_t cut = 0; cut < text.size(); ++cut)
        EXPECT_FALSE(detail::lz4_block_decompress(text.substr(0, cut), 900)) << "cut at " << cut;
    // Offsets of 0 and before the output's start; a literal length that runs past the input; a
    // length continued by 255s to the end of the input.
    EXPECT_FALSE(detail::lz4_block_decompress(std::string("\x10"
                                                          "a\x00\x00\x00",
                                                          5),
                                              8));
    EXPECT_FALSE(detail::lz4_block_decompress(std::string("\x10"
                                                          "a\x02\x00\x00",
                                                          5),
                                              8));
    EXPECT_FALSE(detail::lz4_block_decompress(std::string("\x50"
                                                          "ab",
                                                          3),
                                              5));
    EXPECT_FALSE(detail::lz4_block_decompress(std::string("\xf0") + std::string(64, '\xff'), 1 << 20));
    EXPECT_FALSE(detail::lz4_block_decompress({}, 0));
    // Every single damaged byte: nothing or an image of the declared size, never a fault.
    for (std::size_t i = 0; i < text.size(); ++i)
        for (const int flip : {0x01, 0x10, 0x80, 0xff}) {
            std::string damaged = text;
            damaged[i] = char(damaged[i] ^ flip);
            const auto got = detail::lz4_block_decompress(damaged, 900);
            if (got) {
                EXPECT_EQ(got->size(), 900U);
            }
        }
}

TEST(FatbinImages, ZstandardFramesDecodeThroughLibzstd) {
    if (!detail::zstd_available()) GTEST_SKIP() << "libzstd.so.1 could not be loaded";
    const std::string frame = from_hex(k_zstd_text);
    EXPECT_EQ(detail::zstd_decompress(frame, 900), repeated_text());
    EXPECT_FALSE(detail::zstd_decompress(frame, 899));
    EXPECT_FALSE(detail::zstd_decompress(frame, 901));
    EXPECT_FALSE(detail::zstd_decompress(frame.substr(0, frame.size() - 1), 900));
    EXPECT_FALSE(detail::zstd_decompress(from_hex(k_lz4_text), 900));
}

TEST(FatbinImages, SymbolsOfCompressedImagesAreReadAndTheirDuplicatesRefused) {
    const std::string& cubin = whole_cubin();
    const std::string& ptx = whole_ptx();
    // fatbinary's "speed" mode writes LZ4 blocks, its default Zstandard frames.
    const std::pair<const char*, std::uint64_t> modes[] = {{"speed", 0x2000}, {"default", 0x8000}};
    for (const auto& [mode, flag] : modes) {
        SCOPED_TRACE(mode);
        const std::string fatbin = test::fatbin_of(cubin, ptx, std::string("--compress-all --compress-mode=") + mode);
        if (fatbin.empty()) GTEST_SKIP() << "the CUDA toolkit's fatbinary tool was not found at build time";
        const std::vector<std::uint64_t> flags = entry_flags(fatbin);
        ASSERT_EQ(flags.size(), 2U);
        for (const std::uint64_t f : flags) EXPECT_EQ(f & 0xa000U, flag) << "both images compressed this way";
        if (flag == 0x8000 && !detail::zstd_available()) continue;
        if (flag == 0x2000 && !detail::lz4_available()) continue;
        EXPECT_EQ(detail::fatbin_defined_symbols(fatbin), std::vector<std::string>{"twice"});
        (void)Linker().add(caller_lto()).add(callee_lto()).link();  // nvJitLink crashed after an LTO link
        const ObjectCode fat = ObjectCode::from_bytes(fatbin, CodeType::fatbin);
        test::expect_throw_with<InvalidArgument>(
            [&] { (void)Linker({.arch = "sm_90"}).add(ObjectCode::from_bytes(ptx, CodeType::ptx)).add(fat).link(); },
            {"inputs[1]", "(fatbin) defines 'twice'", "inputs[0]"});
        // Alone, it links.
        EXPECT_NO_THROW((void)Linker({.arch = "sm_90"}).add(fat).link());
    }
}

TEST(FatbinImages, ImagesThatCompressManyTimesOverAreRead) {
    // A 64 KiB table of one value: its PTX compresses hundreds of times over with Zstandard.
    const std::string source = "__device__ int lut[16384] = {" + [] {
        std::string v;
        for (int i = 0; i < 16384; ++i) v += i == 0 ? "7" : ",7";
        return v;
    }() + "};\nextern \"C\" __global__ void twice(int* p) { p[threadIdx.x] = lut[p[threadIdx.x]]; }\n";
    const std::string cubin =
        bytes_of(Program(source, {.arch = "sm_90", .relocatable = true}).compile(CodeType::cubin));
    const std::string ptx = bytes_of(Program(source, {.arch = "sm_90", .relocatable = true}).compile(CodeType::ptx));
    for (const char* mode : {"speed", "default"}) {
        SCOPED_TRACE(mode);
        const std::string fatbin = test::fatbin_of(cubin, ptx, std::string("--compress-all --compress-mode=") + mode);
        if (fatbin.empty()) GTEST_SKIP() << "the CUDA toolkit's fatbinary tool was not found at build time";
        if (std::string(mode) == "speed" && !detail::lz4_available()) continue;
        if (std::string(mode) == "default") {
            if (!detail::zstd_available()) continue;
            // The PTX image (the second entry) is over 256 times its compressed size.
            const std::size_t second = 16 + get<std::uint32_t>(fatbin, 16 + 4) + get<std::uint64_t>(fatbin, 16 + 8);
            EXPECT_GT(get<std::uint64_t>(fatbin, second + 0x38), 256 * get<std::uint32_t>(fatbin, second + 0x10));
        }
        std::vector<std::string> got = detail::fatbin_defined_symbols(fatbin);
        std::sort(got.begin(), got.end());
        EXPECT_EQ(got, (std::vector<std::string>{"lut", "twice"}));
    }
}

TEST(FatbinImages, SmallBlocksDeclaringLargeImagesGiveNothing) {
    // Checked before the output is allocated: these would otherwise take a gigabyte each.
    const std::size_t gigabyte = std::size_t(1) << 30;
    EXPECT_FALSE(detail::lz4_block_decompress(from_hex(k_lz4_text), gigabyte));
    EXPECT_FALSE(detail::lz4_block_decompress(std::string("\x30", 1) + "abc", gigabyte));
    if (detail::zstd_available()) {
        EXPECT_FALSE(detail::zstd_decompress(from_hex(k_zstd_text), gigabyte));
    }
}

namespace {

// fatbinary's modes: the ELF image uncompressed (the default compresses PTX only), then both
// images as LZ4 blocks and as Zstandard frames.
struct Mode {
    const char* options;
    const char* elf_codec;  // how the first entry (the ELF image) is described in messages
};
constexpr Mode k_modes[] = {{"", "ELF)"},
                            {"--compress-all --compress-mode=speed", "ELF, LZ4-compressed)"},
                            {"--compress-all", "ELF, Zstandard-compressed)"}};

bool zstd_mode(const Mode& m) { return std::string_view(m.elf_codec).find("Zstandard") != std::string_view::npos; }

// Whether this machine lacks the library that decodes `m`'s images (the tests of that mode skip).
bool decoder_missing(const Mode& m) {
    const std::string_view codec(m.elf_codec);
    return (zstd_mode(m) && !detail::zstd_available()) ||
           (codec.find("LZ4") != std::string_view::npos && !detail::lz4_available());
}

// A zstd frame of `blocks` RLE blocks of 128 KiB each of one byte, declaring its size: a few bytes
// per block that decode to 2^17 (what a decompression bomb looks like).
std::string rle_frame(std::uint64_t blocks) {
    std::string f("\x28\xb5\x2f\xfd", 4);
    f.push_back(char(0xe0));  // 8-byte content size, single segment
    const std::uint64_t size = blocks << 17;
    f.append(reinterpret_cast<const char*>(&size), 8);
    for (std::uint64_t b = 0; b < blocks; ++b) {
        const std::uint32_t header = (std::uint32_t(1) << 17) << 3 | 1u << 1 | (b + 1 == blocks ? 1u : 0u);
        f.append(reinterpret_cast<const char*>(&header), 3);
        f.push_back('\x5a');
    }
    return f;
}

// A fatbin of `count` copies of the first entry of `model` (a Zstandard-compressed ELF entry), each
// holding `frame` as its compressed image.
std::string fatbin_with_frames(const std::string& model, const std::string& frame, int count) {
    const std::size_t first = get<std::uint16_t>(model, 6);
    std::string header = model.substr(first, get<std::uint32_t>(model, first + 4));
    header = with(header, 8, std::uint64_t(frame.size()));
    header = with(header, 0x10, std::uint32_t(frame.size()));
    std::uint64_t declared = 0;
    std::memcpy(&declared, frame.data() + 5, 8);
    header = with(header, 0x38, declared);
    std::string entries;
    for (int i = 0; i < count; ++i) entries += header + frame;
    std::string out = model.substr(0, first);
    out = with(out, 8, std::uint64_t(entries.size()));
    return out + entries;
}

}  // namespace

TEST(FatbinEntries, EveryImageGetsTheCheckOfTheSameCodeGivenAlone) {
    const std::string& cubin = whole_cubin();
    const auto shoff = get<std::uint64_t>(cubin, 0x28);
    std::string random_tail = cubin.substr(0, 64);
    std::mt19937 rng(20261207);
    while (random_tail.size() < cubin.size()) random_tail.push_back(char(rng()));
    const std::vector<std::pair<const char*, std::string>> elves = {
        {"section table offset past the end", with(cubin, 0x28, std::uint64_t(cubin.size() + 64))},
        {"section count past the end", with(cubin, 0x3c, std::uint16_t(0x7fff))},
        {"truncated after its header", cubin.substr(0, 64)},
        {"a section's size past the end", with(cubin, std::size_t(shoff) + 2 * 64 + 0x20, std::uint64_t(1) << 40)},
        {"random bytes after a valid header", random_tail},
    };
    for (const Mode& mode : k_modes) {
        if (decoder_missing(mode)) continue;
        for (const auto& [what, elf] : elves) {
            SCOPED_TRACE(std::string(what) + " / " + mode.options);
            const std::string defect = detail::cubin_defect(elf);
            ASSERT_NE(defect, "") << "given alone, the image is refused as a cubin";
            const std::string fatbin = test::fatbin_of_images({{"elf", elf}, {"ptx", whole_ptx()}}, mode.options);
            GPUMATH_NEED_FATBIN(fatbin);
            expect_refused(fatbin, {std::string("entry 0 at offset 16 (") + mode.elf_codec, defect});
        }
    }
}

TEST(FatbinEntries, PtxAndLtoIrImagesGetTheirChecksToo) {
    // Uncompressed images, damaged in place: a NUL inside the PTX, LTO-IR without its magic.
    const std::string fatbin = test::fatbin_of(whole_cubin(), whole_ptx(), "--compress=false");
    GPUMATH_NEED_FATBIN(fatbin);
    const std::size_t ptx_entry = entry_offsets(fatbin).at(1);
    const std::size_t ptx_at = ptx_entry + get<std::uint32_t>(fatbin, ptx_entry + 4);
    std::string nul = fatbin;
    nul[ptx_at + 20] = '\0';
    expect_refused(nul, {"entry 1 at offset", "(PTX)", "PTX with a NUL byte at offset 20"});

    const std::string ir = bytes_of(callee_lto());
    const std::string lto = test::fatbin_of_images({{"nvvm", ir}}, "--compress=false");
    GPUMATH_NEED_FATBIN(lto);
    const std::size_t ir_at = 16 + get<std::uint32_t>(lto, 16 + 4);
    ASSERT_EQ(lto.substr(ir_at, 4), ir.substr(0, 4));
    EXPECT_NO_THROW((void)ObjectCode::from_bytes(lto, CodeType::fatbin));
    expect_refused(with(lto, ir_at, std::uint32_t(0x12345678)), {"entry 0 at offset 16 (LTO-IR)", "magic 0x7f4e43ed"});
    // The same checks given alone.
    test::expect_throw_with<InvalidArgument>(
        [&] { (void)ObjectCode::from_bytes(with(ir, 0, std::uint32_t(0x12345678)), CodeType::ltoir); },
        {"bytes: not a well-formed ltoir", "magic 0x7f4e43ed"});
}

TEST(FatbinEntries, CompressionFlagsNameOneKnownCodec) {
    const std::string fatbin = test::fatbin_of(whole_cubin(), whole_ptx(), "--compress-all --compress-mode=speed");
    GPUMATH_NEED_FATBIN(fatbin);
    const auto flags = get<std::uint64_t>(fatbin, 16 + 0x28);
    ASSERT_EQ(flags & 0xf000, 0x2000U);
    EXPECT_NO_THROW((void)ObjectCode::from_bytes(fatbin, CodeType::fatbin));
    // An older codec of NVIDIA's (0x1000), unassigned bits, and several codecs at once: refused,
    // never taken for uncompressed bytes or skipped.
    for (const std::uint64_t bits : {0x1000, 0x4000, 0x3000, 0xa000, 0xf000}) {
        SCOPED_TRACE(bits);
        expect_refused(with(fatbin, 16 + 0x28, (flags & ~std::uint64_t(0xf000)) | bits),
                       {"entry 0 at offset 16 has flags", fmt::format("compression bits 0x{:x}", bits)});
    }
    // The mark of LTO-IR that fatbinary compressed for nvJitLink alone, on an ELF entry.
    expect_refused(with(fatbin, 16 + 0x28, flags | 0x10000), {"entry 0 at offset 16 is of kind ELF", "only on LTO-IR"});
}

TEST(FatbinEntries, HeaderFieldsNvJitLinkReadsLieInsideTheEntry) {
    const std::string fatbin = test::fatbin_of(whole_cubin(), whole_ptx());
    GPUMATH_NEED_FATBIN(fatbin);
    const std::size_t ptx = entry_offsets(fatbin).at(1);
    const auto ptx_header = get<std::uint32_t>(fatbin, ptx + 4);
    const auto payload = get<std::uint64_t>(fatbin, ptx + 8);
    const auto options = get<std::uint32_t>(fatbin, ptx + 0x14);
    ASSERT_GT(options, 0U) << "fatbinary writes an options record for PTX";
    ASSERT_LE(options + 8, ptx_header);
    // An entry header shorter than its fixed fields.
    expect_refused(with(fatbin, 16 + 4, std::uint32_t(32)), {"entry 0 at offset 16", "32-byte header, shorter"});
    // The image's length past the payload (nvJitLink read past the entry: SIGSEGV).
    expect_refused(with(fatbin, ptx + 0x10, std::uint32_t(payload + 1)),
                   {fmt::format("says its image is {} bytes, but its payload holds {}", payload + 1, payload)});
    expect_refused(with(fatbin, ptx + 0x10, std::uint32_t(0xff000000)), {"says its image is"});
    // The options record, and the options' text, past the header.
    expect_refused(with(fatbin, ptx + 0x14, std::uint32_t(ptx_header - 4)), {"places its options record at"});
    expect_refused(with(fatbin, ptx + options, std::uint32_t(0x7fffffff)), {"bytes of options lie at"});
    expect_refused(with(fatbin, ptx + options + 4, std::uint32_t(ptx_header)), {"bytes of options lie at"});
}

TEST(FatbinEntries, SingleByteDamageAnywhereIsRefusedOrLinksNeverCrashes) {
    // Each byte of a real fatbin (whole-program cubin and PTX) inverted in turn, in every mode
    // fatbinary writes: ObjectCode refuses it, or nvJitLink links it or reports a LinkError. Before
    // gpumath checked the images inside fatbins, 1 to 25 % of these crashed nvJitLink.
    for (const Mode& mode : k_modes) {
        if (decoder_missing(mode)) continue;
        SCOPED_TRACE(mode.options);
        const std::string fatbin = test::fatbin_of(whole_cubin(), whole_ptx(), mode.options);
        GPUMATH_NEED_FATBIN(fatbin);
        int linked = 0, refused = 0, link_errors = 0;
        for (std::size_t i = 0; i < fatbin.size(); ++i) {
            std::string damaged = fatbin;
            damaged[i] = char(~damaged[i]);
            try {
                (void)Linker({.arch = "sm_90"}).add(ObjectCode::from_bytes(damaged, CodeType::fatbin)).link();
                ++linked;
            } catch (const InvalidArgument&) {
                ++refused;
            } catch (const LinkError&) {
                ++link_errors;
            }
        }
        std::printf("[ damage   ] %s: %d linked, %d refused, %d link errors\n", mode.elf_codec, linked, refused,
                    link_errors);
        EXPECT_GT(refused, 0);
        EXPECT_GT(linked, 0) << "damage in padding and unread bytes still links";
    }
}

TEST(FatbinEntries, LtoIrEntriesLinkWithLtoTurnedOnByTheirPresence) {
    const std::string ir = bytes_of(callee_lto());
    // Uncompressed, and as fatbinary compresses LTO-IR for nvJitLink (an image gpumath cannot read).
    for (const char* options : {"--compress=false", ""}) {
        SCOPED_TRACE(options);
        const std::string fatbin = test::fatbin_of_images({{"nvvm", ir}}, options);
        GPUMATH_NEED_FATBIN(fatbin);
        const ObjectCode fat = ObjectCode::from_bytes(fatbin, CodeType::fatbin);
        // Alone (nvJitLink refused it without -lto), and resolving another input's call.
        EXPECT_EQ(Linker({.arch = "sm_90"}).add(fat).link().type(), CodeType::cubin);
        const ObjectCode linked = Linker({.arch = "sm_90"}).add(caller_lto()).add(fat).link();
        EXPECT_EQ(linked.kernel_names(), std::vector<std::string>{"apply"});
    }
}

TEST(FatbinLimits, ABombIsRefusedBeforeAnythingIsDecompressed) {
    if (!detail::zstd_available()) GTEST_SKIP() << "libzstd.so.1 could not be loaded";
    const std::string model = test::fatbin_of(whole_cubin(), whole_ptx(), "--compress-all");
    GPUMATH_NEED_FATBIN(model);
    LimitsGuard guard;
    // 64 entries of 32 KiB, each declaring 1 GiB: the ratio refuses the first.
    const std::string bomb = fatbin_with_frames(model, rle_frame(8192), 64);
    ASSERT_LT(bomb.size(), std::size_t(3) << 20);
    const auto start = std::chrono::steady_clock::now();
    expect_refused(bomb, {"entry 0 at offset 16 (ELF, Zstandard-compressed) declares an image of 1073741824 bytes",
                          "more than 4096 times over", "GPUMATH_MAX_DECOMPRESSION_RATIO"});
    // With the ratio allowed, the sum of the declared sizes refuses them all before the first.
    core::set_decompression_limits({.max_bytes = std::uint64_t(1) << 30, .max_ratio = std::uint64_t(1) << 20});
    expect_refused(bomb, {"its compressed images declare 68719476736 bytes together", "more than the 1073741824 bytes",
                          "GPUMATH_MAX_DECOMPRESSED_BYTES"});
    // An LZ4 entry declaring a terabyte (an allocation of that size was attempted).
    const std::string lz4 = test::fatbin_of(whole_cubin(), whole_ptx(), "--compress-all --compress-mode=speed");
    expect_refused(with(lz4, 16 + 0x38, std::uint64_t(1) << 40),
                   {"entry 0 at offset 16 (ELF, LZ4-compressed) declares an image of 1099511627776 bytes"});
    std::printf("[ bomb     ] %zu bytes declaring 64 GiB refused twice in %.1f ms\n", bomb.size(),
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    // An image within both limits is decoded and then checked: 8 MiB of one byte is no ELF file.
    core::set_decompression_limits({.max_bytes = std::uint64_t(1) << 24, .max_ratio = std::uint64_t(1) << 16});
    expect_refused(fatbin_with_frames(model, rle_frame(64), 1),
                   {"entry 0 at offset 16 (ELF, Zstandard-compressed): it is not a 64-bit little-endian ELF file"});
    // 0 bytes: compressed images are refused, uncompressed fatbins still read.
    core::set_decompression_limits({.max_bytes = 0, .max_ratio = 4096});
    expect_refused(model, {"more than the 0 bytes"});
    const std::string plain = test::fatbin_of(whole_cubin(), whole_ptx(), "--compress=false");
    EXPECT_NO_THROW((void)ObjectCode::from_bytes(plain, CodeType::fatbin));
}

TEST(FatbinLimits, OneLinkSharesOneBudget) {
    const std::string first = test::fatbin_of(whole_cubin(), whole_ptx(), "--compress-all --compress-mode=speed");
    GPUMATH_NEED_FATBIN(first);
    const char* other_kernel = "extern \"C\" __global__ void thrice(float* x) { x[threadIdx.x] *= 3.0f; }\n";
    const std::string second =
        test::fatbin_of(bytes_of(Program(other_kernel, {.arch = "sm_90"}).compile(CodeType::cubin)),
                        bytes_of(Program(other_kernel, {.arch = "sm_90"}).compile(CodeType::ptx)),
                        "--compress-all --compress-mode=speed");
    std::uint64_t most = 0;
    for (const std::string* f : {&first, &second}) {
        std::uint64_t declared = 0;
        for (const std::size_t e : entry_offsets(*f)) declared += get<std::uint64_t>(*f, e + 0x38);
        most = std::max(most, declared);
    }
    LimitsGuard guard;
    core::set_decompression_limits({.max_bytes = most, .max_ratio = 4096});
    // Each one alone fits; a link of both reads more than one read may.
    const ObjectCode a = ObjectCode::from_bytes(first, CodeType::fatbin);
    const ObjectCode b = ObjectCode::from_bytes(second, CodeType::fatbin);
    EXPECT_NO_THROW((void)Linker({.arch = "sm_90"}).add(a).link());
    test::expect_throw_with<InvalidArgument>([&] { (void)Linker({.arch = "sm_90"}).add(a).add(b).link(); },
                                             {"Linker::link", "inputs[1]", "bytes gpumath decompresses for one read"});
}

TEST(FatbinLimits, LimitsAreCheckedAndCountsParsed) {
    LimitsGuard guard;
    const core::DecompressionLimits defaults;
    EXPECT_EQ(defaults.max_bytes, std::uint64_t(1) << 30);
    EXPECT_EQ(defaults.max_ratio, 4096U);
    test::expect_throw_with<InvalidArgument>(
        [] { core::set_decompression_limits({.max_bytes = (std::uint64_t(1) << 32) + 1, .max_ratio = 4096}); },
        {"core::set_decompression_limits", "limits.max_bytes: 4294967297 is over"});
    test::expect_throw_with<InvalidArgument>([] { core::set_decompression_limits({.max_bytes = 1, .max_ratio = 0}); },
                                             {"limits.max_ratio: 0"});
    core::set_decompression_limits({.max_bytes = 12345, .max_ratio = 7});
    EXPECT_EQ(core::decompression_limits().max_bytes, 12345U);
    EXPECT_EQ(core::decompression_limits().max_ratio, 7U);
}
