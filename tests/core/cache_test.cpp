// SPDX-License-Identifier: Apache-2.0
// The compile cache: hashing, memory hits and misses (core::CacheStats), what the key covers, eviction, disk hits,
// corrupt and truncated entries, the size limit, the off switches, and eight threads compiling
// the same source at once. Every source carries a unique token so no earlier run can answer it.
#include <gtest/gtest.h>

#include <barrier>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <thread>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gpumath/core.hpp>
#include <gpumath/log.hpp>
#include "core/hash.hpp"

#include "common/test_util.hpp"
#include "jit_test_util.hpp"

using namespace gpumath;
using core::CodeType;
using core::ObjectCode;
using core::Program;
using core::ProgramOptions;
namespace fs = std::filesystem;

namespace {

std::string source(const std::string& token) {
    return "// " + token + "\ntemplate <int N> __global__ void fill(int* p) { p[threadIdx.x] = N; }\n";
}

std::vector<fs::path> entries(const fs::path& dir) {
    std::vector<fs::path> v;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.path().extension() == ".jit") v.push_back(e.path());
    return v;
}

std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool same_bytes(const ObjectCode& a, const ObjectCode& b) {
    return a.bytes().size() == b.bytes().size() && std::equal(a.bytes().begin(), a.bytes().end(), b.bytes().begin());
}

// Each test starts with an empty memory cache, zeroed counters, the default capacity and either no
// disk cache or a fresh temporary directory.
class CompileCache : public ::testing::Test {
protected:
    void SetUp() override {
        cache().clear();
        cache().set_capacity(256);
        cache().set_directory({});
        cache().set_disk_limit(std::uintmax_t(1) << 30);
        cache().reset_stats();
    }
    void TearDown() override { SetUp(); }
    static core::CompileCache& cache() { return core::compile_cache(); }
    void use_disk() { cache().set_directory(dir_.path()); }
    // Turns the disk cache on and compiles `p` to `target`: the code and the one entry it wrote.
    std::pair<ObjectCode, fs::path> first_entry(const Program& p, CodeType target) {
        use_disk();
        ObjectCode code = p.compile(target);
        const std::vector<fs::path> files = entries(dir_.path());
        EXPECT_EQ(files.size(), 1u) << "the compile wrote one entry";
        return {std::move(code), files.empty() ? fs::path() : files.front()};
    }
    test::TempDir dir_;
};

}  // namespace

TEST(KeyHash, KnownVectors) {
    // XXH3-128 reference values (xxHash 0.8, canonical big-endian form).
    EXPECT_EQ(detail::to_hex(detail::key_hash("")), "99aa06d3014798d86001c324468d497f");
    EXPECT_EQ(detail::to_hex(detail::key_hash("abc")), "06b05ab6733a618578af5f94892f3950");
    // A million 'a's fed in uneven pieces hash as one piece.
    detail::KeyHasher h;
    const std::string chunk(997, 'a');
    std::size_t fed = 0;
    while (fed + chunk.size() <= 1000000) {
        h.update(chunk);
        fed += chunk.size();
    }
    h.update(std::string(1000000 - fed, 'a'));
    EXPECT_EQ(detail::to_hex(h.finish()), "a545df8e384a9579b1fd6fae5285c4eb");
    EXPECT_EQ(detail::checksum64("abc", 3), 0x78af5f94892f3950ULL);
    // Fields are length-prefixed.
    detail::KeyHasher a, b;
    a.field("ab");
    a.field("c");
    b.field("a");
    b.field("bc");
    EXPECT_NE(a.finish(), b.finish());
}

TEST(Checksum, DetectsEveryFlippedByte) {
    std::string data(1000, 'x');
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = char(i * 7);
    const std::uint64_t base = detail::checksum64(data.data(), data.size());
    for (std::size_t i = 0; i < data.size(); ++i) {
        std::string d = data;
        d[i] = char(d[i] ^ 1);
        ASSERT_NE(detail::checksum64(d.data(), d.size()), base) << i;
    }
    EXPECT_NE(detail::checksum64(data.data(), data.size() - 1), base);
    EXPECT_NE(detail::checksum64(nullptr, 0), base);
}

