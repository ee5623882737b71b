// SPDX-License-Identifier: Apache-2.0
// The cuBLASLt side of a matmul: descriptors built once per plan, heuristics with the real
// alignment classes, and the hot path (pointer attributes + cublasLtMatmul).
#include "matmul/internal.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <optional>
#include <type_traits>

#include <cuda_fp16.h>
#include <fmt/format.h>

#include "detail/log.hpp"
#include "detail/scope_exit.hpp"
#include <gpumath/core/device.hpp>
#include "detail/status.hpp"
#include <gpumath/tensor.hpp>

namespace gpumath::detail {
namespace {

// Slots of MatmulPlan::current_ (pointer attributes last written to the descriptor).
enum PointerSlot : int { ptr_bias, ptr_aux, ptr_scale_a, ptr_scale_b, ptr_scale_c, ptr_scale_d, ptr_amax_d };

/// A stand-in pointer with a given alignment, for heuristics that read pointer values only to
/// infer alignment (cuBLASLt's documented behaviour for bias and aux pointers).
const void* fake_pointer(std::uint16_t alignment) {
    // NOLINTNEXTLINE(performance-no-int-to-ptr): cuBLASLt needs a pointer value, never dereferenced
    return reinterpret_cast<const void*>(std::uintptr_t(alignment));
}

/// The alignment a plan can count on for `slot`: the pointer's, and with a per-product loop also
/// that of the offsets between products.
std::uint16_t planned_alignment(const MatmulProblem& P, int slot) {
    const std::uint16_t a = P.signature.align[std::size_t(slot)];
    const BatchLoop& l = P.lt.loop;
    if (!l.on || slot >= layout_slot_count) return a;
    const std::int64_t bytes = l.bytes[std::size_t(slot)];
    return std::min(a, alignment_of(std::uint64_t(bytes < 0 ? -bytes : bytes)));
}

template <class T>
T* offset(T* p, std::int64_t bytes) noexcept {
    if (p == nullptr) return p;
    using Byte = std::conditional_t<std::is_const_v<T>, const unsigned char, unsigned char>;
    return reinterpret_cast<T*>(reinterpret_cast<Byte*>(p) + bytes);
}

void encode_scalar(const Scalar& s, cudaDataType_t type, unsigned char* out) {
    switch (type) {
        case CUDA_R_16F: {
            const __half h = __float2half(static_cast<float>(s.real));
            std::memcpy(out, &h, sizeof h);
            break;
        }
        case CUDA_R_64F:
            std::memcpy(out, &s.real, sizeof(double));
            break;
        case CUDA_C_32F: {
            const float v[2] = {static_cast<float>(s.real), static_cast<float>(s.imag)};
            std::memcpy(out, v, sizeof v);
            break;
        }
        case CUDA_C_64F: {
            const double v[2] = {s.real, s.imag};
            std::memcpy(out, v, sizeof v);
            break;
        }
        case CUDA_R_32I: {
            const auto v = static_cast<std::int32_t>(s.real);
            std::memcpy(out, &v, sizeof v);
            break;
        }
        default: {
            const auto v = static_cast<float>(s.real);
            std::memcpy(out, &v, sizeof v);
            break;
        }
    }
}

template <class T>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value, const char* what) {
    check_cublas(int(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof value)),
                 "cublasLtMatmulDescSetAttribute", what);
}

template <class T>
T algo_config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
    T value{};
    std::size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof value, &written) != CUBLAS_STATUS_SUCCESS)
        return T{};
    return value;
}

}  // namespace

