#include "traces/file_paths.h"

#include <filesystem>
#include <stdexcept>

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

std::string relative_inside(const std::string& inner, const std::string& outer) {
    const fs::path rel = resolved(inner).lexically_relative(resolved(outer));
    return rel == "." ? std::string() : rel.string();
}

std::string output_target(const std::string& path) {
    std::error_code ec;
    const fs::file_status link = fs::symlink_status(path, ec);
    if (ec || !fs::exists(link)) return path;
    std::string target = path;
    fs::file_status st = link;
    if (fs::is_symlink(link)) {
        target = fs::weakly_canonical(fs::absolute(path, ec), ec).string();
        if (ec) throw std::runtime_error(path + ": a symbolic link that cannot be followed: " + ec.message());
        st = fs::status(target, ec);
        if (ec || !fs::exists(st)) return target;  // a link to a file still to be written
    }
    if (fs::is_regular_file(st)) return target;
    const char* what = fs::is_directory(st)          ? "a folder"
                       : fs::is_character_file(st) || fs::is_block_file(st) ? "a device"
                       : fs::is_fifo(st)              ? "a FIFO"
                       : fs::is_socket(st)            ? "a socket"
                                                      : "not a regular file";
    throw std::runtime_error(path + (target != path ? " (a link to " + target + ")" : std::string()) + ": exists and is " + what +
                             ", which an output written to a temp file and renamed would replace: name a regular file");
}

}  // namespace xpu