TEST(CacheDirectory, EnvironmentRules) {
    using detail::jit_cache_directory;
    EXPECT_EQ(jit_cache_directory("/tmp/c", "/xdg", "/home/u"), fs::path("/tmp/c/jit"));
    for (const char* off : {"off", "OFF", "0", "none", "false"})
        EXPECT_TRUE(jit_cache_directory(off, "/xdg", "/home/u").empty());
    EXPECT_EQ(jit_cache_directory(nullptr, "/xdg", "/home/u"), fs::path("/xdg/gpumath/jit"));
    EXPECT_EQ(jit_cache_directory("", "", "/home/u"), fs::path("/home/u/.cache/gpumath/jit"));
    EXPECT_TRUE(jit_cache_directory(nullptr, nullptr, nullptr).empty());
}

TEST_F(CompileCache, MissThenHit) {
    Program p(source(test::unique_token()), {.arch = "sm_90"});
    p.add_name_expression("fill<3>");
    const ObjectCode first = p.compile(CodeType::ptx);
    EXPECT_EQ(cache().stats().misses, 1u);
    EXPECT_EQ(cache().stats().hits, 0u);
    const ObjectCode second = p.compile(CodeType::ptx);
    EXPECT_EQ(cache().stats().misses, 1u);
    EXPECT_EQ(cache().stats().hits, 1u);
    EXPECT_EQ(first.shared_data(), second.shared_data());  // the very same entry
    EXPECT_EQ(second.lowered_name("fill<3>"), "_Z4fillILi3EEvPi");
    // A copy of the Program (same inputs) hits too.
    const Program copy = p;
    (void)copy.compile(CodeType::ptx);
    EXPECT_EQ(cache().stats().hits, 2u);
    EXPECT_EQ(cache().stats().size, 1u);
}

TEST_F(CompileCache, KeyCoversEverythingThatChangesTheOutput) {
    const std::string src = "#include \"h.h\"\n" + source(test::unique_token());
    const ProgramOptions base{.arch = "sm_90", .headers = {{"h.h", "// one\n"}}};
    const auto compile = [&](const ProgramOptions& o, CodeType t, std::vector<std::string> names = {}) {
        Program p(src, o);
        for (auto& n : names) p.add_name_expression(n);
        (void)p.compile(t);
    };
    compile(base, CodeType::ptx);
    std::uint64_t misses = 1;
    ASSERT_EQ(cache().stats().misses, misses);

    ProgramOptions o = base;
    o.headers["h.h"] = "// two\n";  // header contents
    compile(o, CodeType::ptx);
    EXPECT_EQ(cache().stats().misses, ++misses);
    o = base;
    o.defines["X"] = "1";
    compile(o, CodeType::ptx);
    EXPECT_EQ(cache().stats().misses, ++misses);
    o = base;
    o.arch = "sm_80";
    compile(o, CodeType::ptx);
    EXPECT_EQ(cache().stats().misses, ++misses);
    o = base;
    o.lineinfo = true;
    compile(o, CodeType::ptx);
    EXPECT_EQ(cache().stats().misses, ++misses);
    compile(base, CodeType::ltoir);  // target
    EXPECT_EQ(cache().stats().misses, ++misses);
    compile(base, CodeType::ptx, {"fill<1>"});  // name expressions
    EXPECT_EQ(cache().stats().misses, ++misses);

    // And the unchanged request still hits.
    compile(base, CodeType::ptx);
    EXPECT_EQ(cache().stats().misses, misses);
    EXPECT_EQ(cache().stats().hits, 1u);
}

TEST_F(CompileCache, FilesIncludedFromIncludeDirsAreKeyedByContents) {
    const fs::path inc = dir_.path() / "inc";
    fs::create_directories(inc / "sub");
    const auto write = [&](const fs::path& p, const std::string& text) { std::ofstream(p) << text; };
    write(inc / "top.h", "#include \"sub/value.h\"\n");
    write(inc / "sub" / "value.h", "constexpr int value = 11;\n");
    const std::string src = "// " + test::unique_token() +
                            "\n#include <top.h>\nextern \"C\" __global__ void k(int* p) { *p = value * 1001; }\n";
    const ProgramOptions o{.arch = "sm_90", .include_dirs = {inc.string()}};
    const ObjectCode a = Program(src, o).compile(CodeType::ptx);
    EXPECT_NE(a.text().find("11011"), std::string_view::npos);
    write(inc / "sub" / "value.h", "constexpr int value = 13;\n");  // a nested include changes
    const ObjectCode b = Program(src, o).compile(CodeType::ptx);
    EXPECT_NE(b.text().find("13013"), std::string_view::npos) << "a stale entry was returned";
    EXPECT_EQ(cache().stats().misses, 2u);
    write(inc / "sub" / "value.h", "constexpr int value = 11;\n");  // back: the first entry answers
    const ObjectCode c = Program(src, o).compile(CodeType::ptx);
    EXPECT_EQ(c.shared_data(), a.shared_data());
}

