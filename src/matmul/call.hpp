// SPDX-License-Identifier: Apache-2.0
// Private to src/matmul: one description of a call (the layout of every operand, each pointer's
// alignment class, the FP8 scales present) and everything derived from it: the plan key, its hash,
// key equality and the test of whether a plan serves a call.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include <gpumath/layout.hpp>
#include <gpumath/matmul/options.hpp>

namespace gpumath::detail {

/// Operand slots. Every slot before `slot_scales` has a layout (a_scale and b_scale: the scale
/// tensors of the finer FP8 scale modes); `slot_scales` is the least aligned of the per-tensor FP8
/// scale and amax pointers given (cuBLASLt reads pointer values of epilog and scale attributes to
/// infer their alignment).
enum Slot : int {
    slot_a,
    slot_b,
    slot_c,
    slot_d,
    slot_bias,
    slot_aux,
    slot_bias_grad,
    slot_a_scale,
    slot_b_scale,
    slot_scales,
    slot_count
};
inline constexpr int layout_slot_count = slot_scales;

inline constexpr std::array<const char*, slot_count> slot_names = {
    "a", "b", "c", "d", "bias", "aux", "bias_grad", "scales.a_tensor", "scales.b_tensor", "scales"};

using Alignments = std::array<std::uint16_t, slot_count>;
inline constexpr Alignments unaligned_nothing{256, 256, 256, 256, 256, 256, 256, 256, 256, 256};

/// The largest power of two <= 256 that divides `v` (256 for 0): the alignment of an address or
/// of an offset in bytes.
[[nodiscard]] inline std::uint16_t alignment_of(std::uint64_t v) noexcept {
    if (v == 0) return 256;
    const std::uint64_t low = v & (~v + 1);
    return low >= 256 ? std::uint16_t(256) : static_cast<std::uint16_t>(low);
}

/// The largest power of two <= 256 that divides the address (256 for null).
[[nodiscard]] inline std::uint16_t alignment_class(const void* p) noexcept {
    return alignment_of(reinterpret_cast<std::uintptr_t>(p));
}

/// Bits of MatmulCall::scales.
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

/// MatmulCall::scale_modes: A's ScaleMode in the low four bits, B's in the high four.
[[nodiscard]] inline std::uint8_t scale_modes_of(const MatmulScales& s) noexcept {
    return static_cast<std::uint8_t>((unsigned(s.a_mode) & 0xfU) | (unsigned(s.b_mode) & 0xfU) << 4);
}
[[nodiscard]] inline ScaleMode a_scale_mode(std::uint8_t modes) noexcept { return ScaleMode(modes & 0xfU); }
[[nodiscard]] inline ScaleMode b_scale_mode(std::uint8_t modes) noexcept { return ScaleMode(modes >> 4); }

/// One call as a plan depends on it: the layout of every operand slot (nullptr: absent), each
/// pointer's alignment class (256 for absent operands), the per-tensor FP8 scales present and the
/// scale modes. Non-owning: it points into the views of a call or into a MatmulSignature, so
/// building one copies no layout.
struct MatmulCall {
    std::array<const TensorLayout*, layout_slot_count> layouts{};
    Alignments align = unaligned_nothing;
    std::uint8_t scales = 0;
    std::uint8_t scale_modes = 0;
};

/// The description of a call with views (`d` may be null: the allocating forms).
[[nodiscard]] MatmulCall call_of(const TensorView& a, const TensorView& b, const TensorView* d,
                                 const MatmulArgs& args) noexcept;

/// True when `call` has the layouts and scales of `planned` and each pointer is at least as aligned
/// as planned: a plan made for `planned` serves `call`.
[[nodiscard]] bool plan_serves(const MatmulCall& planned, const MatmulCall& call) noexcept;

/// An owning MatmulCall: the layouts of a call, or of a plan made from layouts alone
/// (`from_layouts`: absent d and bias take their defaults).
struct MatmulSignature {
    TensorLayout a;
    TensorLayout b;
    std::optional<TensorLayout> c;
    std::optional<TensorLayout> d;
    std::optional<TensorLayout> bias;
    std::optional<TensorLayout> aux;        // absent: an aux output is allocated by gpumath
    std::optional<TensorLayout> bias_grad;  // absent: a bias gradient is allocated by gpumath
    std::optional<TensorLayout> a_scale;    // the scale tensors of finer FP8 scale modes
    std::optional<TensorLayout> b_scale;
    std::uint8_t scales = 0;
    std::uint8_t scale_modes = 0;
    bool from_layouts = false;
    Alignments align = unaligned_nothing;

    /// Copies the layouts of `call`.
    [[nodiscard]] static MatmulSignature of(const MatmulCall& call);
    /// The description of this signature (points into it).
    [[nodiscard]] MatmulCall call() const noexcept;
};

/// A plan cache key: the call and options as a word string (hashed without strings) plus the
/// alignment classes. `problem_words` covers the options and the a, b, c layouts. `words` is left
/// uninitialized: only its first `size` words are written and read, and every call builds a key.
// NOLINTNEXTLINE(cppcoreguidelines-pro-type-member-init): see above
struct MatmulKey {
    static constexpr std::size_t capacity = 176;
    std::array<std::uint64_t, capacity> words;  // only the first `size` are meaningful
    std::uint32_t size = 0;
    std::uint32_t problem_words = 0;
    std::size_t hash = 0;
    Alignments align{};

    [[nodiscard]] bool same_layouts(const MatmulKey& o) const noexcept {
        return size == o.size && std::memcmp(words.data(), o.words.data(), size * sizeof(std::uint64_t)) == 0;
    }
    [[nodiscard]] bool same_problem(const MatmulKey& o) const noexcept {
        return problem_words == o.problem_words &&
               std::memcmp(words.data(), o.words.data(), problem_words * sizeof(std::uint64_t)) == 0;
    }
    /// True when every pointer of a call with alignment `actual` is at least as aligned as planned.
    [[nodiscard]] bool aligned_enough(const Alignments& actual) const noexcept {
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

/// The key of `call` under `options`. `device` is part of the key of the stateless cache; pass -1
/// for a key that is the same in every process (tuning files).
[[nodiscard]] MatmulKey make_key(const MatmulCall& call, const MatmulOptions& options, int device) noexcept;
/// The hash of a key's words and alignment classes.
[[nodiscard]] std::size_t hash_key(const MatmulKey& k) noexcept;
/// Hex text of a key (for tuning files) and back; `parse_key` returns false on text key_to_text
/// would not write (malformed, capitals, leading zeros).
[[nodiscard]] std::string key_to_text(const MatmulKey& key);
[[nodiscard]] bool parse_key(const std::string& text, MatmulKey& key);

}  // namespace gpumath::detail
