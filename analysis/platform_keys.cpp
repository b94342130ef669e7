#include "analysis/platform_keys.h"

#include <fstream>
#include <sstream>
#include <vector>

namespace xpu::analysis {

PlatformKeys read_platform_keys(const std::string& path) {
    PlatformKeys out;
    std::ifstream f(path);
    std::string line;
    std::vector<std::pair<std::size_t, std::string>> open;  // (indent, key) of the enclosing mappings
    while (std::getline(f, line)) {
        const std::size_t indent = line.find_first_not_of(' ');
        if (indent == std::string::npos || line[indent] == '#' || line[indent] == '-') continue;
        const std::size_t colon = line.find(':', indent);
        if (colon == std::string::npos) continue;
        while (!open.empty() && open.back().first >= indent) open.pop_back();
        const std::string key = line.substr(indent, colon - indent);
        std::string value = line.substr(colon + 1);
        const std::size_t hash = value.find(" #");
        if (hash != std::string::npos) value.resize(hash);
        const std::size_t b = value.find_first_not_of(' '), e = value.find_last_not_of(' ');
        value = b == std::string::npos ? "" : value.substr(b, e - b + 1);
        std::string full;
        for (const auto& [i, k] : open) full += k + ".";
        full += key;
        if (value.empty()) open.push_back({indent, key});
        else if (value[0] != '[' && value[0] != '{') out[full] = value;
    }
    return out;
}

std::vector<MatrixBinding> read_matrix_bindings(const std::string& path) {
    std::vector<MatrixBinding> out;
    std::ifstream f(path);
    std::string line;
    while (std::getline(f, line)) {
        std::istringstream is(line);
        std::string dash, from, arrow, to;
        if (!(is >> dash >> from >> arrow >> to) || dash != "-" || arrow != "->") continue;
        const std::size_t open = from.rfind(".mxu["), close = from.rfind(']');
        if (open == std::string::npos || close != from.size() - 1 || to.size() < 5 || to.compare(to.size() - 4, 4, ".cmd") != 0) continue;
        try {
            out.push_back({from.substr(0, open), std::stoi(from.substr(open + 5, close - open - 5)), to.substr(0, to.size() - 4)});
        } catch (const std::exception&) {
        }
    }
    return out;
}

}  // namespace xpu::analysis