namespace {

void write_file(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

// Makes `dir` the working directory for the scope, and restores the previous one.
class WorkingDirectory {
public:
    explicit WorkingDirectory(const fs::path& dir) : previous_(fs::current_path()) { fs::current_path(dir); }
    WorkingDirectory(const WorkingDirectory&) = delete;
    WorkingDirectory& operator=(const WorkingDirectory&) = delete;
    ~WorkingDirectory() {
        std::error_code ec;
        fs::current_path(previous_, ec);
    }

private:
    fs::path previous_;
};

// A kernel storing `value * 1001` after `includes`; its PTX holds that number as a literal.
std::string value_source(const std::string& includes) {
    return "// " + test::unique_token() + "\n" + includes +
           "extern \"C\" __global__ void k(int* p) { *p = value * 1001; }\n";
}

bool has(const ObjectCode& code, std::string_view number) { return code.text().find(number) != std::string_view::npos; }

}  // namespace

// NVRTC looks for a quoted include first in the directory of the file that includes it: for the
// program itself the directory part of ProgramOptions::name, relative to the working directory
// (so the working directory itself for a name without one), for an in-memory header the directory
// part of its name. Before, the key followed include_dirs only, and an edited header there was a
// stale hit.
TEST_F(CompileCache, HeadersFoundInTheWorkingDirectoryAreKeyedByContents) {
    use_disk();
    const fs::path work = dir_.path() / "work";
    fs::create_directories(work / "sub");
    const WorkingDirectory cwd(work);
    write_file(work / "value.h", "constexpr int value = 11;\n");
    const ProgramOptions o{.arch = "sm_90"};  // the default name has no directory part
    const std::string src = value_source("#include \"value.h\"\n");
    const ObjectCode a = Program(src, o).compile(CodeType::ptx);
    EXPECT_TRUE(has(a, "11011"));
    write_file(work / "value.h", "constexpr int value = 13;\n");
    EXPECT_TRUE(has(Program(src, o).compile(CodeType::ptx), "13013")) << "a stale entry was returned from memory";
    write_file(work / "value.h", "constexpr int value = 17;\n");
    cache().clear();
    EXPECT_TRUE(has(Program(src, o).compile(CodeType::ptx), "17017")) << "a stale entry was returned from disk";
    EXPECT_EQ(cache().stats().disk_hits, 0u);
    write_file(work / "value.h", "constexpr int value = 11;\n");  // back: the first entry answers from disk
    cache().clear();
    EXPECT_TRUE(same_bytes(Program(src, o).compile(CodeType::ptx), a));
    EXPECT_EQ(cache().stats().disk_hits, 1u);

    // An in-memory header's quoted includes are looked for next to its name: sub/top.h -> sub/.
    write_file(work / "sub" / "value.h", "constexpr int value = 19;\n");
    const ProgramOptions m{.arch = "sm_90", .headers = {{"sub/top.h", "#include \"value.h\"\n"}}};
    const std::string msrc = value_source("#include \"sub/top.h\"\n");
    EXPECT_TRUE(has(Program(msrc, m).compile(CodeType::ptx), "19019"));
    write_file(work / "sub" / "value.h", "constexpr int value = 23;\n");
    EXPECT_TRUE(has(Program(msrc, m).compile(CodeType::ptx), "23023")) << "a stale entry was returned";
}

TEST_F(CompileCache, HeadersNextToTheProgramNameAreKeyedByContents) {
    const fs::path kernels = dir_.path() / "kernels";
    fs::create_directories(kernels);
    write_file(kernels / "value.h", "constexpr int value = 29;\n");
    const ProgramOptions o{.name = (kernels / "prog.cu").string(), .arch = "sm_90"};
    const std::string src = value_source("#include \"value.h\"\n");
    EXPECT_TRUE(has(Program(src, o).compile(CodeType::ptx), "29029"));
    write_file(kernels / "value.h", "constexpr int value = 31;\n");
    EXPECT_TRUE(has(Program(src, o).compile(CodeType::ptx), "31031")) << "a stale entry was returned";
    EXPECT_EQ(cache().stats().misses, 2u);
    // Angled includes are looked for in the -I directories only: none here, so NVRTC fails.
    EXPECT_THROW((void)Program(value_source("#include <value.h>\n"), o).compile(CodeType::ptx), CompileError);
}

// -no-source-include in extra takes the including file's directory out of the search: the key
// follows the header in include_dirs that NVRTC reads, not the one next to the program.
TEST_F(CompileCache, NoSourceIncludeKeysTheHeaderNvrtcReads) {
    const fs::path here = dir_.path() / "here", inc = dir_.path() / "inc";
    fs::create_directories(here);
    fs::create_directories(inc);
    write_file(here / "value.h", "constexpr int value = 37;\n");
    write_file(inc / "value.h", "constexpr int value = 41;\n");
    const std::string src = value_source("#include \"value.h\"\n");
    const ProgramOptions plain{.name = (here / "prog.cu").string(), .arch = "sm_90", .include_dirs = {inc.string()}};
    ProgramOptions no_source = plain;
    no_source.extra = {"-no-source-include"};
    EXPECT_TRUE(has(Program(src, plain).compile(CodeType::ptx), "37037"));
    const ObjectCode a = Program(src, no_source).compile(CodeType::ptx);
    EXPECT_TRUE(has(a, "41041"));
    write_file(inc / "value.h", "constexpr int value = 43;\n");
    EXPECT_TRUE(has(Program(src, no_source).compile(CodeType::ptx), "43043")) << "a stale entry was returned";
    EXPECT_TRUE(has(Program(src, plain).compile(CodeType::ptx), "37037"));
    EXPECT_EQ(cache().stats().misses, 3u) << "the header NVRTC does not read changed nothing";
}

TEST_F(CompileCache, Eviction) {
    cache().set_capacity(2);
    const std::string t = test::unique_token();
    const Program a(source(t + "a"), {.arch = "sm_90"}), b(source(t + "b"), {.arch = "sm_90"}),
        c(source(t + "c"), {.arch = "sm_90"});
    (void)a.compile(CodeType::ptx);
    (void)b.compile(CodeType::ptx);
    (void)a.compile(CodeType::ptx);  // a is now the most recently used
    (void)c.compile(CodeType::ptx);  // evicts b
    EXPECT_EQ(cache().stats().evictions, 1u);
    EXPECT_EQ(cache().stats().size, 2u);
    EXPECT_EQ(cache().stats().misses, 3u);
    (void)a.compile(CodeType::ptx);
    EXPECT_EQ(cache().stats().misses, 3u);
    (void)b.compile(CodeType::ptx);
    EXPECT_EQ(cache().stats().misses, 4u);
    cache().set_capacity(0);  // keeps nothing
    (void)b.compile(CodeType::ptx);
    EXPECT_EQ(cache().stats().misses, 5u);
}

TEST_F(CompileCache, DiskHitKeepsLoweredNames) {
    use_disk();
    Program p(source(test::unique_token()), {.arch = "sm_90"});
    p.add_name_expression("fill<7>");
    const ObjectCode first = p.compile(CodeType::cubin);
    ASSERT_EQ(entries(dir_.path()).size(), 1u);
    EXPECT_EQ(cache().stats().disk_writes, 1u);
    cache().clear();  // as a new process would start
    const ObjectCode second = p.compile(CodeType::cubin);
    EXPECT_EQ(cache().stats().disk_hits, 1u);
    EXPECT_EQ(cache().stats().misses, 2u);  // not in memory either time; NVRTC ran once (misses - disk_hits)
    EXPECT_NE(first.shared_data(), second.shared_data());
    EXPECT_TRUE(same_bytes(first, second));
    EXPECT_EQ(second.type(), CodeType::cubin);
    EXPECT_EQ(second.arch(), "sm_90");
    EXPECT_EQ(second.lowered_name("fill<7>"), "_Z4fillILi7EEvPi");
    EXPECT_EQ(second.kernel_names(), first.kernel_names());
    // No temporary files are left behind.
    std::size_t files = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_.path())) ++files;
    EXPECT_EQ(files, 1u);
}

