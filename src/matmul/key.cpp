// SPDX-License-Identifier: Apache-2.0
// Signatures of calls and plan keys: plain words, hashed without strings.
#include "matmul/internal.hpp"

#include <cstdio>

namespace gpumath::detail {

std::array<std::uint16_t, slot_count> call_alignments(const TensorView& a, const TensorView& b, const TensorView* d,
                                                      const MatmulArgs& args) noexcept {
    std::array<std::uint16_t, slot_count> align{};
    align.fill(256);  // absent operands
    align[slot_a] = alignment_class(a.data());
    align[slot_b] = alignment_class(b.data());
    if (d != nullptr) align[slot_d] = alignment_class(d->data());
    if (args.c) align[slot_c] = alignment_class(args.c->data());
    if (args.bias) align[slot_bias] = alignment_class(args.bias->data());
    if (args.aux) align[slot_aux] = alignment_class(args.aux->data());
    if (args.bias_grad) align[slot_bias_grad] = alignment_class(args.bias_grad->data());
    align[slot_scales] = scales_alignment(args.scales);
    return align;
}

MatmulSignature signature_of(const TensorView& a, const TensorView& b, const TensorView* d, const MatmulArgs& args) {
    MatmulSignature s;
    s.a = a;
    s.b = b;
    if (d != nullptr) s.d = *d;
    if (args.c) s.c = *args.c;
    if (args.bias) s.bias = *args.bias;
    if (args.aux) s.aux = *args.aux;
    if (args.bias_grad) s.bias_grad = *args.bias_grad;
    s.scales = scales_mask(args.scales);
    s.align = call_alignments(a, b, d, args);
    return s;
}

namespace {

constexpr std::uint64_t key_tag = 0x676d6d6b65793031ULL;  // "gmmkey01"

void push(MatmulKey& k, std::uint64_t w) noexcept {
    // A key never overflows: 7 layouts of rank <= 8 need at most 7 * 17 + 6 words.
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

struct KeyInputs {
    const TensorLayout* a = nullptr;
    const TensorLayout* b = nullptr;
    const TensorLayout* c = nullptr;
    const TensorLayout* d = nullptr;
    const TensorLayout* bias = nullptr;
    const TensorLayout* aux = nullptr;
    const TensorLayout* bias_grad = nullptr;
    std::uint8_t scales = 0;
    bool from_layouts = false;
};

MatmulKey build_key(const KeyInputs& in, const std::array<std::uint16_t, slot_count>& align,
                    const MatmulOptions& options, int device) noexcept {
    MatmulKey k;
    push(k, key_tag);
    push(k, std::uint64_t(options.compute_type) | std::uint64_t(options.epilog) << 8 |
                std::uint64_t(options.result_type ? int(*options.result_type) : 0xff) << 16 |
                std::uint64_t(options.fast_accumulation) << 24 | std::uint64_t(in.from_layouts) << 25);
    push(k, std::uint64_t(options.workspace_limit));
    push(k, device < 0 ? 0 : reinterpret_cast<std::uintptr_t>(options.memory_resource.get()));
    push(k, device < 0 ? 0 : std::uint64_t(device) + 1);
    push_layout(k, slot_a, *in.a);
    push_layout(k, slot_b, *in.b);
    if (in.c) push_layout(k, slot_c, *in.c);
    k.problem_words = k.size;
    push(k, std::uint64_t(in.scales) | std::uint64_t(in.d != nullptr) << 8 | std::uint64_t(in.bias != nullptr) << 9 |
                std::uint64_t(in.aux != nullptr) << 10 | std::uint64_t(in.bias_grad != nullptr) << 11);
    if (in.d) push_layout(k, slot_d, *in.d);
    if (in.bias) push_layout(k, slot_bias, *in.bias);
    if (in.aux) push_layout(k, slot_aux, *in.aux);
    if (in.bias_grad) push_layout(k, slot_bias_grad, *in.bias_grad);
    k.align = align;
    k.hash = hash_key(k);
    return k;
}

template <class T>
const TensorLayout* ptr(const std::optional<T>& o) noexcept {
    return o ? &*o : nullptr;
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

MatmulKey make_key(const MatmulSignature& sig, const MatmulOptions& options, int device) {
    const KeyInputs in{&sig.a,         &sig.b,           ptr(sig.c), ptr(sig.d), ptr(sig.bias), ptr(sig.aux),
                       ptr(sig.bias_grad), sig.scales, sig.from_layouts};
    return build_key(in, sig.align, options, device);
}

MatmulKey make_call_key(const TensorView& a, const TensorView& b, const TensorView& d, const MatmulArgs& args,
                        const MatmulOptions& options, int device) {
    const std::array<std::uint16_t, slot_count> align = call_alignments(a, b, &d, args);
    const KeyInputs in{&a,          &b,          ptr(args.c), &d, ptr(args.bias), ptr(args.aux), ptr(args.bias_grad),
                       scales_mask(args.scales), false};
    return build_key(in, align, options, device);
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
    const char* p = text.c_str();
    char* end = nullptr;
    const unsigned long pw = std::strtoul(p, &end, 10);
    if (end == p || *end != ':') return false;
    p = end + 1;
    while (*p != '/' && *p != '\0') {
        if (key.size >= MatmulKey::capacity) return false;
        const unsigned long long w = std::strtoull(p, &end, 16);
        if (end == p || *end != '.') return false;
        key.words[key.size++] = w;
        p = end + 1;
    }
    if (*p != '/') return false;
    ++p;
    for (std::size_t i = 0; i < key.align.size(); ++i) {
        const unsigned long a = std::strtoul(p, &end, 16);
        if (end == p || *end != '.') return false;
        key.align[i] = static_cast<std::uint16_t>(a);
        p = end + 1;
    }
    if (pw > key.size) return false;
    key.problem_words = std::uint32_t(pw);
    key.hash = hash_key(key);
    return true;
}

}  // namespace gpumath::detail
