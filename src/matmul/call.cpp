// SPDX-License-Identifier: Apache-2.0
// The description of a call and what derives from it: plan keys (plain words, hashed without
// strings) and the plan-match test.
#include "matmul/call.hpp"

#include "core/hash.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <system_error>

namespace gpumath::detail {

MatmulCall call_of(const TensorView& a, const TensorView& b, const TensorView* d, const MatmulArgs& args) noexcept {
    MatmulCall call;
    auto put = [&](int slot, const TensorView* v) {
        if (v == nullptr) return;
        call.layouts[std::size_t(slot)] = v;
        call.align[std::size_t(slot)] = alignment_class(v->data());
    };
    put(slot_a, &a);
    put(slot_b, &b);
    put(slot_c, args.c ? &*args.c : nullptr);
    put(slot_d, d);
    put(slot_bias, args.bias ? &*args.bias : nullptr);
    put(slot_aux, args.aux ? &*args.aux : nullptr);
    put(slot_bias_grad, args.bias_grad ? &*args.bias_grad : nullptr);
    put(slot_a_scale, args.scales.a_tensor ? &*args.scales.a_tensor : nullptr);
    put(slot_b_scale, args.scales.b_tensor ? &*args.scales.b_tensor : nullptr);
    call.align[slot_scales] = scales_alignment(args.scales);
    call.scales = scales_mask(args.scales);
    call.scale_modes = scale_modes_of(args.scales);
    return call;
}

bool plan_serves(const MatmulCall& planned, const MatmulCall& call) noexcept {
    if (planned.scales != call.scales || planned.scale_modes != call.scale_modes) return false;
    for (int s = 0; s < layout_slot_count; ++s) {
        const TensorLayout* x = planned.layouts[std::size_t(s)];
        const TensorLayout* y = call.layouts[std::size_t(s)];
        if ((x == nullptr) != (y == nullptr) || (x != nullptr && !(*x == *y))) return false;
    }
    for (int s = 0; s < slot_count; ++s)
        if (call.align[std::size_t(s)] < planned.align[std::size_t(s)]) return false;
    return true;
}

MatmulSignature MatmulSignature::of(const MatmulCall& call) {
    auto get = [&](int slot) {
        const TensorLayout* l = call.layouts[std::size_t(slot)];
        return l ? std::optional<TensorLayout>(*l) : std::nullopt;
    };
    MatmulSignature s;
    s.a = *call.layouts[slot_a];
    s.b = *call.layouts[slot_b];
    s.c = get(slot_c);
    s.d = get(slot_d);
    s.bias = get(slot_bias);
    s.aux = get(slot_aux);
    s.bias_grad = get(slot_bias_grad);
    s.a_scale = get(slot_a_scale);
    s.b_scale = get(slot_b_scale);
    s.scales = call.scales;
    s.scale_modes = call.scale_modes;
    s.align = call.align;
    return s;
}

MatmulCall MatmulSignature::call() const noexcept {
    auto ptr = [](const std::optional<TensorLayout>& o) { return o ? &*o : nullptr; };
    MatmulCall call;
    call.layouts = {&a, &b, ptr(c), ptr(d), ptr(bias), ptr(aux), ptr(bias_grad), ptr(a_scale), ptr(b_scale)};
    call.align = align;
    call.scales = scales;
    call.scale_modes = scale_modes;
    return call;
}

namespace {

constexpr std::uint64_t key_tag = 0x676d6d6b65793031ULL;  // "gmmkey01"

void push(MatmulKey& k, std::uint64_t w) noexcept {
    // A key never overflows: 9 layouts of rank <= 8 need at most 9 * 17 + 6 words.
    k.words[k.size++] = w;
}

void push_layout(MatmulKey& k, int slot, const TensorLayout& l) noexcept {
    const int r = l.rank();
    const std::int64_t* shape = l.shape().data();
    const std::int64_t* strides = l.strides().data();
    std::uint64_t* w = k.words.data() + k.size;
    *w++ = std::uint64_t(slot) << 16 | std::uint64_t(r) << 8 | std::uint64_t(l.dtype());
    for (int i = 0; i < r; ++i) *w++ = std::uint64_t(shape[i]);
    for (int i = 0; i < r; ++i) *w++ = std::uint64_t(strides[i]);
    k.size += std::uint32_t(1 + 2 * r);
}

}  // namespace

std::size_t hash_key(const MatmulKey& k) noexcept {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (std::uint32_t i = 0; i < k.size; ++i) h = (h ^ k.words[i]) * 0x100000001b3ULL;
    std::uint64_t a = 0;
    for (std::uint16_t x : k.align) a = a << 9 ^ x;
    h = (h ^ a) * 0x100000001b3ULL;
    return std::size_t(h ^ (h >> 29));
}

MatmulKey make_key(const MatmulCall& call, const MatmulOptions& options, int device) noexcept {
    // The words are those of tuning files written by earlier versions: options, a, b, c (the
    // problem), then a word of the other slots present, then their layouts.
    MatmulKey k;
    push(k, key_tag);
    push(k, std::uint64_t(options.compute_type) | std::uint64_t(options.epilog) << 8 |
                std::uint64_t(options.result_type ? int(*options.result_type) : 0xff) << 16 |
                std::uint64_t(options.fast_accumulation) << 24 |
                std::uint64_t(options.epilog_function.has_value()) << 25);
    if (const auto& f = options.epilog_function) {
        // The function by its digest: the same text in every process, so tuning files keep it.
        KeyHasher h;
        h.field(f->source);
        h.field(f->symbol);
        const Digest digest = h.finish();
        std::uint64_t words[2];
        std::memcpy(words, digest.data(), sizeof words);
        push(k, words[0]);
        push(k, words[1]);
    }
    push(k, std::uint64_t(options.workspace_limit));
    push(k, device < 0 ? 0 : reinterpret_cast<std::uintptr_t>(options.memory_resource.get()));
    push(k, device < 0 ? 0 : std::uint64_t(device) + 1);
    for (int s : {slot_a, slot_b, slot_c})
        if (const TensorLayout* l = call.layouts[std::size_t(s)]) push_layout(k, s, *l);
    k.problem_words = k.size;
    std::uint64_t present = call.scales | std::uint64_t(call.scale_modes) << 32;
    for (int s = slot_d; s < layout_slot_count; ++s)
        if (call.layouts[std::size_t(s)] != nullptr) present |= std::uint64_t(1) << (8 + s - slot_d);
    push(k, present);
    for (int s = slot_d; s < layout_slot_count; ++s)
        if (const TensorLayout* l = call.layouts[std::size_t(s)]) push_layout(k, s, *l);
    k.align = call.align;
    k.hash = hash_key(k);
    return k;
}

std::string key_to_text(const MatmulKey& key) {
    std::string s;
    char buf[24];
    std::snprintf(buf, sizeof buf, "%u:", key.problem_words);
    s += buf;
    for (std::uint32_t i = 0; i < key.size; ++i) {
        std::snprintf(buf, sizeof buf, "%llx.", static_cast<unsigned long long>(key.words[i]));
        s += buf;
    }
    s += '/';
    for (std::uint16_t a : key.align) {
        std::snprintf(buf, sizeof buf, "%x.", unsigned(a));
        s += buf;
    }
    return s;
}

bool parse_key(const std::string& text, MatmulKey& key) {
    key = MatmulKey{};
    // std::from_chars takes digits only: no sign, space or "0x" that strtoul would let through.
    // Only the digits key_to_text writes are taken (lowercase, no leading zero), so that a damaged
    // line cannot read as another spelling of a key.
    const char* p = text.data();
    const char* const end = text.data() + text.size();
    const auto number = [&](auto& value, int base, char terminator) {
        const auto [next, ec] = std::from_chars(p, end, value, base);
        if (ec != std::errc() || next == end || *next != terminator) return false;
        if ((next - p > 1 && *p == '0') || std::any_of(p, next, [](char c) { return c >= 'A' && c <= 'F'; }))
            return false;
        p = next + 1;
        return true;
    };
    std::uint32_t pw = 0;
    if (!number(pw, 10, ':')) return false;
    while (p != end && *p != '/') {
        std::uint64_t w = 0;
        if (key.size >= MatmulKey::capacity || !number(w, 16, '.')) return false;
        key.words[key.size++] = w;
    }
    if (p == end) return false;
    ++p;  // '/'
    std::array<std::uint16_t, slot_count> read{};
    std::size_t n = 0;
    while (p != end) {
        if (n == read.size() || !number(read[n], 16, '.')) return false;
        ++n;
    }
    // Keys written before the scale-tensor slots existed hold 8 alignment classes: the layout slots
    // up to bias_grad, then the per-tensor scales; the scale tensors were absent (256).
    constexpr std::size_t old_count = 8;
    if (n == read.size()) {
        key.align = read;
    } else if (n == old_count) {
        key.align = unaligned_nothing;
        for (int s = 0; s < slot_a_scale; ++s) key.align[std::size_t(s)] = read[std::size_t(s)];
        key.align[slot_scales] = read[old_count - 1];
    } else {
        return false;
    }
    if (pw > key.size) return false;
    key.problem_words = pw;
    key.hash = hash_key(key);
    return true;
}

}  // namespace gpumath::detail