TEST_F(CompileCache, CorruptOrTruncatedEntriesAreIgnoredAndRewritten) {
    const Program p(source(test::unique_token()), {.arch = "sm_90"});
    const auto first = first_entry(p, CodeType::ptx);
    const ObjectCode& good = first.first;
    const fs::path& entry = first.second;
    ASSERT_FALSE(entry.empty());
    const std::string original = read(entry);

    const std::vector<std::pair<std::string, std::string>> damages = {
        {"truncated", original.substr(0, original.size() / 2)},
        {"flipped byte",
         [&] {
             std::string s = original;
             s[s.size() - 10] = char(s[s.size() - 10] ^ 0x20);
             return s;
         }()},
        {"bad magic", "XXXXXXXX" + original.substr(8)},
        {"shorter than a header", original.substr(0, 12)},
        {"empty", ""},
        {"appended garbage", original + "garbage"},
    };
    std::uint64_t rejected = 0, misses = 1;
    for (const auto& [what, bytes] : damages) {
        std::ofstream(entry, std::ios::binary | std::ios::trunc) << bytes;
        cache().clear();
        const ObjectCode again = p.compile(CodeType::ptx);
        EXPECT_EQ(cache().stats().disk_rejected, ++rejected) << what;
        EXPECT_EQ(cache().stats().misses, ++misses) << what;
        EXPECT_TRUE(same_bytes(again, good)) << what;
        // Rewritten: the next process gets a disk hit.
        EXPECT_EQ(read(entry), original) << what;
        cache().clear();
        const std::uint64_t hits = cache().stats().disk_hits;
        (void)p.compile(CodeType::ptx);
        EXPECT_EQ(cache().stats().disk_hits, hits + 1) << what;
        EXPECT_EQ(cache().stats().misses, ++misses) << what;  // a disk hit is a memory miss
    }
}

