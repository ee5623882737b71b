// SPDX-License-Identifier: Apache-2.0
/// @file
/// Device code as bytes: CodeType and ObjectCode (compiled by Program, linked by Linker, loaded
/// into a Module). Light: no CUDA header; include <gpumath/core/module.hpp> to call `load()`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpumath::core {

/// The kinds of device code gpumath compiles, links and loads.
enum class CodeType {
    ptx,    ///< PTX text (virtual ISA; compiled for the GPU when loaded or linked)
    cubin,  ///< a CUDA binary for one real architecture (sm_NN)
    ltoir,  ///< LTO-IR: link-time-optimizable intermediate code; must be linked before loading
    fatbin  ///< a fat binary (several cubins/PTX); loadable and linkable, not produced by NVRTC
};

/// "ptx", "cubin", "ltoir" or "fatbin".
[[nodiscard]] std::string_view to_string(CodeType type) noexcept;

/// Bounds on the decompression gpumath does to check device code. fatbinary compresses a fatbin's
/// images (Zstandard by default, LZ4 with `--compress-mode=speed`); gpumath decompresses each one
/// to check it as the same kind of code given alone, before nvJitLink or the driver reads it. An
/// image over these bounds is refused (InvalidArgument) before anything is allocated for it, so a
/// small file declaring gigabytes of images costs nothing. Process-wide: see
/// `decompression_limits()`.
struct DecompressionLimits {
    /// The most bytes the compressed images of one read may decompress to, all together: one
    /// `ObjectCode::from_bytes` or `from_file`, or one `Linker::link` over all its inputs. Default
    /// 1 GiB; at most 4 GiB; 0 refuses every compressed image.
    std::uint64_t max_bytes = std::uint64_t(1) << 30;
    /// The most times an image may be larger than its compressed bytes. Default 4096: real images
    /// stay under about 1000 (PTX with a large constant table), LZ4 cannot pass 255, and a
    /// decompression bomb needs far more. At least 1.
    std::uint64_t max_ratio = 4096;
};

/// The current limits: the defaults above, or the environment's `GPUMATH_MAX_DECOMPRESSED_BYTES`
/// (a count with an optional K, M, G suffix, such as "256M") and `GPUMATH_MAX_DECOMPRESSION_RATIO`
/// read when first asked (a value that does not parse is logged and ignored), or what
/// `set_decompression_limits` set last. Thread-safe.
[[nodiscard]] DecompressionLimits decompression_limits() noexcept;
/// Replaces the limits for every later read. InvalidArgument when `max_bytes` is over 4 GiB or
/// `max_ratio` is 0. Thread-safe; reads in progress keep the limits they started with.
void set_decompression_limits(const DecompressionLimits& limits);

class Module;
class ObjectCode;

}  // namespace gpumath::core

namespace gpumath::detail {

struct ObjectCodeAccess;

/// The immutable contents of an ObjectCode, shared between copies.
struct ObjectCodeData {
    core::CodeType type = core::CodeType::cubin;
    std::string arch{};
    std::string name;
    std::string bytes;
    std::string log;
    std::vector<std::pair<std::string, std::string>> lowered_names{};  // expression -> mangled name
};
}  // namespace gpumath::detail

namespace gpumath::core {

/// Compiled or linked device code of one CodeType: the bytes, the architecture, the compiler's log
/// and the lowered names of registered name expressions. An immutable value: copies share the
/// bytes. Load it with `load()` (not LTO-IR: link that first).
class ObjectCode {
public:
    /// An empty object (no code).
    ObjectCode() = default;

