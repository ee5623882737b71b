// SPDX-License-Identifier: Apache-2.0
// Signatures of calls and plan keys: plain words, hashed without strings.
#include "matmul/internal.hpp"

#include <cstdio>

namespace gpumath::detail {

MatmulSignature signature_of(const TensorView& a, const TensorView& b, const TensorView* d, const MatmulArgs& args) {
    MatmulSignature s;
    s.a = a;
    s.b = b;
    s.align[slot_a] = alignment_class(a.data());
    s.align[slot_b] = alignment_class(b.data());
    if (d != nullptr) {
        s.d = *d;
        s.align[slot_d] = alignment_class(d->data());
    }
    if (args.c) {
        s.c = *args.c;
        s.align[slot_c] = alignment_class(args.c->data());
    }
    if (args.bias) {
        s.bias = *args.bias;
        s.align[slot_bias] = alignment_class(args.bias->data());
    }
    if (args.aux) {
        s.aux = *args.aux;
        s.align[slot_aux] = alignment_class(args.aux->data());
    }
    if (args.bias_grad) {
        s.bias_grad = *args.bias_grad;
        s.align[slot_bias_grad] = alignment_class(args.bias_grad->data());
    }
    s.scales = scales_mask(args.scales);
    return s;
}

namespace {

constexpr std::uint64_t key_tag = 0x676d6d6b65793031ULL;  // "gmmkey01"

void push(MatmulKey& k, std::uint64_t w) noexcept {
    // A key never overflows: 7 layouts of rank <= 8 need at most 7 * 17 + 6 words.
    k.words[k.size++] = w;
}

void push_layout(MatmulKey& k, int slot, const TensorLayout& l) noexcept {
    push(k, std::uint64_t(slot) << 16 | std::uint64_t(l.rank()) << 8 | std::uint64_t(l.dtype()));
    for (int i = 0; i < l.rank(); ++i) push(k, std::uint64_t(l.shape(i)));
    for (int i = 0; i < l.rank(); ++i) push(k, std::uint64_t(l.stride(i)));
}

std::uint64_t mix(std::uint64_t h, std::uint64_t w) noexcept {
    h ^= w + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
}

}  // namespace

MatmulKey make_key(const MatmulSignature& sig, const MatmulOptions& options, int device) {
    MatmulKey k;
    push(k, key_tag);
    push(k, std::uint64_t(options.compute_type) | std::uint64_t(options.epilog) << 8 |
                std::uint64_t(options.result_type ? int(*options.result_type) : 0xff) << 16 |
                std::uint64_t(options.fast_accumulation) << 24 | std::uint64_t(sig.from_layouts) << 25);
    push(k, std::uint64_t(options.workspace_limit));
    push(k, device < 0 ? 0 : reinterpret_cast<std::uintptr_t>(options.memory_resource.get()));
    push(k, device < 0 ? 0 : std::uint64_t(device) + 1);
    push_layout(k, slot_a, sig.a);
    push_layout(k, slot_b, sig.b);
    if (sig.c) push_layout(k, slot_c, *sig.c);
    k.problem_words = k.size;
    push(k, std::uint64_t(sig.scales) | std::uint64_t(sig.d.has_value()) << 8 | std::uint64_t(sig.bias.has_value()) << 9 |
                std::uint64_t(sig.aux.has_value()) << 10 | std::uint64_t(sig.bias_grad.has_value()) << 11);
    if (sig.d) push_layout(k, slot_d, *sig.d);
    if (sig.bias) push_layout(k, slot_bias, *sig.bias);
    if (sig.aux) push_layout(k, slot_aux, *sig.aux);
    if (sig.bias_grad) push_layout(k, slot_bias_grad, *sig.bias_grad);
    k.align = sig.align;
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (std::uint32_t i = 0; i < k.size; ++i) h = mix(h, k.words[i]);
    for (std::uint16_t a : k.align) h = mix(h, a);
    k.hash = std::size_t(h);
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
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (std::uint32_t i = 0; i < key.size; ++i) h = mix(h, key.words[i]);
    for (std::uint16_t a : key.align) h = mix(h, a);
    key.hash = std::size_t(h);
    return true;
}

}  // namespace gpumath::detail
