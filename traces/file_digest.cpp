#include "traces/file_digest.h"

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <vector>

namespace xpu::trace {

std::string FileDigest::finish(const std::string& path) {
    struct Closer {
        void operator()(std::FILE* f) const { std::fclose(f); }
    };
    std::unique_ptr<std::FILE, Closer> f(std::fopen(path.c_str(), "rb"));
    if (!f) throw std::runtime_error(path + ": cannot open the file to hash it");
    if (fseeko(f.get(), static_cast<off_t>(next_), SEEK_SET) != 0) throw std::runtime_error(path + ": cannot seek while hashing it");
    std::vector<unsigned char> buf(1 << 16);
    for (;;) {
        const std::size_t got = std::fread(buf.data(), 1, buf.size(), f.get());
        if (got) sha_.update(buf.data(), got);
        next_ += got;
        if (got < buf.size()) break;
    }
    if (std::ferror(f.get())) throw std::runtime_error(path + ": read error while hashing it");
    return sha_.hex();
}

}  // namespace xpu::trace