namespace {

constexpr std::size_t header_bytes = 32;  // magic, version, zero, payload size, payload checksum

// `entry` with `edit` applied to its payload and the header's checksum made to match again: an
// entry that passes every integrity check but was not written for this compile.
std::string forged(const std::string& entry, const std::function<void(std::string&)>& edit) {
    std::string payload = entry.substr(header_bytes);
    edit(payload);
    std::string out = entry.substr(0, header_bytes);
    const std::uint64_t size = payload.size();
    const std::uint64_t sum = detail::checksum64(payload.data(), payload.size());
    std::memcpy(out.data() + 16, &size, sizeof size);
    std::memcpy(out.data() + 24, &sum, sizeof sum);
    return out + payload;
}

void replace_once(std::string& s, const std::string& from, const std::string& to) {
    const std::size_t at = s.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    ASSERT_EQ(s.find(from, at + 1), std::string::npos) << from;
    s.replace(at, from.size(), to);
}

}  // namespace

TEST_F(CompileCache, EntriesHoldingOtherCodeAreRejected) {
    Program named(source(test::unique_token()), {.name = "forge_me", .arch = "sm_90"});
    named.add_name_expression("fill<7>");
    const auto first = first_entry(named, CodeType::ptx);
    const ObjectCode& good = first.first;
    const fs::path& entry = first.second;
    ASSERT_FALSE(entry.empty());
    const std::string original = read(entry);
    // The payload starts with the 16-byte key, then the code type (u32) and the architecture.
    constexpr std::size_t type_at = 16;

    const std::vector<std::pair<std::string, std::function<void(std::string&)>>> forgeries = {
        {"code type",
         [](std::string& pl) {
             const auto cubin = std::uint32_t(CodeType::cubin);
             std::memcpy(pl.data() + type_at, &cubin, sizeof cubin);
         }},
        {"architecture", [](std::string& pl) { replace_once(pl, "compute_90", "compute_80"); }},
        {"program name", [](std::string& pl) { replace_once(pl, "forge_me", "forge_it"); }},
        {"name expression", [](std::string& pl) { replace_once(pl, "fill<7>", "fill<8>"); }},
    };
    // Sanity: re-signing the untouched payload gives the entry back, so only the edit differs.
    ASSERT_EQ(forged(original, [](std::string&) {}), original);
    std::uint64_t rejected = 0;
    for (const auto& [what, edit] : forgeries) {
        std::ofstream(entry, std::ios::binary | std::ios::trunc) << forged(original, edit);
        cache().clear();
        const ObjectCode again = named.compile(CodeType::ptx);
        EXPECT_EQ(cache().stats().disk_rejected, ++rejected) << what;
        EXPECT_EQ(cache().stats().disk_hits, 0u) << what;
        EXPECT_TRUE(same_bytes(again, good)) << what;
        EXPECT_EQ(again.type(), CodeType::ptx) << what;
        EXPECT_EQ(again.lowered_name("fill<7>"), "_Z4fillILi7EEvPi") << what;
        EXPECT_EQ(read(entry), original) << what;  // rewritten
    }
    // Still a hit when nothing was forged.
    cache().clear();
    (void)named.compile(CodeType::ptx);
    EXPECT_EQ(cache().stats().disk_hits, 1u);
}

