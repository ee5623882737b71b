// SPDX-License-Identifier: Apache-2.0
// PTX text: its entry points and the symbols it defines, read without a PTX parser (the linker's
// duplicate-definition check needs only the names), and the check it gets before nvJitLink and the
// driver see it.
#include <algorithm>
#include <cctype>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/object_image.hpp"

namespace gpumath::detail {

std::string ptx_defect(std::string_view ptx) {
    const std::size_t nul = ptx.find('\0');
    if (nul != std::string_view::npos && ptx.find_first_not_of('\0', nul) != std::string_view::npos)
        return fmt::format("PTX with a NUL byte at offset {} of {}; the code after it would be ignored", nul,
                           ptx.size());
    return {};
}

std::vector<std::string> ptx_entry_names(std::string_view ptx) {
    std::vector<std::string> names;
    std::size_t pos = 0;
    while ((pos = ptx.find(".entry", pos)) != std::string_view::npos) {
        pos += 6;
        if (pos >= ptx.size() || (ptx[pos] != ' ' && ptx[pos] != '\t')) continue;
        const std::size_t start = ptx.find_first_not_of(" \t", pos);
        if (start == std::string_view::npos) break;
        const std::size_t end = ptx.find_first_of("( \t\r\n", start);
        if (end == std::string_view::npos) break;
        names.emplace_back(ptx.substr(start, end - start));
        pos = end;
    }
    return names;
}

namespace {

// PTX text with its comments blanked out (same length, so positions stay).
std::string ptx_without_comments(std::string_view ptx) {
    std::string text(ptx);
    std::size_t i = 0;
    while (i + 1 < text.size()) {
        if (text[i] == '/' && text[i + 1] == '/') {
            const std::size_t end = text.find('\n', i);
            const std::size_t stop = end == std::string::npos ? text.size() : end;
            std::fill(text.begin() + std::ptrdiff_t(i), text.begin() + std::ptrdiff_t(stop), ' ');
            i = stop;
        } else if (text[i] == '/' && text[i + 1] == '*') {
            const std::size_t end = text.find("*/", i + 2);
            const std::size_t stop = end == std::string::npos ? text.size() : end + 2;
            std::fill(text.begin() + std::ptrdiff_t(i), text.begin() + std::ptrdiff_t(stop), ' ');
            i = stop;
        } else {
            ++i;
        }
    }
    return text;
}

bool ptx_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool ptx_name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$' || c == '%';
}

}  // namespace

std::vector<std::string> ptx_defined_symbols(std::string_view ptx_text) {
    const std::string text = ptx_without_comments(ptx_text);
    const std::string_view ptx(text);
    std::vector<std::string> names;
    std::set<std::string, std::less<>> seen;
    const auto skip_space = [&](std::size_t i) {
        while (i < ptx.size() && ptx_space(ptx[i])) ++i;
        return i;
    };
    const auto token_end = [&](std::size_t i) {
        while (i < ptx.size() && !ptx_space(ptx[i]) && ptx[i] != '(' && ptx[i] != ';' && ptx[i] != '[' &&
               ptx[i] != '=' && ptx[i] != '{' && ptx[i] != ',')
            ++i;
        return i;
    };
    // The position of the ')' that closes the first '(' at or after `i`; npos when none does.
    const auto closing = [&](std::size_t i) {
        int depth = 0;
        for (i = ptx.find('(', i); i < ptx.size(); ++i) {
            if (ptx[i] == '(') ++depth;
            if (ptx[i] == ')' && --depth == 0) return i;
        }
        return std::string_view::npos;
    };
    const auto add = [&](std::string_view name) {
        if (!name.empty() && std::all_of(name.begin(), name.end(), ptx_name_char) &&
            seen.insert(std::string(name)).second)
            names.emplace_back(name);
    };
    std::size_t pos = 0;
    while ((pos = ptx.find(".visible", pos)) != std::string_view::npos) {
        const bool starts = pos == 0 || ptx_space(ptx[pos - 1]);
        pos += 8;
        if (!starts || pos >= ptx.size() || !ptx_space(ptx[pos])) continue;
        std::size_t i = skip_space(pos);
        const std::size_t kind_end = token_end(i);
        const std::string_view kind = ptx.substr(i, kind_end - i);
        i = skip_space(kind_end);
        if (kind == ".entry" || kind == ".func") {
            // Attributes, then a function's return parameters, come first, in parentheses.
            while (ptx.substr(i).starts_with(".attribute")) {
                const std::size_t close = closing(i);
                if (close == std::string_view::npos) return names;
                i = skip_space(close + 1);
            }
            if (kind == ".func" && i < ptx.size() && ptx[i] == '(') {
                const std::size_t close = closing(i);
                if (close == std::string_view::npos) break;
                i = skip_space(close + 1);
            }
            const std::size_t name_end = token_end(i);
            const std::string_view name = ptx.substr(i, name_end - i);
            // A body follows the parameter list (and any performance directives); a prototype ends
            // with ';'.
            std::size_t after = skip_space(name_end);
            if (after < ptx.size() && ptx[after] == '(') {
                const std::size_t close = closing(after);
                if (close == std::string_view::npos) break;
                after = close + 1;
            }
            // `.pragma "...";` statements may stand between the parameters and the body.
            std::size_t end = ptx.find_first_of("{;", after);
            while (end != std::string_view::npos && ptx[end] == ';' &&
                   ptx.substr(after, end - after).find(".pragma") != std::string_view::npos) {
                after = end + 1;
                end = ptx.find_first_of("{;", after);
            }
            if (end == std::string_view::npos) break;
            if (ptx[end] == '{') add(name);
            pos = end;
        } else if (kind == ".global" || kind == ".const") {
            // `.visible .global .align 4 .f32 name[4] = {...}, other;`: each name is the last token
            // before '[', '=', ',' or ';'; an initializer runs to the ',' or ';' after its braces.
            for (;;) {
                const std::size_t end = ptx.find_first_of(";[=,", i);
                if (end == std::string_view::npos) return names;
                std::size_t last = end;
                while (last > i && ptx_space(ptx[last - 1])) --last;
                std::size_t first = last;
                while (first > i && !ptx_space(ptx[first - 1]) && ptx[first - 1] != ',') --first;
                add(ptx.substr(first, last - first));
                std::size_t next = end;
                if (ptx[next] == '[' || ptx[next] == '=') {
                    int depth = 0;
                    while (next < ptx.size() && (depth > 0 || (ptx[next] != ',' && ptx[next] != ';'))) {
                        if (ptx[next] == '{' || ptx[next] == '(' || ptx[next] == '[') ++depth;
                        if ((ptx[next] == '}' || ptx[next] == ')' || ptx[next] == ']') && depth > 0) --depth;
                        ++next;
                    }
                    if (next >= ptx.size()) return names;
                }
                pos = next;
                if (ptx[next] == ';') break;
                i = next + 1;
            }
        }
    }
    return names;
}

}  // namespace gpumath::detail