    /// Wraps code given in memory (copied). `arch` ("sm_90", "compute_90") is read from a cubin's
    /// ELF header when left empty; `lowered_names` maps name expressions to mangled names so that
    /// `Module::kernel("scale<float>")` works for code compiled elsewhere. The code is checked
    /// before anything else reads it (nvJitLink and the driver trust its structure; damaged code
    /// crashes them): a cubin's ELF tables must lie inside `bytes` and refer to what exists, PTX
    /// must hold no NUL before its end, LTO-IR must start with its magic, and a fatbin's container
    /// and entries must lie inside `bytes`, each entry of a kind and compression fatbinary writes,
    /// each image (decompressed within `decompression_limits()`) passing the check of the same kind
    /// of code given alone. InvalidArgument naming the entry otherwise, and when `bytes` is empty,
    /// `type` is not a CodeType, or a lowered name or expression is empty, holds a NUL or repeats
    /// an expression; NotSupported for a Zstandard-compressed image when libzstd.so.1 cannot be
    /// loaded to check it.
    [[nodiscard]] static ObjectCode from_bytes(std::span<const std::byte> bytes, CodeType type, std::string arch = {},
                                               std::vector<std::pair<std::string, std::string>> lowered_names = {});
    /// Same, from a string (PTX text, or binary data held in a std::string).
    [[nodiscard]] static ObjectCode from_bytes(std::string_view bytes, CodeType type, std::string arch = {},
                                               std::vector<std::pair<std::string, std::string>> lowered_names = {});
    /// Reads a file. The type comes from `type` or else the extension (.ptx, .cubin, .ltoir/.lto,
    /// .fatbin/.fatbin.bin); InvalidArgument when neither says, when `type` is not a CodeType, or
    /// when the file is missing, empty or not a regular file (a FIFO is refused, not waited on),
    /// and when its bytes fail from_bytes' checks.
    [[nodiscard]] static ObjectCode from_file(const std::filesystem::path& path,
                                              std::optional<CodeType> type = std::nullopt, std::string arch = {});
    /// Writes the bytes to `path` (as nvcc would write the same kind of file). InvalidArgument when
    /// `path` is not a regular file (a FIFO is not waited on); Error on I/O failure.
    void save(const std::filesystem::path& path) const;

    /// True for a default-constructed object.
    [[nodiscard]] bool empty() const noexcept { return !data_; }
    /// The kind of code. InvalidArgument on an empty object, as every accessor below.
    [[nodiscard]] CodeType type() const { return data().type; }
    /// The architecture the code is for ("sm_90", "compute_90"), empty when unknown (e.g. fatbin).
    [[nodiscard]] const std::string& arch() const { return data().arch; }
    /// The program or link name it came from.
    [[nodiscard]] const std::string& name() const { return data().name; }
    /// The code. PTX includes its terminating NUL as NVRTC returns it.
    [[nodiscard]] std::span<const std::byte> bytes() const {
        const std::string& b = data().bytes;
        return std::as_bytes(std::span<const char>(b.data(), b.size()));
    }
    /// The code as text (meaningful for PTX).
    [[nodiscard]] std::string_view text() const { return data().bytes; }
    /// Compiler or linker log (warnings), possibly empty.
    [[nodiscard]] const std::string& log() const { return data().log; }
    /// The mangled name of a registered name expression. InvalidArgument listing the registered
    /// expressions when `expression` was not registered.
    [[nodiscard]] const std::string& lowered_name(std::string_view expression) const;
    /// All registered name expressions with their mangled names.
    [[nodiscard]] const std::vector<std::pair<std::string, std::string>>& lowered_names() const {
        return data().lowered_names;
    }
    /// Names of the kernels (entry points) found in PTX or cubin code; empty for LTO-IR and fatbin.
    [[nodiscard]] std::vector<std::string> kernel_names() const;
    /// Loads the code into a Module (context-independent). InvalidArgument for LTO-IR; CudaError
    /// "no CUDA driver/device" without a GPU.
    [[nodiscard]] Module load() const;

    /// The shared contents (null when empty). Copies of one object return the same pointer, so it
    /// identifies the code (the FFT plan cache keys callbacks by it).
    [[nodiscard]] const std::shared_ptr<const detail::ObjectCodeData>& shared_data() const noexcept { return data_; }

private:
    friend struct detail::ObjectCodeAccess;
    explicit ObjectCode(std::shared_ptr<const detail::ObjectCodeData> data) noexcept : data_(std::move(data)) {}
    [[nodiscard]] const detail::ObjectCodeData& data() const {
        if (!data_) throw_empty();
        return *data_;
    }
    [[noreturn]] static void throw_empty();
    std::shared_ptr<const detail::ObjectCodeData> data_;
};

}  // namespace gpumath::core

namespace gpumath::detail {

/// Builds an ObjectCode around existing contents; for Program, Linker and the compile cache (and
/// tests that forge code), not for users.
struct ObjectCodeAccess {
    /// An ObjectCode sharing `data`.
    [[nodiscard]] static core::ObjectCode make(std::shared_ptr<const ObjectCodeData> data) noexcept;
};

}  // namespace gpumath::detail
