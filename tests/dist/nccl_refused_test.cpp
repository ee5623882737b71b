// SPDX-License-Identifier: Apache-2.0
// GPUMATH_NCCL_LIBRARY naming a file that dlopen would hang on (a FIFO) or fault in (a truncated
// copy of a library): gpumath::dist throws NcclError at once, naming the file and why it was
// refused, and keeps the hint of how to point gpumath at NCCL. So does a FIFO named libnccl.so.2 in
// the LD_LIBRARY_PATH the process started with. gpumath loads NCCL once per process, so each case
// runs in a forked child of a process that never touches NCCL itself (or in the test program run
// anew, for an environment the loader reads at startup); the time limit turns a hang into a failure.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include <gpumath/dist/communicator.hpp>
#include <gpumath/error.hpp>

#include "common/child_process.hpp"
#include "common/library_files.hpp"

using namespace gpumath;
using namespace std::chrono_literals;

namespace {

// What dist::nccl_version() does in a fresh process whose GPUMATH_NCCL_LIBRARY is `file`:
// "NcclError status=S api=A: MESSAGE", or "loaded".
std::string nccl_version_in_child(const std::string& file) {
    const test::ChildResult r = test::run_in_child([&] {
        ::setenv("GPUMATH_NCCL_LIBRARY", file.c_str(), 1);
        try {
            (void)dist::nccl_version();
            return std::string("loaded");
        } catch (const NcclError& e) {
            return "NcclError status=" + std::to_string(e.status()) + " api=" + std::string(e.api()) + ": " + e.what();
        }
    });
    EXPECT_TRUE(r.finished) << file << ": the child " << r.how;
    EXPECT_LT(r.elapsed, 5s) << file << ": took " << r.elapsed.count() << " ms";
    return r.output;
}

void expect_contains(const std::string& text, std::initializer_list<std::string> needles) {
    for (const std::string& needle : needles)
        EXPECT_NE(text.find(needle), std::string::npos) << "message: " << text << "\nmissing: " << needle;
}

}  // namespace

TEST(NcclRefused, AFifoIsNcclErrorAtOnce) {
    const test::TempDir dir;
    const std::string fifo = dir / "libnccl.so.2";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const std::string out = nccl_version_in_child(fifo);
    EXPECT_EQ(out.rfind("NcclError status=0 api=dlopen: ", 0), 0U) << out;
    expect_contains(out, {"NCCL could not be loaded from \"" + fifo + "\" (GPUMATH_NCCL_LIBRARY)",
                          "is a FIFO, not a regular file", "set GPUMATH_NCCL_LIBRARY to the path of libnccl.so.2"});
}

TEST(NcclRefused, ATruncatedLibraryIsNcclErrorNamingTheSegment) {
    // Any real shared library serves: the check refuses the copy before dlopen maps it.
    const std::string real = test::system_zstd();
    if (real.empty()) GTEST_SKIP() << "no libzstd.so.1 in the system's library folders to truncate";
    const std::string bytes = test::read_file(real);
    ASSERT_GT(bytes.size(), 4096U);
    const test::TempDir dir;
    const std::string truncated = dir / "libnccl.so.2";
    ASSERT_TRUE(test::write_file(truncated, bytes.substr(0, bytes.size() / 2)));
    const std::string out = nccl_version_in_child(truncated);
    EXPECT_EQ(out.rfind("NcclError status=0 api=dlopen: ", 0), 0U) << out;
    expect_contains(out, {"NCCL could not be loaded from \"" + truncated + "\" (GPUMATH_NCCL_LIBRARY)",
                          "is truncated: segment", "PT_LOAD", "install NCCL"});
}

TEST(NcclRefused, AFolderIsNcclError) {
    const test::TempDir dir;
    const std::string out = nccl_version_in_child(dir.path());
    EXPECT_EQ(out.rfind("NcclError status=0 api=dlopen: ", 0), 0U) << out;
    expect_contains(out, {"is a directory, not a regular file"});
}

// Run only by run_test_in_new_process: what dist::nccl_version() does in that process.
TEST(NcclRefused, DISABLED_LoadsNcclAsTheEnvironmentSays) {
    try {
        std::printf("nccl_version: %d\n", dist::nccl_version());
    } catch (const NcclError& e) {
        std::printf("NcclError status=%d api=%s: %s\n", e.status(), std::string(e.api()).c_str(), e.what());
    }
    std::fflush(stdout);
}

TEST(NcclRefused, AFifoNamedLikeNcclInTheStartupLdLibraryPathIsNcclError) {
    // The loader read LD_LIBRARY_PATH when the process started: its own search for libnccl.so.2
    // would open the FIFO and block forever.
    const test::TempDir dir;
    ASSERT_EQ(::mkfifo((dir / "libnccl.so.2").c_str(), 0600), 0);
    const test::ChildResult r =
        test::run_test_in_new_process("NcclRefused.DISABLED_LoadsNcclAsTheEnvironmentSays",
                                      {{"LD_LIBRARY_PATH", dir.path()}, {"GPUMATH_NCCL_LIBRARY", std::nullopt}});
    EXPECT_TRUE(r.finished) << "the test program " << r.how << "\n" << r.output;
    EXPECT_LT(r.elapsed, 5s);
    expect_contains(r.output,
                    {"NcclError status=0 api=dlopen: NCCL could not be loaded from \"libnccl.so.2\": \"" +
                         (dir / "libnccl.so.2") + "\" (found through LD_LIBRARY_PATH) is a FIFO, not a regular file",
                     "install NCCL (libnccl2) or set GPUMATH_NCCL_LIBRARY"});
}
