// SPDX-License-Identifier: Apache-2.0
// Private to src/core/jit: pieces shared by Program, the compile cache, Linker and Module.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <cuda.h>

#include <gpumath/core/launch.hpp>
#include <gpumath/core/module.hpp>
#include <gpumath/core/program.hpp>
#include "core/hash.hpp"
#include "core/object_image.hpp"

namespace gpumath::detail {

/// A parsed architecture name: "sm_90a" -> {virtual_arch=false, number=90, suffix='a'}.
struct Arch {
    bool virtual_arch = false;  // compute_NN
    int number = 0;
    char suffix = 0;                         // 0, 'a' or 'f'
    [[nodiscard]] std::string real() const;  // sm_NN[s]
    [[nodiscard]] std::string virt() const;  // compute_NN[s]
    [[nodiscard]] std::string text() const { return virtual_arch ? virt() : real(); }
};

/// Parses "sm_NN", "compute_NN" (and "lto_NN" when `allow_lto`) with an optional a/f suffix;
/// nullopt when the text is not of that form.
[[nodiscard]] std::optional<Arch> parse_arch(std::string_view text);

/// Validates an architecture string against the installed NVRTC; throws InvalidArgument naming
/// `field` with the supported list.
Arch validate_arch(std::string_view text, const char* field, const char* api);

/// NVRTC's version as major * 1000 + minor * 10.
[[nodiscard]] int nvrtc_version();
/// Architecture numbers the installed NVRTC supports, ascending.
[[nodiscard]] const std::vector<int>& nvrtc_supported_archs();

/// "sm_90" of the current device; InvalidArgument mentioning `field` when there is no device.
[[nodiscard]] std::string current_device_arch(const char* field, const char* api);

/// Everything one NVRTC compile needs, resolved.
struct CompileJob {
    const std::string* source = nullptr;
    const core::ProgramOptions* options = nullptr;
    std::span<const std::string> name_expressions;
    core::CodeType target = core::CodeType::cubin;
    std::string arch;                // the -arch value used
    std::vector<std::string> flags;  // every NVRTC option, -arch included
};

/// Runs NVRTC. Throws CompileError (with the log), or InvalidArgument when NVRTC rejects a flag.
[[nodiscard]] core::ObjectCode nvrtc_compile(const CompileJob& job);

/// The cache key of `job`: source, headers, files included from include_dirs, flags, target,
/// name expressions, NVRTC version.
[[nodiscard]] Digest compile_key(const CompileJob& job);

/// Walks the files `job` reaches through #include outside the toolkit, in the order NVRTC finds
/// them, giving `hasher` (unless null) each one's path and contents. InvalidArgument when one
/// resolves to something other than a regular file (a FIFO or a device NVRTC would wait on).
void walk_includes(const CompileJob& job, KeyHasher* hasher);

/// What a cache entry must hold to stand for a compile. A disk entry whose checksum and key check
/// out can still have been written by hand (the checksum is not a signature): its code type,
/// architecture, program name and name expressions must be the ones asked for.
struct CompileExpectation {
    core::CodeType type = core::CodeType::cubin;
    std::string_view arch;  // the -arch value: "sm_90", "compute_90"
    std::string_view name;  // ProgramOptions::name
    std::span<const std::string> name_expressions;
};

/// A disk cache entry for `key` holding `d`: a header (magic "GPUMJIT", format version, payload
/// size, XXH3-64 checksum of the payload), then the key, code type, architecture, name, log,
/// lowered names and code, each string preceded by its u64 length.
[[nodiscard]] std::string encode_entry(const Digest& key, const ObjectCodeData& d);
/// The contents of a disk cache entry read from a file, or nullptr with `why` set when it is not a
/// well-formed entry for `key` holding what `expect` asks for (its code checked as
/// ObjectCode::from_bytes checks code). Every read is bounded by `file`.
[[nodiscard]] std::shared_ptr<ObjectCodeData> decode_entry(std::string_view file, const Digest& key,
                                                           const CompileExpectation& expect, std::string& why);

/// Returns the cached result for `key` (memory, then disk) or runs `compile` once (also when
/// several threads ask at once) and stores the result.
[[nodiscard]] core::ObjectCode cached_compile(const Digest& key, const CompileExpectation& expect,
                                              const std::function<core::ObjectCode()>& compile);

/// Makes sure a CUDA context is current on the calling thread (the primary context of the
/// current device, as the runtime API uses). Cheap after the first call per thread.
void ensure_context();

/// Throws InvalidArgument unless `type` is one of CodeType's enumerators: "`field`: 9 is not a
/// CodeType (ptx, cubin, ltoir, fatbin)". For every CodeType that enters from a caller.
void check_code_type(core::CodeType type, const char* field, const char* api);

/// What `read_regular_file` found at a path.
enum class FileStatus { ok, missing, not_regular, unreadable, too_large };

/// The largest file of device code or cache entry gpumath reads (4 GiB); anything larger is not
/// device code, and reading it would only exhaust memory.
inline constexpr std::uint64_t max_code_file_bytes = std::uint64_t(1) << 32;

/// Reads a whole file into `out` if it is a regular file, without blocking on anything else: the
/// file is opened non-blocking (and, unless `follow_symlinks`, not through a symbolic link) and
/// checked with fstat on the open descriptor, so a FIFO, socket, device or directory at `path`
/// is reported as `not_regular` instead of hanging or failing in the middle of a read. A file of
/// more than `max_bytes` is `too_large`: by its size, or, for files whose size says nothing (those
/// of /proc), once that much was read.
[[nodiscard]] FileStatus read_regular_file(const std::filesystem::path& path, std::string& out, bool follow_symlinks,
                                           std::uint64_t max_bytes = max_code_file_bytes);

/// What `write_regular_file` did.
enum class WriteStatus { ok, not_regular, failed };

/// Writes `bytes` as the whole content of the regular file at `path`, without blocking on anything
/// else: a FIFO (with or without a reader), a directory, socket or device is `not_regular` and is
/// neither waited on nor written. `exclusive` creates a new file and refuses an existing path or a
/// symbolic link (for temporary files); otherwise an existing file is truncated and links are
/// followed. `error` receives errno when the result is `failed`.
[[nodiscard]] WriteStatus write_regular_file(const std::filesystem::path& path, std::string_view bytes, bool exclusive,
                                             int& error);

/// Replaces the file at `path` with `bytes` atomically: writes them to a new file of a name no one
/// else uses beside it (exclusive, so whatever sits at a temporary name, a FIFO or a link, is never
/// written through), then renames that over `path`; readers see the old file or the new one, never
/// half of it. On failure returns false with `reason` and `error` (an errno value, 0 when the
/// temporary name was not a regular file); the temporary file is removed unless it was someone
/// else's.
[[nodiscard]] bool replace_regular_file(const std::filesystem::path& path, std::string_view bytes, int& error,
                                        std::string& reason);

/// Reads a whole regular file (symbolic links followed); nullopt when it is missing, cannot be
/// read or is not a regular file.
[[nodiscard]] std::optional<std::string> read_file(const std::filesystem::path& path);

/// Kernel::max_active_blocks_per_multiprocessor for a kernel's state (also used by the launch checks).
[[nodiscard]] int max_active_blocks(const KernelState& k, int block_size, std::size_t dynamic_shared_memory);

/// The driver's form of `c` for cuLaunchKernelEx and the occupancy queries: grid, block, dynamic
/// shared memory and stream, with the cluster and cooperative attributes written into `attrs`.
[[nodiscard]] inline CUlaunchConfig to_cu_launch_config(const core::LaunchConfig& c, CUstream stream,
                                                        std::array<CUlaunchAttribute, 3>& attrs) noexcept {
    CUlaunchConfig cfg{};
    cfg.gridDimX = unsigned(c.grid.x);
    cfg.gridDimY = unsigned(c.grid.y);
    cfg.gridDimZ = unsigned(c.grid.z);
    cfg.blockDimX = unsigned(c.block.x);
    cfg.blockDimY = unsigned(c.block.y);
    cfg.blockDimZ = unsigned(c.block.z);
    cfg.sharedMemBytes = unsigned(c.shared_memory);
    cfg.hStream = stream;
    attrs = {};
    unsigned n = 0;
    if (c.cluster) {
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attrs[n].value.clusterDim.x = unsigned(c.cluster->x);
        attrs[n].value.clusterDim.y = unsigned(c.cluster->y);
        attrs[n].value.clusterDim.z = unsigned(c.cluster->z);
        ++n;
    }
    if (c.cooperative) {
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        attrs[n].value.cooperative = 1;
        ++n;
    }
    if (c.programmatic_dependency) {
        attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attrs[n].value.programmaticStreamSerializationAllowed = 1;
        ++n;
    }
    cfg.attrs = attrs.data();
    cfg.numAttrs = n;
    return cfg;
}

}  // namespace gpumath::detail