AlgorithmInfo algorithm_info(const cublasLtMatmulHeuristicResult_t& r) {
    AlgorithmInfo info;
    info.id = algo_config<std::int32_t>(r.algo, CUBLASLT_ALGO_CONFIG_ID);
    info.tile_id = algo_config<std::uint32_t>(r.algo, CUBLASLT_ALGO_CONFIG_TILE_ID);
    info.tile = tile_name(info.tile_id);
    info.stages_id = algo_config<std::uint32_t>(r.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID);
    info.stages = stages_name(info.stages_id);
    info.split_k = std::max(1, algo_config<std::int32_t>(r.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM));
    info.reduction_scheme = algo_config<std::uint32_t>(r.algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
    info.cta_swizzling = algo_config<std::uint32_t>(r.algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING);
    info.custom_option = algo_config<std::uint32_t>(r.algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION);
    info.cluster_shape = cluster_shape_name(algo_config<std::uint16_t>(r.algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID));
    info.workspace_bytes = r.workspaceSize;
    info.waves = r.wavesCount;
    return info;
}

namespace {

std::atomic<std::size_t> g_live_plans{0};

}  // namespace

std::size_t live_matmul_plans() noexcept { return g_live_plans.load(std::memory_order_relaxed); }

MatmulPlan::MatmulPlan(MatmulProblem problem, const MatmulOptions& options, int device, int max_algorithms)
    : problem_(problem),
      device_(device),
      workspace_limit_(options.workspace_limit),
      resource_(options.memory_resource) {
    call_ = problem_.signature.call();
    key_ = make_key(call_, options, -1);
    const MatmulProblem& P = problem_;
    const DeviceIdentity& id = device_identity(device_);
    if (P.types.fp8) {
        if (id.cc_major * 10 + id.cc_minor < 89)
            throw_not_supported(
                fmt::format("a, b: FP8 products need compute capability >= 8.9; device {} ({}) is {}.{}", device_,
                            id.name, id.cc_major, id.cc_minor),
                P.api);
        // Datacenter Blackwell (10.x) takes every layout; Ada, Hopper and GeForce Blackwell need "TN".
        if (id.cc_major != 10 && !(P.lt.op_a == CUBLAS_OP_T && P.lt.op_b == CUBLAS_OP_N))
            throw_not_supported(
                fmt::format("a, b: FP8 on compute capability {}.{} needs K contiguous in both inputs (cuBLASLt's TN "
                            "rule): a row-major (unit stride along K) and b column-major (unit stride along K); a has "
                            "strides {}, b has strides {}",
                            id.cc_major, id.cc_minor, to_string(P.signature.a.strides()),
                            to_string(P.signature.b.strides())),
                P.api);
        // cuBLASLt documents the finer scale modes for Hopper; on other GPUs it offers no algorithm.
        if (P.scales.fine && id.cc_major != 9)
            throw_not_supported(
                fmt::format("scales: {} x {} scaling needs compute capability 9.x (Hopper; cuBLASLt's 128-element "
                            "and outer-vector FP32 scales); device {} ({}) is {}.{}: use per-tensor scales",
                            to_string(P.scales.a), to_string(P.scales.b), device_, id.name, id.cc_major, id.cc_minor),
                P.api);
    }
    if (P.pass.on) pass_ = load_epilog_pass(P, options, device_);
    workspace_ = stream_workspace(device_, resource_);
    try {
        create_descriptors();
        query_heuristics(std::clamp(max_algorithms, 1, 64));
    } catch (...) {
        release();  // the descriptors created so far; members clean up themselves
        throw;
    }
    g_live_plans.fetch_add(1, std::memory_order_relaxed);
}

MatmulPlan::~MatmulPlan() {
    g_live_plans.fetch_sub(1, std::memory_order_relaxed);
    release();
}

void MatmulPlan::release() noexcept {
    if (lc_ != nullptr && lc_ != ld_) (void)cublasLtMatrixLayoutDestroy(lc_);
    if (ld_ != nullptr) (void)cublasLtMatrixLayoutDestroy(ld_);
    if (lb_ != nullptr) (void)cublasLtMatrixLayoutDestroy(lb_);
    if (la_ != nullptr) (void)cublasLtMatrixLayoutDestroy(la_);
    if (desc_ != nullptr) (void)cublasLtMatmulDescDestroy(desc_);
    lc_ = ld_ = lb_ = la_ = nullptr;
    desc_ = nullptr;
}

void MatmulPlan::create_descriptors() {
    const MatmulProblem& P = problem_;
    check_cublas(int(cublasLtMatmulDescCreate(&desc_, P.lt.compute, P.lt.scale_type)), "cublasLtMatmulDescCreate",
                 "creating the matmul descriptor");
    set_desc(desc_, CUBLASLT_MATMUL_DESC_TRANSA, std::int32_t(P.lt.op_a), "setting TRANSA");
    set_desc(desc_, CUBLASLT_MATMUL_DESC_TRANSB, std::int32_t(P.lt.op_b), "setting TRANSB");
    if (P.sm_count_target > 0)
        set_desc(desc_, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, std::int32_t(P.sm_count_target),
                 "setting the SM count target");
    if (P.lt.epilog != CUBLASLT_EPILOGUE_DEFAULT)
        set_desc(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, std::uint32_t(P.lt.epilog), "setting the epilogue");
    // A per-product loop (P.lt.loop) describes one product to cuBLASLt and offsets the pointers.
    const bool batched = P.shape.batch > 1 && !P.lt.loop.on;
    if (P.inputs.bias_vector) {
        if (P.types.fp8)
            set_desc(desc_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, std::int32_t(to_cuda(P.types.bias)),
                     "setting the bias type");
        if (batched)
            set_desc(desc_, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, P.lt.bias_batch_stride,
                     "setting the bias batch stride");
        current_[ptr_bias] = fake_pointer(planned_alignment(P, slot_bias));
        has_pointer_attributes_ = true;
    }
    if (P.inputs.bias_grad) {
        if (batched)
            set_desc(desc_, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, P.lt.bias_grad_batch_stride,
                     "setting the bias-gradient batch stride");
        current_[ptr_bias] = fake_pointer(P.signature.align[slot_bias_grad]);
        has_pointer_attributes_ = true;
    }
    if (P.inputs.bias_vector || P.inputs.bias_grad)
        set_desc(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, current_[ptr_bias], "setting the bias pointer");
    if (P.inputs.aux != AuxKind::none) {
        set_desc(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, P.lt.aux_ld, "setting the aux leading dimension");
        if (batched)
            set_desc(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, P.lt.aux_batch_stride,
                     "setting the aux batch stride");
        current_[ptr_aux] = fake_pointer(planned_alignment(P, slot_aux));
        set_desc(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, current_[ptr_aux], "setting the aux pointer");
        has_pointer_attributes_ = true;
    }
    if (P.types.fp8) {
        if (P.types.fast_accumulation)
            set_desc(desc_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, std::int8_t(1), "setting FAST_ACCUM");
        // Scales are per user operand; with the swap cuBLASLt's A is the user's B.
        const std::uint8_t lt_a_bit = P.lt.swap ? scale_b : scale_a, lt_b_bit = P.lt.swap ? scale_a : scale_b;
        const struct {
            std::uint8_t bit;
            cublasLtMatmulDescAttributes_t attr;
            int slot;
        } scales[] = {{lt_a_bit, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, ptr_scale_a},
                      {lt_b_bit, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, ptr_scale_b},
                      {scale_c, CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, ptr_scale_c},
                      {scale_d, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, ptr_scale_d},
                      {scale_amax_d, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, ptr_amax_d}};
        for (const auto& s : scales) {
            if ((P.signature.scales & s.bit) == 0) continue;
            // The heuristic sees the alignment of the caller's scale pointers (a plan never runs
            // with scale pointers less aligned than it was made for).
            current_[std::size_t(s.slot)] = fake_pointer(P.signature.align[slot_scales]);
            set_desc(desc_, s.attr, current_[std::size_t(s.slot)], "setting a scale pointer");
            has_pointer_attributes_ = true;
        }
        if (P.scales.fine) {
            // The modes and tensors follow the operands through the swap (cuBLASLt's A is the user's b).
            set_desc(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, P.lt.a_scale_mode, "setting the A scale mode");
            set_desc(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, P.lt.b_scale_mode, "setting the B scale mode");
            const int lt_a_slot = P.lt.swap ? slot_b_scale : slot_a_scale;
            const int lt_b_slot = P.lt.swap ? slot_a_scale : slot_b_scale;
            current_[ptr_scale_a] = fake_pointer(planned_alignment(P, lt_a_slot));
            current_[ptr_scale_b] = fake_pointer(planned_alignment(P, lt_b_slot));
            set_desc(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, current_[ptr_scale_a], "setting the A scale tensor");
            set_desc(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, current_[ptr_scale_b], "setting the B scale tensor");
            has_pointer_attributes_ = true;
        }
    }
    auto make_layout = [&](const LtMatrix& m, cudaDataType_t type) {
        cublasLtMatrixLayout_t l = nullptr;
        check_cublas(int(cublasLtMatrixLayoutCreate(&l, type, m.rows, m.cols, m.ld)), "cublasLtMatrixLayoutCreate",
                     [&] { return fmt::format("creating a {}x{} layout with ld {}", m.rows, m.cols, m.ld); });
        if (batched) {
            const auto count = static_cast<std::int32_t>(P.shape.batch);
            const cublasStatus_t s1 =
                cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
            const cublasStatus_t s2 = cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                                       &m.batch_stride, sizeof m.batch_stride);
            if (s1 != CUBLAS_STATUS_SUCCESS || s2 != CUBLAS_STATUS_SUCCESS) {
                (void)cublasLtMatrixLayoutDestroy(l);
                check_cublas(int(s1 != CUBLAS_STATUS_SUCCESS ? s1 : s2), "cublasLtMatrixLayoutSetAttribute",
                             "setting the batch count and stride");
            }
        }
        return l;
    };
    la_ = make_layout(P.lt.a, P.lt.a.type);
    lb_ = make_layout(P.lt.b, P.lt.b.type);
    ld_ = make_layout(P.lt.d, P.lt.d.type);
    if (P.lt.has_c) lc_ = make_layout(P.lt.c, P.lt.c.type);
    else if (P.types.c == P.types.d) lc_ = ld_;
    else lc_ = make_layout(P.lt.d, to_cuda(P.types.c));
}

