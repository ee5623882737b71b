// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: problem analysis, plan keys, cuBLASLt plans and per-device state.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <cublasLt.h>

#include <gpumath/core/memory.hpp>
#include <gpumath/core/stream.hpp>
#include <gpumath/detail/stream_workspace.hpp>
#include <gpumath/layout.hpp>
#include <gpumath/matmul/matmul.hpp>
#include <gpumath/matmul/options.hpp>

namespace gpumath::detail {

// ---------------------------------------------------------------------------------------------
// Operand slots and pointer alignment.

/// `slot_scales` is the least aligned of the FP8 scale and amax pointers given (cuBLASLt reads
/// pointer values of epilog and scale attributes to infer their alignment).
enum Slot : int { slot_a, slot_b, slot_c, slot_d, slot_bias, slot_aux, slot_bias_grad, slot_scales, slot_count };

inline constexpr std::array<const char*, slot_count> slot_names = {"a",   "b",         "c",     "d",
                                                                   "bias", "aux", "bias_grad", "scales"};

/// The largest power of two <= 256 that divides the address (256 for null).
[[nodiscard]] inline std::uint16_t alignment_class(const void* p) noexcept {
    const auto v = reinterpret_cast<std::uintptr_t>(p);
    if (v == 0) return 256;
    const std::uintptr_t low = v & (~v + 1);
    return low >= 256 ? std::uint16_t(256) : static_cast<std::uint16_t>(low);
}

/// Bits of MatmulSignature::scales.
enum ScaleBit : std::uint8_t { scale_a = 1, scale_b = 2, scale_c = 4, scale_d = 8, scale_amax_d = 16 };

[[nodiscard]] inline std::uint8_t scales_mask(const MatmulScales& s) noexcept {
    return static_cast<std::uint8_t>((s.a ? scale_a : 0) | (s.b ? scale_b : 0) | (s.c ? scale_c : 0) |
                                     (s.d ? scale_d : 0) | (s.amax_d ? scale_amax_d : 0));
}

/// The alignment class of the least aligned scale or amax pointer given (256 when none is).
[[nodiscard]] inline std::uint16_t scales_alignment(const MatmulScales& s) noexcept {
    std::uint16_t a = 256;
    for (const void* p : {static_cast<const void*>(s.a), static_cast<const void*>(s.b), static_cast<const void*>(s.c),
                          static_cast<const void*>(s.d), static_cast<const void*>(s.amax_d)})
        if (p != nullptr) a = std::min(a, alignment_class(p));
    return a;
}

// ---------------------------------------------------------------------------------------------
// What a plan depends on.

/// The layouts (and pointer alignment classes) of one call, or of a plan made from layouts alone
/// (`from_layouts`: absent d and bias take their defaults).
struct MatmulSignature {
    TensorLayout a;
    TensorLayout b;
    std::optional<TensorLayout> c;
    std::optional<TensorLayout> d;
    std::optional<TensorLayout> bias;
    std::optional<TensorLayout> aux;        // absent: an aux output is allocated by gpumath
    std::optional<TensorLayout> bias_grad;  // absent: a bias gradient is allocated by gpumath
    std::uint8_t scales = 0;
    bool from_layouts = false;
    std::array<std::uint16_t, slot_count> align{256, 256, 256, 256, 256, 256, 256, 256};
};

/// The alignment class of each operand pointer of a call (256 for absent operands).
[[nodiscard]] std::array<std::uint16_t, slot_count> call_alignments(const TensorView& a, const TensorView& b,
                                                                    const TensorView* d,
                                                                    const MatmulArgs& args) noexcept;

/// The signature of a call with views.
[[nodiscard]] MatmulSignature signature_of(const TensorView& a, const TensorView& b, const TensorView* d,
                                           const MatmulArgs& args);

/// A plan cache key: the signature and options as a word string (hashed without strings) plus the
/// alignment classes. `problem_words` covers the options and the a, b, c layouts.
struct MatmulKey {
    static constexpr std::size_t capacity = 176;
    std::array<std::uint64_t, capacity> words;  // only the first `size` are meaningful
    std::uint32_t size = 0;
    std::uint32_t problem_words = 0;
    std::size_t hash = 0;
    std::array<std::uint16_t, slot_count> align{};