TEST_F(CompileCache, ACubinEntryForAnotherArchitectureIsRejected) {
    use_disk();
    const Program p(source(test::unique_token()), {.arch = "sm_90"});
    const ObjectCode good = p.compile(CodeType::cubin);
    const Program other(source(test::unique_token()), {.arch = "sm_80"});
    const ObjectCode sm80 = other.compile(CodeType::cubin);
    ASSERT_EQ(sm80.arch(), "sm_80");
    const std::vector<fs::path> files = entries(dir_.path());
    ASSERT_EQ(files.size(), 2u);
    const auto text_of = [](const ObjectCode& code) {
        return std::string(reinterpret_cast<const char*>(code.bytes().data()), code.bytes().size());
    };
    const std::string good_bytes = text_of(good);
    const std::string sm80_bytes = text_of(sm80);
    const fs::path entry = read(files[0]).find(good_bytes) != std::string::npos ? files[0] : files[1];
    const std::string original = read(entry);
    // The sm_80 ELF in place of the sm_90 one, every other field (type, "sm_90") left as it was.
    std::ofstream(entry, std::ios::binary | std::ios::trunc) << forged(original, [&](std::string& pl) {
        const std::size_t at = pl.find(good_bytes);
        ASSERT_NE(at, std::string::npos);
        const std::uint64_t n = sm80_bytes.size();
        std::memcpy(pl.data() + at - 8, &n, sizeof n);
        pl.replace(at, good_bytes.size(), sm80_bytes);
    });
    cache().clear();
    const ObjectCode again = p.compile(CodeType::cubin);
    EXPECT_EQ(cache().stats().disk_rejected, 1u);
    EXPECT_TRUE(same_bytes(again, good));
    EXPECT_EQ(read(entry), original);
}

TEST_F(CompileCache, ArchitectureSpecificCubinsAreDiskHits) {
    // An sm_90a cubin's ELF header says sm_90: the entry a compile just wrote must still count.
    use_disk();
    for (const char* arch : {"sm_90a", "sm_90"}) {
        const Program p(source(test::unique_token()), {.arch = arch});
        const ObjectCode first = p.compile(CodeType::cubin);
        cache().clear();
        const std::uint64_t hits = cache().stats().disk_hits;
        const ObjectCode again = p.compile(CodeType::cubin);
        EXPECT_EQ(cache().stats().disk_hits, hits + 1) << arch;
        EXPECT_EQ(cache().stats().disk_rejected, 0u) << arch;
        EXPECT_EQ(again.arch(), arch);
        EXPECT_TRUE(same_bytes(again, first)) << arch;
    }
}

TEST_F(CompileCache, AnEntryLargerThanAnyCodeIsNotRead) {
    const Program p(source(test::unique_token()), {.arch = "sm_90"});
    const auto first = first_entry(p, CodeType::ptx);
    const ObjectCode& good = first.first;
    const fs::path& entry = first.second;
    ASSERT_FALSE(entry.empty());
    // Sparse: takes no disk space, but reading it whole would take 4 GiB of memory.
    fs::resize_file(entry, (std::uintmax_t(1) << 32) + 1);
    cache().clear();
    const LogLevel level = log_level();
    set_log_level(LogLevel::info);
    ::testing::internal::CaptureStderr();
    const ObjectCode again = p.compile(CodeType::ptx);
    const std::string log = ::testing::internal::GetCapturedStderr();
    set_log_level(level);
    EXPECT_TRUE(same_bytes(again, good));
    EXPECT_EQ(cache().stats().disk_rejected, 1u);
    EXPECT_NE(log.find("larger than 4 GiB, so not an entry; not read"), std::string::npos) << log;
    EXPECT_LT(fs::file_size(entry), std::uintmax_t(1) << 20);  // rewritten
}