void MatmulPlan::query_heuristics(int max_algorithms) {
    const MatmulProblem& P = problem_;
    cublasLtMatmulPreference_t pref = nullptr;
    check_cublas(int(cublasLtMatmulPreferenceCreate(&pref)), "cublasLtMatmulPreferenceCreate");
    const ScopeExit destroy_pref([pref] { (void)cublasLtMatmulPreferenceDestroy(pref); });
    auto set_pref = [&](cublasLtMatmulPreferenceAttributes_t attr, const auto& v) {
        check_cublas(int(cublasLtMatmulPreferenceSetAttribute(pref, attr, &v, sizeof v)),
                     "cublasLtMatmulPreferenceSetAttribute", "setting a heuristic preference");
    };
    set_pref(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, std::uint64_t(workspace_limit_));
    const std::uint16_t c_align =
        P.lt.has_c ? (P.inputs.c_from_bias ? std::min(P.signature.align[slot_bias], planned_alignment(P, slot_c))
                                           : planned_alignment(P, slot_c))
                   : (P.types.c == P.types.d ? planned_alignment(P, slot_d) : std::uint16_t(256));
    set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
             std::uint32_t(planned_alignment(P, P.lt.swap ? slot_b : slot_a)));
    set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
             std::uint32_t(planned_alignment(P, P.lt.swap ? slot_a : slot_b)));
    set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, std::uint32_t(c_align));
    set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, std::uint32_t(planned_alignment(P, slot_d)));

    std::vector<cublasLtMatmulHeuristicResult_t> found(static_cast<std::size_t>(max_algorithms));
    int returned = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(lt_handle(device_), desc_, la_, lb_, lc_, ld_, pref,
                                                                 max_algorithms, found.data(), &returned);
    if (status != CUBLAS_STATUS_SUCCESS && status != CUBLAS_STATUS_NOT_SUPPORTED)
        check_cublas(int(status), "cublasLtMatmulAlgoGetHeuristic",
                     [&] { return fmt::format("asking for algorithms for {}", P.describe()); });
    for (int i = 0; status == CUBLAS_STATUS_SUCCESS && i < returned; ++i)
        if (found[std::size_t(i)].state == CUBLAS_STATUS_SUCCESS) results_.push_back(found[std::size_t(i)]);
    if (results_.empty()) {
        const char* hint = "";
        if (P.inputs.epilog == Epilog::bgrada)
            hint =
                " (cuBLASLt reduces for bias gradients along the unit-stride dimension: bgrada may need a "
                "column-major a)";
        else if (P.inputs.epilog == Epilog::bgradb)
            hint =
                " (cuBLASLt reduces for bias gradients along the unit-stride dimension: bgradb may need a "
                "row-major b)";
        throw_not_supported(
            fmt::format("cuBLASLt has no algorithm for this product on device {} ({}), workspace limit {} bytes, "
                        "pointer alignments a {} b {} c {} d {} bias {} aux {} scales {} (bytes){}: {}",
                        device_, device_identity(device_).name, workspace_limit_, P.signature.align[slot_a],
                        P.signature.align[slot_b], P.signature.align[slot_c], P.signature.align[slot_d],
                        P.signature.align[slot_bias], P.signature.align[slot_aux], P.signature.align[slot_scales], hint,
                        P.describe()),
            "cublasLtMatmulAlgoGetHeuristic");
    }
    infos_.reserve(results_.size());
    for (const auto& r : results_) infos_.push_back(algorithm_info(r));
    selected_ = 0;
    if (log_enabled(LogLevel::debug)) {
        const AlgorithmInfo& a = infos_.front();
        detail::log(
            LogLevel::debug,
            "matmul plan: algorithm {} tile {} stages {} split-k {} cluster {} workspace {} B ({} candidates) for {}",
            a.id, a.tile, a.stages, a.split_k, a.cluster_shape, a.workspace_bytes, infos_.size(), P.describe());
    }
}