    [[nodiscard]] bool same_layouts(const MatmulKey& o) const noexcept {
        return size == o.size && std::memcmp(words.data(), o.words.data(), size * sizeof(std::uint64_t)) == 0;
    }
    [[nodiscard]] bool same_problem(const MatmulKey& o) const noexcept {
        return problem_words == o.problem_words &&
               std::memcmp(words.data(), o.words.data(), problem_words * sizeof(std::uint64_t)) == 0;
    }
    /// True when every pointer of a call with alignment `actual` is at least as aligned as planned.
    [[nodiscard]] bool aligned_enough(const std::array<std::uint16_t, slot_count>& actual) const noexcept {
        for (int i = 0; i < slot_count; ++i)
            if (actual[std::size_t(i)] < align[std::size_t(i)]) return false;
        return true;
    }
    friend bool operator==(const MatmulKey& x, const MatmulKey& y) noexcept {
        return x.hash == y.hash && x.align == y.align && x.same_layouts(y);
    }
};

struct MatmulKeyHash {
    std::size_t operator()(const MatmulKey& k) const noexcept { return k.hash; }
};

/// Builds the key of `sig` under `options`. `device` is part of the key of the stateless cache;
/// pass -1 for a key that is the same in every process (tuning files).
[[nodiscard]] MatmulKey make_key(const MatmulSignature& sig, const MatmulOptions& options, int device);
/// The key of a call with views (the same as make_key of its signature, without building one).
[[nodiscard]] MatmulKey make_call_key(const TensorView& a, const TensorView& b, const TensorView& d,
                                      const MatmulArgs& args, const MatmulOptions& options, int device);
/// The hash of a key's words and alignment classes.
[[nodiscard]] std::size_t hash_key(const MatmulKey& k) noexcept;
/// Hex text of a key (for tuning files) and back; `parse_key` returns false on malformed text.
[[nodiscard]] std::string key_to_text(const MatmulKey& key);
[[nodiscard]] bool parse_key(const std::string& text, MatmulKey& key);

// ---------------------------------------------------------------------------------------------
// Analysis: validation and the arrangement on cuBLASLt (all on the host, no CUDA calls).

/// One matrix as cuBLASLt sees it (column-major).
struct LtMatrix {
    cudaDataType_t type = CUDA_R_32F;
    std::uint64_t rows = 0;
    std::uint64_t cols = 0;
    std::int64_t ld = 0;
    std::int64_t batch_stride = 0;
};

enum class AuxKind : std::uint8_t { none, relu_mask, gelu };

struct MatmulProblem {
    const char* api = "";
    std::int64_t m = 0, n = 0, k = 0, batch = 1;
    TensorLayout a, b, d;  // the user's layouts (d concrete)
    std::optional<TensorLayout> c;
    DataType a_type{}, c_type{}, d_type{}, bias_type{}, aux_type{};
    ComputeType compute = ComputeType::f32;
    cublasComputeType_t lt_compute = CUBLAS_COMPUTE_32F;
    cudaDataType_t scale_type = CUDA_R_32F;
    Epilog epilog = Epilog::none;            // as asked
    Epilog effective_epilog = Epilog::none;  // after a full bias moved to C
    cublasLtEpilogue_t lt_epilog = CUBLASLT_EPILOGUE_DEFAULT;
    /// cuBLASLt computes D^T = B^T A^T (D row-major) instead of D = A B (D column-major).
    bool swap = true;
    LtMatrix lt_a, lt_b, lt_c, lt_d;
    cublasOperation_t op_a = CUBLAS_OP_N, op_b = CUBLAS_OP_N;
    bool has_c = false;        // a C operand is read (the user's c or a full bias)
    bool c_from_bias = false;  // C is the user's full (M, N) bias
    bool bias_vector = false;  // the bias goes through the epilog's bias pointer
    std::int64_t bias_batch_stride = 0;
    AuxKind aux_kind = AuxKind::none;
    std::int64_t aux_ld = 0;          // elements (GELU) or bits (ReLU mask)
    std::int64_t aux_batch_stride = 0;
    TensorLayout aux_storage;         // what gpumath allocates when the caller passes no aux
    TensorLayout aux_view;            // the aux as a view relative to the storage pointer
    bool bias_grad = false;
    std::int64_t bias_grad_length = 0;
    std::int64_t bias_grad_batch_stride = 0;
    TensorLayout bias_grad_storage;
    bool fp8 = false;
    bool fast_accumulation = false;
    std::uint8_t scales = 0;
    std::array<std::uint16_t, slot_count> align{};
    /// The signature with every default filled in (the plan's key is made from it).
    MatmulSignature signature;

