// SPDX-License-Identifier: Apache-2.0
// Private: splitting the tab-separated lines of gpumath's own text files (matmul tuning files,
// linalg's backend choices).
#pragma once

#include <string_view>
#include <vector>

namespace gpumath::detail {

/// The fields of `line` between tabs (one field for a line without a tab; empty fields kept). The
/// views point into `line`.
[[nodiscard]] inline std::vector<std::string_view> split_tabs(std::string_view line) {
    std::vector<std::string_view> fields;
    std::size_t start = 0;
    while (true) {
        const std::size_t tab = line.find('\t', start);
        fields.push_back(line.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start));
        if (tab == std::string_view::npos) break;
        start = tab + 1;
    }
    return fields;
}

}  // namespace gpumath::detail