void MatmulPlan::select(std::size_t index) {
    if (index >= results_.size())
        throw_invalid(fmt::format("index: {} given; the plan has {} candidate algorithms (0..{})", index,
                                  results_.size(), results_.size() - 1),
                      "Matmul::select_algorithm");
    selected_ = index;
}

void MatmulPlan::reorder(const std::vector<std::size_t>& order) {
    std::vector<cublasLtMatmulHeuristicResult_t> r;
    std::vector<AlgorithmInfo> i;
    for (std::size_t k : order) {
        r.push_back(results_[k]);
        i.push_back(infos_[k]);
    }
    results_ = std::move(r);
    infos_ = std::move(i);
    selected_ = 0;
}

std::size_t MatmulPlan::add_split_k_variants() {
    if (results_.empty()) return 0;
    // The heuristic's first kernel with the other split-K factors cuBLASLt accepts: the heuristic
    // offers at most one factor per kernel, and products with few output tiles and a long K (a
    // small M) can fill the GPU better with another.
    constexpr std::int32_t factors[] = {1, 2, 3, 4, 6, 8, 12, 16};
    constexpr std::uint32_t schemes[] = {CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE, CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE,
                                         CUBLASLT_REDUCTION_SCHEME_INPLACE};
    const cublasLtMatmulAlgo_t base = results_.front().algo;
    const auto base_scheme = algo_config<std::uint32_t>(base, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
    auto known = [&](const cublasLtMatmulAlgo_t& algo) {
        return std::any_of(results_.begin(), results_.end(),
                           [&](const auto& r) { return std::memcmp(&r.algo, &algo, sizeof algo) == 0; });
    };
    auto set = [](cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr, auto value) {
        return cublasLtMatmulAlgoConfigSetAttribute(&algo, attr, &value, sizeof value) == CUBLAS_STATUS_SUCCESS;
    };
    std::size_t added = 0;
    for (const std::int32_t factor : factors) {
        std::vector<std::uint32_t> tries;
        if (factor == 1) tries = {CUBLASLT_REDUCTION_SCHEME_NONE};
        else if (base_scheme != CUBLASLT_REDUCTION_SCHEME_NONE) tries = {base_scheme};
        else tries.assign(std::begin(schemes), std::end(schemes));
        for (const std::uint32_t scheme : tries) {
            cublasLtMatmulAlgo_t algo = base;
            if (!set(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, factor) ||
                !set(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, scheme) || known(algo))
                continue;
            cublasLtMatmulHeuristicResult_t checked{};
            if (cublasLtMatmulAlgoCheck(lt_handle(device_), desc_, la_, lb_, lc_, ld_, &algo, &checked) !=
                    CUBLAS_STATUS_SUCCESS ||
                checked.workspaceSize > workspace_limit_)
                continue;
            checked.algo = algo;
            checked.state = CUBLAS_STATUS_SUCCESS;
            results_.push_back(checked);
            infos_.push_back(algorithm_info(checked));
            ++added;
            break;
        }
    }
    return added;
}

bool MatmulPlan::adopt(const cublasLtMatmulAlgo_t& algo) {
    cublasLtMatmulHeuristicResult_t checked{};
    const cublasStatus_t s = cublasLtMatmulAlgoCheck(lt_handle(device_), desc_, la_, lb_, lc_, ld_, &algo, &checked);
    if (s != CUBLAS_STATUS_SUCCESS || checked.workspaceSize > workspace_limit_) return false;
    checked.algo = algo;
    checked.state = CUBLAS_STATUS_SUCCESS;
    for (std::size_t i = 0; i < results_.size(); ++i) {
        if (std::memcmp(&results_[i].algo, &algo, sizeof algo) == 0) {
            std::vector<std::size_t> order{i};
            for (std::size_t j = 0; j < results_.size(); ++j)
                if (j != i) order.push_back(j);
            const double t = infos_[i].time_ms;
            reorder(order);
            infos_[0].time_ms = t;
            return true;
        }
    }
    results_.insert(results_.begin(), checked);
    infos_.insert(infos_.begin(), algorithm_info(checked));
    selected_ = 0;
    return true;
}

void MatmulPlan::set_pointer(cublasLtMatmulDescAttributes_t attr, int slot, const void* value) {
    if (current_[std::size_t(slot)] == value) return;
    check_cublas(int(cublasLtMatmulDescSetAttribute(desc_, attr, &value, sizeof value)),
                 "cublasLtMatmulDescSetAttribute", "setting an epilog or scale pointer");
    current_[std::size_t(slot)] = value;
}

void MatmulPlan::run(const MatmulPointers& p, const Scalar& alpha, const Scalar& beta, core::StreamRef stream,
                     int current_device, const WorkspaceArea* area) {
    std::optional<DeviceGuard> guard;
    if (current_device != device_) guard.emplace(device_);
    run_lt(p, alpha, beta, stream, area);
    if (pass_) run_epilog_pass(*pass_, problem_.pass, p.d, p.pass_bias, p.user_info, stream);
}

std::size_t MatmulPlan::workspace_bytes() const noexcept {
    const std::size_t needed = results_[selected_].workspaceSize;
    // At least the default limit, so that plans on one stream share one buffer that rarely grows.
    return needed == 0 ? 0 : std::max(needed, std::min(workspace_limit_, default_workspace_limit));
}

void MatmulPlan::run_lt(const MatmulPointers& p, const Scalar& alpha, const Scalar& beta, core::StreamRef stream,
                        const WorkspaceArea* area) {
    const MatmulProblem& P = problem_;

    // An f16 scale type (compute type f16) holds |x| <= 65504; past it alpha or beta would reach the
    // GPU as infinity. The entry points check this first; this guards every other way to a plan.
    check_scale_range(alpha, beta, P.lt.scale_type == CUDA_R_16F, P.api);
    alignas(16) unsigned char alpha_buf[16];
    alignas(16) unsigned char beta_buf[16];
    encode_scalar(alpha, P.lt.scale_type, alpha_buf);
    // A full (M, N) bias is C with beta = 1 (the caller's beta is 0: there is no c).
    encode_scalar(P.inputs.c_from_bias ? Scalar(1.0) : beta, P.lt.scale_type, beta_buf);

    const cublasLtMatmulHeuristicResult_t& algo = results_[selected_];
    const std::size_t ws_bytes = workspace_bytes();
    StreamWorkspace::Lease lease;  // held until cublasLtMatmul has enqueued the product
    if (area != nullptr && ws_bytes > area->bytes) [[unlikely]]
        throw_not_supported(fmt::format("the grouped call's workspace area holds {} bytes; this product needs {}",
                                        area->bytes, ws_bytes),
                            P.api);
    if (ws_bytes > 0 && area == nullptr) lease = workspace_->acquire(ws_bytes, stream);
    void* ws = area != nullptr && ws_bytes > 0 ? area->data : lease.data;
    auto matmul = [&](const MatmulPointers& q) {
        const void* lt_a = P.lt.swap ? q.b : q.a;
        const void* lt_b = P.lt.swap ? q.a : q.b;
        const void* c = P.lt.has_c ? q.c : (P.types.c == P.types.d ? q.d : nullptr);
        const cublasStatus_t s = cublasLtMatmul(lt_handle(device_), desc_, alpha_buf, lt_a, la_, lt_b, lb_, beta_buf, c,
                                                lc_, q.d, ld_, &algo.algo, ws, ws_bytes, stream.handle());
        if (s != CUBLAS_STATUS_SUCCESS) [[unlikely]]
            check_cublas(int(s), "cublasLtMatmul", [&] { return fmt::format("running {}", P.describe()); });
    };
    if (!has_pointer_attributes_) {
        matmul(p);
        return;
    }
    // The descriptor is shared by every thread running this plan; its pointer attributes are
    // written and read by cublasLtMatmul under the lock.
    std::lock_guard lock(mutex_);
    if (!P.lt.loop.on) {
        set_pointer_attributes(p);
        matmul(p);
        return;
    }
    // One product at a time (batched finer scale modes): every pointer moves by its batch stride.
    const BatchLoop& l = P.lt.loop;
    for (std::int64_t i = 0; i < P.shape.batch; ++i) {
        MatmulPointers q = p;
        q.for_each_operand([&](Slot slot, auto*& ptr) { ptr = offset(ptr, i * l[slot]); });
        set_pointer_attributes(q);
        matmul(q);
    }
}

void MatmulPlan::set_pointer_attributes(const MatmulPointers& p) {
    const MatmulProblem& P = problem_;
    if (P.inputs.bias_vector) set_pointer(CUBLASLT_MATMUL_DESC_BIAS_POINTER, ptr_bias, p.bias);
    if (P.inputs.bias_grad) set_pointer(CUBLASLT_MATMUL_DESC_BIAS_POINTER, ptr_bias, p.bias_grad);
    if (P.inputs.aux != AuxKind::none) set_pointer(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, ptr_aux, p.aux);
    if (P.scales.fine) {
        set_pointer(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, ptr_scale_a, P.lt.swap ? p.b_scale : p.a_scale);
        set_pointer(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, ptr_scale_b, P.lt.swap ? p.a_scale : p.b_scale);
    } else if (P.types.fp8 && P.signature.scales != 0) {
        const float* sa = P.lt.swap ? p.scales.b : p.scales.a;
        const float* sb = P.lt.swap ? p.scales.a : p.scales.b;
        if (sa) set_pointer(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, ptr_scale_a, sa);
        if (sb) set_pointer(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, ptr_scale_b, sb);
    }
    if (P.types.fp8 && P.signature.scales != 0) {
        if (p.scales.c) set_pointer(CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, ptr_scale_c, p.scales.c);
        if (p.scales.d) set_pointer(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, ptr_scale_d, p.scales.d);
        if (p.scales.amax_d) set_pointer(CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, ptr_amax_d, p.scales.amax_d);
    }
}

MatmulPointers prepare_pointers(const MatmulPlan& plan, const TensorView& a, const TensorView& b, const TensorView& d,
                                const MatmulArgs& args, core::StreamRef stream, MatmulOutputs& out) {
    const MatmulProblem& P = plan.problem();
    MatmulPointers p;
    p.a = a.data();
    p.b = b.data();
    p.d = d.data();
    if (P.inputs.c_from_bias) p.c = args.bias->data();
    else if (args.c) p.c = args.c->data();
    if (P.inputs.bias_vector) p.bias = args.bias->data();
    auto check_allocated = [&](const void* ptr, int slot) {
        if (alignment_class(ptr) < plan.key().align[std::size_t(slot)])
            throw_not_supported(
                fmt::format("{}: the memory resource returned a {}-byte aligned block; gpumath plans "
                            "its outputs for {} bytes",
                            slot_names[std::size_t(slot)], alignment_class(ptr), plan.key().align[std::size_t(slot)]),
                P.api);
    };
    if (P.inputs.aux != AuxKind::none) {
        if (args.aux) {
            p.aux = args.aux->data();
            out.aux_view = *args.aux;
        } else {
            reject_capture(stream, P.api, "gpumath allocates no outputs during a capture: pass MatmulArgs::aux");
            out.aux = Tensor::empty(P.inputs.aux_storage, stream, plan.memory_resource());
            p.aux = out.aux.data();
            check_allocated(p.aux, slot_aux);
            out.aux_view = TensorView(p.aux, P.inputs.aux_view);
        }
    }
    if (P.inputs.bias_grad) {
        if (args.bias_grad) {
            p.bias_grad = args.bias_grad->data();
        } else {
            reject_capture(stream, P.api, "gpumath allocates no outputs during a capture: pass MatmulArgs::bias_grad");
            out.bias_grad = Tensor::empty(P.inputs.bias_grad_storage, stream, plan.memory_resource());
            p.bias_grad = out.bias_grad.data();
            check_allocated(p.bias_grad, slot_bias_grad);
        }
    }
    if (P.pass.bias) p.pass_bias = args.bias->data();
    p.user_info = args.epilog_user_info;
    p.scales = args.scales;
    if (args.scales.a_tensor) p.a_scale = args.scales.a_tensor->data();
    if (args.scales.b_tensor) p.b_scale = args.scales.b_tensor->data();
    return p;
}

MatmulOutputs run_plan(MatmulPlan& plan, const TensorView& a, const TensorView& b, const TensorView& d,
                       const MatmulArgs& args, core::StreamRef stream, int current_device, const WorkspaceArea* area) {
    MatmulOutputs out;
    const MatmulPointers p = prepare_pointers(plan, a, b, d, args, stream, out);
    plan.run(p, args.alpha, args.beta, stream, current_device, area);
    return out;
}

}  // namespace gpumath::detail