    /// "M=.. N=.. K=.. batch=.., a f16 (..) ..., epilog ..., compute ..." for messages and logs.
    [[nodiscard]] std::string describe() const;
};

/// Validates `sig` under `options` and decides the arrangement. Throws InvalidArgument or
/// NotSupported naming the operand; `api` prefixes messages.
[[nodiscard]] MatmulProblem analyze(const MatmulSignature& sig, const MatmulOptions& options, const char* api);

/// Checks of the options alone: every enum within its enumerators (a value cast from an
/// out-of-range integer is InvalidArgument naming the field). No CUDA calls.
void check_options(const MatmulOptions& options, const char* api);

/// Checks of one call that depend on values, not layouts: alpha/beta against the scale type, beta
/// without c, operand pointers aligned to their element size, and overlaps between outputs and
/// inputs. No CUDA calls.
void check_call(const TensorView& a, const TensorView& b, const TensorView* d, const MatmulArgs& args, const char* api);

/// The D that the allocating calls return: Matmul::result_layout() of the same operands (dense
/// row-major, or column-major like a column-major c). Validates enough to compute it; a
/// column-major one is InvalidArgument naming c, because a Tensor is row-major.
[[nodiscard]] TensorLayout allocated_result_layout(const TensorLayout& a, const TensorLayout& b,
                                                   const std::optional<TensorLayout>& c, const MatmulOptions& options,
                                                   const char* api);

/// Text of a cuBLASLt epilogue for logs.
[[nodiscard]] const char* lt_epilog_name(cublasLtEpilogue_t e) noexcept;

// ---------------------------------------------------------------------------------------------
// Per-device state.

/// The cuBLASLt handle of `device`, created on first use (thread-safe) and kept for the life of
/// the process.
[[nodiscard]] cublasLtHandle_t lt_handle(int device);
/// cuBLASLt's version (cublasLtGetVersion) and the device's name and compute capability.
struct DeviceIdentity {
    std::string name;
    int cc_major = 0;
    int cc_minor = 0;
    std::size_t lt_version = 0;
    int l2_bytes = 0;
};
[[nodiscard]] const DeviceIdentity& device_identity(int device);

// ---------------------------------------------------------------------------------------------
// Plans.

struct MatmulPointers {
    const void* a = nullptr;
    const void* b = nullptr;
    const void* c = nullptr;
    void* d = nullptr;
    const void* bias = nullptr;
    void* aux = nullptr;
    void* bias_grad = nullptr;
    MatmulScales scales;
};

/// The cuBLASLt side of a problem: descriptors built once, heuristic results, the selected
/// algorithm. run() is thread-safe; select()/reorder()/adopt() are not (callers serialize them).
class MatmulPlan {
public:
    MatmulPlan(MatmulProblem problem, const MatmulOptions& options, int device, int max_algorithms);
    ~MatmulPlan();
    MatmulPlan(const MatmulPlan&) = delete;
    MatmulPlan& operator=(const MatmulPlan&) = delete;

    /// Enqueues the product; `current_device` is the caller's current device (the plan's device is
    /// made current around the call when they differ).
    void run(const MatmulPointers& p, const Scalar& alpha, const Scalar& beta, core::StreamRef stream,
             int current_device);

    [[nodiscard]] const MatmulProblem& problem() const noexcept { return problem_; }
    [[nodiscard]] const MatmulKey& key() const noexcept { return key_; }
    [[nodiscard]] int device() const noexcept { return device_; }
    [[nodiscard]] const std::vector<AlgorithmInfo>& infos() const noexcept { return infos_; }
    [[nodiscard]] std::size_t selected() const noexcept { return selected_; }
    [[nodiscard]] const cublasLtMatmulAlgo_t& selected_algo() const noexcept { return results_[selected_].algo; }
    [[nodiscard]] const std::shared_ptr<core::MemoryResource>& memory_resource() const noexcept { return resource_; }

    void select(std::size_t index);
    /// Reorders the candidates (`order[i]` = old index of new candidate i) and selects the first.
    void reorder(const std::vector<std::size_t>& order);
    /// Records measured times (by current index).
    void set_time(std::size_t index, double ms) { infos_[index].time_ms = ms; }
    /// Makes `algo` (from a tuning file) the selected candidate if cuBLASLt accepts it for this
    /// problem; returns false (and changes nothing) otherwise.
    bool adopt(const cublasLtMatmulAlgo_t& algo);

private:
    void release() noexcept;
    void create_descriptors();
    void query_heuristics(int max_algorithms);
    void set_pointer(cublasLtMatmulDescAttributes_t attr, int slot, const void* value);

    MatmulProblem problem_;
    MatmulKey key_;
    int device_ = 0;
    std::size_t workspace_limit_ = 0;
    std::shared_ptr<core::MemoryResource> resource_;
    std::shared_ptr<StreamWorkspace> workspace_;

    cublasLtMatmulDesc_t desc_ = nullptr;
    cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, lc_ = nullptr, ld_ = nullptr;
    std::vector<cublasLtMatmulHeuristicResult_t> results_;
    std::vector<AlgorithmInfo> infos_;
    std::size_t selected_ = 0;

    // Pointer attributes (bias, aux, scales) as last set in desc_, guarded by mutex_.
    bool has_pointer_attributes_ = false;
    std::mutex mutex_;
    std::array<const void*, 8> current_{};
};

/// AlgorithmInfo of a heuristic result.
[[nodiscard]] AlgorithmInfo algorithm_info(const cublasLtMatmulHeuristicResult_t& r);
[[nodiscard]] std::string tile_name(unsigned id);
[[nodiscard]] std::string stages_name(unsigned id);
[[nodiscard]] std::string cluster_shape_name(unsigned id);

/// Allocates the outputs the caller did not pass (into `out`) and returns the pointers of a call.
[[nodiscard]] MatmulPointers prepare_pointers(const MatmulPlan& plan, const TensorView& a, const TensorView& b,
                                              const TensorView& d, const MatmulArgs& args, core::StreamRef stream,
                                              MatmulOutputs& out);
/// Allocates the outputs the caller did not pass, fills the pointers and runs the plan.
MatmulOutputs run_plan(MatmulPlan& plan, const TensorView& a, const TensorView& b, const TensorView& d,
                       const MatmulArgs& args, core::StreamRef stream, int current_device);

/// Reads the current device (throws CudaError without one).
[[nodiscard]] int matmul_current_device();

}  // namespace gpumath::detail
