#include "traces/file_paths.h"

#include <filesystem>

namespace xpu {

namespace fs = std::filesystem;

namespace {

fs::path resolved(const std::string& p) {
    std::error_code ec;
    fs::path r = fs::weakly_canonical(fs::absolute(p, ec), ec);
    return ec ? fs::absolute(p).lexically_normal() : r;
}

}  // namespace

bool same_file(const std::string& a, const std::string& b) {
    std::error_code ec;
    if (fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec)) return true;
    return resolved(a) == resolved(b);
}

bool lies_inside(const std::string& inner, const std::string& outer) {
    const fs::path i = resolved(inner), o = resolved(outer);
    auto ii = i.begin();
    for (auto oi = o.begin(); oi != o.end(); ++oi, ++ii) {
        if (oi->empty()) continue;  // a trailing separator
        if (ii == i.end() || *ii != *oi) return false;
    }
    return true;
}

}  // namespace xpu