TEST_F(CompileCache, DiskLimitDropsLeastRecentlyUsed) {
    use_disk();
    cache().set_disk_limit(1);  // smaller than any entry: only the newest survives
    const std::string t = test::unique_token();
    (void)Program(source(t + "1"), {.arch = "sm_90"}).compile(CodeType::ptx);
    (void)Program(source(t + "2"), {.arch = "sm_90"}).compile(CodeType::ptx);
    EXPECT_EQ(entries(dir_.path()).size(), 1u);
    EXPECT_EQ(cache().stats().disk_writes, 2u);
}

TEST_F(CompileCache, OffSwitches) {
    // Disk off (the fixture's default here): nothing is written.
    const Program p(source(test::unique_token()), {.arch = "sm_90"});
    (void)p.compile(CodeType::ptx);
    EXPECT_TRUE(cache().directory().empty());
    EXPECT_TRUE(entries(dir_.path()).empty());
    EXPECT_EQ(cache().stats().disk_writes, 0u);
    // ProgramOptions::cache = false: neither memory nor disk is consulted.
    use_disk();
    const Program q(source(test::unique_token()), {.arch = "sm_90", .cache = false});
    (void)q.compile(CodeType::ptx);
    (void)q.compile(CodeType::ptx);
    EXPECT_EQ(cache().stats().misses, 1u);  // only p's
    EXPECT_EQ(cache().stats().hits, 0u);
    EXPECT_TRUE(entries(dir_.path()).empty());
    // An unwritable directory is not an error: the compile still works.
    cache().set_directory("/proc/gpumath-cannot-write-here");
    (void)Program(source(test::unique_token()), {.arch = "sm_90"}).compile(CodeType::ptx);
    EXPECT_EQ(cache().stats().disk_writes, 0u);
}

TEST_F(CompileCache, EightThreadsCompilingTheSameSourceRunNvrtcOnce) {
    use_disk();
    Program p(source(test::unique_token()), {.arch = "sm_90"});
    p.add_name_expression("fill<5>");
    constexpr int n = 8;
    std::barrier start(n);
    std::vector<ObjectCode> results(n);
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i)
        threads.emplace_back([&, i] {
            start.arrive_and_wait();
            results[std::size_t(i)] = p.compile(CodeType::cubin);
        });
    for (auto& t : threads) t.join();
    const core::CacheStats s = cache().stats();
    EXPECT_EQ(s.misses, 1u);
    EXPECT_EQ(s.disk_hits, 0u);
    EXPECT_EQ(s.hits, std::uint64_t(n - 1));
    EXPECT_LE(s.waits, s.hits);
    EXPECT_EQ(s.disk_writes, 1u);
    for (const ObjectCode& r : results) {
        ASSERT_FALSE(r.empty());
        EXPECT_TRUE(same_bytes(r, results[0]));
        EXPECT_EQ(r.lowered_name("fill<5>"), "_Z4fillILi5EEvPi");
    }
    EXPECT_EQ(entries(dir_.path()).size(), 1u);
}

