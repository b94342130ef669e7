#include "platform/output_folder.h"

#include "traces/file_paths.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace xpu::platform {

namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

bool is_run_file_name(const std::string& name) {
    static const std::set<std::string> files = {"stats.json",    "txlog.bin",   "txlog.trace.bin", "platform.yaml",
                                                "report.txt",    "analysis.json", "report.html",   "timeline.json",
                                                "verification.txt", "verify.tmp", "sensitivity.tmp"};
    return files.count(name) || (ends_with(name, ".tmp") && files.count(name.substr(0, name.size() - 4)));
}

bool is_run_output_name(const std::string& name) {
    if (is_run_file_name(name)) return true;
    // The waveforms of a --vcd inside OUT (and their temporaries, docs/waveforms.md).
    for (const char* tail : {".vcd", ".gtkw", ".opcodes.txt", ".stalls.txt"})
        if (ends_with(name, tail) || ends_with(name, std::string(tail) + ".tmp")) return true;
    return name.find(".vcd.run") != std::string::npos && ends_with(name, ".tmp");
}

OutputFolder::OutputFolder(const std::string& out, const std::vector<std::string>& inputs) : out_(out) {
    fs::path p = fs::path(out).lexically_normal();
    if (p.filename().empty()) p = p.parent_path();  // "out/" -> "out"
    name_ = p.filename().string();
    if (name_.empty() || name_ == "." || name_ == "..")
        throw OutputError(out + ": expected the name of an output folder (a run replaces the whole folder, so not '" + out +
                          "' itself)");
    parent_ = p.parent_path().empty() ? "." : p.parent_path().string();
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(p, ec);
    if (fs::is_symlink(st))
        throw OutputError(out + ": cannot create the output folder: it is a symbolic link (a run replaces the folder; give the folder itself)");
    if (fs::exists(st) && !fs::is_directory(st))
        throw OutputError(out + ": cannot create the output folder: it exists and is not a folder");
    for (const auto& in : inputs)
        if (!in.empty() && lies_inside(in, out))
            throw OutputError(out + ": the output folder holds the input " + in +
                              ", and a run replaces the whole folder: choose another --out (or move the input out of it)");
    fs::create_directories(parent_, ec);
    if (ec) throw OutputError(out + ": cannot create the output folder: " + ec.message());

    // The lock: held for the whole run, removed at its end. A run that opened the file just
    // before its holder removed it must not lock the removed inode: checked after locking.
    lock_path_ = (fs::path(parent_) / ("." + name_ + ".lock")).string();
    for (int attempt = 0;; ++attempt) {
        lock_fd_ = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (lock_fd_ < 0) throw OutputError(out + ": cannot create the output folder's lock " + lock_path_ + ": " + errno_text());
        if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
            const int e = errno;
            ::close(lock_fd_);
            lock_fd_ = -1;
            if (e == EWOULDBLOCK)
                throw OutputError(out + ": another run is writing this output folder (it holds the lock " + lock_path_ +
                                  "); wait for it to finish, or choose another --out");
            throw OutputError(out + ": cannot lock the output folder (" + lock_path_ + "): " + std::strerror(e));
        }
        struct stat held {}, named {};
        if (::fstat(lock_fd_, &held) == 0 && ::stat(lock_path_.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
            held.st_dev == named.st_dev)
            break;
        ::close(lock_fd_);
        lock_fd_ = -1;
        if (attempt > 100) throw OutputError(out + ": cannot lock the output folder (" + lock_path_ + " keeps changing)");
    }

    // What a run may replace: a folder of earlier outputs (or an empty one), nothing else.
    if (fs::is_directory(st))
        for (const auto& e : fs::directory_iterator(p, ec))
            if (!is_run_output_name(e.path().filename().string())) {
                discard();
                throw OutputError(out + ": the folder holds " + e.path().filename().string() +
                                  ", which no run writes; a run replaces the whole folder, so it refuses to: choose a new or "
                                  "empty --out");
            }
    // Staging folders that killed runs left (no run holds them: we hold the lock).
    const std::string stale = "." + name_ + ".staging-";
    for (const auto& e : fs::directory_iterator(parent_, ec))
        if (e.path().filename().string().rfind(stale, 0) == 0) fs::remove_all(e.path(), ec);
    stage_ = (fs::path(parent_) / (stale + std::to_string(::getpid()))).string();
    fs::remove_all(stage_, ec);
    if (!fs::create_directory(stage_, ec)) {
        const std::string why = ec.message();
        discard();
        throw OutputError(out + ": cannot create the output folder: " + stage_ + ": " + why);
    }
}

OutputFolder::~OutputFolder() {
    if (!done_) discard();
}

std::string OutputFolder::staged(const std::string& name) const { return (fs::path(stage_) / name).string(); }
std::string OutputFolder::final_path(const std::string& name) const { return (fs::path(out_) / name).string(); }

void OutputFolder::commit() {
    std::error_code ec;
    const std::string target = (fs::path(parent_) / name_).string();
    if (fs::exists(fs::symlink_status(target, ec))) {
        // Exchange the two names in one step: at no moment is there no OUT, or a mixed one.
        if (::renameat2(AT_FDCWD, stage_.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) != 0) {
            if (errno != EINVAL && errno != ENOSYS)
                throw OutputError(out_ + ": cannot replace the output folder: " + errno_text());
            // A file system without the exchange: the old folder aside first, then the new in.
            const std::string old = (fs::path(parent_) / ("." + name_ + ".old-" + std::to_string(::getpid()))).string();
            fs::remove_all(old, ec);
            if (std::rename(target.c_str(), old.c_str()) != 0)
                throw OutputError(out_ + ": cannot replace the output folder: " + errno_text());
            if (std::rename(stage_.c_str(), target.c_str()) != 0) {
                const std::string why = errno_text();
                std::rename(old.c_str(), target.c_str());
                throw OutputError(out_ + ": cannot replace the output folder: " + why);
            }
            fs::remove_all(old, ec);
        } else {
            fs::remove_all(stage_, ec);  // now the previous run's folder
        }
    } else if (std::rename(stage_.c_str(), target.c_str()) != 0) {
        throw OutputError(out_ + ": cannot create the output folder: " + errno_text());
    }
    done_ = true;
    if (lock_fd_ >= 0) {
        ::unlink(lock_path_.c_str());
        ::close(lock_fd_);
        lock_fd_ = -1;
    }
}

void OutputFolder::discard() noexcept {
    std::error_code ec;
    if (!stage_.empty())
        for (int i = 0; i < 5 && fs::exists(stage_, ec); ++i) fs::remove_all(stage_, ec);
    done_ = true;
    if (lock_fd_ >= 0) {
        ::unlink(lock_path_.c_str());
        ::close(lock_fd_);
        lock_fd_ = -1;
    }
}

}  // namespace xpu::platform
