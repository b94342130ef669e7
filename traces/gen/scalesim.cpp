#include "traces/gen/scalesim.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "traces/trace_text.h"

namespace xpu::gen {

namespace {

std::string trim(const std::string& s) {
    std::size_t a = 0, b = s.size();
    while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
    while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
    return s.substr(a, b - a);
}

std::vector<std::string> cells(const std::string& line) {
    std::vector<std::string> out;
    std::stringstream ss(line);
    std::string c;
    while (std::getline(ss, c, ',')) out.push_back(trim(c));
    while (!out.empty() && out.back().empty()) out.pop_back();  // SCALE-Sim rows end with a comma
    return out;
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

}  // namespace

std::vector<TopologyLayer> read_scalesim_topology(const std::string& path) {
    std::ifstream f(path);
    if (!f) throw TopologyError(path + ": cannot open");
    std::string line;
    std::size_t no = 0;
    bool conv = false, header = false;
    std::vector<TopologyLayer> out;
    while (std::getline(f, line)) {
        ++no;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        const auto c = cells(line);
        if (c.empty()) continue;
        const std::string where = path + ":" + std::to_string(no) + ": ";
        if (!header) {
            const std::string h = lower(line);
            if (h.find("ifmap height") != std::string::npos) conv = true;
            else if (c.size() >= 4 && lower(c[1]) == "m" && lower(c[2]) == "n" && lower(c[3]) == "k") conv = false;
            else
                throw TopologyError(where + "expected a SCALE-Sim header: 'Layer name, IFMAP Height, IFMAP Width, Filter Height, "
                                            "Filter Width, Channels, Num Filter, Strides' (conv) or 'Layer, M, N, K' (GEMM)");
            header = true;
            continue;
        }
        const std::size_t need = conv ? 8 : 4;
        if (c.size() < need)
            throw TopologyError(where + "expected " + std::to_string(need) + " values (" +
                                (conv ? "name, IFMAP H, W, filter H, W, channels, filters, stride" : "name, M, N, K") + "), got " +
                                std::to_string(c.size()));
        std::vector<std::uint64_t> v;
        for (std::size_t i = 1; i < need; ++i) {
            std::size_t used = 0;
            unsigned long long x = 0;
            try {
                x = std::stoull(c[i], &used);
            } catch (const std::exception&) {
                used = 0;
            }
            if (used != c[i].size() || x == 0 || c[i][0] == '-')
                throw TopologyError(where + "column " + std::to_string(i + 1) + ": expected a positive integer, got '" + c[i] + "'");
            v.push_back(x);
        }
        TopologyLayer l;
        for (unsigned char ch : c[0])
            if (ch < 0x20 || ch == 0x7F)
                throw TopologyError(where + "column 1: the layer name holds a control character (byte " + std::to_string(ch) +
                                    "): expected text");
        if (!trace::is_valid_utf8(c[0])) throw TopologyError(where + "column 1: the layer name is not valid UTF-8");
        l.name = c[0];
        std::replace(l.name.begin(), l.name.end(), '/', '_');  // a layer is one annotation component
        if (l.name.empty()) l.name = "row" + std::to_string(no);
        if (conv) {
            const std::uint64_t H = v[0], W = v[1], R = v[2], S = v[3], C = v[4], F = v[5], s = v[6];
            if (R > H || S > W) throw TopologyError(where + "filter larger than the IFMAP (SCALE-Sim convolutions have no padding)");
            // SCALE-Sim's output size (topology_utils.py): ceil((H - R + stride) / stride).
            l.m = ceil_div(H - R + s, s) * ceil_div(W - S + s, s);
            l.n = F;
            l.k = R * S * C;
        } else {
            l.m = v[0];
            l.n = v[1];
            l.k = v[2];
        }
        out.push_back(l);
    }
    if (!header) throw TopologyError(path + ": empty: expected a SCALE-Sim topology (header row, then one layer per row)");
    if (out.empty()) throw TopologyError(path + ": no layer rows after the header");
    return out;
}

void emit_topology(Emitter& e, const TileConfig& t, const std::vector<TopologyLayer>& layers, const std::string& prefix) {
    Lowering lo(e, t);
    const std::uint64_t eb = dtype_bytes(t.dtype);
    auto align = [](std::uint64_t x) { return (x + 4095) / 4096 * 4096; };
    std::uint64_t next = 0;
    for (const auto& l : layers) {
        Matmul m{l.m, l.n, l.k};
        m.hbm_a = next;
        m.hbm_b = m.hbm_a + align(l.m * l.k * eb);
        m.hbm_c = m.hbm_b + align(l.k * l.n * eb);
        next = m.hbm_c + align(l.m * l.n * eb);
        lo.matmuls({m}, prefix + "/" + l.name);
    }
}

}  // namespace xpu::gen