TEST_F(CompileCache, FailedCompilesAreNotCachedAndReachEveryWaiter) {
    const Program bad("// " + test::unique_token() + "\n__global__ void k() { nope; }", {.arch = "sm_90"});
    EXPECT_THROW((void)bad.compile(CodeType::ptx), CompileError);
    EXPECT_THROW((void)bad.compile(CodeType::ptx), CompileError);
    EXPECT_EQ(cache().stats().size, 0u);
    std::vector<std::thread> threads;
    std::atomic<int> errors{0};
    for (int i = 0; i < 4; ++i)
        threads.emplace_back([&] {
            try {
                (void)bad.compile(CodeType::ptx);
            } catch (const CompileError& e) {
                if (e.log().find("nope") != std::string::npos) ++errors;
            }
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(errors.load(), 4);
}

namespace {

// Runs `f` on another thread; if it has not finished after `limit`, calls `unblock` until the
// thread ends and returns false, so the test fails instead of hanging the suite.
template <class F, class U>
bool finishes_within(std::chrono::seconds limit, F&& f, U&& unblock) {
    auto done = std::async(std::launch::async, std::forward<F>(f));
    if (done.wait_for(limit) == std::future_status::ready) {
        done.get();
        return true;
    }
    do unblock();
    while (done.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready);
    return false;
}

// Opens `fifo` for writing without blocking and closes it: a reader blocked in open() then sees EOF.
void release_fifo_reader(const fs::path& fifo) {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // NOLINT(cppcoreguidelines-pro-type-vararg)
    if (fd >= 0) ::close(fd);
}

}  // namespace

TEST_F(CompileCache, NonRegularFilesAtAnEntryPathAreRejectedNotOpened) {
    const Program p(source(test::unique_token()), {.arch = "sm_90"});
    const auto first = first_entry(p, CodeType::ptx);
    const ObjectCode& good = first.first;
    const fs::path& entry = first.second;
    ASSERT_FALSE(entry.empty());
    const std::string original = read(entry);
    test::TempDir elsewhere;
    const fs::path outside_fifo = elsewhere.path() / "fifo";
    ASSERT_EQ(::mkfifo(outside_fifo.c_str(), 0600), 0);

    struct Case {
        const char* what;
        std::function<void()> make;
    };
    const std::vector<Case> cases = {
        {"FIFO", [&] { ASSERT_EQ(::mkfifo(entry.c_str(), 0600), 0); }},
        {"symbolic link to a FIFO", [&] { fs::create_symlink(outside_fifo, entry); }},
        {"symbolic link to a valid entry",
         [&] {
             const fs::path copy = elsewhere.path() / "copy.jit";
             std::ofstream(copy, std::ios::binary) << original;
             fs::create_symlink(copy, entry);
         }},
    };
    std::uint64_t rejected = 0, misses = 1;
    for (const Case& c : cases) {
        fs::remove(entry);
        c.make();
        cache().clear();
        ObjectCode again;
        // Before: open() of the FIFO blocked the compile forever.
        const bool finished = finishes_within(
            std::chrono::seconds(20), [&] { again = p.compile(CodeType::ptx); },
            [&] {
                release_fifo_reader(entry);
                release_fifo_reader(outside_fifo);
            });
        ASSERT_TRUE(finished) << c.what << ": the compile blocked on the cache entry";
        EXPECT_EQ(cache().stats().disk_rejected, ++rejected) << c.what;
        EXPECT_EQ(cache().stats().misses, ++misses) << c.what;
        EXPECT_EQ(cache().stats().disk_hits, 0u) << c.what;
        EXPECT_TRUE(same_bytes(again, good)) << c.what;
        // Rewritten as a regular file.
        EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(entry))) << c.what;
        EXPECT_EQ(read(entry), original) << c.what;
    }

    // A directory cannot be replaced by the rewrite; every compile ignores it and still works.
    fs::remove(entry);
    fs::create_directory(entry);
    for (int i = 0; i < 2; ++i) {
        cache().clear();
        EXPECT_TRUE(same_bytes(p.compile(CodeType::ptx), good));
        EXPECT_EQ(cache().stats().disk_rejected, ++rejected);
    }
    EXPECT_TRUE(fs::is_directory(entry));
}

// An include that resolves to a FIFO made NVRTC wait for a writer forever; a directory is passed
// over as NVRTC does. Checked with the compile cache on and off.
TEST_F(CompileCache, AnIncludeThatIsNotARegularFileIsRefused) {
    const fs::path first = dir_.path() / "first", second = dir_.path() / "second";
    fs::create_directories(first / "value.h");  // a directory: NVRTC tries the next include dir
    fs::create_directories(second);
    write_file(second / "value.h", "constexpr int value = 47;\n");
    const std::string src = value_source("#include <value.h>\n");
    ProgramOptions o{.arch = "sm_90", .include_dirs = {first.string(), second.string()}};
    EXPECT_TRUE(has(Program(src, o).compile(CodeType::ptx), "47047"));

    const fs::path fifo = dir_.path() / "fifo_dir" / "value.h";
    fs::create_directories(fifo.parent_path());
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    for (const bool cache_on : {true, false}) {
        o.include_dirs = {fifo.parent_path().string(), second.string()};
        o.cache = cache_on;
        const bool finished = finishes_within(
            std::chrono::seconds(20),
            [&] {
                test::expect_throw_with<InvalidArgument>(
                    [&] { (void)Program(src, o).compile(CodeType::ptx); },
                    {"Program::compile", "<value.h>", fifo.string(), "not a regular file"});
            },
            [&] { release_fifo_reader(fifo); });
        EXPECT_TRUE(finished) << "cache " << cache_on << ": the compile blocked on the FIFO";
    }
}
